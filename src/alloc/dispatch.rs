//! The dispatch point between the allocation strategies. A take or a push holds its category's
//! slot, knows the pool (as remembered, or read now), and is served by the strategy of the
//! pool's layout: the single node (src/alloc/single.rs) or hole nodes with fresh blocks
//! (format 4: src/alloc/holes/, src/alloc/blocks/). No other module chooses a strategy.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::blocks::push::Pushed;
use super::core::{count_of, served_short, Core, Taken};
use super::state::{PoolIdentity, Slot, Strategy};
use super::{holes, single};
use crate::error::{Result, ZooidError};
use crate::idset::IdCategory;
use crate::range::{IdRange, InsertError, RangeSet};
use crate::retry::Budget;
use crate::stats::Recorder;
use crate::store::Store;

/// A take of up to `n` IDs that, at the category's ceiling, waits for the keeper to raise it
/// (up to [`ceiling_wait`](super::ServiceOptions::ceiling_wait)). Once `gone` is set (its caller
/// gave up), it takes nothing more: no IDs, when it had not held the category's slot yet.
pub(super) async fn take<S: Store>(
    core: &Core<S>,
    category: &IdCategory,
    n: u64,
    gone: &AtomicBool,
) -> Result<Vec<IdRange>> {
    let started = tokio::time::Instant::now();
    loop {
        match take_once(core, category, n, gone).await {
            Err(ZooidError::ReservationExhausted { ceiling, .. }) => {
                let waited = started.elapsed();
                let Some(left) = core.options.ceiling_wait.checked_sub(waited) else {
                    tracing::warn!(
                        category = category.name(),
                        ceiling,
                        ?waited,
                        "take at the ceiling: the durable reservation is exhausted"
                    );
                    return Err(ZooidError::ReservationExhausted {
                        category: category.name().to_string(),
                        ceiling,
                        waited,
                    });
                };
                wait_for_raise(core, category, left).await;
            }
            other => return other,
        }
    }
}

/// One take, under one hold of the category's slot: the lowest free IDs of a single-node
/// pool, or for a pool in block allocation holes and fresh blocks.
async fn take_once<S: Store>(
    core: &Core<S>,
    category: &IdCategory,
    n: u64,
    gone: &AtomicBool,
) -> Result<Vec<IdRange>> {
    let (mut slot, budget) = core.hold(category).await?;
    // Its caller gave up while it waited (behind this process's other operations on the
    // category, or for the keeper): IDs taken now would be for nobody, and go back at once.
    if gone.load(Ordering::Acquire) {
        return Ok(Vec::new());
    }
    // Left set if this future is dropped mid-write, or the take ends in doubt.
    slot.in_doubt = true;
    slot.taken_from = None;
    // Boxed: the take's state machine is large, and a caller's stack need not hold it.
    let taken = Box::pin(take_held(core, category, &mut slot, budget, n)).await;
    slot.in_doubt = matches!(taken, Err(ZooidError::OutcomeUnknown { .. }));
    taken
}

/// [`take_once`](take_once) under the held slot: the strategy of the pool as known
/// or read now serves it; one that finds the pool in another layout hands the rest back
/// here.
async fn take_held<S: Store>(
    core: &Core<S>,
    category: &IdCategory,
    slot: &mut Slot,
    mut budget: Budget,
    n: u64,
) -> Result<Vec<IdRange>> {
    let mut taken = Vec::new();
    let mut served = Ok(Taken::Moved(Vec::new()));
    for _ in 0..LAYOUT_CHANGES {
        let wanted = n - count_of(&taken);
        let strategy = match core.current(category, slot, &mut budget).await {
            Ok(state) => {
                let (identity, strategy) = (PoolIdentity::of(state), state.strategy);
                slot.taken_from.get_or_insert(identity);
                Ok(strategy)
            }
            Err(err) => Err(err),
        };
        served = match strategy {
            Ok(strategy) => match strategy {
                Strategy::Single => single::take(core, category, slot, &mut budget, wanted).await,
                Strategy::Blocks(_) => match core.on_zookeeper() {
                    Ok(on) => holes::take(&on.serving(&budget), category, slot, wanted).await,
                    Err(err) => Err(err),
                },
            },
            Err(err) => Err(err),
        };
        match served {
            Ok(Taken::Ids(mut ids)) => {
                taken.append(&mut ids);
                return merged(&core.stats, category, taken);
            }
            Ok(Taken::Moved(ref mut ids)) => taken.append(ids),
            Err(_) => break,
        }
    }
    match served {
        Err(err @ ZooidError::OutcomeUnknown { .. }) => {
            leak_taken(core, category, slot, taken).await;
            Err(err)
        }
        // Taken before the layout changed, and the new layout gave no more with nothing in
        // doubt: handed out.
        Err(err) => served_short(category.name(), taken, err)
            .and_then(|taken| merged(&core.stats, category, taken)),
        Ok(_) => {
            leak_taken(core, category, slot, taken).await;
            Err(ZooidError::Contention {
                category: category.name().to_string(),
                attempts: budget.attempts(),
                elapsed: budget.elapsed(),
            })
        }
    }
}

