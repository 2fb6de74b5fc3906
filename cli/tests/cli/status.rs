//! `zooid status`: the session's requested and negotiated timeouts, as the servers clamp them.

use zooid_test_support as support;

use std::process::Command;

use serde_json::Value;
use support::ZkServer;

/// Runs `zooid --session-timeout-ms MS status ARGS...`; returns its stdout.
fn status(connect: &str, requested_ms: u64, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_zooid"))
        .env_remove("ZOOID_AUTH")
        .args(["--connect", connect])
        .args(["--session-timeout-ms", &requested_ms.to_string(), "status"])
        .args(args)
        .output()
        .expect("run zooid");
    assert!(
        out.status.success(),
        "status: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// A server whose minimum session timeout is 4 s: a 1 s request is negotiated up to 4 s, and
/// `zooid status` shows both (JSON and text); an 8 s request is negotiated as asked.
#[test]
fn status_shows_the_requested_and_the_negotiated_session_timeout() {
    let zk = ZkServer::start_with(&[("minSessionTimeout", "4000")]);
    let connect = zk.connect_string();

    let json: Value = serde_json::from_str(&status(&connect, 1000, &["--json"])).expect("JSON");
    eprintln!("status --json: {json}");
    assert_eq!(json["timeout_ms"]["requested"], 1000);
    assert_eq!(json["timeout_ms"]["negotiated"], 4000);
    assert_eq!(json["stop_acting_after_ms"], 2000);
    assert_eq!(json["state"], "connected");
    assert_eq!(json["generation"], 1);
    assert!(
        json["session_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("0x") && id != "0x0"),
        "{json}"
    );

    let text = status(&connect, 8000, &[]);
    eprintln!("status:\n{text}");
    assert!(text.contains("timeout requested  8000 ms"), "{text}");
    assert!(text.contains("timeout negotiated 8000 ms"), "{text}");
    assert!(text.contains("stop acting after  4000 ms"), "{text}");
}
