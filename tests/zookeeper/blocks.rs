//! Block allocation (`CategorySpec::blocks`, pool format 4, src/alloc/blocks/) against a real
//! ZooKeeper server: fresh IDs from sequential creates, generations moving on under contention,
//! lost replies, the ceiling, and the refusals. (Hole nodes themselves: tests/zookeeper/holes.rs.)

use zooid::CategorySpec;
use zooid_test_support as support;

use std::collections::BTreeSet;
use std::time::Duration;

use support::{op, runtime, session_options, FaultProxy, ZkServer};
use zooid::{
    ConnectOptions, IdCategory, IdGeneratorService, IdRange, IdSet, ServiceOptions, ZooidError,
};

fn r(start: i64, end: i64) -> IdRange {
    IdRange::new(start, end).unwrap()
}

async fn open(connect: &str) -> IdGeneratorService {
    open_with(connect, ServiceOptions::default()).await
}

async fn open_with(connect: &str, options: ServiceOptions) -> IdGeneratorService {
    IdGeneratorService::connect(connect, &session_options(6000), options)
        .await
        .unwrap()
}

/// Every ID of `sets`, checking that none repeats.
fn all_ids(sets: &[IdSet]) -> BTreeSet<i64> {
    let mut ids = BTreeSet::new();
    for set in sets {
        for range in set.ranges() {
            for id in range.start()..=range.end() {
                assert!(ids.insert(id), "ID {id} handed out twice");
            }
        }
    }
    ids
}

#[test]
fn fresh_blocks_and_double_pushes_refused() {
    support::init_tracing();
    let zk = ZkServer::start();
    runtime().block_on(async {
        let a = open(&zk.connect_string()).await;
        let b = open(&zk.connect_string()).await;
        let cat = IdCategory::new("/scale/did").unwrap();
        a.create_category(&cat, &CategorySpec::new(1, 1_000_000).blocks(1000))
            .await
            .unwrap();
        let raw = a.read_node("/scale/did").await.unwrap();
        assert!(
            raw.starts_with(b"#zooid 4\n#bounds 1:1000000\n#blocks 1000 0 1\n"),
            "{}",
            String::from_utf8_lossy(&raw)
        );
        assert!(matches!(
            a.create_category(&cat, &CategorySpec::new(1, 10).blocks(1))
                .await,
            Err(ZooidError::CategoryExists { .. })
        ));

        let mut first = a.take_ids(&cat, 1000).await.unwrap();
        assert_eq!(first.ranges(), vec![r(1, 1000)]);
        assert_eq!(
            b.take_ids(&cat, 1000).await.unwrap().ranges(),
            vec![r(1001, 2000)]
        );
        // Half a block: the other half goes back as a hole, which a take it covers gets, once
        // it began more than LISTING_TRUSTED_FOR (250 ms) after the push (docs/DESIGN.md, "Bound
        // on lowest first": b's listing, made by its last take, is trusted until then, and the
        // hole's watch event may reach b after its next take chose on it).
        assert_eq!(
            a.take_ids(&cat, 500).await.unwrap().ranges(),
            vec![r(2001, 2500)]
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            b.take_ids(&cat, 300).await.unwrap().ranges(),
            vec![r(2501, 2800)]
        );

        // Pushed IDs are free, seen by every process.
        for _ in 0..10 {
            first.take_id();
        }
        a.push_ids(&mut first).await.unwrap();
        let info = b.pool_info(&cat).await.unwrap();
        assert_eq!(info.free, vec![r(11, 1000), r(2801, 1_000_000)]);
        assert_eq!(info.free_count, 1_000_000 - 1000 - 1000 - 500 - 300 + 990);
        assert_eq!(info.high_water, 3000);
        assert_eq!(info.blocks.map(|b| b.unit), Some(1000));

        // IDs no block claimed yet are free already: pushing them is a double push.
        let mut bogus_push = IdSet::new(cat.clone(), vec![r(2900, 3100)]);
        match a.push_ids(&mut bogus_push).await {
            Err(ZooidError::AlreadyFree { range, .. }) => assert_eq!(range, r(3001, 3100)),
            other => panic!("expected AlreadyFree, got {other:?}"),
        }
        let mut beyond = IdSet::new(cat.clone(), vec![r(5001, 5002)]);
        match a.push_ids(&mut beyond).await {
            Err(ZooidError::AlreadyFree { range, .. }) => assert_eq!(range, r(5001, 5002)),
            other => panic!("expected AlreadyFree, got {other:?}"),
        }
        assert_eq!(
            b.pool_info(&cat).await.unwrap().free,
            vec![r(11, 1000), r(2801, 1_000_000)]
        );

        // The embedded stores cannot number blocks.
        let mem = IdGeneratorService::connect(
            "mem:",
            &ConnectOptions::default(),
            ServiceOptions::default(),
        )
        .await
        .unwrap();
        assert!(matches!(
            mem.create_category(&cat, &CategorySpec::new(1, 100).blocks(10))
                .await,
            Err(ZooidError::InvalidArgument(_))
        ));
        assert!(matches!(
            a.create_category(
                &IdCategory::new("/scale/zero").unwrap(),
                &CategorySpec::new(1, 100).blocks(0)
            )
            .await,
            Err(ZooidError::InvalidArgument(_))
        ));
    });
}

