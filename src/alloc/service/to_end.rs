//! Takes and pushes run to their end whatever their caller does. Each runs in its caller's
//! future ([`ToEnd`]); if that future is dropped before the operation ended (an async caller's
//! timeout, a `select!`), the rest of the operation goes on in a task of its own, which
//! finishes the write it sent and resolves a lost reply. What that task then has no caller for
//! is never lost silently: IDs it took are pushed back, or reported leaked when they cannot
//! be; IDs of a push that did not apply are reported leaked (nobody holds them any more).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use super::{observe, IdGeneratorService};
use crate::alloc::core::{count_of, Core};
use crate::alloc::dispatch;
use crate::error::{Result, ZooidError};
use crate::idset::{IdCategory, IdSet};
use crate::range::IdRange;
use crate::store::Store;

type Boxed<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// An operation that runs while its caller polls it and, dropped before it ended, goes on in a
/// task of its own, handing its output to `orphaned` at the end; counted in
/// [`ServiceStats::abandoned_running`](crate::stats::ServiceStats::abandoned_running) meanwhile.
pub(super) struct ToEnd<S: Store, T: Send + 'static> {
    /// `None` once it ended.
    rest: Option<Rest<S, T>>,
    /// Set when it is dropped before it ended: its caller gave up.
    gone: Arc<AtomicBool>,
}

/// What an operation still to end holds.
struct Rest<S: Store, T> {
    work: Boxed<T>,
    /// What to do with its output without a caller.
    orphaned: Box<dyn FnOnce(T) -> Boxed<()> + Send>,
    /// The allocator whose figures count it.
    core: Arc<Core<S>>,
}

impl<S: Store, T: Send + 'static> ToEnd<S, T> {
    /// The operation `work` makes, given the flag that says its caller gave up.
    fn new<W, WF, O, OF>(core: &Arc<Core<S>>, work: W, orphaned: O) -> Self
    where
        W: FnOnce(Arc<AtomicBool>) -> WF,
        WF: Future<Output = T> + Send + 'static,
        O: FnOnce(T) -> OF + Send + 'static,
        OF: Future<Output = ()> + Send + 'static,
    {
        let gone = Arc::new(AtomicBool::new(false));
        Self {
            rest: Some(Rest {
                work: Box::pin(work(Arc::clone(&gone))),
                orphaned: Box::new(move |output| Box::pin(orphaned(output))),
                core: Arc::clone(core),
            }),
            gone,
        }
    }
}

impl<S: Store, T: Send + 'static> Future for ToEnd<S, T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let Some(rest) = self.rest.as_mut() else {
            return Poll::Pending; // Polled after it ended: as a fused future, nothing more.
        };
        let output = std::task::ready!(rest.work.as_mut().poll(cx));
        // Ended: what the work held (the allocator, the session) goes now, before the caller
        // sees the output, so that a close right after finds the session unshared.
        self.rest = None;
        Poll::Ready(output)
    }
}

impl<S: Store, T: Send + 'static> Drop for ToEnd<S, T> {
    fn drop(&mut self) {
        let Some(Rest {
            work,
            orphaned,
            core,
        }) = self.rest.take()
        else {
            return;
        };
        self.gone.store(true, Ordering::Release);
        // A mutant the simulator must find (tests/sim): the rest of the operation dropped.
        #[cfg(zooid_mutant = "given_up_dropped")]
        return;
        // Also while the thread unwinds: the panic may be its caller's (a `block_on` around a
        // `select!`), and the write the work sent must still be resolved. A work that panicked
        // itself panics again in its task, which `Running` reports.
        #[allow(unreachable_code)]
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let mut running = Running::start(core);
                runtime.spawn(async move {
                    orphaned(work.await).await;
                    running.end();
                });
            }
            Err(_) => tracing::error!("a take or push whose caller gave up was dropped outside a tokio runtime, where nothing can run it to its end: IDs it took or was pushing may be lost unreported"),
        }
    }
}

/// One operation whose caller gave up, counted in `abandoned_running` while its task lives.
struct Running<S: Store> {
    core: Arc<Core<S>>,
    ended: bool,
}

impl<S: Store> Running<S> {
    fn start(core: Arc<Core<S>>) -> Self {
        core.stats.abandoned(1);
        Self { core, ended: false }
    }

    /// It ran to its end.
    fn end(&mut self) {
        self.ended = true;
    }
}

