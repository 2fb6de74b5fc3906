//! The compare-and-set engine: plan an operation on the pool as this process knows it (or as
//! it reads it), write the pool node at the version planned on, and retry on conflicts within
//! the operation's budget; a write whose reply was lost goes to src/alloc/lost.rs.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::core::Core;
use super::lost::{LostWrite, Resolution};
use super::options::DEFAULT_MOVE_AT_VERSION;
use super::pool_watch::watch_pool;
use super::state::{figures, Cached, Held, Slot, Strategy, MOVE_RETRY_AFTER};
use crate::error::{Result, ZooidError};
use crate::format::{OpKind, OpRecord, OpToken, Pool, MAX_OP_LINE_BYTES};
use crate::idset::IdCategory;
use crate::range::IdRange;
use crate::retry::Budget;
use crate::stats::LostOutcome;
use crate::store::{ReadOn, Store, StoreError, Versioned};

/// What a plan decided, on the pool as read.
pub(crate) enum Plan {
    /// Write this pool: the operation moved `moved` (`count` IDs, as logged).
    Write {
        next: Pool,
        moved: Vec<IdRange>,
        count: u64,
    },
    /// Nothing to write.
    Keep,
}

/// What an update did.
pub(crate) enum Step {
    /// The write applied: the operation moved these IDs, on a pool of this strategy.
    Done {
        moved: Vec<IdRange>,
        strategy: Strategy,
    },
    /// The plan wrote nothing (the slot keeps the state it planned on).
    Kept,
}

/// Why the last attempt of an operation did not succeed.
pub(crate) enum LastFailure {
    None,
    Conflict,
    Unreachable(String),
}

/// A write as planned: the pool it leaves, and what is sent.
struct Prepared {
    /// The pool as planned.
    next: Pool,
    token: OpToken,
    bytes: Vec<u8>,
    moved: Vec<IdRange>,
    /// The write moves the pool to a fresh node (data version 0), past the 32-bit data version.
    moves: bool,
}

impl<S: Store> Core<S> {
    /// Holds `category`'s slot for one operation; the budget returned counts from the call,
    /// including the wait behind this process's other operations on the category.
    pub(crate) async fn hold(&self, category: &IdCategory) -> Result<(Held, Budget)> {
        self.hold_within(category, Budget::start(self.options.retry))
            .await
    }

    /// [`hold`](Self::hold) for an operation under way, within its `budget`.
    pub(crate) async fn hold_within(
        &self,
        category: &IdCategory,
        budget: Budget,
    ) -> Result<(Held, Budget)> {
        let slot = self.categories.slot(category.name());
        match tokio::time::timeout(budget.remaining(), slot.lock_owned()).await {
            Ok(mut held) => {
                // Nothing remembered survives a write in doubt, nor a reconnection.
                held.settle_doubt();
                self.forget_earlier_connection(&mut held);
                Ok((held, budget))
            }
            Err(_) => Err(ZooidError::Timeout {
                what: category.name().to_string(),
                after: budget.elapsed(),
            }),
        }
    }

