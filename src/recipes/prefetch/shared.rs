//! The state a source's callers and its background refill share: the current and prefetched
//! batches behind one short-lived mutex, the refill (when, how much), the wait for it, and the
//! close that pushes every local ID back.

use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::time::Instant;

use tokio::runtime::Handle;
use tokio::sync::Notify;

use super::options::{SourceOptions, SourceStats, BATCH_HISTORY};
use crate::alloc::IdGeneratorService;
use crate::error::{Result, WriteOp, ZooidError};
use crate::idset::{IdCategory, IdSet};
use crate::range::IdRange;
use crate::store::Store;

/// The mutable part of a source, behind one short-lived mutex.
pub(super) struct State {
    pub(super) current: IdSet,
    /// IDs the current batch had when installed.
    pub(super) current_len: u64,
    /// IDs left in the current batch.
    pub(super) left: u64,
    /// Refill once `left` drops to this.
    pub(super) refill_mark: u64,
    /// When the current batch was installed.
    pub(super) since: Instant,
    /// The prefetched batch.
    pub(super) next: Option<IdSet>,
    pub(super) refilling: bool,
    /// A close is pushing back what it took from the state: another close waits for its
    /// outcome before it looks (what it finds then is what the first could not push).
    pub(super) pushing: bool,
    /// IDs the source may have lost, the first time it happened: a close's push in doubt (its
    /// IDs handed to the push, not kept), or a refill's take in doubt (it may have taken IDs
    /// from the pool that never reached the source). Every later close reports it, not `Ok`;
    /// a later refill that succeeds does not clear it.
    pub(super) in_doubt: Option<ZooidError>,
    /// A close's push ended having written (every ID back, or in doubt): the source holds
    /// nothing more, and a later close pushes nothing, not even its `unused`, which that push
    /// already sent (pushed again, they could free IDs another process took since).
    pub(super) pushed: bool,
    /// The last refill's error, kept for the caller that runs out, and when it happened.
    pub(super) failure: Option<(ZooidError, Instant)>,
    pub(super) closed: bool,
    /// The size the next refill starts from.
    pub(super) batch: u64,
    pub(super) stats: SourceStats,
}

impl State {
    pub(super) fn install(&mut self, ids: IdSet, refill_when_used: f64) {
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
    pub(super) fn take_id(&mut self, refill_when_used: f64) -> Option<i64> {
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
    pub(super) fn take_run(&mut self, max: u64, refill_when_used: f64) -> Option<IdRange> {
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

    pub(super) fn local(&self) -> u64 {
        self.left + self.next.as_ref().map_or(0, IdSet::count_ids)
    }
}

/// What the background refill and the callers share.
pub(super) struct Shared<S: Store> {
    pub(super) service: Arc<IdGeneratorService<S>>,
    pub(super) category: IdCategory,
    pub(super) options: SourceOptions,
    pub(super) runtime: Handle,
    pub(super) state: Mutex<State>,
    /// Woken when a refill or a close's push ends, whether it succeeded or not.
    pub(super) settled: Notify,
}

/// A refill in flight. Dropped unended, when its task ends unfinished (dropped with its runtime,
/// or panicking), it ends the refill as failed and wakes the waiters, so that no caller and
/// no close waits for it forever.
struct RefillGuard<S: Store> {
    shared: Arc<Shared<S>>,
    /// Set once the refill's take may have been sent (its task ran).
    started: bool,
    /// Set once the refill has stored its batch or its error.
    ended: bool,
}

impl<S: Store> RefillGuard<S> {
    /// The refill stored its batch or its error: nothing left to end.
    fn end(&mut self) {
        self.ended = true;
    }
}

impl<S: Store> Drop for RefillGuard<S> {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let shared = &self.shared;
        tracing::warn!(category = %shared.category, "refill task ended unfinished; a take it had sent may have left its IDs leaked");
        let mut st = shared.lock();
        st.refilling = false;
        st.stats.refill_failures += 1;
        let err = ZooidError::Closed {
            what: format!(
                "the runtime of the ID source of {}: a refill ended unfinished",
                shared.category
            ),
        };
        // Ended midway through its take: what it may have taken is unknown (none named).
        if self.started && st.in_doubt.is_none() {
            st.in_doubt = Some(ZooidError::OutcomeUnknown {
                category: shared.category.name().to_string(),
                op: WriteOp::Take,
                ids: Vec::new(),
                leaked_within: None,
            });
        }
        st.failure = Some((err, Instant::now()));
        drop(st);
        shared.settled.notify_waiters();
    }
}

/// What a caller finds when it looks for a local ID.
pub(super) enum Step<T> {
    Got(T),
    Wait,
    Fail(ZooidError),
}

impl<S: Store> Shared<S> {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
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
    pub(super) fn poll<T>(
        self: &Arc<Self>,
        waited: &mut bool,
        take: impl FnOnce(&mut State) -> Option<T>,
    ) -> Step<T> {
        // Before the lock (a parent's thread may have held it at the fork): the batches are the
        // parent's, which hands them out too.
        if let Err(forked) = crate::runtime::refuse_in_forked_child() {
            return Step::Fail(forked);
        }
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
        // Made outside the task: a task dropped before its first poll (its runtime shut down)
        // still drops the guard and ends the refill.
        let mut guard = RefillGuard {
            shared: Arc::clone(self),
            started: false,
            ended: false,
        };
        self.runtime.spawn(async move {
            guard.started = true;
            guard.shared.refill(n).await;
            guard.end();
        });
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
                if matches!(failure.0, ZooidError::OutcomeUnknown { .. }) && st.in_doubt.is_none()
                {
                    // Its IDs, if taken, are leaked: the close says so, whatever comes after.
                    st.in_doubt = Some(failure.0.clone());
                }
                st.failure = Some(failure);
            }
        }
        drop(st);
        self.settled.notify_waiters();
    }

