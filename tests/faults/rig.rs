//! One fault test's world: a real 3-server ZooKeeper ensemble, one [`FaultProxy`] in front of
//! each server, a category, and worker processes (examples/faultload.rs) connected through the
//! proxies, each thread writing its ledger into one directory. [`Rig::finish`] stops the
//! workers, reads the free IDs from ZooKeeper (tests/faults/pool.rs) and runs the checker;
//! [`Rig::assert_guarantees`] asserts what every fault test asserts.
//!
//! Everything started here is owned by the rig and killed by PID when it drops, also when the
//! test panics.

use std::fs;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use zooid::CategorySpec;

use tempfile::TempDir;
use zooid::blocking::IdGeneratorService;
use zooid::{ConnectOptions, IdCategory, IdRange, RetryPolicy, ServiceOptions};

use crate::check::{analyse, Analysis, Inputs, Ivs};
use zooid_test_support::zookeeper::wait_threads;
use zooid_test_support::{FaultProxy, QuorumLinks, RequestMatch, ZkEnsemble};

/// Runs the tests of this file one at a time, whatever `--test-threads` says: each starts
/// three JVMs and several client processes on a small machine.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// `ZOOID_FAULT_SCALE` (default 1): multiplies how long the workload runs around each fault and
/// how often repeatable faults are injected. The soak runs the suite with a larger value.
pub fn scale() -> f64 {
    std::env::var("ZOOID_FAULT_SCALE")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .unwrap_or(1.0)
}

pub fn scaled(d: Duration) -> Duration {
    d.mul_f64(scale())
}

pub fn scaled_count(n: u64) -> u64 {
    ((n as f64) * scale()).round().max(1.0) as u64
}

pub fn unix_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// The workload binary, built once per test binary in the profile the tests run in.
pub fn faultload_binary() -> PathBuf {
    zooid_test_support::example_binary("faultload")
}

/// The workload's shape.
#[derive(Clone, Debug)]
pub struct Config {
    /// Worker processes started with the rig.
    pub processes: usize,
    /// Threads per worker process (sharing one service and session).
    pub threads: usize,
    /// IDs per take.
    pub batch: u64,
    /// Longest pause between using IDs and pushing the rest back.
    pub pace_ms: u64,
    /// The workers' ZooKeeper session timeout.
    pub session_timeout: Duration,
    /// The workers' per-operation deadline (`RetryPolicy::deadline`).
    pub op_deadline: Duration,
    /// Create the category in block allocation (format 4, hole nodes, the default layout on
    /// ZooKeeper) with blocks of this many IDs (src/alloc/blocks/, src/alloc/holes/).
    pub blocks: Option<u64>,
    /// Kept by `zooid keeper` processes (tests/faults/wipe.rs): the category is created with a
    /// ceiling of 0 for them to raise, and the workers ride out a wipe of ZooKeeper (the
    /// category missing until `zooid restore`, the ceiling not raised in time).
    pub kept: bool,
    /// Start the ensemble with a relay on every quorum and election link
    /// ([`ZkEnsemble::start_with_links`]) and these extra `zoo.cfg` lines, so that a test can cut
    /// one server off its quorum while its clients stay connected to it ([`Rig::links`]).
    pub quorum_links: Option<&'static [(&'static str, &'static str)]>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            processes: 3,
            threads: 2,
            batch: 100,
            pace_ms: 10,
            session_timeout: Duration::from_secs(3),
            op_deadline: Duration::from_secs(5),
            blocks: None,
            kept: false,
            quorum_links: None,
        }
    }
}

