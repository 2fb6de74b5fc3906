//! Running on a secured ensemble: TLS (server-authenticated and mutual) to a real ZooKeeper's
//! `secureClientPort`, SASL DIGEST-MD5 against a JAAS-configured server, and ACLs on the pool
//! node with the typed `NotAuthorized` error. Certificates are made by the test (openssl CLI).

use zooid::CategorySpec;
use zooid_test_support as support;
use zooid_test_support::security::pki;
use zooid_test_support::security::servers;

use std::time::{Duration, Instant};

use servers::{SaslServer, TlsServer};
use support::ZkServer;
use zooid::{
    Acl, ConnectOptions, IdCategory, IdGeneratorService, IdRange, Perms, Sasl, ServiceOptions,
    TlsFiles, ZooidError,
};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn r(start: i64, end: i64) -> IdRange {
    IdRange::new(start, end).unwrap()
}

fn options() -> ConnectOptions {
    ConnectOptions {
        session_timeout: Duration::from_secs(3),
        ..ConnectOptions::default()
    }
}

async fn open(connect: &str, options: &ConnectOptions) -> zooid::Result<IdGeneratorService> {
    IdGeneratorService::connect(connect, options, ServiceOptions::default()).await
}

/// Opens a service that must fail, and returns the error and how long the refusal took.
async fn refused(connect: &str, options: &ConnectOptions) -> (ZooidError, Duration) {
    let started = Instant::now();
    match open(connect, options).await {
        Ok(_) => panic!("{connect} with {options:?}: connected, expected a refusal"),
        Err(err) => (err, started.elapsed()),
    }
}

