//! Fresh blocks for a take from a pool in block allocation, under one hold of the category's
//! slot (after the holes it took, src/alloc/holes/take.rs), claimed on the pool as last read;
//! IDs claimed but not handed out go back as holes; and the move to a new generation when one
//! fills up.

use std::time::Duration;

use super::claims::{self, Claim};
use super::generations;
use super::{MAX_BLOCKS_PER_TAKE, ROTATE_AT};
use crate::alloc::core::{count_of, served_short, OnZooKeeper, Taken};
use crate::alloc::engine::{Plan, Step};
use crate::alloc::state::{PoolIdentity, Slot, Strategy};
use crate::error::{Result, ZooidError};
use crate::format::{Blocks, OpKind, Pool};
use crate::idset::IdCategory;
use crate::range::{IdRange, RangeSet};
use crate::retry::Budget;
use crate::store::Store;
use crate::zk::ZooKeeperExt;

/// The error-level log line of a take whose claim of fresh blocks stayed unknown; its fields
/// `leaked=` (the blocks found, named), `at_most=` and `within=` (the bound of the rest) are
/// read by the fault suite's checker.
pub(crate) const CLAIM_UNKNOWN: &str = "block claim outcome unknown; its blocks stay unused";

/// What claiming fresh blocks came to.
enum Claimed {
    /// These IDs, from blocks the take claimed.
    Granted(Vec<IdRange>),
    /// The pool changed under the claim (a ceiling, a generation moved on): plan again on the
    /// pool as it is now.
    Replan,
}