/// What a test allows beyond the absolute guarantees.
#[derive(Clone, Copy, Debug, Default)]
pub struct Expect {
    /// Operations whose outcome the protocol cannot tell may happen (each leaks at most one
    /// batch). When false, there must be none and nothing may leak.
    pub unknown_allowed: bool,
    /// With `unknown_allowed` false: pushes in doubt may still end `OutcomeUnknown` (a push of
    /// hole nodes carries no receipt: one whose holes are gone cannot be told), leaking at most
    /// the IDs they name; takes must all be told.
    pub push_unknown_allowed: bool,
    /// Error kinds the clients may see besides the transient ones and `outcome-unknown`.
    pub also_errors: &'static [&'static str],
}

pub enum WorkerState {
    Running,
    Paused,
    Killed,
    #[allow(dead_code)] // Kept for a debugger and future checks; nothing reads it yet.
    Exited(ExitStatus),
}

pub struct Worker {
    pub name: String,
    child: Child,
    pub state: WorkerState,
    pub pid: u32,
}

impl Worker {
    fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill(2) on our own child, which is not reaped before `Rig` reaps it, so the PID
        // cannot have been reused.
        unsafe {
            libc::kill(self.pid as libc::pid_t, sig);
        }
    }
}

/// Sum of every proxy's counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProxyTotals {
    pub dropped_replies: u64,
    pub resets: u64,
    pub blackholes: u64,
    pub forced_closes: u64,
}

impl ProxyTotals {
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (n, what) in [
            (self.dropped_replies, "replies dropped"),
            (self.resets, "connections reset"),
            (self.blackholes, "blackholes"),
            (self.forced_closes, "connections closed"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        }
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(", ")
        }
    }
}

pub struct Rig {
    pub name: String,
    pub cfg: Config,
    // Dropped in this order: workers (by `Drop for Rig`), admin, proxies, the ensemble.
    admin: Option<IdGeneratorService>,
    pub proxies: Vec<FaultProxy>,
    /// The ensemble's quorum links, with [`Config::quorum_links`].
    links: Option<QuorumLinks>,
    pub zk: ZkEnsemble,
    pub category: IdCategory,
    #[allow(dead_code)] // The category's bounds as created; the checks read them from the pool.
    pub bounds: IdRange,
    pub workers: Vec<Worker>,
    dir: TempDir,
    stop_file: PathBuf,
    started: Instant,
    /// Worker threads killed with their process.
    pub killed_threads: u64,
    /// Faults injected other than through the proxies, for the report.
    faults: Vec<String>,
    /// The durable record a `zooid restore` recreated the category from (a wipe row): the IDs
    /// at or below it that no observation names are counted as given up by the restore.
    restored_from: Option<i64>,
}

impl Rig {
    /// Starts the ensemble, the proxies and `cfg.processes` workers.
    pub fn start(name: &str, cfg: Config) -> Rig {
        zooid_test_support::init_tracing();
        let started = Instant::now();
        let bin = faultload_binary();
        assert!(bin.is_file());
        let (zk, links) = match cfg.quorum_links {
            Some(extra) => {
                let (zk, links) = ZkEnsemble::start_with_links(3, extra);
                (zk, Some(links))
            }
            None => (ZkEnsemble::start(3), None),
        };
        let proxies: Vec<FaultProxy> = (0..zk.len())
            .map(|i| FaultProxy::start(zk.server_addr(i)))
            .collect();
        let admin = IdGeneratorService::connect(
            &zk.connect_string(),
            &ConnectOptions {
                session_timeout: Duration::from_secs(10),
                digest_auth: None,
                ..ConnectOptions::default()
            },
            ServiceOptions {
                retry: RetryPolicy {
                    deadline: Duration::from_secs(60),
                    ..RetryPolicy::default()
                },
                ..ServiceOptions::default()
            },
        )
        .expect("admin connects to the ensemble");
        let category = IdCategory::new("/faults/ids").unwrap();
        let bounds = IdRange::new(1, 1_000_000_000).unwrap();
        let layout = match cfg.blocks {
            Some(unit) => zooid::Layout::HoleNodes { unit },
            None => zooid::Layout::SingleNode,
        };
        let ceiling = cfg.kept.then_some(0);
        admin
            .create_category(
                &category,
                &CategorySpec::new(bounds.start(), bounds.end())
                    .layout(layout)
                    .ceiling(ceiling),
            )
            .expect("create the category");
        let dir = tempfile::Builder::new()
            .prefix("zooid-faults-")
            .tempdir()
            .unwrap();
        let stop_file = dir.path().join("STOP");
        let mut rig = Rig {
            name: name.to_string(),
            cfg: cfg.clone(),
            admin: Some(admin),
            proxies,
            links,
            zk,
            category,
            bounds,
            workers: Vec::new(),
            dir,
            stop_file,
            started,
            killed_threads: 0,
            faults: Vec::new(),
            restored_from: None,
        };
        for _ in 0..cfg.processes {
            rig.spawn_worker();
        }
        eprintln!(
            "[{}] ensemble + {} workers up in {:.1?}",
            rig.name,
            cfg.processes,
            rig.started.elapsed()
        );
        rig
    }

