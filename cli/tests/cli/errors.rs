//! Every failure a new operator meets, tried against a real ZooKeeper: each prints ONE line on
//! stderr naming what was wrong and what to do, and exits with its documented code
//! (README, docs/OPERATIONS.md).

use zooid_test_support as support;

use std::process::{Command, Output};

use support::ZkServer;
use zookeeper_client::{Acls, Client, CreateMode};

/// The documented exit code of "not authorized".
const NOT_AUTHORIZED: i32 = 14;

fn zooid(connect: &str, args: &[&str]) -> Output {
    zooid_as(connect, None, args)
}

/// Runs zooid with digest credentials `auth` (user:password) in ZOOID_AUTH, as a user should
/// pass them (`--auth` would show the password in the process list).
fn zooid_as(connect: &str, auth: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zooid"));
    cmd.env_remove("ZOOID_AUTH").env_remove("ZOOID_CONNECT");
    if let Some(auth) = auth {
        cmd.env("ZOOID_AUTH", auth);
    }
    cmd.args(["--connect", connect, "--session-timeout-ms", "2000"])
        .args(args)
        .output()
        .expect("run zooid")
}

/// A loopback port nothing listens on.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A pool node's content for IDs `1..=last`, as zooid writes it.
fn pool_bytes(last: i64) -> Vec<u8> {
    zooid::format::Pool::new(zooid::IdRange::new(1, last).unwrap())
        .render()
        .into_bytes()
}

/// Runs one case: exit code, one stderr line, and every expected fragment in it.
fn check(name: &str, out: &Output, code: i32, fragments: &[&str]) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!(
        "{name}: exit {:?}: {}",
        out.status.code(),
        stderr.trim_end()
    );
    assert_eq!(out.status.code(), Some(code), "{name}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{name}: one line: {stderr:?}");
    for fragment in fragments {
        assert!(
            stderr.contains(fragment),
            "{name}: {fragment:?} in {stderr:?}"
        );
    }
    stderr
}

#[test]
fn each_failure_is_one_clear_line_with_its_exit_code() {
    let zk = ZkServer::start();
    let connect = zk.connect_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // A category only alice may touch (zooid creates it with creator-only ACLs under --auth),
    // and one the world may read but not write, made with the raw client.
    let out = zooid_as(
        &connect,
        Some("alice:right"),
        &["init", "/secure/did", "--last", "1000"],
    );
    assert!(out.status.success(), "{out:?}");
    rt.block_on(async {
        let client = Client::connect(&connect).await.unwrap();
        client
            .mkdir(
                "/readonly",
                &CreateMode::Persistent.with_acls(Acls::anyone_all()),
            )
            .await
            .unwrap();
        client
            .create(
                "/readonly/did",
                &pool_bytes(1000),
                &CreateMode::Persistent.with_acls(Acls::anyone_read()),
            )
            .await
            .unwrap();
    });
    let cat = "/plain/did";
    assert!(zooid(&connect, &["init", cat, "--last", "1000"])
        .status
        .success());

    let wrong_port = format!("127.0.0.1:{}", free_port());
    check(
        "wrong port",
        &zooid(&wrong_port, &["take", cat, "1"]),
        8,
        &["store unreachable", "is ZooKeeper running", &wrong_port],
    );
    check(
        "bad password",
        &zooid_as(&connect, Some("alice:wrong"), &["take", "/secure/did", "1"]),
        NOT_AUTHORIZED,
        &["/secure/did", "not authorized", "ZOOID_AUTH=user:password"],
    );
    check(
        "no credentials",
        &zooid(&connect, &["show", "/secure/did"]),
        NOT_AUTHORIZED,
        &["not authorized", "ACL"],
    );
    check(
        "no write permission",
        &zooid(&connect, &["take", "/readonly/did", "10"]),
        NOT_AUTHORIZED,
        &["/readonly/did", "not authorized"],
    );
    // Nothing changed: the world can still read the whole pool.
    let show = zooid(&connect, &["show", "/readonly/did", "--json"]);
    let info: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(info["free_ids"], 1000, "{info}");
    check(
        "missing auth separator",
        &zooid(&connect, &["--auth", "alice", "take", cat, "1"]),
        2,
        &["--auth needs user:password"],
    );
    check(
        "missing category",
        &zooid(&connect, &["take", "/plain/nope", "1"]),
        4,
        &["/plain/nope", "does not exist", "zooid init"],
    );
    check(
        "missing category (stats)",
        &zooid(&connect, &["stats", "/plain/nope"]),
        4,
        &["does not exist"],
    );
    check(
        "missing root (ls)",
        &zooid(&connect, &["ls", "/nowhere"]),
        4,
        &["no node /nowhere", "zooid ls /"],
    );
    check(
        "malformed range",
        &zooid(&connect, &["push", cat, "5-7"]),
        2,
        &["\"5-7\" is not START:END", "e.g. 9001:10000"],
    );
    check(
        "reversed range",
        &zooid(&connect, &["push", cat, "7:5"]),
        2,
        &["START <= END"],
    );
    check(
        "over-large take",
        &zooid(&connect, &["take", cat, "99999999999"]),
        2,
        &["ask for 1..=2147483647"],
    );
    check(
        "zero take",
        &zooid(&connect, &["take", cat, "0"]),
        2,
        &["ask for 1..="],
    );
    check(
        "category without a leading slash",
        &zooid(&connect, &["take", "plain/did", "1"]),
        2,
        &["must start with '/'"],
    );
    let small = "/plain/small";
    assert!(
        zooid(&connect, &["init", small, "--first", "1", "--last", "2"])
            .status
            .success()
    );
    assert!(zooid(&connect, &["take", small, "2"]).status.success());
    check(
        "exhausted",
        &zooid(&connect, &["take", small, "1"]),
        3,
        &["exhausted", "zooid push"],
    );
    check(
        "existing category",
        &zooid(&connect, &["init", cat]),
        5,
        &["already exists"],
    );
    check(
        "metrics address in use",
        &zooid(
            &connect,
            &[
                "elect",
                "/g",
                "--metrics-addr",
                &zk.addr().to_string(),
                "--",
                "true",
            ],
        ),
        2,
        &["--metrics-addr", "pick a free HOST:PORT"],
    );
    // The nodes the failures touched are as they were.
    let plain = zooid(&connect, &["show", cat, "--json"]);
    let info: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
    assert_eq!(info["free_ids"], 1000, "{info}");
}

/// A take whose IDs cannot be written to stdout (the reader closed the pipe) names them as
/// leaked and exits with a documented code; it panicked (exit 101) and said nothing of them.
#[test]
fn a_take_whose_output_cannot_be_written_names_its_ids_leaked() {
    let zk = ZkServer::start();
    let connect = zk.connect_string();
    assert!(zooid(&connect, &["init", "/closed-pipe"]).status.success());
    let (read, write) = std::io::pipe().unwrap();
    drop(read);
    let out = Command::new(env!("CARGO_BIN_EXE_zooid"))
        .env_remove("ZOOID_AUTH")
        .args(["--connect", &connect, "take", "/closed-pipe", "10"])
        .stdout(write)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("run zooid");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(101), "a panic: {err}");
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("leaked") && err.contains("1:10"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
}
