//! Take and push: each holds its category's slot, plans on the pool once read (or as
//! remembered), and follows the strategy that read found: the single-node one
//! (src/alloc/single.rs) or block allocation with hole nodes (format 4: src/alloc/holes/,
//! src/alloc/blocks/).

use std::time::Duration;

use super::engine::Step;
use super::service::IdGeneratorService;
use super::single;
use super::state::{Slot, Strategy};
use crate::error::{Result, ZooidError};
use crate::format::OpKind;
use crate::idset::IdCategory;
use crate::range::IdRange;
use crate::retry::Budget;
use crate::store::Store;

impl<S: Store> IdGeneratorService<S> {
    /// A take of up to `n` IDs that, at the category's ceiling, waits for the keeper to raise it
    /// (up to [`ceiling_wait`](super::ServiceOptions::ceiling_wait)).
    pub(super) async fn take_waiting(&self, category: &IdCategory, n: u64) -> Result<Vec<IdRange>> {
        let started = tokio::time::Instant::now();
        loop {
            match self.take_once(category, n).await {
                Err(ZooidError::ReservationExhausted { ceiling, .. }) => {
                    let waited = started.elapsed();
                    let Some(left) = self.options.ceiling_wait.checked_sub(waited) else {
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
                    self.wait_for_raise(category, left).await;
                }
                other => return other,
            }
        }
    }

    /// One take, under one hold of the category's slot: the lowest free IDs of a single-node
    /// pool, or for a pool in block allocation holes and fresh blocks.
    async fn take_once(&self, category: &IdCategory, n: u64) -> Result<Vec<IdRange>> {
        let (mut slot, budget) = self.hold(category).await?;
        // Left set if this future is dropped mid-write, or the take ends in doubt.
        slot.in_doubt = true;
        // Boxed: the take's state machine is large, and a caller's stack need not hold it.
        let taken = Box::pin(self.take_held(category, &mut slot, budget, n)).await;
        slot.in_doubt = matches!(taken, Err(ZooidError::OutcomeUnknown { .. }));
        taken
    }

    /// [`take_once`](Self::take_once) under the held slot.
    async fn take_held(
        &self,
        category: &IdCategory,
        slot: &mut Slot,
        mut budget: Budget,
        n: u64,
    ) -> Result<Vec<IdRange>> {
        let plan = single::take(category, n);
        let step = self
            .update(category, slot, &mut budget, OpKind::Take, true, plan)
            .await?;
        match step {
            Step::Done {
                moved,
                strategy: Strategy::Single,
            } => Ok(moved),
            // A pool in block allocation holds no free list: the plan took nothing from it.
            Step::Done { moved, .. } => self.take_hole_nodes(category, slot, moved, n).await,
            Step::Kept(_) => self.take_hole_nodes(category, slot, Vec::new(), n).await,
        }
    }

    /// One push: into the free list with compare-and-set, or for a pool in block allocation as
    /// hole nodes (checked against the pool as read).
    pub(super) async fn push_once(
        &self,
        category: &IdCategory,
        ranges: &[IdRange],
    ) -> Result<Vec<IdRange>> {
        let (mut slot, mut budget) = self.hold(category).await?;
        let plan = single::push(category, ranges);
        let step = self
            .update(category, &mut slot, &mut budget, OpKind::Push, true, plan)
            .await?;
        let checked = match step {
            Step::Done { moved, .. } => return Ok(moved),
            Step::Kept(state) => self.check_push(category, state, ranges)?,
        };
        // The push's own write does not need the slot: others take meanwhile.
        drop(slot);
        self.push_blocks(category, ranges, checked).await?;
        Ok(ranges.to_vec())
    }

    /// Waits up to `limit` for the pool to change from the version last read (the keeper
    /// raising the ceiling), then forgets the cached state so the next attempt reads afresh.
    async fn wait_for_raise(&self, category: &IdCategory, limit: Duration) {
        let slot = self.categories.slot(category.name());
        let seen = slot.lock().await.cached.take().map(|state| state.version);
        let Some(seen) = seen else { return };
        tracing::debug!(
            category = category.name(),
            version = seen,
            ?limit,
            "take at the ceiling: waiting for the keeper"
        );
        if let Err(err) = self.store.wait_change(category.name(), seen, limit).await {
            // Unreachable store: pause briefly; the next attempt reports it within its budget.
            tracing::debug!(category = category.name(), %err, "waiting for the ceiling");
            tokio::time::sleep(limit.min(Duration::from_millis(100))).await;
        }
    }
}
