//! A prefetching ID source: IDs one at a time from a local batch, the next batch fetched in the
//! background while the current one drains (a double buffer), so a caller waits on ZooKeeper only
//! when both batches are used up.
//!
//! - **When to refill.** The next batch is requested once a fraction of the current one is used
//!   ([`SourceOptions::refill_when_used`], default 10%, as Meituan's Leaf does; Kafka's producer-ID
//!   blocks wait until 90%). Early refill gives the background take 90% of a batch's lifetime to
//!   succeed, enough to ride out a ZooKeeper leader election or a session timeout with retries,
//!   at the cost of holding up to two batches; both are pushed back by [`IdSource::close`].
//! - **How much.** Each refill doubles or halves the batch (within
//!   [`SourceOptions::min_batch`]..=[`SourceOptions::max_batch`]) so that a batch lasts about
//!   [`SourceOptions::target_batch_duration`]: the current batch's lifetime is projected from how
//!   long its used part took; shorter than the target doubles, over twice the target halves.
//! - **Errors.** A failed background refill is kept and reported to the caller that runs out of
//!   local IDs, never earlier; the IDs already held stay usable. A later refill is attempted no
//!   sooner than [`SourceOptions::retry_refill_after`] after a failure, or at once when a caller
//!   runs out.
//! - **Cost.** Taking an ID is one short critical section (an uncontended mutex, a few
//!   comparisons, no allocation, no clock read); `cargo bench --bench prefetch` measures it.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::time::Instant;

use tokio::runtime::Handle;
use tokio::sync::Notify;

use crate::alloc::IdGeneratorService;
use crate::error::{Result, WriteOp, ZooidError};
use crate::idset::{IdCategory, IdSet};
use crate::range::IdRange;
use crate::store::{AnyStore, Store};

mod options;
mod shared;
#[cfg(test)]
mod tests;

use options::BATCH_HISTORY;
pub use options::{SourceOptions, SourceStats};
use shared::{Shared, State, Step};

/// A prefetching source of IDs of one category. `Send + Sync`: share it between tasks and
/// threads (by reference or in an `Arc`).
///
/// Call [`IdSource::close`] when done, to push the unused IDs back; a source dropped unclosed
/// pushes them back in the background, best effort.
pub struct IdSource<S: Store = AnyStore> {
    shared: Arc<Shared<S>>,
}

impl<S: Store> IdSource<S> {
    /// Opens a source over `category`, taking its first batch now (so that a missing or
    /// exhausted category fails here). Must be called inside a tokio runtime, on which the
    /// background refills will run.
    pub async fn open(
        service: Arc<IdGeneratorService<S>>,
        category: IdCategory,
        options: SourceOptions,
    ) -> Result<Self> {
        Self::open_on(Handle::current(), service, category, options).await
    }

    /// [`IdSource::open`], running the background refills on `runtime`.
    pub async fn open_on(
        runtime: Handle,
        service: Arc<IdGeneratorService<S>>,
        category: IdCategory,
        options: SourceOptions,
    ) -> Result<Self> {
        options.validate()?;
        let first = service.take_ids(&category, options.initial_batch).await?;
        let mut st = State {
            current: IdSet::new(category.clone(), Vec::new()),
            current_len: 0,
            left: 0,
            refill_mark: 0,
            since: Instant::now(),
            next: None,
            refilling: false,
            pushing: false,
            pushed: false,
            in_doubt: None,
            failure: None,
            closed: false,
            batch: options.initial_batch,
            stats: SourceStats {
                next_batch: options.initial_batch,
                ..SourceStats::default()
            },
        };
        st.stats.refills = 1;
        st.stats.batches.reserve_exact(BATCH_HISTORY);
        st.stats.batches.push(first.count_ids());
        st.install(first, options.refill_when_used);
        Ok(Self {
            shared: Arc::new(Shared {
                service,
                category,
                options,
                runtime,
                state: Mutex::new(st),
                settled: Notify::new(),
            }),
        })
    }

    /// The category the IDs come from.
    pub fn category(&self) -> &IdCategory {
        &self.shared.category
    }

    /// The next ID if one is held locally: never waits, never does I/O (it may start a
    /// background refill). `Ok(None)` when a caller would have to wait; a failed refill is
    /// reported here once no ID is held locally and no refill is in flight.
    #[inline]
    pub fn try_next(&self) -> Result<Option<i64>> {
        let refill_when_used = self.shared.options.refill_when_used;
        let mut not_a_wait = true;
        match self
            .shared
            .poll(&mut not_a_wait, |st| st.take_id(refill_when_used))
        {
            Step::Got(id) => Ok(Some(id)),
            Step::Wait => Ok(None),
            Step::Fail(err) => Err(err),
        }
    }

    /// The next ID; waits on ZooKeeper only when no ID is held locally. A failed refill is
    /// reported here (`Exhausted`, `ConnectionLost`, `OutcomeUnknown`, ...) once the local IDs
    /// are used up; the next call tries again. `Closed` after [`IdSource::close`].
    pub async fn next(&self) -> Result<i64> {
        let refill_when_used = self.shared.options.refill_when_used;
        self.shared
            .wait_for(|st| st.take_id(refill_when_used))
            .await
    }

