//! `cargo bench --bench contention`: takes under contention from 1, 4, 16 and 32 processes, each
//! with its own ZooKeeper session, on the same server in one run, interleaved:
//!
//! - `zooid`: `take_ids(category, batch)` with default options on a category in the layout
//!   `create_category` gives on ZooKeeper (`Layout::HoleNodes`, format 4; examples/contender.rs);
//! - `zooid-single`: the same on a category in `Layout::SingleNode` (formats 1/2, the old
//!   default: one compare-and-set node);
//! - `zooid-blocks`: the same on a category made with `CategorySpec::blocks` of one
//!   batch (format 4 since format 3 was retired: the default layout with that block size);
//! - `zooid-fair`: `zooid` with `ServiceOptions::fair_pacing` (src/pace.rs);
//! - `naive`: the seed-000 loop on a legacy counter: get, add, set with the read version, retry at
//!   once on `BADVERSION` (examples/contender.rs);
//! - `raw`: the server's floor for any layout that writes once per take and once per push: a
//!   sequential `create` per take, a `delete` of it per push, no node shared (examples/contender.rs);
//! - `raw-multi`: zooid's writes of a fresh take and a push (their `multi`s, node names and
//!   receipt) sent by the raw client, nothing else: what the protocol's writes cost the server,
//!   apart from what zooid's client adds (examples/contender.rs);
//! - `raw-kept`: `raw` keeping every node it writes (a sequential `create` per take, a `create`
//!   per push, nothing deleted), as `raw-multi` leaves them but without its checks and receipt:
//!   what keeping a record of each take and push costs the server (examples/contender.rs);
//! - `raw-java`: `raw` through ZooKeeper's own Java client: N threads of one JVM, each with its
//!   own session (java/curator-bench `RawContender`), as `zooid-java` and `curator` run; the floor
//!   a Java user of ZooKeeper pays, client included;
//! - `zooid-java`: `zooid` through the Java binding: N threads of one JVM, each with its own
//!   `IDGeneratorService` (java/curator-bench `ZooidContender`), as the Curator baseline runs;
//! - `curator`: Curator's `DistributedAtomicLong.add(batch)` (java/curator-bench), N clients with
//!   their own sessions in one JVM, its optimistic loop backing off with
//!   `BoundedExponentialBackoffRetry(1 ms, 100 ms, 1000)`; `curator:BASE:CAP:ATTEMPTS` names
//!   another policy, and `--curator-sweep` runs each policy of [`CURATOR_SWEEP`] as a row of its
//!   own (Curator at its best is the best of them).
//!
//! With `--push-back PCT` every take of the zooid modes is followed by a push (`push_ids`) of the
//! last PCT % of the IDs it got (10: the last 100 of a take of 1,000), the seeds' recycling
//! workload. An *operation* is then a take and its push, completed when both succeed. `naive` and
//! `curator` cannot recycle: they only take (their rows say `push % 0`).
//!
//! Each setup (a standalone server; a 3-server ensemble reached through one follower) runs every
//! client count and mode for a window. The servers run as ZooKeeper ships
//! ([`Tuning::AsShipped`](zooid_test_support::Tuning): full JIT, a 1000 MB heap, every log write
//! synced), not tuned for tests. Before the rows, each mode runs once for `--warmup-ms` (12 s)
//! at the largest process count, unrecorded, so that the servers' JIT has compiled what every
//! mode asks of them: the first mode on a new setup ran about half as fast without it, and the
//! first zooid row after 3-second warm-ups still cost the server 1.7× the CPU per op of the same
//! mode's next round (zooid's `multi`s and checks are more for the JIT to compile than a
//! `create`). After each row (and warm-up) the bench deletes the nodes the row wrote, so that
//! every row starts on the same small tree. Printed per run:
//!
//! - completed operations/s and its ratio to the same mode at 1 process;
//! - `writes/op`: every transaction the server processed in the window (the zxid delta: every
//!   write the server processes, failed compare-and-sets and failed `multi`s included, takes a
//!   zxid) per completed operation;
//! - `failed/op`: the zxid delta minus the successful writes, per operation. Successful writes are
//!   counted as completed operations × the writes of one operation of the same mode when it is
//!   alone: the `writes/op` of its 1-process row in the same setup (a lone process is the only
//!   writer, so none of its writes fails). That counts a take's transaction and its push's, and
//!   whatever else the layout writes per operation by design: a block take that takes holes and
//!   then claims fresh blocks makes two transactions (the hole write and the claim), and the
//!   1-process figure includes them as they occur in that workload. Without a 1-process row of
//!   the mode, one write per take and one per push is assumed. The 1-process row shows 0 by
//!   construction; read its `writes/op`;
//! - `requests/op`: the client packets the servers received (`mntr`'s `zk_packets_received`),
//!   reads and writes, per operation;
//! - server and client CPU per operation: the CPU time (user and system, `/proc/PID/stat`) every
//!   server process, and every client process, used during the window, ÷ the completed
//!   operations. On this 2-core machine servers and clients share the cores; the ratios after
//!   each setup compare each zooid mode's rate and server CPU per op with the raw floors'
//!   (`raw`, `raw-java`).
//!   `ZOOID_BENCH_MNTR=1` also prints each server's `mntr` counters that moved during a row;
//! - p50 / p99 / max latency of the takes and, apart, of the pushes;
//! - fairness: the fewest operations any process completed ÷ the mean, processes that completed
//!   none (starved), and failed operations (errors);
//! - for the zooid modes, the pool's free ranges after the window, as `pool_info` lists them and
//!   as hole nodes of format 4 listed directly: whether pushed IDs were handed out again.
//!
//! **Duplicates.** Every process reports the IDs it kept (handed out and not pushed back, its
//! warm-up's included, as ranges; Curator and the seed loop: every ID an add or set handed out).
//! The kept IDs of all processes of one run (one fresh category) must be pairwise disjoint: an ID
//! pushed back may be handed out again, one kept may not. A duplicate is printed loudly and the
//! bench exits non-zero at the end.
//!
//! A CSV of the rows goes to `target/contention.csv` (`scripts/plot-contention.py` draws
//! docs/contention.png from it).
//!
//! ```text
//! cargo build --release --example contender
//! mvn -B -q -f java/pom.xml -pl zooid package -DskipTests          # zooid-java
//! mvn -B -q -f java/curator-bench/pom.xml package dependency:copy-dependencies -DexcludeArtifactIds=zooid
//! cargo bench --bench contention -- [--clients 1,4,16,32] [--window-ms 6000] [--batch 1000]
//!     [--push-back 0] [--modes zooid,zooid-single,zooid-blocks,zooid-fair,naive,curator]
//!     [--setups standalone,ensemble] [--rounds 1] [--warmup-ms 12000] [--curator-sweep]
//! cargo bench --bench contention -- --burst 2000 [--holes 2000] [--burst-batch 10000]
//!     [--setups standalone]
//! ```
//!
//! Without the Curator build the `curator` rows are skipped (and say so).
//!
//! `--burst TASKS` runs the Hadoop-shaped burst instead, on a standalone server (or on each setup
//! `--setups` names: `ensemble` puts the sessions on a follower), once on a
//! category in the default layout with default options, once on a category in block allocation
//! and once in the default layout with `fair_pacing`: TASKS
//! sessions in this process each take one batch of `--burst-batch` (10,000) IDs at the same
//! moment, then each pushes back its last 10 % at the same moment. Printed: time until every take
//! was served, the same for the pushes, failed writes per operation (server side: transactions
//! beyond one per served take or push), errors, and the pool's free ranges at the end (as
//! `pool_info` lists them / hole nodes of format 4); the kept IDs are checked for duplicates.
//!
//! `--burst TASKS --holes H` runs the burst on a pool that already has H separate free ranges
//! (holes) of a tenth of a batch each, left by an earlier job: one session takes batches and
//! pushes back every other tenth of each until H holes are free. Then the burst as above, once
//! unrecorded on the default layout to warm the server's JIT, then per layout (the default, `Layout::SingleNode`, block allocation, the default with
//! `fair_pacing`): takes and pushes served, errors, deadline hits (errors of kind `Contention`,
//! `ConnectionLost` or `Timeout`), the longest take and push, server transactions per take and per
//! push (the least is one each; a block take served from holes and fresh blocks makes two), the
//! free ranges before and after (as `pool_info` lists them / hole nodes of format 4 listed
//! directly), how many IDs of the old holes are still free after the burst (whether the burst's
//! takes filled them), and the duplicate check of the kept IDs (the hole maker's and every
//! task's).

