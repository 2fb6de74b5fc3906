//! `zooid_service_stats` from C (tests/c/stats.c) against a real ZooKeeper, with a reply lost
//! through the fault proxy and a version conflict from a second service; linked to the shared
//! and the static library, and once under valgrind.

use zooid_test_support as support;
use zooid_test_support::c as harness;

use std::process::Command;

use std::process::Stdio;

use harness::{compile, run, run_ok, Link};
use support::{op, FaultProxy, ZkServer};

#[test]
fn service_stats_from_c() {
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    for (i, link) in [Link::Shared, Link::Static].into_iter().enumerate() {
        let exe = compile(
            &format!("stats-{}", link.name()),
            &["tests/c/stats.c"],
            link,
            &["-pthread"],
        );
        let category = format!("/c-stats/{i}");
        let before = proxy.dropped_replies();
        proxy.drop_reply_to(op::SET_DATA, &category);
        let out = run_ok(Command::new(&exe).args([
            &proxy.connect_string(),
            &category,
            &zk.connect_string(),
        ]));
        let stdout = String::from_utf8_lossy(&out.stdout);
        eprintln!("{}: {stdout}", link.name());
        assert!(stdout.ends_with("OK\n"), "{stdout}");
        assert_eq!(
            proxy.dropped_replies(),
            before + 1,
            "the fault must have happened"
        );
    }
}

/// tests/c/stats.c under valgrind, with its lost reply: no invalid access, no uninitialised
/// read (the size-prefixed partial copy included), nothing definitely or indirectly lost. As in
/// tests/counter_c.rs, the ZooKeeper client's process-lifetime blocks are "possibly lost" and
/// not counted.
#[test]
fn service_stats_from_c_under_valgrind() {
    let have_valgrind = Command::new("valgrind")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !have_valgrind {
        assert!(
            std::env::var_os("CI").is_none(),
            "valgrind is required in CI (apt-get install valgrind)"
        );
        eprintln!("SKIPPED: valgrind is not installed");
        return;
    }
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let exe = compile(
        "stats-valgrind",
        &["tests/c/stats.c"],
        Link::Shared,
        &["-pthread"],
    );
    let category = "/c-stats/valgrind";
    proxy.drop_reply_to(op::SET_DATA, category);
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
        .arg(&exe)
        .args([&proxy.connect_string(), category, &zk.connect_string()]));
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "valgrind: {}\n{report}", out.status);
    assert_eq!(proxy.dropped_replies(), 1, "the fault must have happened");
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
