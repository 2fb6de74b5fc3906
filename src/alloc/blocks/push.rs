//! A push to a pool in block allocation: checked against the pool as read (its bounds and the
//! blocks' frontier), then left as hole nodes (src/alloc/holes/push.rs), without writing the
//! pool node.

use super::generations;
use crate::alloc::core::OnZooKeeper;
use crate::alloc::state::Cached;
use crate::error::{Result, ZooidError};
use crate::format::Blocks;
use crate::idset::IdCategory;
use crate::range::IdRange;
use crate::store::Store;

/// What became of a push to a pool in block allocation.
pub(crate) enum Pushed {
    /// Left as hole nodes.
    Done,
    /// Refused, nothing written: this range lies at or above the frontier of the generation the
    /// push was checked against (free already, if that generation is still the pool's).
    AboveFrontier(IdRange),
}

/// A push as checked against the pool as read: within the bounds; what is left to check.
pub(crate) struct Checked {
    /// The blocks' layout, when the push reaches into its generation: IDs no block claimed yet
    /// are free already, which only the generation's frontier (read) tells.
    reaches: Option<Blocks>,
}

impl<S: Store> OnZooKeeper<'_, S> {
    /// Checks a push of `ranges` against `state`, the pool as this process last read or wrote
    /// it: the bounds now, the rest in [`push_blocks`](Self::push_blocks).
    pub(crate) fn check_push(
        &self,
        category: &IdCategory,
        state: &Cached,
        ranges: &[IdRange],
    ) -> Result<Checked> {
        let pool = &state.pool;
        if let Some(range) = ranges.iter().find(|r| !pool.bounds().covers(r)) {
            return Err(ZooidError::OutOfBounds {
                category: category.name().to_string(),
                range: *range,
                bounds: pool.bounds(),
            });
        }
        let reaches = pool
            .blocks()
            .filter(|layout| ranges.iter().any(|r| r.end() >= layout.base));
        Ok(Checked { reaches })
    }

    /// Leaves `ranges` (checked) under the pool as hole nodes, refusing IDs at or above the
    /// blocks' frontier ([`Pushed::AboveFrontier`]; a hole already there is refused by the
    /// holes' push, `AlreadyFree`).
    pub(crate) async fn push_blocks(
        &self,
        category: &IdCategory,
        ranges: &[IdRange],
        checked: Checked,
    ) -> Result<Pushed> {
        let path = category.name();
        let session = self.zk;
        let fresh_part = match checked.reaches {
            Some(layout) => {
                // Blocks this process saw claimed are below the frontier: no read for them.
                let known = self.categories.known_next_block(path, &layout);
                let known = generations::block_start(&layout, known);
                let frontier = if ranges.iter().all(|r| r.end() < known) {
                    known
                } else {
                    // No sequence parent: no block of the generation claimed (a move that
                    // stopped before creating it), so every ID from its base is free.
                    generations::frontier_if_numbered(session, path, &layout)
                        .await?
                        .unwrap_or(layout.base)
                };
                ranges
                    .iter()
                    .find(|r| r.end() >= frontier)
                    .and_then(|r| IdRange::new(r.start().max(frontier), r.end()))
            }
            None => None,
        };
        if let Some(range) = fresh_part {
            return Ok(Pushed::AboveFrontier(range));
        }
        self.push_hole_nodes(path, ranges).await?;
        Ok(Pushed::Done)
    }
}
