//! Kerberos (GSSAPI) SASL against a real KDC started on loopback, as Hadoop clusters use it:
//! the ZooKeeper server logs in from its keytab (`zookeeper/localhost`), the zooid CLI from the
//! client's keytab, and an ACL `sasl:app` lets only that principal write.
//!
//! Needs zooid's `kerberos` feature and Debian's krb5-kdc, krb5-admin-server and libkrb5-dev:
//! `cargo test --features kerberos --test kerberos` (scripts/test-all.sh runs it).
#![cfg(feature = "kerberos")]

use zooid_test_support as support;
use zooid_test_support::security::kdc;

use std::process::{Command, Output};

use kdc::{Kdc, REALM};
use support::ZkServer;

fn zooid(kdc: &Kdc, connect: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zooid"))
        .env("KRB5_CONFIG", &kdc.krb5_conf)
        .env_remove("KRB5CCNAME")
        .env_remove("KRB5_CLIENT_KTNAME")
        .args(["--connect", connect, "--session-timeout-ms", "4000"])
        .args(args)
        .output()
        .expect("run zooid")
}

fn show(out: &Output) -> String {
    format!(
        "exit {:?}\n{}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn kerberos_principal_with_a_keytab_and_a_sasl_acl() {
    support::init_tracing();
    let kdc = Kdc::start();
    let server_keytab = kdc.keytab("zookeeper/localhost");
    let app_keytab = kdc.keytab("app");
    let intruder_keytab = kdc.keytab("intruder");
    let jaas = kdc.dir().join("jaas.conf");
    std::fs::write(
        &jaas,
        format!(
            "Server {{\n  com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=true\n  \
             keyTab=\"{}\"\n  storeKey=true\n  useTicketCache=false\n  \
             principal=\"zookeeper/localhost@{REALM}\";\n}};\n",
            server_keytab.display()
        ),
    )
    .unwrap();
    let zk = ZkServer::start_with_jvm_args(
        &[
            (
                "authProvider.1",
                "org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
            ),
            ("kerberos.removeHostFromPrincipal", "true"),
            ("kerberos.removeRealmFromPrincipal", "true"),
        ],
        &[
            format!("-Djava.security.krb5.conf={}", kdc.krb5_conf.display()),
            format!("-Djava.security.auth.login.config={}", jaas.display()),
        ],
    );
    // GSSAPI names the server zookeeper/<host of the connect string>: use "localhost".
    let connect = format!("localhost:{}", zk.port());
    let app_principal = format!("app@{REALM}");
    let app_keytab = app_keytab.display().to_string();
    let app = [
        "--sasl",
        "kerberos",
        "--principal",
        &app_principal,
        "--keytab",
        &app_keytab,
    ];

    let out = zooid(
        &kdc,
        &connect,
        &[
            &app[..],
            &[
                "init",
                "/krb/ids",
                "--last",
                "1000",
                "--acl",
                "sasl:app:cdrwa,world:anyone:r",
            ],
        ]
        .concat(),
    );
    assert!(out.status.success(), "{}", show(&out));
    let out = zooid(
        &kdc,
        &connect,
        &[&app[..], &["take", "/krb/ids", "5"]].concat(),
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "1:5\n",
        "{}",
        show(&out)
    );

    // Another principal of the realm, and an anonymous client: exit 14, nothing taken.
    let intruder_principal = format!("intruder@{REALM}");
    let intruder_keytab = intruder_keytab.display().to_string();
    let out = zooid(
        &kdc,
        &connect,
        &[
            "--sasl",
            "kerberos",
            "--principal",
            &intruder_principal,
            "--keytab",
            &intruder_keytab,
            "take",
            "/krb/ids",
            "5",
        ],
    );
    eprintln!("intruder: {}", show(&out));
    assert_eq!(out.status.code(), Some(14), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("sasl:intruder@ZOOID.TEST (Kerberos)"));
    let out = zooid(&kdc, &connect, &["take", "/krb/ids", "5"]);
    assert_eq!(out.status.code(), Some(14), "{}", show(&out));

    let out = zooid(
        &kdc,
        &connect,
        &[&app[..], &["take", "/krb/ids", "1"]].concat(),
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "6:6\n",
        "{}",
        show(&out)
    );
    // Guard: the server really authenticated the principal through Kerberos.
    let log = std::fs::read_to_string(zk.log_path()).unwrap();
    assert!(
        log.contains(&format!(
            "Successfully authenticated client: authenticationID=app@{REALM}"
        )),
        "{}",
        zk.log_tail(40)
    );
}
