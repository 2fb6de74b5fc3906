//! The prefetching ID source from C (tests/c/prefetch.c): threads sharing a source get unique
//! IDs, close pushes back everything unused, the error paths give their statuses; against a real
//! ZooKeeper with both link kinds, and once under valgrind.

use zooid_test_support as support;
use zooid_test_support::c as harness;

use std::process::Command;

use harness::{compile, run, run_ok, Link};
use support::ZkServer;

fn program(link: Link) -> std::path::PathBuf {
    compile("prefetch", &["tests/c/prefetch.c"], link, &["-pthread"])
}

#[test]
fn c_prefetch_against_zookeeper() {
    support::init_tracing();
    let zk = ZkServer::start();
    for link in Link::BOTH {
        let prefix = format!("/c-prefetch/{}", link.name());
        let out =
            run_ok(Command::new(program(link)).args([&zk.connect_string(), &prefix, "4", "20000"]));
        let stdout = String::from_utf8_lossy(&out.stdout);
        eprint!("{stdout}");
        assert!(stdout.contains("prefetch OK"), "{stdout}");
    }
}

/// No invalid access, no leak (tests/c/valgrind.supp covers the runtime's process-lifetime
/// threads), on the embedded memory store so that valgrind's slowness meets no timeouts.
#[test]
fn c_prefetch_under_valgrind() {
    if !harness::valgrind_available() {
        return;
    }
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
        .arg(program(Link::Shared))
        .args(["mem:", "", "3", "3000"]));
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "under valgrind: {}\n{report}",
        out.status
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("prefetch OK"),
        "{report}"
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
}
