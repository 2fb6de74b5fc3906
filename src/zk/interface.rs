//! The one interface between zooid and ZooKeeper: everything the library asks of the servers and
//! of its session, as one trait, [`ZooKeeper`].
//!
//! Every module above `zk` reaches ZooKeeper only through a [`Zk`] (an `Arc<dyn ZooKeeper>`):
//! the pool stores, the allocation strategies, the keeper and the recipes. [`Session`] is the
//! implementation on a real ensemble (src/zk/real.rs); the deterministic simulation
//! (tests/sim) is the second one. So the types here are zooid's own (or plain data, like
//! [`Stat`]), never a client library's handle.
//!
//! Every request names the *session generation* it belongs to ([`SessionStatus::generation`]):
//! a plan made on one session is never carried out on the next one by accident. A request of a
//! generation that is no longer the current one is not sent; it fails with
//! [`Verdict::Closed`]. Each request is bounded by [`ZooKeeper::request_limit`] (no reply in
//! time is [`Verdict::Unknown`]), and one that finds its session gone reports that generation
//! lost, so the caller's next request runs on a new session.
//!
//! A write planned on a read ([`ZooKeeper::set`], [`ZooKeeper::multi`]) also names the
//! connection of that read ([`WriteOn`], from the read's [`ReadOn`]): the implementation writes it
//! on that connection only, checked where the request is written, and fails it unsent with
//! [`Verdict::NotSent`] once the session has reconnected, whether or not the session layer has
//! noticed yet (docs/DESIGN.md, rule 2).
//!
//! [`Session`]: super::Session

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use tokio::sync::watch;
use tokio::time::Instant;

use super::acl::Acl;
use super::catch_up::CatchUp;
pub use super::classify::Failure;
use super::classify::Verdict;
use super::fate::{Confirmed, InDoubt};
use super::options::{ConnectOptions, ServerVersion};
use super::status::{ReadOn, SessionStatus, WriteOn};
use crate::error::Result;

/// A node's metadata, as the servers report it (zxids, versions, owner, sizes).
pub use zookeeper_client::Stat;

/// The handle every part of zooid holds: one session (or one simulated session), shared.
pub type Zk = Arc<dyn ZooKeeper>;

/// What a request returns: its result, or why it failed.
pub type Reply<'a, T> = BoxFuture<'a, std::result::Result<T, Failure>>;

/// How a node is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Stays until deleted.
    Persistent,
    /// Deleted when the creating session ends.
    Ephemeral,
    /// Persistent, with a 10-digit sequence number appended (the parent's child version).
    PersistentSequential,
    /// Ephemeral, with a sequence number appended.
    EphemeralSequential,
}

impl Mode {
    /// Whether the servers append a sequence number to the name.
    pub fn is_sequential(self) -> bool {
        matches!(self, Mode::PersistentSequential | Mode::EphemeralSequential)
    }

    /// Whether the node ends with its session.
    pub fn is_ephemeral(self) -> bool {
        matches!(self, Mode::Ephemeral | Mode::EphemeralSequential)
    }
}

/// A create: how, and with which ACL (`None`: the session's default,
/// [`ZooKeeper::default_acl`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Create {
    /// Persistent or ephemeral, sequential or not.
    pub mode: Mode,
    /// The node's ACL; `None` for the session's default.
    pub acl: Option<Vec<Acl>>,
}

impl Create {
    /// A create in `mode` with the session's default ACL.
    pub fn new(mode: Mode) -> Self {
        Self { mode, acl: None }
    }

    /// A persistent node with the session's default ACL.
    pub fn persistent() -> Self {
        Self::new(Mode::Persistent)
    }

    /// An ephemeral node with the session's default ACL.
    pub fn ephemeral() -> Self {
        Self::new(Mode::Ephemeral)
    }

    /// The same create with `acl` on the node.
    pub fn with_acl(mut self, acl: Vec<Acl>) -> Self {
        self.acl = Some(acl);
        self
    }
}

