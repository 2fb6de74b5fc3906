//! The CAS counter (seed 000): a znode holding an 8-byte big-endian signed long, the last value
//! handed out, advanced by a versioned compare-and-set.
//!
//! The format is the one existing deployments have: the seed's Java code
//! (`ByteBuffer.wrap(data).getLong()`, `setData(path, bytes, version)`) still reads and writes
//! the node. What zooid adds is the answer to the seed's trap: after a lost reply, another
//! client that read the same version and asked for the same `n` writes byte-identical data, so
//! "the node now holds my value" proves nothing. Every write is therefore one `multi`:
//!
//! 1. `setData(counter, last + n, expected version V)`;
//! 2. `create(counter/_zc_<128-bit random token>, EPHEMERAL)`, a marker only this write makes;
//! 3. `delete` of this counter handle's previous marker, if it made one in the same session
//!    (so each handle keeps at most one marker alive).
//!
//! When the reply is lost, the counter syncs and reads the node on the same session:
//! - version still `V`: nothing moved it, so the identical `multi` is sent again. Both copies
//!   expect `V`, so at most one of them ever applies, even if the first lands late (a request
//!   sent on the dropped connection may still be applied after this lookup): the late copy then
//!   fails on the version, and the resend's own failure leads back here with a version past `V`.
//! - version past `V`: the write that moved `V` to `V + 1` is fixed forever. Our marker exists
//!   exactly when that write was ours, since only our `multi` creates it and only our session's
//!   end (or our next write) deletes it. The lookup is made on the same client as the write, so
//!   a session that expired meanwhile makes the lookup fail rather than find "no marker".
//! - the session was lost (expired, or replaced by the session layer): the marker is gone either
//!   way. The counter waits for the servers' word that the session can no longer write
//!   ([`Session::confirm_gone`]) and reads the node on the current session: still at `V`, the
//!   write never applied and never will (sent again as a new write). Past `V`, or no
//!   confirmation within the retry deadline, the outcome cannot be told. The values are then
//!   *skipped*: never handed out, and reported as [`ZooidError::OutcomeUnknown`] with the range.
//!
//! Children of the counter node do not change what `getData` returns, so the seed's code is
//! unaffected by the markers.

use std::sync::Arc;

use zookeeper_client::{Client, CreateMode, Error as ZkError};

use crate::error::{Result, ZooidError};
use crate::range::IdRange;
use crate::retry::{Budget, RetryPolicy};
use crate::zk::{Classified, ClientMulti, Fate, Session, Verdict};

/// The prefix of the marker children a counter's writes create.
pub const MARKER_PREFIX: &str = "_zc_";

/// Decodes a counter node's data: exactly 8 bytes, a big-endian signed long.
pub fn decode(path: &str, data: &[u8]) -> Result<i64> {
    let bytes: [u8; 8] = data.try_into().map_err(|_| {
        let shown: String = data
            .iter()
            .take(16)
            .map(|b| format!("{b:02x}"))
            .collect();
        ZooidError::CorruptPool {
            path: path.to_string(),
            line: 1,
            content: if data.len() > 16 {
                format!("{shown}...")
            } else {
                shown
            },
            reason: format!(
                "a counter node holds an 8-byte big-endian long; this one holds {} bytes (left untouched)",
                data.len()
            ),
        }
    })?;
    Ok(i64::from_be_bytes(bytes))
}

/// Encodes a counter value as the node stores it (what the seed's `ByteBuffer.putLong` writes).
pub fn encode(value: i64) -> [u8; 8] {
    value.to_be_bytes()
}

/// The range `next(n)` reserves after `last`, or why it cannot.
fn plan(path: &str, last: i64, n: u64) -> Result<IdRange> {
    if n == 0 {
        return Err(ZooidError::InvalidArgument(
            "a counter reserves at least one value (n = 0)".into(),
        ));
    }
    if last == i64::MAX {
        return Err(ZooidError::Exhausted {
            category: path.to_string(),
        });
    }
    let room = i64::MAX.abs_diff(last); // >= 1
    if n > room {
        return Err(ZooidError::InvalidArgument(format!(
            "counter {path} is at {last}: {n} more values would pass i64::MAX (only {room} remain)"
        )));
    }
    // n <= room = i64::MAX - last, so the sum stays in range; `last < i64::MAX` above.
    let end = last.checked_add_unsigned(n).ok_or_else(|| {
        ZooidError::InvalidArgument(format!("counter {path}: {last} + {n} overflows"))
    })?;
    IdRange::new(last + 1, end).ok_or_else(|| ZooidError::InvalidArgument("empty range".into()))
}

