//! `zooid migrate`: a single-node category moved to hole nodes (pool format 4) in place from
//! the CLI, then used; a second run changes nothing; no way back; the embedded store refuses; a
//! pool in the retired format 3 is refused by every command and left as it is.

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
    // The pushed range first (a hole node since the move), then a fresh block.
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
    let retired = zooid(c, &["migrate", "/cli/mig", "--layout", "blocks"]);
    assert_eq!(
        retired.status.code(),
        Some(2),
        "format 3 is no layout any more"
    );
    let retired = zooid(c, &["init", "/cli/mig-b", "--layout", "blocks"]);
    assert_eq!(
        retired.status.code(),
        Some(2),
        "format 3 is no layout any more"
    );

    // Hole nodes with their own block size, the free ranges below the top as holes.
    ok(
        c,
        &["init", "/cli/mig4", "--last", "1000", "--layout", "single"],
    );
    assert_eq!(ok(c, &["take", "/cli/mig4", "100"]).trim(), "1:100");
    ok(c, &["push", "/cli/mig4", "11:20"]);
    assert_eq!(
        ok(c, &["migrate", "/cli/mig4", "--block-size", "250"]).trim(),
        "migrated /cli/mig4 from pool format 1 to 4: fresh IDs in blocks of 250 from 101"
    );
    assert_eq!(ok(c, &["take", "/cli/mig4", "10"]).trim(), "11:20");
    assert_eq!(ok(c, &["take", "/cli/mig4", "300"]).trim(), "101:400");

    // The embedded store has no block layouts.
    let dir = tempfile::tempdir().unwrap();
    let file = format!("file:{}", dir.path().display());
    ok(&file, &["init", "/cli/local", "--last", "100"]);
    assert_eq!(
        zooid(&file, &["migrate", "/cli/local"]).status.code(),
        Some(2)
    );
}

/// A pool node in the retired format 3 (golden bytes, written raw) is refused by `take`,
/// `push`, `show`, `stats` and `migrate` with exit code 6 (corrupt pool) and a message naming the
/// format, and left byte for byte as it was.
#[test]
fn cli_refuses_a_format_3_pool_and_leaves_it_as_it_is() {
    support::init_tracing();
    let zk = ZkServer::start();
    let connect = zk.connect_string();
    let c = connect.as_str();
    let path = "/cli/retired";
    let node: &[u8] = b"#zooid 3\n#bounds 1:4611686018427387903\n#blocks 1000 2 20001\n#ceiling 60000\n#op 9 push 127c51b24da4fc9c 250\n#op 10 blocks 3f0e9a1c77d2b460 10011000\n#chunk 4001 3 1280\n2751:3000\n";
    let rt = support::runtime();
    let read = || {
        rt.block_on(async {
            let client = zookeeper_client::Client::connect(c).await.unwrap();
            let (data, stat) = client.get_data(path).await.unwrap();
            let children = client.list_children(path).await.unwrap();
            (data, stat.version, stat.mzxid, children)
        })
    };
    rt.block_on(async {
        let client = zookeeper_client::Client::connect(c).await.unwrap();
        let options = zookeeper_client::CreateMode::Persistent
            .with_acls(zookeeper_client::Acls::anyone_all());
        client.mkdir("/cli", &options).await.unwrap();
        client.create(path, node, &options).await.unwrap();
        for child in ["zooid-blocks-2", "zooid-free-4001", "zooid-returned"] {
            client
                .create(&format!("{path}/{child}"), b"", &options)
                .await
                .unwrap();
        }
    });
    let before = read();
    for args in [
        vec!["take", path, "10"],
        vec!["push", path, "2201:2300"],
        vec!["show", path],
        vec!["stats", path],
        vec!["migrate", path],
    ] {
        let out = zooid(c, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(6), "{args:?}: {stderr}");
        assert!(
            stderr.contains(
                "pool node /cli/retired is in format 3, which this release no longer reads"
            ),
            "{args:?}: {stderr}"
        );
    }
    assert_eq!(read(), before, "the format-3 pool was changed");
}
