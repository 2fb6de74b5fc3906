//! A distributed work queue with per-item locks and no herd effect (seed 003, issue 9).
//!
//! Layout under the queue node `Q` (all created by the first `put`):
//!
//! - `Q/items/i-<marker>-<seq>`: one PERSISTENT_SEQUENTIAL node per item, its data the item's
//!   bytes. `<marker>` is 16 random hex digits chosen by the put, so a put whose reply was lost
//!   is found again; `<seq>` is ZooKeeper's sequence number and gives the put order.
//! - `Q/locks/<item name>`: the EPHEMERAL lock of a claimed item, its data `claim <token>` and
//!   the claimer's identity; the token is drawn per claim, so a lock create whose reply was lost
//!   is ours only if it carries our token (threads sharing a session are told apart).
//! - `Q/waiters/w-<marker>-<seq>`: EPHEMERAL_SEQUENTIAL nodes of consumers waiting for work,
//!   the line in which only the head watches the queue (no herd).
//! - `Q/guards/g-<session>-<marker>`: one EPHEMERAL put guard per [`WorkQueue`] handle and
//!   session. Every put is `multi[setData(guard, version V), create(item)]`, so after a lost
//!   reply the guard's version tells whether the put can still land (see [`WorkQueue::put`]).
//!
//! Delivery is at-least-once: a claim whose session ends is lost, its item is claimed again. A
//! completed item is never delivered again (its lock and the item are deleted in one `multi`
//! that first checks the item's version: only a release moves it, so it names this claim's
//! incarnation of the lock, and a resent complete or release cannot touch a later claim's).
//! A claim creates a missing queue, so consumers may start before producers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{Result, ZooidError};
use crate::zk::{Create, Failure, Mode, Multi, OpResult, Reply, Watch, Zk};

/// Default for [`QueueOptions::max_items`]: 10,000 items. An item name is 29 bytes
/// (`i-` + 16 hex + `-` + 10 digits), 33 bytes with its length prefix in a `getChildren`
/// reply, so a full queue lists in about 330 KB: a third of ZooKeeper's default
/// `jute.maxbuffer` (1 MiB - 1), leaving room for producers that overshoot the bound at the
/// same moment and for the lock listing.
pub const DEFAULT_MAX_ITEMS: usize = 10_000;

/// The largest [`QueueOptions::max_items`] accepted: 25,000 items list in about 825 KB, still
/// under the default `jute.maxbuffer`.
pub const MAX_MAX_ITEMS: usize = 25_000;

/// Default for [`QueueOptions::max_item_bytes`]: 64 KiB. Every item lives in the servers'
/// memory; 10,000 items of 64 KiB are 640 MiB of heap on every server.
pub const DEFAULT_MAX_ITEM_BYTES: usize = 64 * 1024;

/// The largest [`QueueOptions::max_item_bytes`] accepted: the item travels in one request and
/// one reply, both bounded by the default `jute.maxbuffer` (1 MiB - 1) with their headers.
pub const MAX_MAX_ITEM_BYTES: usize = 1_000_000;

/// After losing the race for an item, a claim jumps ahead by a random step below this.
const COLLISION_SPREAD: usize = 16;

/// How a [`WorkQueue`] handle behaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueOptions {
    /// A put finding this many items in the queue fails with [`ZooidError::QueueFull`].
    /// 1..=[`MAX_MAX_ITEMS`]; default [`DEFAULT_MAX_ITEMS`]. The bound is checked against the
    /// item count read just before the put, so producers putting at the same instant can
    /// overshoot it by at most one item each.
    pub max_items: usize,
    /// A put of more bytes fails with [`ZooidError::TooLarge`].
    /// 0..=[`MAX_MAX_ITEM_BYTES`]; default [`DEFAULT_MAX_ITEM_BYTES`].
    pub max_item_bytes: usize,
    /// Written into the lock of each claim and shown by [`WorkQueue::items`]; default
    /// `<hostname>:<pid>`. At most 256 bytes.
    pub identity: Option<String>,
    /// How long a put, complete or release keeps retrying through connection loss before it
    /// gives up with [`ZooidError::Timeout`]; default 30 s.
    pub op_timeout: Duration,
}

