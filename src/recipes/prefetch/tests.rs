use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use super::*;
use crate::alloc::ServiceOptions;
use crate::error::WriteOp;

async fn memory_source(options: SourceOptions) -> (Arc<IdGeneratorService>, IdSource) {
    let service = Arc::new(
        IdGeneratorService::connect(
            "mem:",
            &crate::zk::ConnectOptions::default(),
            ServiceOptions::default(),
        )
        .await
        .unwrap(),
    );
    let category = IdCategory::new("/prefetch/unit").unwrap();
    service
        .create_category(&category, &crate::alloc::CategorySpec::new(1, 1_000_000))
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
            &crate::zk::ConnectOptions::default(),
            ServiceOptions::default(),
        )
        .await
        .unwrap(),
    );
    let category = IdCategory::new("/prefetch/small").unwrap();
    service
        .create_category(&category, &crate::alloc::CategorySpec::new(1, 250))
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

/// A close whose caller gives up (a timeout around `close`) while a refill is in flight, then
/// the source dropped: the IDs it held (the current batch's rest and the refill's batch) still
/// go back to the pool, none is left behind unreported.
#[tokio::test(flavor = "current_thread")]
async fn a_close_given_up_while_a_refill_is_in_flight_still_pushes_everything_back() {
    let options = SourceOptions {
        initial_batch: 100,
        min_batch: 100,
        max_batch: 100,
        ..SourceOptions::default()
    };
    let (service, source) = memory_source(options).await;
    let category = source.category().clone();
    // 10 IDs used: the refill is due and spawned, not yet run (one thread, no yield so far).
    for _ in 0..10 {
        assert!(source.try_next().unwrap().is_some());
    }
    assert!(source.stats().refilling);
    // The close waits for the refill in flight; its caller gives up at once (polled once, then
    // dropped, as a timeout around `close` does).
    {
        let mut close = std::pin::pin!(source.close());
        let polled =
            std::future::poll_fn(|cx| std::task::Poll::Ready(close.as_mut().poll(cx))).await;
        assert!(polled.is_pending(), "the close did not wait for the refill");
    }
    drop(source);
    let expected = 1_000_000 - 10;
    let mut free = 0;
    for _ in 0..500 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        free = service.pool_info(&category).await.unwrap().free_count;
        if free == expected {
            break;
        }
    }
    assert_eq!(
        free, expected,
        "IDs held by the source were neither pushed back nor reported"
    );
}

