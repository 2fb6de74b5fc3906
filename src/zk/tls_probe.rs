//! Why a TLS connection to ZooKeeper fails. zookeeper-client retries a failed handshake until
//! the session's connect times out and then reports only "timeout"; when that happens with TLS
//! configured, zooid makes one handshake of its own with the same files to name the cause
//! ("the server's certificate is not signed by the CA in ...", "the server requires a client
//! certificate", "the port does not speak TLS").

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use super::options::TlsFiles;

const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The first server of a connect string, as `(host, port)`.
fn first_server(connect: &str) -> Option<(String, u16)> {
    let first = connect.split(',').next()?.trim();
    let first = first.split_once("://").map_or(first, |(_, rest)| rest);
    let first = first.split('/').next()?; // the chroot follows the last server
    let (host, port) = first.rsplit_once(':')?;
    Some((
        host.trim_matches(['[', ']']).to_string(),
        port.parse().ok()?,
    ))
}

/// Runs one TLS handshake with the first server of `connect` (blocking, a few seconds at most)
/// and describes why it fails; `None` when it succeeds or the cause cannot be told.
pub(crate) fn diagnose(connect: &str, tls: &TlsFiles) -> Option<String> {
    let (host, port) = first_server(connect)?;
    let config = client_config(tls).ok()?;
    let name = ServerName::try_from(host.clone()).ok()?;
    let mut conn = rustls::ClientConnection::new(Arc::new(config), name).ok()?;
    let addr = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port))
        .ok()?
        .next()?;
    let mut sock = TcpStream::connect_timeout(&addr, PROBE_TIMEOUT).ok()?;
    sock.set_read_timeout(Some(PROBE_TIMEOUT)).ok()?;
    sock.set_write_timeout(Some(PROBE_TIMEOUT)).ok()?;
    let server = format!("{host}:{port}");
    let ca = tls.ca.display();
    let explain = |err: &std::io::Error| -> Option<String> {
        let tls_err = err
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>());
        Some(match tls_err {
            Some(rustls::Error::InvalidCertificate(why)) => format!(
                "{server}'s certificate was refused ({why:?}): it is not signed by the CA in {ca}, \
                 or does not name {host}"
            ),
            Some(rustls::Error::AlertReceived(alert)) => match alert {
                rustls::AlertDescription::CertificateRequired
                | rustls::AlertDescription::HandshakeFailure
                | rustls::AlertDescription::BadCertificate
                | rustls::AlertDescription::CertificateUnknown
                    if tls.cert.is_none() =>
                {
                    format!("{server} requires a client certificate (mutual TLS): give one with its key")
                }
                rustls::AlertDescription::BadCertificate
                | rustls::AlertDescription::UnknownCA
                | rustls::AlertDescription::CertificateUnknown
                | rustls::AlertDescription::CertificateRequired => format!(
                    "{server} refused the client certificate ({alert:?}): the servers' trust \
                     store does not accept it"
                ),
                other => format!("{server} ended the TLS handshake ({other:?})"),
            },
            Some(rustls::Error::InvalidMessage(_)) => format!(
                "{server} does not speak TLS: is this the plain clientPort rather than the \
                 servers' secureClientPort?"
            ),
            Some(other) => format!("TLS handshake with {server} failed: {other}"),
            None if err.kind() == std::io::ErrorKind::UnexpectedEof => format!(
                "{server} closed the connection during the TLS handshake: probably a plain \
                 clientPort rather than the servers' secureClientPort (or it refused the client \
                 certificate)"
            ),
            None => return None,
        })
    };
    while conn.is_handshaking() {
        if let Err(err) = conn.complete_io(&mut sock) {
            return explain(&err);
        }
    }
    // With TLS 1.3 a server refuses the client's certificate only after the handshake: read
    // once, briefly. A healthy server says nothing until it gets ZooKeeper's connect request.
    let _ = conn.writer().flush();
    let mut byte = [0u8; 1];
    sock.set_read_timeout(Some(Duration::from_millis(500)))
        .ok()?;
    let mut stream = rustls::Stream::new(&mut conn, &mut sock);
    match stream.read(&mut byte) {
        Err(err)
            if err.kind() != std::io::ErrorKind::WouldBlock
                && err.kind() != std::io::ErrorKind::TimedOut =>
        {
            explain(&err)
        }
        _ => None,
    }
}

fn client_config(tls: &TlsFiles) -> Result<rustls::ClientConfig, ()> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(&tls.ca).map_err(|_| ())? {
        roots.add(cert.map_err(|_| ())?).map_err(|_| ())?;
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|_| ())?
    .with_root_certificates(roots);
    match (&tls.cert, &tls.key) {
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .map_err(|_| ())?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| ())?;
            let key = PrivateKeyDer::from_pem_file(key).map_err(|_| ())?;
            builder.with_client_auth_cert(chain, key).map_err(|_| ())
        }
        _ => Ok(builder.with_no_client_auth()),
    }
}

#[cfg(test)]
mod tests {
    use super::first_server;

    #[test]
    fn first_server_of_a_connect_string() {
        assert_eq!(first_server("a:1,b:2/chroot"), Some(("a".into(), 1)));
        assert_eq!(first_server("tcp+tls://h:2281"), Some(("h".into(), 2281)));
        assert_eq!(first_server("[::1]:2181"), Some(("::1".into(), 2181)));
        assert_eq!(first_server("h:2281/app/ids"), Some(("h".into(), 2281)));
        assert_eq!(first_server("nohost"), None);
    }
}
