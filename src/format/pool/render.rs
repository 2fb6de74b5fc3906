//! Rendering a pool node's text (docs/FORMAT.md).

use std::fmt::Write as _;

use super::{Pool, FORMAT_VERSION, FORMAT_VERSION_HOLES, FORMAT_VERSION_RESERVED};

impl Pool {
    /// The node content for this pool. A pool in block allocation (format 4) keeps its free
    /// IDs as hole nodes: its free list is empty, and the allocator never writes one that is
    /// not (src/alloc/engine.rs).
    pub fn render(&self) -> String {
        let ranges = self.free.range_count();
        let mut out = String::with_capacity(64 + 48 * (self.log.len() + ranges));
        // Writing to a String cannot fail.
        // Format 2 exactly when there is a ceiling, an offset (a pool moved to a fresh node) or
        // an epoch; format 2 names a ceiling or an offset, so a pool with an epoch alone says
        // `#offset 0`.
        let reserved = self.ceiling.is_some() || self.offset > 0 || self.epoch > 0;
        let format = if self.blocks.is_some() {
            FORMAT_VERSION_HOLES
        } else if reserved {
            FORMAT_VERSION_RESERVED
        } else {
            FORMAT_VERSION
        };
        let _ = writeln!(out, "#zooid {format}");
        let _ = writeln!(out, "#bounds {}", self.bounds);
        if let Some(b) = self.blocks {
            let _ = writeln!(out, "#blocks {} {} {}", b.unit, b.generation, b.base);
        }
        if let Some(ceiling) = self.ceiling {
            let _ = writeln!(out, "#ceiling {ceiling}");
        }
        if (reserved || self.blocks.is_some()) && self.epoch > 0 {
            let _ = writeln!(out, "#epoch {}", self.epoch);
        }
        if self.offset > 0 || (reserved && self.ceiling.is_none() && self.blocks.is_none()) {
            let _ = writeln!(out, "#offset {}", self.offset);
        }
        for op in &self.log {
            let _ = writeln!(
                out,
                "#op {} {} {} {}",
                op.version,
                op.kind.as_str(),
                op.token,
                op.count
            );
        }
        for range in self.free.ranges() {
            let _ = writeln!(out, "{range}");
        }
        out
    }
}