/// One op of a `multi`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Checks that `path` is at data version `version`.
    Check {
        /// The node.
        path: String,
        /// Its expected data version.
        version: i32,
    },
    /// Creates `path` holding `data`.
    Create {
        /// The node (for a sequential create, the prefix of its name).
        path: String,
        /// Its content.
        data: Vec<u8>,
        /// How, and with which ACL.
        create: Create,
    },
    /// Replaces `path`'s data if it is at `expected` (`None`: any version).
    Set {
        /// The node.
        path: String,
        /// Its new content.
        data: Vec<u8>,
        /// Its expected data version.
        expected: Option<i32>,
    },
    /// Deletes `path` if it is at `expected` (`None`: any version).
    Delete {
        /// The node.
        path: String,
        /// Its expected data version.
        expected: Option<i32>,
    },
}

/// What one op of a committed `multi` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpResult {
    /// A check passed.
    Check,
    /// A node was created at `path` (with its sequence number, for a sequential create).
    Create {
        /// The created node's path.
        path: String,
        /// Its metadata, where the servers say it (3.5 and later; some releases do not).
        stat: Option<Stat>,
    },
    /// A node's data was replaced; its new metadata.
    Set {
        /// The node's metadata after the write.
        stat: Stat,
    },
    /// A node was deleted.
    Delete,
}

/// Why a `multi` failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiFailed {
    /// The index of the op that failed, counted from 0 in the order the ops were added; `None`
    /// when the request as a whole failed (no reply in time, connection loss, session gone).
    pub index: Option<usize>,
    /// What the servers (or the client) said.
    pub failure: Failure,
}

impl MultiFailed {
    /// What the error says. A failed op means the servers answered and nothing of the `multi`
    /// applied.
    pub fn verdict(&self) -> Verdict {
        self.failure.verdict
    }

    /// What op `index` failed with, if it is the one that failed.
    pub fn at(&self, index: usize) -> Option<Verdict> {
        (self.index == Some(index)).then(|| self.verdict())
    }
}

impl std::fmt::Display for MultiFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.index {
            Some(index) => write!(f, "op {index} of the multi failed: {}", self.failure),
            None => self.failure.fmt(f),
        }
    }
}

/// What a watch saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// The watched node was created.
    Created,
    /// The watched node was deleted.
    Deleted,
    /// The watched node's data changed.
    DataChanged,
    /// A child of the watched node was created or deleted.
    ChildrenChanged,
    /// The watch ended without seeing a change of the node: its session was lost or closed
    /// (look again on the next session).
    Session,
}

/// One watch notification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// What happened.
    pub kind: EventKind,
    /// The node it happened to (empty for [`EventKind::Session`]).
    pub path: String,
}

