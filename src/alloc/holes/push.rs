//! A push to a pool in format 4: its ranges become hole nodes (one `create`, or one `multi` of
//! them, see src/alloc/holes/requests.rs), refused when a hole this process listed holds any of them.

use super::memory;
use crate::alloc::core::OnZooKeeper;
use crate::alloc::state::Slot;
use crate::error::{Result, ZooidError};
use crate::range::IdRange;
use crate::store::Store;

/// The most ranges one push writes in one `multi` (a create each, about 75 bytes).
pub(crate) const MAX_RANGES_PER_WRITE: usize = 1_000;

impl<S: Store> OnZooKeeper<'_, S> {
    /// Leaves `ranges` under pool `path` as hole nodes. Refused as `AlreadyFree` when one of
    /// them overlaps a hole this process knows ([`super::listing::known`]) that is still there
    /// when listed again after a `sync`, or is a hole already (the create fails). A push reads
    /// nothing before its write. Waits for the category's slot within the operation's deadline
    /// (`Timeout`, nothing written).
    pub(crate) async fn push_hole_nodes(&self, path: &str, ranges: &[IdRange]) -> Result<()> {
        let slot = self.categories.slot(path);
        let budget = self.budget();
        let Ok(mut slot) = tokio::time::timeout(budget.remaining(), slot.lock()).await else {
            return Err(ZooidError::Timeout {
                what: path.to_string(),
                after: budget.elapsed(),
            });
        };
        self.push_holes_held(path, &mut slot, ranges, None).await
    }

    /// [`push_hole_nodes`](Self::push_hole_nodes) with the category's slot held. With
    /// `claimed_in` (a take giving back IDs claimed in that block generation), only while the
    /// generation is open ([`super::requests::push`]).
    pub(crate) async fn push_holes_held(
        &self,
        path: &str,
        slot: &mut Slot,
        ranges: &[IdRange],
        claimed_in: Option<u64>,
    ) -> Result<()> {
        let zk = self.zk;
        let mut budget = self.next_phase(path)?;
        super::listing::known(
            zk,
            path,
            &mut memory::of(slot).listing,
            &mut budget,
            &self.stats,
        )
        .await?;
        // The pushed range that overlaps a hole, as the single-node layout reports it; decided
        // only on the holes listed again after a `sync` (a listing kept, or served by a
        // lagging server, may still show a hole another take deleted since).
        let overlapping = |holes: &[crate::alloc::holes::choice::Hole]| {
            ranges
                .iter()
                .find(|r| holes.iter().any(|(_, hole)| hole.overlaps(r)))
                .copied()
        };
        let mut overlap = overlapping(super::listing::holes_of(&memory::of(slot).listing));
        if overlap.is_some() {
            let mut budget = self.next_phase(path)?;
            super::listing::sync(zk, path, &mut budget).await?;
            let mut listing =
                super::listing::list(zk, path, super::listing::Watch::Set, &mut budget).await?;
            overlap = overlapping(&listing.holes);
            let generation = listing.generation;
            listing.follow(
                memory::of(slot)
                    .listing
                    .as_ref()
                    .filter(|l| l.generation == generation),
            );
            memory::of(slot).listing = Some(listing);
        }
        if let Some(range) = overlap {
            return Err(ZooidError::AlreadyFree {
                category: path.to_string(),
                range,
            });
        }
        // A `multi` of a few thousand creates outgrows ZooKeeper's request limit (1 MB): a push
        // of more ranges goes in writes of MAX_RANGES_PER_WRITE, checked whole above first.
        let mut budget = self.next_phase(path)?;
        for (index, part) in ranges.chunks(MAX_RANGES_PER_WRITE).enumerate() {
            // The holes' incarnation the push is planned on (its listing's): a lost reply is
            // resolved only there.
            let incarnation = memory::of(slot).listing.as_ref().map(|l| l.created);
            let pushed = super::requests::push(
                zk,
                path,
                part,
                claimed_in,
                incarnation,
                &self.stats,
                &mut budget,
            );
            match pushed.await {
                Ok(()) => {
                    // The listing's watch may fire only after this returns: keep it true
                    // meanwhile.
                    if let Some(listing) = memory::of(slot).listing.as_mut() {
                        listing.apply_own(&[], part);
                    }
                }
                Err(err) => {
                    let in_doubt = matches!(err, ZooidError::OutcomeUnknown { .. });
                    if index == 0 && (!in_doubt || ranges.len() <= MAX_RANGES_PER_WRITE) {
                        // Nothing written (the caller gets its IDs back), or all of it named.
                        return Err(err);
                    }
                    // A part applied or may have: the failed part and every part not sent are
                    // reported leaked, never pushed twice (the push is not repeated).
                    let rest = ranges[index * MAX_RANGES_PER_WRITE..].to_vec();
                    tracing::error!(category = path, %err, ranges = rest.len(), "a push in parts failed; the failed part and the parts not sent are leaked");
                    return Err(ZooidError::OutcomeUnknown {
                        category: path.to_string(),
                        op: crate::error::WriteOp::Push,
                        ids: rest,
                        leaked_within: None,
                    });
                }
            }
        }
        Ok(())
    }
}
