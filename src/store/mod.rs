//! Versioned key-value stores with compare-and-set: ZooKeeper, and the embedded ones.
//!
//! The service needs only what ZooKeeper offers a single znode: read data with its version,
//! create, and set data if the version is still the expected one.

mod file;
mod local;
mod memory;
mod zookeeper;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

pub use file::FileStore;
pub use memory::MemoryStore;
pub use zookeeper::ZkStore;

use crate::error::{Result, ZooidError};
pub use crate::zk::ReadOn;
pub use crate::zk::{ConnectOptions, Sasl, TlsFiles};

/// A node's data and its data version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Versioned {
    /// The node's content.
    pub data: Vec<u8>,
    /// ZooKeeper's 32-bit data version: 0 at creation, +1 per write.
    pub version: i32,
    /// The node's incarnation: ZooKeeper's `czxid` (the transaction that created it), which a
    /// node deleted and created again (a wipe and restore) does not share with the old one even
    /// at the same data version. 0 in the stores without one (memory, file).
    pub created: i64,
}

/// Why a store operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// The node does not exist.
    NoNode,
    /// `create` found the node already there.
    NodeExists,
    /// The node's version is not the expected one.
    BadVersion,
    /// The request may or may not have been applied: its reply was lost (connection loss,
    /// timeout, session expiry while in flight).
    Unknown(String),
    /// The store could not be reached; the request was not sent.
    Unavailable(String),
    /// The store refused the request for another reason (auth, size, bad path).
    Refused(String),
    /// The session or connection the write was planned on (its [`ReadOn`]) has ended: nothing
    /// was sent. Read again and plan again: after a wipe or rollback and a restore, the node may
    /// be back at the version read with other contents.
    PlanEnded,
    /// The node's ACL does not grant `identity` the permission the request needs; nothing was
    /// changed.
    NotAuthorized {
        /// Who the client is to the store, as [`ConnectOptions::identity`] describes it.
        identity: String,
    },
}

impl StoreError {
    /// Converts to the public error for an operation on `path` that did not apply.
    pub(crate) fn into_zooid(self, path: &str) -> ZooidError {
        match self {
            StoreError::NotAuthorized { identity } => ZooidError::NotAuthorized {
                path: path.to_string(),
                identity,
            },
            other => ZooidError::Store {
                path: path.to_string(),
                reason: other.to_string(),
            },
        }
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::NoNode => f.write_str("node does not exist"),
            StoreError::NodeExists => f.write_str("node already exists"),
            StoreError::BadVersion => f.write_str("version conflict"),
            StoreError::Unknown(why) => write!(f, "outcome unknown: {why}"),
            StoreError::Unavailable(why) => write!(f, "unavailable: {why}"),
            StoreError::Refused(why) => write!(f, "refused: {why}"),
            StoreError::PlanEnded => f.write_str(
                "not sent: the session or connection the write was planned on has ended",
            ),
            StoreError::NotAuthorized { identity } => write!(f, "not authorized as {identity}"),
        }
    }
}