use zooid::CategorySpec;
use zooid_test_support as support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use support::{four_letter_word, ZkEnsemble, ZkServer};
use zooid::{
    ConnectOptions, ErrorKind, IdCategory, IdGeneratorService, IdRange, IdSet, ServiceOptions,
    ZooidError,
};

/// How long processes may take to connect and warm up.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// Set when a duplicate was found: the bench exits non-zero at the end.
static DUPLICATE: AtomicBool = AtomicBool::new(false);

#[derive(Clone)]
struct Args {
    clients: Vec<usize>,
    window_ms: u64,
    batch: u64,
    push_back: u64,
    modes: Vec<String>,
    setups: Vec<String>,
    /// Whether `--setups` was given (the burst runs standalone only unless it was).
    setups_given: bool,
    rounds: usize,
    /// How long each mode runs once on a new setup before the rows, unrecorded (0: none).
    warmup_ms: u64,
    burst: Option<usize>,
    burst_batch: u64,
    holes: Option<usize>,
}

fn parse_args() -> Args {
    let mut args = Args {
        clients: vec![1, 4, 16, 32],
        window_ms: 6000,
        batch: 1000,
        push_back: 0,
        modes: vec![
            "zooid".into(),
            "zooid-single".into(),
            "zooid-blocks".into(),
            "zooid-fair".into(),
            "naive".into(),
            "curator".into(),
        ],
        setups: vec!["standalone".into(), "ensemble".into()],
        setups_given: false,
        rounds: 1,
        warmup_ms: 12_000,
        burst: None,
        burst_batch: 10_000,
        holes: None,
    };
    let list = |v: &str| v.split(',').map(str::to_string).collect::<Vec<_>>();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--clients" => {
                args.clients = list(&value())
                    .iter()
                    .map(|c| c.parse().expect("--clients: numbers"))
                    .collect()
            }
            "--window-ms" => args.window_ms = value().parse().expect("--window-ms: a number"),
            "--batch" => args.batch = value().parse().expect("--batch: a number"),
            "--push-back" => {
                args.push_back = value().parse().expect("--push-back: a number");
                assert!(args.push_back <= 100, "--push-back: a percentage, 0 to 100");
            }
            "--modes" => args.modes = list(&value()),
            "--setups" => {
                args.setups = list(&value());
                args.setups_given = true;
            }
            "--rounds" => args.rounds = value().parse().expect("--rounds: a number"),
            "--warmup-ms" => args.warmup_ms = value().parse().expect("--warmup-ms: a number"),
            "--burst" => args.burst = Some(value().parse().expect("--burst: a number")),
            "--burst-batch" => args.burst_batch = value().parse().expect("--burst-batch: a number"),
            "--holes" => args.holes = Some(value().parse().expect("--holes: a number")),
            // Every Curator retry policy of the sweep as a mode of its own, instead of `curator`.
            "--curator-sweep" => {
                args.modes.retain(|m| !m.starts_with("curator"));
                args.modes
                    .extend(CURATOR_SWEEP.iter().map(|m| m.to_string()));
            }
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(
        args.holes.is_none() || args.burst.is_some(),
        "--holes goes with --burst"
    );
    args
}

/// The retry policy of a Curator row: `DistributedAtomicLong`'s optimistic loop backs off with
/// `BoundedExponentialBackoffRetry(base_ms, cap_ms, attempts)`.
struct CuratorRetry {
    base_ms: u64,
    cap_ms: u64,
    attempts: u64,
}

/// The policy a `curator` mode names: `curator` is the bench's own (1 ms, 100 ms, 1000);
/// `curator:BASE:CAP:ATTEMPTS` another one.
fn curator_retry(mode: &str) -> CuratorRetry {
    let fields: Vec<u64> = mode
        .split(':')
        .skip(1)
        .map(|f| {
            f.parse()
                .unwrap_or_else(|_| panic!("{mode}: curator:BASE_MS:CAP_MS:ATTEMPTS"))
        })
        .collect();
    match fields[..] {
        [] => CuratorRetry {
            base_ms: 1,
            cap_ms: 100,
            attempts: 1000,
        },
        [base_ms, cap_ms, attempts] => CuratorRetry {
            base_ms,
            cap_ms,
            attempts,
        },
        _ => panic!("{mode}: curator:BASE_MS:CAP_MS:ATTEMPTS"),
    }
}

/// The Curator retry policies `--curator-sweep` runs, each as a mode of its own: base sleeps of
/// 1 to 10 ms, caps of 100 ms to 1 s, attempts enough never to give up within a window.
const CURATOR_SWEEP: &[&str] = &[
    "curator:1:100:1000",
    "curator:2:100:1000",
    "curator:2:500:1000",
    "curator:5:500:1000",
    "curator:5:1000:1000",
    "curator:10:1000:1000",
    "curator:1:50:1000",
];

/// Whether `mode` pushes IDs back (the zooid modes; `raw` writes a push's floor); `naive` and
/// `curator` only take.
fn recycles(mode: &str) -> bool {
    mode.starts_with("zooid") || mode.starts_with("raw")
}