impl Default for QueueOptions {
    fn default() -> Self {
        Self {
            max_items: DEFAULT_MAX_ITEMS,
            max_item_bytes: DEFAULT_MAX_ITEM_BYTES,
            identity: None,
            op_timeout: Duration::from_secs(30),
        }
    }
}

/// Counters of the ZooKeeper traffic of one [`WorkQueue`] handle (and its claims), for the herd
/// measurement and the benchmark.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Requests sent (a `multi` counts as one).
    pub requests: u64,
    /// `getChildren` requests among them.
    pub get_children: u64,
    /// Watch notifications received.
    pub watch_events: u64,
    /// Puts whose reply was lost and which were resolved through the guard.
    pub puts_resolved: u64,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    get_children: AtomicU64,
    watch_events: AtomicU64,
    puts_resolved: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> QueueStats {
        QueueStats {
            requests: self.requests.load(Ordering::Relaxed),
            get_children: self.get_children.load(Ordering::Relaxed),
            watch_events: self.watch_events.load(Ordering::Relaxed),
            puts_resolved: self.puts_resolved.load(Ordering::Relaxed),
        }
    }
    fn request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }
    fn event(&self) {
        self.watch_events.fetch_add(1, Ordering::Relaxed);
    }
}

/// Who holds a claimed item, read from its lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimHolder {
    /// The claimer's [`QueueOptions::identity`].
    pub identity: String,
    /// The ZooKeeper session that owns the lock.
    pub session_id: i64,
}

/// One item, as [`WorkQueue::items`] lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ItemInfo {
    /// The item's node name under `Q/items` (unique for the queue's lifetime).
    pub name: String,
    /// Its sequence number: the put order.
    pub sequence: u64,
    /// Its size in bytes.
    pub bytes: usize,
    /// Who holds it, if it is claimed.
    pub claimed_by: Option<ClaimHolder>,
}

/// The put guard of a handle on one session.
struct Guard {
    path: String,
    version: i32,
    generation: u64,
}

struct Inner {
    zk: Zk,
    path: String,
    options: QueueOptions,
    identity: String,
    /// Serializes this handle's puts; holds its guard between puts, with the version the
    /// servers last confirmed. Empty while a put runs and after a put that ended in doubt.
    guard: tokio::sync::Mutex<Option<Guard>>,
    stats: Counters,
}

impl Drop for Inner {
    /// The last clone of a handle (and its last claim) is gone: delete its put guard, which
    /// would otherwise stay until the session ends (ephemerals piling up on a long session).
    /// No put can be in flight (it would hold the handle), and a guard is never reused.
    fn drop(&mut self) {
        if let Some(guard) = self.guard.get_mut().take() {
            delete_guard_in_background(&self.zk, guard);
        }
    }
}

/// Deletes a put guard the handle no longer uses, in the background (best effort). Deleting
/// also makes a copy of a put still in flight on the guard fail.
fn delete_guard_in_background(zk: &Zk, guard: Guard) {
    crate::zk::ephemeral::delete_in_background(zk, guard.generation, guard.path);
}

/// A handle on one work queue, over the process's shared session ([`Zk`]). Cheap to clone; clones
/// share the put guard and the counters. `Send + Sync`.
#[derive(Clone)]
pub struct WorkQueue {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for WorkQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkQueue")
            .field("path", &self.inner.path)
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

/// An item claimed by this process: its lock exists, owned by our session and carrying this
/// claim's own random token.
///
/// Consume it with [`Claim::complete`] (the item is deleted, never delivered again) or
/// [`Claim::release`] (the item is handed out again). A claim dropped without either is released
/// in the background. A claim is lost with the session it was made on: then `complete` and
/// `release` fail with [`ZooidError::SessionLost`] and change nothing.
pub struct Claim {
    held: Held,
    data: Vec<u8>,
    done: bool,
    /// Set once the claim is known lost; never cleared.
    lost: std::sync::atomic::AtomicBool,
}

/// What a claim holds on the servers, enough to complete or release it (also from a
/// background task once the [`Claim`] is dropped).
#[derive(Clone)]
struct Held {
    queue: Arc<Inner>,
    name: String,
    sequence: u64,
    /// The item's data version while we hold the lock. Only a release moves it (rewriting the
    /// same bytes), so it names this incarnation of the lock: every complete or release checks
    /// it, and a resend after a lost reply cannot touch a later claimer's lock.
    item_version: i32,
    /// The session generation the lock was made on (every request of the claim names it).
    generation: u64,
    session_id: i64,
}

impl std::fmt::Debug for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claim")
            .field("queue", &self.held.queue.path)
            .field("item", &self.held.name)
            .field("bytes", &self.data.len())
            .field("session", &format_args!("{:#x}", self.held.session_id))
            .finish_non_exhaustive()
    }
}

