//! `zooid elect` and `zooid leader` end to end: three processes run a recording command while
//! leaders are killed or stopped; the command's exit code and the fencing token it is given.
//! (Moved from tests/election.rs; the in-process election tests are in tests/recipes/election.)

use std::time::Duration;

use support::{now_us, ZkServer};
use zooid_test_support as support;

/// A `zooid elect` process running a command that records its runs.
struct Elect {
    name: String,
    child: std::process::Child,
    killed_at: Option<u128>,
}

impl Elect {
    fn start(
        dir: &std::path::Path,
        connect: &str,
        group: &str,
        name: &str,
        out: &std::path::Path,
    ) -> Elect {
        // The command appends `S,token,pid,start,ppid` when it starts and `E,token,pid,start,end`
        // when stopped (times in unix ns).
        let script = r#"out="$1"; start=$(date +%s%N); echo "S,$ZOOID_FENCING_TOKEN,$$,$start,$PPID" >> "$out"; trap 'echo "E,$ZOOID_FENCING_TOKEN,$$,$start,$(date +%s%N)" >> "$out"; exit 0' TERM; while :; do sleep 0.05; done"#;
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_zooid"));
        cmd.args([
            "--connect",
            connect,
            "--session-timeout-ms",
            "3000",
            "elect",
            group,
            "--name",
            name,
        ])
        .args(["--on-pause", "stop", "--grace-ms", "2000", "--log"])
        .arg(dir.join(format!("{name}.log")))
        .args(["--", "sh", "-c", script, "sh"])
        .arg(out)
        .env("RUST_LOG", "zooid=info")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(dir.join(format!("{name}.stderr"))).unwrap());
        Elect {
            name: name.to_string(),
            child: support::spawn_with_parent_death_signal(cmd).unwrap(),
            killed_at: None,
        }
    }

    fn signal(&mut self, sig: i32) {
        // SAFETY: kill(2) on our own child.
        unsafe {
            libc::kill(self.child.id() as i32, sig);
        }
        if sig == libc::SIGKILL {
            self.killed_at = Some(now_us());
            let _ = self.child.wait();
        }
    }
}

impl Elect {
    /// The pid of the guard that runs this `zooid elect`'s command (from its log).
    fn guard_pid(&self, dir: &std::path::Path) -> Option<u32> {
        let log = std::fs::read_to_string(dir.join(format!("{}.log", self.name))).ok()?;
        log.lines()
            .find_map(|l| l.split(" guard=").nth(1))
            .and_then(|p| p.trim().parse().ok())
    }
}

impl Drop for Elect {
    fn drop(&mut self) {
        if self.killed_at.is_none() {
            self.signal(libc::SIGKILL);
        }
    }
}

/// One run of the command: token, pid, start and end in unix µs (end: the E line, or the
/// SIGKILL of its `zooid elect`), and the pid of its `zooid elect`.
#[derive(Debug, Clone)]
struct Run {
    token: i64,
    pid: u32,
    start: u128,
    end: Option<u128>,
    parent: u32,
}

fn runs(out: &std::path::Path) -> Vec<Run> {
    let text = std::fs::read_to_string(out).unwrap_or_default();
    let mut runs: Vec<Run> = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split(',').collect();
        match f.as_slice() {
            ["S", token, pid, start, ppid] => runs.push(Run {
                token: token.parse().unwrap(),
                pid: pid.parse().unwrap(),
                start: start.parse::<u128>().unwrap() / 1000,
                end: None,
                parent: ppid.parse().unwrap(),
            }),
            ["E", _token, pid, _start, end] => {
                let pid: u32 = pid.parse().unwrap();
                if let Some(run) = runs.iter_mut().rev().find(|r| r.pid == pid) {
                    run.end = Some(end.parse::<u128>().unwrap() / 1000);
                }
            }
            _ => {}
        }
    }
    runs
}