/// A child process killed by PID when dropped, and by the kernel if the benchmark dies.
struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Worker {
    /// Spawns `command`; its stdout lines go to `lines`, tagged with `index`.
    fn spawn(mut command: Command, index: usize, lines: mpsc::Sender<(usize, String)>) -> Worker {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // SAFETY: prctl is async-signal-safe; it only asks the kernel to SIGKILL the child when
        // this process dies.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = command.spawn().expect("spawn a contender");
        let stdout = child.stdout.take().expect("piped stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if lines.send((index, line)).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Worker { child, stdin }
    }

    fn send(&mut self, line: &str) {
        if let Some(stdin) = self.stdin.as_mut() {
            let _ = writeln!(stdin, "{line}");
            let _ = stdin.flush();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        drop(self.stdin.take());
        for _ in 0..100 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One client's report: its `push-errors`, `push-latency` and `kept` lines, then `done`.
#[derive(Default)]
struct Done {
    ops: u64,
    errors: u64,
    push_errors: u64,
    take_latencies_us: Vec<u64>,
    push_latencies_us: Vec<u64>,
    kept: Vec<IdRange>,
}

/// Reads one report line into `partial`; true when it was the `done` line (the report is whole).
/// None for a line that is not part of a report.
fn parse_line(partial: &mut Done, line: &str) -> Option<bool> {
    let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
    let numbers = || {
        rest.split_whitespace()
            .filter_map(|f| f.parse::<u64>().ok())
    };
    match word {
        "push-errors" => partial.push_errors = rest.trim().parse().ok()?,
        "push-latency" => partial.push_latencies_us = numbers().collect(),
        "kept" => {
            for r in rest.split_whitespace() {
                let (a, b) = r.split_once(':')?;
                partial
                    .kept
                    .push(IdRange::new(a.parse().ok()?, b.parse().ok()?)?);
            }
        }
        "done" => {
            let mut fields = numbers();
            partial.ops = fields.next()?;
            partial.errors = fields.next()?;
            let _ids = fields.next()?;
            partial.take_latencies_us = fields.collect();
            return Some(true);
        }
        _ => return None,
    }
    Some(false)
}

/// Checks that `kept` (every process's kept IDs of one run) holds no ID twice; prints a loud
/// error and marks the run failed otherwise. Returns how many IDs were checked.
fn check_disjoint(what: &str, mut kept: Vec<IdRange>) -> u64 {
    kept.sort_unstable_by_key(|r| (r.start(), r.end()));
    let mut last: Option<IdRange> = None;
    let mut duplicates = 0u64;
    for r in &kept {
        if let Some(prev) = last {
            if prev.overlaps(r) {
                duplicates += 1;
                if duplicates <= 10 {
                    eprintln!("!!!!!! DUPLICATE IDs in {what}: {prev} and {r} were both handed out and kept");
                }
            }
        }
        if last.is_none_or(|prev| r.end() > prev.end()) {
            last = Some(*r);
        }
    }
    if duplicates > 0 {
        eprintln!("!!!!!! {what}: {duplicates} overlapping kept ranges: IDs HANDED OUT TWICE");
        DUPLICATE.store(true, Ordering::SeqCst);
    }
    kept.iter().map(IdRange::len).sum()
}

/// A running setup, kept alive while in scope: where the clients connect, and the server whose
/// `srvr` gives the zxid (the leader of an ensemble).
struct Setup {
    _standalone: Option<ZkServer>,
    _ensemble: Option<ZkEnsemble>,
    connect: String,
    zxid_addr: std::net::SocketAddr,
    servers: Servers,
}

/// The servers of a setup, for the CPU and requests a row costs them.
#[derive(Clone)]
struct Servers {
    /// Every server's PID (CPU time is summed over them).
    pids: Vec<u32>,
    /// Every server's client address (`mntr`'s packets received are summed over them).
    addrs: Vec<std::net::SocketAddr>,
}

impl Servers {
    /// CPU time the servers used so far, and the client packets they received.
    fn sample(&self) -> (Duration, u64) {
        let cpu = self.pids.iter().map(|&pid| cpu_time(pid)).sum();
        let packets = self.addrs.iter().map(|&addr| packets_received(addr)).sum();
        (cpu, packets)
    }
}

impl Servers {
    /// Every server's `mntr` figures, by name.
    fn mntr(&self) -> Vec<HashMap<String, f64>> {
        self.addrs
            .iter()
            .map(|&addr| {
                let out = four_letter_word(addr, "mntr", Duration::from_secs(5)).expect("mntr");
                out.lines()
                    .filter_map(|l| {
                        let (key, value) = l.split_once('\t')?;
                        Some((key.to_string(), value.trim().parse().ok()?))
                    })
                    .collect()
            })
            .collect()
    }

    /// With `ZOOID_BENCH_MNTR` set: each server's `mntr` counters that changed during a row,
    /// and the averages the server kept over the row, for a look at where its time went.
    fn print_mntr_changes(&self, mode: &str, clients: usize, before: &[HashMap<String, f64>]) {
        for (server, (after, before)) in self.mntr().iter().zip(before).enumerate() {
            let mut keys: Vec<&String> = after.keys().collect();
            keys.sort();
            let changes: Vec<String> = keys
                .into_iter()
                .filter_map(|key| {
                    let (a, b) = (after[key], before.get(key).copied().unwrap_or(0.0));
                    (a != b).then(|| format!("{key}={}", a - b))
                })
                .collect();
            eprintln!(
                "mntr {mode} x{clients} server {server}: {}",
                changes.join(" ")
            );
        }
    }
}

/// The CPU time (user and system, all threads) process `pid` used so far, from
/// `/proc/PID/stat`; zero once it is gone.
fn cpu_time(pid: u32) -> Duration {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return Duration::ZERO;
    };
    // The fields after the command (in parentheses, which may hold spaces): utime and stime
    // are the 12th and 13th, in clock ticks.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i)?.parse::<u64>().ok())
        .sum();
    // SAFETY: sysconf reads a constant of the system; no memory is passed.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_micros(ticks * 1_000_000 / per_second)
}

/// The client packets server `addr` received so far (`mntr`'s `zk_packets_received`): the
/// requests of every client, reads and writes.
fn packets_received(addr: std::net::SocketAddr) -> u64 {
    let out = four_letter_word(addr, "mntr", Duration::from_secs(5)).expect("mntr");
    out.lines()
        .find_map(|l| l.strip_prefix("zk_packets_received"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no zk_packets_received in mntr output:\n{out}"))
}

impl Setup {
    /// Starts `name`: `standalone` (one server) or `ensemble` (3 servers, clients on a follower).
    fn start(name: &str) -> Setup {
        match name {
            "standalone" => {
                let zk = ZkServer::start_as_shipped();
                Setup {
                    connect: zk.connect_string(),
                    zxid_addr: zk.addr(),
                    servers: Servers {
                        pids: vec![zk.pid()],
                        addrs: vec![zk.addr()],
                    },
                    _standalone: Some(zk),
                    _ensemble: None,
                }
            }
            "ensemble" => {
                let ensemble = ZkEnsemble::start_as_shipped(3);
                let leader = ensemble.wait_for_quorum(Duration::from_secs(60));
                let follower = (0..ensemble.len())
                    .find(|&i| i != leader)
                    .expect("a follower");
                Setup {
                    connect: ensemble.server_connect_string(follower),
                    zxid_addr: ensemble.server_addr(leader),
                    servers: Servers {
                        pids: (0..ensemble.len())
                            .filter_map(|i| ensemble.pid(i))
                            .collect(),
                        addrs: (0..ensemble.len())
                            .map(|i| ensemble.server_addr(i))
                            .collect(),
                    },
                    _standalone: None,
                    _ensemble: Some(ensemble),
                }
            }
            other => panic!("unknown setup {other}"),
        }
    }
}

/// The server's last zxid (`srvr`).
fn zxid(addr: std::net::SocketAddr) -> u64 {
    let out = four_letter_word(addr, "srvr", Duration::from_secs(5)).expect("srvr");
    let hex = out
        .lines()
        .find_map(|l| l.strip_prefix("Zxid: 0x"))
        .unwrap_or_else(|| panic!("no Zxid in srvr output:\n{out}"));
    u64::from_str_radix(hex.trim(), 16).expect("hex zxid")
}

struct Row {
    setup: String,
    mode: String,
    clients: usize,
    push_pct: u64,
    ops_per_s: f64,
    writes_per_op: f64,
    /// The servers' CPU time per completed op, in microseconds (all servers of the setup).
    server_cpu_us: f64,
    /// The clients' CPU time per completed op, in microseconds (all their processes).
    client_cpu_us: f64,
    /// The client requests the servers received per completed op (reads and writes).
    requests_per_op: f64,
    take: Latency,
    push: Latency,
    min_over_mean: f64,
    starved: usize,
    errors: u64,
    kept_ids: u64,
    /// The pool's free ranges after the window (recycling modes): as `pool_info` lists them, and
    /// hole nodes (format 4).
    free_after: Option<(usize, usize)>,
}

/// p50 / p99 / max of a sample, in milliseconds (NaN when empty).
struct Latency {
    p50: f64,
    p99: f64,
    max: f64,
}

impl Latency {
    fn of(mut us: Vec<u64>) -> Latency {
        us.sort_unstable();
        let at = |p: f64| {
            if us.is_empty() {
                return f64::NAN;
            }
            let i = ((us.len() as f64 - 1.0) * p).round() as usize;
            us[i] as f64 / 1000.0
        };
        Latency {
            p50: at(0.5),
            p99: at(0.99),
            max: at(1.0),
        }
    }

    fn cells(&self) -> String {
        if self.p50.is_nan() {
            return "– | – | –".into();
        }
        format!("{:.1} | {:.1} | {:.0}", self.p50, self.p99, self.max)
    }

    fn csv(&self) -> String {
        format!("{:.2},{:.2},{:.1}", self.p50, self.p99, self.max)
    }
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn contender_binary() -> PathBuf {
    let path = repo().join("target/release/examples/contender");
    assert!(
        path.exists(),
        "{} missing: run `cargo build --release --example contender` first",
        path.display()
    );
    path
}

fn curator_classpath() -> Option<String> {
    let dir = repo().join("java/curator-bench/target");
    let classes = dir.join("classes");
    let deps = dir.join("dependency");
    (classes.exists() && deps.exists())
        .then(|| format!("{}:{}/*", classes.to_string_lossy(), deps.to_string_lossy()))
}

/// The arguments every Java contender of java/curator-bench starts with.
fn java_run(connect: &str, path: &str, clients: usize, args: &Args) -> Vec<String> {
    vec![
        connect.to_string(),
        path.to_string(),
        clients.to_string(),
        args.batch.to_string(),
        args.window_ms.to_string(),
    ]
}

/// A JVM running the contender `class` of java/curator-bench (package `io.zooid.bench`) with
/// `run`, and `option` (a system property) before the class path when given.
fn java_contender(option: Option<&str>, classpath: &str, class: &str, run: &[String]) -> Command {
    let mut command = Command::new("java");
    command.arg("-Xss512k");
    command.args(option);
    command
        .args(["-cp", classpath, &format!("io.zooid.bench.{class}")])
        .args(run);
    command
}

/// The zooid jar's classes (java/zooid, built by Maven); the native library is this build's
/// (target/release/deps/libzooid.so).
fn zooid_java_classpath() -> Option<String> {
    let classes = repo().join("java/zooid/target/classes");
    classes
        .join("io/zooid/IDGeneratorService.class")
        .exists()
        .then(|| classes.to_string_lossy().into_owned())
}

#[allow(clippy::too_many_arguments)]
fn run_one(
    setup: &str,
    connect: &str,
    zxid_addr: std::net::SocketAddr,
    servers: &Servers,
    mode: &str,
    path: &str,
    clients: usize,
    args: &Args,
) -> Option<Row> {
    let (tx, rx) = mpsc::channel();
    let mut workers = Vec::new();
    let push_pct = if recycles(mode) { args.push_back } else { 0 };
    let expected_ready = match mode {
        "zooid" | "zooid-fair" | "zooid-single" | "zooid-blocks" | "naive" | "raw"
        | "raw-multi" | "raw-kept" => {
            for index in 0..clients {
                let mut command = Command::new(contender_binary());
                command.args([
                    "--connect",
                    connect,
                    "--mode",
                    mode,
                    "--path",
                    path,
                    "--batch",
                    &args.batch.to_string(),
                    "--window-ms",
                    &args.window_ms.to_string(),
                    "--push-back",
                    &push_pct.to_string(),
                ]);
                workers.push(Worker::spawn(command, index, tx.clone()));
            }
            clients
        }
        "zooid-java" => {
            let (Some(classpath), Some(zooid)) = (curator_classpath(), zooid_java_classpath())
            else {
                eprintln!(
                    "zooid-java skipped: build java/zooid, then java/curator-bench (see its pom.xml)"
                );
                return None;
            };
            let library = format!(
                "-Dzooid.library.path={}",
                repo().join("target/release/deps").display()
            );
            // The zooid classes of this tree first (java/curator-bench copies the jar it
            // compiled against, which may be older, among its dependencies).
            let classpath = format!("{zooid}:{classpath}");
            let mut run = java_run(connect, path, clients, args);
            run.push(push_pct.to_string());
            let command = java_contender(Some(&library), &classpath, "ZooidContender", &run);
            workers.push(Worker::spawn(command, 0, tx.clone()));
            1
        }
        java if java == "raw-java" || java.starts_with("curator") => {
            let Some(classpath) = curator_classpath() else {
                eprintln!(
                    "{mode} skipped: run `mvn -B -q -f java/curator-bench/pom.xml package dependency:copy-dependencies`"
                );
                return None;
            };
            let mut run = java_run(connect, path, clients, args);
            let class = if java == "raw-java" {
                run.push(push_pct.to_string());
                "RawContender"
            } else {
                let retry = curator_retry(java);
                run.extend([retry.base_ms, retry.cap_ms, retry.attempts].map(|v| v.to_string()));
                "CuratorContender"
            };
            let command = java_contender(None, &classpath, class, &run);
            workers.push(Worker::spawn(command, 0, tx.clone()));
            1
        }
        other => panic!("unknown mode {other}"),
    };
    drop(tx);
    let mut ready = 0;
    while ready < expected_ready {
        match rx.recv_timeout(READY_TIMEOUT) {
            Ok((_, line)) if line == "ready" => ready += 1,
            Ok((_, other)) => eprintln!("{mode}: {other}"),
            Err(err) => panic!("{mode} x{clients}: only {ready} ready ({err})"),
        }
    }
    let client_cpu =
        |workers: &[Worker]| -> Duration { workers.iter().map(|w| cpu_time(w.child.id())).sum() };
    let before = zxid(zxid_addr);
    let (server_cpu_before, packets_before) = servers.sample();
    let mntr_before = servers.mntr();
    let client_cpu_before = client_cpu(&workers);
    for w in &mut workers {
        w.send("go");
    }
    let mut done = Vec::new();
    let mut partial: HashMap<usize, Done> = HashMap::new();
    let wait = Duration::from_millis(args.window_ms) + Duration::from_secs(120);
    while done.len() < clients {
        match rx.recv_timeout(wait) {
            Ok((index, line)) => {
                let report = partial.entry(index).or_default();
                match parse_line(report, &line) {
                    Some(true) => done.extend(partial.remove(&index)),
                    Some(false) => {}
                    None => eprintln!("{mode}: {line}"),
                }
            }
            Err(err) => panic!("{mode} x{clients}: only {} done ({err})", done.len()),
        }
    }
    let after = zxid(zxid_addr);
    let (server_cpu_after, packets_after) = servers.sample();
    if std::env::var_os("ZOOID_BENCH_MNTR").is_some() {
        servers.print_mntr_changes(mode, clients, &mntr_before);
    }
    let client_cpu_after = client_cpu(&workers);
    drop(workers);
    let free_after = mode.starts_with("zooid").then(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let service = connect_service(connect, ServiceOptions::default()).await;
            let client = zookeeper_client::Client::connect(connect)
                .await
                .expect("connect");
            let category = IdCategory::new(path).expect("category");
            free_ranges(&service, &client, &category).await
        })
    });

    let kept_ids = check_disjoint(
        &format!("{setup} {mode} x{clients} ({path})"),
        done.iter().flat_map(|d| d.kept.iter().copied()).collect(),
    );
    let ops: u64 = done.iter().map(|d| d.ops).sum();
    let mean = ops as f64 / clients as f64;
    let fewest = done.iter().map(|d| d.ops).min().unwrap_or(0);
    let per_op_us = |spent: Duration| spent.as_micros() as f64 / ops.max(1) as f64;
    Some(Row {
        server_cpu_us: per_op_us(server_cpu_after.saturating_sub(server_cpu_before)),
        client_cpu_us: per_op_us(client_cpu_after.saturating_sub(client_cpu_before)),
        // Four-letter words (the bench's own `srvr` and `mntr`) are not counted as packets.
        requests_per_op: packets_after.saturating_sub(packets_before) as f64 / ops.max(1) as f64,
        setup: setup.to_string(),
        mode: mode.to_string(),
        clients,
        push_pct,
        ops_per_s: ops as f64 / (args.window_ms as f64 / 1000.0),
        writes_per_op: (after - before) as f64 / ops.max(1) as f64,
        take: Latency::of(
            done.iter()
                .flat_map(|d| d.take_latencies_us.iter().copied())
                .collect(),
        ),
        push: Latency::of(
            done.iter()
                .flat_map(|d| d.push_latencies_us.iter().copied())
                .collect(),
        ),
        min_over_mean: if mean > 0.0 {
            fewest as f64 / mean
        } else {
            0.0
        },
        starved: done.iter().filter(|d| d.ops == 0).count(),
        errors: done.iter().map(|d| d.errors).sum(),
        kept_ids,
        free_after,
    })
}

/// A connected service with `options` (panics on failure: the bench's own setup).
async fn connect_service(connect: &str, options: ServiceOptions) -> IdGeneratorService {
    IdGeneratorService::connect(connect, &ConnectOptions::default(), options)
        .await
        .expect("connect")
}

/// Creates category `path` in the layout `layout` names (`single`: `Layout::SingleNode`;
/// `blocks`: block allocation with blocks of `unit`; anything else: `create_category`'s default).
async fn create_in(service: &IdGeneratorService, layout: &str, path: &str, unit: u64) {
    let category = IdCategory::new(path).expect("category");
    match layout {
        "single" => service
            .create_category(&category, &CategorySpec::new(1, i64::MAX / 2).single_node())
            .await
            .expect("create category"),
        "blocks" => service
            .create_category(&category, &CategorySpec::new(1, i64::MAX / 2).blocks(unit))
            .await
            .expect("create category"),
        _ => service
            .create_category(&category, &CategorySpec::new(1, i64::MAX / 2))
            .await
            .expect("create category"),
    }
}

/// Creates the node `mode` takes from, fresh for each run (so node sizes are the same).
fn prepare(connect: &str, mode: &str, path: &str, batch: u64) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        match mode {
            "zooid" | "zooid-fair" | "zooid-java" => {
                let service = connect_service(connect, ServiceOptions::default()).await;
                create_in(&service, "default", path, batch).await;
            }
            "zooid-single" => {
                let service = connect_service(connect, ServiceOptions::default()).await;
                create_in(&service, "single", path, batch).await;
            }
            "zooid-blocks" => {
                let service = connect_service(connect, ServiceOptions::default()).await;
                create_in(&service, "blocks", path, batch).await;
            }
            "raw" | "raw-multi" | "raw-kept" | "raw-java" => {
                let client = zookeeper_client::Client::connect(connect)
                    .await
                    .expect("connect");
                let options = zookeeper_client::CreateMode::Persistent
                    .with_acls(zookeeper_client::Acls::anyone_all());
                client.mkdir(path, &options).await.expect("mkdir");
                // The raw multi writes under the children of a pool in format 4.
                let children: &[&str] = if mode == "raw-multi" {
                    &["zooid-blocks-0", "zooid-holes", "zooid-returned"]
                } else {
                    &[]
                };
                for child in children {
                    client
                        .create(&format!("{path}/{child}"), &[], &options)
                        .await
                        .expect("create the pool's children");
                }
            }
            "naive" => {
                let client = zookeeper_client::Client::connect(connect)
                    .await
                    .expect("connect");
                let options = zookeeper_client::CreateMode::Persistent
                    .with_acls(zookeeper_client::Acls::anyone_all());
                let parent = Path::new(path)
                    .parent()
                    .and_then(Path::to_str)
                    .expect("parent");
                client.mkdir(parent, &options).await.expect("mkdir");
                client
                    .create(path, &0i64.to_be_bytes(), &options)
                    .await
                    .expect("create counter");
            }
            _ => {} // Curator creates its node on the first add (the warm-up, before the window).
        }
    });
}

