//! The blocking facade over [`crate::recipes::counter::Counter`].

use crate::error::Result;
use crate::range::IdRange;
use crate::recipes::counter::{Counter as AsyncCounter, CounterStats};
use crate::retry::RetryPolicy;
use crate::runtime::{block_on, DropInRuntime};
use crate::zk::Zk;

/// A blocking CAS counter (see [`crate::recipes::counter`]). `Send + Sync`; calls through one handle are
/// serialized.
///
/// Calls block the calling thread on zooid's own runtime and fail with
/// [`crate::error::ZooidError::RuntimeThread`] when made from inside an async runtime.
pub struct Counter {
    inner: DropInRuntime<AsyncCounter>,
}

impl Counter {
    /// A counter at `path` on the ZooKeeper session `zk` (`session.into_zk()` of a session from
    /// [`crate::blocking::open_session`] or [`crate::blocking::IdGeneratorService::session`]).
    pub fn new(zk: Zk, path: &str) -> Result<Self> {
        Self::with_policy(zk, path, RetryPolicy::default())
    }

    /// A counter at `path` whose compare-and-set retries follow `policy`.
    pub fn with_policy(zk: Zk, path: &str, policy: RetryPolicy) -> Result<Self> {
        Ok(Self {
            inner: DropInRuntime::new(AsyncCounter::with_policy(zk, path, policy)?),
        })
    }

    /// See [`AsyncCounter::init`].
    pub fn init(&self, value: i64) -> Result<()> {
        block_on(self.inner.init(value))?
    }

    /// See [`AsyncCounter::init_with_acl`].
    pub fn init_with_acl(&self, value: i64, acl: Option<&[crate::zk::Acl]>) -> Result<()> {
        block_on(self.inner.init_with_acl(value, acl))?
    }

    /// See [`AsyncCounter::next`].
    pub fn next(&self, n: u64) -> Result<IdRange> {
        block_on(self.inner.next(n))?
    }

    /// See [`AsyncCounter::get`].
    pub fn get(&self) -> Result<i64> {
        block_on(self.inner.get())?
    }

    /// See [`AsyncCounter::stats`].
    pub fn stats(&self) -> Result<CounterStats> {
        block_on(self.inner.stats())
    }

    /// Counts `range`, which this handle's `next` handed out but its caller never received (a
    /// binding could not build the result), as skipped, and logs it.
    pub(crate) fn skip_undelivered(&self, range: IdRange) {
        if let Err(err) = block_on(self.inner.skip_undelivered(range)) {
            tracing::error!(counter = %self.path(), %range, %err, "counter values never received; skipped (not counted)");
        }
    }

    /// The counter's node path.
    pub fn path(&self) -> &str {
        self.inner.path()
    }

    /// The async counter underneath.
    pub fn as_async(&self) -> &AsyncCounter {
        &self.inner
    }
}
