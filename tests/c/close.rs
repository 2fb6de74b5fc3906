//! `zooid_service_free` closes the ZooKeeper session on the server before it returns
//! (tests/c/close.c): the program exits right after the free, and the server's session count is
//! back where it was (the session timeout is 20 s, so expiry cannot pass for a close).

use zooid_test_support as support;
use zooid_test_support::c as harness;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::{compile, Link};
use support::ZkServer;

#[test]
fn freeing_a_service_closes_its_session_from_c() {
    let zk = ZkServer::start();
    let exe = compile("close", &["tests/c/close.c"], Link::Shared, &[]);
    for mode in ["default", "blocks"] {
        let before = zk.global_sessions();
        let category = format!("/c-close/{mode}");
        let mut child = Command::new(&exe)
            .args([&zk.connect_string(), &category, mode])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn tests/c/close.c");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("read");
        assert_eq!(line, "ready\n", "{mode}: the program failed before freeing");
        // Guard: the program's session is open on the server.
        assert_eq!(
            zk.global_sessions(),
            before + 1,
            "{mode}: session not counted"
        );
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(b"free\n")
            .expect("write");
        let status = child.wait().expect("wait");
        let exited = Instant::now();
        line.clear();
        stdout.read_line(&mut line).expect("read");
        assert!(
            status.success() && line == "freed\n",
            "{mode}: {status} {line:?}"
        );
        let after = zk.wait_global_sessions(before, Duration::from_millis(500));
        assert_eq!(
            after,
            before,
            "{mode}: {} session(s) still open on the server {:?} after the program freed its \
             service and exited",
            after - before,
            exited.elapsed()
        );
    }
}
