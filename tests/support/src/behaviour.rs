//! The behaviour every store must show, written once and run against the in-memory store, the
//! file store and a real ZooKeeper server.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use zooid::CategorySpec;

use zooid::format::Pool;
use zooid::store::AnyStore;
use zooid::{
    ConnectOptions, IdCategory, IdGeneratorService, IdRange, IdSet, ServiceOptions, Store,
    ZooidError,
};

use crate::faulty::{Fault, FaultyStore};

/// Where a case runs: a connect string, and a fresh category path per case.
pub struct Ctx {
    pub connect: String,
    pub prefix: String,
}

fn r(start: i64, end: i64) -> IdRange {
    IdRange::new(start, end).unwrap()
}

fn ids_of(ranges: &[IdRange]) -> Vec<i64> {
    ranges.iter().flat_map(|r| r.start()..=r.end()).collect()
}

impl Ctx {
    pub fn category(&self, name: &str) -> IdCategory {
        IdCategory::new(format!("{}/{name}", self.prefix)).unwrap()
    }

    pub async fn service(&self, options: ServiceOptions) -> IdGeneratorService<AnyStore> {
        let connect = ConnectOptions {
            session_timeout: Duration::from_secs(5),
            digest_auth: None,
            ..ConnectOptions::default()
        };
        IdGeneratorService::connect(&self.connect, &connect, options)
            .await
            .expect("connect")
    }

    pub async fn faulty(
        &self,
        options: ServiceOptions,
    ) -> IdGeneratorService<FaultyStore<AnyStore>> {
        let connect = ConnectOptions {
            session_timeout: Duration::from_secs(5),
            digest_auth: None,
            ..ConnectOptions::default()
        };
        let store = AnyStore::open(&self.connect, &connect)
            .await
            .expect("open store");
        IdGeneratorService::with_store(FaultyStore::new(store), options)
    }
}

async fn free_of<S: Store>(svc: &IdGeneratorService<S>, cat: &IdCategory) -> Vec<IdRange> {
    svc.pool_info(cat).await.unwrap().free
}

/// The seed's worked example, to the ID.
pub async fn worked_example(ctx: &Ctx) {
    let svc = ctx.service(ServiceOptions::default()).await;
    let cat = ctx.category("did");
    svc.create_category(&cat, &CategorySpec::new(1, 123456789))
        .await
        .unwrap();
    let mut sets = Vec::new();
    for _ in 0..3 {
        sets.push(svc.take_ids(&cat, 10000).await.unwrap());
    }
    assert_eq!(
        sets.iter().map(|s| s.ranges()).collect::<Vec<_>>(),
        vec![
            vec![r(1, 10000)],
            vec![r(10001, 20000)],
            vec![r(20001, 30000)]
        ]
    );
    assert_eq!(free_of(&svc, &cat).await, vec![r(30001, 123456789)]);
    for set in &mut sets {
        for _ in 0..9000 {
            set.take_id().unwrap();
        }
        svc.push_ids(set).await.unwrap();
        assert!(!set.has_more_ids(), "a pushed set is emptied");
    }
    assert_eq!(
        free_of(&svc, &cat).await,
        vec![r(9001, 10000), r(19001, 20000), r(29001, 123456789)]
    );
    let mut next = svc.take_ids(&cat, 10000).await.unwrap();
    let handed: Vec<i64> = std::iter::from_fn(|| next.take_id()).collect();
    let expected: Vec<i64> = (9001..=10000)
        .chain(19001..=20000)
        .chain(29001..=30000)
        .chain(30001..=37000)
        .collect();
    assert_eq!(handed, expected);
    assert_eq!(free_of(&svc, &cat).await, vec![r(37001, 123456789)]);
}

/// Categories exist only when created; creating never resets an existing pool.
pub async fn categories_are_explicit(ctx: &Ctx) {
    let svc = ctx.service(ServiceOptions::default()).await;
    let cat = ctx.category("explicit");
    assert!(matches!(
        svc.take_ids(&cat, 5).await,
        Err(ZooidError::NotFound { .. })
    ));
    let mut stray = IdSet::new(cat.clone(), vec![r(1, 5)]);
    assert!(matches!(
        svc.push_ids(&mut stray).await,
        Err(ZooidError::NotFound { .. })
    ));
    assert!(
        matches!(svc.pool_info(&cat).await, Err(ZooidError::NotFound { .. })),
        "a failed take must not create the node"
    );
    for (first, last) in [(0, 10), (-5, 10), (10, 9)] {
        assert!(matches!(
            svc.create_category(&cat, &CategorySpec::new(first, last))
                .await,
            Err(ZooidError::InvalidArgument(_))
        ));
    }
    svc.create_category(&cat, &CategorySpec::new(1000, 4294967295))
        .await
        .unwrap();
    svc.take_ids(&cat, 10).await.unwrap();
    assert!(matches!(
        svc.create_category(&cat, &CategorySpec::new(1, 100)).await,
        Err(ZooidError::CategoryExists { .. })
    ));
    assert_eq!(
        free_of(&svc, &cat).await,
        vec![r(1010, 4294967295)],
        "re-creating must not reset the pool"
    );
    let default_wide = ctx.category("wide");
    svc.create_category(&default_wide, &CategorySpec::new(1, i64::MAX))
        .await
        .unwrap();
    assert_eq!(
        svc.take_ids(&default_wide, 3).await.unwrap().ranges(),
        vec![r(1, 3)]
    );
}

