//! A push to a pool in block allocation: checked against the pool as read, then left in a node
//! of its own for the next take to merge, without writing the pool node
//! (src/alloc/blocks/returns.rs).

use super::{generations, returns};
use crate::alloc::blocks::needs_zookeeper;
use crate::alloc::service::IdGeneratorService;
use crate::alloc::state::{Cached, Slot};
use crate::error::{Result, ZooidError};
use crate::format::Blocks;
use crate::idset::IdCategory;
use crate::range::IdRange;
use crate::retry::Budget;
use crate::store::Store;
use crate::zk::Session;

/// A push as checked against the pool as read: within the bounds; what is left to check.
pub(crate) struct Checked {
    /// The blocks' layout, when the push reaches into its generation: IDs no block claimed yet
    /// are free already, which only the generation's frontier (read) tells.
    reaches: Option<Blocks>,
    /// A pushed range already free in the free list as read.
    already_free: Option<IdRange>,
    /// The pool keeps pushed ranges as hole nodes (format 4, src/alloc/holes/).
    hole_nodes: bool,
}

impl<S: Store> IdGeneratorService<S> {
    /// Checks a push of `ranges` against `state`, the pool as this process last read or wrote
    /// it: the bounds now, the rest in [`push_blocks`](Self::push_blocks). `None` when a
    /// remembered (not fresh) state finds pushed IDs free: that verdict is decided only on the
    /// pool read again.
    pub(crate) fn check_push(
        &self,
        category: &IdCategory,
        state: &Cached,
        ranges: &[IdRange],
    ) -> Result<Option<Checked>> {
        self.store.session().ok_or_else(needs_zookeeper)?;
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
        let already_free = ranges.iter().find_map(|r| pool.free().first_overlap(r));
        if already_free.is_some() && !state.fresh {
            return Ok(None);
        }
        Ok(Some(Checked {
            reaches,
            already_free,
            hole_nodes: pool.blocks().is_some_and(|layout| layout.hole_nodes),
        }))
    }

    /// Leaves `ranges` (checked) under the pool for the next take to merge, refusing IDs at or
    /// above the blocks' frontier or free as last read (`AlreadyFree`).
    pub(crate) async fn push_blocks(
        &self,
        category: &IdCategory,
        ranges: &[IdRange],
        checked: Checked,
    ) -> Result<()> {
        let path = category.name();
        let session = self.store.session().ok_or_else(needs_zookeeper)?;
        let fresh_part = match checked.reaches {
            Some(layout) => {
                // Blocks this process saw claimed are below the frontier: no read for them.
                let known = self.categories.known_next_block(path, &layout);
                let known = generations::block_start(&layout, known);
                let frontier = if ranges.iter().all(|r| r.end() < known) {
                    known
                } else {
                    generations::frontier(session, path, &layout).await?
                };
                ranges
                    .iter()
                    .find(|r| r.end() >= frontier)
                    .and_then(|r| IdRange::new(r.start().max(frontier), r.end()))
            }
            None => None,
        };
        if let Some(range) = fresh_part.or(checked.already_free) {
            return Err(ZooidError::AlreadyFree {
                category: path.to_string(),
                range,
            });
        }
        if checked.hole_nodes {
            return self.push_hole_nodes(path, session, ranges).await;
        }
        let returned = self.return_ids(path, session, ranges).await?;
        let slot = self.categories.slot(path);
        note_return(&mut *slot.lock().await, returned, ranges);
        Ok(())
    }

    /// Leaves `ranges` under pool `path` in a node of their own, deleting this process's
    /// previous push marker.
    pub(crate) async fn return_ids(
        &self,
        path: &str,
        session: &Session,
        ranges: &[IdRange],
    ) -> Result<returns::Returned> {
        let previous = self.categories.take_marker(path);
        let mut budget = Budget::start(self.options.retry);
        let returned =
            returns::push_return(session, path, ranges, previous.as_deref(), &mut budget).await?;
        self.categories.put_marker(path, returned.marker.clone());
        Ok(returned)
    }
}

/// The push `returned` of `ranges` moved the node takes check. When no other push came between,
/// this process knows the waiting pushes exactly: it adds its own to what it remembers.
/// Otherwise the next take reads them.
pub(crate) fn note_return(slot: &mut Slot, returned: returns::Returned, ranges: &[IdRange]) {
    let merged = match (slot.cached.as_mut(), returned.announced) {
        (Some(state), Some(announced)) if state.waiting.announced == Some(announced - 1) => {
            let pushes = vec![(returned.node, ranges.to_vec())];
            state
                .waiting
                .merge(state.pool.free_mut(), announced, pushes)
                == 0
        }
        _ => false,
    };
    if !merged {
        slot.cached = None;
    }
}
