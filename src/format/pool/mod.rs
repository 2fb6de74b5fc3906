//! The pool node's text (formats 1, 2 and 4): strict parsing and rendering, as docs/FORMAT.md
//! specifies it. A [`Pool`] is what the node says, nothing more: the state an operation keeps
//! about it (the holes listed, the blocks claimed) lives in the allocator. Format 3 is retired:
//! a node in it is refused ([`crate::error::ZooidError::RetiredFormat`]), never overwritten.
//!
//! ```text
//! #zooid 1
//! #bounds 1:123456789
//! #op 3 take 5d0c3a0f9e8b7a61 10000
//! 37001:123456789
//! ```
//!
//! A pool with a durable reservation carries a ceiling (and, once restored, an epoch) and is
//! written as format 2, which readers of format 1 refuse:
//!
//! ```text
//! #zooid 2
//! #bounds 1:123456789
//! #ceiling 60000
//! #epoch 1
//! #op 3 take 5d0c3a0f9e8b7a61 10000
//! 37001:123456789
//! ```
//!
//! A category created for scale hands out fresh IDs in blocks (src/alloc/blocks/) and keeps its
//! recycled IDs as hole nodes of their own (src/alloc/holes/), none in the pool node; it is
//! written as format 4, which older readers refuse:
//!
//! ```text
//! #zooid 4
//! #bounds 1:123456789
//! #blocks 1000 2 20001
//! #op 3 blocks 5d0c3a0f9e8b7a61 20000000
//! ```

use std::collections::VecDeque;

use super::oplog::OpRecord;
use crate::range::{IdRange, RangeSet};

/// Largest number of IDs one take may ask for, and the largest block unit.
pub const MAX_TAKE: u64 = i32::MAX as u64;

/// The format version zooid writes for pools without a ceiling or epoch (readable by every zooid).
pub const FORMAT_VERSION: u32 = 1;

/// The format version zooid writes for pools with a ceiling or an epoch. Readers of format 1
/// refuse it (they refuse any version but their own), so no older zooid ignores a ceiling.
pub const FORMAT_VERSION_RESERVED: u32 = 2;

/// The retired format version of block allocation whose pushes waited in `zooid-returned` to be
/// merged into the pool node's free list: a node in it is refused
/// ([`crate::error::ZooidError::RetiredFormat`]) and left as it is.
pub const FORMAT_VERSION_RETIRED: u32 = 3;

/// The format version of pools in block allocation (a `#blocks` line), whose pushed ranges are
/// kept as nodes of their own under `PATH/zooid-holes` and taken by deleting them
/// (src/alloc/holes/), the layout for scale on ZooKeeper. The pool node holds no free list.
/// Readers of formats 1 and 2 refuse it: they would not see those holes.
pub const FORMAT_VERSION_HOLES: u32 = 4;

/// How a pool in block allocation hands out fresh IDs (src/alloc/blocks/): block `s` of generation
/// `generation` is `base + s * unit ..= base + (s + 1) * unit - 1`, where `s` is the sequence
/// number ZooKeeper gave the node that claimed it. IDs of claimed blocks that were pushed back are
/// hole nodes (src/alloc/holes/): all below the generation's frontier (`base + unit *` blocks
/// claimed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blocks {
    /// IDs per block.
    pub unit: u64,
    /// Which sequence node numbers the blocks (it moves on when one fills up).
    pub generation: u64,
    /// The first ID of the generation's block 0.
    pub base: i64,
}

/// Generations of epoch `e` are numbered from `e * GENERATIONS_PER_EPOCH`: a restore or a repair
/// (which raises the epoch) starts block allocation in a generation no earlier incarnation of
/// the pool ever numbered, so a claim planned before ZooKeeper lost its data or rolled back
/// (held, resent, or delivered late on its old connection) finds no sequence parent under its
/// name and fails, instead of numbering blocks that its planner maps through the old base.
pub const GENERATIONS_PER_EPOCH: u64 = 1 << 32;

/// The highest `#offset` a pool node may carry: a pool version counted from it through a node's
/// 2^31 data versions, plus one, still fits in 64 bits (a node above it is corrupt).
pub const MAX_OFFSET: i64 = 1 << 62;

/// The highest `#epoch` a pool node may carry: its generations, from
/// `epoch * GENERATIONS_PER_EPOCH`, stay below [`MAX_GENERATION`] (a node above it is corrupt).
pub const MAX_EPOCH: u64 = 1 << 30;

