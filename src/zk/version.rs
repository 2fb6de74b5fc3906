//! Which ZooKeeper release the servers run, as far as zooid's requests depend on it: found out
//! when a session opens ([`open_client`]: 3.4 or 3.5+, from `/zookeeper/config`), and whether
//! they have persistent watches (3.6+, [`probe_persistent_watches`], asked on a throwaway
//! session). docs/OPERATIONS.md, "ZooKeeper server versions", says why these probes.

use std::time::Duration;

use zookeeper_client::{Client, Error as ZkError};

use super::connect::open_for;
use super::options::{ConnectOptions, ServerVersion};
use crate::error::{Result, ZooidError};

/// Opens a new ZooKeeper session (a new client: it carries no last-seen zxid, so servers that
/// lost their data accept it) for servers of release `version`, and returns it with the release
/// it was opened for. [`ServerVersion::Detect`] opens a session, asks the servers (see
/// [`detect`]), and on 3.4 replaces it by one that creates nodes with `create`.
pub(crate) async fn open_client(
    connect: &str,
    options: &ConnectOptions,
    version: ServerVersion,
) -> Result<(Client, ServerVersion)> {
    if version != ServerVersion::Detect {
        return Ok((open_for(connect, options, version).await?, version));
    }
    let client = open_for(connect, options, ServerVersion::V3_5).await?;
    match detect(&client, connect, options).await? {
        ServerVersion::V3_4 => {
            tracing::info!(
                connect,
                "the ZooKeeper servers run 3.4 (no /zookeeper/config): nodes are created with \
                 `create`, not `create2`"
            );
            // Dropping the only handle closes the probe's session.
            drop(client);
            let client = open_for(connect, options, ServerVersion::V3_4).await?;
            Ok((client, ServerVersion::V3_4))
        }
        found => Ok((client, found)),
    }
}

/// Which release the servers of `client`'s session run, as far as zooid's requests depend on it:
/// `/zookeeper/config` exists on every server from 3.5 on (readable by anyone, and a refused
/// read proves it exists too) and on no 3.4 server. A read ignores the connect string's chroot.
/// No answer in time fails the connect: creating nodes the wrong way would fail every write.
async fn detect(client: &Client, connect: &str, options: &ConnectOptions) -> Result<ServerVersion> {
    let limit = options.session_timeout.max(Duration::from_millis(500));
    let unknown = |why: String| ZooidError::ConnectionLost {
        category: connect.to_string(),
        reason: format!(
            "cannot tell the ZooKeeper servers' release (reading /zookeeper/config): {why}; \
             set ConnectOptions::server_version to skip the check"
        ),
    };
    match tokio::time::timeout(limit, client.get_config()).await {
        Ok(Ok(_)) | Ok(Err(ZkError::NoAuth)) => Ok(ServerVersion::V3_5),
        Ok(Err(ZkError::NoNode)) => Ok(ServerVersion::V3_4),
        Ok(Err(err)) => Err(unknown(err.to_string())),
        Err(_) => Err(unknown(format!("no reply within {limit:?}"))),
    }
}

/// Whether the servers support persistent watches (`addWatch`, ZooKeeper 3.6+), asked on a
/// throwaway session: a 3.5 server answers the unknown request with `Unimplemented` and then
/// drops the connection, which must not hit the session that holds ephemeral nodes and
/// candidacies (an election would pause).
pub(crate) async fn probe_persistent_watches(
    connect: &str,
    options: &ConnectOptions,
    version: ServerVersion,
) -> Result<bool> {
    if version == ServerVersion::V3_4 {
        return Ok(false);
    }
    let client = open_for(connect, options, version).await?;
    let limit = options.session_timeout.max(Duration::from_millis(500));
    let asked = client.watch("/", zookeeper_client::AddWatchMode::Persistent);
    match tokio::time::timeout(limit, asked).await {
        Ok(Ok(_watcher)) => Ok(true),
        Ok(Err(ZkError::Unimplemented)) => Ok(false),
        Ok(Err(err)) => Err(ZooidError::ConnectionLost {
            category: connect.to_string(),
            reason: format!("asking whether the servers have persistent watches: {err}"),
        }),
        Err(_) => Err(ZooidError::Timeout {
            what: format!("asking {connect} whether the servers have persistent watches"),
            after: limit,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zk::options::TlsFiles;

    /// TLS and a 3.4 server contradict each other; refused before any connection is tried.
    #[test]
    fn tls_to_a_3_4_server_is_refused_naming_the_release() {
        let options = ConnectOptions {
            tls: Some(TlsFiles::ca("/nonexistent/ca.pem")),
            ..ConnectOptions::default()
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let refused = runtime
            .block_on(open_client("127.0.0.1:1", &options, ServerVersion::V3_4))
            .expect_err("refused");
        assert_eq!(refused.kind(), crate::error::ErrorKind::InvalidArgument);
        assert!(refused.to_string().contains("3.5.5"), "{refused}");
    }
}
