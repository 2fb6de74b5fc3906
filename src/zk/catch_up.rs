//! One `sync` before the first read of each connection: the rule that keeps every read at least
//! as new as the servers' state when the connection's reading began.
//!
//! ZooKeeper promises a session that it never reads older than it has seen, not that it reads
//! the latest: a server that lags behind the leader answers a new session's (or a new
//! connection's) reads from its own state. After a wipe or a rollback and the operator's restore,
//! that state can be the old incarnation of a node the restore created again, at the same data
//! version; a compare-and-set planned on it applies to the restored node (the simulation found
//! it: a take planned on the old pool handed out IDs the restored pool had handed out). Once a
//! connection's server has answered a `sync`, it has applied everything committed before, and so
//! has every server the session moves to (ZooKeeper refuses a reconnection to a server behind
//! what the session saw).

use std::sync::Mutex;

/// Which session generation and connection the last answered `sync` was on. The reads of the
/// `ZooKeeper` trait consult it (src/zk/interface.rs: `caught_up`); it holds no request of its own.
#[derive(Debug, Default)]
pub struct CatchUp {
    synced: Mutex<Option<(u64, u64)>>,
}

impl CatchUp {
    /// Whether a `sync` was answered on connection `at` (its generation and number).
    pub fn is_synced(&self, at: (u64, u64)) -> bool {
        *self.synced.lock().unwrap_or_else(|p| p.into_inner()) == Some(at)
    }

    /// Records that a `sync` sent on connection `at` was answered. Record the connection current
    /// before the `sync` was sent: one made since is caught up again by the next read
    /// (conservative, never skipped).
    pub fn synced(&self, at: (u64, u64)) {
        *self.synced.lock().unwrap_or_else(|p| p.into_inner()) = Some(at);
    }
}
