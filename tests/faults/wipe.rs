//! The wipe rows (10a to 10f): every ZooKeeper server loses its data mid-burst while `zooid
//! keeper` processes keep the category's ceiling ahead of the workers, then `zooid restore`
//! recreates the category from the keepers' durable records and the workers carry on.
//!
//! Besides the suite's checker over every ledger from before and after the wipe (no ID handed
//! out twice, every ID accounted for), a row checks that every take's IDs were at or below the
//! durable record as the sampler read it when the take returned (or at the first read after),
//! counts the IDs at or below the record that the restore gave up as leaked by the restore and
//! bounds them by the keeper's reserve cap plus what was free in the pool when it was wiped.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use zooid_test_support::cli_binary;

use crate::check::{Analysis, Ivs, OpRecord};
use crate::keepers::{candidates, record_ceiling, zooid_restore, Keeper, Sampler, RESERVE_CAP};
use crate::rig::{serial, unix_ms, Config, Expect, Rig};

/// One successful take: when it ran (its `.ops` record) and the highest ID of its `T` lines.
struct Take {
    start_ms: u128,
    end_ms: u128,
    highest: i64,
}

/// Every successful take of every thread, its `T` lines paired with its `< take ok` line: a
/// take writes its `T` lines (one per range), then its `<` line, and the thread always writes a
/// `U`, `P`, `L` or `E` line before its next take (it pushes part of every batch back).
fn takes(dir: &Path) -> Vec<Take> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".ops") else {
            continue;
        };
        let ops = fs::read_to_string(entry.path()).unwrap_or_default();
        let ledger = fs::read_to_string(dir.join(format!("{stem}.log"))).unwrap_or_default();
        let mut groups: Vec<i64> = Vec::new();
        let mut in_group = false;
        for line in ledger.lines() {
            match line.strip_prefix("T ") {
                Some(range) => {
                    let end: i64 = range
                        .split_once(':')
                        .and_then(|(_, e)| e.parse().ok())
                        .unwrap_or_else(|| panic!("{stem}.log: unreadable {line:?}"));
                    match (in_group, groups.last_mut()) {
                        (true, Some(highest)) => *highest = (*highest).max(end),
                        _ => groups.push(end),
                    }
                    in_group = true;
                }
                None => in_group = false,
            }
        }
        let oks: Vec<(u128, u128)> = ops
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                match f.as_slice() {
                    ["<", "take", "ok", _, start, end, _] => {
                        Some((start.parse().ok()?, end.parse().ok()?))
                    }
                    _ => None,
                }
            })
            .collect();
        assert_eq!(
            groups.len(),
            oks.len(),
            "{stem}: {} groups of T lines, {} successful takes",
            groups.len(),
            oks.len()
        );
        out.extend(
            oks.into_iter()
                .zip(groups)
                .map(|((start_ms, end_ms), highest)| Take {
                    start_ms,
                    end_ms,
                    highest,
                }),
        );
    }
    out
}

/// The IDs free at or below `high_water` in a pool.
fn free_below(info: &zooid::PoolInfo) -> u64 {
    Ivs::of(&info.free)
        .intersect(&Ivs::new([(i64::MIN, info.high_water)]))
        .count()
}

/// The wipe rows' allowed errors besides the transient ones: the category missing between the
/// wipe and the restore, and a take that waited its ceiling wait for a keeper's raise.
const WIPE: Expect = Expect {
    unknown_allowed: true,
    push_unknown_allowed: false,
    also_errors: &["not-found", "reservation-exhausted"],
};

/// The moments of a wipe row, in unix ms.
struct Window {
    /// The pool read just before the wipe.
    snapshot_ms: u128,
    wipe_ms: u128,
    /// The servers back, with a quorum.
    back_ms: u128,
    /// `zooid restore` done.
    restored_ms: u128,
}

