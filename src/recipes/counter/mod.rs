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
//! 3. `delete` of this counter handle's previous marker: its last write's, or the *anchor* it
//!    makes before its first read on a session (so each handle keeps at most one marker alive).
//!
//! The marker deleted ties the write to the node that was read: a node deleted and made again (a
//! wipe and a restore) starts over at version 0, but without the handle's marker, so a write
//! planned on the old node fails there instead of applying to the new one.
//!
//! When the reply is lost, the counter syncs and reads the node on the same session:
//! - version still `V`: nothing moved it, so the identical `multi` is sent again. Both copies
//!   expect `V`, so at most one of them ever applies, even if the first lands late (a request
//!   sent on the dropped connection may still be applied after this lookup): the late copy then
//!   fails on the version, and the resend's own failure leads back here with a version past `V`.
//! - version past `V`: the write that moved `V` to `V + 1` is fixed forever. Our marker exists
//!   exactly when that write was ours, since only our `multi` creates it, and nothing of ours
//!   deletes it while the lookup runs (our next write, the handle's drop and a skipped write's
//!   cleanup all come after it; a wipe takes it with the node: then no value is handed out). The
//!   lookup names the write's own session generation, and a request of a given-up generation is
//!   not sent, so a session that expired (or was replaced) meanwhile makes the lookup fail
//!   rather than find "no marker".
//! - the session was lost (expired, or replaced by the session layer): the marker is gone either
//!   way. The counter waits for the servers' word that the session can no longer write
//!   ([`ZooKeeper::confirm_gone`](crate::zk::ZooKeeper::confirm_gone)) and reads the node on the current session: still at `V`, the
//!   write never applied and never will (sent again as a new write). Past `V`, or no
//!   confirmation within the retry deadline, the outcome cannot be told. The values are then
//!   *skipped*: never handed out, and reported as [`ZooidError::OutcomeUnknown`] with the range.
//!
//! Children of the counter node do not change what `getData` returns, so the seed's code is
//! unaffected by the markers.
//!
//! The counter reaches ZooKeeper only through the [`ZooKeeper`](crate::zk::ZooKeeper) interface (a [`Zk`]): the
//! creates and reads here, the write `multi` in `next.rs`, the lookup of a lost write in
//! `resolve.rs`.

use std::sync::Arc;

use crate::error::{Result, ZooidError};
use crate::retry::{Budget, RetryPolicy};
use crate::zk::{Acl, Create, Failure, Fate, Verdict, Zk, ZooKeeperExt};

mod anchor;
mod format;
mod next;
mod resolve;
#[cfg(test)]
mod tests;
mod write;

pub use format::{decode, encode};

/// The prefix of the marker children a counter's writes create.
pub const MARKER_PREFIX: &str = "_zc_";

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
struct State {
    /// The marker of this handle's last applied write (or its anchor before its first), and the
    /// session generation that made it.
    marker: Option<(String, u64)>,
    stats: CounterStats,
    /// The session the marker is on, to delete it when the last clone of the handle goes.
    zk: Zk,
}

impl Drop for State {
    /// The handle's last clone is gone: its marker would stay until the session ends (one per
    /// handle, piling up under the counter on a long session), so it is deleted. No write can be
    /// in flight: a `next` holds a clone until it ends.
    fn drop(&mut self) {
        if crate::runtime::refuse_in_forked_child().is_err() {
            return; // the parent's session: nothing is sent from here
        }
        if let Some((marker, generation)) = self.marker.take() {
            crate::zk::ephemeral::delete_in_background(&self.zk, generation, marker);
        }
    }
}

/// A CAS counter at one znode, on a ZooKeeper session (a [`Zk`], usually the process's shared
/// one). Cheap to clone; clones share their marker, so calls through one handle (and its
/// clones) are serialized.
#[derive(Clone)]
pub struct Counter {
    zk: Zk,
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

impl Counter {
    /// A counter at `path` (an absolute znode path that is also a valid category path,
    /// [`crate::IdCategory::new`]) on `zk` with the default retry policy.
    pub fn new(zk: Zk, path: &str) -> Result<Self> {
        Self::with_policy(zk, path, RetryPolicy::default())
    }

    /// A counter at `path` on `zk` whose compare-and-set retries follow `policy`.
    pub fn with_policy(zk: Zk, path: &str, policy: RetryPolicy) -> Result<Self> {
        validate_path(path)?;
        // Its values are named by its path as a category's are ([`crate::IdRange`]s of
        // `OutcomeUnknown`, Java's `IDRange`): the same rule, checked before anything is written.
        crate::idset::IdCategory::new(path)?;
        let state = State {
            marker: None,
            stats: CounterStats::default(),
            zk: zk.clone(),
        };
        Ok(Self {
            zk,
            path: path.to_string(),
            policy,
            state: Arc::new(tokio::sync::Mutex::new(state)),
        })
    }

    /// The counter's node path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The ZooKeeper session the counter uses.
    pub fn zk(&self) -> &Zk {
        &self.zk
    }

    /// What this handle (and its clones) did so far.
    pub async fn stats(&self) -> CounterStats {
        self.state.lock().await.stats
    }