/// Counts of what a counter handle did, for tests and diagnostics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterStats {
    /// Writes whose reply was lost and whose outcome was then looked up.
    pub lost_replies: u64,
    /// Lost replies found applied (the values were handed out).
    pub resolved_applied: u64,
    /// Lost replies found not applied (the values were retried).
    pub resolved_not_applied: u64,
    /// Identical writes sent again because the version had not moved.
    pub resends: u64,
    /// Values skipped (reported in `OutcomeUnknown`, never handed out).
    pub skipped: u64,
    /// Lost writes found not applied although the node's next version held exactly the bytes
    /// they would have written (another client's identical write: the seed's trap).
    pub lookalikes: u64,
}

/// What a handle remembers between calls: its live marker and its counts.
#[derive(Debug, Default)]
struct State {
    /// The marker of this handle's last applied write, and the session generation that made it.
    marker: Option<(String, u64)>,
    stats: CounterStats,
}

/// A CAS counter at one znode, on the process's shared [`Session`]. Cheap to clone; clones
/// share their marker, so calls through one handle (and its clones) are serialized.
#[derive(Clone)]
pub struct Counter {
    session: Session,
    path: String,
    policy: RetryPolicy,
    state: Arc<tokio::sync::Mutex<State>>,
}

impl std::fmt::Debug for Counter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counter")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// How a lost write turned out.
enum Resolution {
    Applied,
    NotApplied,
    Unknown(String),
}

/// Why one attempt's write failed.
enum WriteError {
    /// The counter's version moved (`BADVERSION` on the `setData`).
    Conflict,
    /// The counter node is gone.
    NoNode,
    /// The previous marker was not there (deleted by hand); forget it and try again.
    StaleMarker,
    /// The reply was lost: the write may or may not have applied.
    Lost(String),
    /// Refused for a reason that proves nothing was written.
    Refused(ZkError),
}

impl Counter {
    /// A counter at `path` (an absolute znode path, not `/`) with the default retry policy.
    pub fn new(session: Session, path: &str) -> Result<Self> {
        Self::with_policy(session, path, RetryPolicy::default())
    }

    /// A counter at `path` whose compare-and-set retries follow `policy`.
    pub fn with_policy(session: Session, path: &str, policy: RetryPolicy) -> Result<Self> {
        validate_path(path)?;
        Ok(Self {
            session,
            path: path.to_string(),
            policy,
            state: Arc::default(),
        })
    }

    /// The counter's node path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The session the counter uses.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// What this handle (and its clones) did so far.
    pub async fn stats(&self) -> CounterStats {
        self.state.lock().await.stats
    }

    /// Runs one request bounded by the session timeout; a timeout is a lost reply.
    async fn bounded<T>(
        &self,
        request: impl std::future::Future<Output = std::result::Result<T, ZkError>>,
    ) -> std::result::Result<T, ZkError> {
        self.session.bounded(request).await
    }

    /// Creates the counter node (and missing parents) holding `value`, the last value handed
    /// out: the first `next(1)` returns `value + 1`.
    ///
    /// Errors: `CategoryExists` when the node is already there (it is left untouched),
    /// the store errors. A create whose reply was lost is retried; if the node is then found at
    /// version 0 holding exactly `value`, it is taken as ours (it is indistinguishable from, and
    /// equivalent to, the node our lost create would have made).
    pub async fn init(&self, value: i64) -> Result<()> {
        self.init_with_acl(value, None).await
    }

