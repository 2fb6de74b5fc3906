//! The operator's commands on success: `ls`, `stats`, `--json` of `take` / `show`, shell
//! completions and man pages, on ZooKeeper and on the embedded file store.

use zooid_test_support as support;

use std::process::{Command, Output};

use serde_json::{json, Value};
use support::ZkServer;

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

fn json_of(connect: &str, args: &[&str]) -> Value {
    serde_json::from_str(&ok(connect, args)).expect("JSON output")
}

fn operator_commands(connect: &str) {
    ok(connect, &["init", "/ops/ids/a", "--last", "1000"]);
    ok(
        connect,
        &["init", "/ops/ids/b", "--first", "5", "--last", "9"],
    );
    // Not pools: a parent with a child, and a node holding something else.
    ok(connect, &["init", "/ops/ids/sub/c", "--last", "10"]);
    ok(connect, &["counter", "init", "/ops/ids/counter"]);

    let taken = json_of(connect, &["take", "/ops/ids/a", "10", "--json"]);
    assert_eq!(
        taken,
        json!({"category": "/ops/ids/a", "count": 10, "ranges": [{"start": 1, "end": 10}]})
    );
    ok(connect, &["push", "/ops/ids/a", "3:4"]);

    let show = json_of(connect, &["show", "/ops/ids/a", "--json"]);
    assert_eq!(show["free_ids"], 992);
    assert_eq!(show["ranges"], 2);
    assert_eq!(
        show["free"],
        json!([{"start": 3, "end": 4}, {"start": 11, "end": 1000}])
    );
    assert_eq!(show["bounds"], json!({"start": 1, "end": 1000}));

    let stats = json_of(connect, &["stats", "/ops/ids/a", "/ops/ids/b", "--json"]);
    assert_eq!(stats[0]["category"], "/ops/ids/a");
    assert_eq!(stats[0]["free_ids"], 992);
    assert_eq!(stats[0]["ranges"], 2);
    assert_eq!(stats[0]["node_bytes"], show["node_bytes"]);
    assert_eq!(stats[0]["node_bytes_limit"], 512 * 1024);
    assert_eq!(stats[0]["ceiling_headroom"], Value::Null);
    assert_eq!(stats[1]["free_ids"], 5);
    let table = ok(connect, &["stats", "/ops/ids/a"]);
    assert!(table.starts_with("CATEGORY"), "{table}");
    assert!(
        table.contains("/ops/ids/a") && table.contains(" 992 "),
        "{table}"
    );

    let listed = json_of(connect, &["ls", "/ops/ids", "--json"]);
    assert_eq!(
        listed,
        json!({"root": "/ops/ids", "categories": [
            {"category": "/ops/ids/a", "free_ids": 992, "ranges": 2, "bounds": {"start": 1, "end": 1000}},
            {"category": "/ops/ids/b", "free_ids": 5, "ranges": 1, "bounds": {"start": 5, "end": 9}},
        ]}),
        "the counter and the plain parent are not categories"
    );
    assert_eq!(
        ok(connect, &["ls", "/ops/ids/"]),
        "/ops/ids/a\t992 free\t2 ranges\n/ops/ids/b\t5 free\t1 ranges\n"
    );
    let top = json_of(connect, &["ls", "/", "--json"]);
    assert_eq!(top["categories"], json!([]), "/ops is a parent, not a pool");
}

#[test]
fn operator_commands_on_zookeeper() {
    let zk = ZkServer::start();
    operator_commands(&zk.connect_string());
}

/// The file store has no counters: its listing skips plain parents and non-pool nodes the same.
#[test]
fn ls_on_the_file_store() {
    let dir = tempfile::tempdir().unwrap();
    let connect = format!("file:{}", dir.path().display());
    ok(&connect, &["init", "/ops/ids/a", "--last", "1000"]);
    ok(
        &connect,
        &["init", "/ops/ids/b", "--first", "5", "--last", "9"],
    );
    ok(&connect, &["init", "/ops/ids/sub/c", "--last", "10"]);
    // An 8-byte legacy counter, not a pool.
    let node = dir.path().join("ops/ids/counter/.node");
    std::fs::create_dir_all(node.parent().unwrap()).unwrap();
    let mut data = b"zooid-node 0\n".to_vec();
    data.extend_from_slice(&0i64.to_be_bytes());
    std::fs::write(&node, data).unwrap();
    let listed = json_of(&connect, &["ls", "/ops/ids", "--json"]);
    let names: Vec<&str> = listed["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["category"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["/ops/ids/a", "/ops/ids/b"]);
    let top = json_of(&connect, &["ls", "/", "--json"]);
    assert_eq!(
        top["categories"],
        json!([]),
        "the root lists on the file store too"
    );
}

#[test]
fn completions_and_man_pages_come_from_the_cli_definition() {
    let bash = ok("mem:", &["completions", "bash"]);
    assert!(bash.contains("_zooid()"), "{bash}");
    for command in ["take", "stats", "ls", "elect", "completions"] {
        assert!(bash.contains(command), "{command} in the bash completions");
    }
    assert!(ok("mem:", &["completions", "zsh"]).contains("#compdef zooid"));
    let man = ok("mem:", &["man"]);
    assert!(man.contains(".TH zooid 1"), "{man}");
    assert!(
        man.contains("Exit codes"),
        "after_help reaches the man page"
    );
    let dir = tempfile::tempdir().unwrap();
    ok("mem:", &["man", "--dir", dir.path().to_str().unwrap()]);
    let take = std::fs::read_to_string(dir.path().join("zooid-take.1")).unwrap();
    assert!(take.contains("Examples"), "{take}");
    for command in [
        "init", "take", "push", "show", "stats", "ls", "elect", "leader", "counter",
    ] {
        let help = ok("mem:", &[command, "--help"]);
        assert!(
            help.contains("Examples:"),
            "zooid {command} --help has examples"
        );
    }
}