use crate::zk::{Fate, Verdict};

fn random_marker() -> String {
    format!("{:016x}", crate::random::random::<u64>())
}

/// The sequence number ZooKeeper appended to a sequential node's name, as an order key.
///
/// ZooKeeper formats its signed 32-bit counter with `%010d`: after 2147483647 it wraps to
/// negative numbers (`-2147483648`, then up to `-000000001`), which come after every positive
/// one. They are read as the counter's unsigned value (2^32 - N), so the order holds across the
/// wrap.
fn sequence_of(name: &str) -> Option<u64> {
    let (head, digits) = name.rsplit_once('-')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // `<prefix>-<marker>--<digits>`: the counter is negative, its sign the second dash.
    let negative = head.ends_with('-');
    if digits.len() + usize::from(negative) < 10 {
        return None;
    }
    let value: i64 = digits.parse().ok()?;
    let signed = if negative { -value } else { value };
    let counter = i32::try_from(signed).ok()?;
    Some(u64::from(counter as u32))
}

fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown-host".into());
    format!("{host}:{}", std::process::id())
}

fn validate_path(path: &str) -> Result<()> {
    crate::zk::validate_path("queue path", path)?;
    if path.len() > 1024 {
        return Err(ZooidError::InvalidArgument(format!(
            "queue path {path:?}: longer than 1024 bytes"
        )));
    }
    Ok(())
}

impl WorkQueue {
    /// A handle on the queue at `path` (an absolute ZooKeeper path), over the session `zk`. Touches
    /// nothing on the servers: the first [`put`](Self::put) or [`claim`](Self::claim) creates
    /// the queue's nodes (consumers may start before producers); [`items`](Self::items) on a
    /// queue that does not exist fails with [`ZooidError::QueueNotFound`].
    ///
    /// Errors: [`ZooidError::InvalidArgument`] for a bad path or options out of range.
    pub fn open(zk: Zk, path: &str, options: QueueOptions) -> Result<WorkQueue> {
        validate_path(path)?;
        if options.max_items == 0 || options.max_items > MAX_MAX_ITEMS {
            return Err(ZooidError::InvalidArgument(format!(
                "max_items {} outside 1..={MAX_MAX_ITEMS}",
                options.max_items
            )));
        }
        if options.max_item_bytes > MAX_MAX_ITEM_BYTES {
            return Err(ZooidError::InvalidArgument(format!(
                "max_item_bytes {} over {MAX_MAX_ITEM_BYTES}",
                options.max_item_bytes
            )));
        }
        if options.op_timeout.is_zero() {
            return Err(ZooidError::InvalidArgument("op_timeout must be > 0".into()));
        }
        let identity = match &options.identity {
            Some(id) if id.len() > 256 => {
                return Err(ZooidError::InvalidArgument(
                    "identity longer than 256 bytes".into(),
                ))
            }
            Some(id) => id.clone(),
            None => default_identity(),
        };
        Ok(WorkQueue {
            inner: Arc::new(Inner {
                zk,
                path: path.to_string(),
                options,
                identity,
                guard: tokio::sync::Mutex::new(None),
                stats: Counters::default(),
            }),
        })
    }

    /// The queue's path.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// The options the handle was opened with.
    pub fn options(&self) -> &QueueOptions {
        &self.inner.options
    }

