//! [`Flaky`]: a session of the simulated world with faults forced on the requests a scenario
//! names, and [`Gate`], a process paused at one request.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use tokio::sync::{watch, Notify};
use tokio::time::Instant;
use zooid::error::Result;
use zooid::zk::catch_up::CatchUp;
use zooid::zk::{
    Acl, Confirmed, ConnectOptions, Create, Failure, InDoubt, MultiFailed, Op, OpResult, Reply,
    ServerVersion, SessionStatus, Stat, TreeWatch, Verdict, Watch, WeakZk, WriteOn, Zk, ZooKeeper,
};

/// A pause of the first request it matches: the request waits, after `entered` is notified,
/// until `release` is.
pub struct Gate {
    armed: AtomicBool,
    /// Matching requests let through before the one paused.
    skip: AtomicUsize,
    pub entered: Notify,
    pub release: Notify,
}

impl Gate {
    /// A gate that pauses the first request it matches.
    pub fn armed() -> Arc<Self> {
        Self::after(0)
    }

    /// A gate that lets `skip` matching requests through and pauses the next one.
    pub fn after(skip: usize) -> Arc<Self> {
        Arc::new(Self {
            armed: AtomicBool::new(true),
            skip: AtomicUsize::new(skip),
            entered: Notify::new(),
            release: Notify::new(),
        })
    }

    /// A gate that lets every matching request through until [`Gate::arm`]ed.
    pub fn disarmed() -> Arc<Self> {
        let gate = Self::after(0);
        gate.armed.store(false, Ordering::SeqCst);
        gate
    }

    /// From now on, pauses the next matching request.
    pub fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }

    /// True once, for the first matching request after the skipped ones.
    fn trips(&self) -> bool {
        let skipped = self
            .skip
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        !skipped && self.armed.swap(false, Ordering::SeqCst)
    }

    /// The paused request: says it entered, waits to be released.
    async fn pause(&self) {
        self.entered.notify_one();
        self.release.notified().await;
    }
}

/// The reply of a `multi` that applied (`applied`, checked: a guard of the scenario), lost.
fn reply_lost(applied: std::result::Result<Vec<OpResult>, MultiFailed>, what: &str) -> MultiFailed {
    assert!(applied.is_ok(), "guard: the {what} applied: {applied:?}");
    MultiFailed {
        index: None,
        failure: Failure::new(Verdict::Unknown, "injected: reply lost"),
    }
}

/// A node's data and metadata as a lagging server still has them (`None` once caught up).
pub type OldCopy = std::sync::Mutex<Option<(Vec<u8>, Stat)>>;

