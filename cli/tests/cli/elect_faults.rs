//! Issue 20, finding 5: `zooid elect`'s command must be gone before the leadership can have
//! passed to another process. Every command appends `B,name,token,pid,unix_ns` beats every
//! 20 ms (and `T,...` when it receives SIGTERM) to one shared file; the checker takes each pid's
//! first and last beat as its run and asserts that no two runs overlap.

use std::path::{Path, PathBuf};
use std::time::Duration;

use support::{FaultProxy, ZkServer};
use zooid_test_support as support;

/// The recording command. `ignore_term`: SIGTERM is recorded and ignored.
fn script(ignore_term: bool) -> String {
    let on_term = if ignore_term {
        r#"trap 'echo "T,$ZOOID_LEADER_NAME,$ZOOID_FENCING_TOKEN,$$,$(date +%s%N)" >> "$out"' TERM"#
    } else {
        r#"trap 'echo "T,$ZOOID_LEADER_NAME,$ZOOID_FENCING_TOKEN,$$,$(date +%s%N)" >> "$out"; exit 0' TERM"#
    };
    format!(
        r#"out="$1"; {on_term}; while :; do echo "B,$ZOOID_LEADER_NAME,$ZOOID_FENCING_TOKEN,$$,$(date +%s%N)" >> "$out"; sleep 0.02; done"#
    )
}

/// A `zooid elect` process in its own process group (as a shell job would be).
struct Elect {
    child: std::process::Child,
    log: PathBuf,
}

impl Elect {
    fn start(
        dir: &Path,
        connect: &str,
        group: &str,
        name: &str,
        out: &Path,
        ignore_term: bool,
    ) -> Elect {
        let log = dir.join(format!("{name}.log"));
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_zooid"));
        cmd.args([
            "--connect",
            connect,
            "--session-timeout-ms",
            "3000",
            "elect",
            group,
        ])
        .args(["--name", name, "--on-pause", "stop", "--log"])
        .arg(&log)
        .args(["--", "sh", "-c", &script(ignore_term), "sh"])
        .arg(out)
        .env("RUST_LOG", "zooid=info")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(dir.join(format!("{name}.stderr"))).unwrap());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        Elect {
            child: support::spawn_with_parent_death_signal(cmd).unwrap(),
            log,
        }
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    fn joined(&self) -> bool {
        std::fs::read_to_string(&self.log).is_ok_and(|t| t.contains(" joined "))
    }

    /// The process state letter from /proc (`T` when stopped).
    fn proc_state(&self) -> Option<char> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).ok()?;
        stat.rsplit(')').next()?.trim().chars().next()
    }
}

