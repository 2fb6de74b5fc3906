//! `zooid queue put|work|show` end to end against a real ZooKeeper server.

use zooid_test_support as support;

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use support::ZkServer;

fn zooid(connect: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zooid"))
        .arg("--connect")
        .arg(connect)
        .args(args)
        .output()
        .expect("run zooid")
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "zooid failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn fails(out: Output, code: i32, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    assert!(stderr.contains(needle), "{stderr}");
}

/// put (argument and stdin), show, work (exit 0 completes, non-zero releases), bad input.
#[test]
fn put_work_show_and_errors() {
    let zk = ZkServer::start();
    let c = zk.connect_string();
    let q = "/cli/q";
    fails(zooid(&c, &["queue", "show", q]), 4, "does not exist");
    let a = ok(zooid(&c, &["queue", "put", q, "a"]));
    assert!(a.starts_with("i-") && a.ends_with("0000000000\n"), "{a}");
    let mut put = Command::new(env!("CARGO_BIN_EXE_zooid"))
        .args(["--connect", &c, "queue", "put", q, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    put.stdin.take().unwrap().write_all(b"fail").unwrap();
    assert!(put.wait_with_output().unwrap().status.success());
    ok(zooid(&c, &["queue", "put", q, "b"]));
    let show = ok(zooid(&c, &["queue", "show", q]));
    assert!(show.contains("items:   3 (0 claimed)"), "{show}");

    fails(
        zooid(&c, &["queue", "put", q, "toolong", "--max-item-bytes", "3"]),
        10,
        "over its limit of 3",
    );
    fails(
        zooid(&c, &["queue", "put", q, "x", "--max-items", "3"]),
        9,
        "is full",
    );
    fails(
        zooid("mem:", &["queue", "show", q]),
        2,
        "queues need ZooKeeper",
    );

    // a completes; "fail" exits 1, is released and, being the oldest, is claimed again.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let script = format!(
        "read line; echo \"$ZOOID_QUEUE_ITEM $line\" >> {}; [ \"$line\" != fail ]",
        out.display()
    );
    ok(zooid(
        &c,
        &["queue", "work", q, "--max", "3", "--", "sh", "-c", &script],
    ));
    let seen = std::fs::read_to_string(&out).unwrap();
    let data: Vec<&str> = seen.lines().map(|l| l.split(' ').nth(1).unwrap()).collect();
    assert_eq!(data, ["a", "fail", "fail"], "{seen}");
    let show = ok(zooid(&c, &["queue", "show", q]));
    assert!(show.contains("items:   2 (0 claimed)"), "{show}");
    assert!(show.contains(" 4 bytes  unclaimed"), "{show}");
}

/// SIGTERM during a command: within the grace period the command finishes and its item is
/// completed; past it the command is killed and the item released. Either way the worker exits
/// 0, and `show` lists who holds an item meanwhile.
#[test]
fn sigterm_finishes_or_releases_the_current_item() {
    let zk = ZkServer::start();
    let c = zk.connect_string();
    let q = "/cli/term";
    let dir = tempfile::tempdir().unwrap();
    for (item, sleep, grace, completed) in [("quick", "1", "20", true), ("slow", "60", "1", false)]
    {
        ok(zooid(&c, &["queue", "put", q, item]));
        let started = dir.path().join(format!("{item}.started"));
        let script = format!(
            "cat > /dev/null; touch {}; sleep {sleep}",
            started.display()
        );
        let worker = Command::new(env!("CARGO_BIN_EXE_zooid"))
            .args([
                "--connect",
                &c,
                "queue",
                "work",
                q,
                "--grace",
                grace,
                "--identity",
                "cli-worker",
            ])
            .args(["--", "sh", "-c", &script])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        assert!(support::wait_until(Duration::from_secs(20), || started.exists()));
        let show = ok(zooid(&c, &["queue", "show", q]));
        assert!(show.contains("claimed by cli-worker"), "{show}");
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(worker.id() as i32, libc::SIGTERM) };
        let out = worker.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let show = ok(zooid(&c, &["queue", "show", q]));
        if completed {
            assert!(stderr.contains("completed"), "{stderr}");
            assert!(show.contains("items:   0"), "{show}");
        } else {
            assert!(stderr.contains("grace period over"), "{stderr}");
            assert!(show.contains("items:   1 (0 claimed)"), "{show}");
        }
    }
}