/// The highest generation a `#blocks` line may name (a node above it is corrupt).
pub const MAX_GENERATION: u64 = 1 << 63;

impl Blocks {
    /// The first generation of a pool of epoch `epoch` ([`GENERATIONS_PER_EPOCH`]): where a
    /// restore, a repair or a migration starts block allocation.
    pub fn first_generation(epoch: u64) -> u64 {
        #[cfg(not(zooid_mutant = "claim_resent_across_restore"))]
        let first = epoch.saturating_mul(GENERATIONS_PER_EPOCH);
        // The mutant (tests/sim/README.md): every epoch numbers its generations on from the
        // last one, as before a restore started a numbering of its own.
        #[cfg(zooid_mutant = "claim_resent_across_restore")]
        let first = epoch.min(0);
        first
    }

    /// The generation that follows this one in a pool of epoch `epoch`: the next number, and no
    /// lower than the first generation of the epoch.
    pub fn next_generation(&self, epoch: u64) -> u64 {
        (self.generation + 1).max(Self::first_generation(epoch))
    }

    /// The IDs of block `seq`, clipped to `last`; `None` when the block starts past `last`.
    pub fn block(&self, seq: i64, last: i64) -> Option<IdRange> {
        let unit = i64::try_from(self.unit).ok()?;
        let start = seq.checked_mul(unit)?.checked_add(self.base)?;
        let end = start.checked_add(unit - 1)?.min(last);
        IdRange::new(start, end)
    }
}

/// A parsed pool node: the category's bounds, its free IDs and its recent operations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pool {
    bounds: IdRange,
    free: RangeSet,
    log: VecDeque<OpRecord>,
    /// True when the node had no header (a seed-style list of `start:end` lines).
    legacy: bool,
    /// No take hands out an ID above it (`None`: no durable reservation).
    ceiling: Option<i64>,
    /// Restarts of the pool's history (a restore after ZooKeeper lost its data); the pool's
    /// states are ordered by (epoch, pool version).
    epoch: u64,
    /// The pool version of this node incarnation's data version 0 (`#offset`): 0 for a node
    /// never moved; a move to a fresh node before ZooKeeper's 32-bit data version runs out
    /// (src/alloc/engine.rs) continues the count, so the pool version (`offset` + data version)
    /// and the operation log's versions keep growing across moves.
    offset: i64,
    /// Fresh IDs come in blocks and free IDs are hole nodes (format 4; `free` is empty); `None`
    /// for a single-node pool.
    blocks: Option<Blocks>,
}

impl Pool {
    /// A fresh pool whose every ID in `bounds` is free.
    pub fn new(bounds: IdRange) -> Self {
        Self {
            bounds,
            free: RangeSet::from_range(bounds),
            log: VecDeque::new(),
            legacy: false,
            ceiling: None,
            epoch: 0,
            offset: 0,
            blocks: None,
        }
    }

    /// A fresh pool in block allocation whose pushed ranges become nodes of their own (format
    /// 4): no holes, block 0 of generation 0 starts at the first ID.
    pub fn with_hole_nodes(bounds: IdRange, unit: u64) -> Self {
        Self {
            free: RangeSet::new(),
            blocks: Some(Blocks {
                unit,
                generation: 0,
                base: bounds.start(),
            }),
            ..Self::new(bounds)
        }
    }

    /// How fresh IDs are handed out, for a pool in block allocation.
    pub fn blocks(&self) -> Option<Blocks> {
        self.blocks
    }

    /// Starts a new history of the pool at `epoch` (a restore, or a repair after a rollback) in
    /// which no ID at or below `ceiling` is ever handed out again: sets the epoch, removes such
    /// free IDs, and for a pool in block allocation moves fresh blocks to the epoch's first new
    /// generation ([`Blocks::next_generation`]) above both `ceiling` and `frontier`, the first
    /// ID the current generation's blocks did not claim (claims pass the ceiling: the IDs of a
    /// block above it wait as free holes, which a generation starting below the frontier would
    /// hand out again). Returns the IDs given up: the free IDs removed and, for a pool in block
    /// allocation, the fresh IDs its blocks skip (from the frontier to the new base).
    pub fn clear_through(&mut self, ceiling: i64, frontier: i64, epoch: u64) -> Vec<IdRange> {
        self.epoch = epoch;
        let mut skipped = None;
        if let Some(b) = self.blocks.as_mut() {
            b.generation = b.next_generation(epoch);
            let from = b.base.max(frontier);
            b.base = from
                .max(ceiling.saturating_add(1))
                .min(self.bounds.end().saturating_add(1));
            skipped = IdRange::new(from, b.base.saturating_sub(1));
        }
        let mut given_up = self.free.remove_at_most(ceiling);
        given_up.extend(skipped);
        given_up
    }

