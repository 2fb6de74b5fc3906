//! The Apache ZooKeeper store: the single-node pool operations of [`Store`] over the one
//! ZooKeeper interface ([`Zk`]), on the process's shared session; disconnects are ridden out
//! within the session, and a lost session is replaced by the session layer.

use std::sync::Arc;
use std::time::Duration;

use super::{ReadOn, Store, StoreError, Versioned};
use crate::error::Result;
use crate::zk::{
    ConnectOptions, Create, Failure, Multi, OpResult, Session, Verdict, Zk, ZooKeeperExt,
};

/// A ZooKeeper ensemble reached through the process's shared session.
#[derive(Clone)]
pub struct ZkStore {
    zk: Zk,
    /// `zk:`, the ensemble's hosts in order and the chroot ([`origin_of`]).
    origin: Arc<str>,
}

/// A ZooKeeper store's origin from its connect string: the same hosts in any order, and the
/// same chroot, are the same store.
fn origin_of(connect: &str) -> Arc<str> {
    let (hosts, chroot) = match connect.find('/') {
        Some(at) => connect.split_at(at),
        None => (connect, ""),
    };
    let mut hosts: Vec<&str> = hosts.split(',').map(str::trim).filter(|h| !h.is_empty()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    format!("zk:{}{}", hosts.join(","), chroot.trim_end_matches('/')).into()
}

impl std::fmt::Debug for ZkStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkStore")
            .field("connect", &self.zk.connect_string())
            .finish_non_exhaustive()
    }
}

impl ZkStore {
    /// Opens a session on the ensemble named by a ZooKeeper connect string
    /// (`host:port,...[/chroot]`) and a store over it.
    pub async fn connect(connect: &str, options: &ConnectOptions) -> Result<Self> {
        Ok(Self::on(
            Session::connect(connect, options).await?.into_zk(),
        ))
    }

    /// A store over an already open session (shared with the recipes).
    pub fn on(zk: Zk) -> Self {
        let origin = origin_of(zk.connect_string());
        Self { zk, origin }
    }

    /// The session the store uses.
    pub fn zookeeper(&self) -> &Zk {
        &self.zk
    }

    /// The ZooKeeper session currently in use.
    pub async fn session_id(&self) -> i64 {
        self.zk.status().session_id
    }

    /// Runs one request on the current session generation (bounded by the request limit; a
    /// session found gone is replaced, so the caller's retry runs on a fresh one) and reads its
    /// failure as the store's.
    async fn call<T>(
        &self,
        write: bool,
        request: impl std::future::Future<Output = std::result::Result<T, Failure>>,
    ) -> Result<T, StoreError> {
        request
            .await
            .map_err(|failure| StoreError::from_failure(&failure, write, self.zk.options()))
    }

    /// The current session generation, which each request names.
    fn gen(&self) -> u64 {
        self.zk.generation()
    }

    async fn create_node(&self, path: &str, data: &[u8], create: Create) -> Result<(), StoreError> {
        if let Some(parent) = super::parent(path) {
            self.call(true, self.zk.create_all(self.gen(), parent, None))
                .await?;
        }
        self.call(true, async {
            self.zk
                .create(self.gen(), path, data, &create)
                .await
                .map(|_| ())
        })
        .await
    }
}

impl StoreError {
    /// The store's reading of a failed ZooKeeper request: an answer of the servers is what it
    /// says; anything else is [`StoreError::Unknown`] for a write (it may have applied) and
    /// [`StoreError::Unavailable`] for a read.
    pub(crate) fn from_failure(
        failure: &Failure,
        write: bool,
        options: &ConnectOptions,
    ) -> StoreError {
        match failure.verdict {
            Verdict::NoNode => StoreError::NoNode,
            Verdict::NodeExists => StoreError::NodeExists,
            Verdict::BadVersion => StoreError::BadVersion,
            Verdict::NotAuthorized => StoreError::NotAuthorized {
                identity: options.identity(),
            },
            Verdict::Refused => StoreError::Refused(failure.message.clone()),
            // A write bound to the connection of its plan, which ended: not sent.
            Verdict::NotSent => StoreError::PlanEnded,
            Verdict::Expired | Verdict::Closed | Verdict::Unknown if write => {
                StoreError::Unknown(failure.message.clone())
            }
            Verdict::Expired | Verdict::Closed | Verdict::Unknown => {
                StoreError::Unavailable(failure.message.clone())
            }
        }
    }
}

