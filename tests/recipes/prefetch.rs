//! The prefetching ID source against a real ZooKeeper server: unique IDs across sources, threads
//! and processes; close pushes back everything unused; a failed background refill surfaces only
//! when the local IDs run out; the batch size follows the consumption rate.

use zooid::CategorySpec;
use zooid_test_support as support;

use std::collections::HashSet;
use std::thread;
use std::time::{Duration, Instant};

use support::{op, wait_until, FaultProxy, ZkServer};
use zooid::blocking::{IdGeneratorService, IdSource};
use zooid::prefetch::SourceOptions;
use zooid::{ConnectOptions, IdCategory, RetryPolicy, ServiceOptions, ZooidError};

const LAST: i64 = 10_000_000;

fn connect(connect: &str, deadline: Duration) -> IdGeneratorService {
    let options = ServiceOptions {
        retry: RetryPolicy {
            deadline,
            ..RetryPolicy::default()
        },
        ..ServiceOptions::default()
    };
    let connect_options = ConnectOptions {
        session_timeout: Duration::from_secs(4),
        digest_auth: None,
        ..ConnectOptions::default()
    };
    IdGeneratorService::connect(connect, &connect_options, options).unwrap()
}

fn free(service: &IdGeneratorService, category: &IdCategory) -> u64 {
    service.pool_info(category).unwrap().free_count
}

