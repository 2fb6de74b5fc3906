//! `zooid migrate`: a single-node category moved to hole nodes (pool format 4) in place from
//! the CLI, then used; a second run changes nothing; no way back; the embedded store refuses.

use support::ZkServer;
use zooid_test_support as support;

use std::process::{Command, Output};

fn zooid(connect: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zooid"))
        .env_remove("ZOOID_AUTH")
        .args(["--connect", connect])
        .args(args)
        .output()
        .expect("run zooid")
}

fn ok(connect: &str, args: &[&str]) -> String {
    let out = zooid(connect, args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn cli_migrates_a_single_node_category_to_hole_nodes() {
    support::init_tracing();
    let zk = ZkServer::start();
    let connect = zk.connect_string();
    let c = connect.as_str();
    ok(
        c,
        &["init", "/cli/mig", "--last", "100000", "--layout", "single"],
    );
    assert_eq!(ok(c, &["take", "/cli/mig", "10000"]).trim(), "1:10000");
    ok(c, &["push", "/cli/mig", "5001:6000"]);

    let moved = ok(c, &["migrate", "/cli/mig"]);
    assert_eq!(
        moved.trim(),
        "migrated /cli/mig from pool format 1 to 4: fresh IDs in blocks of 1000 from 10001"
    );
    let shown = ok(c, &["show", "/cli/mig", "--json"]);
    assert!(
        shown.contains("\"blocks\":{\"base\":10001,\"generation\":0,\"unit\":1000}"),
        "{shown}"
    );
    assert!(shown.contains("\"free_ids\":91000"), "{shown}");
    // The pushed range first (from the pool node), then a fresh block.
    assert_eq!(
        ok(c, &["take", "/cli/mig", "2000"]).trim(),
        "5001:6000\n10001:11000"
    );
    // A push now becomes a hole node, handed out to a take it covers.
    ok(c, &["push", "/cli/mig", "10501:11000"]);
    let shown = ok(c, &["show", "/cli/mig", "--json"]);
    assert!(shown.contains("\"free_ids\":89500"), "{shown}");
    assert_eq!(ok(c, &["take", "/cli/mig", "500"]).trim(), "10501:11000");

    assert_eq!(
        ok(c, &["migrate", "/cli/mig"]).trim(),
        "/cli/mig is in pool format 4 already; nothing changed"
    );
    let back = zooid(c, &["migrate", "/cli/mig", "--layout", "blocks"]);
    assert_eq!(back.status.code(), Some(2), "no way back to format 3");

    // Block allocation (format 3) with its own block size.
    ok(
        c,
        &["init", "/cli/mig3", "--last", "1000", "--layout", "single"],
    );
    assert_eq!(
        ok(
            c,
            &[
                "migrate",
                "/cli/mig3",
                "--layout",
                "blocks",
                "--block-size",
                "250"
            ]
        )
        .trim(),
        "migrated /cli/mig3 from pool format 1 to 3: fresh IDs in blocks of 250 from 1"
    );
    assert_eq!(ok(c, &["take", "/cli/mig3", "300"]).trim(), "1:300");

    // The embedded store has no block layouts.
    let dir = tempfile::tempdir().unwrap();
    let file = format!("file:{}", dir.path().display());
    ok(&file, &["init", "/cli/local", "--last", "100"]);
    assert_eq!(
        zooid(&file, &["migrate", "/cli/local"]).status.code(),
        Some(2)
    );
}
