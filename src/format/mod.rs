//! The texts zooid keeps in ZooKeeper, parsed and rendered strictly (docs/FORMAT.md): the pool
//! node (formats 1, 2 and 4; the retired format 3 is refused) with its operation log, and the
//! names of the nodes below it.
//!
//! Pure: no I/O, and it depends only on [`crate::range`] and [`crate::error`]. The allocator
//! (src/alloc/) reads and writes these texts; what it knows beyond them (holes listed, blocks
//! claimed) stays there.

mod names;
mod oplog;
mod pool;
mod ranges;

#[cfg(test)]
mod golden;

pub use names::{
    generation_of, hole_name, hole_of, holes_parent, is_pool_child, is_sequence_parent,
    returned_parent, sequence_of, sequence_parent, MARKER_PREFIX,
};
pub use oplog::{OpKind, OpRecord, OpToken, DEFAULT_OP_LOG_LEN, MAX_OP_LINE_BYTES};
pub use pool::{
    Blocks, Pool, FORMAT_VERSION, FORMAT_VERSION_HOLES, FORMAT_VERSION_RESERVED,
    FORMAT_VERSION_RETIRED, GENERATIONS_PER_EPOCH, MAX_EPOCH, MAX_GENERATION, MAX_OFFSET,
    MAX_TAKE,
};
pub use ranges::parse_range;