/// Several sources on two sessions, each shared by several threads, with small batches so that
/// refills race each other: every ID is unique, and after close the pool holds everything that
/// was not handed out.
#[test]
fn sources_and_threads_never_share_an_id_and_close_conserves() {
    support::init_tracing();
    let zk = ZkServer::start();
    let services = [
        connect(&zk.connect_string(), Duration::from_secs(30)),
        connect(&zk.connect_string(), Duration::from_secs(30)),
    ];
    let category = IdCategory::new("/prefetch/unique").unwrap();
    services[0]
        .create_category(&category, &CategorySpec::new(1, LAST))
        .unwrap();
    let before = free(&services[0], &category);
    let options = SourceOptions {
        initial_batch: 50,
        min_batch: 50,
        max_batch: 800,
        ..SourceOptions::default()
    };
    let sources: Vec<IdSource> = (0..4)
        .map(|i| IdSource::open(&services[i % 2], &category, options.clone()).unwrap())
        .collect();
    let drawn: Vec<i64> = thread::scope(|scope| {
        let workers: Vec<_> = sources
            .iter()
            .flat_map(|source| {
                (0..3).map(move |_| {
                    scope.spawn(move || {
                        (0..5_000)
                            .map(|_| source.next().unwrap())
                            .collect::<Vec<_>>()
                    })
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    assert_eq!(drawn.len(), 4 * 3 * 5_000);
    let unique: HashSet<i64> = drawn.iter().copied().collect();
    assert_eq!(unique.len(), drawn.len(), "an ID was handed out twice");
    let mut refills = 0;
    for source in &sources {
        let stats = source.stats();
        eprintln!("source: {stats:?}");
        assert_eq!(stats.handed_out, 3 * 5_000);
        refills += stats.refills;
        source.close().unwrap();
        assert_eq!(source.stats().local, 0);
    }
    assert!(
        refills > 20,
        "the batches must have been refilled concurrently ({refills})"
    );
    assert_eq!(
        free(&services[0], &category),
        before - drawn.len() as u64,
        "close must push back every ID not handed out, prefetched batches included"
    );
}

/// The server goes away while a batch is held: the background refill fails, yet every local ID
/// is still handed out; the error comes only with the first call that finds none left, and once
/// the server is back the source refills again.
#[test]
fn a_failed_refill_surfaces_only_when_the_local_ids_run_out() {
    support::init_tracing();
    let zk = ZkServer::start();
    let service = connect(&zk.connect_string(), Duration::from_secs(2));
    let category = IdCategory::new("/prefetch/down").unwrap();
    service
        .create_category(&category, &CategorySpec::new(1, LAST))
        .unwrap();
    let options = SourceOptions {
        initial_batch: 200,
        min_batch: 200,
        max_batch: 200,
        retry_refill_after: Duration::from_secs(60),
        ..SourceOptions::default()
    };
    let source = IdSource::open(&service, &category, options).unwrap();
    zk.stop();
    let mut drawn = HashSet::new();
    for _ in 0..100 {
        assert!(drawn.insert(source.next().unwrap()));
    }
    // The refill started at 10% used must have failed by now, with the server down.
    assert!(
        wait_until(Duration::from_secs(20), || source.stats().refill_failures
            >= 1),
        "the background refill never failed: {:?}",
        source.stats()
    );
    let before_run_out = source.stats();
    assert_eq!(before_run_out.local, 100, "{before_run_out:?}");
    assert_eq!(before_run_out.waits, 0);
    // The failure does not surface while local IDs remain.
    for _ in 0..100 {
        assert!(drawn.insert(source.next().unwrap()));
    }
    let started = Instant::now();
    let err = source.next().unwrap_err();
    eprintln!(
        "after the local IDs ran out: {err} (after {:?})",
        started.elapsed()
    );
    // The refill's write may have been on the wire when the server died: then whether it
    // applied is unknown and its IDs are named as leaked.
    let leaked: u64 = match &err {
        ZooidError::ConnectionLost { .. } | ZooidError::Timeout { .. } => 0,
        ZooidError::OutcomeUnknown { ids, .. } => ids.iter().map(|r| r.len()).sum(),
        other => panic!("unexpected error {other:?}"),
    };
    // The stored error was reported at once, without a new wait on the dead server.
    assert!(started.elapsed() < Duration::from_secs(1));
    zk.restart();
    let id = source.next().unwrap();
    assert!(drawn.insert(id), "ID {id} handed out twice");
    // A refill in doubt makes every close report it (its IDs may be leaked), after the push.
    let refill_in_doubt = matches!(err, ZooidError::OutcomeUnknown { .. });
    match source.close() {
        Ok(()) => assert!(!refill_in_doubt, "a close after a refill in doubt reported Ok"),
        Err(ZooidError::OutcomeUnknown { .. }) if refill_in_doubt => {}
        Err(other) => panic!("close: {other:?} (the refill's error: {err:?})"),
    }
    let info = service.pool_info(&category).unwrap();
    let mut pool = zooid::RangeSet::new();
    pool.insert_all(&info.free).unwrap();
    assert!(
        drawn.iter().all(|&id| !pool.contains(id)),
        "a drawn ID is free"
    );
    let expected = LAST as u64 - drawn.len() as u64;
    assert!(
        (expected - leaked..=expected).contains(&info.free_count),
        "free {} expected {expected} (up to {leaked} leaked)",
        info.free_count
    );
}

/// Closes while the server is down. The first close's push fails; a second close started while
/// it pushes waits for it and fails too (it used to find nothing left and return `Ok` with no ID
/// pushed back). With the server gone the push is usually in doubt (`OutcomeUnknown`: it may
/// have been written before the connection went), and every later close says so again; when it
/// was refused instead, the source keeps the IDs and, dropped once the server is back, pushes
/// them back (the unit test `a_close_during_a_failed_close_fails_too_and_the_drop_pushes_the_ids_back`
/// forces that case).
#[test]
fn a_close_during_a_failed_close_does_not_report_ok() {
    support::init_tracing();
    let zk = ZkServer::start();
    let service = connect(&zk.connect_string(), Duration::from_secs(2));
    let category = IdCategory::new("/prefetch/failed-close").unwrap();
    service
        .create_category(&category, &CategorySpec::new(1, LAST))
        .unwrap();
    let options = SourceOptions {
        initial_batch: 100,
        min_batch: 100,
        max_batch: 100,
        retry_refill_after: Duration::from_secs(60),
        ..SourceOptions::default()
    };
    let source = IdSource::open(&service, &category, options).unwrap();
    let drawn: Vec<i64> = (0..5).map(|_| source.next().unwrap()).collect();
    assert_eq!(source.stats().refills, 1, "guard: no refill started");
    zk.stop();
    let (first, second) = thread::scope(|s| {
        let first = s.spawn(|| source.close());
        thread::sleep(Duration::from_millis(300));
        let second = s.spawn(|| source.close());
        (first.join().unwrap(), second.join().unwrap())
    });
    eprintln!("closes with the server down: {first:?}, {second:?}");
    assert!(first.is_err(), "guard: the server is down");
    assert!(
        second.is_err(),
        "a close while another one pushed reported Ok with no ID pushed back: {second:?}"
    );
    zk.restart();
    match &first {
        Err(ZooidError::OutcomeUnknown { ids, .. }) => {
            assert_eq!(ids.iter().map(|r| r.len()).sum::<u64>(), 95);
            assert_eq!(second, first, "the second close names the push in doubt");
            assert_eq!(source.close(), first, "a later close says it again");
            drop(source);
            let free = free(&service, &category);
            assert!(
                (LAST as u64 - 100..=LAST as u64 - 5).contains(&free),
                "{free} free"
            );
        }
        _ => {
            assert_eq!(source.stats().local, 95, "the failed closes kept the IDs");
            drop(source);
            assert!(
                wait_until(Duration::from_secs(20), || free(&service, &category)
                    == LAST as u64 - drawn.len() as u64),
                "the source dropped after its failed close did not push its IDs back: {} free",
                free(&service, &category)
            );
        }
    }
}

/// Fast consumption doubles the batch up to the maximum; slow consumption halves it down to the
/// minimum.
#[test]
fn batch_size_follows_the_consumption_rate() {
    support::init_tracing();
    let zk = ZkServer::start();
    let service = connect(&zk.connect_string(), Duration::from_secs(30));
    let category = IdCategory::new("/prefetch/adaptive").unwrap();
    service
        .create_category(&category, &CategorySpec::new(1, LAST))
        .unwrap();

    let fast = IdSource::open(
        &service,
        &category,
        SourceOptions {
            initial_batch: 100,
            min_batch: 50,
            max_batch: 6_400,
            target_batch_duration: Duration::from_secs(10),
            ..SourceOptions::default()
        },
    )
    .unwrap();
    for _ in 0..30_000 {
        fast.next().unwrap();
    }
    let stats = fast.stats();
    eprintln!("fast consumption: batches {:?}", stats.batches);
    assert!(stats.batches.windows(2).all(|w| w[1] >= w[0]), "{stats:?}");
    assert_eq!(stats.batches.iter().max(), Some(&6_400), "{stats:?}");
    fast.close().unwrap();

    let slow = IdSource::open(
        &service,
        &category,
        SourceOptions {
            initial_batch: 800,
            min_batch: 100,
            max_batch: 6_400,
            target_batch_duration: Duration::from_millis(100),
            ..SourceOptions::default()
        },
    )
    .unwrap();
    // About 1 ID per millisecond: a batch of 800 would last 800 ms, over twice the target.
    let mut sizes = Vec::new();
    while sizes.len() < 4 || *sizes.last().unwrap() > 100 {
        slow.next().unwrap();
        thread::sleep(Duration::from_millis(1));
        sizes = slow.stats().batches;
        assert!(
            sizes.len() < 10,
            "the batch never shrank to the minimum: {sizes:?}"
        );
    }
    eprintln!("slow consumption: batches {sizes:?}");
    assert_eq!(sizes, vec![800, 400, 200, 100]);
    assert_eq!(slow.stats().waits, 0, "a slow consumer must never wait");
    slow.close().unwrap();
}

/// A refill whose reply is lost is resolved (its batch is used, not leaked), and a partition
/// longer than the session timeout costs nothing: the local IDs keep flowing without a wait while
/// ZooKeeper is unreachable, and the refills carry on with the new session. After close, the pool
/// lacks exactly the IDs drawn.
#[test]
fn lost_refill_reply_and_session_expiry_lose_no_id() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let connect_options = ConnectOptions {
        session_timeout: Duration::from_secs(2),
        digest_auth: None,
        ..ConnectOptions::default()
    };
    let service = IdGeneratorService::connect(
        &proxy.connect_string(),
        &connect_options,
        ServiceOptions::default(),
    )
    .unwrap();
    let category = IdCategory::new("/prefetch/lossy").unwrap();
    // The single-node layout: a refill is one setData, whose reply the proxy drops.
    service
        .create_category(&category, &CategorySpec::new(1, LAST).single_node())
        .unwrap();
    let session = service.zookeeper().unwrap();
    let first_generation = session.status().generation;
    let options = SourceOptions {
        initial_batch: 100,
        min_batch: 100,
        max_batch: 100,
        ..SourceOptions::default()
    };
    let source = IdSource::open(&service, &category, options).unwrap();
    let mut drawn = HashSet::new();

    proxy.drop_reply_to(op::SET_DATA, "/prefetch/lossy");
    for _ in 0..1_000 {
        assert!(drawn.insert(source.next().unwrap()), "an ID twice");
    }
    assert_eq!(
        proxy.dropped_replies(),
        1,
        "the refill's reply must have been lost"
    );

    // Let the prefetch land, then partition for longer than the session timeout.
    assert!(wait_until(Duration::from_secs(10), || source.stats().local >= 100));
    let before = source.stats();
    proxy.blackhole_then_close(Duration::from_secs(5));
    for _ in 0..before.local {
        assert!(drawn.insert(source.next().unwrap()), "an ID twice");
    }
    assert_eq!(
        source.stats().waits,
        before.waits,
        "no wait while local IDs remain, ZooKeeper unreachable"
    );
    for _ in 0..1_000 {
        assert!(drawn.insert(source.next().unwrap()), "an ID twice");
    }
    assert!(proxy.stats().blackholes >= 1);
    assert!(
        session.status().generation > first_generation,
        "the session expired and was replaced"
    );
    source.close().unwrap();
    assert_eq!(free(&service, &category), LAST as u64 - drawn.len() as u64);
}
