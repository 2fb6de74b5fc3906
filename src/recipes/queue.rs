//! A distributed work queue with per-item locks and no herd effect (seed 003, issue 9).
//!
//! Layout under the queue node `Q` (all created by the first `put`):
//!
//! - `Q/items/i-<marker>-<seq>`: one PERSISTENT_SEQUENTIAL node per item, its data the item's
//!   bytes. `<marker>` is 16 random hex digits chosen by the put, so a put whose reply was lost
//!   is found again; `<seq>` is ZooKeeper's sequence number and gives the put order.
//! - `Q/locks/<item name>`: the EPHEMERAL lock of a claimed item, its data the claimer's
//!   identity; the claim is ours while the lock exists with `ephemeralOwner` = our session.
//! - `Q/waiters/w-<marker>-<seq>`: EPHEMERAL_SEQUENTIAL nodes of consumers waiting for work,
//!   the line in which only the head watches the queue (no herd).
//! - `Q/guards/g-<session>-<marker>`: one EPHEMERAL put guard per [`WorkQueue`] handle and
//!   session. Every put is `multi[setData(guard, version V), create(item)]`, so after a lost
//!   reply the guard's version tells whether the put can still land (see [`WorkQueue::put`]).
//!
//! Delivery is at-least-once: a claim whose session ends is lost, its item is claimed again. A
//! completed item is never delivered again (its lock and the item are deleted in one `multi`
//! that first checks the lock is still ours).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client::{Client, CreateMode, Error as ZkError, MultiWriteResult, OneshotWatcher};

use crate::error::{Result, ZooidError};
use crate::zk::{ConnectionState, Session};

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
    session: Session,
    path: String,
    options: QueueOptions,
    identity: String,
    /// Serializes this handle's puts; holds its guard.
    guard: tokio::sync::Mutex<Option<Guard>>,
    stats: Counters,
}

/// A handle on one work queue, over the process's shared [`Session`]. Cheap to clone; clones
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

/// An item claimed by this process: its lock exists and is owned by our session.
///
/// Consume it with [`Claim::complete`] (the item is deleted, never delivered again) or
/// [`Claim::release`] (the item is handed out again). A claim dropped without either is released
/// in the background. A claim is lost with the session it was made on: then `complete` and
/// `release` fail with [`ZooidError::SessionLost`] and change nothing.
pub struct Claim {
    queue: Arc<Inner>,
    name: String,
    sequence: u64,
    data: Vec<u8>,
    lock_version: i32,
    client: Client,
    generation: u64,
    session_id: i64,
    done: bool,
}

impl std::fmt::Debug for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claim")
            .field("queue", &self.queue.path)
            .field("item", &self.name)
            .field("bytes", &self.data.len())
            .field("session", &format_args!("{:#x}", self.session_id))
            .finish_non_exhaustive()
    }
}

use crate::zk::{classify, fate, Classified, Fate, Multi, Verdict};

fn random_marker() -> String {
    format!("{:016x}", rand::random::<u64>())
}