/// A refill whose task is dropped unfinished (the runtime running the refills shut down) ends
/// the refill: `close` does not wait for it forever and pushes back what the source holds.
#[test]
fn a_refill_dropped_unfinished_does_not_hold_up_close() {
    let main = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    // Never driven: its tasks never run, and are dropped with it.
    let refills = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (service, source) = main.block_on(async {
        let (service, _) = memory_source(SourceOptions::default()).await;
        let category = IdCategory::new("/prefetch/unit").unwrap();
        let options = SourceOptions {
            initial_batch: 100,
            min_batch: 100,
            max_batch: 100,
            ..SourceOptions::default()
        };
        let source = IdSource::open_on(
            refills.handle().clone(),
            Arc::clone(&service),
            category,
            options,
        )
        .await
        .unwrap();
        (service, source)
    });
    for _ in 0..10 {
        assert!(source.try_next().unwrap().is_some());
    }
    assert!(source.stats().refilling);
    drop(refills);
    let closed = main.block_on(async {
        tokio::time::timeout(Duration::from_secs(5), source.close_returning(&[])).await
    });
    assert!(
        matches!(closed, Ok(Ok(()))),
        "{closed:?}: close waits for a refill whose task is gone, or fails: {:?}",
        source.stats()
    );
    let category = source.category().clone();
    let expected = 1_000_000 - 10;
    let free = main.block_on(async {
        let mut free = 0;
        for _ in 0..500 {
            free = service.pool_info(&category).await.unwrap().free_count;
            if free == expected {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        free
    });
    assert_eq!(free, expected);
}

/// A memory store whose writes (`set`, `replace`: a take's or a push's) can be held at a gate
/// or refused (nothing written), for the closes below.
#[derive(Clone, Default)]
struct Gated(Arc<GatedControl>);

#[derive(Default)]
struct GatedControl {
    inner: crate::store::MemoryStore,
    /// The next write waits for `release` (after notifying `held`).
    hold: AtomicBool,
    held: Notify,
    release: Notify,
    /// This many writes are refused (`usize::MAX`: all).
    refuse: AtomicUsize,
    /// Writes panic.
    panic: AtomicBool,
    /// The next write applies and its reply is lost.
    lose_reply: AtomicBool,
    /// Reads fail as if the servers could not be reached.
    fail_reads: AtomicBool,
}

impl Gated {
    async fn gate(&self) -> std::result::Result<(), crate::store::StoreError> {
        if self.0.hold.swap(false, Ordering::SeqCst) {
            self.0.held.notify_one();
            self.0.release.notified().await;
        }
        assert!(
            !self.0.panic.load(Ordering::SeqCst),
            "the store panics on a write (the test's fault)"
        );
        let refused = self
            .0
            .refuse
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| match n {
                0 => None,
                usize::MAX => Some(usize::MAX),
                n => Some(n - 1),
            })
            .is_ok();
        if refused {
            return Err(crate::store::StoreError::Refused(
                "refused by the test".into(),
            ));
        }
        Ok(())
    }
}

impl Store for Gated {
    async fn get(
        &self,
        path: &str,
    ) -> std::result::Result<crate::store::Versioned, crate::store::StoreError> {
        if self.0.fail_reads.load(Ordering::SeqCst) {
            return Err(crate::store::StoreError::Unknown(
                "reads fail (the test's fault)".into(),
            ));
        }
        self.0.inner.get(path).await
    }
    async fn create(
        &self,
        path: &str,
        data: &[u8],
    ) -> std::result::Result<(), crate::store::StoreError> {
        self.0.inner.create(path, data).await
    }
    async fn set(
        &self,
        path: &str,
        data: &[u8],
        expected: i32,
        planned: crate::store::ReadOn,
    ) -> std::result::Result<i32, crate::store::StoreError> {
        self.gate().await?;
        let set = self.0.inner.set(path, data, expected, planned).await;
        if set.is_ok() && self.0.lose_reply.swap(false, Ordering::SeqCst) {
            return Err(crate::store::StoreError::Unknown(
                "reply lost (the test's fault)".into(),
            ));
        }
        set
    }
    async fn replace(
        &self,
        path: &str,
        data: &[u8],
        expected: i32,
        planned: crate::store::ReadOn,
    ) -> std::result::Result<Option<i64>, crate::store::StoreError> {
        self.gate().await?;
        let replaced = self.0.inner.replace(path, data, expected, planned).await;
        if replaced.is_ok() && self.0.lose_reply.swap(false, Ordering::SeqCst) {
            return Err(crate::store::StoreError::Unknown(
                "reply lost (the test's fault)".into(),
            ));
        }
        replaced
    }
    fn read_on(&self) -> crate::store::ReadOn {
        self.0.inner.read_on()
    }
    async fn sync(&self, path: &str) -> std::result::Result<(), crate::store::StoreError> {
        self.0.inner.sync(path).await
    }
    async fn children(
        &self,
        path: &str,
    ) -> std::result::Result<Vec<String>, crate::store::StoreError> {
        self.0.inner.children(path).await
    }
    async fn delete(
        &self,
        path: &str,
        expected: i32,
    ) -> std::result::Result<(), crate::store::StoreError> {
        self.0.inner.delete(path, expected).await
    }
}

/// A close while another one pushes waits for it: when the first push is refused (the IDs kept),
/// the second tries them again and reports its own failure, not `Ok` with every ID unpushed.
/// Dropped after those failed closes, the source pushes its IDs back in the background.
#[tokio::test(flavor = "current_thread")]
async fn a_close_during_a_failed_close_fails_too_and_the_drop_pushes_the_ids_back() {
    let (store, service, source) = gated_source().await;
    let category = source.category().clone();
    assert!(!source.stats().refilling, "guard: no refill due yet");

    // The first close's push is held; a second close starts meanwhile.
    store.0.hold.store(true, Ordering::SeqCst);
    let first = tokio::spawn({
        let source = Arc::clone(&source);
        async move { source.close().await }
    });
    store.0.held.notified().await;
    let second = tokio::spawn({
        let source = Arc::clone(&source);
        async move { source.close().await }
    });
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(
        !second.is_finished(),
        "a close ended while another one's push was in flight: {:?}",
        second.await
    );
    // The held push is refused: nothing written, the IDs stay with the source.
    store.0.refuse.store(usize::MAX, Ordering::SeqCst);
    store.0.release.notify_one();
    let first = first.await.unwrap();
    let second = second.await.unwrap();
    assert!(
        matches!(first, Err(ZooidError::Store { .. })),
        "guard: {first:?}"
    );
    assert!(
        second.is_err(),
        "the second close reported Ok with the IDs unpushed"
    );
    assert_eq!(source.stats().local, 95, "the failed closes kept the IDs");

    // Writes accepted again: the source dropped after its failed closes pushes its IDs back.
    store.0.refuse.store(0, Ordering::SeqCst);
    drop(Arc::into_inner(source).expect("the only reference"));
    let expected = 1_000_000 - 5;
    let mut free = 0;
    for _ in 0..500 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        free = service.pool_info(&category).await.unwrap().free_count;
        if free == expected {
            break;
        }
    }
    assert_eq!(
        free, expected,
        "the source dropped after a failed close did not push its IDs back"
    );
}