/// IDs a take got before its outcome became unknown: given back as holes where the pool is still in block
/// allocation, reported leaked otherwise ([`give_back`](super::core::OnZooKeeper::give_back)).
async fn leak_taken<S: Store>(
    core: &Core<S>,
    category: &IdCategory,
    slot: &mut Slot,
    taken: Vec<IdRange>,
) {
    if taken.is_empty() {
        return;
    }
    match core.on_zookeeper() {
        Ok(zk) => zk.give_back(category, slot, taken).await,
        // Only a pool in block allocation hands IDs over to another layout, and only on
        // ZooKeeper.
        Err(err) => {
            core.stats.leaked(category.name(), count_of(&taken));
            tracing::error!(category = category.name(), %err, ?taken, "IDs taken before a failure not given back; IDs leaked");
        }
    }
}

/// One push: into the free list with compare-and-set, or for a pool in block allocation as
/// hole nodes (checked against the pool as read).
pub(super) async fn push<S: Store>(
    core: &Core<S>,
    category: &IdCategory,
    ranges: &[IdRange],
) -> Result<Vec<IdRange>> {
    let (mut slot, mut budget) = core.hold(category).await?;
    // Whether the pool was read after a `sync` in this push.
    let mut synced = false;
    for _ in 0..LAYOUT_CHANGES {
        let remembered = slot.cached.as_ref().map(|c| c.at);
        let state = core.current(category, &mut slot, &mut budget).await?;
        match state.strategy {
            Strategy::Single => {
                let pushed = single::push(core, category, &mut slot, &mut budget, ranges);
                if let Some(moved) = pushed.await? {
                    return Ok(moved);
                }
            }
            Strategy::Blocks(_) => {
                let read_now = remembered != Some(state.at);
                let on = core.on_zookeeper()?.serving(&budget);
                match holes::push(&on, category, slot, &mut budget, ranges).await? {
                    Pushed::Done => return Ok(ranges.to_vec()),
                    Pushed::AboveFrontier(range) if read_now && synced => {
                        return Err(ZooidError::AlreadyFree {
                            category: category.name().to_string(),
                            range,
                        })
                    }
                    // Decided on a remembered pool, or on a read a server behind the leader
                    // may have served (a move to a new block generation this process has not
                    // heard of puts IDs claimed there above the old frontier): nothing was
                    // written; catch the server up, read the pool and decide again.
                    Pushed::AboveFrontier(_) => {
                        if read_now {
                            core.store.sync(category.name()).await.map_err(|e| {
                                ZooidError::ConnectionLost {
                                    category: category.name().to_string(),
                                    reason: format!("sync before deciding a push: {e}"),
                                }
                            })?;
                            synced = true;
                        }
                        let within = Budget::since(core.options.retry, budget.started());
                        let (mut held, _) = core.hold_within(category, within).await?;
                        held.forget();
                        slot = held;
                    }
                }
            }
        }
    }
    Err(ZooidError::Contention {
        category: category.name().to_string(),
        attempts: budget.attempts(),
        elapsed: budget.elapsed(),
    })
}

/// Waits up to `limit` for the pool to change from the version last read (the keeper
/// raising the ceiling), then forgets the cached state so the next attempt reads afresh.
async fn wait_for_raise<S: Store>(core: &Core<S>, category: &IdCategory, limit: Duration) {
    let slot = core.categories.slot(category.name());
    let Ok(mut held) = tokio::time::timeout(limit, slot.lock()).await else {
        return;
    };
    let seen = held.cached.take().map(|state| state.version);
    drop(held);
    let Some(seen) = seen else { return };
    tracing::debug!(
        category = category.name(),
        version = seen,
        ?limit,
        "take at the ceiling: waiting for the keeper"
    );
    if let Err(err) = core.store.wait_change(category.name(), seen, limit).await {
        // Unreachable store: pause briefly; the next attempt reports it within its budget.
        tracing::debug!(category = category.name(), %err, "waiting for the ceiling");
        tokio::time::sleep(limit.min(Duration::from_millis(100))).await;
    }
}

