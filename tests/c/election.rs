//! Leader election from C (tests/c/election.c) against a real ZooKeeper server: two candidates,
//! blocking waits with timeouts, resign hand-over with a higher token, fenced writes, an
//! ex-leader cut off by the fault proxy past its session timeout and refused with
//! `ZOOID_STATUS_NOT_LEADER`; and the basic run once under valgrind.

use zooid_test_support as support;
use zooid_test_support::c as harness;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use harness::{compile, run, run_ok, Link};
use support::{FaultProxy, ZkServer};

fn program(link: Link) -> PathBuf {
    static BUILT: OnceLock<std::sync::Mutex<Vec<(Link, PathBuf)>>> = OnceLock::new();
    let built = BUILT.get_or_init(Default::default);
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, path)) = built.iter().find(|(l, _)| *l == link) {
        return path.clone();
    }
    let exe = compile("election", &["tests/c/election.c"], link, &["-pthread"]);
    built.push((link, exe.clone()));
    exe
}

#[test]
fn two_candidates_hand_over_and_fence_from_c() {
    support::init_tracing();
    let zk = ZkServer::start();
    let connect = zk.connect_string();
    for link in Link::BOTH {
        let group = format!("/c-election/{}/group", link.name());
        let started = Instant::now();
        let out = run_ok(Command::new(program(link)).args(["basic", &connect, &group]));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("basic OK"), "{stdout}");
        eprintln!(
            "FIGURES c-election basic ({}): {:?}",
            link.name(),
            started.elapsed()
        );
    }
}

/// A candidate node written by another client with a NUL byte in its name: the C call says the
/// node is corrupt (naming it), not that the caller's arguments were wrong.
#[test]
fn a_foreign_candidate_with_a_nul_byte_is_a_corrupt_node_from_c() {
    support::init_tracing();
    let zk = ZkServer::start();
    let connect = zk.connect_string();
    let group = "/c-election/foreign/group";
    support::runtime().block_on(async {
        let client = zookeeper_client::Client::connect(&connect).await.unwrap();
        let options = zookeeper_client::CreateMode::Persistent
            .with_acls(zookeeper_client::Acls::anyone_all());
        client.mkdir(group, &options).await.unwrap();
        let node = format!("{group}/_c_{:032x}-n_0000000001", 7);
        client.create(&node, b"a\0b\ndata", &options).await.unwrap();
    });
    let out = run_ok(Command::new(program(Link::Shared)).args(["foreign", &connect, group]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("foreign OK"), "{stdout}");
}

/// A reads ZooKeeper through the proxy; the test blackholes it past A's 2 s session, so A's
/// session expires on the server and A's own timer declares it lost.
#[test]
fn an_expired_ex_leader_is_refused_from_c() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let mut child = Command::new(program(Link::Shared))
        .args([
            "expire",
            &proxy.connect_string(),
            &zk.connect_string(),
            "/c-election/expire/group",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the election program");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut line = String::new();
    let mut expect_line = |prefix: &str, child: &mut std::process::Child| -> String {
        line.clear();
        stdout
            .read_line(&mut line)
            .expect("read the program's stdout");
        if !line.starts_with(prefix) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("expected {prefix:?} from the election program, got {line:?}");
        }
        line.trim().to_string()
    };
    expect_line("READY ", &mut child);
    proxy.blackhole();
    stdin.write_all(b"go\n").expect("write to the program");
    stdin.flush().unwrap();
    let expired = expect_line("EXPIRED", &mut child);
    assert!(
        proxy.is_blackholed(),
        "the partition lasted through the hand-over"
    );
    assert_eq!(proxy.stats().blackholes, 1, "the fault happened");
    proxy.heal();
    stdin.write_all(b"healed\n").expect("write to the program");
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).expect("read the program's stdout");
    let status = child.wait().expect("wait for the program");
    assert!(status.success(), "election expire failed: {status}\n{rest}");
    assert!(rest.contains("expire OK"), "{rest}");
    eprintln!("FIGURES c-election expire: {expired}; {}", rest.trim());
}

/// The basic run under valgrind: no invalid access, no uninitialised read, no leak (definite or
/// possible). Besides tests/c/valgrind.supp (the runtime's threads), tests/c/valgrind-zookeeper.supp
/// covers what a ZooKeeper session leaves at exit: the client's session task closes
/// asynchronously after the last handle is freed, and async-io keeps one thread for the process.
#[test]
fn election_under_valgrind_is_clean() {
    if !harness::valgrind_available() {
        return;
    }
    let zk = ZkServer::start();
    let started = Instant::now();
    let out = run(Command::new("valgrind")
        .args([
            "--leak-check=full",
            "--errors-for-leak-kinds=definite,possible",
            "--error-exitcode=99",
            "--track-origins=yes",
        ])
        .arg(format!(
            "--suppressions={}",
            harness::repo().join("tests/c/valgrind.supp").display()
        ))
        .arg(format!(
            "--suppressions={}",
            harness::repo()
                .join("tests/c/valgrind-zookeeper.supp")
                .display()
        ))
        .arg(program(Link::Shared))
        .args(["basic", &zk.connect_string(), "/c-election/valgrind/group"]));
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "under valgrind: {}\n{report}",
        out.status
    );
    for clean in [
        "definitely lost: 0 bytes",
        "indirectly lost: 0 bytes",
        "possibly lost: 0 bytes",
        "ERROR SUMMARY: 0 errors",
    ] {
        let leak_line = clean.contains("lost");
        assert!(
            report.contains(clean) || (leak_line && report.contains("All heap blocks were freed")),
            "valgrind did not report \"{clean}\"\n{report}"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(240));
    eprintln!("FIGURES c-election valgrind run: {:?}", started.elapsed());
}