/// A one-shot watch: fires once, on the first change of what was read, or when its session
/// ends.
pub struct Watch(BoxFuture<'static, Event>);

impl Watch {
    /// A watch that fires when `fired` completes.
    pub fn new(fired: BoxFuture<'static, Event>) -> Self {
        Self(fired)
    }

    /// Waits for the notification.
    pub async fn changed(self) -> Event {
        self.0.await
    }
}

/// A persistent recursive watch on a subtree: every change below its root, until its session
/// ends (then it reports [`EventKind::Session`] for ever).
pub struct TreeWatch(Box<dyn FnMut() -> BoxFuture<'static, Event> + Send>);

impl TreeWatch {
    /// A watch whose next notification each call of `next` returns.
    pub fn new(next: impl FnMut() -> BoxFuture<'static, Event> + Send + 'static) -> Self {
        Self(Box::new(next))
    }

    /// Waits for the next notification.
    pub async fn changed(&mut self) -> Event {
        (self.0)().await
    }
}

/// A handle on a session that does not keep it open: [`WeakZk::upgrade`] gives the session while
/// the application still holds it.
#[derive(Clone)]
pub struct WeakZk(Arc<dyn Fn() -> Option<Zk> + Send + Sync>);

impl WeakZk {
    /// A weak handle whose upgrade is `upgrade`.
    pub fn new(upgrade: impl Fn() -> Option<Zk> + Send + Sync + 'static) -> Self {
        Self(Arc::new(upgrade))
    }

    /// The session, while a strong handle on it is alive.
    pub fn upgrade(&self) -> Option<Zk> {
        (self.0)()
    }
}

/// Everything zooid asks of ZooKeeper: its session (state, generations, the servers' word on a
/// given-up one) and its requests, each on a named session generation.
pub trait ZooKeeper: Send + Sync + 'static {
    // ----- The session -----

    /// The latest status of the session: its state and generation.
    fn status(&self) -> SessionStatus;

    /// A receiver of every status change (the latest one is always delivered).
    fn subscribe(&self) -> watch::Receiver<SessionStatus>;

    /// How long one request may go unanswered before it counts as lost.
    fn request_limit(&self) -> Duration;

    /// The connect string (names the ensemble in messages).
    fn connect_string(&self) -> &str;

    /// The options the session was opened with (its identity names a refusal by an ACL).
    fn options(&self) -> &ConnectOptions;

    /// The servers' release the requests suit (never `Detect`).
    fn server_version(&self) -> ServerVersion;

    /// The ACL a node gets when its create names none.
    fn default_acl(&self) -> Vec<Acl>;

    /// How many session generations were given up so far.
    fn losses(&self) -> u64;

    /// Whether the servers have persistent watches (ZooKeeper 3.6 and later).
    fn persistent_watches(&self) -> BoxFuture<'_, Result<bool>>;

    /// Waits until the session is connected, for at most `timeout`.
    fn wait_connected(&self, timeout: Duration) -> BoxFuture<'_, Result<SessionStatus>>;

    /// Tells the session layer that a request of `generation` found its session gone; returns
    /// once a newer generation is in place (or its opening failed for now).
    fn report_lost<'a>(&'a self, generation: u64, why: &'a str) -> BoxFuture<'a, ()>;

    /// Waits, until `deadline`, for the servers' word that no request of `generation` can apply
    /// any more (src/zk/fate.rs).
    fn confirm_gone(
        &self,
        generation: u64,
        deadline: Instant,
    ) -> BoxFuture<'_, std::result::Result<Confirmed, InDoubt>>;

    /// Holds the session's lease through the quorum while the guard lives (see
    /// [`Session::hold_lease`](super::Session::hold_lease)). Sessions without one (the
    /// simulator's, whose `stop_acting` follows the connection alone) give a guard that holds
    /// nothing.
    fn hold_lease(&self) -> BoxFuture<'_, crate::error::Result<super::LeaseGuard>> {
        async { Ok(super::LeaseGuard::none()) }.boxed()
    }

    /// Resolves once the last handle of the session is dropped: a background task that must not
    /// keep the session open selects on it.
    fn ended(&self) -> BoxFuture<'static, ()>;

    /// A handle that does not keep the session open (for background tasks).
    fn downgrade(&self) -> WeakZk;

    /// The tokio runtime the session lives on, where background work of a handle dropped
    /// anywhere (a plain thread, a runtime of the caller's that shuts down first) is spawned
    /// ([`spawn_background`]), so that it runs while the session does. The default is the
    /// calling thread's runtime, if any: for sessions that run on their caller's runtime (the
    /// simulator's).
    fn runtime(&self) -> Option<tokio::runtime::Handle> {
        tokio::runtime::Handle::try_current().ok()
    }

    /// Releases this handle; when it is the last one, closes the session and resolves once the
    /// servers answered the close (its ephemeral nodes are gone).
    fn close(self: Arc<Self>) -> BoxFuture<'static, ()>;

    /// Whether `generation` is given up: replaced, lost or closed.
    fn is_gone_generation(&self, generation: u64) -> bool {
        let status = self.status();
        status.generation != generation
            || matches!(
                status.state,
                super::ConnectionState::Lost | super::ConnectionState::Closed
            )
    }

    // ----- Reads -----
    //
    // Every read is caught up first: the first read of each connection sends a `sync` and waits
    // for it (src/zk/catch_up.rs). The provided methods do it; an implementation supplies the
    // `served_*` requests, sent as they are to the connected server, and the [`CatchUp`] state.

    /// The record of which connection was caught up last (one per session handle).
    fn catch_up(&self) -> &CatchUp;

    /// A node's data and metadata.
    fn get<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, (Vec<u8>, Stat)> {
        async move {
            caught_up(self, generation, path).await?;
            self.served_get(generation, path).await
        }
        .boxed()
    }

    /// A node's metadata, `None` if it does not exist.
    fn exists<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, Option<Stat>> {
        async move {
            caught_up(self, generation, path).await?;
            self.served_exists(generation, path).await
        }
        .boxed()
    }

    /// [`ZooKeeper::exists`] sent when called, before the returned future is first polled (which
    /// owns what it needs): a check sent ahead of a write is answered before the write's reply
    /// (a session's requests are answered in order), while the caller awaits it elsewhere. The
    /// one read not caught up (it cannot wait for a `sync` before it is sent): it is for checking
    /// what an earlier read of the session saw, and the session never reads older than that.
    fn exists_now(&self, generation: u64, path: &str) -> Reply<'static, Option<Stat>>;

    /// A node's children's names (unsorted) and its metadata (with its child version).
    fn children<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, (Vec<String>, Stat)> {
        async move {
            caught_up(self, generation, path).await?;
            self.served_children(generation, path).await
        }
        .boxed()
    }

    /// A node's ACL.
    fn get_acl<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, Vec<Acl>> {
        async move {
            caught_up(self, generation, path).await?;
            self.served_get_acl(generation, path).await
        }
        .boxed()
    }

    /// [`ZooKeeper::get`] with a watch on the node's data and existence.
    fn get_watched<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
    ) -> Reply<'a, (Vec<u8>, Stat, Watch)> {
        async move {
            caught_up(self, generation, path).await?;
            self.served_get_watched(generation, path).await
        }
        .boxed()
    }

    /// [`ZooKeeper::exists`] with a watch on the node's creation, data and deletion.
    fn exists_watched<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
    ) -> Reply<'a, (Option<Stat>, Watch)> {
        async move {
            caught_up(self, generation, path).await?;
            self.served_exists_watched(generation, path).await
        }
        .boxed()
    }

    /// [`ZooKeeper::children`] with a watch on the node's children (and its deletion).
    fn children_watched<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
    ) -> Reply<'a, (Vec<String>, Stat, Watch)> {
        async move {
            caught_up(self, generation, path).await?;
            self.served_children_watched(generation, path).await
        }
        .boxed()
    }

    /// [`ZooKeeper::get`] as the connected server answers it (no catch-up).
    fn served_get<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, (Vec<u8>, Stat)>;

    /// [`ZooKeeper::exists`] as the connected server answers it (no catch-up).
    fn served_exists<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, Option<Stat>>;

    /// [`ZooKeeper::children`] as the connected server answers it (no catch-up).
    fn served_children<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
    ) -> Reply<'a, (Vec<String>, Stat)>;

    /// [`ZooKeeper::get_acl`] as the connected server answers it (no catch-up).
    fn served_get_acl<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, Vec<Acl>>;

    /// [`ZooKeeper::get_watched`] as the connected server answers it (no catch-up).
    fn served_get_watched<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
    ) -> Reply<'a, (Vec<u8>, Stat, Watch)>;

    /// [`ZooKeeper::exists_watched`] as the connected server answers it (no catch-up).
    fn served_exists_watched<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
    ) -> Reply<'a, (Option<Stat>, Watch)>;

    /// [`ZooKeeper::children_watched`] as the connected server answers it (no catch-up).
    fn served_children_watched<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
    ) -> Reply<'a, (Vec<String>, Stat, Watch)>;

    /// A persistent recursive watch on the subtree at `path` (ZooKeeper 3.6 and later).
    fn watch_tree<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, TreeWatch>;

    /// Makes the next read of `path` on this session see every write committed before.
    fn sync<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, ()>;

    // ----- Writes -----

    /// Creates `path` holding `data`; returns the created path (with its sequence number for a
    /// sequential create) and, where the servers say it (3.5 and later), its metadata.
    fn create<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
        data: &'a [u8],
        create: &'a Create,
    ) -> Reply<'a, (String, Option<Stat>)>;

    /// Creates `path` and every missing parent as empty persistent nodes with `acl` (`None`:
    /// the default); an existing node is left alone.
    fn create_all<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
        acl: Option<&'a [Acl]>,
    ) -> Reply<'a, ()>;

    /// Replaces `path`'s data if it is at `expected` (`None`: any version); its new metadata.
    /// Bound to a connection (`on.connection`), it is written on that connection only, else it
    /// fails unsent with [`Verdict::NotSent`].
    fn set<'a>(
        &'a self,
        on: WriteOn,
        path: &'a str,
        data: &'a [u8],
        expected: Option<i32>,
    ) -> Reply<'a, Stat>;

    /// Deletes `path` (which has no children) if it is at `expected` (`None`: any version).
    fn delete<'a>(&'a self, generation: u64, path: &'a str, expected: Option<i32>)
        -> Reply<'a, ()>;

    /// [`ZooKeeper::delete`] sent when called; the returned future holds no handle on the
    /// session (it owns only the reply to come), so a background delete never keeps a session
    /// open that the application closes. Bounded by the request limit; a session found gone is
    /// not reported (nothing is left to replace it for).
    fn delete_now(&self, generation: u64, path: &str, expected: Option<i32>) -> Reply<'static, ()>;

    /// Applies `ops` as one transaction: all of them, or none. Bound to a connection
    /// (`on.connection`), it is written on that connection only, else it fails unsent with
    /// [`Verdict::NotSent`] (`index: None`).
    fn multi(
        &self,
        on: WriteOn,
        ops: Vec<Op>,
    ) -> BoxFuture<'_, std::result::Result<Vec<OpResult>, MultiFailed>>;
}

