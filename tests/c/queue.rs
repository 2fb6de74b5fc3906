//! The work queue's C binding, from C (`tests/c/queue.c`): linked to the shared and the static
//! library against a real ZooKeeper, and once under valgrind; and a claim lost with its session
//! (`tests/c/queue_lost.c`), through the fault proxy.

use zooid_test_support as support;
use zooid_test_support::c as harness;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::{compile, run, run_ok, Link};
use support::{FaultProxy, ZkServer};

/// Compiles `tests/c/queue.c` as `name` (one name per test: the tests run in parallel).
fn queue_program(name: &str, link: Link) -> std::path::PathBuf {
    compile(name, &["tests/c/queue.c"], link, &["-pthread"])
}

/// Every C queue call and error against one ZooKeeper, each link kind in its own subtree; the
/// C program checks what it is handed (order, release, complete, timeouts, statuses), and the
/// server is checked afterwards for what it must hold: no item left behind.
#[test]
fn queue_from_c_against_zookeeper() {
    support::init_tracing();
    let zk = ZkServer::start();
    let connect = zk.connect_string();
    for link in Link::BOTH {
        let prefix = format!("/c-queue/{}", link.name());
        let out = run_ok(Command::new(queue_program("queue", link)).args([&connect, &prefix]));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("queue OK"), "{stdout}");
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = zookeeper_client::Client::connect(&connect).await.unwrap();
        for link in Link::BOTH {
            let base = format!("/c-queue/{}/queue/jobs", link.name());
            let items = client
                .list_children(&format!("{base}/items"))
                .await
                .unwrap();
            assert_eq!(items, Vec::<String>::new(), "every item was completed");
            let locks = client
                .list_children(&format!("{base}/locks"))
                .await
                .unwrap();
            assert_eq!(locks, Vec::<String>::new(), "no lock left behind");
            let early = client
                .list_children(&format!("/c-queue/{}/queue/missing/items", link.name()))
                .await
                .unwrap();
            assert_eq!(
                early,
                Vec::<String>::new(),
                "the consumer started before the first put completed it"
            );
        }
    });
}

/// `queue.c` under valgrind (shared library): no invalid access, no uninitialised read, no leak.
/// valgrind must be installed in CI (`CI` set); elsewhere the test says it skipped.
#[test]
fn queue_from_c_under_valgrind() {
    if !harness::valgrind_available() {
        return;
    }
    support::init_tracing();
    let zk = ZkServer::start();
    let started = Instant::now();
    let out = run(Command::new("valgrind")
        .args([
            "--leak-check=full",
            "--errors-for-leak-kinds=definite,possible",
            "--error-exitcode=99",
            "--track-origins=yes",
        ])
        .args(["valgrind.supp", "valgrind-zookeeper.supp"].map(|file| {
            format!(
                "--suppressions={}",
                harness::repo().join("tests/c").join(file).display()
            )
        }))
        .arg(queue_program("queue-valgrind", Link::Shared))
        .args([&zk.connect_string(), "/c-queue/valgrind"]));
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "queue under valgrind: {}\n{report}",
        out.status
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("queue OK"));
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
    eprintln!("queue.c under valgrind took {:?}", started.elapsed());
}

/// Reads one line of the child's stdout, which must start with `prefix`; returns the rest.
fn expect_line(stdout: &mut impl BufRead, prefix: &str) -> String {
    let mut line = String::new();
    stdout
        .read_line(&mut line)
        .expect("read queue_lost's stdout");
    assert!(
        line.starts_with(prefix),
        "queue_lost: expected {prefix:?}, got {line:?}"
    );
    line[prefix.len()..].trim().to_string()
}

/// A C consumer cut off from ZooKeeper (the proxy holds every byte) past its 1.5 s session
/// timeout: its claim is reported lost, the item goes to another consumer, and the C consumer's
/// complete fails with ZOOID_STATUS_SESSION_LOST.
#[test]
fn a_claim_lost_with_its_session_from_c() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let path = "/c-queue/lost/jobs";
    let exe = compile("queue_lost", &["tests/c/queue_lost.c"], Link::Static, &[]);
    let mut child = Command::new(&exe)
        .args([&proxy.connect_string(), path])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start queue_lost");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let item = expect_line(&mut stdout, "CLAIMED ");

    proxy.blackhole();
    stdin.write_all(b"go\n").expect("write to queue_lost");
    let lost_after: u64 = expect_line(&mut stdout, "LOST ")
        .parse()
        .expect("milliseconds");
    assert_eq!(proxy.stats().blackholes, 1, "the fault happened");
    proxy.heal();

    // Another consumer, on its own session straight to the server, gets the item.
    let session =
        zooid::blocking::open_session(&zk.connect_string(), &zooid::ConnectOptions::default())
            .expect("a session");
    let queue = zooid::blocking::WorkQueue::open(
        session.clone().into_zk(),
        path,
        zooid::QueueOptions::default(),
    )
    .expect("open the queue");
    let started = Instant::now();
    let claim = queue
        .claim(Some(Duration::from_secs(30)))
        .expect("claim")
        .expect("the lost claim's item is handed out again");
    let redelivered_after = started.elapsed();
    assert_eq!(claim.item(), item);
    assert_eq!(claim.data(), b"job");

    stdin.write_all(b"go\n").expect("write to queue_lost");
    drop(stdin);
    expect_line(&mut stdout, "lost OK");
    let status = child.wait().expect("wait for queue_lost");
    assert!(status.success(), "queue_lost: {status}");
    claim.complete().expect("the redelivered claim completes");
    assert!(queue.claim(Some(Duration::ZERO)).expect("claim").is_none());
    eprintln!(
        "C claim reported lost {lost_after} ms after the cut (session timeout 1500 ms); \
         redelivered {redelivered_after:?} after the heal"
    );
}
