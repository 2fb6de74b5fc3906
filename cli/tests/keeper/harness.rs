//! `zooid keeper` processes for the keeper tests: started with the parent-death signal, their
//! stderr in a log file, stopped by PID.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use zooid_test_support::spawn_with_parent_death_signal;

/// One `zooid keeper` process.
pub struct KeeperProc {
    pub name: String,
    child: Option<Child>,
    log: PathBuf,
}

/// How a keeper is started.
pub struct KeeperArgs<'a> {
    pub connect: &'a str,
    pub durable: &'a Path,
    pub root: &'a str,
    pub reserve_floor: u64,
    pub env: &'a [(&'a str, &'a str)],
}

impl KeeperProc {
    pub fn start(name: &str, dir: &Path, args: KeeperArgs<'_>) -> KeeperProc {
        let log = dir.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).expect("keeper log");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_zooid"));
        cmd.args([
            "--connect",
            args.connect,
            "--session-timeout-ms",
            "3000",
            "keeper",
        ])
        .arg("--durable")
        .arg(args.durable)
        .args(["--root", args.root, "--name", name])
        .args(["--reserve-floor", &args.reserve_floor.to_string()])
        .args(["--reserve-minutes", "0.05", "--tick-ms", "100"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(file);
        for (k, v) in args.env {
            cmd.env(k, v);
        }
        let child = spawn_with_parent_death_signal(cmd).expect("start zooid keeper");
        KeeperProc {
            name: name.to_string(),
            child: Some(child),
            log,
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the log contains `needle`; panics with the log after `timeout`.
    pub fn wait_log(&self, needle: &str, timeout: Duration) -> Duration {
        self.wait_log_times(needle, 1, timeout)
    }

    /// How many times the log contains `needle` so far.
    pub fn log_count(&self, needle: &str) -> usize {
        self.log().matches(needle).count()
    }

    /// Waits until the log contains `needle` `times` times: a line logged after a count taken
    /// with [`Self::log_count`], not one from before (a standby that led earlier, before a
    /// leadership change under load, already has an "active, token" line).
    pub fn wait_log_times(&self, needle: &str, times: usize, timeout: Duration) -> Duration {
        let start = Instant::now();
        loop {
            if self.log_count(needle) >= times {
                return start.elapsed();
            }
            assert!(
                start.elapsed() < timeout,
                "{}: not {times} × {needle:?} within {timeout:?}; log:\n{}",
                self.name,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The token of the last "active, token N" line.
    pub fn last_token(&self) -> Option<i64> {
        self.log()
            .lines()
            .filter_map(|l| l.split("active, token ").nth(1))
            .filter_map(|t| t.trim().parse().ok())
            .next_back()
    }

    pub fn is_active(&self) -> bool {
        let log = self.log();
        let active = log.rfind(" active, token ");
        let inactive = log.rfind("no longer active").max(log.rfind("stepped back"));
        active.is_some() && active > inactive
    }

    pub fn signal(&self, sig: i32) {
        if let Some(child) = &self.child {
            unsafe {
                libc::kill(child.id() as i32, sig);
            }
        }
    }

    /// SIGTERM and wait (the keeper resigns).
    pub fn stop(&mut self) {
        self.signal(libc::SIGTERM);
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
    }

    /// SIGKILL and reap.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Waits for the process to exit by itself; returns its status description.
    pub fn wait_exit(&mut self, timeout: Duration) -> String {
        let start = Instant::now();
        let child = self.child.as_mut().expect("running");
        loop {
            if let Some(status) = child.try_wait().expect("try_wait") {
                self.child = None;
                return format!("{status:?}");
            }
            assert!(
                start.elapsed() < timeout,
                "{} did not exit; log:\n{}",
                self.name,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for KeeperProc {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            // A stopped process must be continued to die promptly.
            unsafe {
                libc::kill(child.id() as i32, libc::SIGCONT);
            }
        }
        self.kill();
    }
}