    /// [`init`](Self::init) with the ACL `acl` on the counter node (`None`: the session's
    /// default, see [`crate::zk::acl`]); missing parents get the default. Clients the ACL does not
    /// grant read and write get `NotAuthorized` from `next`, and nothing changes.
    pub async fn init_with_acl(&self, value: i64, acl: Option<&[crate::zk::Acl]>) -> Result<()> {
        if let Some(acl) = acl {
            crate::zk::acl::check_acl_list(acl)?;
        }
        let explicit: Option<Vec<zookeeper_client::Acl>> =
            acl.map(|acl| acl.iter().map(crate::zk::Acl::to_zk).collect());
        let mut budget = Budget::start(self.policy);
        let parent_options = CreateMode::Persistent.with_acls(self.session.default_acls());
        let options = match &explicit {
            Some(acl) => CreateMode::Persistent.with_acls(zookeeper_client::Acls::new(acl)),
            None => CreateMode::Persistent.with_acls(self.session.default_acls()),
        };
        let data = encode(value);
        let mut lost = false;
        loop {
            if !budget.try_attempt() {
                return Err(self.unreachable(&budget, "init"));
            }
            let (client, generation) = self.session.client();
            if let Some(parent) = parent(&self.path) {
                match self
                    .bounded(client.mkdir(parent, &parent_options))
                    .await
                    .classified()
                {
                    Ok(()) | Err((Verdict::NodeExists, _)) => {}
                    Err((_, err)) => {
                        self.note_error(&err, generation).await;
                        if retryable(&err) {
                            budget.backoff().await;
                            continue;
                        }
                        return Err(self.store_error(err));
                    }
                }
            }
            match self
                .bounded(async { client.create(&self.path, &data, &options).await.map(|_| ()) })
                .await
                .classified()
            {
                Ok(()) => return Ok(()),
                Err((Verdict::NodeExists, _)) => {
                    if lost {
                        // Our lost create may be the one that made it: a node still at
                        // version 0 holding exactly our value is indistinguishable from ours,
                        // and equivalent to it, so take it as created.
                        if let Ok((found, stat)) = self.bounded(client.get_data(&self.path)).await {
                            if stat.version == 0 && found == data {
                                return Ok(());
                            }
                        }
                    }
                    return Err(ZooidError::CategoryExists {
                        category: self.path.clone(),
                    });
                }
                Err((_, err)) => {
                    self.note_error(&err, generation).await;
                    if retryable(&err) {
                        lost = true;
                        budget.backoff().await;
                        continue;
                    }
                    return Err(self.store_error(err));
                }
            }
        }
    }

    /// Reads the counter's value (the last value handed out), after a `sync`, so it is at
    /// least as recent as any `next` that returned anywhere before this call.
    ///
    /// Errors: `NotFound`, `CorruptPool` for a node that is not 8 bytes, the store errors.
    pub async fn get(&self) -> Result<i64> {
        let mut budget = Budget::start(self.policy);
        loop {
            budget.try_attempt();
            let (client, generation) = self.session.client();
            let read = async {
                client.sync(&self.path).await?;
                client.get_data(&self.path).await
            };
            match self.bounded(read).await.classified() {
                Ok((data, _)) => return decode(&self.path, &data),
                Err((Verdict::NoNode, _)) => return Err(self.not_found()),
                Err((_, err)) => {
                    self.note_error(&err, generation).await;
                    if retryable(&err) && !budget.expired() {
                        budget.backoff().await;
                        continue;
                    }
                    if retryable(&err) {
                        return Err(self.unreachable(&budget, &err.to_string()));
                    }
                    return Err(self.store_error(err));
                }
            }
        }
    }