    /// Looks for local IDs with `take` until some arrive, waiting for refills.
    pub(super) async fn wait_for<T>(
        self: &Arc<Self>,
        take: impl Fn(&mut State) -> Option<T>,
    ) -> Result<T> {
        let mut waited = false;
        // The fast path registers no waiter; the loop registers before it looks again, so a
        // refill ending in between is not missed.
        match self.poll(&mut waited, &take) {
            Step::Got(got) => return Ok(got),
            Step::Fail(err) => return Err(err),
            Step::Wait => {}
        }
        loop {
            let mut notified = pin!(self.settled.notified());
            notified.as_mut().enable();
            match self.poll(&mut waited, &take) {
                Step::Got(got) => return Ok(got),
                Step::Fail(err) => return Err(err),
                Step::Wait => notified.await,
            }
        }
    }

    /// Stops handing out IDs, waits for an in-flight refill and for another close's push, and
    /// pushes back every local ID and `unused`. `Ok` means every ID the source held is pushed
    /// back, by this close or by the one it waited for, and no refill's take was in doubt;
    /// otherwise the first doubt is the error (after the push).
    pub(super) async fn close(&self, unused: &[IdRange]) -> Result<()> {
        let ranges = loop {
            let mut notified = pin!(self.settled.notified());
            notified.as_mut().enable();
            let taken = {
                let mut st = self.lock();
                st.closed = true;
                if st.refilling || st.pushing {
                    None
                } else if st.pushed {
                    Some(None)
                } else {
                    st.pushing = true;
                    let mut ranges = st.current.ranges();
                    if let Some(next) = st.next.take() {
                        ranges.extend(next.ranges());
                    }
                    st.current = IdSet::new(self.category.clone(), Vec::new());
                    st.left = 0;
                    Some(Some(ranges))
                }
            };
            match taken {
                Some(Some(ranges)) => break ranges,
                Some(None) => {
                    if !unused.is_empty() {
                        tracing::warn!(category = %self.category, ?unused, "a close after the source's IDs went back: its unused IDs are not pushed again");
                    }
                    return self.lock().in_doubt.clone().map_or(Ok(()), Err);
                }
                None => notified.await,
            }
        };
        // Ended however the push goes (a panic included): the closes waiting for it look again.
        let mut pushing = Pushing {
            shared: self,
            finished: false,
            ranges: Vec::new(),
        };
        // Each ID once: a close retried with the same `unused` after one whose push wrote
        // nothing finds them among the IDs that push kept.
        let own = ranges;
        let ranges = union(own.iter().copied().chain(unused.iter().copied()));
        if ranges.is_empty() {
            pushing.finished = true;
            drop(pushing);
            return self.lock().in_doubt.clone().map_or(Ok(()), Err);
        }
        pushing.ranges.clone_from(&ranges);
        let mut rest = IdSet::new(self.category.clone(), ranges);
        let count = rest.count_ids();
        let result = self.service.push_ids(&mut rest).await;
        if result.is_err() && rest.has_more_ids() {
            // Nothing was pushed: keep the IDs so that another close (or the drop of the
            // source) can try again; but not IDs the pool refused as not the caller's (free
            // already, or outside the category): pushed later they could free what another
            // process took since. The source's own IDs are its to push.
            let refused = matches!(
                result,
                Err(ZooidError::AlreadyFree { .. } | ZooidError::OutOfBounds { .. })
            );
            let kept = if refused { own } else { rest.ranges() };
            let mut st = self.lock();
            let kept = union(st.current.ranges().into_iter().chain(kept));
            st.install(
                IdSet::new(self.category.clone(), kept),
                self.options.refill_when_used,
            );
        } else if let Err(err) = &result {
            let mut st = self.lock();
            st.pushed = true;
            st.in_doubt.get_or_insert_with(|| err.clone());
        } else {
            self.lock().pushed = true;
            tracing::debug!(category = %self.category, pushed = count, "ID source closed");
        }
        pushing.finished = true;
        drop(pushing);
        // An earlier close's push in doubt is not made good by this one.
        match (result, self.lock().in_doubt.clone()) {
            (Ok(()), Some(earlier)) => Err(earlier),
            (result, _) => result,
        }
    }
}

