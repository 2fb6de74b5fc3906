//! Review (2026-11-30): the keeper's first ceiling of a pool in block allocation created without
//! a ceiling (src/keeper/raise.rs, `evaluate_once`: `pool.ceiling().is_none() &&
//! pool.blocks().is_some()` -> `Change::Move`). The keeper makes the ceiling durable first
//! (high water + reserve), then seals the generation (src/alloc/blocks/repair.rs
//! `seal_and_move`), then writes the pool at the version it read, moved to the next generation
//! with the ceiling. A take that meets the sealed generation finishes the move itself
//! (src/alloc/blocks/take.rs `rotate`): the pool moves on to the next generation with NO
//! ceiling, the keeper's fenced write fails on the version, and until the keeper's next
//! evaluation lands a ceiling, takes claim fresh blocks with no ceiling, past the durable
//! record's. A wipe then, and `zooid restore` starts the pool just above the record: below IDs
//! already handed out.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use zooid::durable::{DirRecords, DurableStore, Record};
use zooid::keeper::{KeeperOptions, Sizing};
use zooid::range::IdRange;
use zooid::zk::Zk;
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
            std::env::temp_dir().join(format!("zooid-first-ceiling-{}-{name}", std::process::id()));
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

fn contains(lines: &Mutex<Vec<String>>, what: &str) -> bool {
    lines.lock().unwrap().iter().any(|l| l.contains(what))
}

fn ids_of(ranges: &[IdRange]) -> Vec<i64> {
    ranges.iter().flat_map(|r| r.start()..=r.end()).collect()
}