/// The sequence number ZooKeeper appended to a sequential node's name.
fn sequence_of(name: &str) -> Option<u64> {
    let (_, digits) = name.rsplit_once('-')?;
    if digits.len() < 10 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
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
    /// A handle on the queue at `path` (an absolute ZooKeeper path), over `session`. Touches
    /// nothing on the servers: the first [`put`](Self::put) creates the queue's nodes;
    /// [`claim`](Self::claim) and [`items`](Self::items) on a queue never put to fail with
    /// [`ZooidError::NotFound`].
    ///
    /// Errors: [`ZooidError::InvalidArgument`] for a bad path or options out of range.
    pub fn open(session: &Session, path: &str, options: QueueOptions) -> Result<WorkQueue> {
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
                session: session.clone(),
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
    pub fn session(&self) -> &Session {
        &self.inner.session
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
    /// moved; if the guard is gone (session lost), it cannot land either, and the handle's next
    /// guard has a new name.
    ///
    /// Errors: [`ZooidError::TooLarge`] (over `max_item_bytes`), [`ZooidError::QueueFull`]
    /// (`max_items` reached); in both cases nothing changed. [`ZooidError::Timeout`] when no
    /// server could be reached for `op_timeout`: then the item may or may not have been added.
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
    /// Errors: [`ZooidError::NotFound`] when the queue does not exist (never put to).
    pub async fn claim(&self, timeout: Option<Duration>) -> Result<Option<Claim>> {
        self.inner.claim(timeout).await
    }

    /// Lists the items in put order, with who holds each claimed one. Cleans up locks whose item
    /// is gone. Errors: [`ZooidError::NotFound`] when the queue does not exist.
    pub async fn items(&self) -> Result<Vec<ItemInfo>> {
        self.inner.items().await
    }
}

impl Claim {
    /// The item's node name (unique for the queue's lifetime).
    pub fn item(&self) -> &str {
        &self.name
    }

    /// The item's sequence number: its put order.
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// The item's bytes.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The ZooKeeper session that owns the claim's lock.
    pub fn session_id(&self) -> i64 {
        self.session_id
    }

    /// Whether the claim is known to be lost: its session was replaced or declared lost. A
    /// `false` is no promise (a paused process cannot know yet); only `complete` can tell.
    pub fn is_lost(&self) -> bool {
        let status = self.queue.session.status();
        status.generation != self.generation || status.state == ConnectionState::Lost
    }

    /// Deletes the item and its lock in one `multi` that first checks the lock is still this
    /// claim's (same session, same version). Afterwards the item is never delivered again.
    ///
    /// Errors: [`ZooidError::SessionLost`] when the claim was lost with its session (the item
    /// is, or will be, handed out again; nothing was done); [`ZooidError::Timeout`] when no
    /// server answered for `op_timeout` (outcome unknown: the item is completed, or it will be
    /// handed out again).
    pub async fn complete(mut self) -> Result<()> {
        self.done = true;
        self.finish(true).await
    }

    /// Deletes the lock only: the item is handed out again (to the oldest waiting consumer).
    /// Errors as for [`complete`](Self::complete).
    pub async fn release(mut self) -> Result<()> {
        self.done = true;
        self.finish(false).await
    }

    fn lost(&self, reason: &str) -> ZooidError {
        ZooidError::SessionLost {
            what: format!("claim of {}/items/{}", self.queue.path, self.name),
            reason: reason.to_string(),
        }
    }

    async fn finish(&self, complete: bool) -> Result<()> {
        let q = &self.queue;
        let lock = format!("{}/locks/{}", q.path, self.name);
        let item = format!("{}/items/{}", q.path, self.name);
        let deadline = Instant::now() + q.options.op_timeout;
        let mut in_doubt = false;
        loop {
            if self.is_lost() {
                return Err(self.lost("the session that made it was lost"));
            }
            q.stats.request();
            let mut multi = Multi::new(&self.client);
            multi
                .check(&lock, self.lock_version)
                .delete(&lock, Some(self.lock_version));
            if complete {
                multi.delete(&item, None);
            }
            let failed = match multi.commit(&q.session, self.generation).await {
                Ok(_) => return Ok(()),
                Err(failed) => failed,
            };
            match failed.verdict().fate() {
                // The commit told the session layer.
                Fate::Expired => {
                    return Err(self.lost(if in_doubt {
                        "the session ended while the outcome of a request was unknown"
                    } else {
                        "the session expired"
                    }));
                }
                Fate::Unknown => {
                    in_doubt = true;
                    if Instant::now() >= deadline {
                        return Err(ZooidError::Timeout {
                            what: format!(
                                "{} {}/items/{} (outcome unknown)",
                                if complete { "complete" } else { "release" },
                                q.path,
                                self.name
                            ),
                            after: q.options.op_timeout,
                        });
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Fate::Refused => {
                    // The lock is gone or changed. On our own session, only our own earlier
                    // attempt can have deleted it (an expired session gets SessionExpired, and
                    // the orphan cleanup deletes only locks whose item is gone).
                    if in_doubt && failed.at(0) == Some(Verdict::NoNode) {
                        return Ok(());
                    }
                    let err = failed.error;
                    return Err(self.lost(&format!("its lock is gone or not ours: {err}")));
                }
            }
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let lock = format!("{}/locks/{}", self.queue.path, self.name);
        let client = self.client.clone();
        let version = self.lock_version;
        let stats = self.queue.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                stats.stats.request();
                let _ = tokio::time::timeout(
                    stats.session.request_limit(),
                    client.delete(&lock, Some(version)),
                )
                .await;
            });
        }
        // Without a runtime the lock stays until the session ends, which releases it too.
    }
}

/// Where a waiter stands in the line.
enum Position {
    Head,
    Behind(String),
    Missing,
}

/// A waiter node in the line; deleted when dropped (also when the claim future is cancelled),
/// so a departed consumer never blocks the line until its session ends.
struct Waiter {
    queue: Arc<Inner>,
    client: Client,
    generation: u64,
    name: String,
}

impl Waiter {
    /// Deletes the waiter node now.
    async fn leave(mut self) {
        let path = format!("{}/waiters/{}", self.queue.path, self.name);
        self.name.clear();
        let _ = self
            .queue
            .call(self.generation, self.client.delete(&path, None))
            .await;
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if self.name.is_empty() {
            return;
        }
        let path = format!("{}/waiters/{}", self.queue.path, self.name);
        let client = self.client.clone();
        let queue = self.queue.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                queue.stats.request();
                let _ =
                    tokio::time::timeout(queue.session.request_limit(), client.delete(&path, None))
                        .await;
            });
        }
    }
}