/// Partial takes, exhaustion and bad counts.
pub async fn takes_until_exhausted(ctx: &Ctx) {
    let svc = ctx.service(ServiceOptions::default()).await;
    let cat = ctx.category("small");
    svc.create_category(&cat, &CategorySpec::new(1, 25))
        .await
        .unwrap();
    assert!(matches!(
        svc.take_ids(&cat, 0).await,
        Err(ZooidError::InvalidArgument(_))
    ));
    assert!(matches!(
        svc.take_ids(&cat, u64::MAX).await,
        Err(ZooidError::InvalidArgument(_))
    ));
    assert_eq!(svc.take_ids(&cat, 10).await.unwrap().count_ids(), 10);
    let rest = svc.take_ids(&cat, 100).await.unwrap();
    assert_eq!(
        rest.ranges(),
        vec![r(11, 25)],
        "fewer than asked when fewer remain"
    );
    assert!(matches!(
        svc.take_ids(&cat, 1).await,
        Err(ZooidError::Exhausted { .. })
    ));
    let mut back = IdSet::new(cat.clone(), vec![r(7, 8)]);
    svc.push_ids(&mut back).await.unwrap();
    assert_eq!(svc.take_ids(&cat, 5).await.unwrap().ranges(), vec![r(7, 8)]);
}

/// Bad pushes are rejected whole, with nothing changed.
pub async fn bad_pushes_change_nothing(ctx: &Ctx) {
    let svc = ctx.service(ServiceOptions::default()).await;
    let cat = ctx.category("pushes");
    svc.create_category(&cat, &CategorySpec::new(100, 1000))
        .await
        .unwrap();
    let mut taken = svc.take_ids(&cat, 50).await.unwrap();
    let before = svc.pool_info(&cat).await.unwrap();
    let mut outside = IdSet::new(cat.clone(), vec![r(120, 130), r(990, 1001)]);
    match svc.push_ids(&mut outside).await {
        Err(ZooidError::OutOfBounds { range, bounds, .. }) => {
            assert_eq!((range, bounds), (r(990, 1001), r(100, 1000)))
        }
        other => panic!("expected OutOfBounds, got {other:?}"),
    }
    assert_eq!(outside.count_ids(), 23, "a rejected set keeps its IDs");
    let mut double = IdSet::new(cat.clone(), vec![r(120, 130), r(149, 150)]);
    match svc.push_ids(&mut double).await {
        Err(ZooidError::AlreadyFree { range, .. }) => assert_eq!(range, r(149, 150)),
        other => panic!("expected AlreadyFree, got {other:?}"),
    }
    assert_eq!(
        svc.pool_info(&cat).await.unwrap(),
        before,
        "rejected pushes leave the node untouched"
    );
    svc.push_ids(&mut taken).await.unwrap();
    let mut again = IdSet::new(cat.clone(), vec![r(100, 149)]);
    assert!(matches!(
        svc.push_ids(&mut again).await,
        Err(ZooidError::AlreadyFree { .. })
    ));
    let mut empty = IdSet::new(cat.clone(), vec![]);
    svc.push_ids(&mut empty).await.unwrap();
    assert_eq!(free_of(&svc, &cat).await, vec![r(100, 1000)]);
}

/// A node that cannot be parsed is reported with its line and never overwritten.
pub async fn corrupt_pools_are_never_overwritten(ctx: &Ctx) {
    let svc = ctx.service(ServiceOptions::default()).await;
    let cat = ctx.category("corrupt");
    let garbage = b"#zooid 1\n#bounds 1:1000\n10:20\n15:30\n".to_vec();
    svc.store().create(cat.name(), &garbage).await.unwrap();
    match svc.take_ids(&cat, 5).await {
        Err(ZooidError::CorruptPool { path, line, .. }) => {
            assert_eq!((path.as_str(), line), (cat.name(), 4))
        }
        other => panic!("expected CorruptPool, got {other:?}"),
    }
    let mut push = IdSet::new(cat.clone(), vec![r(1, 2)]);
    assert!(matches!(
        svc.push_ids(&mut push).await,
        Err(ZooidError::CorruptPool { .. })
    ));
    let node = svc.store().get(cat.name()).await.unwrap();
    assert_eq!(
        (node.data, node.version),
        (garbage, 0),
        "the corrupt node is untouched"
    );
}