fn zooid_leader(connect: &str, group: &str) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zooid"))
        .args(["--connect", connect, "leader", group])
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// `zooid elect` end to end: three processes run a recording command; leaders are killed
/// (SIGKILL) or stopped (SIGTERM) repeatedly; the command never ran in two processes at once,
/// never outlived its `zooid elect`, and the tokens only grow.
#[test]
fn zooid_elect_end_to_end() {
    support::init_tracing();
    let zk = ZkServer::start();
    let connect = zk.connect_string();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs.csv");
    let group = "/el/cli";
    assert_eq!(
        zooid_leader(&connect, group).0,
        Some(12),
        "no leader yet: exit 12"
    );
    let mut elects: Vec<Elect> = Vec::new();
    let mut started = 0;
    let mut spawn = |elects: &mut Vec<Elect>| {
        elects.push(Elect::start(
            dir.path(),
            &connect,
            group,
            &format!("e{started}"),
            &out,
        ));
        started += 1;
    };
    for _ in 0..3 {
        spawn(&mut elects);
    }
    let rounds = 6;
    let mut failovers = Vec::new();
    for round in 0..rounds {
        assert!(
            support::wait_until(Duration::from_secs(20), || runs(&out).len() == round + 1),
            "run {round} started: {:?}",
            runs(&out)
        );
        let run = runs(&out)[round].clone();
        let (code, text) = zooid_leader(&connect, group);
        assert_eq!(code, Some(0));
        assert!(text.contains(&format!("token={}", run.token)), "{text}");
        // The command's parent is the guard its `zooid elect` forked (logged at join).
        let leader = elects
            .iter_mut()
            .find(|e| e.guard_pid(dir.path()) == Some(run.parent))
            .expect("the run's zooid elect");
        let t0 = now_us();
        if round % 2 == 0 {
            leader.signal(libc::SIGKILL);
            // The command dies with its zooid elect.
            assert!(
                support::wait_until(Duration::from_secs(2), || !std::path::Path::new(&format!(
                    "/proc/{}",
                    run.pid
                ))
                .exists()),
                "command outlived zooid elect"
            );
        } else {
            leader.signal(libc::SIGTERM);
            let status = leader.child.wait().unwrap();
            assert!(
                status.success(),
                "zooid elect exits 0 after SIGTERM: {status:?}"
            );
            leader.killed_at = Some(now_us());
            assert!(
                runs(&out)[round].end.is_some(),
                "the command was stopped before zooid elect exited"
            );
        }
        let name = leader.name.clone();
        assert!(
            support::wait_until(Duration::from_secs(20), || runs(&out).len() == round + 2),
            "next run after {name} went"
        );
        failovers.push((
            (runs(&out)[round + 1].start - t0) as f64 / 1000.0,
            round % 2 == 0,
        ));
        spawn(&mut elects);
    }
    // The last leader resigns; nobody else is left running when everything is stopped.
    for e in elects.iter_mut().filter(|e| e.killed_at.is_none()) {
        // Its signal handlers are in place once it joined.
        let log = dir.path().join(format!("{}.log", e.name));
        assert!(support::wait_until(Duration::from_secs(20), || {
            std::fs::read_to_string(&log).is_ok_and(|t| t.contains(" joined "))
        }));
        e.signal(libc::SIGTERM);
    }
    for e in elects.iter_mut().filter(|e| e.killed_at.is_none()) {
        assert!(e.child.wait().unwrap().success());
        e.killed_at = Some(now_us());
    }
    let all = runs(&out);
    let ends: Vec<(Run, u128)> = all
        .iter()
        .map(|r| {
            let end = r.end.or_else(|| {
                elects
                    .iter()
                    .find(|e| e.guard_pid(dir.path()) == Some(r.parent))
                    .and_then(|e| e.killed_at)
            });
            (r.clone(), end.expect("every run ended"))
        })
        .collect();
    for w in ends.windows(2) {
        let ((a, a_end), (b, _)) = (&w[0], &w[1]);
        assert!(
            b.start >= *a_end,
            "runs overlap: {a:?} ended {a_end} after {b:?} started"
        );
        assert!(
            b.token > a.token,
            "tokens grow: {} then {}",
            a.token,
            b.token
        );
    }
    let kill: Vec<f64> = failovers.iter().filter(|f| f.1).map(|f| f.0).collect();
    let term: Vec<f64> = failovers.iter().filter(|f| !f.1).map(|f| f.0).collect();
    eprintln!(
        "FIGURES zooid-elect: {} runs, no overlap, tokens strictly growing; next run started after SIGKILL {:?} ms, after SIGTERM {:?} ms (session 3000 ms)",
        all.len(),
        kill.iter().map(|v| v.round()).collect::<Vec<_>>(),
        term.iter().map(|v| v.round()).collect::<Vec<_>>()
    );
}