/// A source over a [`Gated`] store with 100 IDs, 5 of them handed out.
async fn gated_source() -> (Gated, Arc<IdGeneratorService<Gated>>, Arc<IdSource<Gated>>) {
    let store = Gated::default();
    let service = Arc::new(IdGeneratorService::with_store(
        store.clone(),
        ServiceOptions::default(),
    ));
    let category = IdCategory::new("/prefetch/gated").unwrap();
    service
        .create_category(&category, &crate::alloc::CategorySpec::new(1, 1_000_000))
        .await
        .unwrap();
    let options = SourceOptions {
        initial_batch: 100,
        min_batch: 100,
        max_batch: 100,
        ..SourceOptions::default()
    };
    let source = Arc::new(
        IdSource::open(Arc::clone(&service), category, options)
            .await
            .unwrap(),
    );
    for _ in 0..5 {
        assert!(source.try_next().unwrap().is_some());
    }
    (store, service, source)
}

/// A close whose push panicked (it may have been sent) leaves the push in doubt: a later close
/// says so, whether it finds nothing to push or pushes other IDs successfully, rather than `Ok`.
#[tokio::test(flavor = "current_thread")]
async fn a_close_after_one_that_stopped_midway_does_not_report_ok() {
    let (store, _service, source) = gated_source().await;
    let run = source.try_next_run(2).unwrap().expect("a run");
    store.0.panic.store(true, Ordering::SeqCst);
    let first = tokio::spawn({
        let source = Arc::clone(&source);
        async move { source.close().await }
    })
    .await;
    assert!(
        first.is_err_and(|e| e.is_panic()),
        "guard: the push panicked"
    );
    store.0.panic.store(false, Ordering::SeqCst);
    // In doubt, naming what the push sent (Java closes its source on that kind; a `Closed`
    // left it unclosable, its session open: the review of the prefetching source).
    let again = source.close().await;
    assert!(
        matches!(&again, Err(ZooidError::OutcomeUnknown { op: WriteOp::Push, ids, .. }) if !ids.is_empty()),
        "a close after one that stopped midway: {again:?}"
    );
    let returning = source.close_returning(&[run]).await;
    assert!(
        matches!(returning, Err(ZooidError::OutcomeUnknown { .. })),
        "a close that pushed other IDs: {returning:?}"
    );
}

/// Review (the prefetching source): a close whose push wrote nothing keeps the IDs, those of
/// `unused` too; a close retried with the same `unused` pushed them twice in one set, which
/// every layout refuses (`AlreadyFree`), so no later close could ever push them. On the code
/// before: `Err(AlreadyFree { .. })`.
#[tokio::test(flavor = "current_thread")]
async fn a_close_retried_with_the_same_unused_ids_pushes_each_once() {
    let (store, service, source) = gated_source().await;
    let category = source.category().clone();
    let run = source.try_next_run(3).unwrap().expect("a run");
    store.0.refuse.store(1, Ordering::SeqCst);
    let refused = source.close_returning(&[run]).await;
    assert!(refused.is_err(), "guard: the first close's push was refused: {refused:?}");
    let again = source.close_returning(&[run]).await;
    assert!(again.is_ok(), "a close retried with the same unused IDs: {again:?}");
    assert_eq!(
        service.pool_info(&category).await.unwrap().free_count,
        1_000_000 - 5,
        "every ID but the 5 handed out (and kept) is free"
    );
}

/// A source dropped while a close pushes (its caller gave up on it) whose push then fails and
/// keeps the IDs: the drop's background close waits for that push and pushes them back.
#[tokio::test(flavor = "current_thread")]
async fn a_source_dropped_while_its_close_pushes_gets_the_ids_back_if_that_push_fails() {
    let (store, service, source) = gated_source().await;
    let category = source.category().clone();
    store.0.hold.store(true, Ordering::SeqCst);
    {
        let mut close = std::pin::pin!(source.close());
        let polled =
            std::future::poll_fn(|cx| std::task::Poll::Ready(close.as_mut().poll(cx))).await;
        assert!(polled.is_pending(), "guard: the close's task is spawned");
    }
    store.0.held.notified().await;
    drop(Arc::into_inner(source).expect("the only reference"));
    // The held push is refused (nothing written, the IDs kept); the next write goes through.
    store.0.refuse.store(1, Ordering::SeqCst);
    store.0.release.notify_one();
    let expected = 1_000_000 - 5;
    let mut free = 0;
    for _ in 0..500 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        free = service.pool_info(&category).await.unwrap().free_count;
        if free == expected {
            break;
        }
    }
    assert_eq!(
        free, expected,
        "the IDs of a close that failed after its source was dropped stayed unpushed"
    );
}