    /// Reserves the `n` values after the counter's current value and returns them
    /// (`last + 1 ..= last + n`). Values are handed out only when this call knows its write
    /// applied.
    ///
    /// Errors (nothing reserved unless stated): `InvalidArgument` for `n = 0` or a range past
    /// `i64::MAX`, `Exhausted` at `i64::MAX`, `NotFound`, `CorruptPool` (not 8 bytes; the node
    /// is never overwritten), `VersionWrap`, `Contention` when version conflicts outlast the
    /// retry policy, `ConnectionLost`/`Timeout`, and `OutcomeUnknown` when a lost write's fate
    /// could not be told: its values (in `ids`) are skipped, never handed out by anyone who
    /// follows this protocol.
    pub async fn next(&self, n: u64) -> Result<IdRange> {
        if n == 0 {
            return Err(ZooidError::InvalidArgument(
                "a counter reserves at least one value (n = 0)".into(),
            ));
        }
        let mut budget = Budget::start(self.policy);
        let Ok(mut state) = tokio::time::timeout(budget.remaining(), self.state.lock()).await
        else {
            return Err(ZooidError::Timeout {
                what: self.path.clone(),
                after: budget.elapsed(),
            });
        };
        let mut conflicted = false;
        let mut last_failure = String::new();
        while budget.try_attempt() {
            let (client, generation) = self.session.client();
            // Read the current value and version.
            let read = self.bounded(client.get_data(&self.path)).await;
            let (data, stat) = match read.classified() {
                Ok(read) => read,
                Err((Verdict::NoNode, _)) => return Err(self.not_found()),
                Err((_, err)) => {
                    self.note_error(&err, generation).await;
                    if retryable(&err) {
                        last_failure = err.to_string();
                        budget.backoff().await;
                        continue;
                    }
                    return Err(self.store_error(err));
                }
            };
            let last = decode(&self.path, &data)?;
            let range = plan(&self.path, last, n)?;
            let version = stat.version;
            if version < 0 || version == i32::MAX {
                // -1 would mean "any version" (a blind write); MAX would wrap.
                return Err(ZooidError::VersionWrap {
                    path: self.path.clone(),
                    version,
                });
            }
            let previous = match &state.marker {
                Some((marker, made_in)) if *made_in == generation => Some(marker.clone()),
                _ => None,
            };
            let marker = format!(
                "{}/{MARKER_PREFIX}{:032x}",
                self.path,
                rand::random::<u128>()
            );
            let write = Write {
                value: encode(range.end()),
                version,
                marker: &marker,
                previous: previous.as_deref(),
                marker_data: range.to_string(),
            };
            let outcome = match self.send(&client, generation, &write).await {
                Ok(()) => Resolution::Applied,
                Err(WriteError::Conflict) => {
                    conflicted = true;
                    budget.backoff().await;
                    continue;
                }
                Err(WriteError::NoNode) => return Err(self.not_found()),
                Err(WriteError::StaleMarker) => {
                    state.marker = None;
                    continue;
                }
                Err(WriteError::Refused(err)) => {
                    self.note_error(&err, generation).await;
                    return Err(self.store_error(err));
                }
                Err(WriteError::Lost(why)) => {
                    tracing::warn!(counter = %self.path, %why, range = %range, "counter write reply lost; resolving");
                    state.stats.lost_replies += 1;
                    let outcome = self
                        .resolve(&client, generation, &write, &mut state.stats)
                        .await;
                    match outcome {
                        Resolution::Applied => state.stats.resolved_applied += 1,
                        Resolution::NotApplied => state.stats.resolved_not_applied += 1,
                        Resolution::Unknown(_) => {}
                    }
                    outcome
                }
            };
            match outcome {
                Resolution::Applied => {
                    state.marker = Some((marker, generation));
                    return Ok(range);
                }
                Resolution::NotApplied => {
                    conflicted = true;
                    continue;
                }
                Resolution::Unknown(why) => {
                    // Any marker of ours went with the session (or its fate is as unknown).
                    state.marker = None;
                    state.stats.skipped += range.len();
                    tracing::error!(counter = %self.path, %why, range = %range, "counter write outcome unknown; values skipped");
                    return Err(ZooidError::OutcomeUnknown {
                        category: self.path.clone(),
                        op: crate::WriteOp::Next,
                        ids: vec![range],
                        leaked_within: None,
                    });
                }
            }
        }
        if conflicted {
            Err(ZooidError::Contention {
                category: self.path.clone(),
                attempts: budget.attempts(),
                elapsed: budget.elapsed(),
            })
        } else {
            Err(self.unreachable(&budget, &last_failure))
        }
    }

    /// Sends one write `multi` on `client` (session `generation`).
    async fn send(
        &self,
        client: &Client,
        generation: u64,
        write: &Write<'_>,
    ) -> std::result::Result<(), WriteError> {
        let options = CreateMode::Ephemeral.with_acls(self.session.default_acls());
        let mut multi = ClientMulti::new(client);
        multi
            .set(&self.path, &write.value, Some(write.version))
            .create(write.marker, write.marker_data.as_bytes(), &options);
        if let Some(previous) = write.previous {
            multi.delete(previous, Some(0));
        }
        let failed = match multi.commit(&self.session, generation).await {
            Ok(_) => return Ok(()),
            Err(failed) => failed,
        };
        match (failed.index, failed.verdict()) {
            (Some(0), Verdict::BadVersion) => Err(WriteError::Conflict),
            (Some(0), Verdict::NoNode) => Err(WriteError::NoNode),
            (Some(2), Verdict::NoNode | Verdict::BadVersion) => Err(WriteError::StaleMarker),
            (_, verdict) if verdict.fate() == Fate::Refused => {
                Err(WriteError::Refused(failed.error))
            }
            _ => Err(WriteError::Lost(failed.error.to_string())),
        }
    }