/// A node whose numbers leave no room for the next write (a pool version at the top of the
/// 64-bit range, an epoch whose generations would not fit) is refused as corrupt, never written
/// into a node nobody can read.
pub async fn numbers_without_room_are_refused(ctx: &Ctx) {
    let svc = ctx.service(ServiceOptions::default()).await;
    for (name, node, bad_line) in [
        ("offset", "#zooid 2\n#bounds 1:1000\n#offset 9223372036854775807\n1:1000\n", 3),
        ("offset-near", "#zooid 2\n#bounds 1:1000\n#offset 9223372036854775000\n1:1000\n", 3),
        ("epoch", "#zooid 2\n#bounds 1:1000\n#ceiling 1000\n#epoch 18446744073709551615\n1:1000\n", 4),
    ] {
        let cat = ctx.category(name);
        svc.store().create(cat.name(), node.as_bytes()).await.unwrap();
        match svc.take_ids(&cat, 1).await {
            Err(ZooidError::CorruptPool { line, .. }) => assert_eq!(line, bad_line, "{name}"),
            other => panic!("{name}: expected CorruptPool, got {other:?}"),
        }
        let after = svc.store().get(cat.name()).await.unwrap();
        assert_eq!(
            (String::from_utf8_lossy(&after.data).into_owned(), after.version),
            (node.to_string(), 0),
            "{name}: the node is untouched"
        );
    }
}

/// A pool in format 2 keeps its epoch across writes, whatever else it carries: a node with an
/// epoch, an offset of 0 and no ceiling (what FORMAT.md allows) is written back with its epoch.
pub async fn a_pool_keeps_its_epoch(ctx: &Ctx) {
    let a = ctx.service(ServiceOptions::default()).await;
    let b = ctx.service(ServiceOptions::default()).await;
    let cat = ctx.category("epoch");
    let node = "#zooid 2\n#bounds 1:1000\n#epoch 7\n#offset 0\n1:1000\n";
    a.store().create(cat.name(), node.as_bytes()).await.unwrap();
    a.take_ids(&cat, 1).await.unwrap();
    let written = String::from_utf8(a.store().get(cat.name()).await.unwrap().data).unwrap();
    assert!(written.contains("#epoch 7\n"), "the epoch was dropped: {written:?}");
    b.take_ids(&cat, 1).await.unwrap();
    a.take_ids(&cat, 1)
        .await
        .expect("a process that saw the pool before another's write takes again");
}

