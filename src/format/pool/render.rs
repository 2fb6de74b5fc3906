//! Rendering a pool node's text (docs/FORMAT.md).

use std::fmt::Write as _;

use super::{
    Pool, FORMAT_VERSION, FORMAT_VERSION_BLOCKS, FORMAT_VERSION_HOLES, FORMAT_VERSION_RESERVED,
};

impl Pool {
    /// The node content for this pool.
    pub fn render(&self) -> String {
        // With parts, the node keeps only the ranges below the first part's key.
        let head_end = self.chunks.first().map(|c| c.key);
        let ranges = match head_end {
            None => self.free.range_count(),
            Some(end) => self.free.ranges().partition_point(|r| r.end() < end),
        };
        let mut out =
            String::with_capacity(64 + 48 * (self.log.len() + ranges + self.chunks.len()));
        // Writing to a String cannot fail.
        // Format 2 exactly when there is a ceiling or an offset (a pool moved to a fresh node);
        // the epoch exists only with one of them (restores and repairs always set a ceiling).
        let reserved = self.ceiling.is_some() || self.offset > 0;
        let format = if self.blocks.is_some_and(|b| b.hole_nodes) {
            FORMAT_VERSION_HOLES
        } else if self.blocks.is_some() {
            FORMAT_VERSION_BLOCKS
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
        if self.offset > 0 {
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
        for chunk in &self.chunks {
            let _ = writeln!(out, "#chunk {} {} {}", chunk.key, chunk.version, chunk.ids);
        }
        for range in self
            .free
            .ranges()
            .iter()
            .take_while(|r| head_end.is_none_or(|end| r.end() < end))
        {
            let _ = writeln!(out, "{range}");
        }
        out
    }
}