/// Two keepers over the rig's category and a burst of takes and pushes; every server is wiped
/// (with the active keeper SIGKILLed just before, if `kill_keeper`) and restarted empty; `zooid
/// restore`; the workload carries on. See the module's comment for what is checked.
pub fn wipe_mid_burst(name: &str, cfg: Config, kill_keeper: bool) {
    let _serial = serial();
    let cfg = Config { kept: true, ..cfg };
    // Built before the workload starts, so that the build does not eat the row's time.
    assert!(cli_binary().is_file());
    let mut rig = Rig::start(name, cfg);
    let category = rig.category.name().to_string();
    let keeper_dir = rig.dir().join("keepers");
    fs::create_dir_all(&keeper_dir).unwrap();
    let records = keeper_dir.join("records");
    let direct = rig.zk.connect_string();
    let mut keepers: Vec<Keeper> = ["k1", "k2"]
        .iter()
        .map(|k| Keeper::start(k, &keeper_dir, &direct, &records))
        .collect();
    let sampler = Sampler::start(&records, &category);
    rig.warm_up();
    let active = keepers
        .iter()
        .position(Keeper::is_active)
        .unwrap_or_else(|| panic!("no keeper is active:\n{}", logs(&keepers)));
    // The pool just before the wipe: what the restore may give up beyond the reserve is what
    // is free in it below its high water, or pushed back or given back from here on.
    let snapshot_ms = unix_ms();
    let before = rig.pool_info().expect("read the pool before the wipe");
    if kill_keeper {
        keepers[active].kill();
        rig.record_fault("active keeper SIGKILL");
    }
    // Mid-burst: while an operation is in flight (the workers may be between operations, in a
    // pause after an error, for a while at the ceiling the killed keeper no longer raises).
    assert!(
        rig.wait_for_an_operation_in_flight(Duration::from_secs(10)),
        "guard: no operation began within 10 s before the wipe"
    );
    let wipe_ms = unix_ms();
    for i in 0..3 {
        rig.zk.wipe(i);
    }
    rig.record_fault("every server wiped");
    for i in 0..3 {
        rig.zk.restart(i);
    }
    rig.zk.wait_for_quorum(Duration::from_secs(60));
    let back_ms = unix_ms();
    let recorded = record_ceiling(&records, &category);
    let restored = zooid_restore(&direct, &records, &category);
    let window = Window {
        snapshot_ms,
        wipe_ms,
        back_ms,
        restored_ms: unix_ms(),
    };
    rig.record_fault("zooid restore");
    assert_eq!(
        restored, recorded,
        "the restore used another ceiling than the record's"
    );
    rig.restored_from(restored);
    rig.assert_progress(30, "the restore");
    let killed = kill_keeper.then_some(active);
    let raisers = keepers_came_through(&direct, &mut keepers, killed, &category, restored);
    rig.run_for(Duration::from_secs_f64(1.5));
    let a = rig.finish();
    let samples = sampler.finish();
    let last = record_ceiling(&records, &category);
    for (i, k) in keepers.iter_mut().enumerate() {
        assert!(
            killed == Some(i) || k.is_running(),
            "keeper {} exited:\n{}",
            k.name,
            k.log()
        );
    }
    assert_mid_burst(name, &a, &window, &raisers);
    // No ID twice across before and after, every ID accounted for.
    rig.assert_guarantees(&a, WIPE);
    let takes = takes(rig.dir());
    assert_under_the_record(&takes, &samples, last, restored, window.restored_ms);
    // What the restore gave up (`Rig::finish` counted the unexplained IDs at or below its
    // record), bounded by the keeper's reserve cap plus what was free in the pool at the wipe.
    let free_then = free_below(&before);
    let moved_since = a
        .records
        .iter()
        .filter(|r| r.start_ms <= window.wipe_ms && r.end_ms >= window.snapshot_ms)
        .map(|r| if r.op == "push" { r.ids } else { rig.cfg.batch })
        .sum::<u64>();
    let bound = RESERVE_CAP + free_then + moved_since;
    let highest_before = takes
        .iter()
        .filter(|t| t.end_ms < window.wipe_ms)
        .map(|t| t.highest)
        .max()
        .unwrap_or(0);
    eprintln!(
        "[{name}] restore: record {restored} at the wipe, {last} at the end ({} samples); \
         {} takes at or below the record; highest ID handed out before the wipe \
         {highest_before} ({} below the record); the restore gave up {} IDs (bound {bound}: \
         reserve cap {RESERVE_CAP} + {free_then} free below the high water {} just before the \
         wipe + {moved_since} pushed or taken since)",
        samples.len(),
        takes.len(),
        restored - highest_before,
        a.restore_gave_up,
        before.high_water,
    );
    assert!(
        a.restore_gave_up <= bound,
        "the restore gave up more than the reserve and the free IDs"
    );
}

/// The keepers' logs, for a failure.
fn logs(keepers: &[Keeper]) -> String {
    keepers
        .iter()
        .map(|k| format!("--- {} ---\n{}", k.name, k.log()))
        .collect()
}

