//! The Apache ZooKeeper store, over the async `zookeeper-client` crate.
//!
//! The store runs every request on the process's shared [`Session`]; disconnects are ridden out
//! within the session, and a lost session is replaced by the session layer.

use std::future::Future;
use std::time::Duration;

use zookeeper_client::{Acls, Client, CreateMode, Error as ZkError, MultiWriteResult};

use super::{Store, StoreError, Versioned};
use crate::error::Result;
use crate::zk::{classify, describe_error, is_gone, ClientMulti, ConnectOptions, Session, Verdict};

/// A ZooKeeper ensemble reached through the process's shared [`Session`].
#[derive(Clone)]
pub struct ZkStore {
    session: Session,
}

impl std::fmt::Debug for ZkStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkStore")
            .field("connect", &self.session.connect_string())
            .finish_non_exhaustive()
    }
}

impl ZkStore {
    /// Opens a session on the ensemble named by a ZooKeeper connect string
    /// (`host:port,...[/chroot]`) and a store over it.
    pub async fn connect(connect: &str, options: &ConnectOptions) -> Result<Self> {
        Ok(Self::on(Session::connect(connect, options).await?))
    }

    /// A store over an already open session (shared with the recipes).
    pub fn on(session: Session) -> Self {
        Self { session }
    }

    /// The session the store uses.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The ZooKeeper session currently in use.
    pub async fn session_id(&self) -> i64 {
        self.session.client().0.session_id().0
    }

    fn acls(&self) -> Acls<'static> {
        self.session.default_acls()
    }

    /// Runs one request on the current session, bounded by the session timeout; when the
    /// session turns out to be gone, has the session layer replace it so the caller's retry runs
    /// on a fresh one.
    async fn call<T, F, Fut>(&self, write: bool, request: F) -> Result<T, StoreError>
    where
        F: FnOnce(Client) -> Fut,
        Fut: Future<Output = std::result::Result<T, ZkError>>,
    {
        let (client, generation) = self.session.client();
        match self.session.run(generation, request(client)).await {
            Ok(value) => Ok(value),
            Err(ZkError::Timeout) => {
                let why = format!("no reply within {:?}", self.session.request_limit());
                Err(if write {
                    StoreError::Unknown(why)
                } else {
                    StoreError::Unavailable(why)
                })
            }
            Err(err) => Err(StoreError::from_zk(&err, write, self.session.options())),
        }
    }

    async fn create_node(&self, path: &str, data: &[u8], acl: Acls<'_>) -> Result<(), StoreError> {
        if let Some(parent) = super::parent(path) {
            let options = CreateMode::Persistent.with_acls(self.acls());
            self.call(true, |c| async move { c.mkdir(parent, &options).await })
                .await?;
        }
        let options = CreateMode::Persistent.with_acls(acl);
        self.call(true, |c| async move {
            c.create(path, data, &options).await.map(|_| ())
        })
        .await
    }
}

impl StoreError {
    /// The store's reading of a failed ZooKeeper request (see [`classify`]): an answer of the
    /// servers is what it says; anything else is [`StoreError::Unknown`] for a write (it may
    /// have applied) and [`StoreError::Unavailable`] for a read.
    pub(crate) fn from_zk(err: &ZkError, write: bool, options: &ConnectOptions) -> StoreError {
        match classify(err) {
            Verdict::NoNode => StoreError::NoNode,
            Verdict::NodeExists => StoreError::NodeExists,
            Verdict::BadVersion => StoreError::BadVersion,
            Verdict::NotAuthorized => StoreError::NotAuthorized {
                identity: options.identity(),
            },
            Verdict::Refused => StoreError::Refused(describe_error(err)),
            Verdict::Expired | Verdict::Closed | Verdict::Unknown if write => {
                StoreError::Unknown(err.to_string())
            }
            Verdict::Expired | Verdict::Closed | Verdict::Unknown => {
                StoreError::Unavailable(err.to_string())
            }
        }
    }
}

impl Store for ZkStore {
    fn session(&self) -> Option<&Session> {
        Some(&self.session)
    }

    async fn get(&self, path: &str) -> Result<Versioned, StoreError> {
        self.call(false, |c| async move { c.get_data(path).await })
            .await
            .map(|(data, stat)| Versioned {
                data,
                version: stat.version,
                created: stat.czxid,
            })
    }

    async fn create(&self, path: &str, data: &[u8]) -> Result<(), StoreError> {
        self.create_node(path, data, self.acls()).await
    }

    async fn create_with_acl(
        &self,
        path: &str,
        data: &[u8],
        acl: &[crate::zk::Acl],
    ) -> Result<(), StoreError> {
        let acl: Vec<zookeeper_client::Acl> = acl.iter().map(crate::zk::Acl::to_zk).collect();
        self.create_node(path, data, Acls::new(&acl)).await
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

    async fn replace(
        &self,
        path: &str,
        data: &[u8],
        expected: i32,
    ) -> Result<Option<i64>, StoreError> {
        if expected < 0 {
            return Err(StoreError::Refused(format!(
                "refusing to replace with expected version {expected}"
            )));
        }
        // The node's own ACL goes to the new incarnation (a category's ACL may differ from the
        // session's default), read after a `sync` so that a recent `setACL` is not undone. (The
        // `multi` cannot check the ACL's version: a `setACL` between this read and the move is.)
        self.sync(path).await?;
        let (acl, _) = self
            .call(false, |c| async move { c.get_acl(path).await })
            .await?;
        let (client, generation) = self.session.client();
        let options = CreateMode::Persistent.with_acls(Acls::new(&acl));
        let mut multi = ClientMulti::new(&client);
        multi.delete(path, Some(expected));
        multi.create(path, data, &options);
        match multi.commit(&self.session, generation).await {
            // Servers before 3.5 (and some later ones) return no stat for a create in a multi.
            Ok(results) => Ok(results.iter().find_map(|r| match r {
                MultiWriteResult::Create { stat, .. } if !stat.is_invalid() => Some(stat.czxid),
                _ => None,
            })),
            Err(failed) if matches!(failed.error, ZkError::NotEmpty) => Err(StoreError::Refused(
                format!("{path} has children, so it cannot be moved to a fresh node"),
            )),
            Err(failed) => Err(StoreError::from_zk(
                &failed.error,
                true,
                self.session.options(),
            )),
        }
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

    async fn wait_change(&self, path: &str, seen: i32, limit: Duration) -> Result<(), StoreError> {
        let (client, generation) = self.session.client();
        let watched = async {
            let (stat, watcher) = client.check_and_watch_stat(path).await?;
            if stat.is_some_and(|stat| stat.version == seen) {
                // Fires on a data change, deletion, or the end of the session.
                watcher.changed().await;
            }
            Ok::<(), ZkError>(())
        };
        match tokio::time::timeout(limit, watched).await {
            Err(_) => Ok(()),
            Ok(Ok(())) => Ok(()),
            Ok(Err(err)) => {
                if is_gone(&err) {
                    self.session.report_lost(generation, &err.to_string()).await;
                }
                Err(StoreError::from_zk(&err, false, self.session.options()))
            }
        }
    }
}
