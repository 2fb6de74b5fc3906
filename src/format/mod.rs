//! The texts zooid keeps in ZooKeeper, parsed and rendered strictly (docs/FORMAT.md): the pool
//! node (formats 1 to 3) with its operation log, the parts of a split free list, the pushes
//! waiting in their own nodes, and the names of those nodes.
//!
//! Pure: no I/O, and it depends only on [`crate::range`] and [`crate::error`]. The allocator
//! (src/alloc/) reads and writes these texts; what it knows beyond them (pushes merged, parts
//! loaded) stays there.

mod names;
mod oplog;
pub mod parts;
mod pool;
mod ranges;

#[cfg(test)]
mod golden;

pub use names::{
    chunk_key, chunk_path, hole_name, hole_of, holes_parent, is_chunk, is_pool_child,
    is_sequence_parent, returned_parent, sequence_of, sequence_parent, MARKER_PREFIX, PUSH_PREFIX,
    RETURNED_HEADER,
};
pub use oplog::{OpKind, OpRecord, OpToken, DEFAULT_OP_LOG_LEN, MAX_OP_LINE_BYTES};
pub use parts::{ChunkOp, CHUNK_MAX_RANGES, HEAD_MAX_RANGES};
pub use pool::{
    Blocks, ChunkRef, Pool, FORMAT_VERSION, FORMAT_VERSION_BLOCKS, FORMAT_VERSION_HOLES,
    FORMAT_VERSION_RESERVED, GENERATIONS_PER_EPOCH, MAX_TAKE,
};
pub use ranges::{parse_range, parse_ranges, render_ranges};

/// A waiting push's node content: [`RETURNED_HEADER`] then its ranges.
pub fn render_return(ranges: &[crate::range::IdRange]) -> Vec<u8> {
    render_ranges(RETURNED_HEADER, ranges)
}

/// Parses a waiting push's node `node`, strictly.
pub fn parse_return(node: &str, data: &[u8]) -> crate::Result<Vec<crate::range::IdRange>> {
    parse_ranges(node, RETURNED_HEADER, data, (1, i64::MAX))
}
