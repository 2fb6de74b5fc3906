//! How a session connects: the ensemble's session timeout, credentials (`digest`, SASL), TLS
//! files and the servers' release. Plain data; [`super::connect`] turns it into a ZooKeeper
//! client.

use std::path::PathBuf;
use std::time::Duration;

/// Options for opening a ZooKeeper session (and a store over it) from a connect string. Its `Debug` output never shows a
/// password.
#[derive(Clone)]
pub struct ConnectOptions {
    /// ZooKeeper session timeout.
    pub session_timeout: Duration,
    /// ZooKeeper `digest` authentication as (user, password), sent with `addauth` once the
    /// session is open.
    pub digest_auth: Option<(String, String)>,
    /// TLS to the ensemble's `secureClientPort`; `None` for a plain connection.
    pub tls: Option<TlsFiles>,
    /// SASL authentication during the connection handshake; `None` for none.
    pub sasl: Option<Sasl>,
    /// Which ZooKeeper release the servers run, as far as the form of zooid's requests depends
    /// on it; [`ServerVersion::Detect`] (the default) asks the servers when the session opens.
    pub server_version: ServerVersion,
}

/// The ZooKeeper release a session's requests must suit. The servers' release only changes how
/// a node is created: 3.4 knows `create` only, 3.5 and later also `create2` (which returns the
/// node's stat). Everything else zooid sends is the same on 3.4 to 3.9, except the keeper's
/// persistent watch (3.6+), for which the keeper falls back to polling by itself.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ServerVersion {
    /// Ask the servers when the first session opens: one read of `/zookeeper/config`, a node
    /// every server from 3.5 on has and 3.4 has not (no four-letter word, which servers may
    /// refuse or serve on no port the client reaches). The answer holds for the process's later
    /// sessions.
    #[default]
    Detect,
    /// ZooKeeper 3.4 (or an ensemble with a 3.4 server in it, such as during a rolling upgrade
    /// from 3.4): nodes are created with `create`.
    V3_4,
    /// ZooKeeper 3.5 or later: nodes are created with `create2`.
    V3_5,
}

impl ServerVersion {
    /// The release as `3.4`, `3.5+`, or `detect`.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerVersion::Detect => "detect",
            ServerVersion::V3_4 => "3.4",
            ServerVersion::V3_5 => "3.5+",
        }
    }
}

impl std::fmt::Display for ServerVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The PEM files of a TLS connection to ZooKeeper. Only paths: the files are read when a
/// session is opened (again for every replacement session, so rotated files are picked up).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// The CA certificate(s) that signed the servers' certificates.
    pub ca: PathBuf,
    /// The client certificate, for mutual TLS (with `key`).
    pub cert: Option<PathBuf>,
    /// The client certificate's private key, for mutual TLS (with `cert`).
    pub key: Option<PathBuf>,
    /// Whether the server's certificate must name the host in the connect string (default
    /// `true`; turning it off exposes the connection to man-in-the-middle attacks).
    pub verify_hostname: bool,
}

impl TlsFiles {
    /// Server-authenticated TLS trusting the CA in the PEM file `ca`, with hostname
    /// verification.
    pub fn ca(ca: impl Into<PathBuf>) -> Self {
        Self {
            ca: ca.into(),
            cert: None,
            key: None,
            verify_hostname: true,
        }
    }

    /// Adds the client certificate and key (PEM files) for mutual TLS.
    pub fn with_identity(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        self.cert = Some(cert.into());
        self.key = Some(key.into());
        self
    }
}

/// SASL authentication to ZooKeeper, during the connection handshake.
#[derive(Clone, PartialEq, Eq)]
pub enum Sasl {
    /// DIGEST-MD5 with a user of the server's JAAS `Server` section (`user_NAME="password"`).
    Digest {
        /// The user name.
        user: String,
        /// The password (never shown by `Debug`).
        password: String,
    },
    /// Kerberos (GSSAPI) with a client principal whose key is in a keytab, as Hadoop clusters
    /// use it. Needs zooid built with the `kerberos` feature.
    Kerberos {
        /// The client principal, such as `app/host@EXAMPLE.COM`.
        principal: String,
        /// The keytab holding the principal's key.
        keytab: PathBuf,
        /// The servers' service name, the first part of their principal (default `zookeeper`,
        /// Java's `zookeeper.sasl.client.username`).
        service: String,
    },
}

impl Sasl {
    /// DIGEST-MD5 as `user` with `password`.
    pub fn digest(user: impl Into<String>, password: impl Into<String>) -> Self {
        Sasl::Digest {
            user: user.into(),
            password: password.into(),
        }
    }