/// A negative ceiling is refused with nothing written (it was clamped to a ceiling of 0, which
/// stopped every take); a ceiling above the bounds is clamped to the last ID, and the call
/// returns the ceiling in force.
pub async fn ceilings_are_checked(ctx: &Ctx) {
    let svc = ctx.service(ServiceOptions::default()).await;
    let cat = ctx.category("ceiling");
    svc.create_category(&cat, &CategorySpec::new(1, 1000)).await.unwrap();
    let before = svc.store().get(cat.name()).await.unwrap();
    match svc.raise_ceiling(&cat, -1).await {
        Err(ZooidError::InvalidArgument(why)) => assert!(why.contains("-1"), "{why}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    let after = svc.store().get(cat.name()).await.unwrap();
    assert_eq!((after.data, after.version), (before.data, before.version));
    assert_eq!(svc.raise_ceiling(&cat, 10).await.unwrap(), 10);
    assert_eq!(svc.raise_ceiling(&cat, 5000).await.unwrap(), 1000);
    assert_eq!(svc.take_ids(&cat, 3).await.unwrap().ranges(), vec![r(1, 3)]);
}

/// A seed-style node (only start:end lines) is used as it is and upgraded on the first write.
pub async fn seed_style_nodes_work(ctx: &Ctx) {
    let svc = ctx.service(ServiceOptions::default()).await;
    let cat = ctx.category("legacy");
    svc.store()
        .create(
            cat.name(),
            b"9001:10000\n19001:20000\n29001:30000\n30001:123456789\n",
        )
        .await
        .unwrap();
    let set = svc.take_ids(&cat, 10000).await.unwrap();
    assert_eq!(
        set.ranges(),
        vec![r(9001, 10000), r(19001, 20000), r(29001, 37000)]
    );
    let info = svc.pool_info(&cat).await.unwrap();
    assert_eq!(
        (info.free, info.legacy, info.bounds),
        (vec![r(37001, 123456789)], false, r(1, 123456789))
    );
}

/// Pushes that would outgrow the node's size limit fail whole; takes still work at the cap.
pub async fn pool_size_is_capped(ctx: &Ctx) {
    let options = ServiceOptions {
        max_pool_bytes: 2048,
        op_log_len: 4,
        ..ServiceOptions::default()
    };
    let svc = ctx.service(options).await;
    let cat = ctx.category("fragmented");
    // The cap is the single-node layout's: format 4 keeps holes in nodes of their own.
    svc.create_category(&cat, &CategorySpec::new(1, 1_000_000).single_node())
        .await
        .unwrap();
    let mut all = svc.take_ids(&cat, 100_000).await.unwrap();
    let mut pushed = 0;
    let full = loop {
        // Every other ID back: each push adds a separate range.
        let id = 2 * pushed + 1;
        let mut one = IdSet::new(cat.clone(), vec![r(id, id)]);
        match svc.push_ids(&mut one).await {
            Ok(()) => pushed += 1,
            Err(err) => break err,
        }
        assert!(pushed < 1000, "the cap never hit");
    };
    assert!(
        matches!(full, ZooidError::PoolFull { limit: 2048, .. }),
        "{full:?}"
    );
    let info = svc.pool_info(&cat).await.unwrap();
    assert!(info.bytes <= 2048, "node is {} bytes", info.bytes);
    assert_eq!(
        info.free_count,
        900_000 + pushed as u64,
        "the failed push changed nothing"
    );
    // Takes never grow the node, so they go on working at the cap.
    let refill = svc.take_ids(&cat, 3).await.unwrap();
    assert_eq!(refill.ranges(), vec![r(1, 1), r(3, 3), r(5, 5)]);
    all.take_id();
}

/// Two services (two sessions, like two processes) interleave and conflict without duplicates.
pub async fn concurrent_services_never_duplicate(ctx: &Ctx) {
    let a = Arc::new(ctx.service(ServiceOptions::default()).await);
    let b = Arc::new(ctx.service(ServiceOptions::default()).await);
    let cat = ctx.category("busy");
    a.create_category(&cat, &CategorySpec::new(1, 1_000_000))
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for worker in 0..8u64 {
        let svc = if worker % 2 == 0 {
            Arc::clone(&a)
        } else {
            Arc::clone(&b)
        };
        let cat = cat.clone();
        tasks.push(tokio::spawn(async move {
            let mut used = Vec::new();
            for round in 0..15u64 {
                let mut set = svc
                    .take_ids(&cat, 10 + (worker * 7 + round) % 40)
                    .await
                    .unwrap();
                let keep = set.count_ids() / 2;
                for _ in 0..keep {
                    used.push(set.take_id().unwrap());
                }
                svc.push_ids(&mut set).await.unwrap();
            }
            used
        }));
    }
    let mut used = Vec::new();
    for task in tasks {
        used.extend(task.await.unwrap());
    }
    let unique: BTreeSet<i64> = used.iter().copied().collect();
    assert_eq!(unique.len(), used.len(), "an ID was handed out twice");
    let info = a.pool_info(&cat).await.unwrap();
    let free: BTreeSet<i64> = ids_of(&info.free)
        .into_iter()
        .filter(|id| *id < 10_000)
        .collect();
    assert!(free.is_disjoint(&unique), "a used ID is still free");
    assert_eq!(
        info.free_count + used.len() as u64,
        1_000_000,
        "conservation: used + free = category"
    );
}

/// Lost replies after the write applied: the take returns its IDs, the push is not repeated.
pub async fn lost_replies_are_resolved(ctx: &Ctx) {
    let svc = ctx.faulty(ServiceOptions::default()).await;
    let cat = ctx.category("lossy");
    svc.create_category(&cat, &CategorySpec::new(1, 1000))
        .await
        .unwrap();

    svc.store().arm(Fault::LoseReplyAfterApply);
    let mut first = svc.take_ids(&cat, 100).await.unwrap();
    assert_eq!(
        first.ranges(),
        vec![r(1, 100)],
        "the applied take hands out its own range"
    );
    assert_eq!(
        free_of(&svc, &cat).await,
        vec![r(101, 1000)],
        "taken once, nothing leaked"
    );

    svc.store().arm(Fault::LoseRequest);
    assert_eq!(
        svc.take_ids(&cat, 100).await.unwrap().ranges(),
        vec![r(101, 200)]
    );

    for _ in 0..50 {
        first.take_id();
    }
    svc.store().arm(Fault::LoseReplyAfterApply);
    svc.push_ids(&mut first).await.unwrap();
    assert_eq!(
        free_of(&svc, &cat).await,
        vec![r(51, 100), r(201, 1000)],
        "pushed once, not twice"
    );

    // Others write between the lost reply and the resolution: the log still names our write.
    svc.store().arm(Fault::LoseReplyThenOthersWrite(3));
    assert_eq!(
        svc.take_ids(&cat, 10).await.unwrap().ranges(),
        vec![r(51, 60)]
    );
    assert_eq!(
        free_of(&svc, &cat).await,
        vec![r(64, 100), r(201, 1000)],
        "others took 61, 62, 63"
    );

    // Others win the version our lost request expected: it can never apply, so retry afresh.
    svc.store().arm(Fault::OthersWriteThenLoseRequest(2));
    assert_eq!(
        svc.take_ids(&cat, 10).await.unwrap().ranges(),
        vec![r(66, 75)]
    );
    assert_eq!(
        svc.store().injected.load(Ordering::SeqCst),
        5,
        "every fault fired"
    );
}

/// When the operation log no longer reaches back to the lost write, the take's IDs are leaked
/// (named in the error) and never handed out; the push is not repeated.
pub async fn unresolvable_outcomes_leak_never_duplicate(ctx: &Ctx) {
    let options = ServiceOptions {
        op_log_len: 2,
        ..ServiceOptions::default()
    };
    let svc = ctx.faulty(options).await;
    svc.store().foreign_log_len.store(2, Ordering::SeqCst);
    let cat = ctx.category("unknown");
    svc.create_category(&cat, &CategorySpec::new(1, 1000))
        .await
        .unwrap();
    svc.store().arm(Fault::LoseReplyThenOthersWrite(3));
    match svc.take_ids(&cat, 100).await {
        Err(ZooidError::OutcomeUnknown {
            ids,
            op: zooid::WriteOp::Take,
            ..
        }) => assert_eq!(ids, vec![r(1, 100)]),
        other => panic!("expected OutcomeUnknown, got {other:?}"),
    }
    let info = svc.pool_info(&cat).await.unwrap();
    assert_eq!(
        info.free,
        vec![r(104, 1000)],
        "leaked 1-100, others hold 101-103, nothing handed twice"
    );
    let next = svc.take_ids(&cat, 5).await.unwrap();
    assert_eq!(next.ranges(), vec![r(104, 108)]);

    // The others' takes consume every pushed ID, so the free list cannot tell either.
    let mut back = IdSet::new(cat.clone(), vec![r(50, 51)]);
    svc.store().arm(Fault::LoseReplyThenOthersWrite(3));
    match svc.push_ids(&mut back).await {
        Err(ZooidError::OutcomeUnknown {
            ids,
            op: zooid::WriteOp::Push,
            ..
        }) => assert_eq!(ids, vec![r(50, 51)]),
        other => panic!("expected OutcomeUnknown, got {other:?}"),
    }
    assert!(!back.has_more_ids(), "an unresolved push is never repeated");
}

/// Past the operation log, the free list still tells a lost write's outcome whenever one of
/// its IDs is free: a take that applied would have removed them all, a push that did not apply
/// would have left them all with its author.
pub async fn free_list_resolves_past_the_log(ctx: &Ctx) {
    let options = ServiceOptions {
        op_log_len: 2,
        ..ServiceOptions::default()
    };
    let svc = ctx.faulty(options).await;
    svc.store().foreign_log_len.store(2, Ordering::SeqCst);
    let cat = ctx.category("past-log");
    svc.create_category(&cat, &CategorySpec::new(1, 1000))
        .await
        .unwrap();
    // The take never arrived; three others took 1, 2, 3; 4-100 are still free: not applied.
    svc.store().arm(Fault::OthersWriteThenLoseRequest(3));
    assert_eq!(
        svc.take_ids(&cat, 100).await.unwrap().ranges(),
        vec![r(4, 103)]
    );
    // The push applied; the others took 4, 5, 6 of it; 7-20 are free: applied, not repeated.
    let mut back = IdSet::new(cat.clone(), vec![r(4, 20)]);
    svc.store().arm(Fault::LoseReplyThenOthersWrite(3));
    svc.push_ids(&mut back).await.unwrap();
    assert!(!back.has_more_ids());
    assert_eq!(
        free_of(&svc, &cat).await,
        vec![r(7, 20), r(104, 1000)],
        "pushed once"
    );
    assert_eq!(svc.store().injected.load(Ordering::SeqCst), 2);
}

/// The pool node as the store holds it: (data version, incarnation, pool).
async fn node_of<S: Store>(
    svc: &IdGeneratorService<FaultyStore<S>>,
    cat: &IdCategory,
) -> (i32, i64, Pool) {
    let node = svc.store().inner.get(cat.name()).await.unwrap();
    (
        node.version,
        node.created,
        Pool::parse(cat.name(), &node.data).unwrap(),
    )
}

/// Takes of 10 until the node is at data version `version`; returns what they took.
async fn take_until<S: Store>(
    svc: &IdGeneratorService<FaultyStore<S>>,
    cat: &IdCategory,
    version: i32,
) -> Vec<IdRange> {
    let mut taken = Vec::new();
    while node_of(svc, cat).await.0 < version {
        taken.extend(Box::pin(svc.take_ids(cat, 10)).await.unwrap().ranges());
    }
    assert_eq!(node_of(svc, cat).await.0, version, "stopped at the version");
    taken
}

/// ZooKeeper's data version is 32-bit (and servers before 3.9.1 read -1 as "any"): a
/// single-node pool moves to a fresh node before it runs out (here at data version 4, lowered by
/// the test hook), its pool version and operation log going on, and lost replies across the
/// move are resolved like any other: every ID handed out once, none lost.
pub async fn pools_move_to_a_fresh_node_before_the_version_wraps(ctx: &Ctx) {
    let options = ServiceOptions {
        move_at_version: 4,
        ..ServiceOptions::default()
    };
    let svc = ctx.faulty(options.clone()).await;
    svc.store().foreign_move_at.store(4, Ordering::SeqCst);
    let cat = ctx.category("moves");
    svc.create_category(&cat, &CategorySpec::new(1, 1000))
        .await
        .unwrap();
    let (_, first_incarnation, _) = node_of(&svc, &cat).await;
    let mut handed = Box::pin(take_until(&svc, &cat, 4)).await;
    assert_eq!(handed, vec![r(1, 10), r(11, 20), r(21, 30), r(31, 40)]);

    // The take at the threshold moves the node: data version 0 again, pool version 5.
    handed.extend(Box::pin(svc.take_ids(&cat, 10)).await.unwrap().ranges());
    let (version, created, pool) = node_of(&svc, &cat).await;
    assert_eq!(
        (version, pool.offset(), pool.version_at(version)),
        (0, 5, 5)
    );
    assert_eq!(svc.store().replaces.load(Ordering::SeqCst), 1, "one move");
    if first_incarnation != 0 {
        assert_ne!(
            created, first_incarnation,
            "ZooKeeper made a new node (czxid)"
        );
    }
    let logged: Vec<i64> = pool.log().map(|op| op.version).collect();
    assert_eq!(
        logged,
        vec![0, 1, 2, 3, 4, 5],
        "the log goes on across the move"
    );
    assert!(
        String::from_utf8(svc.store().inner.get(cat.name()).await.unwrap().data)
            .unwrap()
            .starts_with("#zooid 2\n#bounds 1:1000\n#offset 5\n"),
        "a moved pool is format 2 with its offset"
    );

    // The move's reply is lost after it applied: found by the log, not moved twice.
    handed.extend(Box::pin(take_until(&svc, &cat, 4)).await);
    svc.store().arm(Fault::LoseReplyAfterApply);
    handed.extend(Box::pin(svc.take_ids(&cat, 10)).await.unwrap().ranges());
    assert_eq!(svc.store().replaces.load(Ordering::SeqCst), 2);
    // The move's request is lost: sent again (the node is still where it was), applied once.
    handed.extend(Box::pin(take_until(&svc, &cat, 4)).await);
    svc.store().arm(Fault::LoseRequest);
    handed.extend(Box::pin(svc.take_ids(&cat, 10)).await.unwrap().ranges());
    assert_eq!(svc.store().replaces.load(Ordering::SeqCst), 3);
    let (_, _, pool) = node_of(&svc, &cat).await;
    assert_eq!(pool.offset(), 15);

    // An ordinary write's reply is lost, then others write and move the node: the log, carried
    // into the new node, still names the write.
    handed.extend(Box::pin(take_until(&svc, &cat, 3)).await);
    svc.store().arm(Fault::LoseReplyThenOthersWrite(2));
    handed.extend(Box::pin(svc.take_ids(&cat, 10)).await.unwrap().ranges());
    assert_eq!(
        svc.store().replaces.load(Ordering::SeqCst),
        4,
        "the others moved"
    );
    // Others write (one of them moving the node) before a lost request could land: it can
    // never apply, and the log says another write won its version.
    handed.extend(Box::pin(take_until(&svc, &cat, 3)).await);
    svc.store().arm(Fault::OthersWriteThenLoseRequest(2));
    handed.extend(Box::pin(svc.take_ids(&cat, 10)).await.unwrap().ranges());
    assert_eq!(
        svc.store().replaces.load(Ordering::SeqCst),
        5,
        "the others moved"
    );

    // A push whose reply is lost on the move: pushed once.
    let mut set = Box::pin(svc.take_ids(&cat, 10)).await.unwrap();
    let pushed = set.ranges();
    Box::pin(take_until(&svc, &cat, 4))
        .await
        .into_iter()
        .for_each(|r| handed.push(r));
    svc.store().arm(Fault::LoseReplyAfterApply);
    Box::pin(svc.push_ids(&mut set)).await.unwrap();
    assert_eq!(svc.store().replaces.load(Ordering::SeqCst), 6);
    assert_eq!(
        svc.store().injected.load(Ordering::SeqCst),
        5,
        "every fault fired"
    );

    // Every ID is handed out once, pushed back, taken by the others (4, one each), or free.
    let free = free_of(&svc, &cat).await;
    let mut seen = BTreeSet::new();
    for id in ids_of(&handed) {
        assert!(seen.insert(id), "ID {id} handed out twice");
    }
    for id in ids_of(&free) {
        assert!(seen.insert(id), "ID {id} free and handed out");
    }
    assert!(
        ids_of(&pushed).iter().all(|id| ids_of(&free).contains(id)),
        "the push applied"
    );
    assert_eq!(
        seen.len(),
        1000 - 4,
        "all but the others' 4 IDs accounted for"
    );
    // A fresh process reads the moved pool and goes on from it.
    let other = ctx.faulty(options).await;
    let next = Box::pin(other.take_ids(&cat, 1)).await.unwrap().ranges();
    assert_eq!(next, vec![r(free[0].start(), free[0].start())]);
}

/// A process that remembers the pool from before a move, while others move it and write it up
/// to the data version it remembers, must not write its remembered pool onto the new node (the
/// compare-and-set would succeed: data versions start again at 0). Review of the move: A's take
/// handed out ID 2, which B held.
pub async fn a_state_remembered_across_a_move_is_read_again(ctx: &Ctx) {
    let options = ServiceOptions {
        move_at_version: 4,
        ..ServiceOptions::default()
    };
    let a = ctx.faulty(options.clone()).await;
    let b = ctx.faulty(options).await;
    let cat = ctx.category("remembered");
    a.create_category(&cat, &CategorySpec::new(1, 100))
        .await
        .unwrap();
    let mut held = Box::pin(a.take_ids(&cat, 1)).await.unwrap().ranges();
    // B writes at data versions 1, 2, 3, moves the node at 4 (data version 0), writes 0 -> 1:
    // the node is at the data version A remembers.
    for _ in 0..5 {
        held.extend(Box::pin(b.take_ids(&cat, 1)).await.unwrap().ranges());
    }
    assert_eq!(
        b.store().replaces.load(Ordering::SeqCst),
        1,
        "B moved the node"
    );
    let (version, _, _) = node_of(&a, &cat).await;
    assert_eq!(version, 1, "at the version A remembers");
    held.extend(Box::pin(a.take_ids(&cat, 1)).await.unwrap().ranges());
    held.extend(Box::pin(b.take_ids(&cat, 1)).await.unwrap().ranges());
    let ids = ids_of(&held);
    let distinct: BTreeSet<i64> = ids.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        ids.len(),
        "an ID handed out twice: {held:?}"
    );
    assert_eq!(ids, (1..=8).collect::<Vec<_>>());
}

/// A pool that cannot be moved (here: the node has a child, so it cannot be deleted) is written
/// in place, and the move is tried again 1,024 writes later (it refuses only at the last data
/// version, 2,147,483,647: `VersionWrap`). Review of the move: it refused at the threshold.
pub async fn an_unmovable_pool_is_written_in_place(ctx: &Ctx) {
    let options = ServiceOptions {
        move_at_version: 1,
        ..ServiceOptions::default()
    };
    let svc = ctx.faulty(options).await;
    let cat = ctx.category("unmovable");
    svc.create_category(&cat, &CategorySpec::new(1, 100_000))
        .await
        .unwrap();
    let child = format!("{}/child", cat.name());
    svc.store().inner.create(&child, b"").await.unwrap();
    let mut handed = Vec::new();
    for _ in 0..3 {
        handed.extend(Box::pin(svc.take_ids(&cat, 10)).await.unwrap().ranges());
    }
    assert_eq!(handed, vec![r(1, 10), r(11, 20), r(21, 30)]);
    let (version, _, pool) = node_of(&svc, &cat).await;
    assert_eq!((version, pool.offset()), (3, 0), "written in place");
    // take at 0 (set), take at 1 (a refused move, then a set), take at 2 (a set): 4 writes.
    assert_eq!(svc.store().sets.load(Ordering::SeqCst), 4, "one move tried");
    assert_eq!(svc.store().replaces.load(Ordering::SeqCst), 0);
    // Once the child is gone, the move is tried again 1,024 writes after the refusal.
    svc.store().inner.delete(&child, 0).await.unwrap();
    while node_of(&svc, &cat).await.2.offset() == 0 {
        Box::pin(svc.take_ids(&cat, 1)).await.unwrap();
        assert!(node_of(&svc, &cat).await.0 <= 1 + 1_024, "moved at last");
    }
    assert_eq!(svc.store().replaces.load(Ordering::SeqCst), 1);
    let (version, _, pool) = node_of(&svc, &cat).await;
    assert_eq!((version, pool.offset()), (0, 1 + 1_024 + 1));
}

/// Version conflicts are retried with backoff; past the attempt budget the caller gets
/// `Contention` and nothing of theirs was applied.
pub async fn contention_is_bounded(ctx: &Ctx) {
    let retry = zooid::RetryPolicy {
        max_attempts: 4,
        ..zooid::RetryPolicy::default()
    };
    let svc = ctx
        .faulty(ServiceOptions {
            retry,
            ..ServiceOptions::default()
        })
        .await;
    let cat = ctx.category("contended");
    svc.create_category(&cat, &CategorySpec::new(1, 1000))
        .await
        .unwrap();
    for _ in 0..3 {
        svc.store().arm(Fault::OtherWinsRace);
    }
    // Three lost races, then the fourth attempt wins: the IDs after the others' three.
    assert_eq!(
        svc.take_ids(&cat, 10).await.unwrap().ranges(),
        vec![r(4, 13)]
    );
    for _ in 0..4 {
        svc.store().arm(Fault::OtherWinsRace);
    }
    match svc.take_ids(&cat, 10).await {
        Err(ZooidError::Contention { attempts: 4, .. }) => {}
        other => panic!("expected Contention after 4 attempts, got {other:?}"),
    }
    assert_eq!(
        free_of(&svc, &cat).await,
        vec![r(18, 1000)],
        "only the others' four takes applied"
    );
}

/// Every case, by name, for runners that go through them in one test.
pub const CASES: &[&str] = &[
    "worked_example",
    "categories_are_explicit",
    "takes_until_exhausted",
    "bad_pushes_change_nothing",
    "corrupt_pools_are_never_overwritten",
    "seed_style_nodes_work",
    "pool_size_is_capped",
    "concurrent_services_never_duplicate",
    "lost_replies_are_resolved",
    "unresolvable_outcomes_leak_never_duplicate",
    "pools_move_to_a_fresh_node_before_the_version_wraps",
    "a_state_remembered_across_a_move_is_read_again",
    "an_unmovable_pool_is_written_in_place",
    "contention_is_bounded",
    "free_list_resolves_past_the_log",
    "numbers_without_room_are_refused",
    "a_pool_keeps_its_epoch",
    "ceilings_are_checked",
];

/// Runs the case called `name`.
pub async fn run(name: &str, ctx: &Ctx) {
    match name {
        "worked_example" => worked_example(ctx).await,
        "categories_are_explicit" => categories_are_explicit(ctx).await,
        "takes_until_exhausted" => takes_until_exhausted(ctx).await,
        "bad_pushes_change_nothing" => bad_pushes_change_nothing(ctx).await,
        "corrupt_pools_are_never_overwritten" => corrupt_pools_are_never_overwritten(ctx).await,
        "seed_style_nodes_work" => seed_style_nodes_work(ctx).await,
        "pool_size_is_capped" => pool_size_is_capped(ctx).await,
        "concurrent_services_never_duplicate" => concurrent_services_never_duplicate(ctx).await,
        "lost_replies_are_resolved" => lost_replies_are_resolved(ctx).await,
        "unresolvable_outcomes_leak_never_duplicate" => {
            unresolvable_outcomes_leak_never_duplicate(ctx).await
        }
        "pools_move_to_a_fresh_node_before_the_version_wraps" => {
            pools_move_to_a_fresh_node_before_the_version_wraps(ctx).await
        }
        "a_state_remembered_across_a_move_is_read_again" => {
            a_state_remembered_across_a_move_is_read_again(ctx).await
        }
        "an_unmovable_pool_is_written_in_place" => an_unmovable_pool_is_written_in_place(ctx).await,
        "contention_is_bounded" => contention_is_bounded(ctx).await,
        "free_list_resolves_past_the_log" => free_list_resolves_past_the_log(ctx).await,
        "numbers_without_room_are_refused" => numbers_without_room_are_refused(ctx).await,
        "a_pool_keeps_its_epoch" => a_pool_keeps_its_epoch(ctx).await,
        "ceilings_are_checked" => ceilings_are_checked(ctx).await,
        other => panic!("no case {other}"),
    }
}
