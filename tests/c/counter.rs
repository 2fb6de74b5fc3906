//! The CAS counter from C (tests/c/counter.c), linked to the shared and the static library,
//! against a real ZooKeeper server: the calls and their error statuses, the skipped values of a
//! lost reply through the last-error ranges, and a valgrind run.

use zooid_test_support as support;
use zooid_test_support::c as harness;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

use harness::{compile, run, run_ok, Link};
use support::{op, FaultProxy, ZkServer};

/// Compiles tests/c/counter.c once per link kind, shared by the tests of this binary (which
/// run in parallel: compiling twice would replace an executable while it runs).
fn program(link: Link) -> std::path::PathBuf {
    static BUILT: OnceLock<Mutex<Vec<(Link, PathBuf)>>> = OnceLock::new();
    let mut built = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some((_, path)) = built.iter().find(|(l, _)| *l == link) {
        return path.clone();
    }
    let exe = compile("counter", &["tests/c/counter.c"], link, &["-pthread"]);
    built.push((link, exe.clone()));
    exe
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Creates `path` holding `data` with the plain ZooKeeper client.
fn create_raw(connect: &str, path: &str, data: &[u8]) {
    runtime().block_on(async {
        let client = zookeeper_client::Client::connect(connect).await.unwrap();
        let options = zookeeper_client::CreateMode::Persistent
            .with_acls(zookeeper_client::Acls::anyone_all());
        let parent = &path[..path.rfind('/').unwrap()];
        client.mkdir(parent, &options).await.unwrap();
        client.create(path, data, &options).await.unwrap();
    });
}

fn read_raw(connect: &str, path: &str) -> (Vec<u8>, i32) {
    runtime().block_on(async {
        let client = zookeeper_client::Client::connect(connect).await.unwrap();
        let (data, stat) = client.get_data(path).await.unwrap();
        (data, stat.version)
    })
}

#[test]
fn counter_from_c() {
    support::init_tracing();
    let zk = ZkServer::start();
    let connect = zk.connect_string();
    for link in Link::BOTH {
        let prefix = format!("/c-counter/{}", link.name());
        let text = format!("{prefix}/text");
        create_raw(&connect, &text, b"not a long");
        let out = run_ok(Command::new(program(link)).args(["basic", &connect, &prefix]));
        assert!(String::from_utf8_lossy(&out.stdout).contains("counter basic OK"));
        assert_eq!(read_raw(&connect, &text), (b"not a long".to_vec(), 0));
        let (data, _) = read_raw(&connect, &format!("{prefix}/c"));
        assert_eq!(data, 111_i64.to_be_bytes());
    }
}

/// The reply to the counter's write is lost and every reconnect leads nowhere: C gets
/// ZOOID_STATUS_OUTCOME_UNKNOWN and the skipped values, which the server did consume.
#[test]
fn lost_reply_names_the_skipped_values_in_c() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let nowhere = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap();
    let path = "/c-counter/lost/c";
    let mut child = Command::new(program(Link::Static))
        .args(["lost", &proxy.connect_string(), path])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    if line != "READY\n" {
        let _ = child.kill();
        let _ = child.wait();
        panic!("counter lost did not get ready: {line:?}");
    }
    proxy.set_upstream(nowhere);
    proxy.drop_reply_to(op::MULTI, path);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"go\n").unwrap();
    drop(stdin);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    eprintln!("{rest}");
    assert!(status.success(), "counter lost failed: {status}\n{rest}");
    assert!(rest.contains("counter lost OK"), "{rest}");
    assert_eq!(proxy.dropped_replies(), 1, "the fault must have happened");
    let (data, _) = read_raw(&zk.connect_string(), path);
    assert_eq!(
        data,
        6_i64.to_be_bytes(),
        "the skipped values were consumed"
    );
}

/// tests/c/counter.c under valgrind: no invalid access, no uninitialised read, nothing
/// definitely or indirectly lost. Unlike tests/c_abi.rs's runs on the embedded stores, this one
/// talks to ZooKeeper, whose client leaves process-lifetime state behind at exit (its session
/// task winding down on zooid's runtime, the `async-io` driver thread): valgrind calls those
/// blocks "possibly lost", so they are reported but not counted as errors here.
#[test]
fn counter_from_c_under_valgrind() {
    if !harness::valgrind_available() {
        return;
    }
    let zk = ZkServer::start();
    let connect = zk.connect_string();
    let prefix = "/c-counter/valgrind";
    create_raw(&connect, &format!("{prefix}/text"), b"xyz");
    let out = run(Command::new("valgrind")
        .args([
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
            "--error-exitcode=99",
            "--track-origins=yes",
        ])
        .arg(format!(
            "--suppressions={}",
            harness::repo().join("tests/c/valgrind.supp").display()
        ))
        .arg(program(Link::Shared))
        .args(["basic", &connect, prefix]));
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "valgrind: {}\n{report}", out.status);
    for clean in [
        "definitely lost: 0 bytes",
        "indirectly lost: 0 bytes",
        "ERROR SUMMARY: 0 errors",
    ] {
        let leak_line = clean.contains("lost");
        assert!(
            report.contains(clean) || (leak_line && report.contains("All heap blocks were freed")),
            "valgrind did not report \"{clean}\"\n{report}"
        );
    }
}
