//! Review (2026-11-30): the keeper's first ceiling of a pool created without a ceiling
//! (src/keeper/raise.rs, `evaluate_once`). It was made durable first (high water + reserve),
//! then written to the pool at the version read: in block allocation after sealing the
//! generation (src/alloc/blocks/repair.rs `seal_and_move`), the pool moved to the next
//! generation with the ceiling. A take that meets the sealed generation finishes the move itself
//! (src/alloc/blocks/take.rs `rotate`): the pool moves on with NO ceiling; in a single node, a
//! take moves the version. The keeper's fenced write fails on the version, and until its next
//! evaluation lands a ceiling (a keeper stalled: a pause, a partition, a crash and a failover),
//! takes hand out IDs past the durable record's ceiling. A wipe then, and `zooid restore`
//! starts the pool just above the record: below IDs already handed out. Before the fix the
//! block scenario handed IDs 37..=46 out twice, the single-node one 37..=46 too.
//!
//! Fixed: a pool without a ceiling first gets, by the fenced write at the version read, the
//! provisional ceiling 0 and no record (nothing more is handed out; in block allocation the
//! generation is sealed first, so a claim planned before it fails); the next evaluation finds a ceiling without a record and makes
//! durable, first, a ceiling above the high water it reads then (the model's
//! `Kind::Provisional`, tests/model/keeper.rs). No record ever exists below what a pool without
//! a ceiling can hand out.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use zooid::durable::{DirRecords, DurableStore, Record};
use zooid::keeper::{KeeperOptions, Sizing};
use zooid::range::IdRange;
use zooid::zk::Zk;
use zooid::{CategorySpec, IdCategory, IdGeneratorService, Layout, PoolInfo, ServiceOptions};

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

/// P's options: a short wait at a ceiling.
fn p_options() -> ServiceOptions {
    ServiceOptions {
        ceiling_wait: std::time::Duration::from_secs(1),
        ..ServiceOptions::default()
    }
}

/// The ceiling of K's first line naming one for the category (`... category=P ceiling=N ...`).
fn first_ceiling_line(lines: &Mutex<Vec<String>>) -> Option<i64> {
    lines.lock().unwrap().iter().find_map(|l| {
        let rest = l.split(" ceiling=").nth(1)?;
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        digits.parse().ok()
    })
}

fn ids_of(ranges: &[IdRange]) -> Vec<i64> {
    ranges.iter().flat_map(|r| r.start()..=r.end()).collect()
}

/// How the keeper goes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Keeper {
    /// Paused at its first pool write (block allocation: after its seal of the generation, its
    /// reply held; a single node: before its fenced write is sent) while P takes, then stalled
    /// at the read of its next attempt.
    Stalled,
    /// Left alone.
    Free,
}

/// K: the only keeper (reserve 16) over `k_zk`, its lines kept in `lines`. The keeper stops
/// when the sender is dropped or the task aborted.
fn start_keeper(
    k_zk: Zk,
    records: &DirRecords,
    lines: &Arc<Mutex<Vec<String>>>,
) -> (
    tokio::task::JoinHandle<zooid::Result<()>>,
    watch::Sender<bool>,
) {
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
    let (stop, stop_rx) = watch::channel(false);
    let keeper = tokio::spawn(zooid::keeper::run(
        k_zk,
        DurableStore::Dir(records.clone().inline()),
        options,
        stop_rx,
    ));
    (keeper, stop)
}

/// What every scenario here starts from: a world without faults, the category `/ids/first`
/// (1..=1000, `layout`, no ceiling) made by an admin session, and P, a process of its own,
/// which took 10 IDs twice.
struct Start {
    world: World,
    creator: IdGeneratorService,
    category: IdCategory,
    path: String,
    bounds: IdRange,
    p: IdGeneratorService,
    p_ids: Vec<IdRange>,
    /// The pool after P's takes.
    old: PoolInfo,
}