    /// Kerberos as `principal`, with its key from `keytab`, to servers `zookeeper/HOST`.
    pub fn kerberos(principal: impl Into<String>, keytab: impl Into<PathBuf>) -> Self {
        Sasl::Kerberos {
            principal: principal.into(),
            keytab: keytab.into(),
            service: "zookeeper".into(),
        }
    }
}

impl std::fmt::Debug for Sasl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sasl::Digest { user, .. } => f
                .debug_struct("Digest")
                .field("user", user)
                .field("password", &"<redacted>")
                .finish(),
            Sasl::Kerberos {
                principal,
                keytab,
                service,
            } => f
                .debug_struct("Kerberos")
                .field("principal", principal)
                .field("keytab", keytab)
                .field("service", service)
                .finish(),
        }
    }
}

impl ConnectOptions {
    /// Who this client is to ZooKeeper, for error messages: the authenticated identities
    /// (never a secret), or `anonymous (world:anyone)`.
    pub fn identity(&self) -> String {
        let mut ids = Vec::new();
        if let Some(sasl) = &self.sasl {
            ids.push(match sasl {
                Sasl::Digest { user, .. } => format!("sasl:{user} (DIGEST-MD5)"),
                Sasl::Kerberos { principal, .. } => format!("sasl:{principal} (Kerberos)"),
            });
        }
        if let Some((user, _)) = &self.digest_auth {
            ids.push(format!("digest:{user}"));
        }
        if let Some(TlsFiles {
            cert: Some(cert), ..
        }) = &self.tls
        {
            ids.push(format!("x509 client certificate {}", cert.display()));
        }
        if ids.is_empty() {
            "anonymous (world:anyone)".to_string()
        } else {
            ids.join(" + ")
        }
    }

    /// Whether the session authenticates as someone (so nodes can be created `creator_all`).
    pub(crate) fn authenticated(&self) -> bool {
        self.digest_auth.is_some() || self.sasl.is_some()
    }
}

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("session_timeout", &self.session_timeout)
            .field(
                "digest_auth",
                &self
                    .digest_auth
                    .as_ref()
                    .map(|(user, _)| (user, "<redacted>")),
            )
            .field("tls", &self.tls)
            .field("sasl", &self.sasl)
            .field("server_version", &self.server_version)
            .finish()
    }
}

impl Default for ConnectOptions {
    fn default() -> Self {
        Self {
            session_timeout: Duration::from_secs(10),
            digest_auth: None,
            tls: None,
            sasl: None,
            server_version: ServerVersion::Detect,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ConnectOptions, ServerVersion};

    #[test]
    fn the_servers_release_is_detected_unless_named() {
        let options = ConnectOptions::default();
        assert_eq!(options.server_version, ServerVersion::Detect);
        assert!(format!("{options:?}").contains("server_version: Detect"));
        let named: Vec<String> = [
            ServerVersion::Detect,
            ServerVersion::V3_4,
            ServerVersion::V3_5,
        ]
        .iter()
        .map(|v| v.to_string())
        .collect();
        assert_eq!(named, ["detect", "3.4", "3.5+"]);
    }

    #[test]
    fn debug_output_hides_the_password() {
        let options = ConnectOptions {
            digest_auth: Some(("alice".into(), "s3cret-pw".into())),
            ..ConnectOptions::default()
        };
        let shown = format!("{options:?}");
        assert!(shown.contains("alice"), "{shown}");
        assert!(!shown.contains("s3cret-pw"), "{shown}");
    }

    #[test]
    fn debug_output_hides_the_sasl_password_and_identity_names_no_secret() {
        use super::{Sasl, TlsFiles};
        let options = ConnectOptions {
            digest_auth: Some(("bob".into(), "addauth-pw-123".into())),
            sasl: Some(Sasl::digest("alice", "sasl-pw-456")),
            tls: Some(
                TlsFiles::ca("/etc/zk/ca.pem").with_identity("/etc/zk/c.pem", "/etc/zk/k.pem"),
            ),
            ..ConnectOptions::default()
        };
        for shown in [
            format!("{options:?}"),
            format!("{options:#?}"),
            options.identity(),
            format!("{:?}", options.clone().sasl),
        ] {
            assert!(!shown.contains("sasl-pw-456"), "{shown}");
            assert!(!shown.contains("addauth-pw-123"), "{shown}");
        }
        let shown = format!("{options:?}");
        assert!(
            shown.contains("alice") && shown.contains("/etc/zk/k.pem"),
            "{shown}"
        );
        assert_eq!(
            options.identity(),
            "sasl:alice (DIGEST-MD5) + digest:bob + x509 client certificate /etc/zk/c.pem"
        );
        assert_eq!(
            ConnectOptions::default().identity(),
            "anonymous (world:anyone)"
        );
    }
}
