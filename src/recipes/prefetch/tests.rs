use std::time::Duration;

use super::*;
use crate::alloc::ServiceOptions;

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