impl<S: Store> OnZooKeeper<'_, S> {
    /// Completes a take of `n` IDs that took `holes`: fresh blocks for the rest. While the pool
    /// changes under the claims, the take reads it again and claims on that. Holes taken are
    /// handed out when no block can be claimed ([`served_short`]); they go back only when the
    /// claim's outcome is unknown, whose error names what may be lost.
    pub(crate) async fn take_blocks(
        &self,
        category: &IdCategory,
        slot: &mut Slot,
        mut holes: Vec<IdRange>,
        n: u64,
    ) -> Result<Taken> {
        let mut replans = self.budget();
        loop {
            let wanted = n - count_of(&holes);
            if wanted == 0 {
                return Ok(Taken::Ids(holes));
            }
            let failed = match self.claim_fresh(category, slot, wanted).await {
                Ok(Claimed::Granted(mut fresh)) => {
                    holes.append(&mut fresh);
                    return Ok(Taken::Ids(holes));
                }
                Ok(Claimed::Replan) => match self.replan(category, slot, &mut replans).await {
                    Ok(Strategy::Blocks(_)) => continue,
                    // Recreated as a single-node pool: its strategy serves the rest.
                    Ok(Strategy::Single) => return Ok(Taken::Moved(holes)),
                    Err(err) => err,
                },
                Err(err) => err,
            };
            return match failed {
                // IDs in doubt must be reported: the holes taken go back.
                err @ ZooidError::OutcomeUnknown { .. } => {
                    if !holes.is_empty() {
                        self.give_back(category, slot, holes).await;
                    }
                    Err(err)
                }
                // Nothing in doubt: the holes taken are handed out ([`served_short`]).
                err => served_short(category.name(), holes, err).map(Taken::Ids),
            };
        }
    }

    /// Reads the pool again after it changed under a claim (at once the first time, then with
    /// backoff, within `replans`): the layout it is in now.
    async fn replan(
        &self,
        category: &IdCategory,
        slot: &mut Slot,
        replans: &mut Budget,
    ) -> Result<Strategy> {
        // Past the deadline, `Timeout`: not the re-plans' count (`Contention`).
        self.next_phase(category.name())?;
        if !replans.try_attempt() {
            return Err(ZooidError::Contention {
                category: category.name().to_string(),
                attempts: replans.attempts(),
                elapsed: replans.elapsed(),
            });
        }
        if replans.attempts() > 1 {
            replans.backoff().await;
        }
        let mut budget = self.next_phase(category.name())?;
        Ok(self.current(category, slot, &mut budget).await?.strategy)
    }

    /// Claims fresh blocks for `n` IDs on the pool as the slot holds it (in block allocation);
    /// IDs of the claimed blocks beyond `n`, or above the ceiling, go back to the free list.
    async fn claim_fresh(&self, category: &IdCategory, slot: &mut Slot, n: u64) -> Result<Claimed> {
        let path = category.name();
        let session = self.zk;
        // No state: a lost reply was resolved without one; read the pool again.
        let Some(state) = slot.cached.as_ref() else {
            return Ok(Claimed::Replan);
        };
        let Strategy::Blocks(layout) = state.strategy else {
            return Ok(Claimed::Replan);
        };
        let planned = state.read_on;
        let (last, ceiling) = (state.pool.bounds().end(), state.pool.ceiling());
        let top = ceiling.unwrap_or(last).min(last);
        self.check_frontier(path, &layout, last, top, ceiling)
            .await?;
        let count = n.div_ceil(layout.unit).clamp(1, MAX_BLOCKS_PER_TAKE);
        let count = u32::try_from(count).unwrap_or(1);
        let mut budget = self.next_phase(path)?;
        let claimed = claims::claim(session, path, &layout, count, planned, &mut budget);
        let first = match claimed.await? {
            Claim::Granted { first } => first,
            Claim::Changed => {
                slot.cached = None;
                return Ok(Claimed::Replan);
            }
            Claim::Sealed => {
                self.rotate(category, slot, &layout).await?;
                return Ok(Claimed::Replan);
            }
            Claim::Missing => {
                slot.cached = None;
                self.repair_sequence_parent(path).await?;
                return Ok(Claimed::Replan);
            }
            Claim::Unknown(doubt) => {
                // Counted by the operation's caller (the service's `observed`).
                let (ids, leaked_within) = doubt.report(&layout, last);
                let named = ids
                    .iter()
                    .map(IdRange::to_string)
                    .collect::<Vec<_>>()
                    .join(",");
                let (at_most, within) =
                    leaked_within.map_or((0, String::new()), |b| (b.at_most, b.within.to_string()));
                tracing::error!(category = path, why = %doubt.why, leaked = %named, at_most, %within, "{CLAIM_UNKNOWN}");
                return Err(ZooidError::OutcomeUnknown {
                    category: path.to_string(),
                    op: crate::error::WriteOp::Take,
                    ids,
                    leaked_within,
                });
            }
        };
        let end = first + i64::from(count);
        self.categories.note_next_block(path, &layout, end);
        let mut claimed = RangeSet::new();
        for seq in first..end {
            if let Some(block) = layout.block(seq, last) {
                // Blocks are disjoint, so this cannot overlap.
                let _ = claimed.insert_all(&[block]);
            }
        }
        let handed = claimed.take_lowest_at_most(n, top);
        let leftover = claimed.ranges().to_vec();
        if !leftover.is_empty() {
            self.give_back(category, slot, leftover).await;
        }
        if end > ROTATE_AT {
            if let Err(err) = self.rotate(category, slot, &layout).await {
                tracing::warn!(category = path, %err, "moving the blocks to a new generation; the next take tries again");
            }
        }
        if handed.is_empty() {
            return Err(exhausted(path, ceiling, top < last));
        }
        Ok(Claimed::Granted(handed))
    }

    /// Fails early when the next block this process knows of lies past the end (asking the
    /// store before saying so) or above the ceiling.
    async fn check_frontier(
        &self,
        path: &str,
        layout: &Blocks,
        last: i64,
        top: i64,
        ceiling: Option<i64>,
    ) -> Result<()> {
        let known = self.categories.known_next_block(path, layout);
        match layout.block(known, last) {
            None => {
                // Past the end as far as this process knows: ask the store before saying so.
                let session = self.zk;
                let next = match generations::next_block(session, path, layout).await {
                    Ok(next) => next,
                    // No sequence parent (a migration or a move stopped before creating it):
                    // no block of the generation claimed. A claim creates it (or finds the
                    // pool moved on); claims stay the gate.
                    Err(ZooidError::NotFound { category }) if category != path => 0,
                    Err(err) => return Err(err),
                };
                self.categories.note_next_block(path, layout, next);
                if layout.block(next, last).is_none() {
                    return Err(ZooidError::Exhausted {
                        category: path.to_string(),
                    });
                }
            }
            Some(block) if block.start() > top => {
                if let Some(ceiling) = ceiling {
                    return Err(ZooidError::ReservationExhausted {
                        category: path.to_string(),
                        ceiling,
                        waited: Duration::ZERO,
                    });
                }
            }
            Some(_) => {}
        }
        Ok(())
    }

    /// Pushes IDs this process claimed but will not hand out back as holes. A failure (or an
    /// outcome that cannot be told: the push may have applied and been taken) leaves them
    /// unused, never handed out twice: they are reported leaked, counted in the `ids_leaked`
    /// figure and logged with their ranges (`leaked=START:END,...`).
    pub(crate) async fn give_back(
        &self,
        category: &IdCategory,
        slot: &mut Slot,
        ranges: Vec<IdRange>,
    ) {
        // The pool's layout decides where IDs go back; with no state held (a claim that must be
        // planned again dropped it), the pool node says, never a guess. They go back only to the
        // pool the take got its first IDs from (the same epoch and node), and only while the
        // block generation the take planned on (the leftover of a fresh claim: the one it
        // claimed in) is open, checked in the push's own `multi`: a restore or a repair since
        // starts a generation whose fresh blocks may be these very IDs (a block claimed above
        // the ceiling), and a push of them then would hand them out twice.
        // A deadline of its own: the take's may be spent, and IDs not given back are leaked.
        let on = self.afresh();
        let state = match slot.cached.as_ref() {
            Some(state) => Ok((PoolIdentity::of(state), state.pool.blocks())),
            None => {
                let mut budget = on.budget();
                match on.read(category.name(), &mut budget).await {
                    Ok(node) => Pool::parse(category.name(), &node.data).map(|pool| {
                        let identity = PoolIdentity {
                            epoch: pool.epoch(),
                            created: Some(node.created),
                        };
                        (identity, pool.blocks())
                    }),
                    Err(err) => Err(err),
                }
            }
        };
        let taken_from = slot.taken_from;
        let returned = match state {
            Err(err) => Err(err),
            Ok((now, _)) if taken_from.is_some_and(|from| !from.same_pool(&now)) => {
                Err(ZooidError::InvalidArgument(format!(
                    "{}: the pool is not the one the IDs were taken from (epoch {}, taken at epoch {}: restored or created again since)",
                    category.name(),
                    now.epoch,
                    taken_from.map_or(0, |from| from.epoch)
                )))
            }
            Ok((_, Some(blocks))) => {
                on.push_holes_held(category.name(), slot, &ranges, Some(blocks.generation))
                    .await
            }
            Ok((_, None)) => Err(ZooidError::InvalidArgument(format!(
                "{}: no longer in block allocation (recreated?)",
                category.name()
            ))),
        };
        match returned {
            Ok(()) => {}
            Err(err) => {
                let path = category.name();
                self.stats.leaked(path, count_of(&ranges));
                let leaked = ranges
                    .iter()
                    .map(IdRange::to_string)
                    .collect::<Vec<_>>()
                    .join(",");
                tracing::error!(category = path, %err, %leaked, "unused block IDs not given back; IDs leaked");
            }
        }
    }

    /// Moves the pool's block allocation past generation `layout.generation`: seals it, reads
    /// how many blocks it claimed, writes the next generation's base, creates its sequence
    /// parent and retires the generation before. Any process may finish a move another one
    /// started.
    pub(crate) async fn rotate(
        &self,
        category: &IdCategory,
        slot: &mut Slot,
        layout: &Blocks,
    ) -> Result<()> {
        let path = category.name();
        let session = self.zk;
        // Not begun past the operation's deadline: a generation sealed and left so would refuse
        // the give-back of the take's leftover IDs.
        self.next_phase(path)?;
        if !generations::seal(session, path, layout).await? {
            // A missing sequence parent: the move that made the pool's current generation
            // stopped before creating it (or the generation is retired). Nothing to move: read
            // the pool again. Its blocks are never counted unsealed (a parent created since by a
            // claimer would take claims after the count).
            slot.cached = None;
            return Ok(());
        }
        let next = match generations::sealed_next_block(session, path, layout).await {
            Ok(next) => next,
            // Gone: the move is done (and the generation retired), or the pool was recreated.
            Err(ZooidError::NotFound { .. }) => {
                slot.cached = None;
                return Ok(());
            }
            Err(err) => return Err(err),
        };
        let generation = layout.generation;
        // Sealed: the move goes on to its end with a deadline of its own (a generation sealed
        // and left so refuses every claim and give-back until a process finishes the move).
        let mut budget = self.afresh().budget();
        let plan = |pool: &Pool, strategy| next_generation(pool, strategy, generation, next);
        let step = self
            .update(category, slot, &mut budget, OpKind::Blocks, true, plan)
            .await?;
        if let Step::Done {
            strategy: Strategy::Blocks(next),
            ..
        } = step
        {
            tracing::info!(
                category = path,
                generation = next.generation,
                "blocks moved to a new generation"
            );
        }
        // The sequence parent of the generation the pool is at now, as this process knows it,
        // and only while the pool is still at that version: a process paused through later
        // moves never brings back a retired generation's numbering (a claim in it whose reply
        // was lost would then be judged not applied).
        if let Some(state) = slot.cached.as_ref() {
            if let Strategy::Blocks(current) = state.strategy {
                if current.generation != generation
                    && !generations::ensure_parent_at(
                        session,
                        path,
                        current.generation,
                        state.version,
                        state.read_on,
                    )
                    .await?
                {
                    slot.cached = None;
                }
            }
        }
        generations::retire_before(session, path, generation);
        Ok(())
    }

    /// After a claim found no sequence parent: creates the one of the pool's current generation
    /// if it is missing (a process that moved the generation stopped before creating it). Reads
    /// the pool after a `sync`, so that a lagging server does not bring back a retired one.
    pub(crate) async fn repair_sequence_parent(&self, path: &str) -> Result<()> {
        let session = self.zk;
        // Before the read: the parent is created only on the session and connection it was on.
        let read_on = session.read_on();
        let node = self
            .sync_and_read(path)
            .await
            .map_err(|e| e.into_zooid(path))?;
        let pool = Pool::parse(path, &node.data)?;
        self.categories
            .observe(path, pool.epoch(), pool.version_at(node.version))?;
        match pool.blocks() {
            Some(layout) => generations::ensure_parent_at(
                session,
                path,
                layout.generation,
                node.version,
                read_on,
            )
            .await
            .map(drop),
            None => Ok(()),
        }
    }
}

