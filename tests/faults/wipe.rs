//! The wipe rows (10a to 10d): every ZooKeeper server loses its data mid-burst while `zooid
//! keeper` processes keep the category's ceiling ahead of the workers, then `zooid restore`
//! recreates the category from the keepers' durable records and the workers carry on.
//!
//! Besides the suite's checker over every ledger from before and after the wipe (no ID handed
//! out twice, every ID accounted for), a row checks that every take's IDs were at or below the
//! durable record as the sampler read it when the take returned (or at the first read after),
//! counts the IDs at or below the record that the restore gave up as leaked by the restore and
//! bounds them by the keeper's reserve cap plus what was free in the pool when it was wiped.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zooid::durable::DirRecords;
use zooid_test_support::{cli_binary, spawn_with_parent_death_signal};

use crate::check::{Ivs, OpRecord};
use crate::rig::{serial, unix_ms, Config, Expect, Rig};

/// The keepers' root: the rig's category `/faults/ids` lies under it.
const ROOT: &str = "/faults";
/// The keepers' reserve: at least this many IDs above the high water...
const RESERVE_FLOOR: u64 = 1_000;
/// ...and at most this many: the most a wipe may cost beyond the IDs free in the pool.
const RESERVE_CAP: u64 = 10_000;

/// One `zooid keeper` process over [`ROOT`], its stderr in a file, stopped by PID.
struct Keeper {
    name: String,
    child: Option<Child>,
    log: PathBuf,
}

