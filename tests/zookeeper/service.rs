//! The service against a real ZooKeeper server: the behaviour suite, lost replies through a
//! fault-injecting proxy, session expiry, digest auth and chroot connect strings.

use zooid::CategorySpec;
use zooid_test_support as support;

use std::time::Duration;

use support::{op, runtime, session_options, FaultProxy, ResetPoint, ZkServer};
use zooid::{ConnectOptions, IdCategory, IdGeneratorService, IdRange, ServiceOptions, ZooidError};
use zooid_test_support::behaviour::{self, Ctx};

fn r(start: i64, end: i64) -> IdRange {
    IdRange::new(start, end).unwrap()
}

/// The ZooKeeper session a service is using.
async fn session_of(svc: &IdGeneratorService) -> i64 {
    match svc.store() {
        zooid::AnyStore::ZooKeeper(zk) => zk.session_id().await,
        _ => panic!("not a ZooKeeper store"),
    }
}

/// Opens a service on `connect` with the given session timeout.
async fn open(connect: &str, session_ms: u64, options: ServiceOptions) -> IdGeneratorService {
    IdGeneratorService::connect(connect, &session_options(session_ms), options)
        .await
        .unwrap()
}

/// Every case of the behaviour suite, on one server (each case in its own subtree).
#[test]
fn behaviour_suite_on_zookeeper() {
    support::init_tracing();
    let zk = ZkServer::start();
    let rt = runtime();
    for case in behaviour::CASES {
        let ctx = Ctx {
            connect: zk.connect_string(),
            prefix: format!("/behaviour/{case}"),
        };
        eprintln!("case {case}");
        rt.block_on(behaviour::run(case, &ctx));
    }
}

/// Replies lost on the wire after the server applied the write: the take returns its own IDs
/// (none leaked), the push is not applied twice.
#[test]
fn real_lost_replies_are_resolved() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    rt.block_on(async {
        let svc = open(&proxy.connect_string(), 4000, ServiceOptions::default()).await;
        let cat = IdCategory::new("/lossy/did").unwrap();
        svc.create_category(&cat, &CategorySpec::new(1, 123456789).single_node())
            .await
            .unwrap();
        let mut warm = svc.take_ids(&cat, 10).await.unwrap();
        assert_eq!(warm.ranges(), vec![r(1, 10)]);

        proxy.drop_reply_to(op::SET_DATA, "/lossy/did");
        let taken = svc.take_ids(&cat, 10000).await.unwrap();
        assert_eq!(proxy.dropped_replies(), 1, "the fault must have happened");
        assert_eq!(
            taken.ranges(),
            vec![r(11, 10010)],
            "the applied take returns its own range"
        );
        assert_eq!(
            svc.pool_info(&cat).await.unwrap().free,
            vec![r(10011, 123456789)],
            "nothing leaked"
        );

        for _ in 0..5 {
            warm.take_id();
        }
        proxy.drop_reply_to(op::SET_DATA, "/lossy/did");
        svc.push_ids(&mut warm).await.unwrap();
        assert_eq!(proxy.dropped_replies(), 2);
        assert_eq!(
            svc.pool_info(&cat).await.unwrap().free,
            vec![r(6, 10), r(10011, 123456789)],
            "pushed exactly once"
        );

        // The request is reset before the server sees it: it is sent again and applies once.
        proxy.reset_on(op::SET_DATA, "/lossy/did", ResetPoint::BeforeRequest);
        let again = svc.take_ids(&cat, 100).await.unwrap();
        assert!(proxy.resets() >= 1);
        assert_eq!(again.ranges(), vec![r(6, 10), r(10011, 10105)]);
    });
}

