//! Lost replies: whether a write whose reply was lost applied, told by the operation log the
//! pool node keeps (docs/DESIGN.md), or by its free list when the log no longer says.
//!
//! These writes are compare-and-sets of the pool node at an expected version, so they need no
//! word from the servers on the session that sent them ([`crate::zk::Session::confirm_gone`]):
//! a copy still in the network, even one that arrives after its session was given up, expects
//! that same version. While the node is at it, the identical write is sent again (at most one
//! copy applies); once it moved, the copy can never apply and the log says whose write moved it.

use super::core::Core;
use super::state::Cached;
use crate::error::Result;
use crate::format::{OpKind, OpToken, Pool};
use crate::range::IdRange;
use crate::retry::Budget;
use crate::store::{Store, StoreError};

/// How a write with a lost reply turned out.
pub(crate) enum Resolution {
    /// It applied; the state it left (or a later one).
    Applied(Cached),
    /// It did not apply; the state read.
    NotApplied(Cached),
    /// It cannot be told, for this reason.
    Unknown(String),
}

/// A write whose reply was lost, as its author knows it.
pub(crate) struct LostWrite<'a> {
    pub token: OpToken,
    /// The data version the write expected.
    pub expected: i32,
    /// The pool version it produces if it applies ([`Pool::version_at`]), by which the
    /// operation log names it.
    pub produced: i64,
    /// The offset of the pool it was planned on: a node found with a larger one (and the same
    /// epoch) was moved to a fresh node since, its history continued.
    pub offset: i64,
    /// The write moves the pool to a fresh node (deletes and creates it again).
    pub moves: bool,
    pub bytes: &'a [u8],
    pub kind: OpKind,
    /// The IDs the write took or pushed.
    pub moved: &'a [IdRange],
    /// The epoch of the pool the write was planned on.
    pub epoch: u64,
}

impl LostWrite<'_> {
    /// Whether the write applied, judged from a later free list (whose version is past
    /// `expected`, so the write can no longer apply), when the operation log no longer says.
    ///
    /// IDs a client holds are never free. A take that applied handed its IDs to no one but its
    /// author, who never used them: none of them can be free later. A push that did not apply
    /// left its IDs with its author: none of them can be free either. So one free ID among
    /// `moved` tells: the take did not apply, the push did. With none free, it cannot be told.
    fn told_by_free_list(&self, pool: &Pool) -> Option<bool> {
        let any_free = self
            .moved
            .iter()
            .any(|r| pool.free().first_overlap(r).is_some());
        match (self.kind, any_free) {
            (OpKind::Take, true) => Some(false),
            (OpKind::Push, true) => Some(true),
            _ => None,
        }
    }

    /// What a read of the pool at `version` (past `expected`) says of the write.
    fn told_by(&self, state: Cached) -> Resolution {
        match state.pool.op_at(self.produced) {
            Some(op) if op.token == self.token => Resolution::Applied(state),
            Some(_) => Resolution::NotApplied(state),
            None => match self.told_by_free_list(&state.pool) {
                Some(true) => Resolution::Applied(state),
                Some(false) => Resolution::NotApplied(state),
                None => Resolution::Unknown(format!(
                    "version {} is no longer in the node's operation log (now at {})",
                    self.produced,
                    state.pool.version_at(state.version)
                )),
            },
        }
    }
}

impl<S: Store> Core<S> {
    /// Finds out whether `write` applied; `planned` is the state it leaves if it did.
    ///
    /// The node records the token of the write that produced each recent version, so once the
    /// version has moved past `expected`, version `expected + 1` tells whose write won. While it
    /// has not moved, the identical write is sent again: both copies expect `expected`, so at most
    /// one of them can ever apply.
    pub(crate) async fn resolve(
        &self,
        path: &str,
        write: LostWrite<'_>,
        mut planned: Cached,
    ) -> Result<Resolution> {
        let expected = write.expected;
        let mut budget = Budget::start(self.options.retry);
        loop {
            if budget.expired() {
                return Ok(Resolution::Unknown(format!(
                    "store unreachable for {:?}",
                    budget.deadline()
                )));
            }
            // Only the deadline bounds resolution; counting attempts grows the backoff.
            budget.try_attempt();
            // A resend goes only on the session and connection of this read.
            let read_on = self.read_on();
            let node = match self.sync_and_read(path).await {
                Ok(node) => node,
                Err(StoreError::NoNode) => {
                    return Ok(Resolution::Unknown("the pool node was deleted".into()))
                }
                Err(err @ (StoreError::Refused(_) | StoreError::NotAuthorized { .. })) => {
                    return Ok(Resolution::Unknown(err.to_string()))
                }
                Err(_) => {
                    budget.backoff().await;
                    continue;
                }
            };
            let Ok(pool) = Pool::parse(path, &node.data) else {
                return Ok(Resolution::Unknown(
                    "the pool node is no longer parseable".into(),
                ));
            };
            // Another incarnation of the node (created again, or restored: a wipe and restore
            // recreates it under a new epoch, and a wiped ZooKeeper may reuse the old czxid):
            // a resend would apply to it, and its log says nothing of the write unless the write
            // is there by its token. A pool moved to a fresh node since (a larger offset, the
            // same epoch) continues the same history and log.
            let ours = pool
                .op_at(write.produced)
                .is_some_and(|op| op.token == write.token);
            let moved_on = pool.offset() > write.offset && pool.epoch() == write.epoch;
            let created_again = planned
                .created
                .is_some_and(|created| created != node.created);
            let epochs = [write.epoch, planned.pool.epoch()];
            if !ours && !moved_on && (created_again || !epochs.contains(&pool.epoch())) {
                return Ok(Resolution::Unknown(format!(
                    "the pool node is another incarnation (epoch {}, version {}; the write was \
                     on epoch {}): recreated or restored",
                    pool.epoch(),
                    node.version,
                    write.epoch
                )));
            }
            if !moved_on && pool.offset() == write.offset && node.version == expected {
                let resent = match write.moves {
                    true => self
                        .store
                        .replace(path, write.bytes, expected, read_on)
                        .await
                        .map(|created| (0, created)),
                    false => self
                        .store
                        .set(path, write.bytes, expected, read_on)
                        .await
                        .map(|written| (written, planned.created)),
                };
                match resent {
                    Ok((written, created)) => {
                        planned.version = written;
                        planned.created = created;
                        return Ok(Resolution::Applied(planned));
                    }
                    // Nothing sent: read again on the session in use now.
                    Err(StoreError::BadVersion | StoreError::PlanEnded) => {}
                    Err(StoreError::Unknown(_) | StoreError::Unavailable(_)) => {
                        budget.backoff().await
                    }
                    Err(other) => return Ok(Resolution::Unknown(other.to_string())),
                }
                continue;
            }
            if pool.version_at(node.version) < write.produced {
                return Ok(Resolution::Unknown(format!(
                    "the pool went back to version {} (recreated?)",
                    pool.version_at(node.version)
                )));
            }
            let state = Cached::new(node.version, Some(node.created), read_on, pool, true);
            return Ok(write.told_by(state));
        }
    }
}
