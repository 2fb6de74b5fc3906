//! ZooKeeper servers configured for TLS and SASL, on top of `tests/support`.

use std::fs;
use std::path::PathBuf;

use tempfile::TempDir;

use super::pki::Ca;
use crate::{free_loopback_ports, ZkServer};

/// A server with a plain `clientPort` and a TLS `secureClientPort` (Netty), whose certificate
/// is signed by `ca`. `client_auth` is ZooKeeper's `ssl.clientAuth` (`need`, `want`, `none`).
pub struct TlsServer {
    pub zk: ZkServer,
    pub secure_port: u16,
    pub ca: Ca,
    _jaas_dir: Option<TempDir>,
}

impl TlsServer {
    pub fn start(client_auth: &str) -> TlsServer {
        Self::start_with_sasl(client_auth, &[])
    }

    /// Also authenticates SASL DIGEST-MD5 users (see [`SaslServer`]) on both ports.
    pub fn start_with_sasl(client_auth: &str, sasl_users: &[(&str, &str)]) -> TlsServer {
        let ca = Ca::new("zk");
        let server = ca.issue("zk-server");
        let secure_port = free_loopback_ports(1)[0].to_string();
        let keystore = server.keystore.display().to_string();
        let truststore = ca.cert.display().to_string();
        let (jaas_dir, sasl, jvm_args) = sasl_config(sasl_users);
        let mut config: Vec<(&str, &str)> = sasl;
        config.extend([
            ("secureClientPort", secure_port.as_str()),
            ("secureClientPortAddress", "127.0.0.1"),
            (
                "serverCnxnFactory",
                "org.apache.zookeeper.server.NettyServerCnxnFactory",
            ),
            ("ssl.keyStore.location", &keystore),
            ("ssl.keyStore.type", "PEM"),
            ("ssl.trustStore.location", &truststore),
            ("ssl.trustStore.type", "PEM"),
            ("ssl.clientAuth", client_auth),
        ]);
        let zk = ZkServer::start_with_jvm_args(&config, &jvm_args);
        TlsServer {
            zk,
            _jaas_dir: jaas_dir,
            secure_port: secure_port.parse().unwrap(),
            ca,
        }
    }

    /// `127.0.0.1:<secureClientPort>`.
    pub fn secure_connect_string(&self) -> String {
        format!("127.0.0.1:{}", self.secure_port)
    }
}

/// A server that authenticates clients with SASL DIGEST-MD5 against the users of a JAAS file
/// (`user_NAME="password"` in its `Server` section).
pub struct SaslServer {
    pub zk: ZkServer,
    _jaas_dir: TempDir,
}

impl SaslServer {
    pub fn start(users: &[(&str, &str)]) -> SaslServer {
        let (dir, config, jvm_args) = sasl_config(users);
        let zk = ZkServer::start_with_jvm_args(&config, &jvm_args);
        SaslServer {
            zk,
            _jaas_dir: dir.expect("SASL users"),
        }
    }
}

/// The JAAS file (in its directory), `zoo.cfg` lines and JVM arguments for SASL DIGEST-MD5
/// users; nothing when `users` is empty.
fn sasl_config(
    users: &[(&str, &str)],
) -> (
    Option<TempDir>,
    Vec<(&'static str, &'static str)>,
    Vec<String>,
) {
    if users.is_empty() {
        return (None, Vec::new(), Vec::new());
    }
    let dir = tempfile::Builder::new()
        .prefix("zooid-jaas-")
        .tempdir()
        .unwrap();
    let jaas: PathBuf = dir.path().join("jaas.conf");
    let mut text =
        String::from("Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required");
    for (user, password) in users {
        text.push_str(&format!("\n  user_{user}=\"{password}\""));
    }
    text.push_str(";\n};\n");
    fs::write(&jaas, text).unwrap();
    (
        Some(dir),
        vec![(
            "authProvider.1",
            "org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
        )],
        vec![format!(
            "-Djava.security.auth.login.config={}",
            jaas.display()
        )],
    )
}
