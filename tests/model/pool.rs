//! What ZooKeeper holds for one category, and the pool node's compare-and-set writes: the free
//! list, the ceiling, the epoch, the operation log, and lost-reply resolution by that log
//! (src/alloc/engine.rs, src/alloc/lost.rs, docs/DESIGN.md "Lost replies").

use crate::blocks::Blocks;
use crate::ids::{self, Ids};

/// A writer's token in the operation log, in claim names and push markers: one per process and
/// operation (`1 + process * 8 + operations left`, below 32), the keeper's, or the restore's. Within one node
/// incarnation a version is produced once, so a token names its write exactly.
pub type Token = u8;

/// The keeper's token in the operation log.
pub const KEEPER: Token = 0xF0;

/// The token of the `create` a restore writes.
pub const RESTORE: Token = 0xF1;

/// ZooKeeper's state of the category: the pool node and, in block allocation, its children.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Zk {
    /// Which creation of the node this is (its czxid): a restore creates a new one.
    pub incarnation: u8,
    /// The pool node's data version.
    pub version: u8,
    /// `#epoch`: bumped by every restore and repair.
    pub epoch: u8,
    /// `#ceiling`.
    pub ceiling: Option<u8>,
    /// The free list in the pool node (none in block allocation: its holes are nodes).
    pub free: Ids,
    /// `#op` lines: (version, token), oldest first, at most the configured length.
    pub log: Vec<(u8, Token)>,
    /// Block allocation (format 4), with the nodes below the pool.
    pub blocks: Option<Blocks>,
}

impl Zk {
    /// The highest ID a take may hand out now.
    pub fn top(&self, last: u8) -> u8 {
        self.ceiling.unwrap_or(last).min(last)
    }

    /// Records a write of the pool node by `token`: the next version and its `#op` line.
    pub fn write(&mut self, token: Token, log_len: u8) {
        self.version += 1;
        self.log.push((self.version, token));
        while self.log.len() > usize::from(log_len.max(1)) {
            self.log.remove(0);
        }
    }

    /// Every free ID: the free list, or in block allocation the hole nodes and the IDs from
    /// the generation's frontier up.
    pub fn free_ids(&self, last: u8) -> Ids {
        match &self.blocks {
            None => self.free,
            Some(b) => self.free | b.holes | ids::span(b.frontier(), last),
        }
    }

    /// The highest ID that may have been handed out (the keeper's `usage.high_water`): the
    /// highest ID not free in a single-node pool, the claimed frontier minus one in block
    /// allocation.
    pub fn high_water(&self, last: u8) -> u8 {
        match &self.blocks {
            None => ids::highest(ids::span(1, last) & !self.free).unwrap_or(0),
            Some(b) => b.frontier() - 1,
        }
    }

    /// Free IDs a take may hand out now (the keeper's headroom, as `alloc::blocks::usage`
    /// counts it: in block allocation the holes and the unclaimed IDs at or below the ceiling).
    pub fn available(&self, last: u8) -> u8 {
        let top = self.top(last);
        let in_blocks = match &self.blocks {
            Some(b) => ids::span(b.frontier(), top) | (b.holes & ids::span(1, top)),
            None => 0,
        };
        ids::count((self.free & ids::span(1, top)) | in_blocks)
    }
}

/// A compare-and-set write of the pool node by a process: a take from or a push to a
/// single-node pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cas {
    pub incarnation: u8,
    /// The version planned on (`setData(path, data, version)`).
    pub version: u8,
    pub token: Token,
    pub push: bool,
    /// The IDs taken or pushed.
    pub ids: Ids,
}

impl Cas {
    /// Applies the write if the node is still at the version planned on; whether it did.
    pub fn apply(&self, zk: &mut Zk, log_len: u8) -> bool {
        if zk.version != self.version {
            return false;
        }
        if self.push {
            zk.free |= self.ids;
        } else {
            zk.free &= !self.ids;
        }
        zk.write(self.token, log_len);
        true
    }

    /// Whether the write applied, after its reply was lost and its request has certainly
    /// landed or died: `Some(true)`, `Some(false)` (plan again), `None` (cannot be told: the
    /// IDs are reported leaked). The log entry of the version after the one planned on names
    /// the writer; past the log, one of the IDs free tells (a take did not apply, a push did).
    pub fn resolve(&self, zk: Option<&Zk>) -> Option<bool> {
        let zk = zk?;
        if zk.incarnation != self.incarnation || zk.version < self.version {
            return None;
        }
        if zk.version == self.version {
            return Some(false);
        }
        match zk.log.iter().find(|(v, _)| *v == self.version + 1) {
            Some(&(_, token)) => Some(token == self.token),
            None if zk.free & self.ids != 0 => Some(self.push),
            None => None,
        }
    }
}