/// Waits until a keeper raised the category restored at `restored` and every keeper still
/// running (all but `killed`) is a candidate again on the wiped ensemble; returns the names of
/// those that raised it (never the killed one).
fn keepers_came_through(
    connect: &str,
    keepers: &mut [Keeper],
    killed: Option<usize>,
    category: &str,
    restored: i64,
) -> Vec<String> {
    let raised = format!("raised category={category} ceiling {restored} -> ");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !keepers.iter().any(|k| k.log().contains(&raised)) {
        assert!(
            Instant::now() < deadline,
            "no keeper raised the restored category:\n{}",
            logs(keepers)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let running = keepers.len() - usize::from(killed.is_some());
    assert!(
        zooid_test_support::wait_until(Duration::from_secs(30), || {
            candidates(connect) == running
        }),
        "the keepers did not rejoin their election ({} candidates):\n{}",
        candidates(connect),
        logs(keepers)
    );
    let raisers: Vec<usize> = (0..keepers.len())
        .filter(|&i| keepers[i].log().contains(&raised))
        .collect();
    assert!(
        killed.is_none_or(|k| !raisers.contains(&k)),
        "the killed keeper raised"
    );
    raisers.iter().map(|&i| keepers[i].name.clone()).collect()
}

/// The wipe happened mid-burst: takes completed before it and after the restore, operations
/// were in flight at it; the category was missing only from the wipe to the restore.
fn assert_mid_burst(name: &str, a: &Analysis, w: &Window, raisers: &[String]) {
    let count = |f: &dyn Fn(&OpRecord) -> bool| a.records.iter().filter(|r| f(r)).count();
    let ok_take = |r: &OpRecord| r.op == "take" && r.outcome == "ok";
    let ok_before = count(&|r| ok_take(r) && r.end_ms < w.wipe_ms);
    let ok_after = count(&|r| ok_take(r) && r.start_ms >= w.restored_ms);
    // In flight at the wipe, and overlapping the outage (the wipe until the servers were back).
    let at_wipe = count(&|r| r.start_ms <= w.wipe_ms && r.end_ms >= w.wipe_ms);
    let overlapping = |r: &OpRecord| r.start_ms <= w.back_ms && r.end_ms >= w.wipe_ms;
    let across = count(&overlapping);
    let across_failed = count(&|r| overlapping(r) && r.outcome != "ok");
    let failed_meanwhile =
        count(&|r| r.end_ms >= w.wipe_ms && r.start_ms <= w.restored_ms && r.outcome != "ok");
    let not_found_outside = count(&|r| {
        r.outcome == "err:not-found" && (r.end_ms < w.wipe_ms || r.start_ms > w.restored_ms)
    });
    eprintln!(
        "[{name}] wipe: {ok_before} takes completed before it, {ok_after} after the restore; \
         {at_wipe} operations in flight at it, {across} overlapping the outage ({across_failed} \
         failed or unknown), {failed_meanwhile} failed or unknown from it to the restore; \
         servers back after {} ms, restore done {} ms after the wipe; raised after the restore \
         by {raisers:?}",
        w.back_ms - w.wipe_ms,
        w.restored_ms - w.wipe_ms
    );
    assert!(ok_before > 0 && ok_after > 0, "the wipe was not mid-burst");
    assert!(at_wipe > 0, "no operation was in flight at the wipe");
    assert_eq!(
        not_found_outside, 0,
        "the category was missing outside the wipe's window"
    );
}

/// Every take's IDs at or below the durable record as sampled when it returned (the first
/// sample at or after its end, else `last`: the record only grows, and the restore keeps its
/// ceiling); those of every take that returned before the restore at or below the record it
/// restored.
fn assert_under_the_record(
    takes: &[Take],
    samples: &[(u128, i64)],
    last: i64,
    restored: i64,
    restored_ms: u128,
) {
    for t in takes {
        let at = samples.iter().find(|(ms, _)| *ms >= t.end_ms);
        let ceiling = at.map_or(last, |(_, c)| *c);
        assert!(
            t.highest <= ceiling,
            "a take ({} to {} ms) handed out ID {} above the durable record {ceiling}",
            t.start_ms,
            t.end_ms,
            t.highest
        );
        assert!(
            t.end_ms > restored_ms || t.highest <= restored,
            "a take that returned before the restore handed out {} above the record it \
             restored ({restored})",
            t.highest
        );
    }
}
