//! The findings of the allocator review (issue 19) against a real ZooKeeper server, each forced
//! with the interleaving that produces it: a keeper run in this process (its report lines are
//! the guards that the interleaving happened), and the racing writes made directly on the nodes
//! where a real process could not be paused at the right point (a durable record written ahead
//! of the pool, a push node no process could refuse).

use zooid::CategorySpec;
use zooid_test_support as support;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use support::{runtime, session_options, ZkServer};
use zooid::durable::{DurableStore, Fence, Record};
use zooid::keeper::{KeeperOptions, Sizing};
use zooid::{IdCategory, IdGeneratorService, IdRange, IdSet, ServiceOptions, Store, ZooidError};

fn r(start: i64, end: i64) -> IdRange {
    IdRange::new(start, end).unwrap()
}

async fn open(connect: &str, ceiling_wait: Duration) -> IdGeneratorService {
    let options = ServiceOptions {
        ceiling_wait,
        ..ServiceOptions::default()
    };
    IdGeneratorService::connect(connect, &session_options(6000), options)
        .await
        .unwrap()
}

fn ids_of(set: &IdSet) -> Vec<i64> {
    set.ranges()
        .iter()
        .flat_map(|r| r.start()..=r.end())
        .collect()
}

/// Adds `set`'s IDs to `seen`, failing on one handed out before.
fn no_duplicate(seen: &mut BTreeSet<i64>, set: &IdSet, what: &str) {
    for id in ids_of(set) {
        assert!(seen.insert(id), "{what}: ID {id} handed out twice");
    }
}

/// A keeper run in this process, on its own runtime (a report callback that blocks holds the
/// keeper at that line, as a paused process would be held).
struct InProcessKeeper {
    lines: Arc<Mutex<Vec<String>>>,
    stop: tokio::sync::watch::Sender<bool>,
    runtime: Option<tokio::runtime::Runtime>,
}

/// Holds the keeper at the first report line starting with a prefix until released.
type Hold = Option<(String, mpsc::Receiver<()>, mpsc::Sender<()>)>;

impl InProcessKeeper {
    fn start(connect: &str, records: &Path, root: &str, floor: u64, hold: Hold) -> Self {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let hold = Arc::new(Mutex::new(hold));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let mut options = KeeperOptions::new(root, "review");
        options.group = format!("{root}-keepers");
        options.tick = Duration::from_millis(100);
        options.sizing = Sizing {
            cover: Duration::from_secs(3),
            floor,
            cap: 100_000_000,
            ..Sizing::default()
        };
        let sink = Arc::clone(&lines);
        options.report = Arc::new(move |line: &str| {
            eprintln!("keeper: {line}");
            sink.lock().unwrap().push(line.to_string());
            let mut held = hold.lock().unwrap();
            if held
                .as_ref()
                .is_some_and(|(p, _, _)| line.starts_with(p.as_str()))
            {
                if let Some((_, release, reached)) = held.take() {
                    let _ = reached.send(());
                    let _ = release.recv_timeout(Duration::from_secs(60));
                }
            }
        });
        let durable = DurableStore::open(records.to_str().unwrap()).unwrap();
        let connect = connect.to_string();
        rt.spawn(async move {
            let session = zooid::Session::connect(&connect, &session_options(6000))
                .await
                .unwrap();
            let _ = zooid::keeper::run(session.into_zk(), durable, options, stop_rx).await;
        });
        Self {
            lines,
            stop,
            runtime: Some(rt),
        }
    }

