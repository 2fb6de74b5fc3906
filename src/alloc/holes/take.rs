//! A take from a pool in format 4, under one hold of the category's slot: holes when the holes
//! listed cover it (one `multi` that deletes them), fresh blocks otherwise
//! (src/alloc/blocks/take.rs); at the ceiling or the end, what holes there are.

use super::choice;
use super::listing::{self, Seen, Trust};
use super::memory;
use super::requests::{self, Claimed};
use crate::alloc::core::{count_of, served_short, OnZooKeeper, Taken};
use crate::alloc::state::{Slot, Strategy};
use crate::error::{Result, ZooidError};
use crate::idset::IdCategory;
use crate::range::IdRange;
use crate::store::Store;
use tokio::time::Instant;

impl<S: Store> OnZooKeeper<'_, S> {
    /// A take of `n` IDs: holes first, as many as leave whole blocks to claim
    /// ([`choice::hole_amount`]), then fresh blocks. On an error, the IDs the take already got
    /// are handed out ([`served_short`]), unless the error is `OutcomeUnknown`: then they go
    /// back ([`Self::give_back`], which reports them leaked when they cannot). One rule for
    /// every way out of [`Self::take_holes_into`].
    pub(crate) async fn take_hole_nodes(
        &self,
        category: &IdCategory,
        slot: &mut Slot,
        n: u64,
    ) -> Result<Taken> {
        let mut taken = Vec::new();
        match self.take_holes_into(category, slot, n, &mut taken).await {
            Err(err @ ZooidError::OutcomeUnknown { .. }) => {
                if !taken.is_empty() {
                    self.give_back(category, slot, taken).await;
                }
                Err(err)
            }
            Err(err) => served_short(category.name(), taken, err).map(Taken::Ids),
            result => result,
        }
    }

    /// The take of [`Self::take_hole_nodes`]. `taken` holds what it got and has not handed on
    /// yet (to its result, or to [`Self::take_blocks`], which gives back what it was passed on
    /// its own errors): what is in it when this fails goes back.
    async fn take_holes_into(
        &self,
        category: &IdCategory,
        slot: &mut Slot,
        n: u64,
        taken: &mut Vec<IdRange>,
    ) -> Result<Taken> {
        if n == 0 {
            return Ok(Taken::Ids(Vec::new()));
        }
        let path = category.name();
        // Just after losing races for holes, a take of whole blocks may leave them to others:
        // fresh blocks, without a look at the holes. At the ceiling or the end, where fewer
        // fresh IDs remain, the holes for the rest, as any take.
        memory::of(slot)
            .races
            .start(self.options.hole_backoff_from_start);
        let whole_blocks = unit_of(slot).is_some_and(|unit| n.is_multiple_of(unit));
        if whole_blocks && memory::of(slot).races.leaves_holes(Instant::now()) {
            match self.take_blocks(category, slot, Vec::new(), n).await {
                Ok(Taken::Ids(ids)) if count_of(&ids) == n => return Ok(Taken::Ids(ids)),
                Ok(Taken::Ids(ids)) => *taken = ids,
                Ok(moved @ Taken::Moved(_)) => return Ok(moved),
                Err(ZooidError::Exhausted { .. } | ZooidError::ReservationExhausted { .. }) => {}
                Err(err) => return Err(err),
            }
        }
        let wanted = n - count_of(taken);
        // A first look: no listing of the holes yet, nor a race lost of late (a process just
        // started, as each task of a job that starts at once).
        let first_look = {
            let memory = memory::of(slot);
            memory.listing.is_none() && memory.races.quiet(Instant::now())
        };
        let seen = match self.refresh_holes(path, slot, Trust::Allowed).await {
            Ok(seen) => seen,
            Err(err) => return served_short(path, std::mem::take(taken), err).map(Taken::Ids),
        };
        let (Some(top), Some(unit)) = (top_of(slot), unit_of(slot)) else {
            return self
                .take_blocks(category, slot, std::mem::take(taken), n)
                .await;
        };
        let mut choice = self.choose_holes(slot, wanted, top, unit, None);
        // Holes chosen on a listing others' takes may have outrun since: listed again first, a
        // read instead of a claim that would most likely fail (a failed `multi` is logged like
        // any write). Not when they are all holes this process created since the listing.
        let known_since = |choice: &choice::Choice, slot: &mut Slot| {
            memory::of(slot)
                .listing
                .as_ref()
                .is_some_and(|listing| listing.all_own_since(&choice.nodes))
        };
        if seen == Seen::Trusted && choice.as_ref().is_some_and(|c| !known_since(c, slot)) {
            if let Err(err) = self.refresh_holes(path, slot, Trust::Exact).await {
                return served_short(path, std::mem::take(taken), err).map(Taken::Ids);
            }
            choice = self.choose_holes(slot, wanted, top, unit, None);
        }
        let mut attempt = self.claim_holes(category, slot, choice).await;
        if first_look {
            attempt = self
                .retry_first_look(category, slot, attempt, wanted, top, unit)
                .await;
        }
        match attempt? {
            Attempt::Handed(mut handed) => {
                taken.append(&mut handed);
                if count_of(taken) == n {
                    return Ok(Taken::Ids(std::mem::take(taken)));
                }
            }
            Attempt::Raced(_) | Attempt::Missed => {}
        }
        match self
            .take_blocks(category, slot, std::mem::take(taken), n)
            .await
        {
            // Fewer fresh IDs remain than the take wants, below the ceiling or the end: the rest
            // from the holes as they are, those it left to their pushers included. What it
            // got is handed out whatever that finds.
            Ok(Taken::Ids(mut ids)) if count_of(&ids) < n => {
                match self
                    .take_at_the_end(category, slot, n - count_of(&ids))
                    .await
                {
                    Ok(Some(Taken::Ids(mut rest))) => ids.append(&mut rest),
                    Ok(Some(Taken::Moved(mut rest))) => {
                        ids.append(&mut rest);
                        return Ok(Taken::Moved(ids));
                    }
                    Ok(None) => {}
                    // IDs in doubt are reported, never dropped: what the take got goes back,
                    // and the caller learns which IDs may be gone.
                    Err(err @ ZooidError::OutcomeUnknown { .. }) => {
                        *taken = ids;
                        return Err(err);
                    }
                    // Nothing in doubt (the claim did not apply): the take is served short.
                    Err(err) => {
                        tracing::warn!(category = path, %err, "a short take found no more in the holes");
                    }
                }
                Ok(Taken::Ids(ids))
            }
            Err(
                failed @ (ZooidError::Exhausted { .. } | ZooidError::ReservationExhausted { .. }),
            ) => match self.take_at_the_end(category, slot, wanted).await? {
                Some(ids) => Ok(ids),
                None => Err(failed),
            },
            other => other,
        }
    }

    /// A take that lost its race for holes at its first look tries them once more, at once,
    /// before it claims fresh blocks: on the listing it has, without the holes it lost, from one
    /// of all the groups of holes that cover it, at random ([`choice::FIRST_LOOK_GROUPS`]).
    /// Processes that start at once (a job's tasks) all choose the lowest holes at their first
    /// look, and one wins; without this the others would claim fresh blocks and leave the
    /// holes to later takes. Their retries choose apart, and the holes they do not cover are
    /// most likely still there. At most one more failed write per take, and only at a first
    /// look: a process with a listing, or a race lost of late, follows [`memory::HoleRaces`].
    async fn retry_first_look(
        &self,
        category: &IdCategory,
        slot: &mut Slot,
        attempt: Result<Attempt>,
        wanted: u64,
        top: i64,
        unit: u64,
    ) -> Result<Attempt> {
        let Ok(Attempt::Raced(lost)) = attempt else {
            return attempt;
        };
        let lost = lost.into_iter().collect();
        let choice = self.choose_holes(slot, wanted, top, unit, Some(&lost));
        self.claim_holes(category, slot, choice).await
    }

    /// Up to `wanted` IDs for a take that found no fresh block left below the ceiling or the
    /// end: the holes there are, every one a candidate (none is left to its pusher: this is
    /// what remains), on the pool as read again if the claim dropped it. `None` when the holes
    /// hold none; [`Taken::Moved`] when the pool read again is in another layout.
    async fn take_at_the_end(
        &self,
        category: &IdCategory,
        slot: &mut Slot,
        wanted: u64,
    ) -> Result<Option<Taken>> {
        let path = category.name();
        // Each attempt lost to a race is another take served from these holes: try again, on
        // the holes listed again, from one of the lowest groups (contending takes choose apart).
        for _ in 0..END_ATTEMPTS {
            // The pool as it is now, when a claim dropped it (it moved on, or its generation
            // was sealed or unnumbered and the claim saw to it).
            let mut budget = self.next_phase(path)?;
            if self.current(category, slot, &mut budget).await?.strategy == Strategy::Single {
                return Ok(Some(Taken::Moved(Vec::new())));
            }
            let Some(top) = top_of(slot) else {
                return Ok(None);
            };
            // The holes as they are: one not seen would end the take as exhausted.
            self.refresh_holes(path, slot, Trust::Exact).await?;
            let choice = {
                let random = memory::of(slot).races.chooses_at_random(Instant::now());
                let holes = listing::holes_of(&memory::of(slot).listing);
                // At most what one `multi` of deletes can claim; the next take gets the rest.
                let left = choice::available_in_one_take(holes, top).min(wanted);
                let start = random
                    .then(|| {
                        let random = crate::random::random::<u32>();
                        choice::group_start(holes, left, top, choice::MAX_GROUPS, random)
                    })
                    .flatten();
                choice::choose(holes, left, top, start)
            };
            if choice.is_none() {
                return Ok(None);
            }
            match self.claim_holes(category, slot, choice).await? {
                Attempt::Handed(handed) if !handed.is_empty() => {
                    return Ok(Some(Taken::Ids(handed)))
                }
                // Another take won a hole first, or the pool moved on (read again above).
                _ => continue,
            }
        }
        Ok(None)
    }

    /// The holes a take of `wanted` claims among those the slot's listing shows, at or below
    /// `top`, with blocks of `unit` (see [`choice::hole_amount`]): lowest first, unless the holes
    /// are contended, then from one of the lowest groups. A take of whole blocks leaves the
    /// holes another process pushed moments ago to it (src/alloc/holes/young.rs). `retry`: a
    /// first look's retry (see [`Self::retry_first_look`]), without the holes named, from one of
    /// all the groups.
    fn choose_holes(
        &self,
        slot: &mut Slot,
        wanted: u64,
        top: i64,
        unit: u64,
        retry: Option<&std::collections::HashSet<String>>,
    ) -> Option<choice::Choice> {
        let now = Instant::now();
        let memory = memory::of(slot);
        let random = memory.races.chooses_at_random(now) || retry.is_some();
        let listed = listing::holes_of(&memory.listing);
        let young = memory
            .listing
            .as_ref()
            .map(|l| &l.young)
            .filter(|young| wanted.is_multiple_of(unit) && young.any(now));
        let lost = retry.filter(|lost| !lost.is_empty());
        // One per walk of the listing in ID order: each answers for the young holes in one pass.
        let left = || {
            let young = young.map(|young| young.in_order(now));
            move |(name, range): &choice::Hole| {
                young.as_ref().is_some_and(|young| young.is_young(range))
                    || lost.is_some_and(|lost| lost.contains(name))
            }
        };
        let leaves = young.is_some() || lost.is_some();
        let available = if leaves {
            choice::available_without(listed, top, left())
        } else {
            choice::available_at_most(listed, top)
        };
        // Counted before the holes left to others are copied out: most takes of whole blocks
        // under the seeds' workload find too few, and copy nothing.
        let amount = choice::hole_amount(available, wanted, unit);
        if amount == 0 {
            return None;
        }
        let kept;
        let holes = if leaves {
            kept = choice::without(listed, left());
            kept.as_slice()
        } else {
            listed
        };
        let groups = if retry.is_some() {
            choice::FIRST_LOOK_GROUPS
        } else {
            choice::MAX_GROUPS
        };
        let start = random
            .then(|| {
                choice::group_start(holes, amount, top, groups, crate::random::random::<u32>())
            })
            .flatten();
        choice::choose(holes, amount, top, start)
    }

    /// Makes the slot's listing show the holes of pool `path` as they are
    /// ([`listing::refresh`]).
    async fn refresh_holes(&self, path: &str, slot: &mut Slot, trust: Trust) -> Result<Seen> {
        let session = self.zk;
        let mut budget = self.next_phase(path)?;
        listing::refresh(
            session,
            path,
            &mut memory::of(slot).listing,
            trust,
            &mut budget,
            &self.stats,
        )
        .await
    }

    /// One attempt to claim the holes of `choice` (`None`: the holes do not cover the take), on
    /// the pool as the slot holds it: [`Attempt::Raced`] when another take won one of them
    /// first (this process then chooses at random for a while), [`Attempt::Missed`] when there
    /// was no choice or the pool moved on (read again).
    async fn claim_holes(
        &self,
        category: &IdCategory,
        slot: &mut Slot,
        choice: Option<choice::Choice>,
    ) -> Result<Attempt> {
        let path = category.name();
        let session = self.zk;
        // Chosen on a listing whose check is still on its way: a hole gone means that listing
        // was out of date, not that takes contend.
        let listing = memory::of(slot).listing.as_ref();
        let ahead = listing.is_some_and(|l| l.ahead.is_some());
        // The holes' incarnation the claim is planned on (its listing's): a lost reply is
        // resolved only there.
        let incarnation = listing.map(|l| l.created);
        let (Some(choice), Some(state)) = (choice, slot.cached.as_ref()) else {
            return Ok(Attempt::Missed);
        };
        let Some(blocks) = state.pool.blocks() else {
            return Ok(Attempt::Missed);
        };
        // Before the receipt is taken out: past the deadline, the next take still has it.
        let mut budget = self.next_phase(path)?;
        let previous = self.categories.take_marker(path);
        let claimed = requests::claim(
            session,
            path,
            state.version,
            blocks.generation,
            &choice.nodes,
            &choice.remainder,
            &choice.handed,
            previous.clone(),
            incarnation,
            &self.stats,
            &mut budget,
        )
        .await;
        match claimed {
            Ok(Claimed::Taken { marker }) => {
                self.categories.put_marker(path, marker);
                // The listing's watch may fire only after this returns: keep it true meanwhile.
                if let Some(listing) = memory::of(slot).listing.as_mut() {
                    listing.apply_own(&choice.nodes, &choice.remainder);
                }
                memory::of(slot).races.won();
                if choice.overlapped {
                    tracing::warn!(category = path, nodes = ?choice.nodes, "overlapping holes (a push of free IDs) taken together, counted once");
                }
                Ok(Attempt::Handed(choice.handed))
            }
            other => {
                if let Some(previous) = previous {
                    self.categories.put_marker(path, previous);
                }
                match other? {
                    Claimed::Raced => {
                        if !ahead {
                            memory::of(slot)
                                .races
                                .lost(crate::random::random::<u32>(), Instant::now());
                        }
                        // The listing is out of date: listed again at the next look (a
                        // push goes on with it: it holds this process's own pushes).
                        if let Some(listing) = memory::of(slot).listing.as_mut() {
                            listing.outdated();
                        }
                        return Ok(Attempt::Raced(choice.nodes));
                    }
                    Claimed::Changed => slot.cached = None,
                    // Finish what stands in the way, so that the next look finds a generation
                    // open (a repair under way completes by itself); then plan again.
                    Claimed::Sealed => {
                        if let Err(err) = self.rotate(category, slot, &blocks).await {
                            tracing::warn!(category = path, %err, "finishing a generation's move for a take of holes");
                        }
                        slot.cached = None;
                    }
                    Claimed::Unnumbered => {
                        if let Err(err) = self.repair_sequence_parent(path).await {
                            tracing::warn!(category = path, %err, "numbering the pool's generation for a take of holes");
                        }
                        slot.cached = None;
                    }
                    Claimed::Taken { .. } => {}
                }
                Ok(Attempt::Missed)
            }
        }
    }
}

/// What one attempt to claim holes came to.
enum Attempt {
    /// The IDs the claim handed out.
    Handed(Vec<IdRange>),
    /// Another take deleted one of the holes first: the nodes this claim tried to delete.
    Raced(Vec<String>),
    /// No holes chosen, or the pool moved on: nothing claimed.
    Missed,
}

/// How many times a take at the end of a category (no fresh block left) tries the holes again
/// after losing a race for one: every race lost is another take served, so takes racing for the
/// same holes are all served while the holes cover them, up to this many at once.
const END_ATTEMPTS: usize = 32;

/// The block size of the pool as the slot holds it.
fn unit_of(slot: &Slot) -> Option<u64> {
    slot.cached.as_ref()?.pool.blocks().map(|b| b.unit)
}

/// The highest ID a take may hand out from the pool as the slot holds it (the ceiling, or the
/// last ID).
fn top_of(slot: &Slot) -> Option<i64> {
    let pool = &slot.cached.as_ref()?.pool;
    let last = pool.bounds().end();
    Some(pool.ceiling().unwrap_or(last).min(last))
}
