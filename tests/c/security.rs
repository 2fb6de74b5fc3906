//! A secured ensemble from C (tests/c/security.c), linked to the shared and the static library:
//! mutual TLS, SASL DIGEST-MD5 and an ACL that makes another user's take fail with
//! `ZOOID_STATUS_NOT_AUTHORIZED` while nothing changes.

use zooid_test_support as support;
use zooid_test_support::c as harness;
use zooid_test_support::security::servers;

use std::process::Command;

use harness::{compile, run_ok, Link};
use servers::TlsServer;

#[test]
fn secured_ensemble_from_c() {
    support::init_tracing();
    let server =
        TlsServer::start_with_sasl("need", &[("alice", "alice-pw-1"), ("bob", "bob-pw-2")]);
    let client = server.ca.issue("c-client");
    let connect = server.secure_connect_string();
    for link in Link::BOTH {
        let exe = compile("security", &["tests/c/security.c"], link, &[]);
        let category = format!("/c-abi/secure/{}", link.name());
        let out = run_ok(
            Command::new(&exe)
                .arg(&connect)
                .arg(&server.ca.cert)
                .arg(&client.cert)
                .arg(&client.key)
                .arg(&category),
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("security OK"), "{stdout}");
        assert!(
            stdout.contains(&format!("not authorized on {category} as sasl:bob")),
            "{stdout}"
        );
    }
}
