//! An operation's deadline (`RetryPolicy::deadline`, "the longest time one operation may take,
//! retries included") also covers the time it waits behind other operations of the same service
//! on the same category, which are serialized within the process.
//!
//! Found by the fault suite (tests/faults.rs, quorum lost): with two threads per process, takes
//! with a 3 s deadline returned after 7.4 s, because each waited for the other's failing take
//! before its own budget started.

use zooid::CategorySpec;
use zooid_test_support as support;

use std::time::{Duration, Instant};

use support::ZkServer;
use zooid::{
    ConnectOptions, IdCategory, IdGeneratorService, RetryPolicy, ServiceOptions, ZooidError,
};

#[test]
fn queued_operations_fail_within_their_deadline() {
    support::init_tracing();
    let zk = ZkServer::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let deadline = Duration::from_secs(2);
        let session = Duration::from_secs(1);
        let connect = ConnectOptions {
            session_timeout: session,
            digest_auth: None,
            ..ConnectOptions::default()
        };
        let admin =
            IdGeneratorService::connect(&zk.connect_string(), &connect, ServiceOptions::default())
                .await
                .unwrap();
        let cat = IdCategory::new("/deadline/ids").unwrap();
        admin
            .create_category(&cat, &CategorySpec::new(1, 1_000_000))
            .await
            .unwrap();
        drop(admin);

        // A service that has not read the category yet, so its takes start with a read (no
        // write is ever in flight, no lost reply to resolve).
        let svc = IdGeneratorService::connect(
            &zk.connect_string(),
            &connect,
            ServiceOptions {
                retry: RetryPolicy {
                    deadline,
                    ..RetryPolicy::default()
                },
                ..ServiceOptions::default()
            },
        )
        .await
        .unwrap();
        zk.kill();

        let started = Instant::now();
        let take = || async {
            let result = svc.take_ids(&cat, 10).await;
            (result, started.elapsed())
        };
        let (a, b, c) = tokio::join!(take(), take(), take());
        // The deadline, plus one request already in flight when it passed (bounded by the
        // session timeout), plus scheduling slack.
        let limit = deadline + session + Duration::from_millis(1500);
        eprintln!("elapsed: {:?} {:?} {:?}", a.1, b.1, c.1);
        for (result, elapsed) in [a, b, c] {
            let err = result.expect_err("the server is down");
            assert!(
                matches!(
                    err,
                    ZooidError::ConnectionLost { .. } | ZooidError::Timeout { .. }
                ),
                "{err:?}"
            );
            assert!(
                elapsed <= limit,
                "a take with a {deadline:?} deadline returned after {elapsed:?} ({err})"
            );
        }
    });
}
