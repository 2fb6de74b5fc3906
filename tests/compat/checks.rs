//! The feature checks of the server-version matrix: each runs one feature of zooid end to end
//! against a server at `connect` and fails (panics) on a wrong result. Each works in its own
//! subtree, so they can share one server.

use zooid::CategorySpec;
use zooid_test_support as support;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::{op, session_options, FaultProxy};
use zooid::durable::DurableStore;
use zooid::election::{Election, ElectionOptions, FencedOp, LeaderState};
use zooid::keeper::KeeperOptions;
use zooid::prefetch::{IdSource, SourceOptions};
use zooid::{
    Counter, IdCategory, IdGeneratorService, IdRange, IdSet, QueueOptions, ServerVersion,
    ServiceOptions, Session, Store, WorkQueue,
};

fn r(start: i64, end: i64) -> IdRange {
    IdRange::new(start, end).unwrap()
}

async fn service(connect: &str) -> IdGeneratorService {
    IdGeneratorService::connect(connect, &session_options(6000), ServiceOptions::default())
        .await
        .unwrap_or_else(|err| panic!("connect to {connect}: {err}"))
}

async fn session(connect: &str) -> Session {
    Session::connect(connect, &session_options(6000))
        .await
        .unwrap_or_else(|err| panic!("connect to {connect}: {err}"))
}