    fn log(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    fn has(&self, needle: &str) -> bool {
        self.log().iter().any(|l| l.contains(needle))
    }

    /// Waits for a report line containing `needle`; panics with the log after `timeout`.
    async fn wait(&self, needle: &str, timeout: Duration) -> String {
        let start = Instant::now();
        loop {
            if let Some(line) = self.log().into_iter().find(|l| l.contains(needle)) {
                return line;
            }
            assert!(
                start.elapsed() < timeout,
                "no keeper line {needle:?} within {timeout:?}:\n{}",
                self.log().join("\n")
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for InProcessKeeper {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(rt) = self.runtime.take() {
            // Not on the test's runtime, where a runtime may not be dropped.
            let _ = std::thread::spawn(move || rt.shutdown_timeout(Duration::from_secs(5))).join();
        }
    }
}

/// Writes the durable record a keeper would have made durable before crashing (or before a
/// pause past which another keeper took over): `ceiling` for `cat`, fenced at generation 0.
async fn record_ahead(records: &Path, cat: &IdCategory, bounds: IdRange, ceiling: i64) {
    let durable = DurableStore::open(records.to_str().unwrap()).unwrap();
    let fence = Fence {
        generation: 0,
        token: 0,
    };
    durable
        .write(&Record::new(cat.name(), bounds, ceiling, fence))
        .await
        .unwrap();
}

/// Finding 1. At the ceiling, a claim whose block lies above it returns those IDs as free holes,
/// so the generation's frontier passes the ceiling. A keeper that made a higher ceiling durable
/// but never wrote it to the pool (a crash, or a pause past its leadership) leaves the pool
/// behind its record; the repair must start the next generation above the frontier, not just
/// above the record: the holes between them are handed out too.
#[test]
fn a_repair_starts_fresh_blocks_above_the_claimed_frontier() {
    support::init_tracing();
    let zk = ZkServer::start();
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records");
    let connect = zk.connect_string();
    runtime().block_on(async {
        let svc = open(&connect, Duration::from_millis(200)).await;
        let cat = IdCategory::new("/review1/c").unwrap();
        let bounds = r(1, 1_000_000);
        svc.create_category(&cat, &CategorySpec::new(1, 1_000_000).blocks(1000))
            .await
            .unwrap();
        svc.raise_ceiling(&cat, 2500).await.unwrap();
        let mut seen = BTreeSet::new();
        for _ in 0..3 {
            let set = svc.take_ids(&cat, 1000).await.unwrap();
            no_duplicate(&mut seen, &set, "before the repair");
        }
        assert_eq!(*seen.iter().max().unwrap(), 2500);
        let info = svc.pool_info(&cat).await.unwrap();
        assert_eq!(info.high_water, 3000, "the frontier passed the ceiling");
        // The keeper that made 2600 durable did not get to write the pool.
        record_ahead(&records, &cat, bounds, 2600).await;
        let keeper = InProcessKeeper::start(&connect, &records, "/review1", 1000, None);
        let repair = keeper
            .wait("REPAIR category=/review1/c", Duration::from_secs(20))
            .await;
        eprintln!("{repair}");
        // Fresh processes and the old one take 3,000 IDs: none twice, none at or below 2600.
        let fresh = open(&connect, Duration::from_secs(10)).await;
        let mut after = BTreeSet::new();
        for i in 0..6 {
            let svc = if i % 2 == 0 { &fresh } else { &svc };
            let set = svc.take_ids(&cat, 500).await.unwrap();
            no_duplicate(&mut after, &set, "after the repair");
            no_duplicate(&mut seen, &set, "before and after the repair");
        }
        assert!(*after.iter().min().unwrap() > 2600);
        eprintln!(
            "after the repair: {} IDs from {} to {}, none twice",
            after.len(),
            after.iter().min().unwrap(),
            after.iter().max().unwrap()
        );
    });
}

/// Finding 2. The keeper's first durable ceiling of a block category was planned on the blocks
/// claimed when it read; claims do not change the pool node's version, so claims landing
/// between that read and the keeper's pool write handed out IDs the record does not cover (a
/// wipe then reissues them). The keeper is held right after its durable write while a process
/// takes: the pool holds the provisional ceiling 0 by then, so the takes wait for the raise,
/// and every ID handed out is at or below the record.
#[test]
fn the_first_ceiling_of_a_block_category_covers_claims_made_meanwhile() {
    support::init_tracing();
    let zk = ZkServer::start();
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records");
    let connect = zk.connect_string();
    runtime().block_on(async {
        let svc = open(&connect, Duration::from_secs(10)).await;
        let cat = IdCategory::new("/review2/c").unwrap();
        svc.create_category(&cat, &CategorySpec::new(1, 1_000_000).blocks(100))
            .await
            .unwrap();
        let (release_tx, release_rx) = mpsc::channel();
        let (reached_tx, reached_rx) = mpsc::channel();
        let hold = Some((
            "durable category=/review2/c".to_string(),
            release_rx,
            reached_tx,
        ));
        let keeper = InProcessKeeper::start(&connect, &records, "/review2", 1000, hold);
        tokio::task::block_in_place(|| {
            reached_rx
                .recv_timeout(Duration::from_secs(20))
                .expect("the keeper made a first ceiling durable")
        });
        // Held between its durable write and its pool write. The pool got the provisional
        // ceiling 0 before anything was made durable, so no claim lands meanwhile: takes wait
        // for the raise.
        let held = svc.pool_info(&cat).await.unwrap();
        assert_eq!(
            held.ceiling,
            Some(0),
            "the provisional ceiling comes before the durable write"
        );
        let mut seen = BTreeSet::new();
        let (sets, handed_out_while_held) = tokio::join!(
            async {
                let mut sets = Vec::new();
                for _ in 0..10 {
                    sets.push(svc.take_ids(&cat, 500).await.unwrap());
                }
                sets
            },
            async {
                tokio::time::sleep(Duration::from_millis(500)).await;
                let info = svc.pool_info(&cat).await.unwrap();
                release_tx.send(()).unwrap();
                info.high_water
            }
        );
        assert_eq!(
            handed_out_while_held, 0,
            "blocks claimed while the keeper was between its durable write and its pool write"
        );
        for set in &sets {
            no_duplicate(&mut seen, set, "after the keeper's release");
        }
        // The first real ceiling the keeper wrote, above the provisional 0.
        let raised = keeper
            .wait(
                "raised category=/review2/c ceiling 0 -> ",
                Duration::from_secs(20),
            )
            .await;
        eprintln!("{raised}");
        let durable = DurableStore::open(records.to_str().unwrap()).unwrap();
        // More takes under the keeper's ceiling.
        for _ in 0..4 {
            let set = svc.take_ids(&cat, 500).await.unwrap();
            no_duplicate(&mut seen, &set, "after the raise");
        }
        let record = durable.read(cat.name()).await.unwrap().expect("a record");
        let top = *seen.iter().max().unwrap();
        assert!(
            top <= record.ceiling,
            "ID {top} handed out above the durable record {}",
            record.ceiling
        );
        let info = svc.pool_info(&cat).await.unwrap();
        assert!(info.ceiling.unwrap() <= record.ceiling);
        eprintln!(
            "first ceiling: {} IDs handed out up to {top}, durable record {}, pool ceiling {}",
            seen.len(),
            record.ceiling,
            info.ceiling.unwrap()
        );
    });
}

/// Finding 2, second half: a category in block allocation can be created with a ceiling, so
/// that no ID is handed out before a keeper made one durable.
#[test]
fn a_block_category_can_be_created_with_a_ceiling() {
    support::init_tracing();
    let zk = ZkServer::start();
    runtime().block_on(async {
        let svc = open(&zk.connect_string(), Duration::from_millis(100)).await;
        let cat = IdCategory::new("/review2b/c").unwrap();
        svc.create_category(
            &cat,
            &CategorySpec::new(1, 1_000_000).blocks(100).ceiling(0),
        )
        .await
        .unwrap();
        match svc.take_ids(&cat, 1).await {
            Err(ZooidError::ReservationExhausted { ceiling, .. }) => assert_eq!(ceiling, 0),
            other => panic!("expected ReservationExhausted at ceiling 0, got {other:?}"),
        }
        svc.raise_ceiling(&cat, 150).await.unwrap();
        assert_eq!(
            svc.take_ids(&cat, 200).await.unwrap().ranges(),
            vec![r(1, 150)]
        );
        assert!(matches!(
            svc.create_category(
                &IdCategory::new("/review2b/d").unwrap(),
                &CategorySpec::new(1, 100).blocks(10).ceiling(101)
            )
            .await,
            Err(ZooidError::InvalidArgument(_))
        ));
    });
}

/// Finding 3. `zooid restore` on an existing block pool below its record repairs it: the next
/// generation starts above the record, and its sequence parent does not exist yet. Clients
/// refuse at the ceiling before claiming, so none creates it; a keeper that reads the missing
/// parent as a deleted category drops it, finds it again, and never raises: the category
/// stalls for good.
#[test]
fn a_block_category_restored_below_its_record_does_not_stall() {
    support::init_tracing();
    let zk = ZkServer::start();
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records");
    let connect = zk.connect_string();
    runtime().block_on(async {
        let svc = open(&connect, Duration::from_secs(8)).await;
        let cat = IdCategory::new("/review3/c").unwrap();
        let bounds = r(1, 1_000_000);
        svc.create_category(&cat, &CategorySpec::new(1, 1_000_000).blocks(100))
            .await
            .unwrap();
        svc.raise_ceiling(&cat, 2000).await.unwrap();
        let mut seen = BTreeSet::new();
        let set = svc.take_ids(&cat, 1500).await.unwrap();
        no_duplicate(&mut seen, &set, "before the restore");
        // The record is ahead (a raise whose pool write was lost with a rollback); restore.
        record_ahead(&records, &cat, bounds, 3000).await;
        let restored = svc.restore_category(&cat, bounds, 3000, 1).await.unwrap();
        eprintln!("restore: {restored:?}");
        let keeper = InProcessKeeper::start(&connect, &records, "/review3", 1000, None);
        keeper.wait("category /review3/c discovered", Duration::from_secs(20)).await;
        let fresh = open(&connect, Duration::from_secs(8)).await;
        let taken = fresh.take_ids(&cat, 100).await;
        let dropped = keeper.has("category /review3/c dropped");
        let set = match taken {
            Ok(set) => set,
            Err(err) => panic!(
                "the category stalled: {err} (keeper dropped it as deleted: {dropped}); keeper log:\n{}",
                keeper.log().join("\n")
            ),
        };
        no_duplicate(&mut seen, &set, "after the restore");
        assert!(ids_of(&set).iter().all(|&id| id > 3000));
        assert!(!dropped, "the keeper dropped a category that exists");
        let info = fresh.pool_info(&cat).await.unwrap();
        eprintln!(
            "restored block category: took {:?}, ceiling {:?}, epoch {}",
            set.ranges(),
            info.ceiling,
            info.epoch
        );
    });
}

/// Finding 3, second path: a move to a new generation interrupted between its pool write and
/// the creation of the new sequence parent (written here as the interrupted process left it),
/// with the ceiling below the new generation's base: clients refuse at the ceiling before
/// claiming, so only the keeper can go on. It must create the parent and raise, not drop the
/// category as deleted; `pool_info` (`zooid show`) must not say NotFound meanwhile.
#[test]
fn an_interrupted_generation_move_does_not_stall_the_category() {
    support::init_tracing();
    let zk = ZkServer::start();
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records");
    let connect = zk.connect_string();
    runtime().block_on(async {
        let svc = open(&connect, Duration::from_secs(8)).await;
        let cat = IdCategory::new("/review3b/c").unwrap();
        // Created with its ceiling: a first ceiling raised onto a block pool seals its
        // generation, and the take below would move it on.
        let spec = CategorySpec::new(1, 1_000_000).blocks(100).ceiling(1000);
        svc.create_category(&cat, &spec).await.unwrap();
        let mut seen = BTreeSet::new();
        let set = svc.take_ids(&cat, 1000).await.unwrap();
        no_duplicate(&mut seen, &set, "before the move");
        // The move's pool write, without the sequence parent it should have created next.
        let read_on = zooid::zk::ZooKeeperExt::read_on(&**svc.store().zookeeper().unwrap());
        let node = svc.store().get(cat.name()).await.unwrap();
        let text = String::from_utf8(node.data.clone()).unwrap();
        assert!(text.contains("#blocks 100 0 1\n"), "{text}");
        let moved = text.replace("#blocks 100 0 1\n", "#blocks 100 1 1001\n");
        svc.store()
            .set(cat.name(), moved.as_bytes(), node.version, read_on)
            .await
            .unwrap();
        let fresh = open(&connect, Duration::from_secs(8)).await;
        let info = fresh.pool_info(&cat).await;
        assert!(info.is_ok(), "show says {info:?} for a category that exists");
        let keeper = InProcessKeeper::start(&connect, &records, "/review3b", 1000, None);
        let taken = fresh.take_ids(&cat, 100).await;
        let dropped = keeper.has("category /review3b/c dropped");
        let set = match taken {
            Ok(set) => set,
            Err(err) => panic!(
                "the category stalled: {err} (keeper dropped it as deleted: {dropped}); keeper log:\n{}",
                keeper.log().join("\n")
            ),
        };
        no_duplicate(&mut seen, &set, "after the move");
        assert_eq!(set.ranges(), vec![r(1001, 1100)]);
        assert!(!dropped, "the keeper dropped a category that exists");
        eprintln!(
            "interrupted move: {}; took {:?}",
            keeper
                .log()
                .iter()
                .find(|l| l.contains("missing sequence parent"))
                .cloned()
                .unwrap_or_default(),
            set.ranges()
        );
    });
}

/// The keeper's reserve is at most a share (a tenth) of the IDs left in the category, and it
/// says so: a wipe of ZooKeeper restored from the record then costs at most that share, where a
/// reserve sized from the take rate alone could reserve (and lose) the whole rest.
#[test]
fn the_keeper_reserve_is_capped_at_a_share_of_what_is_left() {
    support::init_tracing();
    let zk = ZkServer::start();
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records");
    let connect = zk.connect_string();
    runtime().block_on(async {
        let svc = open(&connect, Duration::from_secs(8)).await;
        let cat = IdCategory::new("/reviewcap/c").unwrap();
        svc.create_category(&cat, &CategorySpec::new(1, 100_000).ceiling(0))
            .await
            .unwrap();
        // A reserve floor of 80,000: all but a fifth of the category.
        let keeper = InProcessKeeper::start(&connect, &records, "/reviewcap", 80_000, None);
        let raised = keeper
            .wait(
                "raised category=/reviewcap/c ceiling 0 -> ",
                Duration::from_secs(20),
            )
            .await;
        eprintln!("{raised}");
        let first: i64 = raised
            .split("ceiling 0 -> ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|c| c.parse().ok())
            .expect("the first ceiling in the keeper's line");
        assert!(
            first <= 10_000,
            "the keeper reserved {first} of the 100,000 IDs left (a wipe would lose them all)"
        );
        let capped = keeper.wait("reserve capped", Duration::from_secs(5)).await;
        eprintln!("{capped}");
        // Takes go on under it, and the ceiling follows in steps of a tenth of what is left.
        let mut seen = BTreeSet::new();
        for _ in 0..3 {
            let set = svc.take_ids(&cat, 5000).await.unwrap();
            no_duplicate(&mut seen, &set, "under the capped reserve");
        }
        let durable = DurableStore::open(records.to_str().unwrap()).unwrap();
        let record = durable.read(cat.name()).await.unwrap().unwrap();
        let left = 100_000 - *seen.iter().max().unwrap();
        assert!(record.ceiling - *seen.iter().max().unwrap() <= left / 10 + 1);
    });
}

/// Finding 8: a keeper's write keeps as long an operation log as the clients keep (a longer
/// `op_log_len` resolves lost replies further back); it used to cut the log to 64 entries.
#[test]
fn a_keeper_write_keeps_a_longer_op_log() {
    support::init_tracing();
    let zk = ZkServer::start();
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records");
    let connect = zk.connect_string();
    runtime().block_on(async {
        let options = ServiceOptions {
            op_log_len: 200,
            ..ServiceOptions::default()
        };
        let svc = IdGeneratorService::connect(&connect, &session_options(6000), options)
            .await
            .unwrap();
        let cat = IdCategory::new("/reviewlog/c").unwrap();
        svc.create_category(
            &cat,
            &CategorySpec::new(1, 1_000_000)
                .single_node()
                .ceiling(100_000),
        )
        .await
        .unwrap();
        for _ in 0..120 {
            svc.take_ids(&cat, 1).await.unwrap();
        }
        let logged = |data: &[u8]| {
            zooid::format::Pool::parse(cat.name(), data)
                .unwrap()
                .log()
                .count()
        };
        let before = logged(&svc.read_node(cat.name()).await.unwrap());
        assert_eq!(before, 121);
        let keeper = InProcessKeeper::start(&connect, &records, "/reviewlog", 1000, None);
        let raised = keeper
            .wait("raised category=/reviewlog/c", Duration::from_secs(20))
            .await;
        eprintln!("{raised}");
        let after = logged(&svc.read_node(cat.name()).await.unwrap());
        assert!(
            after >= before,
            "the keeper's write cut the operation log from {before} to {after} entries"
        );
        eprintln!("op log: {before} entries before the keeper's write, {after} after");
    });
}

/// Finding 5: after a wipe of ZooKeeper and a restore, the pool node is a new incarnation; one
/// at the same data version as a process's remembered pool must not be written on as if it
/// were the old one (that hands out again what the restored node's holders took).
#[test]
fn a_pool_restored_to_the_remembered_version_is_read_before_writing() {
    support::init_tracing();
    let zk = ZkServer::start();
    runtime().block_on(async {
        let a = IdGeneratorService::connect(
            &zk.connect_string(),
            &session_options(3000),
            ServiceOptions::default(),
        )
        .await
        .unwrap();
        let cat = IdCategory::new("/wiped/ids").unwrap();
        a.create_category(&cat, &CategorySpec::new(1, 1000).single_node())
            .await
            .unwrap();
        let mut seen = BTreeSet::new();
        no_duplicate(&mut seen, &a.take_ids(&cat, 100).await.unwrap(), "a");
        no_duplicate(&mut seen, &a.take_ids(&cat, 100).await.unwrap(), "a");
        let generation = a.stats().session_generation;

        // The wipe: every server loses its data; a restore recreates the pool, and its holders
        // take IDs: the node reaches version 2 again, with other content.
        zk.stop();
        std::fs::remove_dir_all(zk.data_dir().join("version-2")).unwrap();
        zk.restart();
        let b = IdGeneratorService::connect(
            &zk.connect_string(),
            &session_options(3000),
            ServiceOptions::default(),
        )
        .await
        .unwrap();
        // Restored from a durable record of 500 (every ID at or below it is given up), the
        // ceiling raised, one take.
        b.restore_category(&cat, r(1, 1000), 500, 1).await.unwrap();
        b.raise_ceiling(&cat, 1000).await.unwrap();
        let mut restored = BTreeSet::new();
        no_duplicate(&mut restored, &b.take_ids(&cat, 100).await.unwrap(), "b");
        assert_eq!(b.store().get(cat.name()).await.unwrap().version, 2);
        // The old process learns that its session ended (the wiped servers do not know it).
        let deadline = Instant::now() + Duration::from_secs(30);
        while a.stats().session_generation == generation {
            assert!(Instant::now() < deadline, "the old session did not end");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let again = a.take_ids(&cat, 100).await.unwrap();
        let free = b.pool_info(&cat).await.unwrap().free;
        assert!(
            free.iter().all(|f| f.start() > 600) && ids_of(&again).iter().all(|&id| id > 600),
            "the old process wrote on the pool it remembered: it took {:?}, and the pool's free \
             list is {free:?} (the restore gave up 1..=500, the restored pool handed out \
             501..=600)",
            again.ranges()
        );
        assert_eq!(again.ranges(), vec![r(601, 700)]);
    });
}

/// Finding 5, lost replies: a push whose reply is lost applies, then ZooKeeper is wiped and the
/// pool restored past the version the push expected before the pusher can look. The restored
/// node's log says nothing of the push (another incarnation): it must not be judged "not
/// applied" and pushed again onto the restored pool, whose holders hold those IDs.
#[test]
fn a_lost_push_across_a_wipe_is_not_pushed_again() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = support::FaultProxy::start(zk.addr());
    runtime().block_on(async {
        let options = support::service_options_with_deadline(Duration::from_secs(40));
        let a =
            IdGeneratorService::connect(&proxy.connect_string(), &session_options(15000), options)
                .await
                .unwrap();
        let cat = IdCategory::new("/wiped/lost").unwrap();
        a.create_category(&cat, &CategorySpec::new(1, 1000).single_node())
            .await
            .unwrap();
        let mut held = a.take_ids(&cat, 100).await.unwrap();
        for _ in 0..50 {
            held.take_id();
        }
        assert_eq!(held.ranges(), vec![r(51, 100)]);
        proxy.drop_reply(support::RequestMatch::Op {
            opcode: support::op::SET_DATA,
            path_contains: cat.name().to_string(),
        });
        // The pusher cannot look until its session is declared lost (15 s) or the wipe ends it.
        proxy.refuse_reattach(true);
        let a = Arc::new(a);
        let pusher = {
            let a = Arc::clone(&a);
            tokio::spawn(async move { a.push_ids(&mut held).await })
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while proxy.dropped_replies() == 0 {
            assert!(
                Instant::now() < deadline,
                "the push's reply was not dropped"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The wipe, and a restore whose holders take IDs: the node passes the push's version.
        zk.stop();
        std::fs::remove_dir_all(zk.data_dir().join("version-2")).unwrap();
        zk.restart();
        let b = IdGeneratorService::connect(
            &zk.connect_string(),
            &session_options(3000),
            ServiceOptions::default(),
        )
        .await
        .unwrap();
        // Restored from a durable record of 200: every ID at or below it is given up (the pushed
        // ones may have been handed out again before the wipe).
        b.restore_category(&cat, r(1, 1000), 200, 1).await.unwrap();
        b.raise_ceiling(&cat, 1000).await.unwrap();
        b.take_ids(&cat, 100).await.unwrap();
        assert!(
            !pusher.is_finished(),
            "the push was resolved before the restore"
        );
        proxy.refuse_reattach(false);
        let pushed = pusher.await.unwrap();
        let free = b.pool_info(&cat).await.unwrap().free;
        let doubled: Vec<&IdRange> = free.iter().filter(|f| f.start() <= 200).collect();
        assert!(
            doubled.is_empty(),
            "IDs the restore gave up are free again: {doubled:?} (the push ended {pushed:?})"
        );
        match pushed {
            Err(ZooidError::OutcomeUnknown { ids, .. }) => assert_eq!(ids, vec![r(51, 100)]),
            other => panic!("expected OutcomeUnknown, got {other:?}"),
        }
    });
}

/// Review of the pool move (issue 22): the keeper remembered its pending raise by the pool's
/// *data* version. Held between its durable write and its pool write while takes move the pool
/// to a fresh node (data version back near 0), it found the pool "behind" its record and
/// repaired it: free IDs up to the new ceiling given up, the epoch bumped, a false alarm. A raise
/// pending across a move is finished, not repaired.
#[test]
fn a_raise_pending_across_a_move_of_the_pool_is_finished_not_repaired() {
    support::init_tracing();
    let zk = ZkServer::start();
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records");
    let connect = zk.connect_string();
    runtime().block_on(async {
        let options = ServiceOptions {
            move_at_version: 10,
            ..ServiceOptions::default()
        };
        let svc = IdGeneratorService::connect(&connect, &session_options(6000), options)
            .await
            .unwrap();
        let cat = IdCategory::new("/reviewm/c").unwrap();
        svc.create_category(
            &cat,
            &CategorySpec::new(1, 1_000_000).single_node().ceiling(500),
        )
        .await
        .unwrap();
        // The keeper plans its raise on data version 8.
        let mut seen = BTreeSet::new();
        for _ in 0..8 {
            let set = svc.take_ids(&cat, 10).await.unwrap();
            no_duplicate(&mut seen, &set, "before the keeper");
        }
        let (release_tx, release_rx) = mpsc::channel();
        let (reached_tx, reached_rx) = mpsc::channel();
        let hold = Some((
            "durable category=/reviewm/c".to_string(),
            release_rx,
            reached_tx,
        ));
        let keeper = InProcessKeeper::start(&connect, &records, "/reviewm", 1000, hold);
        tokio::task::block_in_place(|| {
            reached_rx
                .recv_timeout(Duration::from_secs(20))
                .expect("the keeper made a ceiling durable")
        });
        // Held between its durable write and its pool write: takes under the old ceiling move
        // the pool to a fresh node, whose data version is then below 8.
        for _ in 0..5 {
            let set = svc.take_ids(&cat, 10).await.unwrap();
            no_duplicate(&mut seen, &set, "while the keeper is held");
        }
        let node = svc.store().get(cat.name()).await.unwrap();
        let pool = zooid::format::Pool::parse(cat.name(), &node.data).unwrap();
        assert!(
            pool.offset() > 0 && node.version < 8,
            "the pool moved (data version {})",
            node.version
        );
        release_tx.send(()).unwrap();
        let raised = keeper
            .wait(
                "raised category=/reviewm/c ceiling 500 -> ",
                Duration::from_secs(20),
            )
            .await;
        eprintln!("{raised}");
        assert!(
            !keeper.has("REPAIR"),
            "a pending raise was taken for a rollback:\n{}",
            keeper.log().join("\n")
        );
        let info = svc.pool_info(&cat).await.unwrap();
        assert_eq!(info.epoch, 0, "no repair");
        assert_eq!(info.free[0].start(), 131, "no free ID given up");
    });
}