    /// Counts `range`, which `next` handed out but its caller never received (a binding could not
    /// build the result), as skipped, and logs it.
    pub(crate) async fn skip_undelivered(&self, range: crate::range::IdRange) {
        let mut state = self.state.lock().await;
        state.stats.skipped = state.stats.skipped.saturating_add(range.len());
        tracing::error!(counter = %self.path, %range, "counter values handed out but never received by the caller; skipped");
    }

    /// Creates the counter node (and missing parents) holding `value`, the last value handed
    /// out: the first `next(1)` returns `value + 1`.
    ///
    /// Errors: `CategoryExists` when the node is already there (it is left untouched),
    /// the store errors. A create whose reply was lost is retried; if the node is then found at
    /// version 0 holding exactly `value`, it is taken as ours (it is indistinguishable from, and
    /// equivalent to, the node our lost create would have made). When that cannot be told (the
    /// attempts ran out after a lost reply, or the node was written since), `OutcomeUnknown`: the
    /// counter may or may not exist.
    pub async fn init(&self, value: i64) -> Result<()> {
        self.init_with_acl(value, None).await
    }

    /// [`init`](Self::init) with the ACL `acl` on the counter node (`None`: the session's
    /// default, see [`crate::zk::acl`]); missing parents get the default. Clients the ACL does not
    /// grant read, write, create and delete (the markers under the node) get `NotAuthorized` from
    /// `next`, and nothing changes.
    pub async fn init_with_acl(&self, value: i64, acl: Option<&[Acl]>) -> Result<()> {
        if let Some(acl) = acl {
            crate::zk::acl::check_acl_list(acl)?;
        }
        let create = match acl {
            Some(acl) => Create::persistent().with_acl(acl.to_vec()),
            None => Create::persistent(),
        };
        let mut budget = Budget::start(self.policy);
        let data = encode(value);
        let mut lost = false;
        loop {
            if !budget.try_attempt() {
                // A create whose reply was lost may have made the node.
                return Err(if lost {
                    self.init_in_doubt()
                } else {
                    self.unreachable(&budget, "init")
                });
            }
            let generation = self.zk.generation();
            if let Some(parent) = parent(&self.path) {
                // Missing parents get the session's default ACL.
                match self.zk.create_all(generation, parent, None).await {
                    Ok(())
                    | Err(Failure {
                        verdict: Verdict::NodeExists,
                        ..
                    }) => {}
                    Err(failure) => {
                        if retryable(&failure) {
                            budget.backoff().await;
                            continue;
                        }
                        return Err(self.store_error(&failure));
                    }
                }
            }
            match self.zk.create(generation, &self.path, &data, &create).await {
                Ok(_) => return Ok(()),
                Err(Failure {
                    verdict: Verdict::NodeExists,
                    ..
                }) => {
                    if lost {
                        // Our lost create may be the one that made it: a node still at
                        // version 0 holding exactly our value is indistinguishable from ours,
                        // and equivalent to it, so take it as created.
                        match self.zk.get(generation, &self.path).await {
                            Ok((found, stat)) if stat.version == 0 && found == data => {
                                return Ok(())
                            }
                            Ok((_, stat)) if stat.version == 0 => {}
                            // Written since (ours, then `next`s, or another's): cannot tell.
                            _ => return Err(self.init_in_doubt()),
                        }
                    }
                    return Err(ZooidError::CategoryExists {
                        category: self.path.clone(),
                    });
                }
                Err(failure) => {
                    if retryable(&failure) {
                        lost = true;
                        budget.backoff().await;
                        continue;
                    }
                    return Err(self.store_error(&failure));
                }
            }
        }
    }

    /// The error of an `init` whose create may have applied: the counter may or may not exist.
    fn init_in_doubt(&self) -> ZooidError {
        ZooidError::OutcomeUnknown {
            category: self.path.clone(),
            op: crate::error::WriteOp::Create,
            ids: Vec::new(),
            leaked_within: None,
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
            let generation = self.zk.generation();
            let read = async {
                self.zk.sync(generation, &self.path).await?;
                self.zk.get(generation, &self.path).await
            };
            match read.await {
                Ok((data, _)) => return decode(&self.path, &data),
                Err(Failure {
                    verdict: Verdict::NoNode,
                    ..
                }) => return Err(self.not_found()),
                Err(failure) => {
                    if retryable(&failure) && !budget.expired() {
                        budget.backoff().await;
                        continue;
                    }
                    if retryable(&failure) {
                        return Err(self.unreachable(&budget, &failure.message));
                    }
                    return Err(self.store_error(&failure));
                }
            }
        }
    }

    fn not_found(&self) -> ZooidError {
        ZooidError::NotFound {
            category: self.path.clone(),
        }
    }

    /// The public error for a request the servers refused (`NotAuthorized` naming the
    /// session's identity, else `Store`).
    fn store_error(&self, failure: &Failure) -> ZooidError {
        crate::zk::to_zooid(failure, &self.path, self.zk.options())
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

/// Whether a request may be tried again after `failure`: everything but the answers that settle
/// the request (these say the server refused it, so nothing was written). Transport failures of
/// every kind (connection loss, reset, timeouts, throttling) and a session being replaced
/// (including a request of a given-up generation, refused before it was sent) are transient.
fn retryable(failure: &Failure) -> bool {
    failure.verdict.fate() != Fate::Refused
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
