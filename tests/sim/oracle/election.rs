//! The election's invariants, checked after every step and every few virtual milliseconds, on
//! the state each candidate exposes to its callers (`Election::status` and `Election::lease`,
//! what the CLI's `zooid elect` guard acts on):
//!
//! - At most one candidate of the group is Active inside its lease at any instant.
//! - Active never outlives the lease (a slack of `LEASE_SLACK` for the driver's own wake-up).
//! - Fencing tokens only increase: a candidate seen Active inside its lease with a token never
//!   seen before holds a token above every earlier leader's, and no earlier leader is Active
//!   again once a later one was.
//!
//! The lease rests on the servers never expiring a session before its timeout. The chaos
//! `expire` fault does exactly that (the servers end a live session at once): a leader whose
//! session was expired so is exempt until the lease it held then has passed.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use zooid::{ElectionStatus, LeaderState};

/// How late the driver may publish the end of Active after its lease passed.
const LEASE_SLACK: Duration = Duration::from_millis(100);

/// A candidacy as its callers see it.
pub struct View {
    pub status: watch::Receiver<ElectionStatus>,
    pub lease: watch::Receiver<Option<Instant>>,
}

#[derive(Default)]
pub struct Oracle {
    /// The candidacy of each live process.
    views: BTreeMap<usize, View>,
    /// A process whose session the servers expired before its timeout: (its token then, the
    /// lease it held then).
    exempt: BTreeMap<usize, (i64, Instant)>,
    /// The highest token seen Active so far, with its process.
    max_token: Option<(i64, usize)>,
    /// Every term seen Active: (process, token).
    pub terms: BTreeSet<(usize, i64)>,
    /// How many checks found a leader exempt (its session expired early by the servers).
    pub exempted: u64,
    /// Violations already reported (a condition that lasts is reported once).
    seen: BTreeSet<String>,
    pub joins: u64,
    pub resigns: u64,
    pub violations: Vec<String>,
}

impl Oracle {
    pub fn register(&mut self, p: usize, view: View) {
        self.joins += 1;
        self.views.insert(p, view);
    }

    pub fn unregister(&mut self, p: usize) {
        self.views.remove(&p);
    }

    /// The servers expired process `p`'s session before its timeout (the chaos `expire`).
    pub fn expired_early(&mut self, p: usize) {
        let Some(view) = self.views.get(&p) else {
            return;
        };
        let (token, lease) = (view.status.borrow().token, *view.lease.borrow());
        if let (Some(token), Some(lease)) = (token, lease) {
            self.exempt.insert(p, (token, lease));
        }
    }

    fn violation(&mut self, key: String, what: String) {
        if self.seen.insert(key) {
            self.violations.push(what);
        }
    }

    /// The check at `now`.
    pub fn check(&mut self, now: Instant) {
        let mut leading: Vec<(usize, i64)> = Vec::new();
        let mut found = Vec::new();
        for (&p, view) in &self.views {
            let status = view.status.borrow().clone();
            let lease = *view.lease.borrow();
            if status.state != LeaderState::Active {
                continue;
            }
            let Some(token) = status.token else {
                found.push((
                    format!("notoken {p}"),
                    format!("p{p} is Active without a token"),
                ));
                continue;
            };
            match lease {
                None => found.push((
                    format!("nolease {p} {token}"),
                    format!("p{p} is Active (token {token}) without a lease"),
                )),
                Some(until) if now > until + LEASE_SLACK => found.push((
                    format!("pastlease {p} {token}"),
                    format!(
                        "p{p} is Active (token {token}) {:?} past its lease",
                        now - until
                    ),
                )),
                _ => {}
            }
            if lease.is_none_or(|until| now >= until) {
                continue;
            }
            if let Some(&(t, until)) = self.exempt.get(&p) {
                if t == token && now < until {
                    self.exempted += 1;
                    continue;
                }
            }
            leading.push((p, token));
        }
        for (p, token) in &leading {
            let new_term = self.terms.insert((*p, *token));
            match self.max_token {
                Some((max, holder)) if *token < max || (*token == max && holder != *p) => {
                    found.push((
                        format!("token {p} {token} {max}"),
                        format!(
                            "p{p} is Active with token {token} {} p{holder}'s token {max}",
                            if new_term {
                                "below (or equal to) the earlier leader"
                            } else {
                                "after a later leader,"
                            }
                        ),
                    ));
                }
                _ => self.max_token = Some((*token, *p)),
            }
        }
        if leading.len() > 1 {
            let who: Vec<String> = leading
                .iter()
                .map(|(p, t)| format!("p{p} (token {t})"))
                .collect();
            found.push((
                format!("two {leading:?}"),
                format!("two leaders Active inside their leases: {}", who.join(", ")),
            ));
        }
        for (key, what) in found {
            self.violation(key, what);
        }
    }
}