/// Deletes the node a row took from and everything under it, once the row is done: every row
/// starts on the same small tree, instead of on what earlier rows left (the raw multi leaves a
/// hole node per operation, 50,000 in a window), which the servers' snapshots and garbage
/// collection would make later rows pay for.
fn remove_row(connect: &str, path: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let client = zookeeper_client::Client::connect(connect)
            .await
            .expect("connect");
        // Depth first: a node's children, then the node, in `multi`s of up to 1,000 deletes. A
        // batch whose `multi` fails (an ephemeral node of a session that ended since the listing
        // is gone) is deleted node by node, what is gone already skipped.
        let mut order = Vec::new();
        let mut pending = vec![path.to_string()];
        while let Some(node) = pending.pop() {
            match client.get_children(&node).await {
                Ok((children, _)) => {
                    pending.extend(children.iter().map(|child| format!("{node}/{child}")));
                    order.push(node);
                }
                Err(zookeeper_client::Error::NoNode) => {}
                Err(err) => panic!("list {node}: {err}"),
            }
        }
        for batch in order.rchunks(1000) {
            let mut multi = client.new_multi_writer();
            for node in batch.iter().rev() {
                multi.add_delete(node, None).expect("a delete in a multi");
            }
            if multi.commit().await.is_ok() {
                continue;
            }
            for node in batch.iter().rev() {
                match client.delete(node, None).await {
                    Ok(()) | Err(zookeeper_client::Error::NoNode) => {}
                    Err(err) => panic!("delete {node}: {err}"),
                }
            }
        }
    });
}

