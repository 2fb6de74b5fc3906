//! The blocking facade over [`crate::recipes::queue`]: a work queue for threads that are not async (the C
//! and JNI bindings sit on it).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::error::{Result, ZooidError};
use crate::recipes::queue::{
    Claim as AsyncClaim, ItemInfo, QueueOptions, QueueStats, WorkQueue as AsyncQueue,
};
use crate::runtime::{block_on, DropInRuntime};
use crate::zk::Zk;

/// A blocking handle on a work queue (see [`crate::recipes::queue::WorkQueue`]). `Send + Sync`.
///
/// Calls block the calling thread on zooid's own runtime and fail with
/// [`crate::error::ZooidError::RuntimeThread`] when made from inside an async runtime.
#[derive(Clone, Debug)]
pub struct WorkQueue {
    inner: DropInRuntime<AsyncQueue>,
    /// Set by [`WorkQueue::stop_claims`], shared by the clones.
    claims_stopped: Arc<watch::Sender<bool>>,
}

impl WorkQueue {
    /// See [`AsyncQueue::open`]; `zk` is a session from [`crate::blocking::open_session`] or
    /// [`crate::blocking::IdGeneratorService::session`], as [`crate::zk::Session::into_zk`]
    /// makes it.
    pub fn open(zk: Zk, path: &str, options: QueueOptions) -> Result<Self> {
        Ok(Self {
            inner: DropInRuntime::new(AsyncQueue::open(zk, path, options)?),
            claims_stopped: Arc::new(watch::Sender::new(false)),
        })
    }

    /// See [`AsyncQueue::put`].
    pub fn put(&self, data: &[u8]) -> Result<String> {
        block_on(self.inner.put(data))?
    }

    /// See [`AsyncQueue::claim`]: `None` when `timeout` ran out (`None` timeout: wait for ever).
    /// [`ZooidError::Closed`] once [`Self::stop_claims`] was called, also for a claim waiting
    /// then.
    pub fn claim(&self, timeout: Option<Duration>) -> Result<Option<Claim>> {
        let mut stopped = self.claims_stopped.subscribe();
        let claim = block_on(async {
            tokio::select! {
                biased;
                _ = stopped.wait_for(|stopped| *stopped) => Err(ZooidError::Closed {
                    what: format!("work queue {}", self.inner.path()),
                }),
                // Dropped when stopped: a lock it made, or may still make, is released in the
                // background (the async claim's rule).
                claimed = self.inner.claim(timeout) => claimed,
            }
        })??;
        Ok(claim.map(|c| Claim {
            inner: DropInRuntime::new(Some(c)),
        }))
    }

    /// Ends the wait of every claim in progress through this handle and its clones, and
    /// refuses later claims, with [`ZooidError::Closed`]: a binding's close, which must not wait
    /// out a claim's timeout. Claims already handed out, puts and listings are unaffected.
    pub fn stop_claims(&self) {
        self.claims_stopped.send_replace(true);
    }

    /// See [`AsyncQueue::items`].
    pub fn items(&self) -> Result<Vec<ItemInfo>> {
        block_on(self.inner.items())?
    }

    /// See [`AsyncQueue::stats`].
    pub fn stats(&self) -> QueueStats {
        self.inner.stats()
    }

    /// The queue's path.
    pub fn path(&self) -> &str {
        self.inner.path()
    }

    /// See [`AsyncQueue::options`].
    pub fn options(&self) -> &QueueOptions {
        self.inner.options()
    }

    /// The async handle underneath.
    pub fn as_async(&self) -> &AsyncQueue {
        &self.inner
    }
}

/// A blocking claim (see [`crate::recipes::queue::Claim`]): complete or release it; dropped, it is
/// released in the background.
#[derive(Debug)]
pub struct Claim {
    inner: DropInRuntime<Option<AsyncClaim>>,
}

impl Claim {
    fn claim(&self) -> &AsyncClaim {
        // Always Some until complete/release/drop take it.
        self.inner.as_ref().expect("claim present until consumed")
    }

    /// The item's node name.
    pub fn item(&self) -> &str {
        self.claim().item()
    }

    /// The item's put order.
    pub fn sequence(&self) -> u64 {
        self.claim().sequence()
    }

    /// The item's bytes.
    pub fn data(&self) -> &[u8] {
        self.claim().data()
    }

    /// See [`AsyncClaim::is_lost`].
    pub fn is_lost(&self) -> bool {
        self.claim().is_lost()
    }

    /// See [`AsyncClaim::complete`].
    pub fn complete(mut self) -> Result<()> {
        let claim = self.take();
        block_on(claim.complete())?
    }

    /// See [`AsyncClaim::release`].
    pub fn release(mut self) -> Result<()> {
        let claim = self.take();
        block_on(claim.release())?
    }

    fn take(&mut self) -> AsyncClaim {
        self.inner.take().expect("claim present until consumed")
    }
}
