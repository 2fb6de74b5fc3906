//! A C program that forks after zooid started (tests/c/fork.c): the child's calls fail with
//! `ZOOID_STATUS_FORKED` instead of hanging, and the parent's session outlives the child.

use zooid_test_support as support;
use zooid_test_support::c as harness;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::{compile, Link};
use support::ZkServer;

#[test]
fn a_forked_child_is_refused_and_leaves_the_parents_session_alone() {
    let zk = ZkServer::start();
    let exe = compile("fork", &["tests/c/fork.c"], Link::Shared, &[]);
    let mut child = Command::new(&exe)
        .args([&zk.connect_string(), "/c-fork"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tests/c/fork.c");
    // A child that waits for the runtime threads it does not have never exits: give it 60 s.
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("tests/c/fork.c still running after 60 s: a call in the forked child hangs");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout == "ok\n",
        "{}\n--- stdout\n{stdout}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}