/// A session of the simulated world that forces, on the requests named, each fault set:
/// everything else goes to the simulated session as it is.
pub struct Flaky {
    inner: Zk,
    /// Itself, when made by [`Flaky::into_zk`]: its weak handles upgrade to it, so background
    /// tasks (the pool watch) go through its faults too.
    myself: std::sync::OnceLock<std::sync::Weak<Flaky>>,
    /// Reads of this path fail as a connection loss while the flag is set.
    pub fail_reads: Option<(String, Arc<AtomicBool>)>,
    /// While set, the servers refuse every `multi` and every `create` (not authorized, nothing
    /// applied).
    pub refuse_writes: Arc<AtomicBool>,
    /// The first `get_acl` of this path is paused at the gate (a process paused there).
    pub pause_acl: Option<(String, Arc<Gate>)>,
    /// The first `multi` that creates a child of this parent applies; its reply is held at the
    /// gate, then lost (a connection loss).
    pub hold_claim: Option<(String, Arc<Gate>)>,
    /// The first `create` (not in a `multi`) of a child of this parent applies; its reply is
    /// held at the gate, then lost (a connection loss).
    pub hold_create: Option<(String, Arc<Gate>)>,
    /// While its flag is set, a `multi` with an op on a child of one of these parents fails at
    /// that op with `NoNode`, nothing applied (as if something deleted the parent each time).
    pub orphan_under: Vec<(String, Arc<AtomicBool>)>,
    /// The same for a `create` (not in a `multi`) of a child of one of these parents.
    pub orphan_creates_under: Vec<(String, Arc<AtomicBool>)>,
    /// The first listing of the children of this node is answered, then the process pauses at
    /// the gate before it sees the answer (a process paused after a read).
    pub pause_listing: Option<(String, Arc<Gate>)>,
    /// While set, the first `multi` that sets this node applies and its reply is lost (a
    /// connection loss); the flag is cleared then.
    pub lose_set: Option<(String, Arc<AtomicBool>)>,
    /// Reads of this path are answered from this old copy of the node, as a server that has
    /// not applied the writes since answers them, until the session sends a `sync`.
    pub behind: Option<(String, OldCopy)>,
    /// The first `get` of this node (after those its gate skips) is answered, then the process
    /// pauses at the gate before it sees the answer (a process paused after a read).
    pub pause_get: Option<(String, Arc<Gate>)>,
    /// The first `get` of this node (after those its gate skips) pauses at the gate before it
    /// is sent (a read whose `sync` is slow to come back), then goes on.
    pub delay_get: Option<(String, Arc<Gate>)>,
    /// The first `multi` that checks this node's version applies; its reply is held at the
    /// gate, then delivered as it came (a process paused after it confirmed what it read).
    pub hold_check: Option<(String, Arc<Gate>)>,
    /// The session generation of every `multi` that sets this node, in the order sent (whatever
    /// its outcome): a scenario's proof that a write was sent, and on which session.
    pub sets_sent: Option<(String, Arc<std::sync::Mutex<Vec<u64>>>)>,
    /// The first `multi` that creates a child of this parent pauses at the gate before it is
    /// sent (a process paused just before its write), then goes on the session generation it
    /// was given.
    pub pause_write_under: Option<(String, Arc<Gate>)>,
    /// The first `set` (not in a `multi`) of a node whose path starts with this prefix
    /// applies; its reply is held at the gate, then delivered as it came (a process paused
    /// after a write, such as the seal of a block generation).
    pub hold_set: Option<(String, Arc<Gate>)>,
    /// The first `multi` that sets this node pauses at the gate before it is sent (a process
    /// paused just before its pool write), then goes on the session generation it was given.
    pub pause_set: Option<(String, Arc<Gate>)>,
    /// The first `multi` that creates a child of this parent is sent, its reply lost at once
    /// (a connection loss), and it is served only when the gate is released (a request that
    /// lands late, after the process resolved it as not yet applied).
    pub late_under: Option<(String, Arc<Gate>)>,
    /// The first `create` (not in a `multi`) of a child of this parent is sent, its reply lost
    /// at once (a connection loss), and it is served only when the gate is released (a create
    /// that lands late).
    pub late_create_under: Option<(String, Arc<Gate>)>,
    /// While its flag is set, a `multi` with a create of a child of this parent is refused at
    /// that op (`NotAuthorized`, nothing applied: an ACL being changed), and counted.
    pub refuse_creates_under: Option<(String, Arc<AtomicBool>, Arc<AtomicUsize>)>,
    /// Watches set on this node by `exists` never fire (a process that has not heard of a
    /// change yet). Only for a session made by [`Flaky::into_zk`].
    pub deaf_to: Option<String>,
}

impl Flaky {
    /// `inner` with no fault set.
    pub fn over(inner: Zk) -> Self {
        Self {
            inner,
            myself: std::sync::OnceLock::new(),
            fail_reads: None,
            refuse_writes: Arc::new(AtomicBool::new(false)),
            pause_acl: None,
            hold_claim: None,
            hold_create: None,
            orphan_under: Vec::new(),
            orphan_creates_under: Vec::new(),
            pause_listing: None,
            lose_set: None,
            behind: None,
            pause_get: None,
            delay_get: None,
            hold_check: None,
            sets_sent: None,
            pause_write_under: None,
            hold_set: None,
            pause_set: None,
            late_under: None,
            late_create_under: None,
            refuse_creates_under: None,
            deaf_to: None,
        }
    }

    /// The session, its weak handles upgrading to itself (see `myself`).
    pub fn into_zk(self) -> Zk {
        Arc::new_cyclic(|me: &std::sync::Weak<Flaky>| {
            let _ = self.myself.set(me.clone());
            self
        })
    }

    fn blocked(&self, path: &str) -> bool {
        self.fail_reads
            .as_ref()
            .is_some_and(|(failing, on)| failing == path && on.load(Ordering::SeqCst))
    }
}

/// Whether a write of `path` finds its parent gone: it lies under one of `parents` whose flag
/// is set ([`Flaky::orphan_under`]).
fn orphaned(parents: &[(String, Arc<AtomicBool>)], path: &str) -> bool {
    parents
        .iter()
        .any(|(parent, on)| on.load(Ordering::SeqCst) && path.starts_with(&format!("{parent}/")))
}