impl Store for ZkStore {
    fn origin(&self) -> Option<Arc<str>> {
        Some(Arc::clone(&self.origin))
    }
    async fn get(&self, path: &str) -> Result<Versioned, StoreError> {
        self.call(false, self.zk.get(self.gen(), path))
            .await
            .map(|(data, stat)| Versioned {
                data,
                version: stat.version,
                created: stat.czxid,
            })
    }

    async fn create(&self, path: &str, data: &[u8]) -> Result<(), StoreError> {
        self.create_node(path, data, Create::persistent()).await
    }

    async fn create_with_acl(
        &self,
        path: &str,
        data: &[u8],
        acl: &[crate::zk::Acl],
    ) -> Result<(), StoreError> {
        self.create_node(path, data, Create::persistent().with_acl(acl.to_vec()))
            .await
    }

    async fn set(
        &self,
        path: &str,
        data: &[u8],
        expected: i32,
        planned: ReadOn,
    ) -> Result<i32, StoreError> {
        if expected < 0 {
            // -1 would mean "any version" and turn compare-and-set into a blind write.
            return Err(StoreError::Refused(format!(
                "refusing to write with expected version {expected}"
            )));
        }
        if !self.zk.still_on(planned) {
            return Err(StoreError::PlanEnded);
        }
        // Bound to the plan's connection: not written after a reconnection the session layer
        // has not noticed yet either (`Verdict::NotSent`, `PlanEnded`).
        self.call(
            true,
            self.zk.set(planned.into(), path, data, Some(expected)),
        )
        .await
        .map(|stat| stat.version)
    }

    async fn replace(
        &self,
        path: &str,
        data: &[u8],
        expected: i32,
        planned: ReadOn,
    ) -> Result<Option<i64>, StoreError> {
        if expected < 0 {
            return Err(StoreError::Refused(format!(
                "refusing to replace with expected version {expected}"
            )));
        }
        // The node's own ACL goes to the new incarnation (a category's ACL may differ from the
        // session's default), read after a `sync` so that a recent `setACL` is not undone. (The
        // `multi` cannot check the ACL's version: a `setACL` between this read and the move is.)
        // All on the session the move was planned on: after a wipe and a restore the node may
        // be back at `expected` with other contents, and a move planned on the old one must not
        // apply to it (a request on an ended session fails without being sent).
        if !self.zk.still_on(planned) {
            return Err(StoreError::PlanEnded);
        }
        let generation = planned.generation;
        self.call(false, self.zk.sync(generation, path)).await?;
        let acl = self.call(false, self.zk.get_acl(generation, path)).await?;
        let mut multi = Multi::new();
        multi.delete(path, Some(expected));
        multi.create(path, data, &Create::persistent().with_acl(acl));
        match multi.commit_on(&*self.zk, planned).await {
            // Servers before 3.5 (and some later ones) return no stat for a create in a multi.
            Ok(results) => Ok(results.iter().find_map(|r| match r {
                OpResult::Create {
                    stat: Some(stat), ..
                } => Some(stat.czxid),
                _ => None,
            })),
            Err(failed) if failed.verdict() == Verdict::Refused && failed.index == Some(0) => {
                Err(StoreError::Refused(format!(
                    "{path} has children, so it cannot be moved to a fresh node ({})",
                    failed.failure
                )))
            }
            Err(failed) => Err(StoreError::from_failure(
                &failed.failure,
                true,
                self.zk.options(),
            )),
        }
    }

    fn read_on(&self) -> ReadOn {
        self.zk.read_on()
    }

    async fn sync(&self, path: &str) -> Result<(), StoreError> {
        self.call(false, self.zk.sync(self.gen(), path)).await
    }

    async fn children(&self, path: &str) -> Result<Vec<String>, StoreError> {
        let (mut names, _) = self.call(false, self.zk.children(self.gen(), path)).await?;
        names.sort();
        Ok(names)
    }

    async fn delete(&self, path: &str, expected: i32) -> Result<(), StoreError> {
        if expected < 0 {
            return Err(StoreError::Refused(format!(
                "refusing to delete with expected version {expected}"
            )));
        }
        self.call(true, self.zk.delete(self.gen(), path, Some(expected)))
            .await
    }

    async fn wait_change(&self, path: &str, seen: i32, limit: Duration) -> Result<(), StoreError> {
        let watched = self.call(false, async {
            let (stat, watch) = self.zk.exists_watched(self.gen(), path).await?;
            if stat.is_some_and(|stat| stat.version == seen) {
                // Fires on a data change, deletion, or the end of the session.
                watch.changed().await;
            }
            Ok(())
        });
        tokio::time::timeout(limit, watched).await.unwrap_or(Ok(()))
    }
}