enum TryClaim {
    Claimed(Box<Claim>),
    Nothing,
    /// A transient failure (connection loss, session replaced): try again.
    Retry,
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

    /// Runs one request bounded by [`Self::request_limit`]; a session that turned out to be gone
    /// is reported to the session layer.
    async fn call<T>(
        &self,
        generation: u64,
        fut: impl std::future::Future<Output = std::result::Result<T, ZkError>>,
    ) -> std::result::Result<T, ZkError> {
        self.stats.request();
        self.session.run(generation, fut).await
    }

    async fn list(
        &self,
        client: &Client,
        generation: u64,
        path: &str,
    ) -> std::result::Result<Vec<String>, ZkError> {
        self.stats.get_children.fetch_add(1, Ordering::Relaxed);
        self.call(generation, client.list_children(path)).await
    }

    async fn list_watch(
        &self,
        client: &Client,
        generation: u64,
        path: &str,
    ) -> std::result::Result<(Vec<String>, OneshotWatcher), ZkError> {
        self.stats.get_children.fetch_add(1, Ordering::Relaxed);
        self.call(generation, client.list_and_watch_children(path))
            .await
    }

    fn zk_error(&self, what: &str, err: ZkError) -> ZooidError {
        if crate::zk::classify(&err) == crate::zk::Verdict::NotAuthorized {
            return crate::zk::not_authorized(&self.path, self.session.options());
        }
        match fate(&err) {
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

    async fn create_nodes(
        &self,
        client: &Client,
        generation: u64,
    ) -> std::result::Result<(), ZkError> {
        let acls = self.session.default_acls();
        let options = CreateMode::Persistent.with_acls(acls);
        for sub in ["items", "locks", "waiters", "guards"] {
            let path = format!("{}/{sub}", self.path);
            self.call(generation, client.mkdir(&path, &options)).await?;
        }
        Ok(())
    }

    async fn put(&self, data: &[u8]) -> Result<String> {
        if data.len() > self.options.max_item_bytes {
            return Err(ZooidError::TooLarge {
                what: format!("item for queue {}", self.path),
                bytes: data.len(),
                limit: self.options.max_item_bytes,
            });
        }
        let marker = random_marker();
        let item_prefix = format!("{}/items/i-{marker}-", self.path);
        let deadline = Instant::now() + self.options.op_timeout;
        let mut guard_slot = self.guard.lock().await;
        // Whether an earlier attempt with this marker may still have applied.
        let mut in_doubt = false;
        let mut backoff = Duration::from_millis(20);
        loop {
            if Instant::now() >= deadline {
                return Err(ZooidError::Timeout {
                    what: format!(
                        "put to queue {}{}",
                        self.path,
                        if in_doubt {
                            " (outcome unknown: the item may have been added)"
                        } else {
                            ""
                        }
                    ),
                    after: self.options.op_timeout,
                });
            }
            let (client, generation) = self.session.client();
            let step = self
                .put_attempt(
                    &client,
                    generation,
                    data,
                    &marker,
                    &item_prefix,
                    &mut guard_slot,
                    &mut in_doubt,
                )
                .await;
            match step {
                Ok(Some(name)) => return Ok(name),
                Ok(None) => backoff = Duration::from_millis(20),
                Err(PutStop::Fail(err)) => return Err(err),
                Err(PutStop::Transient) => {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_millis(500));
                }
            }
        }
    }

    /// One step of a put: `Some(name)` when the item is known to be in the queue, `None` to try
    /// again at once.
    #[allow(clippy::too_many_arguments)]
    async fn put_attempt(
        &self,
        client: &Client,
        generation: u64,
        data: &[u8],
        marker: &str,
        item_prefix: &str,
        guard_slot: &mut Option<Guard>,
        in_doubt: &mut bool,
    ) -> std::result::Result<Option<String>, PutStop> {
        let transient = |_e: ZkError| PutStop::Transient;
        // An earlier attempt may have applied and the guard moved (or vanished): look for
        // the marker before anything else.
        if *in_doubt {
            let stale = match guard_slot.as_ref() {
                None => true,
                Some(g) => {
                    if g.generation != generation {
                        true
                    } else {
                        self.call(generation, client.sync(&g.path))
                            .await
                            .map_err(transient)?;
                        match self.call(generation, client.check_stat(&g.path)).await {
                            Ok(Some(stat)) => stat.version != g.version,
                            Ok(None) => true,
                            Err(e) => return Err(transient(e)),
                        }
                    }
                }
            };
            if stale {
                // No earlier attempt can land any more: its guard version is gone for good.
                self.call(generation, client.sync(&self.items_path()))
                    .await
                    .map_err(transient)?;
                let items = match self.list(client, generation, &self.items_path()).await {
                    Ok(items) => items,
                    Err(e) => return Err(transient(e)),
                };
                self.stats.puts_resolved.fetch_add(1, Ordering::Relaxed);
                let needle = format!("i-{marker}-");
                if let Some(found) = items.into_iter().find(|n| n.starts_with(&needle)) {
                    return Ok(Some(found));
                }
                *in_doubt = false;
                if let Some(g) = guard_slot.as_mut() {
                    if g.generation != generation {
                        *guard_slot = None;
                    } else if let Ok(Some(stat)) =
                        self.call(generation, client.check_stat(&g.path)).await
                    {
                        g.version = stat.version;
                    } else {
                        *guard_slot = None;
                    }
                }
            }
            // Not stale: the guard is still at V, so no earlier attempt applied; resend.
        }
        // The bound, from the count read just before the put.
        let count = match self
            .call(generation, client.check_stat(&self.items_path()))
            .await
        {
            Ok(Some(stat)) => Some(stat.num_children as usize),
            Ok(None) => None,
            Err(e) => return Err(transient(e)),
        };
        match count {
            None => {
                self.create_nodes(client, generation)
                    .await
                    .map_err(|e| match fate(&e) {
                        Fate::Refused => PutStop::Fail(self.zk_error("creating the queue", e)),
                        _ => PutStop::Transient,
                    })?;
                return Ok(None);
            }
            Some(n) if n >= self.options.max_items => {
                return Err(PutStop::Fail(ZooidError::QueueFull {
                    queue: self.path.clone(),
                    limit: self.options.max_items,
                }))
            }
            Some(_) => {}
        }
        // This handle's guard on this session.
        let fresh_guard = match guard_slot.as_ref() {
            Some(g) => g.generation != generation,
            None => true,
        };
        if fresh_guard {
            let path = format!(
                "{}/guards/g-{:016x}-{}",
                self.path,
                client.session_id().0,
                random_marker()
            );
            let options = CreateMode::Ephemeral.with_acls(self.session.default_acls());
            match self
                .call(generation, client.create(&path, b"", &options))
                .await
                .classified()
            {
                Ok(_) => {}
                Err((Verdict::NoNode, _)) => {
                    self.create_nodes(client, generation)
                        .await
                        .map_err(|_| PutStop::Transient)?;
                    return Ok(None);
                }
                Err((verdict, e))
                    if verdict.fate() == Fate::Refused && verdict != Verdict::NodeExists =>
                {
                    return Err(PutStop::Fail(self.zk_error("creating the put guard", e)))
                }
                // A lost reply: the name is unique, so whether it landed is found on the next try.
                Err(_) => match self.call(generation, client.check_stat(&path)).await {
                    Ok(Some(stat)) if stat.ephemeral_owner == client.session_id().0 => {}
                    _ => return Err(PutStop::Transient),
                },
            }
            *guard_slot = Some(Guard {
                path,
                version: 0,
                generation,
            });
        }
        let Some(guard) = guard_slot.as_mut() else {
            return Ok(None);
        };
        if guard.version == i32::MAX {
            // Never wrap the counter: take a new guard.
            *guard_slot = None;
            return Ok(None);
        }
        let options = CreateMode::PersistentSequential.with_acls(self.session.default_acls());
        let mut multi = Multi::new(client);
        multi
            .set(&guard.path, b"", Some(guard.version))
            .create(item_prefix, data, &options);
        self.stats.request();
        match multi.commit(&self.session, generation).await {
            Ok(results) => {
                let mut name = None;
                for result in results {
                    match result {
                        MultiWriteResult::SetData { stat } => guard.version = stat.version,
                        MultiWriteResult::Create { path, .. } => {
                            name = path.rsplit('/').next().map(str::to_string)
                        }
                        _ => {}
                    }
                }
                match name {
                    Some(name) => Ok(Some(name)),
                    None => Err(PutStop::Fail(ZooidError::Store {
                        path: self.path.clone(),
                        reason: "put: the server's reply lacks the created item".into(),
                    })),
                }
            }
            // A gone session was told to the session layer by the commit.
            Err(failed) => match (failed.index, failed.verdict()) {
                (_, verdict) if verdict.fate() != Fate::Refused => {
                    *in_doubt = true;
                    Err(PutStop::Transient)
                }
                // The guard moved (an earlier attempt of ours applied) or vanished.
                (Some(0), Verdict::BadVersion | Verdict::NoNode) => {
                    if !*in_doubt {
                        // Nobody else writes the guard: re-read it.
                        *guard_slot = None;
                    }
                    Ok(None)
                }
                (Some(1), Verdict::NoNode) => {
                    self.create_nodes(client, generation)
                        .await
                        .map_err(|_| PutStop::Transient)?;
                    Ok(None)
                }
                _ => Err(PutStop::Fail(self.zk_error("put", failed.error))),
            },
        }
    }

    async fn claim(self: &Arc<Self>, timeout: Option<Duration>) -> Result<Option<Claim>> {
        let mut waiter: Option<Waiter> = None;
        let out = self.claim_in_line(timeout, &mut waiter).await;
        // Leave the line before returning, so the next waiter takes over at once (a cancelled
        // claim leaves it in the background, through the waiter's Drop).
        if let Some(w) = waiter.take() {
            w.leave().await;
        }
        out
    }

    async fn claim_in_line(
        self: &Arc<Self>,
        timeout: Option<Duration>,
        waiter: &mut Option<Waiter>,
    ) -> Result<Option<Claim>> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut status = self.session.subscribe();
        let mut backoff = Duration::from_millis(20);
        loop {
            let (client, generation) = self.session.client();
            if waiter.as_ref().is_some_and(|w| w.generation != generation) {
                *waiter = None;
            }
            let position = match &waiter {
                None => None,
                Some(w) => match self.position(&client, generation, w).await {
                    Ok(p) => Some(p),
                    Err(e) if fate(&e) == Fate::Refused => return Err(self.claim_error(e)),
                    Err(_) => {
                        if !sleep_or_deadline(&mut backoff, deadline).await {
                            return Ok(None);
                        }
                        continue;
                    }
                },
            };
            let mut watches = Vec::new();
            match position {
                Some(Position::Missing) => {
                    *waiter = None;
                    continue;
                }
                Some(Position::Behind(pred)) => {
                    let path = format!("{}/waiters/{pred}", self.path);
                    // getData, not exists: a getData on a node already gone leaves no watch
                    // behind (an exists watch on it would wait for ever for a creation).
                    match self
                        .call(generation, client.get_and_watch_data(&path))
                        .await
                        .classified()
                    {
                        Ok((_, _, watcher)) => watches.push(watcher),
                        Err((Verdict::NoNode, _)) => continue,
                        Err((verdict, e)) if verdict.fate() == Fate::Refused => {
                            return Err(self.claim_error(e))
                        }
                        Err(_) => {
                            if !sleep_or_deadline(&mut backoff, deadline).await {
                                return Ok(None);
                            }
                            continue;
                        }
                    }
                }
                head_or_not_in_line => {
                    let head = matches!(head_or_not_in_line, Some(Position::Head));
                    match self
                        .try_claim(&client, generation, head, &mut watches)
                        .await
                    {
                        Ok(TryClaim::Claimed(claim)) => return Ok(Some(*claim)),
                        Ok(TryClaim::Nothing) => backoff = Duration::from_millis(20),
                        Ok(TryClaim::Retry) => {
                            if !sleep_or_deadline(&mut backoff, deadline).await {
                                return Ok(None);
                            }
                            continue;
                        }
                        Err(e) => return Err(e),
                    }
                    if !head {
                        if deadline.is_some_and(|d| Instant::now() >= d) {
                            return Ok(None);
                        }
                        match self.join(&client, generation).await {
                            Ok(w) => *waiter = Some(w),
                            Err(e) if fate(&e) == Fate::Refused => return Err(self.claim_error(e)),
                            Err(_) => {
                                if !sleep_or_deadline(&mut backoff, deadline).await {
                                    return Ok(None);
                                }
                            }
                        }
                        continue;
                    }
                }
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(None);
            }
            // Wait for a watch, the deadline, or a change of the session.
            let watched = async {
                let futures: Vec<_> = watches.into_iter().map(|w| Box::pin(w.changed())).collect();
                futures::select_all_compat(futures).await
            };
            tokio::select! {
                _ = watched => self.stats.event(),
                _ = sleep_until_opt(deadline) => return Ok(None),
                changed = status.changed() => {
                    if changed.is_err() {
                        return Err(ZooidError::Closed { what: format!("session of queue {}", self.path) });
                    }
                }
            }
        }
    }