impl Keeper {
    fn start(name: &str, dir: &Path, connect: &str, records: &Path) -> Keeper {
        let log = dir.join(format!("{name}.keeper"));
        let file = fs::File::create(&log).expect("a keeper log");
        let mut cmd = Command::new(cli_binary());
        cmd.args([
            "--connect",
            connect,
            "--session-timeout-ms",
            "3000",
            "keeper",
        ])
        .arg("--durable")
        .arg(records)
        .args(["--root", ROOT, "--name", name])
        .args(["--reserve-floor", &RESERVE_FLOOR.to_string()])
        .args(["--reserve-cap", &RESERVE_CAP.to_string()])
        .args(["--reserve-minutes", "0.05", "--tick-ms", "100"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(file);
        let child = spawn_with_parent_death_signal(cmd).expect("start zooid keeper");
        Keeper {
            name: name.to_string(),
            child: Some(child),
            log,
        }
    }

    fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether its last word on leadership is "active".
    fn is_active(&self) -> bool {
        let log = self.log();
        let active = log.rfind(" active, token ");
        let inactive = log.rfind("no longer active").max(log.rfind("stepped back"));
        active.is_some() && active > inactive
    }

    /// Whether the process is still running.
    fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }

    /// SIGKILL and reap.
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads the durable record's ceiling every 20 ms while the row runs: `(unix ms, ceiling)`.
struct Sampler {
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<(u128, i64)>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    fn start(records: &Path, category: &str) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let store = DirRecords::open(records).expect("the records directory");
        let (flag, out, category) = (stop.clone(), samples.clone(), category.to_string());
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::SeqCst) {
                // The time before the read: the record read was current at or after it.
                let at = unix_ms();
                if let Ok(Some(record)) = store.read(&category) {
                    out.lock().unwrap().push((at, record.ceiling));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Sampler {
            stop,
            samples,
            thread: Some(thread),
        }
    }

    /// Stops sampling; the samples in time order.
    fn finish(mut self) -> Vec<(u128, i64)> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        std::mem::take(&mut *self.samples.lock().unwrap())
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// One successful take: its operation record and the ranges of its `T` lines.
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

/// The durable record's ceiling of the rig's category.
fn record_ceiling(records: &Path, category: &str) -> i64 {
    DirRecords::open(records)
        .and_then(|r| r.read(category))
        .expect("read the durable record")
        .expect("a durable record of the category")
        .ceiling
}

/// Runs `zooid restore` from `records` over [`ROOT`]; returns the ceiling it restored
/// `category` with (its `restored ... ceiling N ...` line).
fn zooid_restore(connect: &str, records: &Path, category: &str) -> i64 {
    let out = Command::new(cli_binary())
        .args(["--connect", connect, "restore", "--durable"])
        .arg(records)
        .args(["--root", ROOT])
        .output()
        .expect("run zooid restore");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "zooid restore failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("zooid restore: {}", stdout.trim());
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&format!("restored {category} ")))
        .unwrap_or_else(|| panic!("zooid restore did not recreate {category}: {stdout}"));
    line.split_once(" ceiling ")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no ceiling in {line:?}"))
}

/// How many candidates the keepers' election group has on the ensemble at `connect`.
fn candidates(connect: &str) -> usize {
    zooid_test_support::runtime().block_on(async {
        let Ok(client) = zookeeper_client::Client::connect(connect).await else {
            return 0;
        };
        client
            .list_children(zooid::keeper::DEFAULT_GROUP)
            .await
            .map_or(0, |children| {
                children.iter().filter(|c| c.contains("-n_")).count()
            })
    })
}

/// The IDs free at or below `high_water` in a pool.
fn free_below(info: &zooid::PoolInfo) -> u64 {
    let free = Ivs::new(info.free.iter().map(|r| (r.start(), r.end())));
    free.intersect(&Ivs::new([(i64::MIN, info.high_water)]))
        .count()
}

/// The wipe rows' allowed errors besides the transient ones: the category missing between the
/// wipe and the restore, and a take that waited its ceiling wait for a keeper's raise.
const WIPE: Expect = Expect {
    unknown_allowed: true,
    also_errors: &["not-found", "reservation-exhausted"],
};

/// Two keepers over the rig's category and a burst of takes and pushes; every server is wiped
/// (with the active keeper SIGKILLed just before, if `kill_keeper`) and restarted empty; `zooid
/// restore`; the workload carries on. See the module's comment for what is checked.
pub fn wipe_mid_burst(name: &str, cfg: Config, kill_keeper: bool) {
    let _serial = serial();
    let cfg = Config { kept: true, ..cfg };
    // Built before the workload starts, so that the build does not eat the row's time.
    let cli = cli_binary();
    assert!(cli.is_file());
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
    let logs = |keepers: &[Keeper]| {
        keepers
            .iter()
            .map(|k| format!("--- {} ---\n{}", k.name, k.log()))
            .collect::<String>()
    };
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
    let restored_ms = unix_ms();
    rig.record_fault("zooid restore");
    assert_eq!(
        restored, recorded,
        "the restore used another ceiling than the record's"
    );
    rig.restored_from(restored);
    rig.assert_progress(30, "the restore");
    // A keeper that came through the wipe raised the restored category.
    let raised = format!("raised category={category} ceiling {restored} -> ");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !keepers.iter().any(|k| k.log().contains(&raised)) {
        assert!(
            Instant::now() < deadline,
            "no keeper raised the restored category:\n{}",
            logs(&keepers)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Every keeper still running is a candidate again on the wiped ensemble.
    let running = if kill_keeper { 1 } else { 2 };
    assert!(
        zooid_test_support::wait_until(Duration::from_secs(30), || {
            candidates(&direct) == running
        }),
        "the keepers did not rejoin their election ({} candidates):\n{}",
        candidates(&direct),
        logs(&keepers)
    );
    rig.run_for(Duration::from_secs_f64(1.5));
    let a = rig.finish();
    let samples = sampler.finish();
    let last = record_ceiling(&records, &category);
    for (i, k) in keepers.iter_mut().enumerate() {
        let killed = kill_keeper && i == active;
        assert!(
            killed || k.is_running(),
            "keeper {} exited:\n{}",
            k.name,
            k.log()
        );
    }
    let raisers: Vec<&str> = keepers
        .iter()
        .filter(|k| k.log().contains(&raised))
        .map(|k| k.name.as_str())
        .collect();
    if kill_keeper {
        assert!(
            !raisers.contains(&keepers[active].name.as_str()),
            "the killed keeper raised"
        );
    }

    // The wipe happened mid-burst: takes completed before it and after the restore, and some
    // operations were in flight across it or failed between it and the restore.
    let ok_before = count(&a.records, |r| {
        r.op == "take" && r.outcome == "ok" && r.end_ms < wipe_ms
    });
    let ok_after = count(&a.records, |r| {
        r.op == "take" && r.outcome == "ok" && r.start_ms >= restored_ms
    });
    // In flight at the wipe, and overlapping the outage (the wipe until the servers were back).
    let at_wipe = count(&a.records, |r| r.start_ms <= wipe_ms && r.end_ms >= wipe_ms);
    let overlapping = |r: &OpRecord| r.start_ms <= back_ms && r.end_ms >= wipe_ms;
    let across = count(&a.records, overlapping);
    let across_failed = count(&a.records, |r| overlapping(r) && r.outcome != "ok");
    let failed_meanwhile = count(&a.records, |r| {
        r.end_ms >= wipe_ms && r.start_ms <= restored_ms && r.outcome != "ok"
    });
    let not_found_outside = a
        .records
        .iter()
        .filter(|r| {
            r.outcome == "err:not-found" && (r.end_ms < wipe_ms || r.start_ms > restored_ms)
        })
        .count();
    eprintln!(
        "[{name}] wipe: {ok_before} takes completed before it, {ok_after} after the restore; \
         {at_wipe} operations in flight at it, {across} overlapping the outage ({across_failed} \
         failed or unknown), {failed_meanwhile} failed or unknown from it to the restore; \
         servers back after {} ms, \
         restore done {} ms after the wipe; raised after the restore by {raisers:?}",
        back_ms - wipe_ms,
        restored_ms - wipe_ms
    );
    assert!(ok_before > 0 && ok_after > 0, "the wipe was not mid-burst");
    assert!(at_wipe > 0, "no operation was in flight at the wipe");
    assert_eq!(
        not_found_outside, 0,
        "the category was missing outside the wipe's window"
    );
    // No ID twice across before and after, every ID accounted for.
    rig.assert_guarantees(&a, WIPE);

    // Every take's IDs at or below the durable record: the record as read when the take
    // returned (the first sample at or after its end; the record only grows, the restore keeps
    // its ceiling).
    let takes = takes(rig.dir());
    let mut checked = 0;
    for t in &takes {
        let at = samples.iter().find(|(ms, _)| *ms >= t.end_ms);
        let ceiling = at.map_or(last, |(_, c)| *c);
        assert!(
            t.highest <= ceiling,
            "a take ({} to {} ms) handed out ID {} above the durable record {ceiling}",
            t.start_ms,
            t.end_ms,
            t.highest
        );
        if t.end_ms <= restored_ms {
            assert!(
                t.highest <= restored,
                "a take that returned before the restore handed out {} above the record it restored ({restored})",
                t.highest
            );
        }
        checked += 1;
    }
    let highest_before = takes
        .iter()
        .filter(|t| t.end_ms < wipe_ms)
        .map(|t| t.highest)
        .max()
        .unwrap_or(0);

    // What the restore gave up (`Rig::finish` counted the unexplained IDs at or below its
    // record), bounded by the keeper's reserve cap plus what was free in the pool at the wipe.
    let gave_up = a.restore_gave_up;
    let free_then = free_below(&before);
    let moved_since = a
        .records
        .iter()
        .filter(|r| r.start_ms <= wipe_ms && r.end_ms >= snapshot_ms)
        .map(|r| if r.op == "push" { r.ids } else { rig.cfg.batch })
        .sum::<u64>();
    let bound = RESERVE_CAP + free_then + moved_since;
    eprintln!(
        "[{name}] restore: record {restored} at the wipe, {last} at the end ({} samples); \
         {checked} takes at or below the record; highest ID handed out before the wipe \
         {highest_before} ({} below the record); the restore gave up {} IDs (bound {bound}: \
         reserve cap {RESERVE_CAP} + {free_then} free below the high water {} just before the \
         wipe + {moved_since} pushed or taken since)",
        samples.len(),
        restored - highest_before,
        gave_up,
        before.high_water,
    );
    assert!(
        gave_up <= bound,
        "the restore gave up more than the reserve and the free IDs"
    );
}

fn count(records: &[OpRecord], f: impl Fn(&OpRecord) -> bool) -> u64 {
    records.iter().filter(|r| f(r)).count() as u64
}