/// A store of versioned nodes addressed by ZooKeeper-style paths.
pub trait Store: Send + Sync + 'static {
    /// Which store this is, as far as the process can tell: IDs taken from it go back only to
    /// a store with the same origin (a push through a service on another store is refused).
    /// `None` (the default) for a store that cannot say; its sets are not checked.
    fn origin(&self) -> Option<Arc<str>> {
        None
    }

    /// Reads a node.
    fn get(&self, path: &str) -> impl Future<Output = Result<Versioned, StoreError>> + Send;

    /// Creates a node (and any missing parents) holding `data`, at version 0.
    fn create(
        &self,
        path: &str,
        data: &[u8],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Creates a node like [`Store::create`], with the ACL `acl` on the node itself (its missing
    /// parents get the store's default ACL). The embedded stores have no ACLs and refuse.
    fn create_with_acl(
        &self,
        path: &str,
        data: &[u8],
        acl: &[crate::zk::Acl],
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        let _ = (path, data, acl);
        async {
            Err(StoreError::Refused(
                "ACLs need a ZooKeeper store; the embedded stores (mem:, file:) have none".into(),
            ))
        }
    }

    /// Replaces a node's data if its version is `expected` (never -1); returns the new version.
    /// Sent only on the session and connection `planned`, those of the read the write was
    /// planned on ([`StoreError::PlanEnded`] otherwise; the embedded stores have none).
    fn set(
        &self,
        path: &str,
        data: &[u8],
        expected: i32,
        planned: ReadOn,
    ) -> impl Future<Output = Result<i32, StoreError>> + Send;

    /// Moves a node to a fresh incarnation: deletes it if its version is `expected` (never -1)
    /// and creates it again, in one transaction, holding `data` at version 0, with the ACL it
    /// had. Returns the new incarnation ([`Versioned::created`]) when the store says it. Refused for a node with
    /// children. The way past ZooKeeper's 32-bit data version (src/alloc/engine.rs). Sent only
    /// on the session and connection `planned`, as [`Store::set`].
    fn replace(
        &self,
        path: &str,
        data: &[u8],
        expected: i32,
        planned: ReadOn,
    ) -> impl Future<Output = Result<Option<i64>, StoreError>> + Send;

    /// The session generation and connection now, taken before a read a write is planned on
    /// (the embedded stores have none: `ReadOn::default()`, never refused). A store that wraps
    /// another passes its inner store's on.
    fn read_on(&self) -> ReadOn;

    /// Makes the next read of `path` see every write the store has committed (ZooKeeper `sync`).
    fn sync(&self, path: &str) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The names of a node's children, sorted.
    fn children(&self, path: &str) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;

    /// Deletes a node that has no children if its version is `expected`.
    fn delete(
        &self,
        path: &str,
        expected: i32,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Returns once the node is no longer at version `seen` (changed, deleted or recreated), or
    /// after `limit`, whichever is first. The default polls with backoff (for the embedded
    /// stores); ZooKeeper watches the node.
    fn wait_change(
        &self,
        path: &str,
        seen: i32,
        limit: Duration,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        async move {
            let until = tokio::time::Instant::now() + limit;
            let mut pause = Duration::from_millis(5);
            loop {
                match self.get(path).await {
                    Ok(node) if node.version == seen => {}
                    Ok(_) | Err(StoreError::NoNode) => return Ok(()),
                    Err(err) => return Err(err),
                }
                let now = tokio::time::Instant::now();
                if now >= until {
                    return Ok(());
                }
                tokio::time::sleep(pause.min(until - now)).await;
                pause = (pause * 2).min(Duration::from_millis(200));
            }
        }
    }
}

/// Any of zooid's stores, chosen by connect string.
#[allow(clippy::large_enum_variant)] // One per service; boxing would only add an indirection.
pub enum AnyStore {
    /// An Apache ZooKeeper ensemble.
    ZooKeeper(ZkStore),
    /// Process memory.
    Memory(MemoryStore),
    /// A local directory shared by the processes of one machine.
    File(FileStore),
}

impl AnyStore {
    /// Opens the store a connect string names:
    /// - `mem:` or `mem:NAME`: in-memory (a name shares one store within the process);
    /// - `file:DIR`: the embedded file store in directory `DIR`;
    /// - anything else: a ZooKeeper connect string, `host:port[,host:port...][/chroot]`.
    pub async fn open(connect: &str, options: &ConnectOptions) -> Result<Self> {
        if let Some(name) = connect.strip_prefix("mem:") {
            Ok(AnyStore::Memory(MemoryStore::named(name)))
        } else if let Some(dir) = connect.strip_prefix("file:") {
            Ok(AnyStore::File(FileStore::open(dir)?))
        } else {
            Ok(AnyStore::ZooKeeper(
                ZkStore::connect(connect, options).await?,
            ))
        }
    }

    /// The ZooKeeper session of a ZooKeeper store (the allocator's block layouts and the
    /// recipes run on it); `None` for the embedded stores.
    pub fn zookeeper(&self) -> Option<&crate::zk::Zk> {
        match self {
            AnyStore::ZooKeeper(zk) => Some(zk.zookeeper()),
            AnyStore::Memory(_) | AnyStore::File(_) => None,
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $store:ident => $call:expr) => {
        match $self {
            AnyStore::ZooKeeper($store) => $call.await,
            AnyStore::Memory($store) => $call.await,
            AnyStore::File($store) => $call.await,
        }
    };
}

impl Store for AnyStore {
    fn origin(&self) -> Option<Arc<str>> {
        match self {
            AnyStore::ZooKeeper(s) => s.origin(),
            AnyStore::Memory(s) => s.origin(),
            AnyStore::File(s) => s.origin(),
        }
    }
    async fn get(&self, path: &str) -> Result<Versioned, StoreError> {
        dispatch!(self, s => s.get(path))
    }
    async fn create(&self, path: &str, data: &[u8]) -> Result<(), StoreError> {
        dispatch!(self, s => s.create(path, data))
    }
    async fn create_with_acl(
        &self,
        path: &str,
        data: &[u8],
        acl: &[crate::zk::Acl],
    ) -> Result<(), StoreError> {
        dispatch!(self, s => s.create_with_acl(path, data, acl))
    }
    async fn set(
        &self,
        path: &str,
        data: &[u8],
        expected: i32,
        planned: ReadOn,
    ) -> Result<i32, StoreError> {
        dispatch!(self, s => s.set(path, data, expected, planned))
    }
    async fn replace(
        &self,
        path: &str,
        data: &[u8],
        expected: i32,
        planned: ReadOn,
    ) -> Result<Option<i64>, StoreError> {
        dispatch!(self, s => s.replace(path, data, expected, planned))
    }
    fn read_on(&self) -> ReadOn {
        match self {
            AnyStore::ZooKeeper(store) => store.read_on(),
            AnyStore::Memory(store) => store.read_on(),
            AnyStore::File(store) => store.read_on(),
        }
    }
    async fn sync(&self, path: &str) -> Result<(), StoreError> {
        dispatch!(self, s => s.sync(path))
    }
    async fn children(&self, path: &str) -> Result<Vec<String>, StoreError> {
        dispatch!(self, s => s.children(path))
    }
    async fn delete(&self, path: &str, expected: i32) -> Result<(), StoreError> {
        dispatch!(self, s => s.delete(path, expected))
    }
    async fn wait_change(&self, path: &str, seen: i32, limit: Duration) -> Result<(), StoreError> {
        dispatch!(self, s => s.wait_change(path, seen, limit))
    }
}

/// The parent of a path (`/a/b` -> `/a`), or `None` for top-level nodes.
pub(crate) fn parent(path: &str) -> Option<&str> {
    match path.rfind('/') {
        Some(0) | None => None,
        Some(i) => Some(&path[..i]),
    }
}