    /// Finds out whether `write`, sent on `client` (session `generation`), applied; see the
    /// module documentation. Bounded by the retry policy's deadline.
    async fn resolve(
        &self,
        client: &Client,
        generation: u64,
        write: &Write<'_>,
        stats: &mut CounterStats,
    ) -> Resolution {
        let mut budget = Budget::start(self.policy);
        loop {
            if budget.expired() {
                return Resolution::Unknown(format!(
                    "ZooKeeper unreachable for {:?}",
                    budget.deadline()
                ));
            }
            budget.try_attempt();
            if self.session.is_gone_generation(generation) {
                return self.resolve_given_up(generation, write, &mut budget).await;
            }
            let lookup = async {
                client.sync(&self.path).await?;
                let (data, stat) = client.get_data(&self.path).await?;
                // The seed's trap: the version after ours holds exactly our bytes.
                let lookalike = stat.version == write.version + 1 && data == write.value;
                if stat.version == write.version {
                    return Ok((stat.version, false, lookalike));
                }
                let marker = client.check_stat(write.marker).await?;
                Ok((stat.version, marker.is_some(), lookalike))
            };
            match self.bounded(lookup).await.classified() {
                Ok((version, _, _)) if version == write.version => {
                    stats.resends += 1;
                    match self.send(client, generation, write).await {
                        Ok(()) => return Resolution::Applied,
                        // Moved meanwhile (maybe by our first copy): look again.
                        Err(WriteError::Conflict) => continue,
                        Err(WriteError::NoNode) => {
                            return Resolution::Unknown("the counter node was deleted".into())
                        }
                        Err(WriteError::StaleMarker) => {
                            // The version is V, so our first copy did not apply, and this one
                            // did not either (a multi applies whole or not at all).
                            return Resolution::NotApplied;
                        }
                        Err(WriteError::Lost(_)) => budget.backoff().await,
                        Err(WriteError::Refused(err)) => {
                            return Resolution::Unknown(err.to_string())
                        }
                    }
                }
                Ok((version, found, lookalike)) => {
                    if version < write.version {
                        return Resolution::Unknown(format!(
                            "the counter's version went back to {version} (node recreated?)"
                        ));
                    }
                    if found {
                        return Resolution::Applied;
                    }
                    // The lookup ran on the write's own session and succeeded, so that session
                    // was alive and its ephemeral marker would still be there. Check once more
                    // that the session layer did not give it up meanwhile.
                    if self.session.is_gone_generation(generation) {
                        return self.resolve_given_up(generation, write, &mut budget).await;
                    }
                    if lookalike {
                        stats.lookalikes += 1;
                    }
                    return Resolution::NotApplied;
                }
                Err((Verdict::NoNode, _)) => {
                    return Resolution::Unknown("the counter node was deleted".into())
                }
                Err((_, err)) => {
                    self.note_error(&err, generation).await;
                    if crate::zk::is_gone(&err) {
                        return self.resolve_given_up(generation, write, &mut budget).await;
                    }
                    if !retryable(&err) {
                        return Resolution::Unknown(err.to_string());
                    }
                    budget.backoff().await;
                }
            }
        }
    }

    /// Resolves `write`, sent on the given-up session of `generation`: once the servers
    /// confirmed that session can no longer write, a node still at the write's version proves it
    /// never applied; anything else (moved on: the marker went with the session; or no
    /// confirmation within `budget`) is unknown.
    async fn resolve_given_up(
        &self,
        generation: u64,
        write: &Write<'_>,
        budget: &mut Budget,
    ) -> Resolution {
        let deadline = tokio::time::Instant::now() + budget.remaining();
        if let Err(why) = self.session.confirm_gone(generation, deadline).await {
            return Resolution::Unknown(why.to_string());
        }
        while !budget.expired() {
            budget.try_attempt();
            let (client, _) = self.session.client();
            let read = async {
                client.sync(&self.path).await?;
                client.check_stat(&self.path).await
            };
            match self.bounded(read).await {
                Ok(Some(stat)) if stat.version == write.version => return Resolution::NotApplied,
                Ok(Some(stat)) => {
                    return Resolution::Unknown(format!(
                        "the ZooKeeper session was lost and the counter moved on to version {} \
                         (the write expected {})",
                        stat.version, write.version
                    ))
                }
                Ok(None) => return Resolution::Unknown("the counter node was deleted".into()),
                Err(_) => budget.backoff().await,
            }
        }
        Resolution::Unknown(format!("ZooKeeper unreachable for {:?}", budget.deadline()))
    }

