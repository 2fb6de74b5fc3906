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
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::runtime::Handle;
use tokio::sync::Notify;

use crate::alloc::{IdGeneratorService, MAX_TAKE};
use crate::error::{Result, ZooidError};
use crate::idset::{IdCategory, IdSet};
use crate::range::IdRange;
use crate::store::{AnyStore, Store};

/// How many refill sizes [`SourceStats::batches`] keeps (the most recent ones).
const BATCH_HISTORY: usize = 256;

/// Tuning of an [`IdSource`].
#[derive(Clone, Debug, PartialEq)]
pub struct SourceOptions {
    /// Size of the first batch, taken when the source opens.
    pub initial_batch: u64,
    /// Smallest batch a refill asks for.
    pub min_batch: u64,
    /// Largest batch a refill asks for.
    pub max_batch: u64,
    /// Fraction of the current batch used (0 < f <= 1) at which the next one is requested.
    pub refill_when_used: f64,
    /// How long a batch should last at the observed consumption rate.
    pub target_batch_duration: Duration,
    /// After a failed background refill, the earliest a new background refill starts (a caller
    /// that runs out starts one at once).
    pub retry_refill_after: Duration,
}

impl Default for SourceOptions {
    fn default() -> Self {
        Self {
            initial_batch: 1_000,
            min_batch: 100,
            max_batch: 1_000_000,
            refill_when_used: 0.1,
            target_batch_duration: Duration::from_secs(30),
            retry_refill_after: Duration::from_secs(1),
        }
    }
}

impl SourceOptions {
    fn validate(&self) -> Result<()> {
        let bad = |why: String| {
            Err(ZooidError::InvalidArgument(format!(
                "source options: {why}"
            )))
        };
        if self.min_batch == 0 || self.min_batch > self.max_batch || self.max_batch > MAX_TAKE {
            return bad(format!(
                "need 1 <= min_batch ({}) <= max_batch ({}) <= {MAX_TAKE}",
                self.min_batch, self.max_batch
            ));
        }
        if !(self.min_batch..=self.max_batch).contains(&self.initial_batch) {
            return bad(format!(
                "initial_batch {} is outside min_batch..=max_batch",
                self.initial_batch
            ));
        }
        if !(self.refill_when_used > 0.0 && self.refill_when_used <= 1.0) {
            return bad(format!(
                "refill_when_used {} must be in (0, 1]",
                self.refill_when_used
            ));
        }
        if self.target_batch_duration.is_zero() {
            return bad("target_batch_duration must be positive".into());
        }
        Ok(())
    }
}

/// What a source has done so far, for monitoring and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceStats {
    /// IDs handed to callers.
    pub handed_out: u64,
    /// Batches taken from the pool, the first one included.
    pub refills: u64,
    /// Background or foreground takes that failed.
    pub refill_failures: u64,
    /// Calls that found no local ID and waited on ZooKeeper.
    pub waits: u64,
    /// Sizes of the batches taken, oldest first (the most recent 256).
    pub batches: Vec<u64>,
    /// The size the latest refill asked for; the next one doubles, keeps or halves it.
    pub next_batch: u64,
    /// IDs held locally (the current batch's rest and the prefetched batch).
    pub local: u64,
    /// Whether a refill is in flight.
    pub refilling: bool,
}

/// The mutable part of a source, behind one short-lived mutex.
struct State {
    current: IdSet,
    /// IDs the current batch had when installed.
    current_len: u64,
    /// IDs left in the current batch.
    left: u64,
    /// Refill once `left` drops to this.
    refill_mark: u64,
    /// When the current batch was installed.
    since: Instant,
    /// The prefetched batch.
    next: Option<IdSet>,
    refilling: bool,
    /// The last refill's error, kept for the caller that runs out, and when it happened.
    failure: Option<(ZooidError, Instant)>,
    closed: bool,
    /// The size the next refill starts from.
    batch: u64,
    stats: SourceStats,
}

impl State {
    fn install(&mut self, ids: IdSet, refill_when_used: f64) {
        let len = ids.count_ids();
        self.current = ids;
        self.current_len = len;
        self.left = len;
        let used = ((len as f64) * refill_when_used).ceil() as u64;
        self.refill_mark = len.saturating_sub(used.max(1));
        self.since = Instant::now();
    }

