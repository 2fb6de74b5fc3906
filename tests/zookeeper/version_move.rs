//! Single-node pools past ZooKeeper's 32-bit data version, against a real server: the pool node
//! moves to a fresh node (a new `czxid`) before its data version runs out, under contending
//! sessions, with a lost reply on the move itself, and with a category's own ACL. The threshold
//! is lowered by the test hook `ServiceOptions::move_at_version`.

use zooid::CategorySpec;
use zooid_test_support as support;

use std::collections::BTreeSet;

use support::proxy::op;
use support::{runtime, session_options, FaultProxy, ZkServer};
use zooid::format::Pool;
use zooid::{
    Acl, ConnectOptions, IdCategory, IdGeneratorService, IdRange, Perms, ServiceOptions, Store,
};

fn r(start: i64, end: i64) -> IdRange {
    IdRange::new(start, end).unwrap()
}

fn ids(ranges: &[IdRange]) -> impl Iterator<Item = i64> + '_ {
    ranges.iter().flat_map(|r| r.start()..=r.end())
}

fn moving_at(version: i32) -> ServiceOptions {
    ServiceOptions {
        move_at_version: version,
        ..ServiceOptions::default()
    }
}

async fn open(connect: &str, options: ServiceOptions) -> IdGeneratorService {
    IdGeneratorService::connect(connect, &session_options(6000), options)
        .await
        .unwrap()
}

/// (data version, czxid, pool) of the pool node, read after a `sync`.
async fn node(svc: &IdGeneratorService, cat: &IdCategory) -> (i32, i64, Pool) {
    svc.store().sync(cat.name()).await.unwrap();
    let node = svc.store().get(cat.name()).await.unwrap();
    (
        node.version,
        node.created,
        Pool::parse(cat.name(), &node.data).unwrap(),
    )
}

/// Six sessions take and push back on a single-node pool that moves every 20 writes: no ID is
/// handed out twice, every ID is held or free, and the pool version counts every write across
/// the moves (guard: the node was moved many times, its czxid changed).
#[test]
fn contending_sessions_across_many_moves_never_duplicate() {
    support::init_tracing();
    let zk = ZkServer::start();
    runtime().block_on(async {
        let cat = IdCategory::new("/moves/did").unwrap();
        let first = open(&zk.connect_string(), moving_at(20)).await;
        first
            .create_category(&cat, &CategorySpec::new(1, 100_000).single_node())
            .await
            .unwrap();
        let (_, created_at_first, _) = node(&first, &cat).await;
        let mut tasks = Vec::new();
        for task in 0..6 {
            let connect = zk.connect_string();
            let cat = cat.clone();
            tasks.push(tokio::spawn(async move {
                let svc = open(&connect, moving_at(20)).await;
                let (mut kept, mut writes) = (Vec::new(), 0u64);
                for round in 0..25 {
                    let mut set = svc.take_ids(&cat, 10).await.unwrap();
                    writes += 1;
                    for _ in 0..7 {
                        kept.push(set.take_id().unwrap());
                    }
                    if (round + task) % 2 == 0 {
                        svc.push_ids(&mut set).await.unwrap();
                        writes += 1;
                    } else {
                        while let Some(id) = set.take_id() {
                            kept.push(id);
                        }
                    }
                }
                (kept, writes)
            }));
        }
        let mut seen = BTreeSet::new();
        let mut writes = 1; // the create
        for task in tasks {
            let (kept, w) = task.await.unwrap();
            writes += w;
            for id in kept {
                assert!(seen.insert(id), "ID {id} handed out twice");
            }
        }
        let (version, created, pool) = node(&first, &cat).await;
        for id in ids(pool.free().ranges()) {
            assert!(seen.insert(id), "ID {id} free and handed out");
        }
        assert_eq!(seen.len(), 100_000, "every ID held or free");
        // Every successful write produced one pool version: (writes - 1) after the create's 0.
        assert_eq!(pool.version_at(version), writes as i64 - 1);
        let moves = pool.offset() / 21;
        eprintln!(
            "{writes} writes; pool version {}; offset {}; data version {version}",
            pool.version_at(version),
            pool.offset()
        );
        assert!(pool.offset() > 0 && version < 21, "the node moved");
        assert!(
            moves >= 5,
            "moved at least 5 times (offset {})",
            pool.offset()
        );
        assert_ne!(created, created_at_first, "a fresh node (czxid)");
    });
}