impl Drop for Elect {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child (and its process group).
        unsafe {
            libc::kill(self.pid(), libc::SIGCONT);
            libc::kill(self.pid(), libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// One command run: the first and last beat of a pid.
#[derive(Debug, Clone)]
struct Run {
    name: String,
    token: i64,
    pid: u32,
    first: u128,
    last: u128,
    terms: usize,
}

fn runs(out: &Path) -> Vec<Run> {
    let text = std::fs::read_to_string(out).unwrap_or_default();
    let mut runs: Vec<Run> = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split(',').collect();
        let [kind, name, token, pid, ns] = f.as_slice() else {
            continue;
        };
        let (Ok(token), Ok(pid), Ok(ns)) = (token.parse(), pid.parse(), ns.parse::<u128>()) else {
            continue;
        };
        let i = match runs.iter().position(|r| r.pid == pid) {
            Some(i) => i,
            None => {
                runs.push(Run {
                    name: name.to_string(),
                    token,
                    pid,
                    first: ns,
                    last: ns,
                    terms: 0,
                });
                runs.len() - 1
            }
        };
        match *kind {
            "B" => runs[i].last = runs[i].last.max(ns),
            "T" => runs[i].terms += 1,
            _ => {}
        }
    }
    runs.sort_by_key(|r| r.first);
    runs
}

/// Pairs of runs of different pids that overlap (first beat of one before the last of another).
fn overlaps(runs: &[Run]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, a) in runs.iter().enumerate() {
        for b in &runs[i + 1..] {
            if b.first <= a.last {
                out.push(format!(
                    "{} (token {}, pid {}) ran until {:.3}s after {} (token {}, pid {}) started",
                    a.name,
                    a.token,
                    a.pid,
                    (a.last - b.first) as f64 / 1e9,
                    b.name,
                    b.token,
                    b.pid
                ));
            }
        }
    }
    out
}

/// The gaps (s) between each run's last beat and the next run's first beat.
fn gaps(runs: &[Run]) -> Vec<String> {
    runs.windows(2)
        .map(|w| format!("{:.2}", (w[1].first as f64 - w[0].last as f64) / 1e9))
        .collect()
}

fn wait_runs(out: &Path, n: usize, timeout: Duration) -> bool {
    support::wait_until(timeout, || runs(out).len() >= n)
}

/// A leader cut off from ZooKeeper (its proxy blackholed) whose command ignores SIGTERM, with
/// the default grace: the command must be gone before the successor's command starts.
#[test]
fn term_ignoring_command_is_gone_before_the_successor_starts() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs.csv");
    let group = "/el/term";
    let first = Elect::start(
        dir.path(),
        &proxy.connect_string(),
        group,
        "first",
        &out,
        true,
    );
    assert!(wait_runs(&out, 1, Duration::from_secs(20)), "first leads");
    let second = Elect::start(
        dir.path(),
        &zk.connect_string(),
        group,
        "second",
        &out,
        true,
    );
    assert!(support::wait_until(Duration::from_secs(20), || second.joined()));
    std::thread::sleep(Duration::from_millis(300));
    proxy.blackhole();
    assert!(
        wait_runs(&out, 2, Duration::from_secs(20)),
        "second leads: {:?}",
        runs(&out)
    );
    // Let the first command's fate settle (today: SIGKILL 5 s after the SIGTERM).
    std::thread::sleep(Duration::from_secs(7));
    let all = runs(&out);
    let stats = proxy.stats();
    eprintln!(
        "FIGURES term-ignoring command: gaps {:?} s; runs {all:?}; proxy {stats:?}",
        gaps(&all)
    );
    // Guards: the leader was cut off, and its command got (and ignored) SIGTERM.
    assert!(stats.blackholes >= 1, "the proxy blackholed the leader");
    let old = all.iter().find(|r| r.name == "first").expect("first's run");
    assert!(
        old.terms >= 1,
        "the first command received SIGTERM and ignored it: {old:?}"
    );
    let bad = overlaps(&all);
    assert!(bad.is_empty(), "commands overlap: {bad:#?}");
    proxy.heal();
    drop(first);
    drop(second);
}

/// `kill -STOP` of the leading `zooid elect` alone, then Ctrl-Z (SIGTSTP to the next leader's
/// process group): neither command may run on once the successor's starts.
#[test]
fn stopped_elect_command_does_not_overlap_the_successor() {
    support::init_tracing();
    let zk = ZkServer::start();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs.csv");
    let group = "/el/stopped";
    let connect = zk.connect_string();
    let a = Elect::start(dir.path(), &connect, group, "a", &out, false);
    assert!(wait_runs(&out, 1, Duration::from_secs(20)), "a leads");
    let b = Elect::start(dir.path(), &connect, group, "b", &out, false);
    assert!(support::wait_until(Duration::from_secs(20), || b.joined()));
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(a.pid(), libc::SIGSTOP) };
    let a_stopped = support::wait_until(Duration::from_secs(2), || a.proc_state() == Some('T'));
    assert!(
        wait_runs(&out, 2, Duration::from_secs(20)),
        "b leads after a's session expired: {:?}",
        runs(&out)
    );
    let c = Elect::start(dir.path(), &connect, group, "c", &out, false);
    assert!(support::wait_until(Duration::from_secs(20), || c.joined()));
    std::thread::sleep(Duration::from_millis(300));
    // Ctrl-Z: SIGTSTP to b's process group (the terminal's foreground job).
    // SAFETY: kill(2) on our own child's process group.
    unsafe { libc::kill(-b.pid(), libc::SIGTSTP) };
    let b_stopped = support::wait_until(Duration::from_secs(2), || b.proc_state() == Some('T'));
    assert!(
        wait_runs(&out, 3, Duration::from_secs(20)),
        "c leads after b's session expired: {:?}",
        runs(&out)
    );
    std::thread::sleep(Duration::from_secs(2));
    let all = runs(&out);
    eprintln!(
        "FIGURES stopped elect: gaps {:?} s; runs {all:?}; guards: a stopped {a_stopped}, b stopped {b_stopped}",
        gaps(&all)
    );
    assert!(
        a_stopped && b_stopped,
        "both zooid elect processes were stopped"
    );
    let bad = overlaps(&all);
    assert!(bad.is_empty(), "commands overlap: {bad:#?}");
    drop(c);
}

