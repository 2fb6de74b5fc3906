//! `zooid_service_stats` from C (tests/c/stats.c) against a real ZooKeeper, with a reply lost
//! through the fault proxy and a version conflict from a second service; linked to the shared
//! and the static library.

#[path = "c/harness.rs"]
mod harness;
mod support;

use std::process::Command;

use harness::{compile, run_ok, Link};
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