/// A refill whose take applied but could not be resolved (its reply lost, every read failing
/// until the retry budget ran out) may have taken IDs that never reached the source: a close
/// reports it, after pushing everything else back, even when a later refill succeeded.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_close_reports_a_refill_in_doubt_even_after_a_later_refill_succeeded() {
    let (store, service, source) = gated_source().await;
    let category = source.category().clone();
    store.0.lose_reply.store(true, Ordering::SeqCst);
    store.0.fail_reads.store(true, Ordering::SeqCst);
    let mut handed = 5u64;
    while !source.stats().refilling {
        assert!(source.try_next().unwrap().is_some());
        handed += 1;
    }
    while source.stats().refilling {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(source.stats().refill_failures, 1, "guard: the refill failed");
    assert!(
        !store.0.lose_reply.load(Ordering::SeqCst),
        "guard: the refill's take applied and its reply was lost"
    );
    // Reads work again; a later refill succeeds (the source keeps handing out IDs past it).
    store.0.fail_reads.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(60)).await;
    while source.stats().refills == 0 {
        assert!(source.next().await.is_ok());
        handed += 1;
        tokio::task::yield_now().await;
    }
    let closed = source.close().await;
    assert!(
        matches!(closed, Err(ZooidError::OutcomeUnknown { .. })),
        "a close after a refill in doubt reported {closed:?}"
    );
    // Everything else went back: only the handed-out IDs and the lost take's batch are gone.
    let free = service.pool_info(&category).await.unwrap().free_count;
    assert_eq!(free, 1_000_000 - handed - 100, "handed out {handed}");
}

/// Waits (up to 5 s) for `category`'s free count to reach `expected`, and returns the last one
/// seen: a dropped source pushes back in the background.
async fn free_count_settles<S: Store>(
    service: &IdGeneratorService<S>,
    category: &IdCategory,
    expected: u64,
) -> u64 {
    let mut free = 0;
    for _ in 0..500 {
        free = service.pool_info(category).await.unwrap().free_count;
        if free == expected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    free
}

/// A close after a successful one pushes nothing, its `unused` included: pushed again, a run
/// the first close gave back would be freed under the taker that got it since.
#[tokio::test(flavor = "current_thread")]
async fn a_close_after_a_successful_one_pushes_nothing_even_its_unused() {
    let (_store, service, source) = gated_source().await;
    let category = source.category().clone();
    let run = source.try_next_run(3).unwrap().expect("a run");
    source.close_returning(&[run]).await.unwrap();
    let other = service.take_ids(&category, 3).await.unwrap();
    assert_eq!(other.ranges(), vec![run], "guard: another taker holds the run");
    let before = service.pool_info(&category).await.unwrap().free_count;

    let again = source.close_returning(&[run]).await;
    assert!(again.is_ok(), "a close after a successful one: {again:?}");
    // A close refused because the run is free must not leave it with the source either.
    let free = service.pool_info(&category).await.unwrap().free_count;
    assert_eq!(free, before, "the second close freed the run another taker holds");
    drop(Arc::into_inner(source).expect("the only reference"));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let free = service.pool_info(&category).await.unwrap().free_count;
    assert_eq!(free, before, "the dropped source freed IDs another taker holds");
}

/// `unused` that the pool refuses (an ID already free) is not kept with the source: its drop
/// would push it later, when another taker may hold it. The source's own IDs are kept and go
/// back with the drop.
#[tokio::test(flavor = "current_thread")]
async fn unused_refused_as_already_free_is_not_kept_for_the_drop_to_push() {
    let (_store, service, source) = gated_source().await;
    let category = source.category().clone();
    // IDs the source never held, free in the pool (it took the lowest 100).
    let stray = IdRange::new(500_000, 500_002).unwrap();
    let refused = source.close_returning(&[stray]).await;
    assert!(
        matches!(refused, Err(ZooidError::AlreadyFree { .. })),
        "guard: {refused:?}"
    );
    let stray_taker = service.take_ids(&category, 500_002 - 100).await.unwrap();
    assert!(
        stray_taker.ranges().iter().any(|r| r.contains(500_000)),
        "guard: another taker holds the stray IDs"
    );
    let before = service.pool_info(&category).await.unwrap().free_count;
    drop(Arc::into_inner(source).expect("the only reference"));
    // The drop pushes the source's own 95 back, and nothing more.
    let free = free_count_settles(&service, &category, before + 95).await;
    assert_eq!(
        free,
        before + 95,
        "the dropped source pushed back more (or less) than its own 95 IDs"
    );
}