    /// The ensemble's quorum links; the rig must have been started with
    /// [`Config::quorum_links`].
    pub fn links(&self) -> &QuorumLinks {
        self.links
            .as_ref()
            .expect("the rig was started with Config::quorum_links")
    }

    /// The proxies' addresses: what the workers connect to.
    pub fn connect_string(&self) -> String {
        self.proxies
            .iter()
            .map(FaultProxy::connect_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The category's pool as it is now, read through the admin's own session (not the proxies).
    pub fn pool_info(&self) -> zooid::Result<zooid::PoolInfo> {
        let admin = self
            .admin
            .as_ref()
            .expect("the admin service lives as long as the rig");
        admin.pool_info(&self.category)
    }

    /// Starts one more worker process; returns its index.
    pub fn spawn_worker(&mut self) -> usize {
        let index = self.workers.len();
        let name = format!("p{index}");
        let stderr = fs::File::create(self.dir().join(format!("{name}.stderr"))).unwrap();
        let mut cmd = Command::new(faultload_binary());
        cmd.arg("--connect")
            .arg(self.connect_string())
            .arg("--category")
            .arg(self.category.name())
            .arg("--dir")
            .arg(self.dir())
            .arg("--name")
            .arg(&name)
            .arg("--threads")
            .arg(self.cfg.threads.to_string())
            .arg("--batch")
            .arg(self.cfg.batch.to_string())
            .arg("--pace-ms")
            .arg(self.cfg.pace_ms.to_string())
            .arg("--session-timeout-ms")
            .arg(self.cfg.session_timeout.as_millis().to_string())
            .arg("--op-deadline-ms")
            .arg(self.cfg.op_deadline.as_millis().to_string())
            .arg("--stop-file")
            .arg(&self.stop_file)
            .arg("--max-seconds")
            .arg("900")
            .args(self.cfg.kept.then_some("--ride-out-wipe"))
            .env("RUST_LOG", "zooid=info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        // SAFETY: prctl and getppid are async-signal-safe. The worker dies with the test process.
        unsafe {
            let parent = libc::getpid();
            cmd.pre_exec(move || {
                libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                );
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("start a faultload worker");
        let pid = child.id();
        self.workers.push(Worker {
            name,
            child,
            state: WorkerState::Running,
            pid,
        });
        index
    }

    /// SIGKILL worker `i` and reap it.
    pub fn kill_worker(&mut self, i: usize) -> ExitStatus {
        let threads = self.cfg.threads as u64;
        let w = &mut self.workers[i];
        assert!(matches!(
            w.state,
            WorkerState::Running | WorkerState::Paused
        ));
        w.signal(libc::SIGKILL);
        let status = w.child.wait().expect("reap a killed worker");
        w.state = WorkerState::Killed;
        self.killed_threads += threads;
        self.faults.push("client SIGKILL".into());
        status
    }

    /// Notes that `zooid restore` recreated the category from a durable record of `ceiling`:
    /// [`finish`](Self::finish) counts the IDs at or below it that no observation names as
    /// given up by that restore.
    pub fn restored_from(&mut self, ceiling: i64) {
        self.restored_from = Some(ceiling);
    }

    /// Notes a fault injected by the test itself (e.g. "leader SIGKILL"), for the report.
    pub fn record_fault(&mut self, what: &str) {
        self.faults.push(what.to_string());
    }

    /// Every fault injected: the proxies' counters and the recorded ones, counted.
    pub fn faults_injected(&self) -> String {
        let mut counts: Vec<(String, usize)> = Vec::new();
        for f in &self.faults {
            match counts.iter_mut().find(|(k, _)| k == f) {
                Some((_, n)) => *n += 1,
                None => counts.push((f.clone(), 1)),
            }
        }
        let mut parts: Vec<String> = counts
            .into_iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        let proxies = self.proxy_totals().describe();
        if proxies != "none" {
            parts.insert(0, proxies);
        }
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(", ")
        }
    }

    /// SIGSTOP worker `i` and wait until all its threads are stopped.
    pub fn pause_worker(&mut self, i: usize) {
        let w = &mut self.workers[i];
        w.signal(libc::SIGSTOP);
        w.state = WorkerState::Paused;
        self.faults.push("client SIGSTOP".into());
        let w = &self.workers[i];
        assert!(
            wait_threads(w.pid, Duration::from_secs(10), true),
            "worker {} did not stop",
            w.name
        );
    }

    /// SIGCONT worker `i`.
    pub fn resume_worker(&mut self, i: usize) {
        let w = &mut self.workers[i];
        w.signal(libc::SIGCONT);
        w.state = WorkerState::Running;
        assert!(
            wait_threads(w.pid, Duration::from_secs(10), false),
            "worker {} did not continue",
            w.name
        );
    }

    /// Indexes of the workers still running (not paused, killed or exited).
    pub fn running_workers(&self) -> Vec<usize> {
        (0..self.workers.len())
            .filter(|&i| matches!(self.workers[i].state, WorkerState::Running))
            .collect()
    }

    /// Successful operations so far (all workers, or those whose name starts with `prefix`),
    /// counting only those that started at or after `since` (unix ms).
    pub fn ok_ops(&self, prefix: &str, since: u128) -> u64 {
        let mut n = 0;
        for entry in fs::read_dir(self.dir()).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".ops") || !name.starts_with(prefix) {
                continue;
            }
            let text = fs::read_to_string(entry.path()).unwrap_or_default();
            n += text
                .lines()
                .filter(|l| l.starts_with("< ") && l.contains(" ok "))
                .filter(|l| {
                    l.split_whitespace()
                        .nth(4)
                        .and_then(|s| s.parse::<u128>().ok())
                        .is_some_and(|start| start >= since)
                })
                .count() as u64;
        }
        n
    }

    /// Whether some worker thread has an operation in flight now: the last line of its ops
    /// file is the operation's begin (`> op START`).
    pub fn an_operation_in_flight(&self) -> bool {
        use std::io::{Read, Seek, SeekFrom};
        fs::read_dir(self.dir()).unwrap().flatten().any(|entry| {
            if !entry.file_name().to_string_lossy().ends_with(".ops") {
                return false;
            }
            let Ok(mut file) = fs::File::open(entry.path()) else {
                return false;
            };
            let len = file.metadata().map_or(0, |m| m.len());
            let mut tail = String::new();
            let _ = file.seek(SeekFrom::Start(len.saturating_sub(256)));
            let _ = file.read_to_string(&mut tail);
            tail.lines().last().is_some_and(|l| l.starts_with("> "))
        })
    }

    /// Waits (up to `limit`) until some worker has an operation in flight, so that a fault
    /// injected right after meets one; returns whether one was.
    pub fn wait_for_an_operation_in_flight(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while !self.an_operation_in_flight() {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    /// Waits until `n` more operations of workers named `prefix*` succeeded; returns whether
    /// they did within `timeout`.
    pub fn wait_ops(&self, prefix: &str, since: u128, n: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.ok_ops(prefix, since) >= n {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Asserts that `n` more operations succeed from now on, within a minute: the workload
    /// carries on `after` the fault.
    pub fn assert_progress(&self, n: u64, after: &str) {
        let since = unix_ms();
        assert!(
            self.wait_ops("", since, n, Duration::from_secs(60)),
            "[{}] no progress after {after}:\n{}",
            self.name,
            self.worker_logs()
        );
    }

    /// Waits for a leader other than `old` and returns it.
    pub fn new_leader_after(&self, old: usize) -> usize {
        let leader = self.zk.wait_for_new_leader(old, Duration::from_secs(60));
        assert_ne!(leader, old, "[{}] the leader did not change", self.name);
        leader
    }

    /// Restarts server `i` and waits until the ensemble has a quorum again.
    pub fn restart_server(&self, i: usize) {
        self.zk.restart(i);
        self.zk.wait_for_quorum(Duration::from_secs(60));
    }

    /// Lets the workload get going (at least 30 successful operations) and run for a second.
    pub fn warm_up(&self) {
        assert!(
            self.wait_ops("", 0, 30, Duration::from_secs(60)),
            "[{}] the workload did not get going:\n{}",
            self.name,
            self.worker_logs()
        );
        self.run_for(Duration::from_secs(1));
    }

    /// Lets the workload run for `d` (scaled by `ZOOID_FAULT_SCALE`).
    pub fn run_for(&self, d: Duration) {
        std::thread::sleep(scaled(d));
    }

    /// Whether worker `i`'s stderr contains `text`.
    pub fn worker_log_contains(&self, i: usize, text: &str) -> bool {
        let name = &self.workers[i].name;
        fs::read_to_string(self.dir().join(format!("{name}.stderr")))
            .unwrap_or_default()
            .contains(text)
    }

    /// The last lines of every worker's stderr.
    pub fn worker_logs(&self) -> String {
        let mut out = String::new();
        for w in &self.workers {
            let text = fs::read_to_string(self.dir().join(format!("{}.stderr", w.name)))
                .unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            out.push_str(&format!("--- {} ---\n", w.name));
            for l in &lines[lines.len().saturating_sub(15)..] {
                out.push_str(l);
                out.push('\n');
            }
        }
        out
    }

    pub fn proxy_totals(&self) -> ProxyTotals {
        let mut t = ProxyTotals::default();
        for p in &self.proxies {
            let s = p.stats();
            t.dropped_replies += s.dropped_replies;
            t.resets += s.resets;
            t.blackholes += s.blackholes;
            t.forced_closes += s.forced_closes;
        }
        t
    }

    /// Arms `fault` on every proxy (re-arming those whose fault fired) until the proxies
    /// counted `target` injections by `counter`, or `timeout` passes. Disarms what is left.
    pub fn inject_until(
        &self,
        arm: impl Fn(&FaultProxy),
        counter: impl Fn(&ProxyTotals) -> u64,
        target: u64,
        timeout: Duration,
    ) -> u64 {
        let deadline = Instant::now() + timeout;
        while counter(&self.proxy_totals()) < target && Instant::now() < deadline {
            for p in &self.proxies {
                if p.armed_faults() == 0 {
                    arm(p);
                }
            }
            // Space the faults out so that the workload runs between them.
            std::thread::sleep(Duration::from_millis(150));
        }
        for p in &self.proxies {
            p.clear_faults();
        }
        counter(&self.proxy_totals())
    }

    /// Spawns workers until at least one client connection goes through server `i`'s proxy
    /// (clients pick a server at random: with 16 more workers, the chance that none picks it is
    /// below 1 in 1,000). Returns how many connections it has.
    pub fn ensure_clients_on(&mut self, i: usize) -> u64 {
        for _ in 0..MORE_WORKERS_FOR_A_SERVER {
            let before = self.workers.len();
            let deadline = Instant::now() + Duration::from_secs(3);
            while Instant::now() < deadline {
                let open = self.proxies[i].open_connections();
                if open > 0 {
                    return open;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            self.spawn_worker();
            let since = unix_ms();
            let name = format!("p{before}-");
            assert!(
                self.wait_ops(
                    &name,
                    since.saturating_sub(60_000),
                    1,
                    Duration::from_secs(30)
                ),
                "new worker {name} made no progress"
            );
        }
        panic!(
            "no client connected through server {i}'s proxy after {MORE_WORKERS_FOR_A_SERVER} more workers"
        );
    }

    /// Stops the workload (workers push back what they hold and exit), reads the final pool and
    /// checks every ledger against it. Prints the account.
    pub fn finish(&mut self) -> Analysis {
        fs::write(&self.stop_file, b"stop").unwrap();
        let deadline = Instant::now() + Duration::from_secs(150);
        let mut failed = Vec::new();
        for i in 0..self.workers.len() {
            if matches!(self.workers[i].state, WorkerState::Paused) {
                self.resume_worker(i);
            }
            let w = &mut self.workers[i];
            if !matches!(w.state, WorkerState::Running) {
                continue;
            }
            let status = loop {
                if let Some(status) = w.child.try_wait().unwrap() {
                    break status;
                }
                if Instant::now() >= deadline {
                    w.signal(libc::SIGKILL);
                    let _ = w.child.wait();
                    panic!("[{}] worker {} did not stop", self.name, w.name);
                }
                std::thread::sleep(Duration::from_millis(50));
            };
            w.state = WorkerState::Exited(status);
            if !status.success() {
                failed.push(format!("{} exited with {status}", w.name));
            }
        }
        self.zk.wait_for_quorum(Duration::from_secs(60));
        let admin = self.admin.as_ref().unwrap();
        let info = admin
            .pool_info(&self.category)
            .expect("read the final pool");
        let killed: Vec<String> = self
            .workers
            .iter()
            .filter(|w| matches!(w.state, WorkerState::Killed))
            .map(|w| w.name.clone())
            .collect();
        // The free IDs as ZooKeeper holds them, read by FORMAT.md, not by zooid.
        let seen = crate::pool::read_free(&self.zk.connect_string(), self.category.name())
            .expect("read the free IDs from ZooKeeper");
        let free: Vec<IdRange> = seen
            .free
            .iter()
            .filter_map(|&(s, e)| IdRange::new(s, e))
            .collect();
        // A take removes at most its batch from the holes plus whole blocks for the rest.
        let take_at_most = self.cfg.batch + self.cfg.blocks.map_or(0, |unit| unit - 1);
        let mut a = analyse(
            self.dir(),
            &Inputs {
                bounds: info.bounds,
                free: &free,
                killed: &killed,
                take_at_most,
                restored_from: self.restored_from,
            },
        );
        a.problems.extend(seen.problems.iter().cloned());
        for f in failed {
            a.problems.push(f);
        }
        // zooid's own reading of the free IDs (pool_info lists the holes and the IDs no block
        // claimed yet) must agree.
        let theirs_free = info.free.clone();
        let (ours, zooids) = (Ivs::new(seen.free.iter().copied()), Ivs::of(&theirs_free));
        if seen.bounds != (info.bounds.start(), info.bounds.end()) || ours != zooids {
            a.problems.push(format!(
                "the free IDs read from ZooKeeper ({} IDs in {:?}: {:?}) and pool_info's ({} IDs) \
                 differ: only in ZooKeeper's {:?}, only in pool_info's {:?}",
                ours.count(),
                seen.bounds,
                seen.sources,
                zooids.count(),
                ours.subtract(&zooids).first(),
                zooids.subtract(&ours).first(),
            ));
        }
        // Cross-check with eventpublish's own checker on the same ledgers. It knows nothing of
        // killed workers or unknown pushes, so only its duplicate findings count here.
        let theirs = crate::ledger::check(self.dir(), info.bounds, &free)
            .expect("eventpublish's ledger check");
        if theirs.duplicates != 0 || theirs.used != a.used {
            a.problems.push(format!(
                "ledger::check disagrees: {} duplicates, {} used (ours: {} used)",
                theirs.duplicates, theirs.used, a.used
            ));
        }
        for p in theirs.problems {
            if p.contains("twice") || p.contains("holds used IDs") || p.contains("unreadable") {
                a.problems.push(format!("ledger::check: {p}"));
            }
        }
        eprintln!(
            "[{}] after {:.1?}; faults: {}\n{}",
            self.name,
            self.started.elapsed(),
            self.faults_injected(),
            a.describe()
        );
        if !a.problems.is_empty() {
            eprintln!("{}", self.worker_logs());
        }
        self.report(&a);
        a
    }

    /// Appends a row to `$ZOOID_FAULT_REPORT` (a markdown table body) if set.
    fn report(&self, a: &Analysis) {
        let Some(path) = std::env::var_os("ZOOID_FAULT_REPORT") else {
            return;
        };
        let row = format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} / {} / {} / {} ({} IDs) | {} | {} | {:.0} s |\n",
            self.name,
            self.faults_injected(),
            a.operations(),
            a.handed_out,
            a.used,
            a.duplicates(),
            if a.restore_gave_up > 0 {
                format!("{} + {} given up by the restore", a.leaked, a.restore_gave_up)
            } else {
                a.leaked.to_string()
            },
            a.held_by_killed + a.unexplained,
            a.ambiguous_ops,
            a.ambiguous_ok,
            a.ambiguous_err,
            a.ambiguous_unknown,
            a.unknown_take_ids + a.unknown_push_ids,
            a.session_renewals,
            a.error_summary(),
            self.started.elapsed().as_secs_f64(),
        );
        let mut file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .expect("open $ZOOID_FAULT_REPORT");
        file.write_all(row.as_bytes()).unwrap();
    }

    /// What every fault test asserts: no duplicates, every ID accounted for from what was
    /// observed, and bounded leaks.
    pub fn assert_guarantees(&self, a: &Analysis, expect: Expect) {
        let batch = self.cfg.batch;
        let ctx = || format!("[{}]\n{}", self.name, a.describe());
        assert!(a.problems.is_empty(), "problems found\n{}", ctx());
        assert_eq!(a.duplicates(), 0, "duplicates\n{}", ctx());
        // Every ID is named by an observation (free in ZooKeeper, used, held, named leaked by a
        // report), given up by a restore, or covered by a bounded report (an unknown block
        // claim's `at_most=N within=A:B`, a take in flight in a killed worker): the checker's
        // `account`, whose leftovers are problems too.
        assert_eq!(
            a.uncovered,
            0,
            "IDs that no observation explains and no report covers\n{}",
            ctx()
        );
        assert_eq!(a.held_by_live, 0, "IDs held by live workers\n{}", ctx());
        assert!(
            a.used > 0 && a.handed_out > 0,
            "no work was done\n{}",
            ctx()
        );
        // Every outcome-unknown operation followed a lost reply (the checker verifies it per
        // operation), and named at most one batch.
        assert_eq!(a.unknown_ops(), a.ambiguous_unknown, "{}", ctx());
        assert_eq!(
            a.errors.get("outcome-unknown").copied().unwrap_or(0),
            a.unknown_ops(),
            "the ledgers' outcome-unknown reports and the operation logs disagree\n{}",
            ctx()
        );
        assert!(
            a.ambiguous_ops <= a.lost_replies(),
            "the workers' logs show fewer lost replies than their operations counted\n{}",
            ctx()
        );
        assert!(a.largest_unknown <= batch, "{}", ctx());
        assert!(
            a.leaked <= batch * a.unknown_ops() + a.give_back_ids,
            "leaked more than one batch per outcome-unknown operation (and the IDs of failed \
             block give-backs)\n{}",
            ctx()
        );
        if !expect.unknown_allowed && expect.push_unknown_allowed {
            assert_eq!(
                a.takes_unknown,
                0,
                "the protocol should have told every take's outcome\n{}",
                ctx()
            );
            assert!(
                a.leaked <= a.unknown_push_ids,
                "leaked more than the pushes in doubt named\n{}",
                ctx()
            );
        } else if !expect.unknown_allowed {
            assert_eq!(
                a.unknown_ops(),
                0,
                "the protocol should have told every outcome\n{}",
                ctx()
            );
            assert_eq!(a.leaked, 0, "{}", ctx());
        }
        // A killed thread held at most one batch; the IDs a take in flight in it may have taken
        // are bounded per take by the checker.
        assert!(
            a.held_by_killed <= batch * self.killed_threads,
            "more IDs held by killed workers than one batch per killed thread ({} threads)\n{}",
            self.killed_threads,
            ctx()
        );
        for kind in a.errors.keys() {
            assert!(
                matches!(
                    kind.as_str(),
                    "connection-lost" | "timeout" | "contention" | "outcome-unknown"
                ) || expect.also_errors.contains(&kind.as_str()),
                "unexpected error kind {kind}\n{}",
                ctx()
            );
        }
    }

    /// A request matcher for the pool node's `setData` whose newest `#op` line is of `kind`
    /// (`take` or `push`): the write of one take or one push.
    pub fn pool_write(&self, kind: &'static str) -> RequestMatch {
        let path = self.category.name().as_bytes().to_vec();
        RequestMatch::Custom(zooid_test_support::MatchFn::new(move |opcode, frame| {
            opcode == zooid_test_support::op::SET_DATA
                && frame.windows(path.len()).any(|w| w == path)
                && newest_op_kind(frame) == Some(kind.as_bytes())
        }))
    }

    /// Every setData on the pool node.
    pub fn any_pool_write(&self) -> RequestMatch {
        RequestMatch::Op {
            opcode: zooid_test_support::op::SET_DATA,
            path_contains: self.category.name().to_string(),
        }
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        for w in &mut self.workers {
            if matches!(w.state, WorkerState::Running | WorkerState::Paused) {
                w.signal(libc::SIGCONT);
                w.signal(libc::SIGKILL);
                let _ = w.child.wait();
                w.state = WorkerState::Killed;
            }
        }
        let keep = std::env::var_os("ZOOID_FAULT_KEEP").is_some();
        if std::thread::panicking() || keep {
            eprintln!(
                "[{}] ledgers and logs in {}{}",
                self.name,
                self.dir().display(),
                if keep {
                    ""
                } else {
                    " (deleted; set ZOOID_FAULT_KEEP=1 to keep them)"
                }
            );
        }
        if keep {
            let _ = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap()).keep();
        }
        drop(self.admin.take());
    }
}

/// The kind word of the last `#op` line in a setData frame.
fn newest_op_kind(frame: &[u8]) -> Option<&[u8]> {
    let marker = b"\n#op ";
    let at = frame.windows(marker.len()).rposition(|w| w == marker)?;
    let line = &frame[at + marker.len()..];
    let end = line.iter().position(|&b| b == b'\n').unwrap_or(line.len());
    let mut words = line[..end].split(|&b| b == b' ');
    words.next()?; // version
    words.next()
}

/// How many workers [`Rig::ensure_clients_on`] adds, at most, to get one onto a given server.
const MORE_WORKERS_FOR_A_SERVER: usize = 16;
