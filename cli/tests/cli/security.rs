//! The CLI on a secured ensemble: mutual TLS from the environment (ZOOID_TLS_*), SASL
//! DIGEST-MD5 with the password from the environment or a file, `zooid init --acl`, and the
//! exit code and message of a client the ACL does not let write.

use zooid_test_support as support;
use zooid_test_support::security::servers;

use std::process::{Command, Output};

use servers::TlsServer;

/// Runs zooid with `args` and `env` (and nothing inherited that could authenticate it).
fn zooid(env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zooid"));
    for var in [
        "ZOOID_AUTH",
        "ZOOID_TLS_CA",
        "ZOOID_TLS_CERT",
        "ZOOID_TLS_KEY",
        "ZOOID_SASL",
        "ZOOID_SASL_USER",
        "ZOOID_SASL_PASSWORD",
        "ZOOID_SASL_PASSWORD_FILE",
    ] {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().copied())
        .args(["--session-timeout-ms", "3000"])
        .args(args)
        .output()
        .expect("run zooid")
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(out: Output) -> String {
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "zooid failed: {stderr}");
    stdout
}

#[test]
fn cli_over_mutual_tls_with_sasl_and_an_acl() {
    support::init_tracing();
    let server =
        TlsServer::start_with_sasl("need", &[("alice", "alice-pw-1"), ("bob", "bob-pw-2")]);
    let client = server.ca.issue("cli-client");
    let secure = server.secure_connect_string();
    let ca = server.ca.cert.display().to_string();
    let cert = client.cert.display().to_string();
    let key = client.key.display().to_string();
    let tls = [
        ("ZOOID_CONNECT", secure.as_str()),
        ("ZOOID_TLS_CA", ca.as_str()),
        ("ZOOID_TLS_CERT", cert.as_str()),
        ("ZOOID_TLS_KEY", key.as_str()),
    ];
    let mut alice = tls.to_vec();
    alice.extend([("ZOOID_SASL_PASSWORD", "alice-pw-1")]);
    let sasl_alice = ["--sasl", "digest", "--sasl-user", "alice"];

    let created = ok(zooid(
        &alice,
        &[
            &sasl_alice[..],
            &[
                "init",
                "/cli/secure",
                "--last",
                "1000",
                "--acl",
                "sasl:alice:cdrwa",
                "--acl",
                "world:anyone:r",
            ],
        ]
        .concat(),
    ));
    assert_eq!(
        created,
        "created /cli/secure with IDs 1:1000, ACL sasl:alice:cdrwa,world:anyone:r\n"
    );
    assert_eq!(
        ok(zooid(
            &alice,
            &[&sasl_alice[..], &["take", "/cli/secure", "5"]].concat()
        )),
        "1:5\n"
    );

    // bob, password from a file, over the same TLS: may read, may not take (exit 14).
    let dir = tempfile::tempdir().unwrap();
    let bob_pw = dir.path().join("bob.pw");
    std::fs::write(&bob_pw, "bob-pw-2\n").unwrap();
    let bob_pw = bob_pw.display().to_string();
    let bob = [
        "--sasl",
        "digest",
        "--sasl-user",
        "bob",
        "--sasl-password-file",
        &bob_pw,
    ];
    let show = ok(zooid(&tls, &[&bob[..], &["show", "/cli/secure"]].concat()));
    assert!(show.contains("free IDs:   995"), "{show}");
    let denied = zooid(&tls, &[&bob[..], &["take", "/cli/secure", "5"]].concat());
    let (_, stderr) = text(&denied);
    eprintln!("bob's take: exit {:?}: {stderr}", denied.status.code());
    assert_eq!(denied.status.code(), Some(14), "{stderr}");
    assert!(
        stderr.contains("/cli/secure") && stderr.contains("sasl:bob"),
        "{stderr}"
    );
    // Nothing changed.
    assert_eq!(
        ok(zooid(
            &alice,
            &[&sasl_alice[..], &["take", "/cli/secure", "1"]].concat()
        )),
        "6:6\n"
    );

    // A wrong password: refused, and the password is never printed.
    let mut wrong = tls.to_vec();
    wrong.push(("ZOOID_SASL_PASSWORD", "not-alices-pw-9"));
    let refused = zooid(
        &wrong,
        &[&sasl_alice[..], &["show", "/cli/secure"]].concat(),
    );
    let (stdout, stderr) = text(&refused);
    eprintln!("wrong password: exit {:?}: {stderr}", refused.status.code());
    assert!(!refused.status.success());
    // Usually the server's refusal ("authentication failed", exit 1); over TLS it sometimes
    // arrives as a closed connection that zookeeper-client retries until the connect times out
    // (exit 8), and the message then says the SASL credentials may have been refused.
    assert!(
        stderr.contains("authentication failed")
            || stderr.contains("SASL credentials of sasl:alice (DIGEST-MD5)"),
        "{stderr}"
    );
    assert!(!format!("{stdout}{stderr}").contains("not-alices-pw-9"));

    // No password anywhere: a usage error that says where the password goes.
    let missing = zooid(&tls, &[&sasl_alice[..], &["show", "/cli/secure"]].concat());
    let (_, stderr) = text(&missing);
    assert_eq!(missing.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("ZOOID_SASL_PASSWORD"), "{stderr}");

    // Without the client certificate the server refuses the TLS handshake (exit 8).
    let no_cert = zooid(
        &[
            ("ZOOID_CONNECT", secure.as_str()),
            ("ZOOID_TLS_CA", ca.as_str()),
        ],
        &["show", "/cli/secure"],
    );
    let (_, stderr) = text(&no_cert);
    eprintln!(
        "no client certificate: exit {:?}: {stderr}",
        no_cert.status.code()
    );
    assert_eq!(no_cert.status.code(), Some(8), "{stderr}");
    assert!(stderr.contains("requires a client certificate"), "{stderr}");
}
