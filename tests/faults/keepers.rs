//! The keepers of the wipe rows (tests/faults/wipe.rs): `zooid keeper` processes over [`ROOT`],
//! a sampler of their durable record, `zooid restore`, and their election as the servers see it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zooid::durable::DirRecords;
use zooid_test_support::{cli_binary, spawn_with_parent_death_signal};

use crate::rig::unix_ms;

/// The keepers' root: the rig's category `/faults/ids` lies under it.
pub const ROOT: &str = "/faults";
/// The keepers' reserve: at least this many IDs above the high water...
pub const RESERVE_FLOOR: u64 = 1_000;
/// ...and at most this many: the most a wipe may cost beyond the IDs free in the pool.
pub const RESERVE_CAP: u64 = 10_000;

/// One `zooid keeper` process over [`ROOT`], its stderr in a file, stopped by PID.
pub struct Keeper {
    pub name: String,
    child: Option<Child>,
    log: PathBuf,
}

impl Keeper {
    pub fn start(name: &str, dir: &Path, connect: &str, records: &Path) -> Keeper {
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

    pub fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether its last word on leadership is "active".
    pub fn is_active(&self) -> bool {
        let log = self.log();
        let active = log.rfind(" active, token ");
        let inactive = log.rfind("no longer active").max(log.rfind("stepped back"));
        active.is_some() && active > inactive
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }

    /// SIGKILL and reap.
    pub fn kill(&mut self) {
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
pub struct Sampler {
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<(u128, i64)>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    pub fn start(records: &Path, category: &str) -> Sampler {
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
    pub fn finish(mut self) -> Vec<(u128, i64)> {
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

/// The durable record's ceiling of the rig's category.
pub fn record_ceiling(records: &Path, category: &str) -> i64 {
    DirRecords::open(records)
        .and_then(|r| r.read(category))
        .expect("read the durable record")
        .expect("a durable record of the category")
        .ceiling
}

/// Runs `zooid restore` from `records` over [`ROOT`]; returns the ceiling it restored
/// `category` with (its `restored ... ceiling N ...` line).
pub fn zooid_restore(connect: &str, records: &Path, category: &str) -> i64 {
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
pub fn candidates(connect: &str) -> usize {
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