    /// Tells the session layer about a request that failed because its session is gone.
    async fn note_error(&self, err: &ZkError, generation: u64) {
        if crate::zk::is_gone(err) {
            self.session.report_lost(generation, &err.to_string()).await;
        }
    }

    fn not_found(&self) -> ZooidError {
        ZooidError::NotFound {
            category: self.path.clone(),
        }
    }

    fn store_error(&self, err: ZkError) -> ZooidError {
        if crate::zk::classify(&err) == Verdict::NotAuthorized {
            return crate::zk::not_authorized(&self.path, self.session.options());
        }
        ZooidError::Store {
            path: self.path.clone(),
            reason: err.to_string(),
        }
    }

    fn unreachable(&self, budget: &Budget, why: &str) -> ZooidError {
        ZooidError::ConnectionLost {
            category: self.path.clone(),
            reason: format!(
                "gave up after {} attempts in {:?}: {why}",
                budget.attempts(),
                budget.elapsed()
            ),
        }
    }
}

/// One write `multi`'s content, kept to send it again unchanged.
struct Write<'a> {
    value: [u8; 8],
    version: i32,
    marker: &'a str,
    previous: Option<&'a str>,
    marker_data: String,
}

/// Whether a request may be tried again after `err`: everything but the answers that settle
/// the request (these say the server refused it, so nothing was written). Transport failures of
/// every kind (connection loss, reset, timeouts, throttling) and a session being replaced are
/// transient.
fn retryable(err: &ZkError) -> bool {
    crate::zk::fate(err) != Fate::Refused
}

fn validate_path(path: &str) -> Result<()> {
    crate::zk::validate_path("counter path", path)
}

fn parent(path: &str) -> Option<&str> {
    match path.rfind('/') {
        Some(0) | None => None,
        Some(i) => Some(&path[..i]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_format_is_the_seeds_big_endian_long() {
        assert_eq!(encode(0x0102), [0, 0, 0, 0, 0, 0, 1, 2]);
        assert_eq!(decode("/c", &encode(-5)).unwrap(), -5);
        assert_eq!(decode("/c", &encode(i64::MAX)).unwrap(), i64::MAX);
        let err = decode("/c/x", b"12345").unwrap_err();
        assert!(
            matches!(&err, ZooidError::CorruptPool { path, .. } if path == "/c/x"),
            "{err:?}"
        );
        assert!(err.to_string().contains("5 bytes"), "{err}");
        assert!(decode("/c", &[0; 9]).is_err());
        assert!(decode("/c", &[]).is_err());
    }

    #[test]
    fn plans_refuse_zero_and_overflow() {
        assert_eq!(plan("/c", 0, 3).unwrap(), IdRange::new(1, 3).unwrap());
        assert_eq!(plan("/c", -10, 1).unwrap(), IdRange::single(-9));
        assert!(matches!(
            plan("/c", 0, 0),
            Err(ZooidError::InvalidArgument(_))
        ));
        assert!(matches!(
            plan("/c", i64::MAX, 1),
            Err(ZooidError::Exhausted { .. })
        ));
        assert_eq!(
            plan("/c", i64::MAX - 2, 2).unwrap(),
            IdRange::new(i64::MAX - 1, i64::MAX).unwrap()
        );
        assert!(matches!(
            plan("/c", i64::MAX - 2, 3),
            Err(ZooidError::InvalidArgument(_))
        ));
        assert!(matches!(
            plan("/c", -1, u64::MAX),
            Err(ZooidError::InvalidArgument(_))
        ));
        // The whole span above i64::MIN: u64::MAX values, ending exactly at i64::MAX.
        assert_eq!(
            plan("/c", i64::MIN, u64::MAX).unwrap(),
            IdRange::new(i64::MIN + 1, i64::MAX).unwrap()
        );
        assert_eq!(
            plan("/c", i64::MIN, u64::MAX - 1).unwrap(),
            IdRange::new(i64::MIN + 1, i64::MAX - 1).unwrap()
        );
    }

    #[test]
    fn paths_are_checked() {
        for bad in ["", "/", "c", "/c/", "/a//b", "/a/../b"] {
            assert!(validate_path(bad).is_err(), "{bad}");
        }
        validate_path("/a/b").unwrap();
        assert_eq!(parent("/a/b"), Some("/a"));
        assert_eq!(parent("/a"), None);
    }
}