/// The plan of a move past generation `generation`, whose sequence parent numbered `next`
/// blocks: the next generation starts above them. Another process may have moved it already.
fn next_generation(pool: &Pool, strategy: Strategy, generation: u64, next: i64) -> Result<Plan> {
    let Strategy::Blocks(current) = strategy else {
        return Ok(Plan::Keep);
    };
    if current.generation != generation {
        return Ok(Plan::Keep);
    }
    let unit = i64::try_from(current.unit).unwrap_or(i64::MAX);
    let base = next
        .saturating_mul(unit)
        .saturating_add(current.base)
        .min(pool.bounds().end().saturating_add(1));
    let mut moved = pool.clone();
    moved.set_blocks(Blocks {
        unit: current.unit,
        generation: current.next_generation(pool.epoch()),
        base,
    });
    Ok(Plan::Write {
        next: moved,
        moved: Vec::new(),
        count: base.abs_diff(current.base),
    })
}

/// Why a claim handed out nothing: at the ceiling (below the end) or at the end.
fn exhausted(path: &str, ceiling: Option<i64>, below_end: bool) -> ZooidError {
    match ceiling {
        Some(ceiling) if below_end => ZooidError::ReservationExhausted {
            category: path.to_string(),
            ceiling,
            waited: Duration::ZERO,
        },
        _ => ZooidError::Exhausted {
            category: path.to_string(),
        },
    }
}