/// The Hadoop-shaped burst: `tasks` sessions take one batch each at once, then push back 10 %.
fn burst(setup: &str, tasks: usize, batch: u64) {
    let zk = Setup::start(setup);
    let connect = zk.connect.clone();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "burst ({setup}): {tasks} sessions, each takes {batch} IDs at once, then pushes back 10 % at once\n"
    );
    println!("| options | all takes served in | failed writes per take | take errors | all pushes done in | failed writes per push | push errors | free ranges after (pool_info / hole nodes) |");
    println!("|---|---|---|---|---|---|---|---|");
    for (name, fair) in [("default", false), ("blocks", false), ("fair_pacing", true)] {
        rt.block_on(async {
            let options = ServiceOptions {
                fair_pacing: fair,
                ..ServiceOptions::default()
            };
            let category = IdCategory::new(format!("/burst/{name}")).expect("category");
            let services = open_sessions(&connect, tasks, &options).await;
            if name == "blocks" {
                services[0]
                    .create_category(&category, &CategorySpec::new(1, i64::MAX / 2).blocks(batch))
                    .await
                    .expect("create");
            } else {
                services[0]
                    .create_category(&category, &CategorySpec::new(1, i64::MAX / 2))
                    .await
                    .expect("create");
            }
            let before = zxid(zk.zxid_addr);
            let t = Instant::now();
            let takes = services.iter().map(|s| {
                let s = Arc::clone(s);
                let category = category.clone();
                tokio::spawn(async move { s.take_ids(&category, batch).await })
            });
            let takes: Vec<_> = takes.collect();
            let mut sets = Vec::new();
            let mut take_errors = 0;
            for h in takes {
                match h.await.expect("task") {
                    Ok(set) => sets.push(set),
                    Err(_) => take_errors += 1,
                }
            }
            let take_time = t.elapsed();
            let take_writes = zxid(zk.zxid_addr) - before;
            let failed_per_take =
                take_writes.saturating_sub(sets.len() as u64) as f64 / sets.len().max(1) as f64;

            let before = zxid(zk.zxid_addr);
            let t = Instant::now();
            let pushes: Vec<_> = sets
                .into_iter()
                .zip(services.iter())
                .map(|(mut set, s)| {
                    let s = Arc::clone(s);
                    tokio::spawn(async move {
                        // Use 90 %, push back the rest.
                        let mut used = 0;
                        let mut kept = Vec::new();
                        while used < batch - batch / 10 {
                            let Some(run) = set.take_run(batch - batch / 10 - used) else {
                                break;
                            };
                            used += run.len();
                            kept.push(run);
                        }
                        (s.push_ids(&mut set).await, kept)
                    })
                })
                .collect();
            let pushed = pushes.len();
            let mut push_errors = 0;
            let mut kept = Vec::new();
            for h in pushes {
                let (outcome, task_kept) = h.await.expect("task");
                if outcome.is_err() {
                    push_errors += 1;
                }
                kept.extend(task_kept);
            }
            let push_time = t.elapsed();
            let push_ok = pushed - push_errors;
            let failed_per_push = (zxid(zk.zxid_addr) - before).saturating_sub(push_ok as u64) as f64
                / push_ok.max(1) as f64;
            let client = zookeeper_client::Client::connect(&connect)
                .await
                .expect("connect");
            let (listed, nodes) = free_ranges(&services[0], &client, &category).await;
            check_disjoint(&format!("burst ({setup}), {name}"), kept);
            println!(
                "| {name} | {:.2} s | {failed_per_take:.2} | {take_errors} | {:.2} s | {failed_per_push:.2} | {push_errors} | {listed} / {nodes} |",
                take_time.as_secs_f64(),
                push_time.as_secs_f64(),
            );
            for s in services {
                drop(Arc::into_inner(s));
            }
        });
    }
}