/// Every ID of `sets`, checking that none repeats.
fn all_ids(sets: &[&IdSet]) -> BTreeSet<i64> {
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

/// The session found the release `expected` (3.4, or 3.5+) by itself.
pub async fn detects(connect: &str, expected: ServerVersion) {
    let session = session(connect).await;
    assert_eq!(session.server_version(), expected, "detected release");
}

/// The core: create a category, take, push back, take the pushed IDs again, and a take whose
/// reply is lost on the wire after the server applied it returns its own IDs (nothing leaked,
/// nothing handed out twice).
pub async fn core(connect: &str, server: std::net::SocketAddr) {
    let svc = service(connect).await;
    let cat = IdCategory::new("/compat/core/did").unwrap();
    // The single-node layout (format 1): its take is one `setData`, whose reply is lost below.
    svc.create_category(&cat, &CategorySpec::new(1, 1_000_000).single_node())
        .await
        .unwrap();
    let mut first = svc.take_ids(&cat, 10).await.unwrap();
    assert_eq!(first.ranges(), vec![r(1, 10)]);
    let second = svc.take_ids(&cat, 5).await.unwrap();
    assert_eq!(second.ranges(), vec![r(11, 15)]);
    svc.push_ids(&mut first).await.unwrap();
    let again = svc.take_ids(&cat, 10).await.unwrap();
    assert_eq!(
        again.ranges(),
        vec![r(1, 10)],
        "pushed IDs are handed out first"
    );

    let proxy = FaultProxy::start(server);
    let lossy = service(&proxy.connect_string()).await;
    proxy.drop_reply_to(op::SET_DATA, "/compat/core/did");
    let taken = lossy.take_ids(&cat, 100).await.unwrap();
    assert_eq!(proxy.dropped_replies(), 1, "the fault must have happened");
    assert_eq!(
        taken.ranges(),
        vec![r(16, 115)],
        "the applied take returns its own IDs"
    );
    assert_eq!(
        svc.pool_info(&cat).await.unwrap().free,
        vec![r(116, 1_000_000)],
        "nothing leaked"
    );
}

/// A single-node pool moves to a fresh node before its data version runs out (here at data
/// version 3, by the test hook): one `multi` of a delete and a create (on 3.4 a `create`, whose
/// reply carries no stat), a new `czxid`, the IDs going on from where they were, and a second
/// service that read the old node goes on from the new one.
pub async fn moves(connect: &str) {
    let options = ServiceOptions {
        move_at_version: 3,
        ..ServiceOptions::default()
    };
    let open = || async {
        IdGeneratorService::connect(connect, &session_options(6000), options.clone())
            .await
            .unwrap_or_else(|err| panic!("connect to {connect}: {err}"))
    };
    let (a, b) = (open().await, open().await);
    let cat = IdCategory::new("/compat/moves/did").unwrap();
    a.create_category(&cat, &CategorySpec::new(1, 1_000).single_node())
        .await
        .unwrap();
    let created = a.store().get(cat.name()).await.unwrap().created;
    let mut sets = Vec::new();
    for i in 0..10 {
        let svc = if i % 3 == 0 { &b } else { &a };
        sets.push(svc.take_ids(&cat, 10).await.unwrap());
    }
    let ids = all_ids(&sets.iter().collect::<Vec<_>>());
    assert_eq!(ids, (1..=100).collect(), "lowest first, each once");
    let node = a.store().get(cat.name()).await.unwrap();
    let pool = zooid::format::Pool::parse(cat.name(), &node.data).unwrap();
    assert_ne!(node.created, created, "a fresh node");
    assert_eq!(
        (pool.offset(), node.version),
        (8, 2),
        "moved twice, at 4 and 8"
    );
}

/// What format 4's kept listing rests on: a child create and a child delete each add one to the
/// parent's child version, also inside a `multi` (`create`, not `create2`, on 3.4).
pub async fn child_versions(connect: &str) {
    use zooid::zk::{Create, Multi, ZooKeeper, ZooKeeperExt};
    let zk = session(connect).await;
    let generation = zk.generation();
    zk.create_all(generation, "/compat/cv", None).await.unwrap();
    let cversion = || async {
        zk.exists(generation, "/compat/cv")
            .await
            .unwrap()
            .unwrap()
            .cversion
    };
    let start = cversion().await;
    let mut multi = Multi::new();
    multi.create("/compat/cv/a", b"", &Create::persistent());
    multi.create("/compat/cv/b", b"", &Create::persistent());
    multi.commit(&zk, generation).await.unwrap();
    let mut multi = Multi::new();
    multi.delete("/compat/cv/a", None);
    multi.commit(&zk, generation).await.unwrap();
    assert_eq!(cversion().await, start + 3, "two creates and a delete");
}

/// Format 4, the default layout on ZooKeeper: takes and pushes on hole nodes (a listing under a
/// child watch, `multi`s of deletes and creates with an ephemeral receipt), lowest first for one
/// process, and two services contending without an ID handed out twice.
pub async fn holes(connect: &str) {
    let a = service(connect).await;
    let b = service(connect).await;
    let cat = IdCategory::new("/compat/holes/did").unwrap();
    a.create_category(&cat, &CategorySpec::new(1, 1_000_000))
        .await
        .unwrap();
    let raw = a.read_node(cat.name()).await.unwrap();
    assert!(
        raw.starts_with(b"#zooid 4\n"),
        "{}",
        String::from_utf8_lossy(&raw)
    );
    let mut first = a.take_ids(&cat, 10).await.unwrap();
    assert_eq!(first.ranges(), vec![r(1, 10)]);
    assert_eq!(b.take_ids(&cat, 5).await.unwrap().ranges(), vec![r(11, 15)]);
    a.push_ids(&mut first).await.unwrap();
    assert_eq!(
        b.take_ids(&cat, 10).await.unwrap().ranges(),
        vec![r(1, 10)],
        "pushed IDs are handed out first"
    );
    let mut sets = Vec::new();
    for round in 0..20 {
        let (x, y) = tokio::join!(a.take_ids(&cat, 300), b.take_ids(&cat, 300));
        let (mut x, y) = (x.unwrap(), y.unwrap());
        if round % 2 == 0 {
            a.push_ids(&mut x).await.unwrap();
        } else {
            sets.push(x);
        }
        sets.push(y);
    }
    all_ids(&sets.iter().collect::<Vec<_>>());
}

/// Block allocation (`CategorySpec::blocks`, pool format 4): two services take whole blocks
/// (sequential creates in a `multi` with a check), a push becomes hole nodes, handed out before
/// fresh blocks to a take they cover.
pub async fn blocks(connect: &str) {
    let a = service(connect).await;
    let b = service(connect).await;
    let cat = IdCategory::new("/compat/blocks/did").unwrap();
    a.create_category(&cat, &CategorySpec::new(1, 1_000_000).blocks(100))
        .await
        .unwrap();
    let mut one = a.take_ids(&cat, 150).await.unwrap();
    let two = b.take_ids(&cat, 250).await.unwrap();
    let three = a.take_ids(&cat, 50).await.unwrap();
    assert_eq!(all_ids(&[&one, &two, &three]).len(), 450);
    let pushed: BTreeSet<i64> = all_ids(&[&one]);
    a.push_ids(&mut one).await.unwrap();
    let back = b.take_ids(&cat, 150).await.unwrap();
    assert_eq!(
        all_ids(&[&back]),
        pushed,
        "pushed IDs are handed out before fresh blocks"
    );
    let info = a.pool_info(&cat).await.unwrap();
    assert_eq!(info.blocks.map(|blocks| blocks.unit), Some(100));
}

/// The counter: consecutive ranges from two sessions.
pub async fn counter(connect: &str) {
    let a = Counter::new(session(connect).await.into_zk(), "/compat/counter").unwrap();
    let b = Counter::new(session(connect).await.into_zk(), "/compat/counter").unwrap();
    a.init(100).await.unwrap();
    let first = a.next(10).await.unwrap();
    let second = b.next(5).await.unwrap();
    assert_eq!((first, second), (r(101, 110), r(111, 115)));
    assert_eq!(a.get().await.unwrap(), 115);
}

/// Election: one of two candidates leads, its fenced create applies, and when it resigns the
/// other leads with a higher token while the old token's writes are refused.
pub async fn election(connect: &str) {
    let group = "/compat/election";
    let a = Election::join(
        &session(connect).await.into_zk(),
        group,
        ElectionOptions::new("a"),
    )
    .await
    .unwrap();
    let token_a = a.await_leadership(Duration::from_secs(20)).await.unwrap();
    let b = Election::join(
        &session(connect).await.into_zk(),
        group,
        ElectionOptions::new("b"),
    )
    .await
    .unwrap();
    a.fenced(&[FencedOp::Create {
        path: "/compat/election-out".into(),
        data: b"a".to_vec(),
    }])
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(b.state(), LeaderState::Inactive, "one leader at a time");
    a.resign().await.unwrap();
    let token_b = b.await_leadership(Duration::from_secs(20)).await.unwrap();
    assert!(token_b > token_a, "tokens grow: {token_a} then {token_b}");
    assert!(
        a.fenced(&[FencedOp::Delete {
            path: "/compat/election-out".into(),
            version: None,
        }])
        .await
        .is_err(),
        "a resigned leader's fenced write is refused"
    );
    b.fenced(&[FencedOp::Delete {
        path: "/compat/election-out".into(),
        version: None,
    }])
    .await
    .unwrap();
}

/// The work queue: items come out in put order to two consumers; a released claim comes back;
/// completed items are gone.
pub async fn queue(connect: &str) {
    let producer = WorkQueue::open(
        session(connect).await.into_zk(),
        "/compat/queue",
        QueueOptions::default(),
    )
    .unwrap();
    let consumer = WorkQueue::open(
        session(connect).await.into_zk(),
        "/compat/queue",
        QueueOptions::default(),
    )
    .unwrap();
    for item in ["one", "two", "three"] {
        producer.put(item.as_bytes()).await.unwrap();
    }
    let wait = Some(Duration::from_secs(10));
    let first = consumer.claim(wait).await.unwrap().expect("an item");
    let second = producer.claim(wait).await.unwrap().expect("an item");
    assert_eq!((first.data(), second.data()), (&b"one"[..], &b"two"[..]));
    second.release().await.unwrap();
    first.complete().await.unwrap();
    let again = consumer.claim(wait).await.unwrap().expect("an item");
    assert_eq!(again.data(), b"two", "a released item comes back first");
    again.complete().await.unwrap();
    let last = consumer.claim(wait).await.unwrap().expect("an item");
    assert_eq!(last.data(), b"three");
    last.complete().await.unwrap();
    assert!(producer.items().await.unwrap().is_empty());
    assert!(consumer
        .claim(Some(Duration::ZERO))
        .await
        .unwrap()
        .is_none());
}

/// Prefetch: a source hands out unique IDs across refills and pushes the unused ones back when
/// closed.
pub async fn prefetch(connect: &str) {
    let svc = Arc::new(service(connect).await);
    let cat = IdCategory::new("/compat/prefetch/did").unwrap();
    svc.create_category(&cat, &CategorySpec::new(1, 1_000_000))
        .await
        .unwrap();
    let options = SourceOptions {
        initial_batch: 50,
        min_batch: 50,
        max_batch: 50,
        ..SourceOptions::default()
    };
    let source = IdSource::open(svc.clone(), cat.clone(), options)
        .await
        .unwrap();
    let mut seen = BTreeSet::new();
    for _ in 0..180 {
        let id = source.next().await.unwrap();
        assert!(seen.insert(id), "ID {id} handed out twice");
    }
    source.close().await.unwrap();
    let free = svc.pool_info(&cat).await.unwrap().free;
    for id in &seen {
        assert!(
            !free.iter().any(|range| range.contains(*id)),
            "handed-out ID {id} is free again"
        );
    }
    assert_eq!(
        svc.pool_info(&cat).await.unwrap().free_count,
        1_000_000 - 180,
        "the unused prefetched IDs came back"
    );
}

/// How the keeper found a category.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Discovery {
    /// Through the persistent recursive watch (3.6+).
    Watch,
    /// By polling (servers without persistent watches).
    Poll,
}

