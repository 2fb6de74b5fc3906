//! The multi-process rig of tests/queue.rs: builds examples/queueload.rs, starts producer and
//! consumer processes (they die with the test), and checks their timestamped logs.

use std::collections::HashMap;
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The workload binary, built once per test binary in the profile the tests run in.
pub fn queueload_binary() -> PathBuf {
    zooid_test_support::example_binary("queueload")
}

/// One workload process; killed on drop.
pub struct Proc {
    pub name: String,
    pub child: Child,
    pub log: PathBuf,
}

impl Proc {
    /// Starts `queueload <args...>` logging to `<dir>/<name>.log`.
    pub fn start(
        dir: &Path,
        name: &str,
        connect: &str,
        queue: &str,
        session_ms: u64,
        args: &[String],
    ) -> Proc {
        let log = dir.join(format!("{name}.log"));
        let stderr = fs::File::create(dir.join(format!("{name}.stderr"))).unwrap();
        let mut cmd = Command::new(queueload_binary());
        cmd.arg("--connect")
            .arg(connect)
            .arg("--queue")
            .arg(queue)
            .arg("--log")
            .arg(&log)
            .arg("--session-ms")
            .arg(session_ms.to_string())
            .args(args)
            .env("RUST_LOG", "zooid=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        // SAFETY: prctl and getppid are async-signal-safe. The process dies with the test.
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
        let child = cmd.spawn().expect("start queueload");
        Proc {
            name: name.to_string(),
            child,
            log,
        }
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's PID.
        unsafe {
            libc::kill(self.child.id() as i32, sig);
        }
    }

    /// Waits for the process to exit; false on timeout.
    pub fn wait_exit(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn lines(&self) -> Vec<String> {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.signal(libc::SIGCONT);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One claim as the logs show it.
#[derive(Clone, Debug)]
pub struct ClaimSpan {
    pub consumer: String,
    pub start: u128,
    /// `Some((time, completed))`: complete() returned Ok (true) or the claim was lost (false).
    pub end: Option<(u128, bool)>,
}

/// What the checker found.
#[derive(Debug, Default)]
pub struct Report {
    pub put: usize,
    pub completed: usize,
    pub claims: usize,
    pub lost_claims: usize,
    pub errors: Vec<String>,
    pub violations: Vec<String>,
}

/// Reads producer and consumer logs and checks: every put item completed exactly once, nothing
/// completed that was not put, no claim after an item's completion, and no two claims of one
/// item overlapping in time while both were live (a claim is live from its `C` line to its `D`
/// line; lost and unfinished claims are reported, not used as intervals).
pub fn check(producers: &[&Proc], consumers: &[&Proc]) -> Report {
    let mut report = Report::default();
    let mut put: HashMap<String, String> = HashMap::new();
    for p in producers {
        for line in p.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            match f.first() {
                Some(&"P") if put.insert(f[1].to_string(), f[2].to_string()).is_some() => {
                    report.violations.push(format!("item {} put twice", f[1]));
                }
                Some(&"E") => report.errors.push(format!("{}: {line}", p.name)),
                _ => {}
            }
        }
    }
    report.put = put.len();
    let mut spans: HashMap<String, Vec<ClaimSpan>> = HashMap::new();
    for c in consumers {
        let mut open: HashMap<String, usize> = HashMap::new();
        for line in c.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            match f.first() {
                Some(&"C") => {
                    report.claims += 1;
                    let list = spans.entry(f[1].to_string()).or_default();
                    if put.get(f[1]).is_some_and(|d| d != f[2]) {
                        report
                            .violations
                            .push(format!("{} delivered with wrong data {}", f[1], f[2]));
                    }
                    open.insert(f[1].to_string(), list.len());
                    list.push(ClaimSpan {
                        consumer: c.name.clone(),
                        start: f[3].parse().unwrap(),
                        end: None,
                    });
                }
                Some(&"D") | Some(&"L") => {
                    let done = f[0] == "D";
                    let Some(i) = open.remove(f[1]) else {
                        report
                            .violations
                            .push(format!("{}: end without claim: {line}", c.name));
                        continue;
                    };
                    spans.get_mut(f[1]).unwrap()[i].end = Some((f[2].parse().unwrap(), done));
                    if !done {
                        report.lost_claims += 1;
                    }
                }
                Some(&"E") => report.errors.push(format!("{}: {line}", c.name)),
                _ => {}
            }
        }
    }
    for (item, list) in &spans {
        if !put.contains_key(item) {
            report
                .violations
                .push(format!("{item} claimed but never put"));
        }
        let completes: Vec<&ClaimSpan> = list
            .iter()
            .filter(|s| matches!(s.end, Some((_, true))))
            .collect();
        if completes.len() > 1 {
            report
                .violations
                .push(format!("{item} completed {} times", completes.len()));
        }
        if let Some(done) = completes.first() {
            let (end, _) = done.end.unwrap();
            for s in list {
                if s.start > end {
                    report.violations.push(format!(
                        "{item} claimed by {} after its completion",
                        s.consumer
                    ));
                }
                // Another claim live during the completed one.
                if !std::ptr::eq(s, *done) && s.start < end && s.start >= done.start {
                    report.violations.push(format!(
                        "{item}: claim by {} at {} while {}'s claim ({}..{end}) was live",
                        s.consumer, s.start, done.consumer, done.start
                    ));
                }
            }
        }
    }
    for (item, _) in put.iter() {
        let completed = spans
            .get(item)
            .is_some_and(|l| l.iter().any(|s| matches!(s.end, Some((_, true)))));
        if completed {
            report.completed += 1;
        } else {
            report.violations.push(format!("{item} never completed"));
        }
    }
    report.violations.sort();
    report
}
