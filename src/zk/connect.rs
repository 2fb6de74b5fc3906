//! Opening a ZooKeeper client: the one place a connection is configured (timeouts, `digest`
//! auth, TLS, SASL, the form of requests for the servers' release) and a failure to connect is
//! explained.

use std::time::Duration;

use zookeeper_client::Client;

use super::options::{ConnectOptions, Sasl, ServerVersion, TlsFiles};
use crate::error::{Result, ZooidError};

/// Opens a session whose creates suit servers of release `version` (3.4: `create`; otherwise
/// `create2`). The one place a connection is configured: timeouts, `digest` auth, TLS and SASL.
/// No error message built here holds a secret.
pub(super) async fn open_for(
    connect: &str,
    options: &ConnectOptions,
    version: ServerVersion,
) -> Result<Client> {
    let connector = connector_for(options, version)?;
    let connecting = if options.tls.is_some() {
        connector.secure_connect(connect).await
    } else {
        connector.connect(connect).await
    };
    let err = match connecting {
        Ok(client) => return Ok(client),
        Err(err) => err,
    };
    Err(match err {
        zookeeper_client::Error::BadArguments(why) => {
            ZooidError::InvalidArgument(format!("ZooKeeper connect string {connect:?}: {why}"))
        }
        zookeeper_client::Error::AuthFailed => ZooidError::AuthFailed {
            connect: connect.to_string(),
            identity: options.identity(),
        },
        other => {
            let tls_cause = match &options.tls {
                Some(tls) => {
                    let (connect, tls) = (connect.to_string(), tls.clone());
                    tokio::task::spawn_blocking(move || super::tls_probe::diagnose(&connect, &tls))
                        .await
                        .ok()
                        .flatten()
                }
                None => None,
            };
            ZooidError::ConnectionLost {
                category: connect.to_string(),
                reason: match (tls_cause, &options.tls) {
                    (Some(cause), _) => {
                        format!("cannot open a ZooKeeper session over TLS: {cause}")
                    }
                    (None, Some(tls)) => format!(
                        "cannot open a ZooKeeper session over TLS (trusting the CA in {}; is \
                         this the servers' secureClientPort, and did that CA sign their \
                         certificates?): {other}",
                        tls.ca.display()
                    ),
                    (None, None) => format!("cannot open a ZooKeeper session: {other}"),
                } + &match &options.sasl {
                    // Over TLS the server's SASL refusal can arrive as a closed connection,
                    // which zookeeper-client retries until the connect times out.
                    Some(_) => format!(
                        " (if the servers are up, the SASL credentials of {} may have been refused)",
                        options.identity()
                    ),
                    None => String::new(),
                },
            }
        }
    })
}

/// The connector of every session zooid opens for servers of release `version`: the requested
/// session timeout, a connection timeout of a third of it, `digest` auth, TLS and SASL, and the
/// tokio runtime it is called on for the client's tasks (an error outside one). Also used to
/// reattach a given-up session and close it (src/zk/fate.rs).
pub(super) fn connector_for(
    options: &ConnectOptions,
    version: ServerVersion,
) -> Result<zookeeper_client::Connector> {
    if options.tls.is_some() && version == ServerVersion::V3_4 {
        return Err(ZooidError::InvalidArgument(
            "TLS needs ZooKeeper 3.5.5 or later (secureClientPort); ConnectOptions::server_version \
             says the servers run 3.4"
                .into(),
        ));
    }
    // The client's tasks (its session above all) go to the runtime this is called on, named
    // here: the crate's own way of finding tokio is a link-time registration, which a C
    // program's link against libzooid.a may leave out (vendor/README.md).
    let runtime = tokio::runtime::Handle::try_current().map_err(|err| ZooidError::Store {
        path: String::new(),
        reason: format!("a ZooKeeper session needs a tokio runtime: {err}"),
    })?;
    let mut connector = Client::connector()
        .with_runtime(runtime)
        .with_session_timeout(options.session_timeout)
        .with_connection_timeout((options.session_timeout / 3).max(Duration::from_millis(200)));
    if version == ServerVersion::V3_4 {
        // Creates (also inside a `multi`, vendor/README.md) go as `create`.
        connector = connector.with_server_version(3, 4, 14);
    }
    if let Some((user, password)) = &options.digest_auth {
        connector = connector.with_auth("digest", format!("{user}:{password}").as_bytes());
    }
    if let Some(tls) = &options.tls {
        connector = connector.with_tls(tls_options(tls)?);
    }
    if let Some(sasl) = &options.sasl {
        connector = with_sasl(connector, sasl)?;
    }
    Ok(connector)
}

fn read_pem(what: &str, path: &std::path::Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|err| {
        ZooidError::InvalidArgument(format!("TLS {what} file {}: {err}", path.display()))
    })
}

/// The client's TLS options from the PEM files named in `tls`.
fn tls_options(tls: &TlsFiles) -> Result<zookeeper_client::TlsOptions> {
    let bad = |what: &str, path: &std::path::Path, err: zookeeper_client::Error| {
        ZooidError::InvalidArgument(format!(
            "TLS {what} file {}: not usable PEM ({err})",
            path.display()
        ))
    };
    let ca = read_pem("CA", &tls.ca)?;
    let mut out = zookeeper_client::TlsOptions::new()
        .with_pem_ca(&ca)
        .map_err(|err| bad("CA", &tls.ca, err))?;
    match (&tls.cert, &tls.key) {
        (Some(cert_path), Some(key_path)) => {
            let cert = read_pem("client certificate", cert_path)?;
            let key = read_pem("client key", key_path)?;
            // The key's parse error names neither the key nor its content.
            out = out
                .with_pem_identity(&cert, &key)
                .map_err(|err| bad("client certificate or key", key_path, err))?;
        }
        (None, None) => {}
        _ => {
            return Err(ZooidError::InvalidArgument(
                "TLS client certificate and key go together: give both or neither".into(),
            ))
        }
    }
    if !tls.verify_hostname {
        // SAFETY: not memory safety; the crate marks this unsafe because it weakens TLS. The
        // caller asked for it explicitly (`verify_hostname: false`).
        out = unsafe { out.with_no_hostname_verification() };
    }
    Ok(out)
}

fn with_sasl(
    connector: zookeeper_client::Connector,
    sasl: &Sasl,
) -> Result<zookeeper_client::Connector> {
    match sasl {
        Sasl::Digest { user, password } => Ok(connector.with_sasl(
            zookeeper_client::SaslOptions::digest_md5(user.clone(), password.clone()),
        )),
        Sasl::Kerberos {
            principal,
            keytab,
            service,
        } => kerberos(connector, principal, keytab, service),
    }
}

#[cfg(feature = "kerberos")]
fn kerberos(
    connector: zookeeper_client::Connector,
    principal: &str,
    keytab: &std::path::Path,
    service: &str,
) -> Result<zookeeper_client::Connector> {
    super::kerberos::use_keytab(principal, keytab)?;
    Ok(connector
        .with_sasl(zookeeper_client::SaslOptions::gssapi().with_username(service.to_string())))
}

#[cfg(not(feature = "kerberos"))]
fn kerberos(
    _connector: zookeeper_client::Connector,
    principal: &str,
    _keytab: &std::path::Path,
    _service: &str,
) -> Result<zookeeper_client::Connector> {
    Err(ZooidError::InvalidArgument(format!(
        "Kerberos SASL (as {principal}) needs zooid built with the `kerberos` feature"
    )))
}
