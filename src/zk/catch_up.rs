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

use super::interface::{Failure, ZooKeeper};

/// Which session generation and connection the last answered `sync` was on.
#[derive(Debug, Default)]
pub struct CatchUp {
    synced: Mutex<Option<(u64, u64)>>,
}

impl CatchUp {
    /// Sends a `sync` of `path` on `generation` unless one was answered on the current connection
    /// of that generation already.
    pub async fn before_read<Z: ZooKeeper + ?Sized>(
        &self,
        zk: &Z,
        generation: u64,
        path: &str,
    ) -> Result<(), Failure> {
        let at = (generation, zk.status().connection);
        if self.is_synced(at) {
            return Ok(());
        }
        zk.sync(generation, path).await?;
        // Recorded for the connection current before the `sync` was sent: one made since is
        // caught up again by the next read (conservative, never skipped).
        *self.synced.lock().unwrap_or_else(|p| p.into_inner()) = Some(at);
        Ok(())
    }

    /// Whether a `sync` was answered on connection `at` (its generation and number).
    pub fn is_synced(&self, at: (u64, u64)) -> bool {
        *self.synced.lock().unwrap_or_else(|p| p.into_inner()) == Some(at)
    }
}
