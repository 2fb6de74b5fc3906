//! A write whose outcome cannot be told surfaces in C as `ZOOID_STATUS_OUTCOME_UNKNOWN`, the one
//! in-doubt status (docs/DESIGN.md, "When a write's fate is decided"): a queue put whose
//! reply is lost while the session cannot reach any server (`tests/c/queue_in_doubt.c`).

use zooid_test_support as support;
use zooid_test_support::c as harness;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

use harness::{compile, Link};
use support::{op, FaultProxy, ZkServer};

/// The reply to a C put is lost and every reconnect leads nowhere: the put fails with
/// ZOOID_STATUS_OUTCOME_UNKNOWN (before issue 18: ZOOID_STATUS_TIMEOUT), and the item it may
/// have added is indeed in the queue (the proxy swallowed the reply, the server applied it).
#[test]
fn a_put_in_doubt_is_outcome_unknown_in_c() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let nowhere = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let path = "/c-in-doubt/q";
    let exe = compile(
        "queue_in_doubt",
        &["tests/c/queue_in_doubt.c"],
        Link::Static,
        &[],
    );
    let mut child = Command::new(&exe)
        .args([&proxy.connect_string(), path])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start queue_in_doubt");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("read READY");
    if line != "READY\n" {
        let _ = child.kill();
        let _ = child.wait();
        panic!("queue_in_doubt did not get ready: {line:?}");
    }
    proxy.set_upstream(nowhere);
    proxy.drop_reply_to(op::MULTI, &format!("{path}/items/i-"));
    let mut stdin = child.stdin.take().expect("piped stdin");
    stdin.write_all(b"go\n").expect("write to queue_in_doubt");
    drop(stdin);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).expect("read the rest");
    let status = child.wait().expect("wait for queue_in_doubt");
    eprintln!("{rest}");
    // Guard: the fault happened.
    assert_eq!(proxy.dropped_replies(), 1, "the put's reply was swallowed");
    assert!(status.success(), "queue_in_doubt failed: {status}\n{rest}");
    assert!(rest.contains("put in doubt OK"), "{rest}");
    let items = support::runtime().block_on(async {
        let client = zookeeper_client::Client::connect(&zk.connect_string())
            .await
            .expect("connect");
        client
            .list_children(&format!("{path}/items"))
            .await
            .expect("list")
    });
    assert_eq!(items.len(), 2, "the put in doubt did apply: {items:?}");
}