fn lost<'a, T: Send + 'a>() -> Reply<'a, T> {
    async { Err(Failure::new(Verdict::Unknown, "injected: connection loss")) }.boxed()
}

impl ZooKeeper for Flaky {
    fn status(&self) -> SessionStatus {
        self.inner.status()
    }
    fn subscribe(&self) -> watch::Receiver<SessionStatus> {
        self.inner.subscribe()
    }
    fn request_limit(&self) -> Duration {
        self.inner.request_limit()
    }
    fn connect_string(&self) -> &str {
        self.inner.connect_string()
    }
    fn options(&self) -> &ConnectOptions {
        self.inner.options()
    }
    fn server_version(&self) -> ServerVersion {
        self.inner.server_version()
    }
    fn default_acl(&self) -> Vec<Acl> {
        self.inner.default_acl()
    }
    fn losses(&self) -> u64 {
        self.inner.losses()
    }
    fn persistent_watches(&self) -> BoxFuture<'_, Result<bool>> {
        self.inner.persistent_watches()
    }
    fn wait_connected(&self, timeout: Duration) -> BoxFuture<'_, Result<SessionStatus>> {
        self.inner.wait_connected(timeout)
    }
    fn report_lost<'a>(&'a self, generation: u64, why: &'a str) -> BoxFuture<'a, ()> {
        self.inner.report_lost(generation, why)
    }
    fn confirm_gone(
        &self,
        generation: u64,
        deadline: Instant,
    ) -> BoxFuture<'_, std::result::Result<Confirmed, InDoubt>> {
        self.inner.confirm_gone(generation, deadline)
    }
    fn ended(&self) -> BoxFuture<'static, ()> {
        self.inner.ended()
    }
    fn downgrade(&self) -> WeakZk {
        match self.myself.get() {
            Some(me) => {
                let me = me.clone();
                WeakZk::new(move || me.upgrade().map(|flaky| flaky as Zk))
            }
            None => self.inner.downgrade(),
        }
    }
    fn close(self: Arc<Self>) -> BoxFuture<'static, ()> {
        self.inner.clone().close()
    }
    fn catch_up(&self) -> &CatchUp {
        self.inner.catch_up()
    }
    fn served_get<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, (Vec<u8>, Stat)> {
        if self.blocked(path) {
            return lost();
        }
        if let Some((lagging, copy)) = &self.behind {
            if lagging == path {
                if let Some(old) = copy.lock().unwrap().clone() {
                    return async move { Ok(old) }.boxed();
                }
            }
        }
        if let Some((delayed, gate)) = &self.delay_get {
            if delayed == path && gate.trips() {
                return async move {
                    gate.pause().await;
                    self.inner.served_get(generation, path).await
                }
                .boxed();
            }
        }
        if let Some((paused, gate)) = &self.pause_get {
            if paused == path && gate.trips() {
                return async move {
                    let got = self.inner.served_get(generation, path).await;
                    gate.pause().await;
                    got
                }
                .boxed();
            }
        }
        self.inner.served_get(generation, path)
    }
    fn served_exists<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, Option<Stat>> {
        if self.blocked(path) {
            return lost();
        }
        self.inner.served_exists(generation, path)
    }
    fn exists_now(&self, generation: u64, path: &str) -> Reply<'static, Option<Stat>> {
        if self.blocked(path) {
            return lost();
        }
        self.inner.exists_now(generation, path)
    }
    fn served_children<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
    ) -> Reply<'a, (Vec<String>, Stat)> {
        if self.blocked(path) {
            return lost();
        }
        if let Some((paused, gate)) = &self.pause_listing {
            if paused == path && gate.trips() {
                return async move {
                    let listed = self.inner.served_children(generation, path).await;
                    gate.pause().await;
                    listed
                }
                .boxed();
            }
        }
        self.inner.served_children(generation, path)
    }
    fn served_get_acl<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, Vec<Acl>> {
        if let Some((paused, gate)) = &self.pause_acl {
            if paused == path && gate.trips() {
                return async move {
                    gate.pause().await;
                    self.inner.served_get_acl(generation, path).await
                }
                .boxed();
            }
        }
        self.inner.served_get_acl(generation, path)
    }
    fn served_get_watched<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
    ) -> Reply<'a, (Vec<u8>, Stat, Watch)> {
        self.inner.served_get_watched(generation, path)
    }
    fn served_exists_watched<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
    ) -> Reply<'a, (Option<Stat>, Watch)> {
        if self.deaf_to.as_deref() == Some(path) {
            return async move {
                let (stat, _) = self.inner.served_exists_watched(generation, path).await?;
                Ok((stat, Watch::new(futures_util::future::pending().boxed())))
            }
            .boxed();
        }
        self.inner.served_exists_watched(generation, path)
    }
    fn served_children_watched<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
    ) -> Reply<'a, (Vec<String>, Stat, Watch)> {
        if self.blocked(path) {
            return lost();
        }
        if let Some((paused, gate)) = &self.pause_listing {
            if paused == path && gate.trips() {
                return async move {
                    let listed = self.inner.served_children_watched(generation, path).await;
                    gate.pause().await;
                    listed
                }
                .boxed();
            }
        }
        self.inner.served_children_watched(generation, path)
    }
    fn watch_tree<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, TreeWatch> {
        self.inner.watch_tree(generation, path)
    }
    fn sync<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, ()> {
        async move {
            self.inner.sync(generation, path).await?;
            if let Some((_, copy)) = &self.behind {
                copy.lock().unwrap().take(); // The server caught up.
            }
            Ok(())
        }
        .boxed()
    }
    fn create<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
        data: &'a [u8],
        create: &'a Create,
    ) -> Reply<'a, (String, Option<Stat>)> {
        let refused = if self.refuse_writes.load(Ordering::SeqCst) {
            Some(Failure::new(Verdict::NotAuthorized, "injected: refused"))
        } else if orphaned(&self.orphan_creates_under, path) {
            Some(Failure::new(Verdict::NoNode, "injected: parent gone"))
        } else {
            None
        };
        if let Some(failure) = refused {
            // After a round trip, as the servers' refusal comes.
            return async {
                tokio::time::sleep(Duration::from_millis(2)).await;
                Err(failure)
            }
            .boxed();
        }
        if let Some((parent, gate)) = &self.hold_create {
            if path.starts_with(&format!("{parent}/")) && gate.trips() {
                return async move {
                    let applied = self.inner.create(generation, path, data, create).await;
                    assert!(
                        applied.is_ok(),
                        "guard: the held create applied: {applied:?}"
                    );
                    gate.pause().await;
                    Err(Failure::new(Verdict::Unknown, "injected: reply lost"))
                }
                .boxed();
            }
        }
        if let Some((parent, gate)) = &self.late_create_under {
            if path.starts_with(&format!("{parent}/")) && gate.trips() {
                let inner = self.inner.clone();
                let gate = gate.clone();
                let (path, data, create) = (path.to_string(), data.to_vec(), create.clone());
                tokio::spawn(async move {
                    gate.pause().await;
                    // Its outcome is the scenario's to check.
                    let _ = inner.create(generation, &path, &data, &create).await;
                });
                return async { Err(Failure::new(Verdict::Unknown, "injected: reply lost")) }
                    .boxed();
            }
        }
        self.inner.create(generation, path, data, create)
    }
    fn create_all<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
        acl: Option<&'a [Acl]>,
    ) -> Reply<'a, ()> {
        self.inner.create_all(generation, path, acl)
    }
    fn set<'a>(
        &'a self,
        on: WriteOn,
        path: &'a str,
        data: &'a [u8],
        expected: Option<i32>,
    ) -> Reply<'a, Stat> {
        if let Some((prefix, gate)) = &self.hold_set {
            if path.starts_with(prefix.as_str()) && gate.trips() {
                return async move {
                    let applied = self.inner.set(on, path, data, expected).await;
                    gate.pause().await;
                    applied
                }
                .boxed();
            }
        }
        self.inner.set(on, path, data, expected)
    }
    fn delete<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
        expected: Option<i32>,
    ) -> Reply<'a, ()> {
        self.inner.delete(generation, path, expected)
    }
    fn delete_now(&self, generation: u64, path: &str, expected: Option<i32>) -> Reply<'static, ()> {
        self.inner.delete_now(generation, path, expected)
    }
    fn multi(
        &self,
        on: WriteOn,
        ops: Vec<Op>,
    ) -> BoxFuture<'_, std::result::Result<Vec<OpResult>, MultiFailed>> {
        let generation = on.generation;
        if let Some((target, sent)) = &self.sets_sent {
            if ops
                .iter()
                .any(|op| matches!(op, Op::Set { path, .. } if path == target))
            {
                sent.lock().unwrap().push(generation);
            }
        }
        if let Some((target, gate)) = &self.pause_set {
            let sets = ops
                .iter()
                .any(|op| matches!(op, Op::Set { path, .. } if path == target));
            if sets && gate.trips() {
                return async move {
                    gate.pause().await;
                    self.inner.multi(on, ops).await
                }
                .boxed();
            }
        }
        if let Some((parent, gate)) = &self.pause_write_under {
            let prefix = format!("{parent}/");
            let writes = ops
                .iter()
                .any(|op| matches!(op, Op::Create { path, .. } if path.starts_with(&prefix)));
            if writes && gate.trips() {
                return async move {
                    gate.pause().await;
                    self.inner.multi(on, ops).await
                }
                .boxed();
            }
        }
        if let Some((parent, gate)) = &self.late_under {
            let prefix = format!("{parent}/");
            let creates = ops
                .iter()
                .any(|op| matches!(op, Op::Create { path, .. } if path.starts_with(&prefix)));
            if creates && gate.trips() {
                let inner = self.inner.clone();
                let gate = gate.clone();
                tokio::spawn(async move {
                    gate.pause().await;
                    let _ = inner.multi(on, ops).await; // Its outcome is the scenario's to check.
                });
                return async {
                    Err(MultiFailed {
                        index: None,
                        failure: Failure::new(Verdict::Unknown, "injected: reply lost"),
                    })
                }
                .boxed();
            }
        }
        if let Some((parent, on_flag, refused)) = &self.refuse_creates_under {
            let prefix = format!("{parent}/");
            let index = ops
                .iter()
                .position(|op| matches!(op, Op::Create { path, .. } if path.starts_with(&prefix)));
            if let Some(index) = index.filter(|_| on_flag.load(Ordering::SeqCst)) {
                refused.fetch_add(1, Ordering::SeqCst);
                return async move {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    Err(MultiFailed {
                        index: Some(index),
                        failure: Failure::new(Verdict::NotAuthorized, "injected: refused"),
                    })
                }
                .boxed();
            }
        }
        if self.refuse_writes.load(Ordering::SeqCst) {
            // After a round trip, as the servers' refusal comes.
            return async {
                tokio::time::sleep(Duration::from_millis(2)).await;
                Err(MultiFailed {
                    index: None,
                    failure: Failure::new(Verdict::NotAuthorized, "injected: refused"),
                })
            }
            .boxed();
        }
        let orphaned = ops.iter().position(|op| {
            let path = match op {
                Op::Create { path, .. } | Op::Set { path, .. } | Op::Delete { path, .. } => path,
                _ => return false,
            };
            orphaned(&self.orphan_under, path)
        });
        if let Some(index) = orphaned {
            return async move {
                tokio::time::sleep(Duration::from_millis(2)).await;
                Err(MultiFailed {
                    index: Some(index),
                    failure: Failure::new(Verdict::NoNode, "injected: parent gone"),
                })
            }
            .boxed();
        }
        if let Some((target, armed)) = &self.lose_set {
            let sets = ops
                .iter()
                .any(|op| matches!(op, Op::Set { path, .. } if path == target));
            if sets && armed.swap(false, Ordering::SeqCst) {
                return async move {
                    let applied = self.inner.multi(on, ops).await;
                    Err(reply_lost(applied, "lost set"))
                }
                .boxed();
            }
        }
        if let Some((target, gate)) = &self.hold_check {
            let checks = ops
                .iter()
                .any(|op| matches!(op, Op::Check { path, .. } if path == target));
            if checks && gate.trips() {
                return async move {
                    let applied = self.inner.multi(on, ops).await;
                    assert!(
                        applied.is_ok(),
                        "guard: the held check applied: {applied:?}"
                    );
                    gate.pause().await;
                    applied
                }
                .boxed();
            }
        }
        if let Some((parent, gate)) = &self.hold_claim {
            let prefix = format!("{parent}/");
            let claims = ops
                .iter()
                .any(|op| matches!(op, Op::Create { path, .. } if path.starts_with(&prefix)));
            if claims && gate.trips() {
                return async move {
                    let applied = self.inner.multi(on, ops).await;
                    gate.pause().await;
                    Err(reply_lost(applied, "held claim"))
                }
                .boxed();
            }
        }
        self.inner.multi(on, ops)
    }
}