/// K, the only keeper (reserve 16), finds the block pool `/ids/first` (1..=1000, blocks of 4,
/// no ceiling; P took 20 IDs) and gives it its first ceiling: the record first (ceiling T =
/// high water + 16), then it seals generation g, and its reply is held (K paused after its
/// seal). P's next take meets the sealed generation and finishes the move: generation g+1, no
/// ceiling. K resumes: its fenced pool write at the version it read fails, and K is paused at
/// the read of its next attempt (a keeper stalled: a pause, a partition, a crash before its
/// successor's first evaluation). P takes on, past T. ZooKeeper is wiped; the operator restores
/// the category from the record (`zooid restore`: generation bumped, pool from T+1) and raises
/// it durable first; R, a fresh process, takes: the IDs above T that P holds.
#[test]
fn a_first_ceiling_whose_move_a_take_finished_does_not_reissue_ids_after_a_wipe() {
    run_scenario(async {
        let world = World::new(41, Faults::all().none(), false);
        tokio::spawn(world.clone().drive());
        let admin: Zk = SimSession::open(&world, 0, 0);
        let category = IdCategory::new("/ids/first").unwrap();
        let path = category.name().to_string();
        let bounds = IdRange::new(1, 1000).unwrap();
        let unit = 4;
        let creator = IdGeneratorService::on_zookeeper(admin.clone(), ServiceOptions::default());
        creator
            .create_category(
                &category,
                &CategorySpec::new(1, 1000).layout(Layout::HoleNodes { unit }),
            )
            .await
            .expect("create");
        let p = IdGeneratorService::on_zookeeper(
            SimSession::open(&world, 2, 2),
            ServiceOptions::default(),
        );
        let mut p_ids: Vec<IdRange> = Vec::new();
        for _ in 0..2 {
            let set = p.take_ids(&category, 10).await.expect("P take");
            p_ids.extend(set.ranges().to_vec());
        }
        let old = creator.pool_info(&category).await.expect("info");
        println!(
            "pool before the keeper: version {}, ceiling {:?}, blocks {:?}, high water {}; P holds {p_ids:?}",
            old.version, old.ceiling, old.blocks, old.high_water
        );
        assert_eq!(old.ceiling, None, "guard: the pool has no ceiling");
        let g = old.blocks.expect("guard: block allocation").generation;

        // K: the only keeper; its seal of the generation applies and its reply is held; the
        // get of the pool after (the scan's, the first evaluation's) is paused.
        let dir = RecordDir::new("blocks");
        let records = DirRecords::open(&dir.0).expect("durable store");
        let seal_gate = Gate::armed();
        let stall_gate = Gate::after(2);
        let sent = Arc::new(Mutex::new(Vec::new()));
        let mut k_zk = Flaky::over(SimSession::open(&world, 1, 1));
        k_zk.hold_set = Some((format!("{path}/zooid-blocks-"), seal_gate.clone()));
        k_zk.pause_get = Some((path.clone(), stall_gate.clone()));
        k_zk.sets_sent = Some((path.clone(), sent.clone()));
        let k_zk: Zk = Arc::new(k_zk);
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let mut options = KeeperOptions::new(ROOT, "k1");
        options.group = GROUP.to_string();
        options.sizing = Sizing {
            floor: 16,
            cap: 16,
            left_share: 1.0,
            ..Sizing::default()
        };
        options.report = {
            let lines = lines.clone();
            Arc::new(move |line: &str| {
                println!("k1: {line}");
                lines.lock().unwrap().push(line.to_string());
            })
        };
        let (_stop, stop_rx) = watch::channel(false);
        let keeper = tokio::spawn(zooid::keeper::run(
            k_zk.clone(),
            DurableStore::Dir(records.clone().inline()),
            options,
            stop_rx,
        ));
        seal_gate.entered.notified().await;
        let record = records.read(&path).expect("read").expect("guard: a record");
        let recorded = record.ceiling;
        let sealed = creator.pool_info(&category).await.expect("info");
        println!(
            "K sealed generation {g}; record ceiling {recorded}; pool version {}, ceiling {:?}",
            sealed.version, sealed.ceiling
        );
        assert!(
            contains(&lines, &format!("durable category={path} ceiling={recorded}")),
            "guard: K made its first ceiling durable before the seal"
        );
        assert_eq!(sealed.version, old.version, "guard: the pool as K read it");
        assert!(sent.lock().unwrap().is_empty(), "guard: no pool write of K yet");

        // P meets the sealed generation and finishes the move: the next generation, no ceiling.
        let set = p.take_ids(&category, 10).await.expect("P take");
        p_ids.extend(set.ranges().to_vec());
        let moved = creator.pool_info(&category).await.expect("info");
        println!(
            "P's take {:?}; pool version {}, ceiling {:?}, blocks {:?}",
            set.ranges(),
            moved.version,
            moved.ceiling,
            moved.blocks
        );
        assert_eq!(moved.ceiling, None, "guard: the move P finished set no ceiling");
        assert_ne!(
            moved.blocks.expect("blocks").generation,
            g,
            "guard: P moved the pool past the sealed generation"
        );
        assert_eq!(moved.version, old.version + 1, "guard: P's move wrote the pool");

        // K resumes: its fenced write at the version it read fails; its next read is paused.
        seal_gate.release.notify_one();
        stall_gate.entered.notified().await;
        let stalled = creator.pool_info(&category).await.expect("info");
        println!(
            "K stalled at its next read; K's pool writes sent: {:?}; pool ceiling {:?}",
            sent.lock().unwrap(),
            stalled.ceiling
        );
        assert_eq!(
            sent.lock().unwrap().len(),
            1,
            "guard: K sent its fenced pool write once"
        );
        assert!(
            !contains(&lines, "raised category="),
            "guard: K's first ceiling did not land"
        );
        assert_eq!(stalled.ceiling, None, "guard: the pool still has no ceiling");

        // P takes on, past the record's ceiling.
        while p_ids.iter().map(|r| r.end()).max().unwrap_or(0) <= recorded + 10 {
            let set = p.take_ids(&category, 10).await.expect("P take");
            p_ids.extend(set.ranges().to_vec());
        }
        let above: Vec<i64> = ids_of(&p_ids).into_iter().filter(|&id| id > recorded).collect();
        println!("P holds {p_ids:?}; above the record's ceiling {recorded}: {above:?}");
        assert!(!above.is_empty(), "guard: P holds IDs above the record");

        // The wipe, and `zooid restore` in the maintenance window, then a raise durable first.
        let op_zk = wipe(&world);
        let op = IdGeneratorService::on_zookeeper(op_zk, ServiceOptions::default());
        let record = records.read(&path).expect("read").expect("a record");
        let bumped = record.for_new_history();
        let epoch = bumped.fence.generation;
        records.write(&bumped).expect("durable record for the new history");
        let restored = op
            .restore_category_in(&category, bounds, record.ceiling, epoch, record.layout())
            .await;
        println!(
            "restore ceiling {} epoch {epoch} layout {:?}: {restored:?}",
            record.ceiling,
            record.layout()
        );
        restored.expect("restore");
        let raised_to = record.ceiling + 64;
        records
            .write(
                &Record::new(&path, bounds, raised_to, bumped.fence).with_layout(record.layout()),
            )
            .expect("durable raise");
        op.raise_ceiling(&category, raised_to).await.expect("raise");
        reopen(&world);

        // R, a fresh process, takes from the restored pool.
        let r = IdGeneratorService::on_zookeeper(
            SimSession::open(&world, 4, 4),
            ServiceOptions::default(),
        );
        let r_set = r.take_ids(&category, 10).await.expect("R take");
        println!("R (restored pool): {:?}", r_set.ranges());
        keeper.abort();
        let held = ids_of(&p_ids);
        let twice: Vec<i64> = ids_of(&r_set.ranges())
            .into_iter()
            .filter(|id| held.contains(id))
            .collect();
        assert!(
            twice.is_empty(),
            "IDs handed out twice: {twice:?} (to P before the wipe, in the generation P's take moved to without a ceiling, above the record's {recorded}; to R from the pool restored from the record)"
        );
    });
}