async fn start(seed: u64, layout: Layout) -> Start {
    let world = World::new(seed, Faults::all().none(), false);
    tokio::spawn(world.clone().drive());
    let admin: Zk = SimSession::open(&world, 0, 0);
    let category = IdCategory::new("/ids/first").unwrap();
    let path = category.name().to_string();
    let bounds = IdRange::new(1, 1000).unwrap();
    let creator = IdGeneratorService::on_zookeeper(admin, ServiceOptions::default());
    creator
        .create_category(&category, &CategorySpec::new(1, 1000).layout(layout))
        .await
        .expect("create");
    let p = IdGeneratorService::on_zookeeper(SimSession::open(&world, 2, 2), p_options());
    let mut p_ids: Vec<IdRange> = Vec::new();
    for _ in 0..2 {
        let set = p.take_ids(&category, 10).await.expect("P take");
        p_ids.extend(set.ranges().to_vec());
    }
    let old = creator.pool_info(&category).await.expect("info");
    assert_eq!(old.ceiling, None, "guard: the pool has no ceiling");
    Start {
        world,
        creator,
        category,
        path,
        bounds,
        p,
        p_ids,
        old,
    }
}

async fn scenario(seed: u64, layout: Layout, how: Keeper) {
    let Start {
        world,
        creator,
        category,
        path,
        bounds,
        p,
        mut p_ids,
        old,
    } = start(seed, layout).await;
    println!(
        "pool before the keeper: version {}, ceiling {:?}, blocks {:?}, high water {}; P holds {p_ids:?}",
        old.version, old.ceiling, old.blocks, old.high_water
    );
    let blocks = matches!(layout, Layout::HoleNodes { .. });
    assert_eq!(old.blocks.is_some(), blocks, "guard: the layout");

    // K: the only keeper (reserve 16).
    let dir = RecordDir::new(&format!("{seed}-{how:?}"));
    let records = DirRecords::open(&dir.0).expect("durable store");
    let first_gate = Gate::armed();
    // The scan's get of the pool and the first evaluation's come first.
    let stall_gate = Gate::after(2);
    let sent = Arc::new(Mutex::new(Vec::new()));
    let mut k_zk = Flaky::over(SimSession::open(&world, 1, 1));
    if how == Keeper::Stalled {
        if blocks {
            k_zk.hold_set = Some((format!("{path}/zooid-blocks-"), first_gate.clone()));
        } else {
            k_zk.pause_set = Some((path.clone(), first_gate.clone()));
        }
        k_zk.pause_get = Some((path.clone(), stall_gate.clone()));
    }
    k_zk.sets_sent = Some((path.clone(), sent.clone()));
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let (keeper, _stop) = start_keeper(Arc::new(k_zk), &records, &lines);

    let target = match how {
        Keeper::Free => {
            for _ in 0..300 {
                if contains(&lines, "raised category=") {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            assert!(
                contains(&lines, "raised category="),
                "guard: K raised the pool"
            );
            let record = records.read(&path).expect("read").expect("guard: a record");
            let info = creator.pool_info(&category).await.expect("info");
            println!(
                "K's first ceiling: record {}, pool ceiling {:?}",
                record.ceiling, info.ceiling
            );
            assert!(
                record.ceiling >= old.high_water,
                "the first record {} below the IDs handed out before it (up to {})",
                record.ceiling,
                old.high_water
            );
            assert!(
                info.ceiling.is_some_and(|c| c <= record.ceiling),
                "guard: the pool at or below its record"
            );
            record.ceiling
        }
        Keeper::Stalled => {
            let paused_first = tokio::select! {
                biased;
                _ = first_gate.entered.notified() => true,
                _ = stall_gate.entered.notified() => false,
            };
            let record = records.read(&path).expect("read");
            let at_pause = creator.pool_info(&category).await.expect("info");
            println!(
                "K paused at its first pool write: {paused_first}; K's first ceiling line: {:?}; record {:?}; pool version {}, ceiling {:?}, blocks {:?}",
                first_ceiling_line(&lines),
                record.as_ref().map(|r| r.ceiling),
                at_pause.version,
                at_pause.ceiling,
                at_pause.blocks
            );
            match record {
                Some(record) => {
                    // The interleaving: K made its first ceiling durable, then paused at its
                    // pool write (after its seal, in block allocation).
                    let recorded = record.ceiling;
                    assert!(paused_first, "guard: K paused at its first pool write");
                    assert_eq!(
                        first_ceiling_line(&lines),
                        Some(recorded),
                        "guard: K made its first ceiling durable before its pool write"
                    );
                    assert_eq!(
                        at_pause.version, old.version,
                        "guard: the pool as K read it"
                    );
                    assert_eq!(
                        sent.lock().unwrap().len(),
                        usize::from(!blocks),
                        "guard: K's pool write not sent yet (block allocation) or paused (a single node)"
                    );

                    // P takes: in block allocation it meets the sealed generation and finishes
                    // the move (the next generation, no ceiling); in a single node it moves the
                    // pool's version.
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
                    assert_eq!(moved.ceiling, None, "guard: still no ceiling");
                    if blocks {
                        assert_ne!(
                            moved.blocks.expect("blocks").generation,
                            old.blocks.expect("blocks").generation,
                            "guard: P moved the pool past the sealed generation"
                        );
                    }
                    assert_eq!(
                        moved.version,
                        old.version + 1,
                        "guard: P's take wrote the pool"
                    );

                    // K resumes: its fenced write at the version it read fails; the read of
                    // its next attempt is paused.
                    first_gate.release.notify_one();
                    stall_gate.entered.notified().await;
                    let stalled = creator.pool_info(&category).await.expect("info");
                    println!(
                        "K stalled at its next read; K's pool writes sent: {:?}; pool version {}, ceiling {:?}",
                        sent.lock().unwrap(),
                        stalled.version,
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
                    assert_eq!(
                        stalled.ceiling, None,
                        "guard: the pool still has no ceiling"
                    );
                    assert_eq!(
                        stalled.version, moved.version,
                        "guard: K's write did not apply"
                    );
                    recorded
                }
                None => {
                    // The fix: the ceiling goes to the pool first, nothing is made durable.
                    if paused_first {
                        first_gate.release.notify_one();
                        stall_gate.entered.notified().await;
                    }
                    let info = creator.pool_info(&category).await.expect("info");
                    println!(
                        "K stalled; pool version {}, ceiling {:?}",
                        info.version, info.ceiling
                    );
                    assert!(
                        contains(&lines, &format!("provisional category={path}")),
                        "guard: K wrote a provisional ceiling"
                    );
                    assert!(
                        records.read(&path).expect("read").is_none(),
                        "guard: no record yet"
                    );
                    assert_eq!(info.ceiling, Some(0), "guard: the provisional ceiling");
                    old.high_water + 16
                }
            }
        }
    };

    // P takes on, past the first ceiling K planned (or until it can take no more).
    while p_ids.iter().map(|r| r.end()).max().unwrap_or(0) <= target + 10 {
        match p.take_ids(&category, 10).await {
            Ok(set) => p_ids.extend(set.ranges().to_vec()),
            Err(err) => {
                println!("P: {err}");
                break;
            }
        }
    }
    let above: Vec<i64> = ids_of(&p_ids)
        .into_iter()
        .filter(|&id| id > target)
        .collect();
    println!("P holds {p_ids:?}; above K's first ceiling {target}: {above:?}");

    wipe_restore_and_check(&world, &records, &category, bounds, &p_ids).await;
    keeper.abort();
}

/// The wipe, and `zooid restore` in the maintenance window from the record (if there is one),
/// then a raise durable first; R, a fresh process, takes from the restored pool and must get
/// none of the IDs P holds.
async fn wipe_restore_and_check(
    world: &World,
    records: &DirRecords,
    category: &IdCategory,
    bounds: IdRange,
    p_ids: &[IdRange],
) {
    let path = category.name().to_string();
    let op_zk = wipe(world);
    let op = IdGeneratorService::on_zookeeper(op_zk, ServiceOptions::default());
    let Some(record) = records.read(&path).expect("read") else {
        // `zooid restore` restores the categories it has records of: none here, as for a
        // category that never had a ceiling (docs/DURABILITY.md: not covered).
        println!("no durable record: nothing to restore, nothing reissued from a record");
        return;
    };
    let recorded = record.ceiling;
    let bumped = record.for_new_history();
    let epoch = bumped.fence.generation;
    records
        .write(&bumped)
        .expect("durable record for the new history");
    let restored = op
        .restore_category_in(category, bounds, record.ceiling, epoch, record.layout())
        .await;
    println!(
        "restore ceiling {} epoch {epoch} layout {:?}: {restored:?}",
        record.ceiling,
        record.layout()
    );
    restored.expect("restore");
    let raised_to = record.ceiling + 64;
    records
        .write(&Record::new(&path, bounds, raised_to, bumped.fence).with_layout(record.layout()))
        .expect("durable raise");
    op.raise_ceiling(category, raised_to).await.expect("raise");
    reopen(world);

    // R, a fresh process, takes from the restored pool.
    let r =
        IdGeneratorService::on_zookeeper(SimSession::open(world, 4, 4), ServiceOptions::default());
    let r_set = r.take_ids(category, 10).await.expect("R take");
    println!("R (restored pool): {:?}", r_set.ranges());
    let held = ids_of(p_ids);
    let twice: Vec<i64> = ids_of(&r_set.ranges())
        .into_iter()
        .filter(|id| held.contains(id))
        .collect();
    assert!(
        twice.is_empty(),
        "IDs handed out twice: {twice:?} (to P before the wipe, from the pool without a ceiling, above the record's {recorded}; to R from the pool restored from the record)"
    );
}

/// K, the only keeper (reserve 16), finds the block pool `/ids/first` (1..=1000, blocks of 4,
/// no ceiling; P took 20 IDs) and gives it its first ceiling. Before the fix: the record first
/// (ceiling 36 = high water + 16), then it seals generation g and its reply is held (K paused
/// after its seal). P's next take meets the sealed generation and finishes the move: generation
/// g+1, no ceiling. K resumes: its fenced pool write at the version it read fails, and K is
/// paused at the read of its next attempt. P takes on, past 36. ZooKeeper is wiped; the
/// operator restores the category from the record (`zooid restore`: generation bumped, pool
/// from 37) and raises it durable first; R, a fresh process, takes 37..=46, which P holds. Now:
/// K writes the provisional ceiling 0 (no seal, no record) and stalls; P's takes wait at it; the
/// wipe finds no record, and nothing is reissued from one.
#[test]
fn a_first_ceiling_whose_move_a_take_finished_does_not_reissue_ids_after_a_wipe() {
    run_scenario(scenario(41, Layout::HoleNodes { unit: 4 }, Keeper::Stalled));
}

/// The same in a single node: before the fix K made 36 durable, paused before its fenced pool
/// write, P's take moved the pool's version, K's write failed and K stalled; P took past 36 and
/// the restored pool handed 37..=46 out again. Now K's provisional write fails on the version,
/// K stalls with nothing made durable.
#[test]
fn a_first_ceiling_of_a_single_node_whose_write_lost_to_a_take_does_not_reissue_ids_after_a_wipe() {
    run_scenario(scenario(43, Layout::SingleNode, Keeper::Stalled));
}

/// The fixed first ceiling as it goes when nothing stalls the keeper: the provisional ceiling,
/// then the record above every ID handed out, then the pool's ceiling; P takes up to it, and
/// after a wipe and a restore R gets none of P's IDs.
#[test]
fn a_first_ceiling_covers_what_was_handed_out_through_a_wipe() {
    run_scenario(scenario(47, Layout::HoleNodes { unit: 4 }, Keeper::Free));
    run_scenario(scenario(53, Layout::SingleNode, Keeper::Free));
}

/// A pool without a ceiling behind a durable record (ceiling 5; P took 1..=20 from the pool:
/// a rollback of ZooKeeper to before the pool's first ceiling, or a record written by a keeper
/// before this fix). K repairs it. Before this review the repair made
/// `max(record, high water) + reserve` = 36 durable first while the pool still had no ceiling,
/// then wrote the pool: K paused at its pool write found the record at 36 and takes free to pass it (the first
/// scenario's wipe then reissues what they took). Now K writes no record while the pool has
/// none: its first write is the provisional ceiling 0, the repair follows on a pool that hands
/// out nothing more, and its record covers every ID P took, through a wipe.
#[test]
fn a_repair_of_a_pool_without_a_ceiling_writes_no_record_before_the_pool_has_one() {
    run_scenario(async {
        let Start {
            world,
            creator,
            category,
            path,
            bounds,
            p,
            mut p_ids,
            old,
        } = start(59, Layout::SingleNode).await;
        assert_eq!(old.high_water, 20, "guard: P took 1..=20");
        let dir = RecordDir::new("repair");
        let records = DirRecords::open(&dir.0).expect("durable store");
        let fence = zooid::durable::Fence {
            generation: old.epoch,
            token: 1,
        };
        records
            .write(&Record::new(&path, bounds, 5, fence).with_layout(Layout::SingleNode))
            .expect("the record the pool is behind");

        // K pauses at its first pool write.
        let first_gate = Gate::armed();
        let mut k_zk = Flaky::over(SimSession::open(&world, 1, 1));
        k_zk.pause_set = Some((path.clone(), first_gate.clone()));
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let (keeper, _stop) = start_keeper(Arc::new(k_zk), &records, &lines);
        first_gate.entered.notified().await;
        let at_pause = records.read(&path).expect("read").expect("a record");
        let pool = creator.pool_info(&category).await.expect("info");
        println!(
            "K paused at its first pool write: record {}, pool ceiling {:?}",
            at_pause.ceiling, pool.ceiling
        );
        assert_eq!(pool.ceiling, None, "guard: the pool still has no ceiling");
        assert_eq!(
            at_pause.ceiling, 5,
            "K made a record durable while the pool had no ceiling: takes may pass it until K's pool write lands"
        );
        first_gate.release.notify_one();

        // K goes on: the repair lands; P takes until it waits at the ceiling or passes 40.
        for _ in 0..300 {
            if contains(&lines, "REPAIR category=") {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert!(
            contains(&lines, "REPAIR category="),
            "guard: K repaired the pool"
        );
        while p_ids.iter().map(|r| r.end()).max().unwrap_or(0) <= 40 {
            match p.take_ids(&category, 10).await {
                Ok(set) => p_ids.extend(set.ranges().to_vec()),
                Err(err) => {
                    println!("P: {err}");
                    break;
                }
            }
        }
        let record = records.read(&path).expect("read").expect("a record");
        let highest = p_ids.iter().map(|r| r.end()).max().unwrap_or(0);
        println!("P holds {p_ids:?}; the record {}", record.ceiling);
        assert!(
            highest <= record.ceiling,
            "P took {highest}, above the record {}",
            record.ceiling
        );
        wipe_restore_and_check(&world, &records, &category, bounds, &p_ids).await;
        keeper.abort();
    });
}

/// Who gives the pool its first ceiling.
#[derive(Clone, Copy, Debug)]
enum FirstCeiling {
    /// The keeper: the provisional ceiling, then a durable one above the high water.
    Keeper,
    /// The operator: `raise_ceiling` to 30.
    Operator,
}

/// A claim of fresh blocks planned on the pool before its first ceiling and sent after it.
/// Claims check that their generation is open, not the pool node, so whoever writes a first
/// ceiling seals the generation first (src/keeper/raise.rs `provisional`, src/alloc/admin.rs
/// `raise`). Q plans a take of 40 IDs on the pool without a ceiling (high water 20) and pauses
/// just before its claim is sent; the first ceiling lands (K: the provisional one, then 36 made
/// durable and raised to; the operator: 30); Q's claim goes out then. Without the seal (the
/// mutant `first_ceiling_unsealed`) it lands in the generation Q planned on and hands out IDs
/// above the ceiling (above K's durable record, which the restored pool hands out again after a
/// wipe). With it, the claim meets the sealed generation, Q finishes the move and plans again
/// under the ceiling.
#[test]
fn a_claim_planned_before_the_first_ceiling_does_not_land_after_it() {
    run_scenario(claim_across_the_first_ceiling(61, FirstCeiling::Keeper));
    run_scenario(claim_across_the_first_ceiling(67, FirstCeiling::Operator));
}

async fn claim_across_the_first_ceiling(seed: u64, by: FirstCeiling) {
    {
        let Start {
            world,
            creator,
            category,
            path,
            bounds,
            p_ids: mut held,
            old,
            ..
        } = start(seed, Layout::HoleNodes { unit: 4 }).await;
        let generation = old.blocks.expect("guard: block allocation").generation;

        // Q plans its take on the pool without a ceiling and pauses before its claim is sent.
        let q_gate = Gate::armed();
        let mut q_zk = Flaky::over(SimSession::open(&world, 3, 3));
        q_zk.pause_write_under = Some((
            zooid::format::sequence_parent(&path, generation),
            q_gate.clone(),
        ));
        let q = Arc::new(IdGeneratorService::on_zookeeper(q_zk.into_zk(), p_options()));
        let q_take = tokio::spawn({
            let (q, category) = (q.clone(), category.clone());
            async move { q.take_ids(&category, 40).await }
        });
        q_gate.entered.notified().await;

        // The first ceiling lands while Q's claim waits.
        let dir = RecordDir::new(&format!("claim-in-flight-{seed}"));
        let records = DirRecords::open(&dir.0).expect("durable store");
        let (keeper, ceiling) = match by {
            FirstCeiling::Keeper => {
                let lines = Arc::new(Mutex::new(Vec::<String>::new()));
                let (keeper, stop) =
                    start_keeper(SimSession::open(&world, 1, 1), &records, &lines);
                for _ in 0..300 {
                    if contains(&lines, "raised category=") {
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                assert!(
                    contains(&lines, &format!("provisional category={path}")),
                    "guard: K wrote the provisional ceiling"
                );
                assert!(
                    contains(&lines, "raised category="),
                    "guard: K raised the pool"
                );
                let record = records.read(&path).expect("read");
                (Some((keeper, stop)), record.expect("guard: a record").ceiling)
            }
            FirstCeiling::Operator => {
                creator.raise_ceiling(&category, 30).await.expect("raise");
                (None, 30)
            }
        };
        assert!(
            !q_take.is_finished(),
            "guard: Q's claim was still waiting when K's ceiling landed"
        );

        // Q's claim goes out now.
        q_gate.release.notify_one();
        let q_ids = match q_take.await.expect("Q's task") {
            Ok(set) => set.ranges().to_vec(),
            Err(err) => {
                println!("Q: {err}");
                Vec::new()
            }
        };
        let now = creator.pool_info(&category).await.expect("info");
        println!(
            "first ceiling {ceiling} ({by:?}); Q got {q_ids:?}; pool ceiling {:?}, generation {:?} (planned on {generation})",
            now.ceiling,
            now.blocks.map(|b| b.generation)
        );
        let above: Vec<i64> = ids_of(&q_ids)
            .into_iter()
            .filter(|&id| id > ceiling)
            .collect();
        assert!(
            above.is_empty(),
            "Q's claim planned before the first ceiling ({by:?}) handed out {above:?}, above its {ceiling}"
        );
        held.extend(q_ids);
        if let Some((keeper, _stop)) = keeper {
            wipe_restore_and_check(&world, &records, &category, bounds, &held).await;
            keeper.abort();
        }
    }
}
