//! A keeper paused across a wipe and a restore (review, 2026-11-29, the class of the wiped-move
//! and wiped-migration findings): the keeper (src/keeper/raise.rs) reads the pool on session
//! generation g1 at data version V, and writes it with `Election::fenced(&[SetData { version:
//! Some(V) }])`, which checks that the leadership is on the current session generation, not
//! that the pool was read on it. Paused after its read while ZooKeeper is wiped and the category
//! restored (the restored pool reaching V too), and elected again on g2, the keeper resumes and
//! its write, planned on the wiped pool, meets the restored one. Fixed: the keeper's writes go
//! only on the session and connection its pool read was on (`Election::fenced_on`,
//! `zk::ReadOn`); the repair scenario handed IDs 37..=46 out twice before.
//!
//! Two pause points: after the keeper's `get` of the pool (a raise; the durable record is read
//! after the pause), and after a repair's fenced check of the version it read (the durable
//! record read before the pause). The restore is `zooid restore`'s: the record's generation
//! bumped durably, then `restore_category_in` with that epoch; the operator raises the restored
//! pool's ceiling durable first (the only keeper is paused).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use zooid::durable::{DirRecords, DurableStore, Fence, Record};
use zooid::keeper::KeeperOptions;
use zooid::range::IdRange;
use zooid::zk::{Zk, ZooKeeperExt};
use zooid::{CategorySpec, IdCategory, IdGeneratorService, Layout, ServiceOptions};

use crate::session::{Flaky, Gate};
use crate::support::{reopen, run_scenario, wipe};
use crate::world::{Faults, SimSession, World};

const ROOT: &str = "/ids";
const GROUP: &str = "/zooid/keepers";

/// A directory for the durable record, removed at the end.
struct RecordDir(PathBuf);