/// Opens `tasks` sessions with `options`, 50 at a time (opening is not what is measured).
async fn open_sessions(
    connect: &str,
    tasks: usize,
    options: &ServiceOptions,
) -> Vec<Arc<IdGeneratorService>> {
    let open =
        (0..tasks).map(|_| {
            let connect = connect.to_string();
            let options = options.clone();
            async move {
                IdGeneratorService::connect(&connect, &ConnectOptions::default(), options).await
            }
        });
    let mut services = Vec::new();
    let mut open = open.collect::<Vec<_>>().into_iter();
    loop {
        let chunk: Vec<_> = open.by_ref().take(50).collect();
        if chunk.is_empty() {
            break;
        }
        for s in futures_join(chunk).await {
            services.push(Arc::new(s.expect("connect")));
        }
    }
    services
}

/// Whether `err` is a deadline hit: the operation gave up (`Contention`, `ConnectionLost`,
/// `Timeout`).
fn deadline_hit(err: &ZooidError) -> bool {
    matches!(
        err.kind(),
        ErrorKind::Contention | ErrorKind::ConnectionLost | ErrorKind::Timeout
    )
}

/// Leaves `holes` separate free ranges of `size` IDs in `category`, as an earlier job would:
/// takes batches of `batch` until it holds `2 × holes` runs of `size`, then pushes back every
/// other run, one push per batch. Returns the IDs it kept, and the holes.
async fn make_holes(
    service: &IdGeneratorService,
    category: &IdCategory,
    holes: usize,
    size: u64,
    batch: u64,
) -> (Vec<IdRange>, Vec<IdRange>) {
    // Take everything first: a take would hand out the holes pushed before it.
    let mut sets = Vec::new();
    let mut held = 0u64;
    // One run more than the holes and the runs between them: the last hole is followed by a
    // kept run, not by the free IDs above (it would merge with them).
    while held < (2 * holes as u64 + 1) * size {
        let set = service
            .take_ids(category, batch)
            .await
            .expect("hole maker's take");
        held += set.count_ids();
        sets.push(set);
    }
    let mut kept = Vec::new();
    let mut made_holes = Vec::new();
    let mut made = 0;
    for mut set in sets {
        let mut push = Vec::new();
        let mut odd = false;
        while let Some(run) = set.take_run(size) {
            if odd && made < holes && run.len() == size {
                push.push(run);
                made += 1;
            } else {
                kept.push(run);
            }
            odd = !odd;
        }
        if !push.is_empty() {
            made_holes.extend(push.iter().copied());
            service
                .push_ids(&mut IdSet::new(category.clone(), push))
                .await
                .expect("hole maker's push");
        }
    }
    assert_eq!(made, holes, "the hole maker made {made} holes of {holes}");
    (kept, made_holes)
}

/// How many IDs of `holes` are in `free` (both ascending and disjoint).
fn still_free(holes: &[IdRange], free: &[IdRange]) -> u64 {
    let mut count = 0u64;
    let mut j = 0;
    for h in holes {
        while j < free.len() && free[j].end() < h.start() {
            j += 1;
        }
        let mut k = j;
        while k < free.len() && free[k].start() <= h.end() {
            let (a, b) = (h.start().max(free[k].start()), h.end().min(free[k].end()));
            count += (b - a + 1) as u64;
            k += 1;
        }
    }
    count
}

/// The free ranges of category `path`: as `pool_info` lists them, and as hole nodes of its own
/// (format 4) listed directly under `zooid-holes`.
async fn free_ranges(
    service: &IdGeneratorService,
    client: &zookeeper_client::Client,
    category: &IdCategory,
) -> (usize, usize) {
    let listed = service
        .pool_info(category)
        .await
        .expect("pool info")
        .free
        .len();
    let nodes = match client
        .get_children(&zooid::format::holes_parent(category.name()))
        .await
    {
        Ok((children, _)) => children
            .iter()
            .filter(|c| zooid::format::hole_of(c).is_some())
            .count(),
        Err(zookeeper_client::Error::NoNode) => 0,
        Err(err) => panic!("listing the hole nodes: {err}"),
    };
    (listed, nodes)
}

/// One phase of a burst: how many were served, failed, hit their deadline, the longest call and
/// the server's transactions.
#[derive(Default)]
struct Phase {
    served: usize,
    errors: usize,
    deadline_hits: usize,
    longest: Duration,
    writes: u64,
    kinds: std::collections::BTreeMap<&'static str, usize>,
}

impl Phase {
    fn record<T>(&mut self, outcome: &Result<T, ZooidError>, took: Duration) {
        self.longest = self.longest.max(took);
        match outcome {
            Ok(_) => self.served += 1,
            Err(err) => {
                self.errors += 1;
                if deadline_hit(err) {
                    self.deadline_hits += 1;
                }
                *self.kinds.entry(err.kind().name()).or_default() += 1;
            }
        }
    }

    fn writes_per_op(&self) -> f64 {
        self.writes as f64 / self.served.max(1) as f64
    }
}