    /// Free IDs the node holds (a format-4 node holds none: its holes are nodes of their own).
    pub fn free_count(&self) -> u64 {
        self.free.count()
    }

    /// Moves block allocation to a new generation starting at `base` (see src/alloc/blocks/).
    pub fn set_blocks(&mut self, blocks: Blocks) {
        self.blocks = Some(blocks);
    }

    /// The ceiling: no take hands out an ID above it. `None` for pools without a durable
    /// reservation.
    pub fn ceiling(&self) -> Option<i64> {
        self.ceiling
    }

    /// Sets the ceiling (clamped to the bounds' last ID); `None` removes it.
    pub fn set_ceiling(&mut self, ceiling: Option<i64>) {
        self.ceiling = ceiling.map(|c| c.clamp(0, self.bounds.end()));
    }

    /// The pool's epoch (0 until a restore).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Sets the pool's epoch.
    pub fn set_epoch(&mut self, epoch: u64) {
        self.epoch = epoch;
    }

    /// The pool version of this node incarnation's data version 0 (0 for a node never moved).
    pub fn offset(&self) -> i64 {
        self.offset
    }

    /// Sets the pool version of this node incarnation's data version 0: a pool moved to a fresh
    /// node continues its count there.
    pub fn set_offset(&mut self, offset: i64) {
        self.offset = offset;
    }

    /// The pool version of the node at data version `data_version`: what the operation log's
    /// versions count, across moves to fresh nodes.
    pub fn version_at(&self, data_version: i32) -> i64 {
        self.offset.saturating_add(i64::from(data_version))
    }

    /// How many free IDs a take may hand out now, as the node alone tells: those at or below the
    /// ceiling (all of them without a ceiling).
    pub fn available(&self) -> u64 {
        let top = self.ceiling.unwrap_or(self.bounds.end());
        let holes = self.free.count_at_most(top);
        match self.blocks {
            // Blocks not yet claimed, as far as the node tells (src/alloc/blocks/ counts the claims).
            Some(b) if top >= b.base => holes + top.abs_diff(b.base) + 1,
            _ => holes,
        }
    }

    /// The highest ID that is not free (`first - 1` when every ID is free): every ID held by a
    /// client is at or below it.
    ///
    /// For a pool in block allocation this is what the node alone tells (`base - 1` or above);
    /// the blocks claimed since are counted by the allocator (`alloc::blocks::usage`).
    pub fn high_water(&self) -> i64 {
        if let Some(blocks) = self.blocks {
            return blocks.base - 1;
        }
        // The free list's last range reaches the end of the bounds while the top is untouched.
        match self.free.ranges().last() {
            Some(last) if last.end() == self.bounds.end() => last.start() - 1,
            _ => self.bounds.end(),
        }
    }

    /// The IDs the category may ever hold.
    pub fn bounds(&self) -> IdRange {
        self.bounds
    }

    /// The free IDs.
    pub fn free(&self) -> &RangeSet {
        &self.free
    }

    /// Mutable access to the free IDs.
    pub fn free_mut(&mut self) -> &mut RangeSet {
        &mut self.free
    }

    /// The recent operations, oldest first.
    pub fn log(&self) -> impl Iterator<Item = &OpRecord> {
        self.log.iter()
    }

    /// Whether the node was a headerless, seed-style list.
    pub fn is_legacy(&self) -> bool {
        self.legacy
    }

    /// The logged write that produced pool version `version` ([`Pool::version_at`]), if still
    /// remembered.
    pub fn op_at(&self, version: i64) -> Option<&OpRecord> {
        self.log.iter().find(|op| op.version == version)
    }

    /// Appends `op` to the log, keeping at most `capacity` entries. Entries at or above `op`'s
    /// version belong to another history of the node (it was recreated with old content) and are
    /// dropped, so the log stays ascending.
    pub fn record(&mut self, op: OpRecord, capacity: usize) {
        while self
            .log
            .back()
            .is_some_and(|last| last.version >= op.version)
        {
            self.log.pop_back();
        }
        self.log.push_back(op);
        while self.log.len() > capacity.max(1) {
            self.log.pop_front();
        }
    }
}

mod parse;
mod render;

#[cfg(test)]
mod tests;