/// The `--log` file stalls (a FIFO whose buffer is full and whose reader never reads): the log
/// lines must not stall the runtime thread that carries the session's heartbeats. The leader
/// starts its command and keeps its session (same token) for three session timeouts.
#[test]
fn a_stalled_log_does_not_stall_the_leader() {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt;
    support::init_tracing();
    let zk = ZkServer::start();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs.csv");
    let fifo = dir.path().join("stalled.log");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) on a path in our temp dir.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    // A reader that never reads, so writers can open it; then fill the buffer.
    let _reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let mut filler = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let mut filled = 0usize;
    while let Ok(n) = filler.write(&[b'x'; 4096]) {
        filled += n;
    }
    let group = "/el/stalled-log";
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_zooid"));
    cmd.args([
        "--connect",
        &zk.connect_string(),
        "--session-timeout-ms",
        "2000",
    ])
    .args(["elect", group, "--name", "logger", "--log"])
    .arg(&fifo)
    .args(["--", "sh", "-c", &script(false), "sh"])
    .arg(&out)
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null());
    let mut elect = support::spawn_with_parent_death_signal(cmd).unwrap();
    let started = wait_runs(&out, 1, Duration::from_secs(15));
    let first = zooid_leader_token(&zk.connect_string(), group);
    std::thread::sleep(Duration::from_secs(6));
    let later = zooid_leader_token(&zk.connect_string(), group);
    let all = runs(&out);
    let fresh = all.last().is_some_and(|r| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        now - r.last < 500_000_000
    });
    // Guard: the log stayed stalled (the FIFO is still full).
    let still_full =
        matches!(filler.write(b"y"), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    eprintln!(
        "FIGURES stalled log: {filled} bytes filled, still full {still_full}; command started {started}, runs {}, beating {fresh}; leader token {first:?} then {later:?} (session 2000 ms)",
        all.len()
    );
    // SIGTERM: it stops the command, resigns and exits although its log is stuck.
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(elect.id() as i32, libc::SIGTERM) };
    let mut exited = None;
    support::wait_until(Duration::from_secs(10), || {
        exited = elect.try_wait().ok().flatten();
        exited.is_some()
    });
    if exited.is_none() {
        // SAFETY: as above.
        unsafe { libc::kill(elect.id() as i32, libc::SIGKILL) };
        let _ = elect.wait();
    }
    assert!(filled > 0 && still_full, "the log was stalled throughout");
    assert_eq!(
        exited.and_then(|s| s.code()),
        Some(0),
        "SIGTERM: exits 0 despite the stuck log"
    );
    assert!(
        started,
        "the leader started its command although its log is stalled"
    );
    assert!(
        first.is_some() && first == later,
        "the leader kept its session: {first:?} then {later:?}"
    );
    assert!(all.len() == 1 && fresh, "one run, still going: {all:?}");
}

/// The token `zooid leader` prints, if any.
fn zooid_leader_token(connect: &str, group: &str) -> Option<i64> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zooid"))
        .args(["--connect", connect, "leader", group])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("token="))
        .and_then(|t| t.parse().ok())
}