/// Mutual TLS: a client with the CA and a certificate it signed is served on the secure port;
/// without a client certificate, with another CA, or in plain text it is refused, with an
/// error that says TLS and names the CA file.
#[test]
fn mutual_tls_works_and_wrong_or_missing_credentials_are_refused() {
    support::init_tracing();
    let server = TlsServer::start("need");
    let client = server.ca.issue("zooid-client");
    let secure = server.secure_connect_string();
    let rt = runtime();
    rt.block_on(async {
        let tls = ConnectOptions {
            tls: Some(TlsFiles::ca(&server.ca.cert).with_identity(&client.cert, &client.key)),
            ..options()
        };
        let svc = open(&secure, &tls).await.expect("mutual TLS session");
        let cat = IdCategory::new("/tls/orders").unwrap();
        svc.create_category(&cat, &CategorySpec::new(1, 1000).single_node())
            .await
            .unwrap();
        assert_eq!(svc.take_ids(&cat, 5).await.unwrap().ranges(), vec![r(1, 5)]);
        // Guard: the plain port reaches the same data, so the secure port is the same server.
        let plain = open(&server.zk.connect_string(), &options()).await.unwrap();
        assert_eq!(plain.pool_info(&cat).await.unwrap().free_count, 995);

        // No client certificate: the server (ssl.clientAuth=need) refuses the handshake.
        let no_cert = ConnectOptions {
            tls: Some(TlsFiles::ca(&server.ca.cert)),
            ..options()
        };
        let (err, took) = refused(&secure, &no_cert).await;
        eprintln!("mutual TLS without a client certificate: refused in {took:?}: {err}");
        assert!(matches!(err, ZooidError::ConnectionLost { .. }), "{err:?}");
        assert!(
            err.to_string().contains("requires a client certificate"),
            "{err}"
        );

        // A CA that did not sign the server's certificate: the client refuses the server.
        let other = pki::Ca::new("other");
        let wrong_ca = ConnectOptions {
            tls: Some(TlsFiles::ca(&other.cert).with_identity(&client.cert, &client.key)),
            ..options()
        };
        let (err, took) = refused(&secure, &wrong_ca).await;
        eprintln!("TLS with the wrong CA: refused in {took:?}: {err}");
        assert!(matches!(err, ZooidError::ConnectionLost { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains("not signed by the CA in")
                && text.contains(&other.cert.display().to_string()),
            "{text}"
        );

        // Plain text to the secure port, and TLS to the plain port: refused too.
        let (err, took) = refused(&secure, &options()).await;
        eprintln!("plain text to the secure port: refused in {took:?}: {err}");
        let (err, took) = refused(&server.zk.connect_string(), &tls).await;
        eprintln!("TLS to the plain port: refused in {took:?}: {err}");
        assert!(err.to_string().contains("secureClientPort"), "{err}");

        // Nothing was taken by the refused clients.
        assert_eq!(plain.pool_info(&cat).await.unwrap().free_count, 995);
        // A missing CA file is an invalid argument naming the file, before any connection.
        let missing = ConnectOptions {
            tls: Some(TlsFiles::ca("/nonexistent/ca.pem")),
            ..options()
        };
        let (err, _) = refused(&secure, &missing).await;
        assert!(matches!(err, ZooidError::InvalidArgument(_)), "{err:?}");
        assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
    });
}

/// Server-authenticated TLS (no client certificate), as most ensembles run it.
#[test]
fn tls_with_only_the_ca_works_when_the_server_does_not_ask_for_a_client_certificate() {
    support::init_tracing();
    let server = TlsServer::start("none");
    let rt = runtime();
    rt.block_on(async {
        let tls = ConnectOptions {
            tls: Some(TlsFiles::ca(&server.ca.cert)),
            ..options()
        };
        let svc = open(&server.secure_connect_string(), &tls)
            .await
            .expect("server-authenticated TLS session");
        let cat = IdCategory::new("/tls/one-way").unwrap();
        svc.create_category(&cat, &CategorySpec::new(1, 100).single_node())
            .await
            .unwrap();
        assert_eq!(svc.take_ids(&cat, 3).await.unwrap().ranges(), vec![r(1, 3)]);
    });
}

/// SASL DIGEST-MD5 against users of the server's JAAS file, and an ACL that lets one SASL user
/// write while everyone reads: the others get `NotAuthorized` naming the node and their
/// identity, and the pool does not change. A wrong password is refused without showing it.
#[test]
fn sasl_digest_and_an_acl_that_only_its_user_may_write() {
    support::init_tracing();
    let server = SaslServer::start(&[("alice", "alice-secret-1"), ("bob", "bob-secret-2")]);
    let connect = server.zk.connect_string();
    let rt = runtime();
    rt.block_on(async {
        let as_user = |user: &str, password: &str| ConnectOptions {
            sasl: Some(Sasl::digest(user, password)),
            ..options()
        };
        let alice = open(&connect, &as_user("alice", "alice-secret-1"))
            .await
            .expect("alice's SASL session");
        let cat = IdCategory::new("/sasl/invoices").unwrap();
        let acl = [Acl::sasl("alice", Perms::ALL), Acl::world_read()];
        alice
            .create_category(&cat, &CategorySpec::new(1, 1000).acl(acl.clone()))
            .await
            .unwrap();
        assert_eq!(
            alice.take_ids(&cat, 10).await.unwrap().ranges(),
            vec![r(1, 10)]
        );

        let bob = open(&connect, &as_user("bob", "bob-secret-2"))
            .await
            .unwrap();
        let anonymous = open(&connect, &options()).await.unwrap();
        for (who, svc, identity) in [
            ("bob", &bob, "sasl:bob (DIGEST-MD5)"),
            ("anonymous", &anonymous, "anonymous (world:anyone)"),
        ] {
            // Reading is granted to the world.
            assert_eq!(svc.pool_info(&cat).await.unwrap().free_count, 990, "{who}");
            let err = svc.take_ids(&cat, 5).await.unwrap_err();
            eprintln!("{who} taking: {err}");
            assert_eq!(
                err,
                ZooidError::NotAuthorized {
                    path: "/sasl/invoices".into(),
                    identity: identity.into()
                }
            );
        }
        // Nothing changed: alice's next take continues right after her first.
        assert_eq!(
            alice.take_ids(&cat, 5).await.unwrap().ranges(),
            vec![r(11, 15)]
        );

        let (err, took) = refused(&connect, &as_user("alice", "wrong-password-xyz")).await;
        eprintln!("SASL with a wrong password: refused in {took:?}: {err}");
        let text = format!("{err} {err:?}");
        assert!(
            text.contains("authentication failed") && text.contains("alice"),
            "{text}"
        );
        assert!(!text.contains("wrong-password-xyz"), "{text}");
    });
}

/// An ACL of ZooKeeper's `digest` scheme on a plain server: the digest user writes, a
/// read-only world reads, and an ACL naming no admin is still accepted.
#[test]
fn digest_acl_lets_its_user_write_and_others_only_read() {
    support::init_tracing();
    let zk = ZkServer::start();
    let rt = runtime();
    rt.block_on(async {
        let app = ConnectOptions {
            digest_auth: Some(("app".into(), "app-pw-7".into())),
            ..options()
        };
        let admin = open(&zk.connect_string(), &app).await.unwrap();
        let cat = IdCategory::new("/digest/users").unwrap();
        let acl = [
            Acl::digest("app", "app-pw-7", Perms::ALL),
            Acl::world_read(),
        ];
        admin
            .create_category(&cat, &CategorySpec::new(1, 50).acl(acl.clone()))
            .await
            .unwrap();
        let other = ConnectOptions {
            digest_auth: Some(("intruder".into(), "x".into())),
            ..options()
        };
        let intruder = open(&zk.connect_string(), &other).await.unwrap();
        let err = intruder.take_ids(&cat, 1).await.unwrap_err();
        assert_eq!(
            err,
            ZooidError::NotAuthorized {
                path: "/digest/users".into(),
                identity: "digest:intruder".into()
            }
        );
        assert_eq!(intruder.pool_info(&cat).await.unwrap().free_count, 50);
        assert_eq!(
            admin.take_ids(&cat, 2).await.unwrap().ranges(),
            vec![r(1, 2)]
        );
        // An empty ACL is refused before anything is written.
        let empty = admin
            .create_category(
                &IdCategory::new("/digest/none").unwrap(),
                &CategorySpec::new(1, 5).acl(Vec::new()),
            )
            .await
            .unwrap_err();
        assert!(matches!(empty, ZooidError::InvalidArgument(_)), "{empty:?}");
    });
}

/// The counter recipe takes the same ACL type: a counter only `app` may advance, which everyone
/// may read; another identity's `next` is `NotAuthorized` and the value does not move.
#[test]
fn a_counter_with_an_acl_refuses_other_identities() {
    support::init_tracing();
    let zk = ZkServer::start();
    let rt = runtime();
    rt.block_on(async {
        let as_user = |user: &str, password: &str| ConnectOptions {
            digest_auth: Some((user.into(), password.into())),
            ..options()
        };
        let app = zooid::Session::connect(&zk.connect_string(), &as_user("app", "app-pw-8"))
            .await
            .unwrap();
        let counter =
            zooid::Counter::new(app.clone().into_zk(), "/recipes/secure/counter").unwrap();
        let acl = [
            Acl::digest("app", "app-pw-8", Perms::ALL),
            Acl::world_read(),
        ];
        counter.init_with_acl(100, Some(&acl)).await.unwrap();
        assert_eq!(counter.next(5).await.unwrap(), r(101, 105));

        let other = zooid::Session::connect(&zk.connect_string(), &as_user("eve", "eve-pw-9"))
            .await
            .unwrap();
        let theirs = zooid::Counter::new(other.into_zk(), "/recipes/secure/counter").unwrap();
        let err = theirs.next(5).await.unwrap_err();
        eprintln!("eve's next: {err}");
        assert_eq!(
            err,
            ZooidError::NotAuthorized {
                path: "/recipes/secure/counter".into(),
                identity: "digest:eve".into()
            }
        );
        assert_eq!(theirs.get().await.unwrap(), 105, "nothing moved");
        assert_eq!(counter.next(1).await.unwrap(), r(106, 106));
    });
}
