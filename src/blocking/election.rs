//! The blocking facade of [`crate::recipes::election`].

use std::time::Duration;

use tokio::sync::watch;

use crate::error::Result;
use crate::recipes::election::{
    self, Election as AsyncElection, ElectionOptions, ElectionStatus, FencedOp, FencedResult,
    LeaderInfo, LeaderState,
};
use crate::runtime::{block_on, DropInRuntime};
use crate::zk::Zk;

/// A blocking candidacy in one group's election (see [`AsyncElection`]). `Send + Sync`.
/// Dropping it leaves the group in the background; [`Election::resign`] leaves and waits.
///
/// Calls fail with [`crate::error::ZooidError::RuntimeThread`] when made from an async runtime thread.
pub struct Election {
    inner: DropInRuntime<AsyncElection>,
}

impl std::fmt::Debug for Election {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl Election {
    /// See [`AsyncElection::join`]. `zk` is typically a session from [`super::open_session`]
    /// or [`super::IdGeneratorService::session`], as `session.into_zk()`.
    pub fn join(zk: &Zk, group: &str, options: ElectionOptions) -> Result<Election> {
        let inner = block_on(AsyncElection::join(zk, group, options))??;
        Ok(Election {
            inner: DropInRuntime::new(inner),
        })
    }

    /// The group node's path.
    pub fn group(&self) -> &str {
        self.inner.group()
    }

    /// The candidate's name.
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// See [`AsyncElection::status`].
    pub fn status(&self) -> ElectionStatus {
        self.inner.status()
    }

    /// See [`AsyncElection::state`].
    pub fn state(&self) -> LeaderState {
        self.inner.state()
    }

    /// See [`AsyncElection::token`].
    pub fn token(&self) -> Option<i64> {
        self.inner.token()
    }

    /// See [`AsyncElection::lease`]: until when (monotonic clock) the quorum confirmed this
    /// leadership.
    pub fn lease(&self) -> Option<tokio::time::Instant> {
        self.inner.lease()
    }

    /// See [`AsyncElection::lease_remaining`].
    pub fn lease_remaining(&self) -> Option<Duration> {
        self.inner.lease_remaining()
    }

    /// See [`AsyncElection::subscribe`].
    pub fn subscribe(&self) -> watch::Receiver<ElectionStatus> {
        self.inner.subscribe()
    }

    /// See [`AsyncElection::wait_change`].
    pub fn wait_change(
        &self,
        last_seen: &ElectionStatus,
        timeout: Duration,
    ) -> Result<ElectionStatus> {
        block_on(self.inner.wait_change(last_seen, timeout))?
    }

    /// See [`AsyncElection::await_leadership`].
    pub fn await_leadership(&self, timeout: Duration) -> Result<i64> {
        block_on(self.inner.await_leadership(timeout))?
    }

    /// See [`AsyncElection::fenced`].
    pub fn fenced(&self, ops: &[FencedOp]) -> Result<Vec<FencedResult>> {
        block_on(self.inner.fenced(ops))?
    }

    /// See [`AsyncElection::resign`].
    pub fn resign(&self) -> Result<()> {
        block_on(self.inner.resign())?
    }

    /// The async election underneath.
    pub fn as_async(&self) -> &AsyncElection {
        &self.inner
    }
}

/// See [`election::leader`].
pub fn leader(zk: &Zk, group: &str) -> Result<Option<LeaderInfo>> {
    block_on(election::leader(zk, group))?
}

/// See [`election::bump_epoch`].
pub fn bump_epoch(zk: &Zk, group: &str) -> Result<i64> {
    block_on(election::bump_epoch(zk, group))?
}
