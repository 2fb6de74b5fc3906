//! The invariants of the ID service, checked after every step: no ID handed out twice (across
//! processes, pushes taken into account), no ID a process holds is free in the pool, and at the
//! end every ID is held, free (taken by the final drain), or reported leaked (an
//! `OutcomeUnknown`'s IDs, its `at_most` bound, or the bound of an operation a crash cut short).

use std::collections::{BTreeMap, BTreeSet};

use zooid::range::IdRange;
use zooid::ZooidError;

/// An operation a process has in flight (what a crash may leave half-done).
#[derive(Clone, Debug)]
pub enum InFlight {
    Take(u64),
    Push(Vec<i64>),
}

#[derive(Default)]
pub struct Oracle {
    /// IDs held, by process.
    pub held: BTreeMap<i64, usize>,
    /// IDs of crashed processes: handed out for good.
    pub retired: BTreeSet<i64>,
    /// IDs that may be free or leaked (named by an `OutcomeUnknown`, or pushed by a crashed
    /// operation).
    pub doubt: BTreeSet<i64>,
    /// How many IDs may have vanished without a name (`at_most` bounds, crashed takes, IDs a
    /// service counted leaked while the operation succeeded).
    pub anonymous: u64,
    pub in_flight: BTreeMap<usize, InFlight>,
    /// Operations whose caller gave up, by process: the rest of each may still run (a take's IDs
    /// pushed back, a push applied or refused), until the process settles at the end or
    /// crashes.
    pub given_up: BTreeMap<usize, Vec<InFlight>>,
    /// IDs of a push still in flight that another process was handed (so the push applied),
    /// by pusher.
    pub transferred: BTreeSet<(i64, usize)>,
    pub violations: Vec<String>,
    /// IDs per block (1 for a single-node pool): a take cut short by a crash may have claimed
    /// whole blocks.
    pub unit: u64,
    pub takes: u64,
    pub pushes: u64,
    pub unknown: u64,
    pub abandoned: u64,
    /// Operations that failed `Timeout` (their deadline passed: the even processes' is short).
    pub timeouts: u64,
}

pub fn ids_of(ranges: &[IdRange]) -> Vec<i64> {
    ranges.iter().flat_map(|r| r.start()..=r.end()).collect()
}

impl Oracle {
    fn violation(&mut self, what: String) {
        self.violations.push(what);
    }

    /// Process `p` was handed `ids`.
    pub fn taken(&mut self, p: usize, ids: &[i64]) {
        self.takes += 1;
        for id in ids {
            if let Some(&holder) = self.held.get(id) {
                let pushing = matches!(self.in_flight.get(&holder),
                    Some(InFlight::Push(ids)) if ids.contains(id));
                if pushing {
                    // The holder's push applied (its reply is not in yet).
                    self.transferred.insert((*id, holder));
                } else {
                    self.violation(format!(
                        "ID {id} handed out twice: to p{p}, held by p{holder}"
                    ));
                }
            } else if self.retired.contains(id) {
                self.violation(format!(
                    "ID {id} handed out twice: to p{p}, held by a crashed process"
                ));
            }
            self.doubt.remove(id);
            self.held.insert(*id, p);
        }
    }

    /// `id` is held by a process that is not pushing it, or by a crashed one: it is no hole.
    fn held_for_sure(&self, id: i64) -> bool {
        match self.held.get(&id) {
            Some(holder) => !matches!(self.in_flight.get(holder),
                Some(InFlight::Push(ids)) if ids.contains(&id)),
            None => self.retired.contains(&id),
        }
    }

    /// What an operation's error says of its IDs.
    pub fn failed(&mut self, p: usize, err: &ZooidError, pushed: &[i64]) {
        match err {
            ZooidError::OutcomeUnknown {
                ids, leaked_within, ..
            } => {
                self.unknown += 1;
                for id in ids_of(ids).into_iter().chain(pushed.iter().copied()) {
                    if self.transferred.remove(&(id, p)) {
                        continue;
                    }
                    if !pushed.contains(&id) && self.held_for_sure(id) {
                        // A take's claim of holes in doubt names the holes it chose; one chosen
                        // on a stale listing (a new session's first read, served by a follower
                        // behind what the last session saw) may be an ID a process holds. The
                        // claim cannot have taken it (a hole node is deleted once, and a held ID
                        // is no hole): it stays with its holder.
                        continue;
                    }
                    if self.held.get(&id) == Some(&p) {
                        self.held.remove(&id);
                    }
                    self.doubt.insert(id);
                }
                self.anonymous += leaked_within.map_or(0, |b| b.at_most);
            }
            ZooidError::Timeout { .. } => self.timeouts += 1,
            ZooidError::AlreadyFree { range, .. } => {
                let mine = ids_of(&[*range])
                    .iter()
                    .any(|id| self.held.get(id) == Some(&p));
                if mine {
                    self.violation(format!(
                        "p{p} pushed IDs it holds and the pool says {range:?} is already free"
                    ));
                }
            }
            _ => {}
        }
        if !matches!(err, ZooidError::OutcomeUnknown { .. }) {
            for id in pushed {
                if self.transferred.remove(&(*id, p)) {
                    self.violation(format!(
                        "p{p}'s push failed ({}) but its ID {id} was handed to another process",
                        err.kind()
                    ));
                }
            }
        }
    }