    /// Up to `max` (>= 1) consecutive IDs at once, as one range, waiting like [`IdSource::next`]
    /// when none is held locally. For bindings that hand IDs out in chunks (Java).
    pub async fn next_run(&self, max: u64) -> Result<IdRange> {
        if max == 0 {
            return Err(ZooidError::InvalidArgument(
                "a run of 0 IDs: ask for at least 1".into(),
            ));
        }
        let refill_when_used = self.shared.options.refill_when_used;
        self.shared
            .wait_for(|st| st.take_run(max, refill_when_used))
            .await
    }

    /// Non-waiting [`IdSource::next_run`]: `Ok(None)` when no ID is held locally.
    pub fn try_next_run(&self, max: u64) -> Result<Option<IdRange>> {
        if max == 0 {
            return Err(ZooidError::InvalidArgument(
                "a run of 0 IDs: ask for at least 1".into(),
            ));
        }
        let mut not_a_wait = true;
        let refill_when_used = self.shared.options.refill_when_used;
        match self
            .shared
            .poll(&mut not_a_wait, |st| st.take_run(max, refill_when_used))
        {
            Step::Got(run) => Ok(Some(run)),
            Step::Wait => Ok(None),
            Step::Fail(err) => Err(err),
        }
    }

    /// Stops the source and pushes back every ID it holds: the rest of the current batch and the
    /// prefetched one (after waiting for a refill in flight). Later calls of `next` fail with
    /// `Closed`. If the push fails, the IDs stay with the source: `close` may be called again,
    /// and dropping the source pushes them back in the background. A close while another one
    /// pushes waits for it and tries again what it could not push: `Ok` means every ID is back.
    /// A close after a successful one pushes nothing and returns `Ok`; after one whose push
    /// ended in doubt (`OutcomeUnknown`), it returns that error again. A refill whose take ended
    /// in doubt (its IDs may have left the pool without reaching the source: they are leaked)
    /// makes every close return that `OutcomeUnknown`, after it pushed everything else back,
    /// even when later refills succeeded.
    ///
    /// The close runs to its end on the source's runtime even if this future is dropped (a
    /// timeout around it): the IDs are pushed back then, the outcome only logged.
    pub async fn close(&self) -> Result<()> {
        self.close_returning(&[]).await
    }

    /// [`IdSource::close`], also pushing back `unused`: IDs this source handed out that the
    /// caller did not use (such as the rest of a run from [`IdSource::next_run`]). A close whose
    /// push wrote nothing keeps them with the source's own (unless the pool refused them as
    /// free already or outside the category: then the caller's IDs are not kept, and the error
    /// names them); calling it again with the same `unused` pushes each ID once. After a close
    /// whose push went through (or ended in doubt), `unused` is not pushed again.
    pub async fn close_returning(&self, unused: &[IdRange]) -> Result<()> {
        // A task of its own: a close dropped midway would leave the source closed with its IDs
        // neither pushed nor held (dropped while waiting for the refill) or its push in doubt.
        let shared = Arc::clone(&self.shared);
        let owned = unused.to_vec();
        let ran = Arc::new(AtomicBool::new(false));
        let started = Arc::clone(&ran);
        let close = self.shared.runtime.spawn(async move {
            started.store(true, Ordering::Relaxed);
            let result = shared.close(&owned).await;
            if let Err(err) = &result {
                tracing::warn!(category = %shared.category, %err, "ID source close failed");
            }
            result
        });
        match close.await {
            Ok(result) => result,
            Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
            // Only a runtime shutting down drops a task unfinished. Never started: nothing was
            // taken from the state, close here. Stopped midway: its push may be in doubt.
            Err(_) if !ran.load(Ordering::Relaxed) => self.shared.close(unused).await,
            Err(_) => Err(ZooidError::OutcomeUnknown {
                category: self.shared.category.name().to_string(),
                op: WriteOp::Push,
                ids: unused.to_vec(),
                leaked_within: None,
            }),
        }
    }

    /// What the source has done so far.
    pub fn stats(&self) -> SourceStats {
        let st = self.shared.lock();
        let mut stats = st.stats.clone();
        stats.local = st.local();
        stats.refilling = st.refilling;
        stats
    }

    /// A future that closes the source, for dropping it without an `.await` at hand.
    fn close_in_background(&self) -> impl Future<Output = ()> + Send + 'static {
        let shared = Arc::clone(&self.shared);
        async move {
            if let Err(err) = shared.close(&[]).await {
                tracing::error!(category = %shared.category, %err, "ID source dropped unclosed; pushing its IDs back failed");
            }
        }
    }
}

impl<S: Store> Drop for IdSource<S> {
    fn drop(&mut self) {
        // Unclosed, or closed by a close whose push failed (it kept the IDs) or is still
        // pushing (it may yet fail and keep them): the background close waits for that push and
        // pushes what it kept.
        let (holding, closed) = {
            let st = self.shared.lock();
            (st.local() > 0 || st.refilling || st.pushing, st.closed)
        };
        if holding {
            let what = if closed {
                "ID source dropped after a failed close"
            } else {
                "ID source dropped without close"
            };
            tracing::warn!(category = %self.shared.category, "{what}; pushing its IDs back in the background");
            let task = self.close_in_background();
            self.shared.runtime.spawn(task);
        }
    }
}