/// The reply to the move's `multi` is lost on the wire after the server applied it: the take
/// finds its write in the carried log and returns its own IDs; nothing is leaked or moved twice.
#[test]
fn a_lost_reply_on_the_move_is_resolved_from_the_carried_log() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    runtime().block_on(async {
        let cat = IdCategory::new("/moved/lossy").unwrap();
        let svc = open(&proxy.connect_string(), moving_at(3)).await;
        svc.create_category(&cat, &CategorySpec::new(1, 1000).single_node())
            .await
            .unwrap();
        for _ in 0..3 {
            svc.take_ids(&cat, 10).await.unwrap();
        }
        let (version, before, _) = node(&svc, &cat).await;
        assert_eq!(version, 3);
        proxy.drop_reply_to(op::MULTI, "/moved/lossy");
        let taken = svc.take_ids(&cat, 10).await.unwrap();
        assert_eq!(proxy.dropped_replies(), 1, "the move's reply was lost");
        assert_eq!(taken.ranges(), vec![r(31, 40)], "its own IDs");
        let (version, after, pool) = node(&svc, &cat).await;
        assert_ne!(after, before, "moved to a fresh node");
        assert_eq!((version, pool.offset()), (0, 4), "moved once");
        assert_eq!(pool.free().ranges(), vec![r(41, 1000)], "nothing leaked");
        let stats = svc.stats();
        assert_eq!(
            (
                stats.lost_applied,
                stats.lost_not_applied,
                stats.lost_unknown
            ),
            (1, 0, 0)
        );
    });
}

/// A category with its own ACL keeps it across the move: its user goes on taking, and another
/// identity is still refused.
#[test]
fn a_moved_category_keeps_its_acl() {
    support::init_tracing();
    let zk = ZkServer::start();
    runtime().block_on(async {
        let app = ConnectOptions {
            digest_auth: Some(("app".into(), "app-pw-7".into())),
            ..session_options(6000)
        };
        let svc = IdGeneratorService::connect(&zk.connect_string(), &app, moving_at(2))
            .await
            .unwrap();
        let cat = IdCategory::new("/moved/acl").unwrap();
        let acl = [
            Acl::digest("app", "app-pw-7", Perms::ALL),
            Acl::world_read(),
        ];
        svc.create_category(&cat, &CategorySpec::new(1, 100).acl(acl.clone()))
            .await
            .unwrap();
        let session = svc.zookeeper().unwrap().clone();
        let acl_of = || async {
            use zooid::zk::ZooKeeperExt;
            session
                .get_acl(session.generation(), cat.name())
                .await
                .unwrap()
        };
        let before = acl_of().await;
        let (_, created, _) = node(&svc, &cat).await;
        for _ in 0..4 {
            svc.take_ids(&cat, 5).await.unwrap();
        }
        let (version, moved, pool) = node(&svc, &cat).await;
        assert!(
            pool.offset() > 0 && moved != created,
            "moved (version {version})"
        );
        assert_eq!(acl_of().await, before, "the ACL went with the node");
        let intruder = IdGeneratorService::connect(
            &zk.connect_string(),
            &ConnectOptions {
                digest_auth: Some(("intruder".into(), "x".into())),
                ..session_options(6000)
            },
            ServiceOptions::default(),
        )
        .await
        .unwrap();
        assert!(matches!(
            intruder.take_ids(&cat, 1).await,
            Err(zooid::ZooidError::NotAuthorized { .. })
        ));
    });
}