/// How many times one take or push follows the pool into another layout (a recreation or a
/// migration under it) before it gives up as contended.
const LAYOUT_CHANGES: usize = 3;

/// A take's ranges in ascending order, merged: holes and fresh blocks side by side make one.
/// Ranges that overlap (the store handed one ID to two of this take's claims, which the
/// protocol rules out) fail the take: nothing is handed out, the IDs are leaked (giving them
/// back could free IDs another process holds).
fn merged(stats: &Recorder, category: &IdCategory, ranges: Vec<IdRange>) -> Result<Vec<IdRange>> {
    let mut merged = RangeSet::new();
    match merged.insert_all(&ranges) {
        Ok(()) => Ok(merged.ranges().to_vec()),
        Err(InsertError::Overlap(overlap)) => {
            stats.leaked(category.name(), count_of(&ranges));
            tracing::error!(
                category = category.name(),
                ?overlap,
                ?ranges,
                "a take's ranges overlap; none handed out"
            );
            Err(ZooidError::WentBackwards {
                what: format!("the store of category {}", category.name()),
                reason: format!(
                    "one take got IDs {overlap} from two claims (ranges {ranges:?}); none of its IDs \
                     is handed out, they are leaked"
                ),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn category() -> IdCategory {
        IdCategory::new("/dispatch/did").unwrap()
    }

    #[test]
    fn a_take_of_disjoint_ranges_is_merged_in_order() {
        let stats = Recorder::default();
        let ranges = vec![IdRange::new(11, 20).unwrap(), IdRange::new(1, 10).unwrap()];
        let merged = merged(&stats, &category(), ranges).unwrap();
        assert_eq!(merged, vec![IdRange::new(1, 20).unwrap()]);
        assert_eq!(stats.snapshot().ids_leaked, 0);
    }

    /// An overlap within one take (the store handed an ID to two of its claims) fails the take
    /// and hands nothing out; before, the overlapping ranges went to the caller as they were.
    #[test]
    fn a_take_whose_ranges_overlap_hands_nothing_out() {
        let stats = Recorder::default();
        let ranges = vec![IdRange::new(1, 10).unwrap(), IdRange::new(5, 20).unwrap()];
        let err = merged(&stats, &category(), ranges).unwrap_err();
        assert!(
            matches!(&err, ZooidError::WentBackwards { reason, .. } if reason.contains("IDs 5:20")),
            "{err}"
        );
        assert_eq!(stats.snapshot().ids_leaked, 26);
    }

    /// A refusal is decided after a `sync`, and the plan after it belongs to the attempt that
    /// refused: with one attempt allowed, an exhausted pool still says `Exhausted` and a push of
    /// free IDs `AlreadyFree` (before, the re-plan took a second attempt: `Timeout`).
    #[tokio::test]
    async fn a_refusal_with_one_attempt_allowed_is_the_refusal() {
        let options = crate::alloc::ServiceOptions {
            retry: crate::retry::RetryPolicy {
                max_attempts: 1,
                ..Default::default()
            },
            ..Default::default()
        };
        let connect = crate::zk::ConnectOptions::default();
        let service = crate::IdGeneratorService::connect("mem:", &connect, options)
            .await
            .unwrap();
        let category = category();
        let spec = crate::alloc::CategorySpec::new(1, 10);
        service.create_category(&category, &spec).await.unwrap();
        let mut all = service.take_ids(&category, 10).await.unwrap();
        let more = service.take_ids(&category, 1).await;
        assert!(matches!(more, Err(ZooidError::Exhausted { .. })), "{more:?}");
        service.push_ids(&mut all).await.unwrap();
        let mut again = crate::IdSet::new(category.clone(), vec![IdRange::new(1, 1).unwrap()]);
        let twice = service.push_ids(&mut again).await;
        assert!(matches!(twice, Err(ZooidError::AlreadyFree { .. })), "{twice:?}");
    }
}