/// `zooid elect`'s own exits: the command's code when it ends by itself (after resigning, so
/// nobody leads), 2 on the embedded stores; the token is exported to the command.
#[test]
fn zooid_elect_exit_codes() {
    support::init_tracing();
    let zk = ZkServer::start();
    let connect = zk.connect_string();
    let zooid = env!("CARGO_BIN_EXE_zooid");
    let out = std::process::Command::new(zooid)
        .args([
            "--connect",
            &connect,
            "elect",
            "/el/exit",
            "--name",
            "once",
            "--",
        ])
        .args([
            "sh",
            "-c",
            "echo \"$ZOOID_LEADER_NAME $ZOOID_FENCING_TOKEN\"; exit 3",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let (name, token) = text.trim().split_once(' ').unwrap();
    assert_eq!(name, "once");
    assert!(token.parse::<i64>().unwrap() > 0);
    assert_eq!(zooid_leader(&connect, "/el/exit").0, Some(12), "resigned");
    let out = std::process::Command::new(zooid)
        .args(["--connect", "mem:", "elect", "/el/exit", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Runs `zooid elect GROUP -- echo $ZOOID_FENCING_TOKEN` once and returns the token it was given.
fn token_once(connect: &str, group: &str) -> i64 {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zooid"))
        .args(["--connect", connect, "elect", group, "--"])
        .args(["sh", "-c", "echo \"$ZOOID_FENCING_TOKEN\""])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

fn unix_seconds() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A simulated restore from an older snapshot: before it, the group's epoch was E (the history
/// that the restore loses); the group node comes back with a lower epoch, and a leader's token
/// goes backwards (the guard). `zooid elect --bump-epoch GROUP`, run once the clock is past E
/// (as it is past any epoch of a lost history), makes the next token greater than every earlier.
#[test]
fn zooid_elect_bump_epoch_after_a_rollback() {
    support::init_tracing();
    let zk = ZkServer::start();
    let connect = zk.connect_string();
    let group = "/el/restored";
    // Far enough ahead that the simulated restore below still happens before it (each run of
    // `zooid elect` takes a few seconds).
    let lost_epoch = unix_seconds() + 30;
    // Multi-threaded, so the client's pings go on between the block_on calls.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let client = rt
        .block_on(zookeeper_client::Client::connect(&connect))
        .unwrap();
    let options =
        zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    let recreate = |data: &[u8]| {
        rt.block_on(async {
            if let Ok(children) = client.list_children(group).await {
                for child in children {
                    let _ = client.delete(&format!("{group}/{child}"), None).await;
                }
                client.delete(group, None).await.unwrap();
            }
            client.mkdir("/el", &options).await.ok();
            client.create(group, data, &options).await.unwrap();
        })
    };
    // The history the restore loses: epoch `lost_epoch`, a few leaders.
    recreate(format!("zooid-epoch={lost_epoch}\n").as_bytes());
    let mut before = 0;
    for _ in 0..2 {
        let token = token_once(&connect, group);
        assert!(token > before);
        before = token;
    }
    // The restore: the group node as the older snapshot had it (a lower epoch).
    recreate(format!("owner=ops\nzooid-epoch={}\n", lost_epoch - 100).as_bytes());
    let rolled_back = token_once(&connect, group);
    assert!(
        unix_seconds() < lost_epoch,
        "the simulated restore ran too late"
    );
    assert!(
        rolled_back < before,
        "guard: the rollback made tokens go backwards ({rolled_back} < {before})"
    );
    // The operator bumps the epoch (the clock is past the lost history's epoch by now).
    while unix_seconds() <= lost_epoch {
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zooid"))
        .args(["--connect", &connect, "elect", "--bump-epoch", group])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let printed = String::from_utf8_lossy(&out.stdout);
    let epoch: i64 = printed
        .trim()
        .rsplit_once("epoch=")
        .unwrap()
        .1
        .parse()
        .unwrap();
    assert!(epoch > lost_epoch, "{printed}");
    let after = token_once(&connect, group);
    assert!(
        after > before,
        "after the bump {after} > before the rollback {before}"
    );
    assert_eq!(after >> 31, epoch);
    let data = rt.block_on(client.get_data(group)).unwrap().0;
    assert!(
        String::from_utf8_lossy(&data).starts_with("owner=ops\n"),
        "other lines kept"
    );
    println!(
        "FIGURES elect bump-epoch: tokens before the rollback up to {before}, after it {rolled_back}, after the bump {after} (epoch {epoch})"
    );
}