    /// The pool as this operation may plan on it: the state the slot remembers while it is
    /// good, or the pool read now (and remembered).
    pub(crate) async fn current<'s>(
        &self,
        category: &IdCategory,
        slot: &'s mut Slot,
        budget: &mut Budget,
    ) -> Result<&'s Cached> {
        self.forget_stale(slot);
        let state = match slot.cached.take() {
            Some(state) => state,
            None => {
                // The read is the first attempt's, whatever comes of it.
                tracing::Span::current().record("attempt", budget.attempts().max(1));
                self.read_state(category.name(), slot, budget, true, None)
                    .await?
            }
        };
        Ok(slot.cached.insert(state))
    }

    /// Forgets the slot's state when the pool changed since (its watch fired), when it was
    /// known on an earlier session, or when it is older than [`Core::remember_for`].
    fn forget_stale(&self, slot: &mut Slot) {
        if slot.changed.swap(false, Ordering::AcqRel) {
            slot.cached = None;
        }
        self.forget_earlier_connection(slot);
        // A state known on an earlier session may be of a node that no longer exists: a wipe of
        // ZooKeeper ends every session, and a restore creates the node again, maybe at the same
        // version. Read it again.
        let generation = self.read_on().generation;
        if slot.cached.as_ref().is_some_and(|c| {
            c.read_on.generation != generation || c.at.elapsed() > self.remember_for()
        }) {
            slot.cached = None;
        }
    }

    /// Forgets all the slot remembers (the pool, the strategy's memory) when it was remembered
    /// on an earlier connection ([`SessionStatus::connection`]). Only a restart of the servers
    /// can roll their data back to an older snapshot, and a restart drops every connection;
    /// a session the snapshot knew may then reattach, and the pool reach the remembered data
    /// version again with other contents, so a compare-and-set planned on the remembered state
    /// would apply to a pool it was not planned on. After a reconnection the pool is read again.
    ///
    /// [`SessionStatus::connection`]: crate::zk::SessionStatus::connection
    fn forget_earlier_connection(&self, slot: &mut Slot) {
        let connection = self.read_on().connection;
        if slot.connection != connection {
            slot.connection = connection;
            slot.forget();
        }
    }

    /// Applies `plan` to the pool with compare-and-set until it sticks or `budget` runs out,
    /// refusing a pool older than seen before when `refuse_older` (everything but the repair of
    /// such a pool). A plan's error on a remembered state is not trusted: the pool is read again
    /// and planned on once more.
    pub(crate) async fn update(
        &self,
        category: &IdCategory,
        slot: &mut Slot,
        budget: &mut Budget,
        kind: OpKind,
        refuse_older: bool,
        plan: impl Fn(&Pool, Strategy) -> Result<Plan>,
    ) -> Result<Step> {
        let result = self
            .attempts(category, slot, budget, kind, refuse_older, plan)
            .await;
        self.stats.retries(
            category.name(),
            u64::from(budget.attempts().saturating_sub(1)),
        );
        result
    }

    /// The attempts of [`update`](Self::update).
    async fn attempts(
        &self,
        category: &IdCategory,
        slot: &mut Slot,
        budget: &mut Budget,
        kind: OpKind,
        refuse_older: bool,
        plan: impl Fn(&Pool, Strategy) -> Result<Plan>,
    ) -> Result<Step> {
        let path = category.name();
        let mut failure = LastFailure::None;
        let mut conflicts = 0u32;
        // The version this process last wrote, when it yielded instead of writing on it.
        let mut mine = None;
        // Whether the pool was read after a `sync` in this update (see `refusal_after_sync`).
        let mut synced = false;
        // A re-plan on a fresh read (after a refusal on a remembered state, or after that `sync`)
        // is part of the attempt that refused, so that a refusal on the last attempt (or with
        // one attempt allowed) still comes back as the refusal.
        let mut replan = false;
        let fair = self.options.fair_pacing;
        while std::mem::take(&mut replan) || budget.try_attempt() {
            tracing::Span::current().record("attempt", budget.attempts());
            // Every attempt, not only the first: a state kept across a backoff (after an
            // unreachable store) may be of a session or connection that ended meanwhile.
            self.forget_stale(slot);
            if fair && budget.attempts() == 1 && !synced && slot.pace.contended() {
                // Contended: yield to the others first, then plan on what the store holds after
                // the wait rather than on the version this process last wrote (src/pace.rs).
                budget
                    .sleep_up_to(slot.pace.wait_ceiling(1).min(self.options.retry.max_delay))
                    .await;
                mine = slot.cached.take().filter(|c| !c.fresh).map(|c| c.version);
            }
            let current = match slot.cached.take() {
                Some(state) => state,
                None => {
                    self.read_state(path, slot, budget, refuse_older, mine.take())
                        .await?
                }
            };
            let prepared = match plan(&current.pool, current.strategy) {
                Ok(Plan::Write { next, moved, count }) => {
                    let may_move = slot.move_refused_at.is_none_or(|refused| {
                        current.version == i32::MAX
                            || current.version >= refused.saturating_add(MOVE_RETRY_AFTER)
                    });
                    self.prepare(path, &current, next, moved, count, kind, may_move)?
                }
                Ok(Plan::Keep) => {
                    slot.cached = Some(current);
                    return Ok(Step::Kept);
                }
                // A remembered state may be stale: decide only on what the store holds now, in
                // the same attempt (the state is gone from the slot: the next plan is on a read).
                Err(_) if !current.fresh => {
                    replan = true;
                    continue;
                }
                Err(err) if !synced && refusal_after_sync(&err) => {
                    // Read now, but perhaps from a server behind the leader: catch it up first.
                    self.sync_to_decide(path, budget, &mut synced, &mut replan, &mut failure)
                        .await;
                    continue;
                }
                Err(err) => {
                    slot.cached = Some(current);
                    return Err(err);
                }
            };
            if kind == OpKind::Push {
                let size = self.projected_size(&prepared.next, prepared.bytes.len());
                if size > self.options.max_pool_bytes {
                    if !current.fresh {
                        // Decide on what the store holds now, not on a remembered state.
                        replan = true;
                        continue;
                    }
                    if !synced {
                        self.sync_to_decide(path, budget, &mut synced, &mut replan, &mut failure)
                            .await;
                        continue;
                    }
                    slot.cached = Some(current);
                    return Err(ZooidError::PoolFull {
                        category: path.to_string(),
                        bytes: size,
                        limit: self.options.max_pool_bytes,
                    });
                }
            }
            match self
                .send(path, slot, current, prepared, kind, refuse_older)
                .await?
            {
                Sent::Done(moved, strategy) => return Ok(Step::Done { moved, strategy }),
                Sent::Conflict => {
                    self.stats.conflict(path);
                    failure = LastFailure::Conflict;
                    conflicts += 1;
                    if fair {
                        slot.pace.on_conflict();
                        let wait = slot.pace.wait_ceiling(conflicts + 1);
                        budget
                            .sleep_up_to(wait.min(self.options.retry.max_delay))
                            .await;
                    } else {
                        budget.backoff().await;
                    }
                }
                Sent::Unreachable(why) => {
                    failure = LastFailure::Unreachable(why);
                    budget.backoff().await;
                }
                Sent::NotApplied => {}
            }
        }
        Err(self.budget_error(category, budget, failure))
    }

    /// Catches the server up (`sync`) before a refusal is decided: on success the same attempt
    /// reads and plans again (`replan`); on failure the next attempt does, after a backoff.
    async fn sync_to_decide(
        &self,
        path: &str,
        budget: &mut Budget,
        synced: &mut bool,
        replan: &mut bool,
        failure: &mut LastFailure,
    ) {
        match self.store.sync(path).await {
            Ok(()) => (*synced, *replan) = (true, true),
            Err(e) => {
                *failure = LastFailure::Unreachable(e.to_string());
                budget.backoff().await;
            }
        }
    }

    /// How long a remembered state is planned on ([`Cached::REMEMBER_FOR`]); not at all when
    /// the move threshold is lowered (a test hook), where a move cycle is a few writes.
    fn remember_for(&self) -> std::time::Duration {
        if self.options.move_at_version < DEFAULT_MOVE_AT_VERSION {
            std::time::Duration::ZERO
        } else {
            Cached::REMEMBER_FOR
        }
    }

    /// Reads the pool node (caught up with a `sync` when it looks older than seen before); arms
    /// the watch of a pool in block allocation.
    async fn read_state(
        &self,
        path: &str,
        slot: &mut Slot,
        budget: &mut Budget,
        refuse_older: bool,
        mine: Option<i32>,
    ) -> Result<Cached> {
        // Before the read: a session replaced meanwhile makes the state read stale at once, and
        // a write planned on it is not sent.
        let read_on = self.read_on();
        let mut node = self.read(path, budget).await?;
        if let Some(mine) = mine {
            let behind = node.version.saturating_sub(mine).max(0);
            slot.pace.on_fresh_read(u32::try_from(behind).unwrap_or(0));
        }
        let mut pool = Pool::parse(path, &node.data)?;
        if refuse_older
            && self
                .categories
                .is_older(path, pool.epoch(), pool.version_at(node.version))
        {
            // A new session may have reached a server that lags behind the one the newer state
            // came from: catch it up before concluding anything.
            if self.store.sync(path).await.is_ok() {
                node = self.read(path, budget).await?;
                pool = Pool::parse(path, &node.data)?;
            }
        }
        if refuse_older {
            self.categories
                .observe(path, pool.epoch(), pool.version_at(node.version))?;
        }
        let limit = self.options.max_pool_bytes;
        self.stats
            .pool_seen(figures(path, &pool, node.data.len(), node.version, limit));
        let session = self.zk.as_ref();
        slot.known.store(node.version, Ordering::Release);
        if let (Some(_), Some(session)) = (pool.blocks(), session) {
            let (known, armed, changed) = (&slot.known, &slot.armed, &slot.changed);
            watch_pool(
                session,
                path,
                Arc::clone(known),
                Arc::clone(armed),
                Arc::clone(changed),
            );
        }
        Ok(Cached::new(
            node.version,
            Some(node.created),
            read_on,
            pool,
            true,
        ))
    }

    /// Lays out the write of `next` over `current` and logs the operation. A single-node pool at
    /// `move_at_version` or above moves to a fresh node with this write, when `may_move`. A pool
    /// in block allocation (format 4) is never written with a free list of its own: its free
    /// IDs are hole nodes.
    #[allow(clippy::too_many_arguments)]
    fn prepare(
        &self,
        path: &str,
        current: &Cached,
        mut next: Pool,
        moved: Vec<IdRange>,
        count: u64,
        kind: OpKind,
        may_move: bool,
    ) -> Result<Prepared> {
        if next.blocks().is_some() && !next.free().is_empty() {
            // No plan does this; refuse it rather than write a node no reader accepts.
            return Err(ZooidError::InvalidArgument(format!(
                "{path}: a write would leave free ranges in a format-4 pool node; nothing written"
            )));
        }
        // A single-node pool near the end of ZooKeeper's 32-bit data version moves to a fresh
        // node with this write; its pool version (the operation log's) goes on from here.
        let moves =
            may_move && current.version >= self.options.move_at_version && next.blocks().is_none();
        if !moves && current.version == i32::MAX {
            return Err(ZooidError::VersionWrap {
                path: path.to_string(),
                version: current.version,
            });
        }
        let version = current.pool.version_at(current.version) + 1;
        if moves && version > crate::format::MAX_OFFSET {
            // The fresh node could not say where its count goes on (nor could any reader).
            return Err(ZooidError::VersionWrap {
                path: path.to_string(),
                version: current.version,
            });
        }
        if moves {
            next.set_offset(version);
        }
        let token = OpToken::random();
        let op = OpRecord {
            version,
            token,
            kind,
            count,
        };
        next.record(op, self.options.op_log_len);
        let bytes = next.render().into_bytes();
        Ok(Prepared {
            next,
            token,
            bytes,
            moved,
            moves,
        })
    }

    /// Sends a prepared write of `current`'s pool and takes in its reply: the state it leaves
    /// goes to the slot.
    async fn send(
        &self,
        path: &str,
        slot: &mut Slot,
        current: Cached,
        write: Prepared,
        kind: OpKind,
        refuse_older: bool,
    ) -> Result<Sent> {
        let version = if write.moves { 0 } else { current.version + 1 };
        let sent = tokio::time::Instant::now();
        // Before sending: the watch must not take this process's own write for another's.
        slot.known.store(version, Ordering::Release);
        let reply = if write.moves {
            tracing::info!(
                category = path,
                version = current.version,
                "moving the pool node to a fresh one"
            );
            self.store
                .replace(path, &write.bytes, current.version, current.read_on)
                .await
                .map(|created| (0, created))
        } else {
            self.store
                .set(path, &write.bytes, current.version, current.read_on)
                .await
                .map(|written| (written, current.created))
        };
        match reply {
            Ok((written, created)) => {
                slot.known.store(written, Ordering::Release);
                if !refuse_older {
                    self.categories.forget_seen(path);
                }
                // The write applied: its IDs are the caller's whatever was seen meanwhile.
                self.categories.note_written(
                    path,
                    write.next.epoch(),
                    write.next.version_at(written),
                );
                let limit = self.options.max_pool_bytes;
                let bytes = write.bytes.len();
                self.stats
                    .pool_seen(figures(path, &write.next, bytes, written, limit));
                slot.pace.on_success(sent.elapsed());
                let state = Cached::new(written, created, current.read_on, write.next, false);
                let strategy = state.strategy;
                slot.cached = Some(state);
                Ok(Sent::Done(write.moved, strategy))
            }
            Err(StoreError::BadVersion) => Ok(Sent::Conflict),
            // Nothing sent: the slot keeps no state, and the next attempt, after a backoff, reads
            // again on the session in use then.
            Err(err @ StoreError::PlanEnded) => Ok(Sent::Unreachable(err.to_string())),
            Err(StoreError::NoNode) => Err(ZooidError::NotFound {
                category: path.to_string(),
            }),
            Err(StoreError::Unavailable(why)) => {
                slot.cached = Some(current);
                Ok(Sent::Unreachable(why))
            }
            // A mutant the simulator must find (tests/sim): a lost reply taken as not applied.
            #[cfg(zooid_mutant = "lost_reply_not_applied")]
            Err(StoreError::Unknown(_)) => Ok(Sent::NotApplied),
            Err(StoreError::Unknown(why)) => {
                tracing::warn!(category = path, %why, op = kind.as_str(), "reply lost; resolving the outcome");
                self.after_lost_reply(path, slot, &current, write, kind)
                    .await
            }
            Err(
                other @ (StoreError::NodeExists
                | StoreError::Refused(_)
                | StoreError::NotAuthorized { .. }),
            ) if write.moves => {
                tracing::error!(category = path, version = current.version, why = %other, "the pool node cannot be moved to a fresh one; writing it in place until its last data version");
                if current.version == i32::MAX {
                    return Err(ZooidError::VersionWrap {
                        path: path.to_string(),
                        version: current.version,
                    });
                }
                // Nothing applied: plan again, and write in place.
                slot.move_refused_at = Some(current.version);
                slot.cached = Some(current);
                Ok(Sent::NotApplied)
            }
            Err(
                other @ (StoreError::NodeExists
                | StoreError::Refused(_)
                | StoreError::NotAuthorized { .. }),
            ) => Err(other.into_zooid(path)),
        }
    }

    /// Resolves a write whose reply was lost; the state found is kept only for a single-node
    /// pool (one in block allocation is read again, arming its watch).
    async fn after_lost_reply(
        &self,
        path: &str,
        slot: &mut Slot,
        current: &Cached,
        write: Prepared,
        kind: OpKind,
    ) -> Result<Sent> {
        let expected = current.version;
        let lost = LostWrite {
            token: write.token,
            expected,
            produced: current.pool.version_at(expected) + 1,
            offset: current.pool.offset(),
            moves: write.moves,
            bytes: &write.bytes,
            kind,
            moved: &write.moved,
            epoch: current.pool.epoch(),
        };
        // The state the write leaves if it applied (a move's new incarnation is read, not known).
        let (version, created) = match write.moves {
            true => (0, None),
            false => (expected + 1, current.created),
        };
        let planned = Cached::new(version, created, current.read_on, write.next, false);
        let plannable = |s: &Cached| s.strategy == Strategy::Single;
        match self.resolve(path, lost, planned).await? {
            Resolution::Applied(state) => {
                self.stats.lost_reply(path, LostOutcome::Applied, 0);
                let strategy = state.strategy;
                slot.cached = Some(state).filter(plannable);
                Ok(Sent::Done(write.moved, strategy))
            }
            Resolution::NotApplied(state) => {
                self.stats.lost_reply(path, LostOutcome::NotApplied, 0);
                slot.cached = Some(state).filter(plannable);
                Ok(Sent::NotApplied)
            }
            Resolution::Unknown(why) => {
                // Counted by the operation's caller (the service's `observed`).
                tracing::error!(category = path, %why, op = kind.as_str(), ids = ?write.moved, "outcome unknown; IDs leaked");
                Err(ZooidError::OutcomeUnknown {
                    category: path.to_string(),
                    op: kind.into(),
                    ids: write.moved,
                    leaked_within: None,
                })
            }
        }
    }

    /// The store's session generation and connection now, taken before a read a write is
    /// planned on ([`Store::read_on`]).
    pub(crate) fn read_on(&self) -> ReadOn {
        self.store.read_on()
    }

    /// Reads a node after catching its server up (`sync`).
    pub(crate) async fn sync_and_read(&self, path: &str) -> Result<Versioned, StoreError> {
        self.store.sync(path).await?;
        self.store.get(path).await
    }

    /// Reads a node, retrying while the store is unreachable.
    pub(crate) async fn read(&self, path: &str, budget: &mut Budget) -> Result<Versioned> {
        loop {
            match self.store.get(path).await {
                Ok(node) => return Ok(node),
                Err(StoreError::NoNode) => {
                    return Err(ZooidError::NotFound {
                        category: path.to_string(),
                    })
                }
                Err(StoreError::Unknown(why) | StoreError::Unavailable(why)) => {
                    if budget.expired() {
                        return Err(ZooidError::ConnectionLost {
                            category: path.to_string(),
                            reason: why,
                        });
                    }
                    budget.backoff().await;
                }
                Err(other) => return Err(other.into_zooid(path)),
            }
        }
    }

    /// The error of an operation whose budget ran out, after its last failure.
    pub(crate) fn budget_error(
        &self,
        category: &IdCategory,
        budget: &Budget,
        failure: LastFailure,
    ) -> ZooidError {
        let name = category.name().to_string();
        match failure {
            LastFailure::Unreachable(reason) => ZooidError::ConnectionLost {
                category: name,
                reason,
            },
            LastFailure::Conflict => ZooidError::Contention {
                category: name,
                attempts: budget.attempts(),
                elapsed: budget.elapsed(),
            },
            LastFailure::None => ZooidError::Timeout {
                what: name,
                after: budget.elapsed(),
            },
        }
    }

    /// The node's size once its operation log is full: a push must leave room for the log so
    /// that later takes, which never add ranges, always fit.
    fn projected_size(&self, pool: &Pool, bytes: usize) -> usize {
        let missing = self.options.op_log_len.saturating_sub(pool.log().count());
        bytes + missing * MAX_OP_LINE_BYTES
    }
}

/// What sending one write came to.
enum Sent {
    /// It applied (found applied, after a lost reply): these IDs moved, on a pool of this
    /// strategy.
    Done(Vec<IdRange>, Strategy),
    /// Another write came first.
    Conflict,
    /// The store could not be reached.
    Unreachable(String),
    /// Its reply was lost and it had not applied: plan again.
    NotApplied,
}

/// Whether a plan's refusal says something of the pool that another process's write, known to
/// the caller outside ZooKeeper, may have changed: decided only on a read made after a `sync`, as
/// a server behind the leader may not have applied that write yet (IDs another process took
/// and handed over would look free: `AlreadyFree`; IDs pushed or a ceiling raised, absent).
fn refusal_after_sync(err: &ZooidError) -> bool {
    matches!(
        err,
        ZooidError::AlreadyFree { .. }
            | ZooidError::Exhausted { .. }
            | ZooidError::ReservationExhausted { .. }
    )
}