    /// Takes one local ID, moving to the prefetched batch when the current one is used up.
    #[inline]
    fn take_id(&mut self, refill_when_used: f64) -> Option<i64> {
        let id = match self.current.take_id() {
            Some(id) => id,
            None => {
                let next = self.next.take()?;
                self.install(next, refill_when_used);
                self.current.take_id()?
            }
        };
        self.left -= 1;
        self.stats.handed_out += 1;
        Some(id)
    }

    /// Takes up to `max` consecutive local IDs.
    fn take_run(&mut self, max: u64, refill_when_used: f64) -> Option<IdRange> {
        let run = match self.current.take_run(max) {
            Some(run) => run,
            None => {
                let next = self.next.take()?;
                self.install(next, refill_when_used);
                self.current.take_run(max)?
            }
        };
        self.left -= run.len();
        self.stats.handed_out += run.len();
        Some(run)
    }

    fn local(&self) -> u64 {
        self.left + self.next.as_ref().map_or(0, IdSet::count_ids)
    }
}

/// What the background refill and the callers share.
struct Shared<S: Store> {
    service: Arc<IdGeneratorService<S>>,
    category: IdCategory,
    options: SourceOptions,
    runtime: Handle,
    state: Mutex<State>,
    /// Woken when a refill ends, whether it succeeded or not.
    refilled: Notify,
}

/// What a caller finds when it looks for a local ID.
enum Step<T> {
    Got(T),
    Wait,
    Fail(ZooidError),
}

impl<S: Store> Shared<S> {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Every critical section leaves the state consistent, so a poisoned lock is safe to use.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether to start a refill now, and of what size; marks it started.
    #[inline]
    fn due_refill(&self, st: &mut State) -> Option<u64> {
        if st.left > st.refill_mark || st.refilling || st.next.is_some() || st.closed {
            return None;
        }
        if let Some((_, at)) = &st.failure {
            if at.elapsed() < self.options.retry_refill_after {
                return None;
            }
        }
        Some(self.start_refill(st))
    }

    /// Adapts the batch size to the current batch's projected lifetime and marks a refill started.
    fn start_refill(&self, st: &mut State) -> u64 {
        let used = st.current_len - st.left;
        if used > 0 {
            let elapsed = st.since.elapsed().as_secs_f64();
            let projected = elapsed * st.current_len as f64 / used as f64;
            let target = self.options.target_batch_duration.as_secs_f64();
            if projected < target {
                st.batch = st.batch.saturating_mul(2);
            } else if projected > 2.0 * target {
                st.batch /= 2;
            }
            st.batch = st
                .batch
                .clamp(self.options.min_batch, self.options.max_batch);
        }
        st.refilling = true;
        st.stats.next_batch = st.batch;
        st.batch
    }

    /// One look for local IDs with `take`; starts a refill when one is due.
    fn poll<T>(
        self: &Arc<Self>,
        waited: &mut bool,
        take: impl FnOnce(&mut State) -> Option<T>,
    ) -> Step<T> {
        let mut st = self.lock();
        if st.closed {
            return Step::Fail(self.closed_error());
        }
        if let Some(got) = take(&mut st) {
            let due = self.due_refill(&mut st);
            drop(st);
            if let Some(n) = due {
                self.spawn_refill(n);
            }
            return Step::Got(got);
        }
        if !*waited {
            *waited = true;
            st.stats.waits += 1;
        }
        if st.refilling {
            return Step::Wait;
        }
        if let Some((err, _)) = st.failure.take() {
            return Step::Fail(err);
        }
        let n = self.start_refill(&mut st);
        drop(st);
        self.spawn_refill(n);
        Step::Wait
    }

    fn closed_error(&self) -> ZooidError {
        ZooidError::Closed {
            what: format!("ID source of {}", self.category),
        }
    }

    fn spawn_refill(self: &Arc<Self>, n: u64) {
        let shared = Arc::clone(self);
        self.runtime.spawn(async move { shared.refill(n).await });
    }