    fn claim_error(&self, err: ZkError) -> ZooidError {
        if classify(&err) == Verdict::NoNode {
            self.not_found()
        } else {
            self.zk_error("claim", err)
        }
    }

    /// Joins the line: an EPHEMERAL_SEQUENTIAL waiter node (found again by its marker when the
    /// reply is lost).
    async fn join(
        self: &Arc<Self>,
        client: &Client,
        generation: u64,
    ) -> std::result::Result<Waiter, ZkError> {
        let marker = random_marker();
        let prefix = format!("{}/waiters/w-{marker}-", self.path);
        let options = CreateMode::EphemeralSequential.with_acls(self.session.default_acls());
        let name = match self
            .call(generation, client.create(&prefix, b"", &options))
            .await
        {
            Ok((_, seq)) => format!("w-{marker}-{seq}"),
            Err(e) if fate(&e) == Fate::Unknown => {
                let waiters = self
                    .list(client, generation, &format!("{}/waiters", self.path))
                    .await?;
                let needle = format!("w-{marker}-");
                match waiters.into_iter().find(|w| w.starts_with(&needle)) {
                    Some(name) => name,
                    None => return Err(e),
                }
            }
            Err(e) => return Err(e),
        };
        Ok(Waiter {
            queue: self.clone(),
            client: client.clone(),
            generation,
            name,
        })
    }