/// Four sessions take 1,000 IDs at a time from a category in blocks of one ID, so every take
/// claims 1,000 blocks and the generation moves on every twenty takes, under contention. Every ID
/// is handed out once, and no ID is skipped: the takes get exactly 1..=100000.
#[test]
fn generations_move_on_under_contention_without_gaps_or_duplicates() {
    support::init_tracing();
    let zk = ZkServer::start();
    runtime().block_on(async {
        let cat = IdCategory::new("/scale/rotating").unwrap();
        let setup = open(&zk.connect_string()).await;
        setup
            .create_category(&cat, &CategorySpec::new(1, 10_000_000).blocks(1))
            .await
            .unwrap();
        let mut tasks = Vec::new();
        for _ in 0..4 {
            let connect = zk.connect_string();
            let cat = cat.clone();
            tasks.push(tokio::spawn(async move {
                let svc = open(&connect).await;
                let mut got = Vec::new();
                for _ in 0..25 {
                    got.push(svc.take_ids(&cat, 1000).await.unwrap());
                }
                got
            }));
        }
        let mut sets = Vec::new();
        for task in tasks {
            sets.extend(task.await.unwrap());
        }
        let ids = all_ids(&sets);
        assert_eq!(ids.len(), 100_000);
        assert_eq!(ids.first(), Some(&1));
        assert_eq!(ids.last(), Some(&100_000), "no ID skipped");
        let info = setup.pool_info(&cat).await.unwrap();
        let generation = info.blocks.unwrap().generation;
        assert!(generation >= 3, "the generation moved on ({generation})");
        assert_eq!(info.high_water, 100_000);
        // Retired generations are deleted (in the background): at most the current one and the
        // one before remain.
        let started = std::time::Instant::now();
        let children = loop {
            let children = setup.list_categories("/scale/rotating").await.unwrap();
            let generations = children.iter().filter(|c| c.starts_with("zooid-blocks-"));
            if generations.count() <= 2 {
                break children;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "{children:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert!(children.contains(&format!("zooid-blocks-{generation}")));
        eprintln!(
            "100 takes of 1000 by 4 sessions: generation {generation}, children {children:?}"
        );
    });
}

/// The reply to a block claim is lost after the server applied it: the take still returns its
/// own blocks, and nothing is skipped or handed out twice.
#[test]
fn lost_claim_replies_are_resolved() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    runtime().block_on(async {
        let svc = open(&proxy.connect_string()).await;
        let cat = IdCategory::new("/scale/lossy").unwrap();
        svc.create_category(&cat, &CategorySpec::new(1, 1_000_000).blocks(100))
            .await
            .unwrap();
        assert_eq!(
            svc.take_ids(&cat, 100).await.unwrap().ranges(),
            vec![r(1, 100)]
        );
        proxy.drop_reply_to(op::MULTI, "/scale/lossy");
        let taken = svc.take_ids(&cat, 200).await.unwrap();
        assert_eq!(proxy.dropped_replies(), 1, "the fault must have happened");
        assert_eq!(
            taken.ranges(),
            vec![r(101, 300)],
            "the applied claim returns its blocks"
        );
        assert_eq!(
            svc.take_ids(&cat, 100).await.unwrap().ranges(),
            vec![r(301, 400)]
        );
        assert_eq!(
            svc.pool_info(&cat).await.unwrap().free_count,
            1_000_000 - 400
        );
    });
}

/// A ceiling caps fresh blocks as it caps the free list: the take at the ceiling waits for a
/// raise and fails with `ReservationExhausted`, and IDs of a block above the ceiling wait in the
/// free list until the ceiling is raised.
#[test]
fn the_ceiling_caps_fresh_blocks() {
    support::init_tracing();
    let zk = ZkServer::start();
    runtime().block_on(async {
        let svc = open_with(
            &zk.connect_string(),
            ServiceOptions {
                ceiling_wait: Duration::from_millis(300),
                ..ServiceOptions::default()
            },
        )
        .await;
        let cat = IdCategory::new("/scale/reserved").unwrap();
        svc.create_category(&cat, &CategorySpec::new(1, 1_000_000).blocks(1000))
            .await
            .unwrap();
        assert_eq!(svc.raise_ceiling(&cat, 2500).await.unwrap(), 2500);
        let a = svc.take_ids(&cat, 1000).await.unwrap();
        let b = svc.take_ids(&cat, 1000).await.unwrap();
        let c = svc.take_ids(&cat, 1000).await.unwrap();
        assert_eq!(
            (a.ranges(), b.ranges(), c.ranges()),
            (vec![r(1, 1000)], vec![r(1001, 2000)], vec![r(2001, 2500)]),
            "the third block is cut at the ceiling"
        );
        match svc.take_ids(&cat, 1000).await {
            Err(ZooidError::ReservationExhausted { ceiling, .. }) => assert_eq!(ceiling, 2500),
            other => panic!("expected ReservationExhausted, got {other:?}"),
        }
        let info = svc.pool_info(&cat).await.unwrap();
        assert_eq!(info.headroom, 0);
        // The rest of the cut block is a hole; the IDs no block claimed are free too.
        assert_eq!(info.free, vec![r(2501, 1_000_000)]);
        svc.raise_ceiling(&cat, 5000).await.unwrap();
        // A hole of half a block waits for a take it covers: this one claims the next block.
        assert_eq!(
            svc.take_ids(&cat, 1000).await.unwrap().ranges(),
            vec![r(3001, 4000)]
        );
        assert_eq!(
            svc.take_ids(&cat, 500).await.unwrap().ranges(),
            vec![r(2501, 3000)]
        );
        assert_eq!(svc.pool_info(&cat).await.unwrap().headroom, 1000);
    });
}

/// The server's last zxid (`srvr`): every write it processed, failed ones included.
fn zxid(zk: &ZkServer) -> u64 {
    let out = support::four_letter_word(zk.addr(), "srvr", Duration::from_secs(5)).unwrap();
    let hex = out
        .lines()
        .find_map(|l| l.strip_prefix("Zxid: 0x"))
        .unwrap_or_else(|| panic!("no Zxid in srvr output:\n{out}"));
    u64::from_str_radix(hex.trim(), 16).unwrap()
}

/// Twenty sessions take a batch each at once, then push part of it back at once: every take and
/// every push is exactly one transaction on the server (none fails), and the next take merges
/// the pushes, lowest first.
#[test]
fn concurrent_takes_and_pushes_do_not_conflict() {
    support::init_tracing();
    let zk = ZkServer::start();
    runtime().block_on(async {
        let cat = IdCategory::new("/scale/burst").unwrap();
        let mut services = Vec::new();
        for _ in 0..20 {
            services.push(std::sync::Arc::new(open(&zk.connect_string()).await));
        }
        services[0]
            .create_category(&cat, &CategorySpec::new(1, 10_000_000).blocks(100))
            .await
            .unwrap();
        for svc in &services {
            // Warm up each session's view of the pool (one read each, not measured).
            svc.pool_info(&cat).await.unwrap();
        }
        let before = zxid(&zk);
        let takes = services.iter().map(|svc| {
            let (svc, cat) = (std::sync::Arc::clone(svc), cat.clone());
            tokio::spawn(async move { svc.take_ids(&cat, 100).await.unwrap() })
        });
        let mut sets = Vec::new();
        for t in takes.collect::<Vec<_>>() {
            sets.push(t.await.unwrap());
        }
        let take_txns = zxid(&zk) - before;
        let ids = all_ids(&sets);
        assert_eq!(ids, (1..=2000).collect::<BTreeSet<i64>>());
        assert_eq!(take_txns, 20, "one transaction per take, none failed");

        let before = zxid(&zk);
        let pushes = services.iter().zip(sets).map(|(svc, mut set)| {
            let svc = std::sync::Arc::clone(svc);
            tokio::spawn(async move {
                let first = set.ranges()[0].start();
                // Use 90, push back the last 10.
                set.take_run(90);
                svc.push_ids(&mut set).await.unwrap();
                first + 90
            })
        });
        let mut pushed = BTreeSet::new();
        for p in pushes.collect::<Vec<_>>() {
            let start = p.await.unwrap();
            pushed.extend(start..start + 10);
        }
        let push_txns = zxid(&zk) - before;
        assert_eq!(push_txns, 20, "one transaction per push, none failed");
        let merged = services[3].take_ids(&cat, 150).await.unwrap();
        let expected: BTreeSet<i64> = pushed.iter().copied().take(150).collect();
        assert_eq!(
            all_ids(&[merged]),
            expected,
            "pushed IDs first, lowest first"
        );
        let info = services[7].pool_info(&cat).await.unwrap();
        assert_eq!(info.free_count, 10_000_000 - 2000 + 200 - 150);
        eprintln!("20 takes: {take_txns} transactions; 20 pushes: {push_txns} transactions");
    });
}

/// A take that claims a block for part of it gives the rest of the block back as a hole node.
/// When that give-back's request is held past the end of its session (the session may not
/// reattach), its outcome may not be told: the IDs must not be handed out, and they must not
/// vanish either. Every ID of the block is then handed out, free, or reported leaked (the
/// `ids_leaked` figure), none twice.
#[test]
fn a_give_back_in_doubt_is_reported_leaked() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    runtime().block_on(async {
        let options = support::service_options_with_deadline(Duration::from_secs(8));
        let svc =
            IdGeneratorService::connect(&proxy.connect_string(), &session_options(2000), options)
                .await
                .unwrap();
        let cat = IdCategory::new("/scale/doubt").unwrap();
        svc.create_category(&cat, &zooid::CategorySpec::new(1, 1_000_000).blocks(100))
            .await
            .unwrap();
        // The take claims block 1..=100 and gives 66..=100 back (a push of a hole node, checked
        // against the block generation's sequence parent).
        proxy.hold_request(
            support::RequestMatch::Contains(b"/zooid-holes/h-".to_vec()),
            Duration::from_secs(5),
        );
        proxy.refuse_reattach(true);
        let taken = svc.take_ids(&cat, 65).await.unwrap();
        let delivered = proxy.wait_deliveries(1, Duration::from_secs(10)).await;
        proxy.refuse_reattach(false);
        assert_eq!(delivered.len(), 1, "the give-back must have been held");
        assert_ne!(
            delivered[0].reply_err,
            Some(0),
            "the held give-back applied late"
        );
        assert_eq!(taken.ranges(), vec![r(1, 65)]);

        let mut accounted = all_ids(&[taken]);
        let info = svc.pool_info(&cat).await.unwrap();
        for range in &info.free {
            for id in range.start()..=range.end().min(1000) {
                assert!(accounted.insert(id), "ID {id} is free and handed out");
            }
        }
        let lost: Vec<i64> = (1..=100).filter(|id| !accounted.contains(id)).collect();
        let leaked = svc.stats().ids_leaked;
        assert_eq!(
            leaked,
            lost.len() as u64,
            "{} IDs neither handed out nor free ({:?}..), {leaked} reported leaked",
            lost.len(),
            lost.first()
        );
    });
}