/// After the session expires (the proxy holds the connection past the timeout), the service
/// opens a new session by itself and carries on without duplicates.
#[test]
fn service_survives_session_expiry() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    rt.block_on(async {
        let svc = open(&proxy.connect_string(), 2000, ServiceOptions::default()).await;
        let cat = IdCategory::new("/expiry/did").unwrap();
        svc.create_category(&cat, &CategorySpec::new(1, 1_000_000).single_node())
            .await
            .unwrap();
        let first = svc.take_ids(&cat, 100).await.unwrap();
        let session = session_of(&svc).await;
        proxy.blackhole_then_close(Duration::from_millis(5000));
        let second = svc.take_ids(&cat, 100).await.unwrap();
        let renewed = session_of(&svc).await;
        assert_ne!(session, renewed, "a new session was opened");
        assert!(proxy.stats().blackholes >= 1);
        assert_eq!(first.ranges(), vec![r(1, 100)]);
        assert_eq!(second.ranges(), vec![r(101, 200)]);
    });
}

/// A server that is down gives a clear error within the deadline, never a hang.
#[test]
fn server_down_is_a_clear_error() {
    support::init_tracing();
    let zk = ZkServer::start();
    let rt = runtime();
    rt.block_on(async {
        let retry = zooid::RetryPolicy {
            deadline: Duration::from_secs(3),
            ..Default::default()
        };
        let svc = IdGeneratorService::connect(
            &zk.connect_string(),
            &session_options(2000),
            ServiceOptions {
                retry,
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let cat = IdCategory::new("/down/did").unwrap();
        svc.create_category(&cat, &CategorySpec::new(1, 1000).single_node())
            .await
            .unwrap();
        zk.kill();
        let started = std::time::Instant::now();
        let err = svc.take_ids(&cat, 10).await.unwrap_err();
        assert!(
            matches!(
                err,
                ZooidError::ConnectionLost { .. }
                    | ZooidError::OutcomeUnknown { .. }
                    | ZooidError::Timeout { .. }
            ),
            "{err:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "took {:?}",
            started.elapsed()
        );
        let unreachable = IdGeneratorService::connect(
            &zk.connect_string(),
            &session_options(1000),
            ServiceOptions::default(),
        )
        .await;
        assert!(
            matches!(unreachable, Err(ZooidError::ConnectionLost { .. })),
            "{:?}",
            unreachable.err()
        );
    });
}

/// Digest auth and chroot connect strings reach the same pool.
#[test]
fn digest_auth_and_chroot() {
    support::init_tracing();
    let zk = ZkServer::start();
    let rt = runtime();
    rt.block_on(async {
        let auth = ConnectOptions {
            session_timeout: Duration::from_secs(5),
            digest_auth: Some(("app".into(), "s3cret".into())),
            ..ConnectOptions::default()
        };
        let svc =
            IdGeneratorService::connect(&zk.connect_string(), &auth, ServiceOptions::default())
                .await
                .unwrap();
        let cat = IdCategory::new("/secure/app/did").unwrap();
        svc.create_category(&cat, &CategorySpec::new(1, 1000).single_node())
            .await
            .unwrap();
        assert_eq!(svc.take_ids(&cat, 5).await.unwrap().ranges(), vec![r(1, 5)]);
        let anonymous = IdGeneratorService::connect(
            &zk.connect_string(),
            &session_options(5000),
            ServiceOptions::default(),
        )
        .await
        .unwrap();
        let denied = anonymous.take_ids(&cat, 5).await.unwrap_err();
        assert!(
            matches!(denied, ZooidError::NotAuthorized { .. }),
            "{denied:?}"
        );

        let chrooted = IdGeneratorService::connect(
            &format!("{}/secure", zk.connect_string()),
            &auth,
            ServiceOptions::default(),
        )
        .await
        .unwrap();
        let inner = IdCategory::new("/app/did").unwrap();
        assert_eq!(
            chrooted.take_ids(&inner, 5).await.unwrap().ranges(),
            vec![r(6, 10)]
        );
        let bad = IdGeneratorService::connect(
            "127.0.0.1:notaport",
            &session_options(1000),
            ServiceOptions::default(),
        )
        .await;
        assert!(bad.is_err());
    });
}