    /// An operation's service counted `leaked` IDs in its `ids_leaked` figure. Those of an
    /// `OutcomeUnknown` are named in the error (taken into account by [`Self::failed`]); the
    /// rest were leaked without the operation failing: a take's unused block IDs whose push
    /// back as a hole failed or ended in doubt (`give_back`, logged with their ranges and
    /// counted, the take itself served). They are reported leaked, by count.
    pub fn leaked(&mut self, leaked: u64, err: Option<&ZooidError>) {
        let named = match err {
            Some(ZooidError::OutcomeUnknown {
                ids, leaked_within, ..
            }) => ids_of(ids).len() as u64 + leaked_within.map_or(0, |b| b.at_most),
            _ => 0,
        };
        self.anonymous += leaked.saturating_sub(named);
    }

    /// Process `p` returned `ids` (the push applied).
    pub fn pushed(&mut self, p: usize, ids: &[i64]) {
        self.pushes += 1;
        for id in ids {
            if self.transferred.remove(&(*id, p)) {
            } else if self.held.get(id) != Some(&p) {
                self.violation(format!("p{p} pushed ID {id} it did not hold"));
            } else {
                self.held.remove(id);
            }
        }
    }

    /// Process `p`'s caller gave up on the operation in flight. A push's IDs are no longer
    /// the caller's: the push goes on, and they end up free (pushed) or counted leaked (refused),
    /// not merely in doubt.
    pub fn gave_up(&mut self, p: usize) {
        let Some(op) = self.in_flight.remove(&p) else {
            return;
        };
        self.abandoned += 1;
        if let InFlight::Push(ids) = &op {
            for id in ids {
                if self.transferred.remove(&(*id, p)) {
                    continue; // Applied: another process holds it now.
                }
                if self.held.get(id) == Some(&p) {
                    self.held.remove(id);
                }
            }
        }
        self.given_up.entry(p).or_default().push(op);
    }

    /// Process `p` crashed with `in_flight` cut short, and what its callers gave up on with
    /// it: their IDs are handed out for good.
    pub fn crashed(&mut self, p: usize) {
        let cut_short = self
            .in_flight
            .remove(&p)
            .into_iter()
            .chain(self.given_up.remove(&p).unwrap_or_default());
        for op in cut_short {
            match op {
                InFlight::Take(n) => {
                    self.anonymous += n.div_ceil(self.unit.max(1)) * self.unit.max(1)
                }
                InFlight::Push(ids) => {
                    for id in ids {
                        if self.transferred.remove(&(id, p)) {
                            continue;
                        }
                        match self.held.get(&id) {
                            Some(holder) if *holder != p => {}
                            _ => {
                                self.held.remove(&id);
                                self.doubt.insert(id);
                            }
                        }
                    }
                }
            }
        }
        let mine: Vec<i64> = self
            .held
            .iter()
            .filter(|(_, h)| **h == p)
            .map(|(id, _)| *id)
            .collect();
        for id in mine {
            self.held.remove(&id);
            self.retired.insert(id);
        }
    }

    /// After a step: no ID held (and not being pushed) is free in the pool.
    pub fn check_free(&mut self, free: &zooid::RangeSet) {
        self.check_not_free(|id| free.contains(id));
    }

    /// After a step on a format-4 pool: no ID held (and not being pushed) is in a hole node.
    pub fn check_holes(&mut self, holes: &[IdRange]) {
        self.check_not_free(|id| holes.iter().any(|h| h.start() <= id && id <= h.end()));
    }

    fn check_not_free(&mut self, free: impl Fn(i64) -> bool) {
        let pushing: BTreeSet<i64> = self
            .in_flight
            .values()
            .flat_map(|f| match f {
                InFlight::Push(ids) => ids.clone(),
                InFlight::Take(_) => Vec::new(),
            })
            .collect();
        let bad: Vec<i64> = self
            .held
            .keys()
            .chain(self.retired.iter())
            .filter(|id| free(**id) && !pushing.contains(id))
            .copied()
            .take(5)
            .collect();
        if !bad.is_empty() {
            self.violation(format!(
                "IDs held by a process are free in the pool: {bad:?}"
            ));
        }
    }

    /// How many IDs are neither held nor named in doubt, the anonymous bound not deducted (so
    /// that a hole still left to its pusher is drained rather than counted against the bound).
    pub fn missing(&self, first: i64, last: i64) -> u64 {
        (first..=last)
            .filter(|id| {
                !self.held.contains_key(id)
                    && !self.retired.contains(id)
                    && !self.doubt.contains(id)
            })
            .count() as u64
    }

    /// At the end (after the drain took every free ID): every ID is accounted for.
    pub fn check_conserved(&mut self, first: i64, last: i64) {
        let missing: Vec<i64> = (first..=last)
            .filter(|id| {
                !self.held.contains_key(id)
                    && !self.retired.contains(id)
                    && !self.doubt.contains(id)
            })
            .collect();
        if missing.len() as u64 > self.anonymous {
            let shown: Vec<_> = missing.iter().take(10).collect();
            self.violation(format!(
                "{} IDs neither held, free nor reported leaked (bound {}): {shown:?}",
                missing.len(),
                self.anonymous
            ));
        }
    }
}