/// Sends a `sync` of `path` on `generation` unless one was answered on the current connection
/// of that generation already (src/zk/catch_up.rs): what every read of the trait does first.
async fn caught_up<Z: ZooKeeper + ?Sized>(
    zk: &Z,
    generation: u64,
    path: &str,
) -> std::result::Result<(), Failure> {
    let at = (generation, zk.status().connection);
    if zk.catch_up().is_synced(at) {
        return Ok(());
    }
    zk.sync(generation, path).await?;
    zk.catch_up().synced(at);
    Ok(())
}

impl<Z: ZooKeeper + ?Sized> ZooKeeperExt for Z {}

/// Spawns `task` on the runtime `zk`'s session lives on ([`ZooKeeper::runtime`]), wherever this
/// is called from: the background cleanup of a handle dropped on a plain thread or in another
/// runtime. `false` when the session names no runtime and none is current, or in a process
/// forked from the one that opened the session (the parent's runtime and session: nothing is
/// spawned).
pub(crate) fn spawn_background(
    zk: &(impl ZooKeeper + ?Sized),
    task: impl std::future::Future<Output = ()> + Send + 'static,
) -> bool {
    if crate::runtime::refuse_in_forked_child().is_err() {
        return false;
    }
    let Some(runtime) = zk.runtime() else {
        return false;
    };
    // On a runtime already shut down the task is dropped unrun (its session went with it).
    drop(runtime.spawn(task));
    true
}

/// Conveniences on every [`ZooKeeper`].
pub trait ZooKeeperExt: ZooKeeper {
    /// The current session generation (requests named with it go to the live session).
    fn generation(&self) -> u64 {
        self.status().generation
    }

    /// The session generation and connection now (taken before a read a write is planned on).
    fn read_on(&self) -> ReadOn {
        self.status().into()
    }

    /// Whether the session still runs on the generation and connection `read`, connected, as far
    /// as the session layer knows: a check before a write's preparation (a write planned on
    /// `read` is also bound to its connection, [`WriteOn`], which the session implementation
    /// enforces where the request is written, however late this status is).
    fn still_on(&self, read: ReadOn) -> bool {
        let status = self.status();
        ReadOn::from(status) == read && status.state == super::ConnectionState::Connected
    }
}
