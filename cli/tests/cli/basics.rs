//! The `zooid` operator CLI, end to end, on the embedded file store and on ZooKeeper.

use zooid_test_support as support;

use std::process::{Command, Output};

use support::ZkServer;

fn zooid(connect: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zooid"))
        .arg("--connect")
        .arg(connect)
        .args(args)
        .output()
        .expect("run zooid")
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "zooid failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The seed's worked example through the CLI, then every error exit.
fn worked_example_and_errors(connect: &str) {
    let cat = "/com/demdex/eventpublish/idgen/did";
    stdout(&zooid(connect, &["init", cat, "--last", "123456789"]));
    let takes: Vec<String> = (0..3)
        .map(|_| stdout(&zooid(connect, &["take", cat, "10000"])))
        .collect();
    assert_eq!(takes, ["1:10000\n", "10001:20000\n", "20001:30000\n"]);
    stdout(&zooid(connect, &["push", cat, "9001:10000"]));
    stdout(&zooid(
        connect,
        &["push", cat, "19001:20000", "29001:30000"],
    ));
    assert_eq!(
        stdout(&zooid(connect, &["take", cat, "10000"])),
        "9001:10000\n19001:20000\n29001:37000\n"
    );
    let show = stdout(&zooid(connect, &["show", cat]));
    assert!(show.contains("free IDs:   123419789"), "{show}");
    assert!(show.contains("\n  37001:123456789\n"), "{show}");

    let cases: &[(&[&str], i32, &str)] = &[
        (&["take", "/missing", "5"], 4, "does not exist"),
        (&["take", cat, "0"], 2, "invalid argument"),
        (&["take", "no-slash", "5"], 2, "must start with '/'"),
        (&["push", cat, "50000:50010"], 1, "already free"),
        (&["push", cat, "5:1"], 2, "not START:END"),
        (&["push", cat, "1:5", "3:8"], 2, "overlap"),
        (
            &["push", cat, "123456780:123456800"],
            1,
            "outside the category's bounds",
        ),
        (&["init", cat], 5, "already exists"),
        (
            &["init", "/bad-bounds", "--first", "10", "--last", "5"],
            2,
            "need 1 <= first <= last",
        ),
    ];
    for (args, code, message) in cases {
        let out = zooid(connect, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(*code), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    stdout(&zooid(
        connect,
        &["init", "/small", "--first", "5", "--last", "6"],
    ));
    assert_eq!(stdout(&zooid(connect, &["take", "/small", "10"])), "5:6\n");
    assert_eq!(
        zooid(connect, &["take", "/small", "1"]).status.code(),
        Some(3),
        "exhausted"
    );
}

#[test]
fn cli_on_the_file_store() {
    let dir = tempfile::tempdir().unwrap();
    let connect = format!("file:{}", dir.path().display());
    worked_example_and_errors(&connect);
    // Garbage in a pool node: reported with its line, exit 6, and left as it was.
    let node = dir.path().join("broken/.node");
    std::fs::create_dir_all(node.parent().unwrap()).unwrap();
    std::fs::write(&node, "zooid-node 0\n1:10\nnot a range\n").unwrap();
    let out = zooid(&connect, &["take", "/broken", "1"]);
    assert_eq!(out.status.code(), Some(6));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 2"));
    assert_eq!(
        std::fs::read_to_string(&node).unwrap(),
        "zooid-node 0\n1:10\nnot a range\n"
    );
}

#[test]
fn cli_on_zookeeper_with_legacy_counter_migration() {
    let zk = ZkServer::start();
    worked_example_and_errors(&zk.connect_string());
    // An older deployment's counter: an 8-byte big-endian long holding the last ID handed out.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = zookeeper_client::Client::connect(&zk.connect_string())
            .await
            .unwrap();
        let options = zookeeper_client::CreateMode::Persistent
            .with_acls(zookeeper_client::Acls::anyone_all());
        client
            .create("/legacy-counter", &41_999i64.to_be_bytes(), &options)
            .await
            .unwrap();
    });
    let connect = zk.connect_string();
    stdout(&zooid(
        &connect,
        &[
            "init",
            "/migrated",
            "--after-counter",
            "/legacy-counter",
            "--last",
            "100000",
        ],
    ));
    assert_eq!(
        stdout(&zooid(&connect, &["take", "/migrated", "2"])),
        "42000:42001\n"
    );
    let out = zooid(&connect, &["take", "/legacy-counter", "1"]);
    assert_eq!(out.status.code(), Some(6), "a counter node is not a pool");
    assert!(String::from_utf8_lossy(&out.stderr).contains("legacy big-endian counter"));
    let down = zooid(
        "127.0.0.1:1",
        &["--session-timeout-ms", "1000", "show", "/x"],
    );
    assert_eq!(
        down.status.code(),
        Some(8),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
}