/// The Hadoop burst on a pool with `holes` free ranges already: `tasks` sessions take `batch`
/// each at once, then push back the last 10 % of what they got at once.
fn burst_holes(setup: &str, tasks: usize, holes: usize, batch: u64) {
    let zk = Setup::start(setup);
    let connect = zk.connect.clone();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let size = (batch / 10).max(1);
    println!(
        "burst on holes ({setup}): {holes} free ranges of {size} IDs left by an earlier job, then {tasks} sessions each take {batch} IDs at once, then push back 10 % at once; \
         writes = server transactions (zxid delta) per served call, 1 at least\n"
    );
    println!("| layout | free ranges before (pool_info / hole nodes) | takes served | take errors | take deadline hits | longest take | writes/take | pushes served | push errors | push deadline hits | longest push | writes/push | free ranges after (pool_info / hole nodes) | IDs of the old holes still free after | kept IDs checked |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    // The first pass warms the server's JIT on the default layout, unrecorded: without it the
    // first layout measured paid for the compilation (its longest take about 1.5 s longer).
    for (name, layout, fair) in [
        ("warm-up", "default", false),
        ("default", "default", false),
        ("single", "single", false),
        ("blocks", "blocks", false),
        ("fair_pacing", "default", true),
    ] {
        let recorded = name != "warm-up";
        rt.block_on(async {
            let options = ServiceOptions {
                fair_pacing: fair,
                ..ServiceOptions::default()
            };
            let path = format!("/burst-holes/{name}");
            let category = IdCategory::new(path.as_str()).expect("category");
            let services = open_sessions(&connect, tasks, &options).await;
            create_in(&services[0], layout, &path, batch).await;
            let (mut kept, mut old_holes) =
                make_holes(&services[0], &category, holes, size, batch).await;
            old_holes.sort_unstable_by_key(IdRange::start);
            let client = zookeeper_client::Client::connect(&connect)
                .await
                .expect("connect");
            let free_before = free_ranges(&services[0], &client, &category).await;
            assert!(
                free_before.0.max(free_before.1) >= holes,
                "{name}: only {free_before:?} free ranges after making {holes} holes"
            );

            let before = zxid(zk.zxid_addr);
            let takes: Vec<_> = services
                .iter()
                .map(|s| {
                    let s = Arc::clone(s);
                    let category = category.clone();
                    tokio::spawn(async move {
                        let t = Instant::now();
                        let got = s.take_ids(&category, batch).await;
                        (got, t.elapsed())
                    })
                })
                .collect();
            let mut take = Phase::default();
            let mut sets = Vec::new();
            for (s, h) in services.iter().zip(takes) {
                let (got, took) = h.await.expect("task");
                take.record(&got, took);
                if let Ok(set) = got {
                    sets.push((Arc::clone(s), set));
                }
            }
            take.writes = zxid(zk.zxid_addr) - before;

            let before = zxid(zk.zxid_addr);
            let pushes: Vec<_> = sets
                .into_iter()
                .map(|(s, mut set)| {
                    tokio::spawn(async move {
                        // Keep 90 % of what the take got, push back the rest.
                        let got = set.count_ids();
                        let mut keep = got - got / 10;
                        let mut kept = Vec::new();
                        while keep > 0 {
                            let Some(run) = set.take_run(keep) else { break };
                            keep -= run.len();
                            kept.push(run);
                        }
                        let t = Instant::now();
                        let pushed = s.push_ids(&mut set).await;
                        (pushed, t.elapsed(), kept)
                    })
                })
                .collect();
            let mut push = Phase::default();
            for h in pushes {
                let (pushed, took, task_kept) = h.await.expect("task");
                push.record(&pushed, took);
                kept.extend(task_kept);
            }
            push.writes = zxid(zk.zxid_addr) - before;
            let free_after = free_ranges(&services[0], &client, &category).await;
            let free_now = services[0]
                .pool_info(&category)
                .await
                .expect("pool info")
                .free;
            let old_free = still_free(&old_holes, &free_now);
            let old_total: u64 = old_holes.iter().map(IdRange::len).sum();
            let checked = check_disjoint(&format!("burst on holes ({setup}), {name}"), kept);
            if !recorded {
                for s in services {
                    drop(Arc::into_inner(s));
                }
                return;
            }
            println!(
                "| {name} | {} / {} | {} | {} | {} | {:.2} s | {:.2} | {} | {} | {} | {:.2} s | {:.2} | {} / {} | {old_free} of {old_total} | {checked} |",
                free_before.0,
                free_before.1,
                take.served,
                take.errors,
                take.deadline_hits,
                take.longest.as_secs_f64(),
                take.writes_per_op(),
                push.served,
                push.errors,
                push.deadline_hits,
                push.longest.as_secs_f64(),
                push.writes_per_op(),
                free_after.0,
                free_after.1,
            );
            for (phase, what) in [(&take, "take"), (&push, "push")] {
                if !phase.kinds.is_empty() {
                    println!("  {name}: {what} errors by kind: {:?}", phase.kinds);
                }
            }
            for s in services {
                drop(Arc::into_inner(s));
            }
        });
    }
}

/// Awaits every future of `futures` concurrently, in order.
async fn futures_join<F: std::future::Future + Send + 'static>(futures: Vec<F>) -> Vec<F::Output>
where
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await.expect("task"));
    }
    out
}