/// Workers are started before producers (issue 20, finding 9): `queue work` on a queue that
/// does not exist yet waits for it instead of failing, and processes the first item put.
#[test]
fn a_worker_started_before_the_first_put_waits_for_the_queue() {
    let zk = ZkServer::start();
    let c = zk.connect_string();
    let q = "/cli/later";
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let script = format!("read line; echo \"$line\" >> {}", out.display());
    let mut worker = Command::new(env!("CARGO_BIN_EXE_zooid"))
        .args(["--connect", &c, "queue", "work", q, "--max", "1"])
        .args(["--", "sh", "-c", &script])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The worker is up and has looked for the queue before anything is put.
    std::thread::sleep(Duration::from_secs(2));
    if let Some(status) = worker.try_wait().unwrap() {
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut worker.stderr.take().unwrap(), &mut stderr).unwrap();
        panic!("the worker exited before the first put ({status}): {stderr}");
    }
    ok(zooid(&c, &["queue", "put", q, "first"]));
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = worker.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the worker never processed the item"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "worker: {status}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "first\n");
    let show = ok(zooid(&c, &["queue", "show", q]));
    assert!(show.contains("items:   0 (0 claimed)"), "{show}");
}

/// Three workers started before any put, 30 items: every item processed exactly once (one start
/// and one end in the commands' log, none started twice: the overlap checker), the queue empty
/// afterwards, and every worker stops on SIGTERM with exit 0.
#[test]
fn concurrent_workers_started_first_process_every_item_once() {
    let zk = ZkServer::start();
    let c = zk.connect_string();
    let q = "/cli/many";
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let script = format!(
        "read line; echo \"start $line $ZOOID_QUEUE_ITEM\" >> {0}; sleep 0.05; echo \"end $line $ZOOID_QUEUE_ITEM\" >> {0}",
        log.display()
    );
    let mut workers: Vec<_> = (0..3)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_zooid"))
                .args(["--connect", &c, "queue", "work", q, "--identity"])
                .arg(format!("w{i}"))
                .args(["--", "sh", "-c", &script])
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    for w in workers.iter_mut() {
        assert!(
            w.try_wait().unwrap().is_none(),
            "a worker exited before the first put"
        );
    }
    const ITEMS: usize = 30;
    for i in 0..ITEMS {
        ok(zooid(&c, &["queue", "put", q, &format!("item-{i:02}")]));
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let lines = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let ends = text.lines().filter(|l| l.starts_with("end ")).count();
        if ends >= ITEMS {
            break text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "only {ends} of {ITEMS} items processed"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    for w in workers.iter_mut() {
        // SAFETY: kill(2) on a child we spawned and have not reaped.
        unsafe {
            libc::kill(w.id() as i32, libc::SIGTERM);
        }
    }
    for mut w in workers {
        assert!(
            w.wait().unwrap().success(),
            "a worker failed to stop cleanly"
        );
    }
    // The overlap checker: per item, one start then one end, never a second start.
    let mut open = std::collections::HashSet::new();
    let mut done = std::collections::HashSet::new();
    let mut violations = Vec::new();
    for line in lines.lines() {
        let mut parts = line.split(' ');
        let (kind, data) = (parts.next().unwrap(), parts.next().unwrap().to_string());
        match kind {
            "start" if done.contains(&data) => {
                violations.push(format!("{data} started after its end"))
            }
            "start" if !open.insert(data.clone()) => {
                violations.push(format!("{data} started twice at once"))
            }
            "end" => {
                open.remove(&data);
                if !done.insert(data.clone()) {
                    violations.push(format!("{data} completed twice"));
                }
            }
            _ => {}
        }
    }
    assert_eq!(violations, Vec::<String>::new());
    assert_eq!(done.len(), ITEMS, "{lines}");
    let show = ok(zooid(&c, &["queue", "show", q]));
    assert!(show.contains("items:   0 (0 claimed)"), "{show}");
}

/// A worker out of touch with ZooKeeper stops its command before the servers could expire its
/// session and hand the item to another worker: `queue work` watches its claim while the
/// command runs. The server is paused (SIGSTOP) under a running command that ignores SIGTERM;
/// the command must be gone within the session timeout of the pause.
#[test]
fn a_worker_out_of_touch_stops_its_command_within_the_session_timeout() {
    out_of_touch("/cli/out-of-touch", false);
}

/// The same for a worker told to stop (SIGTERM) before it lost touch: while it lets its command
/// finish (a grace period of 30 s, longer than the session), it still watches its claim. It
/// did not, and the command ran the whole grace period.
#[test]
fn a_stopping_worker_out_of_touch_stops_its_command_within_the_session_timeout() {
    out_of_touch("/cli/out-of-touch-stopping", true);
}

/// A worker runs a command that ignores SIGTERM on an item of `q`; `stopping`: the worker is
/// told to stop first; then the server is paused for 9 s (session timeout 4 s).
fn out_of_touch(q: &str, stopping: bool) {
    let zk = ZkServer::start();
    let c = zk.connect_string();
    let dir = tempfile::tempdir().unwrap();
    ok(zooid(&c, &["queue", "put", q, "long"]));
    let (started, beats) = (dir.path().join("started"), dir.path().join("beats"));
    // The command runs in a process group of its own, led by this shell: its pid names it.
    let script = format!(
        "cat > /dev/null; trap '' TERM; echo $$ > {}; while true; do date +%s.%N >> {}; sleep 0.05; done",
        started.display(),
        beats.display()
    );
    let mut worker = Command::new(env!("CARGO_BIN_EXE_zooid"))
        .args(["--connect", &c, "--session-timeout-ms", "4000"])
        .args(["queue", "work", q, "--grace", "30", "--identity", "cli-out"])
        .args(["--", "sh", "-c", &script])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(support::wait_until(Duration::from_secs(20), || {
        std::fs::read_to_string(&started).is_ok_and(|s| s.ends_with('\n'))
    }));
    std::thread::sleep(Duration::from_millis(300));
    if stopping {
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(worker.id() as i32, libc::SIGTERM) };
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            matches!(worker.try_wait(), Ok(None)),
            "guard: the stopping worker waits for its command"
        );
    }
    let paused_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    zk.pause();
    assert!(!zk.is_serving(), "guard: the server is paused");
    std::thread::sleep(Duration::from_secs(9));
    zk.resume();
    let last_beat: f64 = std::fs::read_to_string(&beats)
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .fold(0.0, f64::max);
    // The command's group, whatever the worker did (a command left running keeps the
    // worker's stderr open), then the worker.
    if let Ok(pid) = std::fs::read_to_string(&started)
        .unwrap()
        .trim()
        .parse::<i32>()
    {
        // SAFETY: kill(2) on the process group of the command this test started.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(worker.id() as i32, libc::SIGTERM) };
    let stopped = support::wait_until(Duration::from_secs(20), || {
        matches!(worker.try_wait(), Ok(Some(_)))
    });
    if !stopped {
        let _ = worker.kill();
    }
    let out = worker.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ran = last_beat - paused_at;
    eprintln!("the command ran {ran:.2} s after the server was paused\n{stderr}");
    assert!(
        ran < 4.5,
        "the command ran {ran:.2} s after the server was paused (session timeout 4 s): a \
         worker out of touch kept its command running past the point where the item could be \
         handed to another worker"
    );
}

/// Review (queue recipe, 2026-11-30): a worker SIGKILLed (or OOM-killed) while its command ran
/// left the command running in its own process group; once the worker's session expired,
/// another worker claimed the same item and ran a second command on it while the first still
/// ran. The command now dies with its worker (`PR_SET_PDEATHSIG`, as `zooid elect` does). On the
/// code before: `the command outlived its SIGKILLed worker`.
#[test]
fn a_worker_killed_takes_its_command_with_it() {
    let zk = ZkServer::start();
    let c = zk.connect_string();
    let q = "/cli/killed";
    let dir = tempfile::tempdir().unwrap();
    ok(zooid(&c, &["queue", "put", q, "item"]));
    let pid_file = dir.path().join("command.pid");
    // `exec`: the pid written is the command's own, which then sleeps.
    let script = format!("echo $$ > {}; exec sleep 60", pid_file.display());
    let mut worker = Command::new(env!("CARGO_BIN_EXE_zooid"))
        .args(["--connect", &c, "queue", "work", q, "--identity", "doomed"])
        .args(["--", "sh", "-c", &script])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let read_pid = || {
        std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
    };
    assert!(
        support::wait_until(Duration::from_secs(20), || read_pid().is_some()),
        "guard: the command started"
    );
    let command = read_pid().unwrap();
    let alive = |pid: i32| {
        // A process reparented and not reaped yet is a zombie: dead.
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| stat.rsplit(')').next().map(|rest| rest.trim().to_string()))
            .is_some_and(|rest| !rest.starts_with('Z') && !rest.starts_with('X'))
    };
    assert!(alive(command), "guard: the command runs");
    worker.kill().unwrap();
    worker.wait().unwrap();
    let died = support::wait_until(Duration::from_secs(5), || !alive(command));
    if !died {
        // SAFETY: kill(2) on a process this test started (through the worker).
        unsafe { libc::kill(command, libc::SIGKILL) };
    }
    assert!(died, "the command outlived its SIGKILLed worker");
}