    /// The identity written into this handle's locks.
    pub fn identity(&self) -> &str {
        &self.inner.identity
    }

    /// The session the handle uses.
    pub fn zk(&self) -> &Zk {
        &self.inner.zk
    }

    /// The handle's ZooKeeper traffic so far.
    pub fn stats(&self) -> QueueStats {
        self.inner.stats.snapshot()
    }

    /// Adds an item; returns its node name (`i-<marker>-<seq>`). Creates the queue's nodes if
    /// they are missing.
    ///
    /// Exactly once, also when replies are lost: the put is `multi[setData(guard, V),
    /// create(item)]` on this handle's ephemeral guard node. After a lost reply the identical
    /// multi is sent again: if the first one did not apply, the guard is still at V and the
    /// second applies; if it did, the guard moved past V and the second fails, and the item is
    /// found by its marker. Nothing else writes the guard, and its version never goes back, so a
    /// first multi still in flight on a dropped connection can no longer land once the guard
    /// moved. When the guard's session was given up, the put waits for the servers' word that
    /// the session can no longer write ([`crate::zk::ZooKeeper::confirm_gone`]) before it looks for the
    /// marker; the handle's next guard has a new name. Nothing the handle remembers survives a
    /// put in doubt: a put that ends with its outcome unknown, or whose future is dropped,
    /// leaves the handle without a guard (the next put creates a new one), so a later put never
    /// expects a version an earlier one may have moved.
    ///
    /// Errors: [`ZooidError::TooLarge`] (over `max_item_bytes`), [`ZooidError::QueueFull`]
    /// (`max_items` reached); in both cases nothing changed. [`ZooidError::OutcomeUnknown`]
    /// ([`crate::error::WriteOp::Put`]) when its fate could not be decided within `op_timeout`: the
    /// item may or may not have been added. [`ZooidError::Timeout`] when no server could be
    /// reached for `op_timeout` before anything was sent. Puts through one handle take turns:
    /// `op_timeout` bounds the wait for a put's turn (one whose turn did not come within it is a
    /// `Timeout`, nothing sent), and from its turn on its requests get `op_timeout` of their
    /// own, so a put returns within twice `op_timeout`.
    pub async fn put(&self, data: &[u8]) -> Result<String> {
        self.inner.put(data).await
    }

    /// Claims the oldest unclaimed item (lowest sequence), waiting for one for at most
    /// `timeout` (`None`: wait for ever; `Some(ZERO)`: do not wait). `Ok(None)` when the time
    /// ran out.
    ///
    /// Waiting consumers form a line (`Q/waiters`): only its head watches the queue, every
    /// other waiter watches its predecessor, so a put wakes one consumer, not all of them.
    ///
    /// A claim on a queue that does not exist yet creates its nodes and waits for the first put
    /// like any other claim: workers are normally started before producers.
    ///
    /// The future may be dropped at any point (an async caller's own timeout or `select!`): a
    /// lock it made, or whose create may still land, is released in the background, as a
    /// dropped [`Claim`] is, so the item is handed out again.
    pub async fn claim(&self, timeout: Option<Duration>) -> Result<Option<Claim>> {
        self.inner.claim(timeout).await
    }

    /// Lists the items in put order, with who holds each claimed one. Cleans up locks whose item
    /// is gone. Errors: [`ZooidError::QueueNotFound`] when the queue does not exist.
    pub async fn items(&self) -> Result<Vec<ItemInfo>> {
        self.inner.items().await
    }
}

impl Inner {
    fn items_path(&self) -> String {
        format!("{}/items", self.path)
    }

    fn not_found(&self) -> ZooidError {
        ZooidError::QueueNotFound {
            queue: self.path.clone(),
        }
    }

    /// Counts one request and awaits it. The interface bounds it by the request limit and
    /// reports a session that turned out to be gone to the session layer.
    async fn call<T>(&self, reply: Reply<'_, T>) -> std::result::Result<T, Failure> {
        self.stats.request();
        reply.await
    }

    async fn list(&self, generation: u64, path: &str) -> std::result::Result<Vec<String>, Failure> {
        self.stats.get_children.fetch_add(1, Ordering::Relaxed);
        let (names, _) = self.call(self.zk.children(generation, path)).await?;
        Ok(names)
    }