impl RecordDir {
    fn new(name: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("zooid-wiped-keeper-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("record directory");
        Self(path)
    }
}

impl Drop for RecordDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Where the keeper is paused.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Pause {
    /// After its `get` of the pool in `evaluate_once` is answered (the one after its scan's).
    AfterGet,
    /// After the fenced check of a repair (the pool behind its record: a keeper crashed
    /// between its durable write and its pool write) applied.
    AfterRepairCheck,
}

fn contains(lines: &Mutex<Vec<String>>, what: &str) -> bool {
    lines.lock().unwrap().iter().any(|l| l.contains(what))
}

async fn scenario(seed: u64, pause: Pause) {
    let world = World::new(seed, Faults::all().none(), false);
    tokio::spawn(world.clone().drive());
    let admin: Zk = SimSession::open(&world, 0, 0);
    let category = IdCategory::new("/ids/kept").unwrap();
    let path = category.name().to_string();
    let bounds = IdRange::new(1, 1000).unwrap();
    let creator = IdGeneratorService::on_zookeeper(admin.clone(), ServiceOptions::default());
    creator
        .create_category(
            &category,
            &CategorySpec::new(1, 1000).single_node().ceiling(20),
        )
        .await
        .expect("create");
    let mut before = Vec::new();
    for _ in 0..2 {
        let set = creator.take_ids(&category, 10).await.expect("take");
        before.extend(set.ranges().to_vec());
    }
    let old = creator.pool_info(&category).await.expect("info");
    println!(
        "old pool: version {}, epoch {}, ceiling {:?}, handed {before:?}",
        old.version, old.epoch, old.ceiling
    );

    // The durable record: the ceiling of the pool, or (a repair to come) above it, as a keeper
    // that crashed between its durable write and its pool write left it.
    let dir = RecordDir::new(&format!("{seed}-{pause:?}"));
    let records = DirRecords::open(&dir.0).expect("durable store");
    let recorded = match pause {
        Pause::AfterGet => 20,
        Pause::AfterRepairCheck => 36,
    };
    let fence = Fence {
        generation: old.epoch,
        token: 1,
    };
    records
        .write(&Record::new(&path, bounds, recorded, fence).with_layout(Layout::SingleNode))
        .expect("record");

    // K: the only keeper, paused after its read.
    let gate = match pause {
        // The scan's `get` of the pool node comes first.
        Pause::AfterGet => Gate::after(1),
        Pause::AfterRepairCheck => Gate::armed(),
    };
    let sent = Arc::new(Mutex::new(Vec::new()));
    let mut k_zk = Flaky::over(SimSession::open(&world, 1, 1));
    match pause {
        Pause::AfterGet => k_zk.pause_get = Some((path.clone(), gate.clone())),
        Pause::AfterRepairCheck => k_zk.hold_check = Some((path.clone(), gate.clone())),
    }
    k_zk.sets_sent = Some((path.clone(), sent.clone()));
    let k_zk: Zk = Arc::new(k_zk);
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut options = KeeperOptions::new(ROOT, "k1");
    options.group = GROUP.to_string();
    options.report = {
        let lines = lines.clone();
        Arc::new(move |line: &str| {
            println!("k1: {line}");
            lines.lock().unwrap().push(line.to_string());
        })
    };
    let (stop, stop_rx) = watch::channel(false);
    let keeper = tokio::spawn(zooid::keeper::run(
        k_zk.clone(),
        DurableStore::Dir(records.clone().inline()),
        options,
        stop_rx,
    ));
    gate.entered.notified().await;
    let k_generation = k_zk.generation();
    let paused_at = creator.pool_info(&category).await.expect("info");
    println!(
        "K paused ({pause:?}) on session generation {k_generation}; the pool at version {}",
        paused_at.version
    );
    assert!(
        contains(&lines, "category /ids/kept discovered"),
        "guard: K paused in its evaluation, not in its scan"
    );
    assert_eq!(
        paused_at.version, old.version,
        "guard: K read the pool at version {}",
        old.version
    );
    assert!(
        sent.lock().unwrap().is_empty(),
        "guard: K wrote nothing before its pause"
    );

    // The wipe, and the operator's restore in the maintenance window (`zooid restore`), then
    // a raise of the restored pool, durable first.
    let op_zk = wipe(&world);
    let op = IdGeneratorService::on_zookeeper(op_zk, ServiceOptions::default());
    let record = records.read(&path).expect("read").expect("a record");
    let bumped = record.for_new_history();
    let epoch = bumped.fence.generation;
    records
        .write(&bumped)
        .expect("durable record for the new history");
    let restored = op
        .restore_category_in(&category, bounds, record.ceiling, epoch, Layout::SingleNode)
        .await;
    println!(
        "restore ceiling {} epoch {epoch}: {restored:?}",
        record.ceiling
    );
    restored.expect("restore");
    let raised_to = record.ceiling + 64;
    records
        .write(&Record::new(&path, bounds, raised_to, bumped.fence).with_layout(Layout::SingleNode))
        .expect("durable raise");
    op.raise_ceiling(&category, raised_to).await.expect("raise");
    reopen(&world);

    // Q takes from the restored pool until it sits at the version K read.
    let q =
        IdGeneratorService::on_zookeeper(SimSession::open(&world, 3, 3), ServiceOptions::default());
    let mut q_ids = Vec::new();
    while op.pool_info(&category).await.expect("info").version < old.version {
        let set = q.take_ids(&category, 10).await.expect("Q take");
        q_ids.extend(set.ranges().to_vec());
    }
    let restored = op.pool_info(&category).await.expect("info");
    println!(
        "Q (restored pool): {q_ids:?}; restored pool at version {}, epoch {}, ceiling {:?}",
        restored.version, restored.epoch, restored.ceiling
    );
    assert_eq!(
        restored.version, old.version,
        "guard: the restored pool sits at the version K read"
    );
    assert_eq!(restored.epoch, epoch, "guard: the restored pool's epoch");

    // K's client moves to a new session and K is elected again on it; K resumes.
    let mut elected = false;
    for _ in 0..600 {
        if k_zk.generation() != k_generation {
            let candidates = admin.children(admin.generation(), GROUP).await;
            if candidates.is_ok_and(|(c, _)| !c.is_empty()) {
                elected = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        elected,
        "guard: K's session generation changed ({k_generation} -> {}) and K is a candidate again",
        k_zk.generation()
    );
    // Time for its driver to lead on the new session.
    tokio::time::sleep(Duration::from_secs(5)).await;
    println!(
        "K's session generation {k_generation} -> {}",
        k_zk.generation()
    );
    gate.release.notify_one();
    for _ in 0..300 {
        if !sent.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Time for the write's reply and the keeper's report.
    tokio::time::sleep(Duration::from_secs(2)).await;
    if pause == Pause::AfterRepairCheck {
        assert!(
            contains(&lines, "repair pending"),
            "guard: K's paused repair went on"
        );
    }
    let sent_on = sent.lock().unwrap().clone();
    println!("K's pool writes were sent on session generations {sent_on:?}");
    // Before the fix the write planned on the wiped pool was sent on the new session; now a
    // write goes only on the session and connection its pool was read on, so none planned before
    // the pause is sent (a later evaluation reads again and may write on the new session).
    assert!(
        sent_on.iter().all(|g| *g != k_generation),
        "K's pool write went on the session it was paused on: {sent_on:?}"
    );
    let after = op.pool_info(&category).await.expect("info");
    println!(
        "pool after K: version {}, epoch {}, ceiling {:?}, free {:?}",
        after.version, after.epoch, after.ceiling, after.free
    );

    // R, a fresh process, takes from the pool as it is now.
    let r =
        IdGeneratorService::on_zookeeper(SimSession::open(&world, 4, 4), ServiceOptions::default());
    let r_set = r.take_ids(&category, 10).await;
    println!("R: {:?}", r_set.as_ref().map(|s| s.ranges().to_vec()));
    stop.send_replace(true);
    let _ = tokio::time::timeout(Duration::from_secs(60), keeper).await;
    if let Ok(r_set) = r_set {
        for a in &q_ids {
            for b in r_set.ranges() {
                assert!(
                    a.end() < b.start() || b.end() < a.start(),
                    "handed out twice: {a} (Q, restored pool) and {b} (R, after K's write planned on the wiped pool)"
                );
            }
        }
    }
    assert!(
        after.epoch >= restored.epoch,
        "K's write planned on the wiped pool replaced the restored one: epoch {} -> {}",
        restored.epoch,
        after.epoch
    );
}

/// K reads the pool (version 2, no headroom) and is paused before it sees the answer. ZooKeeper
/// is wiped; the operator restores the category (epoch 1, ceiling 20), raises it to 84 durable
/// first; Q takes 21..=30, leaving the restored pool at version 2. K is elected again on its new
/// session and resumes: its evaluation goes on with the wiped pool's contents at version 2, but
/// reads the durable record after the pause, finds its generation bumped by the restore, and
/// repairs (epoch 2, every ID at or below the record's 84 given up): nothing is handed out twice.
#[test]
fn a_keeper_paused_after_its_read_across_a_wipe_and_restore_does_not_reissue_ids() {
    run_scenario(scenario(31, Pause::AfterGet));
}

/// The pool is behind its record (36 against 20: a keeper crashed between its writes). K reads
/// pool and record, and its repair's fenced check of version 2 applies; K is paused there.
/// ZooKeeper is wiped; the operator restores the category from the record (epoch 1, ceiling
/// 36), raises it to 100 durable first; Q takes 37..=46, leaving the restored pool at version
/// 2. K is elected again on its new session and resumes. Before the fix its repair, planned on
/// the wiped pool and the record as it was, was made durable at fence (1, its token), above the
/// restore's (1, 0), and written at version 2: the restored pool's 37..=46 were free again and
/// handed out twice. Now the keeper writes only on the session and connection it read the pool
/// on, and plans again on a fresh read.
#[test]
fn a_keeper_paused_in_a_repair_across_a_wipe_and_restore_does_not_reissue_ids() {
    run_scenario(scenario(37, Pause::AfterRepairCheck));
}