/// A close's push in flight; its drop ends it and wakes the closes waiting for it. Dropped
/// unfinished (the close's task dropped with its runtime, or a panic in the push), the push is
/// in doubt: later closes say so rather than `Ok`.
struct Pushing<'a, S: Store> {
    shared: &'a Shared<S>,
    finished: bool,
    /// What the push sends, named in the doubt.
    ranges: Vec<IdRange>,
}

impl<S: Store> Drop for Pushing<'_, S> {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        st.pushing = false;
        if !self.finished {
            st.pushed = true;
        }
        if !self.finished && st.in_doubt.is_none() {
            st.in_doubt = Some(ZooidError::OutcomeUnknown {
                category: self.shared.category.name().to_string(),
                op: WriteOp::Push,
                ids: std::mem::take(&mut self.ranges),
                leaked_within: None,
            });
        }
        drop(st);
        self.shared.settled.notify_waiters();
    }
}

/// The IDs of `ranges`, each once, as ascending disjoint ranges (overlapping and adjacent
/// ones merged).
fn union(ranges: impl IntoIterator<Item = IdRange>) -> Vec<IdRange> {
    let mut sorted: Vec<IdRange> = ranges.into_iter().collect();
    sorted.sort_unstable();
    let mut merged: Vec<IdRange> = Vec::with_capacity(sorted.len());
    for range in sorted {
        let joined = merged
            .last()
            .filter(|last| range.start() <= last.end().saturating_add(1))
            .and_then(|last| IdRange::new(last.start(), last.end().max(range.end())));
        match joined {
            Some(joined) => {
                if let Some(last) = merged.last_mut() {
                    *last = joined;
                }
            }
            None => merged.push(range),
        }
    }
    merged
}

#[cfg(test)]
mod union_tests {
    use super::*;

    fn r(start: i64, end: i64) -> IdRange {
        IdRange::new(start, end).unwrap()
    }

    #[test]
    fn overlapping_adjacent_and_apart_ranges_count_each_id_once() {
        assert_eq!(
            union([r(6, 100), r(6, 8), r(1, 2), r(3, 4), r(90, 120), r(200, 200)]),
            [r(1, 4), r(6, 120), r(200, 200)]
        );
        assert_eq!(union([r(5, 9), r(1, 6)]), [r(1, 9)], "a partial overlap");
        assert!(union([]).is_empty());
    }
}