    async fn list_watch(
        &self,
        generation: u64,
        path: &str,
    ) -> std::result::Result<(Vec<String>, Watch), Failure> {
        self.stats.get_children.fetch_add(1, Ordering::Relaxed);
        let (names, _, watch) = self
            .call(self.zk.children_watched(generation, path))
            .await?;
        Ok((names, watch))
    }

    /// A refusal of a request on node `path` of the queue, as [`Inner::zk_error`] says it but
    /// naming the node.
    fn zk_error_on(&self, path: &str, what: &str, err: Failure) -> ZooidError {
        match err.verdict {
            Verdict::NotAuthorized => crate::zk::not_authorized(path, self.zk.options()),
            _ => ZooidError::Store {
                path: path.to_string(),
                reason: format!("{what}: {err}"),
            },
        }
    }

    fn zk_error(&self, what: &str, err: Failure) -> ZooidError {
        if err.verdict == Verdict::NotAuthorized {
            return crate::zk::not_authorized(&self.path, self.zk.options());
        }
        match err.verdict.fate() {
            Fate::Refused => ZooidError::Store {
                path: self.path.clone(),
                reason: format!("{what}: {err}"),
            },
            _ => ZooidError::ConnectionLost {
                category: self.path.clone(),
                reason: format!("{what}: {err}"),
            },
        }
    }

    /// Creates the queue's nodes (and missing parents) with the session's default ACL.
    async fn create_nodes(&self, generation: u64) -> std::result::Result<(), Failure> {
        for sub in ["items", "locks", "waiters", "guards"] {
            let path = format!("{}/{sub}", self.path);
            self.call(self.zk.create_all(generation, &path, None))
                .await?;
        }
        Ok(())
    }
}

/// How far past its timeout a claim's requests may run: a claim with timeout T returns within
/// T + this also when no server answers.
const CLAIM_SLACK: Duration = Duration::from_millis(500);

/// Runs `fut`, giving up at `deadline` (`None`: never). A request given up is as unknown as a
/// lost reply.
async fn within<F: std::future::Future>(deadline: Option<Instant>, fut: F) -> Option<F::Output> {
    match deadline {
        None => Some(fut.await),
        Some(d) => tokio::time::timeout_at(d, fut).await.ok(),
    }
}

/// A request [`within`] gave up on: no reply before the deadline, as unknown an outcome as a
/// lost reply.
fn gave_up() -> Failure {
    Failure::new(Verdict::Unknown, "no reply before the claim's deadline")
}

/// The last component of a node's path (a created sequential node's name).
fn node_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Sleeps the backoff (doubling it) unless that passes the deadline; false when the deadline
/// passed.
async fn sleep_or_deadline(backoff: &mut Duration, deadline: Option<Instant>) -> bool {
    let wake = Instant::now() + *backoff;
    *backoff = (*backoff * 2).min(Duration::from_millis(500));
    match deadline {
        Some(d) if d <= wake => {
            tokio::time::sleep_until(d).await;
            false
        }
        _ => {
            tokio::time::sleep_until(wake).await;
            true
        }
    }
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

mod futures {
    //! A tiny `select_all` over watch futures, to avoid a dependency for one function.
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    pub struct SelectAll<F> {
        futures: Vec<Pin<Box<F>>>,
    }

    impl<F: Future> Future for SelectAll<F> {
        type Output = Option<F::Output>;
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            if self.futures.is_empty() {
                return Poll::Pending;
            }
            for f in self.futures.iter_mut() {
                if let Poll::Ready(out) = f.as_mut().poll(cx) {
                    return Poll::Ready(Some(out));
                }
            }
            Poll::Pending
        }
    }

    /// Resolves when the first future resolves; never when there are none.
    pub fn select_all_compat<F: Future>(futures: Vec<Pin<Box<F>>>) -> SelectAll<F> {
        SelectAll { futures }
    }
}

mod claim;
mod lock;
mod put;
mod stray;
mod waiters;

#[cfg(test)]
mod tests;
