//! The Apache ZooKeeper store, over the async `zookeeper-client` crate.
//!
//! One session serves every caller. Disconnects are ridden out by the client within the session;
//! when the session expires, the next request opens a new one.

use std::future::Future;
use std::time::Duration;

use tokio::sync::RwLock;
use zookeeper_client::{Acls, Client, CreateMode, Error as ZkError};

use super::{ConnectOptions, Store, StoreError, Versioned};
use crate::error::{Result, ZooidError};

/// A ZooKeeper ensemble reached through one session at a time.
pub struct ZkStore {
    connect: String,
    options: ConnectOptions,
    client: RwLock<Client>,
}

impl std::fmt::Debug for ZkStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkStore")
            .field("connect", &self.connect)
            .finish_non_exhaustive()
    }
}

impl ZkStore {
    /// Connects to the ensemble named by a ZooKeeper connect string (`host:port,...[/chroot]`).
    pub async fn connect(connect: &str, options: &ConnectOptions) -> Result<Self> {
        if connect.trim().is_empty() {
            return Err(ZooidError::InvalidArgument(
                "empty ZooKeeper connect string".into(),
            ));
        }
        if let Some((user, _)) = &options.digest_auth {
            if user.is_empty() || user.contains(':') {
                return Err(ZooidError::InvalidArgument(
                    "digest auth user must be non-empty without ':'".into(),
                ));
            }
        }
        let client = open_session(connect, options).await?;
        Ok(Self {
            connect: connect.to_string(),
            options: options.clone(),
            client: RwLock::new(client),
        })
    }

    /// The ZooKeeper session currently in use.
    pub async fn session_id(&self) -> i64 {
        self.client.read().await.session_id().0
    }

    fn acls(&self) -> Acls<'static> {
        if self.options.digest_auth.is_some() {
            Acls::creator_all()
        } else {
            Acls::anyone_all()
        }
    }

    /// Runs one request on the current session, bounded by the session timeout; on session
    /// expiry, replaces the session so the caller's retry runs on a fresh one.
    async fn call<T, F, Fut>(&self, write: bool, request: F) -> Result<T, StoreError>
    where
        F: FnOnce(Client) -> Fut,
        Fut: Future<Output = std::result::Result<T, ZkError>>,
    {
        let client = self.client.read().await.clone();
        let session = client.session_id();
        let limit = self.options.session_timeout.max(Duration::from_millis(500));
        let outcome = match tokio::time::timeout(limit, request(client)).await {
            Ok(outcome) => outcome,
            Err(_) => {
                let why = format!("no reply within {limit:?}");
                return Err(if write {
                    StoreError::Unknown(why)
                } else {
                    StoreError::Unavailable(why)
                });
            }
        };
        let err = match outcome {
            Ok(value) => return Ok(value),
            Err(err) => err,
        };
        if matches!(err, ZkError::SessionExpired | ZkError::ClientClosed) {
            self.renew_session(session).await;
        }
        Err(classify(err, write))
    }

    async fn renew_session(&self, expired: zookeeper_client::SessionId) {
        let mut guard = self.client.write().await;
        if guard.session_id() != expired {
            return; // Another caller renewed it already.
        }
        match open_session(&self.connect, &self.options).await {
            Ok(client) => {
                tracing::info!(old = ?expired, new = ?client.session_id(), "ZooKeeper session renewed");
                *guard = client;
            }
            Err(err) => tracing::warn!(%err, "could not renew the ZooKeeper session yet"),
        }
    }
}

async fn open_session(connect: &str, options: &ConnectOptions) -> Result<Client> {
    let mut connector = Client::connector()
        .with_session_timeout(options.session_timeout)
        .with_connection_timeout((options.session_timeout / 3).max(Duration::from_millis(200)));
    if let Some((user, password)) = &options.digest_auth {
        connector = connector.with_auth("digest", format!("{user}:{password}").as_bytes());
    }
    connector.connect(connect).await.map_err(|err| match err {
        ZkError::BadArguments(why) => {
            ZooidError::InvalidArgument(format!("ZooKeeper connect string {connect:?}: {why}"))
        }
        ZkError::AuthFailed => ZooidError::Store {
            path: connect.to_string(),
            reason: "authentication failed".into(),
        },
        other => ZooidError::ConnectionLost {
            category: connect.to_string(),
            reason: format!("cannot open a ZooKeeper session: {other}"),
        },
    })
}

/// Maps a client error; for writes, anything that does not prove "no change" is ambiguous.
fn classify(err: ZkError, write: bool) -> StoreError {
    match err {
        ZkError::NoNode => StoreError::NoNode,
        ZkError::NodeExists => StoreError::NodeExists,
        ZkError::BadVersion => StoreError::BadVersion,
        ZkError::NoAuth
        | ZkError::AuthFailed
        | ZkError::InvalidAcl
        | ZkError::BadArguments(_)
        | ZkError::NotEmpty => StoreError::Refused(err.to_string()),
        ZkError::MarshallingError => {
            StoreError::Refused(format!("{err} (node over the server's jute.maxbuffer?)"))
        }
        other if write => StoreError::Unknown(other.to_string()),
        other => StoreError::Unavailable(other.to_string()),
    }
}

impl Store for ZkStore {
    async fn get(&self, path: &str) -> Result<Versioned, StoreError> {
        self.call(false, |c| async move { c.get_data(path).await })
            .await
            .map(|(data, stat)| Versioned {
                data,
                version: stat.version,
            })
    }

    async fn create(&self, path: &str, data: &[u8]) -> Result<(), StoreError> {
        let acls = self.acls();
        if let Some(parent) = super::parent(path) {
            let options = CreateMode::Persistent.with_acls(acls);
            self.call(true, |c| async move { c.mkdir(parent, &options).await })
                .await?;
        }
        let options = CreateMode::Persistent.with_acls(acls);
        self.call(true, |c| async move {
            c.create(path, data, &options).await.map(|_| ())
        })
        .await
    }

    async fn set(&self, path: &str, data: &[u8], expected: i32) -> Result<i32, StoreError> {
        if expected < 0 {
            // -1 would mean "any version" and turn compare-and-set into a blind write.
            return Err(StoreError::Refused(format!(
                "refusing to write with expected version {expected}"
            )));
        }
        self.call(true, |c| async move {
            c.set_data(path, data, Some(expected)).await
        })
        .await
        .map(|stat| stat.version)
    }

    async fn sync(&self, path: &str) -> Result<(), StoreError> {
        self.call(false, |c| async move { c.sync(path).await })
            .await
    }

    async fn children(&self, path: &str) -> Result<Vec<String>, StoreError> {
        let mut names = self
            .call(false, |c| async move { c.list_children(path).await })
            .await?;
        names.sort();
        Ok(names)
    }

    async fn delete(&self, path: &str, expected: i32) -> Result<(), StoreError> {
        if expected < 0 {
            return Err(StoreError::Refused(format!(
                "refusing to delete with expected version {expected}"
            )));
        }
        self.call(
            true,
            |c| async move { c.delete(path, Some(expected)).await },
        )
        .await
    }
}
