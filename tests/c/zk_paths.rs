//! Paths with characters ZooKeeper refuses are a bad argument from C on every store
//! (tests/c/zk_paths.c): on ZooKeeper they were a store error, or a lost connection for a
//! character above U+FFFF.

use zooid_test_support as support;
use zooid_test_support::c as harness;

use std::process::Command;

use harness::{compile, run_ok, Link};
use support::ZkServer;

#[test]
fn paths_zookeeper_refuses_are_invalid_arguments_from_c() {
    let zk = ZkServer::start();
    let exe = compile("zk_paths", &["tests/c/zk_paths.c"], Link::Shared, &[]);
    for connect in [zk.connect_string(), "mem:".to_string()] {
        let out = run_ok(Command::new(&exe).args([connect.as_str(), "/c-zk-paths"]));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("zk_paths OK"), "{connect}: {stdout}");
    }
}