fn main() {
    let args = parse_args();
    if let Some(tasks) = args.burst {
        // The burst runs on a standalone server unless `--setups` names others.
        let setups = if args.setups_given {
            args.setups.clone()
        } else {
            vec!["standalone".to_string()]
        };
        for setup in &setups {
            match args.holes {
                Some(holes) => burst_holes(setup, tasks, holes, args.burst_batch),
                None => burst(setup, tasks, args.burst_batch),
            }
            println!();
        }
        exit_on_duplicate();
        return;
    }
    std::fs::create_dir_all(repo().join("target")).expect("target dir");
    let csv_path = repo().join("target/contention.csv");
    let mut csv = String::from(
        "setup,mode,clients,push_pct,ops_per_s,ratio_to_1,writes_per_op,failed_per_op,requests_per_op,server_cpu_us_per_op,client_cpu_us_per_op,take_p50_ms,take_p99_ms,take_max_ms,push_p50_ms,push_p99_ms,push_max_ms,min_over_mean,starved,errors,kept_ids,free_ranges_after,hole_nodes_after\n",
    );
    println!(
        "batch {} IDs, push-back {} % (zooid modes; naive and curator only take), window {} ms, {} round(s); \
         op = a take and its push; writes/op = server transactions (zxid delta) per completed op; \
         failed/op = zxid delta minus ops × the mode's writes/op alone (its 1-process row), per op; \
         requests/op = client packets the servers received per op (reads and writes); \
         server and client CPU = CPU time per op, summed over every server and client process; \
         kept IDs checked pairwise disjoint across processes\n",
        args.batch, args.push_back, args.window_ms, args.rounds
    );
    println!("| setup | mode | procs | push % | ops/s | ÷ at 1 | writes/op | failed/op | requests/op | server CPU µs/op | client CPU µs/op | take p50 ms | take p99 ms | take max ms | push p50 ms | push p99 ms | push max ms | fewest ÷ mean | starved | errors | free ranges after (pool_info / hole nodes) |");
    println!(
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    let mut run_no = 0;
    for setup in &args.setups {
        // Keep the servers alive for the whole setup; drop them after.
        let running = Setup::start(setup);
        let (connect, zxid_addr) = (running.connect.clone(), running.zxid_addr);
        let servers = running.servers.clone();
        // The servers' JIT compiles the paths the first rows take: without a warm-up the first
        // mode of a new setup would pay for it. Each mode once, at the largest count, unrecorded.
        if args.warmup_ms > 0 {
            let warmup = Args {
                window_ms: args.warmup_ms,
                ..args.clone()
            };
            let clients = args.clients.iter().copied().max().unwrap_or(1);
            for mode in &args.modes {
                run_no += 1;
                let path = format!("/bench/{mode}/warmup{run_no}");
                prepare(&connect, mode, &path, args.batch);
                run_one(
                    setup, &connect, zxid_addr, &servers, mode, &path, clients, &warmup,
                );
                remove_row(&connect, &path);
            }
        }
        // Per mode, its 1-process row: ops/s, and writes per op (all successful: it is alone).
        let mut at_one: HashMap<String, (f64, f64)> = Default::default();
        // Every row's rate, for the ratios printed after the setup.
        let mut rates: Vec<Rate> = Vec::new();
        for _round in 0..args.rounds {
            for &clients in &args.clients {
                for mode in &args.modes {
                    run_no += 1;
                    let path = format!("/bench/{mode}/run{run_no}");
                    prepare(&connect, mode, &path, args.batch);
                    let row = run_one(
                        setup, &connect, zxid_addr, &servers, mode, &path, clients, &args,
                    );
                    remove_row(&connect, &path);
                    let Some(row) = row else {
                        continue;
                    };
                    if clients == 1 {
                        at_one.insert(mode.clone(), (row.ops_per_s, row.writes_per_op));
                    }
                    rates.push(Rate {
                        clients,
                        mode: mode.clone(),
                        ops_per_s: row.ops_per_s,
                        fairness: row.min_over_mean,
                        server_cpu_us: row.server_cpu_us,
                    });
                    let nominal = if row.push_pct > 0 { 2.0 } else { 1.0 };
                    let (ratio, alone) = at_one
                        .get(mode)
                        .map_or((f64::NAN, nominal), |&(ops, writes)| {
                            (row.ops_per_s / ops, writes)
                        });
                    let failed_per_op = row.writes_per_op - alone;
                    let (free_cell, free_csv) = row.free_after.map_or_else(
                        || ("–".to_string(), ",".to_string()),
                        |(listed, nodes)| {
                            (format!("{listed} / {nodes}"), format!("{listed},{nodes}"))
                        },
                    );
                    println!(
                        "| {} | {} | {} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} | {:.0} | {:.0} | {} | {} | {:.2} | {} | {} | {free_cell} |",
                        row.setup,
                        row.mode,
                        row.clients,
                        row.push_pct,
                        row.ops_per_s,
                        ratio,
                        row.writes_per_op,
                        failed_per_op,
                        row.requests_per_op,
                        row.server_cpu_us,
                        row.client_cpu_us,
                        row.take.cells(),
                        row.push.cells(),
                        row.min_over_mean,
                        row.starved,
                        row.errors
                    );
                    csv.push_str(&format!(
                        "{},{},{},{},{:.1},{:.3},{:.3},{:.3},{:.3},{:.1},{:.1},{},{},{:.3},{},{},{},{free_csv}\n",
                        row.setup,
                        row.mode,
                        row.clients,
                        row.push_pct,
                        row.ops_per_s,
                        ratio,
                        row.writes_per_op,
                        failed_per_op,
                        row.requests_per_op,
                        row.server_cpu_us,
                        row.client_cpu_us,
                        row.take.csv(),
                        row.push.csv(),
                        row.min_over_mean,
                        row.starved,
                        row.errors,
                        row.kept_ids
                    ));
                    std::fs::write(&csv_path, &csv).expect("write csv");
                }
            }
        }
        print_ratios(setup, &rates);
    }
    println!("\nCSV: {}", csv_path.display());
    exit_on_duplicate();
}

/// One row's figures, for the ratios printed after a setup.
struct Rate {
    clients: usize,
    mode: String,
    ops_per_s: f64,
    /// Fewest ops of a process ÷ the mean.
    fairness: f64,
    /// The servers' CPU time per op, in microseconds.
    server_cpu_us: f64,
}

/// After a setup's rows: per process count, each zooid mode's rate and server CPU per op
/// against the raw floor, and its rate against Curator at its best: the fastest `curator` row
/// of that count, and the fastest whose slowest client kept up (fewest ÷ mean ≥ 0.5), each
/// named (means over rounds).
fn print_ratios(setup: &str, rates: &[Rate]) {
    // The mean over rounds of (ops/s, fairness, server CPU per op).
    let mean = |clients: usize, mode: &str| {
        let found: Vec<&Rate> = rates
            .iter()
            .filter(|r| r.clients == clients && r.mode == mode)
            .collect();
        let n = found.len() as f64;
        (!found.is_empty()).then(|| {
            let of = |f: fn(&Rate) -> f64| found.iter().map(|r| f(r)).sum::<f64>() / n;
            (
                of(|r| r.ops_per_s),
                of(|r| r.fairness),
                of(|r| r.server_cpu_us),
            )
        })
    };
    let mut counts: Vec<usize> = rates.iter().map(|r| r.clients).collect();
    counts.sort_unstable();
    counts.dedup();
    let mut modes: Vec<&str> = rates.iter().map(|r| r.mode.as_str()).collect();
    modes.sort_unstable();
    modes.dedup();
    for clients in counts {
        let raw = mean(clients, "raw");
        let raw_java = mean(clients, "raw-java");
        let curators: Vec<(&str, f64, f64)> = modes
            .iter()
            .filter(|m| m.starts_with("curator"))
            .filter_map(|m| mean(clients, m).map(|(r, f, _)| (*m, r, f)))
            .collect();
        let fastest = |fair_only: bool| {
            curators
                .iter()
                .filter(|c| !fair_only || c.2 >= 0.5)
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .copied()
        };
        // zooid's modes, and the raw client sending zooid's writes or keeping its nodes.
        let compared =
            |m: &&&str| m.starts_with("zooid") || matches!(**m, "raw-multi" | "raw-kept");
        for mode in modes.iter().filter(compared) {
            let Some((rate, _, cpu)) = mean(clients, mode) else {
                continue;
            };
            let against = |floor: Option<(f64, f64, f64)>, name: &str| {
                floor.map_or(format!("– {name}"), |(r, _, floor_cpu)| {
                    format!(
                        "{:.2}× {name}, server CPU per op {:.2}× its",
                        rate / r,
                        cpu / floor_cpu
                    )
                })
            };
            let to_raw = format!(
                "{} ({})",
                against(raw, "the raw floor"),
                against(raw_java, "the raw floor through ZooKeeper's Java client")
            );
            let to = |best: Option<(&str, f64, f64)>| {
                best.map_or("–".to_string(), |(m, r, f)| {
                    format!("{:.2}× ({m}: {r:.0} ops/s, fewest ÷ mean {f:.2})", rate / r)
                })
            };
            println!(
                "{setup}, {clients} procs: {mode} {rate:.0} ops/s = {to_raw}; {} the fastest Curator; {} the fastest fair Curator",
                to(fastest(false)),
                to(fastest(true))
            );
        }
    }
}

/// Exits non-zero when any run handed an ID out twice.
fn exit_on_duplicate() {
    if DUPLICATE.load(Ordering::SeqCst) {
        eprintln!("!!!!!! DUPLICATE IDs were handed out (see above)");
        std::process::exit(1);
    }
    println!("duplicate check: every kept ID was handed out once");
}
