//! `zooid counter init|next|get`, end to end on a real ZooKeeper server.

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

fn fails(out: &Output, code: i32, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    assert!(out.stdout.is_empty(), "nothing on stdout on failure");
}

#[test]
fn counter_commands() {
    support::init_tracing();
    let zk = ZkServer::start();
    let connect = zk.connect_string();
    let c = "/cli/counter/agents";
    assert!(stdout(&zooid(&connect, &["counter", "init", c])).contains("at 0"));
    assert_eq!(stdout(&zooid(&connect, &["counter", "next", c])), "1:1\n");
    assert_eq!(
        stdout(&zooid(&connect, &["counter", "next", c, "5"])),
        "2:6\n"
    );
    assert_eq!(
        stdout(&zooid(&connect, &["counter", "next", c, "10", "--hex"])),
        "7:10\n"
    );
    assert_eq!(stdout(&zooid(&connect, &["counter", "get", c])), "16\n");
    assert_eq!(
        stdout(&zooid(&connect, &["counter", "get", c, "--hex"])),
        "10\n"
    );

    let neg = "/cli/counter/neg";
    stdout(&zooid(&connect, &["counter", "init", neg, "--value", "-5"]));
    assert_eq!(
        stdout(&zooid(&connect, &["counter", "next", neg, "2"])),
        "-4:-3\n"
    );
    assert_eq!(
        stdout(&zooid(&connect, &["counter", "get", neg, "--hex"])),
        "fffffffffffffffd\n"
    );

    // The node is the seed's 8-byte big-endian long.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let data = rt.block_on(async {
        let client = zookeeper_client::Client::connect(&connect).await.unwrap();
        let options = zookeeper_client::CreateMode::Persistent
            .with_acls(zookeeper_client::Acls::anyone_all());
        client
            .create("/cli/counter/text", b"hello", &options)
            .await
            .unwrap();
        client.get_data(c).await.unwrap().0
    });
    assert_eq!(data, 16_i64.to_be_bytes());

    fails(
        &zooid(&connect, &["counter", "init", c]),
        5,
        "already exists",
    );
    fails(
        &zooid(&connect, &["counter", "next", c, "0"]),
        2,
        "at least one",
    );
    fails(
        &zooid(&connect, &["counter", "next", "/cli/nope"]),
        4,
        "does not exist",
    );
    fails(
        &zooid(&connect, &["counter", "get", "/cli/counter/text"]),
        6,
        "8-byte",
    );
    fails(
        &zooid(&connect, &["counter", "next", "relative"]),
        2,
        "absolute",
    );
    fails(&zooid("mem:", &["counter", "next", c]), 2, "embedded store");
    assert_eq!(stdout(&zooid(&connect, &["counter", "get", c])), "16\n");
}