/// Finding 8: a push to a pool in block allocation is refused as `AlreadyFree` only on what the
/// store holds now. Process A remembers IDs 2..=50 free (pushed, then one taken); process B takes
/// them while A's connection hears nothing (the watch that would tell A is held); their holder
/// hands them back through A: A's remembered pool says "free", the store does not.
#[test]
fn already_free_is_decided_on_fresh_data() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    runtime().block_on(async {
        let a = std::sync::Arc::new(open(&proxy.connect_string()).await);
        let b = open(&zk.connect_string()).await;
        let cat = IdCategory::new("/scale/fresh").unwrap();
        a.create_category(&cat, &CategorySpec::new(1, 1_000_000).blocks(100))
            .await
            .unwrap();
        let mut first = a.take_ids(&cat, 100).await.unwrap();
        assert_eq!(first.ranges(), vec![r(1, 100)]);
        let mut back = IdSet::new(cat.clone(), vec![r(1, 50)]);
        a.push_ids(&mut back).await.unwrap();
        for _ in 0..50 {
            first.take_id();
        }
        assert_eq!(a.take_ids(&cat, 1).await.unwrap().ranges(), vec![r(1, 1)]);
        proxy.mute_replies();
        let taken = b.take_ids(&cat, 49).await.unwrap();
        assert_eq!(taken.ranges(), vec![r(2, 50)], "B takes the pushed IDs");
        // B's holder gives them back through A, which reaches the same ensemble by another
        // address (its proxy): the set is built from the ranges, vouched for by the caller.
        let mut taken = IdSet::new(cat.clone(), taken.ranges());
        let pusher = {
            let a = std::sync::Arc::clone(&a);
            tokio::spawn(async move { a.push_ids(&mut taken).await })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        proxy.unmute();
        let pushed = pusher.await.unwrap();
        assert!(
            pushed.is_ok(),
            "a push of IDs B holds was refused on A's remembered pool: {pushed:?}"
        );
        assert_eq!(a.pool_info(&cat).await.unwrap().free[0], r(2, 50));
        a.push_ids(&mut first).await.unwrap();
    });
}