impl<S: Store> Drop for Running<S> {
    /// Also when its task is dropped unfinished (a runtime shutting down, a panic under it):
    /// said then, as what the operation took or was pushing may be lost with it, as with a task
    /// that dies.
    fn drop(&mut self) {
        self.core.stats.abandoned(-1);
        if !self.ended {
            tracing::error!("a take or push whose caller gave up was stopped before its end (its runtime shut down, or it panicked): IDs it took or was pushing may be lost unreported");
        }
    }
}

/// A take of `n` IDs of `category` ([`dispatch::take`], observed); IDs it took for a caller
/// that gave up are pushed back. Given up before it held the category's slot, it takes nothing.
pub(super) fn take<S: Store>(
    core: &Arc<Core<S>>,
    category: &IdCategory,
    n: u64,
) -> ToEnd<S, Result<Vec<IdRange>>> {
    let (working, category) = (Arc::clone(core), category.clone());
    let service = IdGeneratorService {
        core: Arc::clone(core),
    };
    let given_back = category.clone();
    ToEnd::new(
        core,
        |gone| async move {
            let take = dispatch::take(&working, &category, n, &gone);
            observe(&working.stats, category.name(), "take", |r| count_of(r), take).await
        },
        move |taken| async move {
            if let Ok(ranges) = taken {
                service
                    .give_back_undelivered(IdSet::new(given_back, ranges))
                    .await;
            }
        },
    )
}

/// A push of `ranges` of `category` ([`dispatch::push`], observed): its result, and whether it
/// proves that nothing was written (the caller keeps its IDs then; for a caller that gave up,
/// they are reported leaked).
pub(super) fn push<S: Store>(
    core: &Arc<Core<S>>,
    category: IdCategory,
    ranges: Vec<IdRange>,
) -> ToEnd<S, (Result<()>, bool)> {
    let working = Arc::clone(core);
    let service = IdGeneratorService {
        core: Arc::clone(core),
    };
    let (leaked_category, leaked_ranges) = (category.clone(), ranges.clone());
    ToEnd::new(
        core,
        // A push whose caller gave up goes on: it frees IDs nobody holds any more.
        |_| async move {
            let push = dispatch::push(&working, &category, &ranges);
            let result = observe(&working.stats, category.name(), "push", |r| count_of(r), push)
                .await
                .map(drop);
            let nothing_written =
                !matches!(result, Ok(()) | Err(ZooidError::OutcomeUnknown { .. }));
            (result, nothing_written)
        },
        move |pushed| async move {
            // The caller gave up, and its IDs went with it: held by no one now. (The IDs of an
            // `OutcomeUnknown` are counted where it is observed.)
            if let (Err(err), true) = pushed {
                service.leaked_undelivered(&leaked_category, &leaked_ranges, err);
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::time::Duration;

    use super::*;
    use crate::alloc::ServiceOptions;
    use crate::zk::ConnectOptions;

    /// Review (the seventh round's block allocation): an operation dropped while its caller's
    /// thread unwound from a panic of its own was dropped with it, its write unresolved and its
    /// IDs counted nowhere. On the code before: `the rest never ran` (`Err(Disconnected)`).
    #[test]
    fn an_operation_dropped_while_its_caller_panics_goes_on_to_its_end() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime");
        let service = runtime
            .block_on(IdGeneratorService::connect(
                "mem:",
                &ConnectOptions::default(),
                ServiceOptions::default(),
            ))
            .expect("a service on the memory store");
        let (ended, rest) = std::sync::mpsc::channel();
        let operation = ToEnd::new(
            &service.core,
            |_| async {
                tokio::time::sleep(Duration::from_millis(50)).await;
                7
            },
            move |output: i32| async move {
                let _ = ended.send(output);
            },
        );
        let caught = catch_unwind(AssertUnwindSafe(|| {
            runtime.block_on(async move {
                let mut operation = std::pin::pin!(operation);
                let first = std::future::poll_fn(|cx| Poll::Ready(operation.as_mut().poll(cx)));
                assert!(
                    first.await.is_pending(),
                    "guard: the operation was under way"
                );
                panic!("the caller's own panic");
            })
        }));
        assert!(caught.is_err(), "guard: the caller panicked");
        assert_eq!(
            rest.recv_timeout(Duration::from_secs(5)),
            Ok(7),
            "the rest never ran"
        );
    }
}