    async fn refill(&self, n: u64) {
        let result = self.service.take_ids(&self.category, n).await;
        // Logged before locking: the callers' critical sections stay a few instructions long.
        let result = match result {
            Ok(ids) => {
                let len = ids.count_ids();
                tracing::debug!(category = %self.category, asked = n, got = len, "prefetched a batch");
                Ok((ids, len))
            }
            Err(err) => {
                tracing::warn!(category = %self.category, %err, "refill failed; the caller sees it when local IDs run out");
                Err((err, Instant::now()))
            }
        };
        let mut st = self.lock();
        st.refilling = false;
        match result {
            Ok((ids, len)) => {
                st.failure = None;
                st.stats.refills += 1;
                if st.stats.batches.len() == BATCH_HISTORY {
                    st.stats.batches.remove(0);
                }
                st.stats.batches.push(len); // within the capacity reserved at open
                if st.left == 0 && st.next.is_none() {
                    st.install(ids, self.options.refill_when_used);
                } else {
                    st.next = Some(ids);
                }
            }
            Err(failure) => {
                st.stats.refill_failures += 1;
                st.failure = Some(failure);
            }
        }
        drop(st);
        self.refilled.notify_waiters();
    }

    /// Looks for local IDs with `take` until some arrive, waiting for refills.
    async fn wait_for<T>(self: &Arc<Self>, take: impl Fn(&mut State) -> Option<T>) -> Result<T> {
        let mut waited = false;
        // The fast path registers no waiter; the loop registers before it looks again, so a
        // refill ending in between is not missed.
        match self.poll(&mut waited, &take) {
            Step::Got(got) => return Ok(got),
            Step::Fail(err) => return Err(err),
            Step::Wait => {}
        }
        loop {
            let mut notified = pin!(self.refilled.notified());
            notified.as_mut().enable();
            match self.poll(&mut waited, &take) {
                Step::Got(got) => return Ok(got),
                Step::Fail(err) => return Err(err),
                Step::Wait => notified.await,
            }
        }
    }