/// The keeper: runs in-process as the only keeper of `/compat/keeper`, discovers a category
/// created after it became active, and gives it a first ceiling made durable first. Returns how
/// it discovered it and how long that took.
pub async fn keeper(connect: &str) -> (Discovery, Duration) {
    let records = tempfile::tempdir().unwrap();
    let durable = DurableStore::open(records.path().to_str().unwrap()).unwrap();
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut options = KeeperOptions::new("/compat/keeper", "compat-keeper");
    options.group = "/compat/keepers".into();
    options.tick = Duration::from_millis(200);
    options.poll = Duration::from_millis(500);
    options.sizing.floor = 100;
    let sink = lines.clone();
    options.report = Arc::new(move |line| sink.lock().unwrap().push(line.to_string()));
    let (stop, shutdown) = tokio::sync::watch::channel(false);
    let keeper_session = session(connect).await;
    let running = tokio::spawn(zooid::keeper::run(
        keeper_session.into_zk(),
        durable,
        options,
        shutdown,
    ));
    let said = |what: &str| lines.lock().unwrap().iter().any(|l| l.contains(what));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !said("active") {
        assert!(
            Instant::now() < deadline,
            "keeper never became active: {:?}",
            lines.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let svc = service(connect).await;
    let cat = IdCategory::new("/compat/keeper/app/did").unwrap();
    let created = Instant::now();
    svc.create_category(&cat, &CategorySpec::new(1, 1_000_000_000).ceiling(0))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let ceiling = loop {
        if let Some(ceiling) = svc
            .pool_info(&cat)
            .await
            .unwrap()
            .ceiling
            .filter(|c| *c > 0)
        {
            break ceiling;
        }
        assert!(
            Instant::now() < deadline,
            "no ceiling within 20 s: {:?}",
            lines.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let took = created.elapsed();
    let taken = svc.take_ids(&cat, 10).await.unwrap();
    assert_eq!(taken.ranges(), vec![r(1, 10)]);
    let records = DurableStore::open(records.path().to_str().unwrap()).unwrap();
    let record = records
        .read(cat.name())
        .await
        .unwrap()
        .expect("a durable record of the raise");
    assert!(
        record.ceiling >= ceiling,
        "the pool's ceiling is under the durable record"
    );
    let discovery = if said("polling") {
        Discovery::Poll
    } else {
        Discovery::Watch
    };
    assert!(said("discovered"), "{:?}", lines.lock().unwrap());
    let terms = lines
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains(" active, token "))
        .count();
    assert_eq!(
        terms,
        1,
        "one term: finding out about persistent watches must not disturb the keeper's session: {:?}",
        lines.lock().unwrap()
    );
    stop.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(20), running)
        .await
        .expect("keeper stops")
        .expect("keeper task")
        .expect("keeper ends cleanly");
    (discovery, took)
}