    async fn position(
        &self,
        client: &Client,
        generation: u64,
        w: &Waiter,
    ) -> std::result::Result<Position, ZkError> {
        let mut waiters: Vec<(u64, String)> = self
            .list(client, generation, &format!("{}/waiters", self.path))
            .await?
            .into_iter()
            .filter_map(|n| sequence_of(&n).map(|s| (s, n)))
            .collect();
        waiters.sort();
        let Some(at) = waiters.iter().position(|(_, n)| *n == w.name) else {
            return Ok(Position::Missing);
        };
        Ok(if at == 0 {
            Position::Head
        } else {
            Position::Behind(waiters[at - 1].1.clone())
        })
    }

    /// Lists the items and locks (with watches when `watch`, as the head of the line does) and
    /// tries to lock the oldest unclaimed items in order.
    async fn try_claim(
        self: &Arc<Self>,
        client: &Client,
        generation: u64,
        watch: bool,
        watches: &mut Vec<OneshotWatcher>,
    ) -> Result<TryClaim> {
        let items_path = self.items_path();
        let locks_path = format!("{}/locks", self.path);
        let listed = if watch {
            match self.list_watch(client, generation, &items_path).await {
                Ok((items, w1)) => match self.list_watch(client, generation, &locks_path).await {
                    Ok((locks, w2)) => {
                        watches.push(w1);
                        watches.push(w2);
                        Ok((items, locks))
                    }
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            }
        } else {
            match self.list(client, generation, &items_path).await {
                Ok(items) => self
                    .list(client, generation, &locks_path)
                    .await
                    .map(|locks| (items, locks)),
                Err(e) => Err(e),
            }
        };
        let (items, locks) = match listed.classified() {
            Ok(lists) => lists,
            Err((Verdict::NoNode, _)) => return Err(self.not_found()),
            Err((verdict, e)) if verdict.fate() == Fate::Refused => {
                return Err(self.zk_error("claim", e))
            }
            Err(_) => return Ok(TryClaim::Retry),
        };
        let locked: std::collections::HashSet<&str> = locks.iter().map(String::as_str).collect();
        let mut free: Vec<(u64, &str)> = items
            .iter()
            .filter(|n| !locked.contains(n.as_str()))
            .filter_map(|n| sequence_of(n).map(|s| (s, n.as_str())))
            .collect();
        free.sort();
        // Locks whose item is gone (cannot happen through this API; clean up after others).
        let item_set: std::collections::HashSet<&str> = items.iter().map(String::as_str).collect();
        for lock in locks
            .iter()
            .filter(|l| !item_set.contains(l.as_str()))
            .take(16)
        {
            self.clean_orphan_lock(client, generation, lock).await;
        }
        // Oldest first. Losing the race for an item means other consumers work from the same
        // listing and would lose the next ones too, one after another: after each loss, jump
        // ahead by a random step within the next few items; the skipped ones move to the end
        // (no free item is left untried).
        let mut order: Vec<usize> = (0..free.len()).collect();
        let mut at = 0;
        while at < order.len() {
            let (sequence, name) = free[order[at]];
            if let Some(claim) = self.lock_item(client, generation, name, sequence).await? {
                return Ok(TryClaim::Claimed(Box::new(claim)));
            }
            at += 1;
            if order.len() - at > 1 {
                let window = (order.len() - at).min(COLLISION_SPREAD);
                let skip = rand::random_range(0..window);
                order[at..].rotate_left(skip);
            }
        }
        Ok(TryClaim::Nothing)
    }

    /// A lock whose item does not exist: the lock was created while its item existed (the claim
    /// `multi` checks it), and item names are never reused, so the item is gone for good.
    async fn clean_orphan_lock(&self, client: &Client, generation: u64, lock: &str) {
        let item = format!("{}/items/{lock}", self.path);
        if let Ok(None) = self.call(generation, client.check_stat(&item)).await {
            let path = format!("{}/locks/{lock}", self.path);
            let _ = self.call(generation, client.delete(&path, None)).await;
            tracing::info!(queue = %self.path, lock, "deleted a lock whose item is gone");
        }
    }

    /// Locks one item: `multi[check(item exists), create(lock, EPHEMERAL)]`, then reads it.
    async fn lock_item(
        self: &Arc<Self>,
        client: &Client,
        generation: u64,
        name: &str,
        sequence: u64,
    ) -> Result<Option<Claim>> {
        let item = format!("{}/items/{name}", self.path);
        let lock = format!("{}/locks/{name}", self.path);
        let session_id = client.session_id().0;
        let options = CreateMode::Ephemeral.with_acls(self.session.default_acls());
        let mut in_doubt = false;
        let lock_version = loop {
            let mut multi = Multi::new(client);
            multi
                .check(&item, -1)
                .create(&lock, self.identity.as_bytes(), &options);
            self.stats.request();
            match multi.commit(&self.session, generation).await {
                Ok(_) => break 0,
                Err(failed) => match (failed.verdict().fate(), failed.index, failed.verdict()) {
                    (Fate::Refused, Some(0), Verdict::NoNode) => return Ok(None),
                    (Fate::Refused, Some(1), Verdict::NodeExists) => {
                        if !in_doubt {
                            return Ok(None);
                        }
                        // Our own lost create, or someone else's lock? Our session is the marker.
                        match self.call(generation, client.check_stat(&lock)).await {
                            Ok(Some(stat)) if stat.ephemeral_owner == session_id => {
                                break stat.version
                            }
                            Ok(Some(_)) => return Ok(None),
                            Ok(None) => continue,
                            Err(_) => return Ok(None),
                        }
                    }
                    (Fate::Refused, _, _) => return Err(self.zk_error("claim", failed.error)),
                    // The commit told the session layer.
                    (Fate::Expired, _, _) => return Ok(None),
                    (Fate::Unknown, _, _) => {
                        in_doubt = true;
                        // Resolve at once on the same session: the lock is ours iff it exists
                        // with our session as its owner.
                        match self.call(generation, client.check_stat(&lock)).await {
                            Ok(Some(stat)) if stat.ephemeral_owner == session_id => {
                                break stat.version
                            }
                            Ok(Some(_)) => return Ok(None),
                            Ok(None) => continue,
                            Err(e) if fate(&e) == Fate::Unknown => {
                                tokio::time::sleep(Duration::from_millis(50)).await;
                                continue;
                            }
                            Err(_) => return Ok(None),
                        }
                    }
                },
            }
        };
        let mut claim = Claim {
            queue: self.clone(),
            name: name.to_string(),
            sequence,
            data: Vec::new(),
            lock_version,
            client: client.clone(),
            generation,
            session_id,
            done: false,
        };
        loop {
            match self
                .call(generation, client.get_data(&item))
                .await
                .classified()
            {
                Ok((data, _)) => {
                    claim.data = data;
                    return Ok(Some(claim));
                }
                // Deleted under our lock (by hand): drop the lock, move on.
                Err((Verdict::NoNode, _)) => {
                    claim.done = true;
                    let _ = self.call(generation, client.delete(&lock, None)).await;
                    return Ok(None);
                }
                Err((Verdict::Unknown, _)) => {
                    if claim.is_lost() {
                        claim.done = true;
                        return Ok(None);
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(_) => {
                    claim.done = true;
                    return Ok(None);
                }
            }
        }
    }

    async fn items(&self) -> Result<Vec<ItemInfo>> {
        let (client, generation) = self.session.client();
        let items_path = self.items_path();
        let locks_path = format!("{}/locks", self.path);
        let items = self
            .list(&client, generation, &items_path)
            .await
            .map_err(|e| self.claim_error(e))?;
        let locks = self
            .list(&client, generation, &locks_path)
            .await
            .map_err(|e| self.claim_error(e))?;
        let locked: std::collections::HashSet<&str> = locks.iter().map(String::as_str).collect();
        let item_set: std::collections::HashSet<&str> = items.iter().map(String::as_str).collect();
        for lock in locks.iter().filter(|l| !item_set.contains(l.as_str())) {
            self.clean_orphan_lock(&client, generation, lock).await;
        }
        let mut out = Vec::with_capacity(items.len());
        for name in &items {
            let Some(sequence) = sequence_of(name) else {
                continue;
            };
            let bytes = match self
                .call(
                    generation,
                    client.check_stat(&format!("{items_path}/{name}")),
                )
                .await
            {
                Ok(Some(stat)) => stat.data_length.max(0) as usize,
                Ok(None) => continue, // completed meanwhile
                Err(e) => return Err(self.zk_error("listing items", e)),
            };
            let claimed_by = if locked.contains(name.as_str()) {
                match self
                    .call(generation, client.get_data(&format!("{locks_path}/{name}")))
                    .await
                    .classified()
                {
                    Ok((data, stat)) => Some(ClaimHolder {
                        identity: String::from_utf8_lossy(&data).into_owned(),
                        session_id: stat.ephemeral_owner,
                    }),
                    Err((Verdict::NoNode, _)) => None,
                    Err((_, e)) => return Err(self.zk_error("listing items", e)),
                }
            } else {
                None
            };
            out.push(ItemInfo {
                name: name.clone(),
                sequence,
                bytes,
                claimed_by,
            });
        }
        out.sort_by_key(|i| i.sequence);
        Ok(out)
    }
}

/// Why a put attempt stopped.
enum PutStop {
    Fail(ZooidError),
    Transient,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_numbers_parse_from_names() {
        assert_eq!(sequence_of("i-0123456789abcdef-0000000042"), Some(42));
        assert_eq!(sequence_of("w-0123456789abcdef-0000000000"), Some(0));
        assert_eq!(sequence_of("i-0123456789abcdef-42"), None);
        assert_eq!(sequence_of("junk"), None);
    }

    #[test]
    fn paths_are_validated() {
        assert!(validate_path("/q").is_ok());
        assert!(validate_path("/a/b/c").is_ok());
        for bad in ["", "/", "q", "/q/", "/a//b", "/a/./b", "/a/../b"] {
            assert!(validate_path(bad).is_err(), "{bad:?}");
        }
    }
}