    /// Stops handing out IDs, waits for an in-flight refill, and pushes back every local ID and
    /// `unused`.
    async fn close(&self, unused: &[IdRange]) -> Result<()> {
        let mut ranges = loop {
            let mut notified = pin!(self.refilled.notified());
            notified.as_mut().enable();
            let taken = {
                let mut st = self.lock();
                st.closed = true;
                if st.refilling {
                    None
                } else {
                    let mut ranges = st.current.ranges();
                    if let Some(next) = st.next.take() {
                        ranges.extend(next.ranges());
                    }
                    st.current = IdSet::new(self.category.clone(), Vec::new());
                    st.left = 0;
                    Some(ranges)
                }
            };
            match taken {
                Some(ranges) => break ranges,
                None => notified.await,
            }
        };
        ranges.extend_from_slice(unused);
        ranges.sort_unstable();
        let mut rest = IdSet::new(self.category.clone(), ranges);
        let count = rest.count_ids();
        let result = self.service.push_ids(&mut rest).await;
        if result.is_err() && rest.has_more_ids() {
            // Nothing was pushed: keep the IDs so that another close can try again.
            let mut st = self.lock();
            st.install(rest, self.options.refill_when_used);
        } else if result.is_ok() {
            tracing::debug!(category = %self.category, pushed = count, "ID source closed");
        }
        result
    }
}

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
                refilled: Notify::new(),
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
    /// `Closed`. If the push fails, the IDs stay with the source and `close` may be called
    /// again; a second close after a successful one pushes nothing.
    pub async fn close(&self) -> Result<()> {
        self.shared.close(&[]).await
    }

    /// [`IdSource::close`], also pushing back `unused`: IDs this source handed out that the
    /// caller did not use (such as the rest of a run from [`IdSource::next_run`]).
    pub async fn close_returning(&self, unused: &[IdRange]) -> Result<()> {
        self.shared.close(unused).await
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
        let unclosed = {
            let st = self.shared.lock();
            !st.closed && (st.local() > 0 || st.refilling)
        };
        if unclosed {
            tracing::warn!(category = %self.shared.category, "ID source dropped without close; pushing its IDs back in the background");
            let task = self.close_in_background();
            self.shared.runtime.spawn(task);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ServiceOptions;

    async fn memory_source(options: SourceOptions) -> (Arc<IdGeneratorService>, IdSource) {
        let service = Arc::new(
            IdGeneratorService::connect(
                "mem:",
                &crate::ConnectOptions::default(),
                ServiceOptions::default(),
            )
            .await
            .unwrap(),
        );
        let category = IdCategory::new("/prefetch/unit").unwrap();
        service
            .create_category(&category, &crate::CategorySpec::new(1, 1_000_000))
            .await
            .unwrap();
        let source = IdSource::open(Arc::clone(&service), category, options)
            .await
            .unwrap();
        (service, source)
    }

    #[test]
    fn options_are_validated() {
        let ok = SourceOptions::default();
        assert!(ok.validate().is_ok());
        for bad in [
            SourceOptions {
                min_batch: 0,
                ..ok.clone()
            },
            SourceOptions {
                min_batch: 10,
                max_batch: 5,
                initial_batch: 7,
                ..ok.clone()
            },
            SourceOptions {
                initial_batch: 10,
                ..ok.clone()
            },
            SourceOptions {
                refill_when_used: 0.0,
                ..ok.clone()
            },
            SourceOptions {
                refill_when_used: 1.5,
                ..ok.clone()
            },
            SourceOptions {
                target_batch_duration: Duration::ZERO,
                ..ok.clone()
            },
        ] {
            assert!(
                matches!(bad.validate(), Err(ZooidError::InvalidArgument(_))),
                "{bad:?}"
            );
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn ids_are_ascending_prefetched_and_pushed_back_on_close() {
        let options = SourceOptions {
            initial_batch: 100,
            min_batch: 100,
            max_batch: 100,
            ..SourceOptions::default()
        };
        let (service, source) = memory_source(options).await;
        let mut last = 0;
        for _ in 0..1_000 {
            let id = source.next().await.unwrap();
            assert!(id > last);
            last = id;
        }
        let stats = source.stats();
        assert_eq!(stats.handed_out, 1_000);
        assert!(stats.refills >= 10, "{stats:?}");
        source.close().await.unwrap();
        let info = service.pool_info(source.category()).await.unwrap();
        assert_eq!(info.free_count, 1_000_000 - 1_000);
        assert!(matches!(
            source.next().await,
            Err(ZooidError::Closed { .. })
        ));
        source.close().await.unwrap(); // nothing left to push
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn runs_and_returned_ranges_are_conserved() {
        let (service, source) = memory_source(SourceOptions::default()).await;
        let run = source.next_run(300).await.unwrap();
        assert_eq!(run.len(), 300);
        let used = IdRange::new(run.start(), run.start() + 9).unwrap();
        let unused = IdRange::new(used.end() + 1, run.end()).unwrap();
        source.close_returning(&[unused]).await.unwrap();
        let info = service.pool_info(source.category()).await.unwrap();
        assert_eq!(info.free_count, 1_000_000 - used.len());
    }

    /// A category running dry: every ID is handed out, then `Exhausted` comes, only when the
    /// local IDs are used up.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn exhaustion_surfaces_only_when_the_local_ids_run_out() {
        let service = Arc::new(
            IdGeneratorService::connect(
                "mem:",
                &crate::ConnectOptions::default(),
                ServiceOptions::default(),
            )
            .await
            .unwrap(),
        );
        let category = IdCategory::new("/prefetch/small").unwrap();
        service
            .create_category(&category, &crate::CategorySpec::new(1, 250))
            .await
            .unwrap();
        let options = SourceOptions {
            initial_batch: 100,
            min_batch: 100,
            max_batch: 100,
            ..SourceOptions::default()
        };
        let source = IdSource::open(Arc::clone(&service), category, options)
            .await
            .unwrap();
        for expected in 1..=250 {
            assert_eq!(source.next().await.unwrap(), expected);
        }
        let err = source.next().await.unwrap_err();
        assert!(matches!(err, ZooidError::Exhausted { .. }), "{err:?}");
        assert_eq!(source.stats().batches, vec![100, 100, 50]);
        assert!(matches!(
            source.next().await,
            Err(ZooidError::Exhausted { .. })
        ));
        source.close().await.unwrap();
    }
}
