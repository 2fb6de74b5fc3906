//! The operator's operations on a pool: create it (single node or block allocation with hole
//! nodes), restore it from its durable record, repair it against one, raise its ceiling.

use std::cell::Cell;

use super::blocks::generations;
use super::core::{count_of, Core};
use super::engine::{LastFailure, Plan, Step};
use super::options::{Layout, Restored};
use super::state::{Cached, Strategy};
use crate::error::{Result, ZooidError};
use crate::format::{
    holes_parent, returned_parent, sequence_parent, OpKind, OpRecord, OpToken, Pool, MAX_TAKE,
};
use crate::idset::IdCategory;
use crate::range::IdRange;
use crate::retry::Budget;
use crate::store::{Store, StoreError};
use crate::zk::{Create, Multi, MultiFailed, Verdict, Zk, ZooKeeperExt};

impl<S: Store> Core<S> {
    /// Creates a single-node category (see
    /// [`create_category`](Self::create_category)).
    pub(super) async fn create_single(
        &self,
        category: &IdCategory,
        first: i64,
        last: i64,
        acl: Option<&[crate::zk::Acl]>,
        ceiling: Option<i64>,
    ) -> Result<()> {
        if let Some(acl) = acl {
            crate::zk::acl::check_acl_list(acl)?;
        }
        check_ceiling(ceiling, last)?;
        let bounds = category_bounds(first, last)?;
        let path = category.name();
        let mut pool = Pool::new(bounds);
        pool.set_ceiling(ceiling);
        let (token, bytes) = self.first_version(&mut pool, bounds.len());
        let mut budget = Budget::start(self.options.retry);
        let mut failure = LastFailure::None;
        // Whether an attempt's reply was lost: it may have made the node.
        let mut in_doubt = false;
        while budget.try_attempt() {
            tracing::Span::current().record("attempt", budget.attempts());
            let created = match acl {
                None => self.store.create(path, &bytes).await,
                Some(acl) => self.store.create_with_acl(path, &bytes, acl).await,
            };
            match created {
                Ok(()) => {}
                Err(StoreError::NodeExists) => {
                    // Ours, if an earlier attempt of this call applied before its reply was lost.
                    self.created_by(path, token, in_doubt, &mut budget).await?;
                }
                Err(StoreError::Unknown(why)) => {
                    in_doubt = true;
                    failure = LastFailure::Unreachable(why);
                    budget.backoff().await;
                    continue;
                }
                Err(StoreError::Unavailable(why)) => {
                    failure = LastFailure::Unreachable(why);
                    budget.backoff().await;
                    continue;
                }
                Err(other) => return Err(other.into_zooid(path)),
            }
            let limit = self.options.max_pool_bytes;
            let figures = super::state::figures(path, &pool, bytes.len(), 0, limit);
            self.stats.pool_seen(figures);
            self.remember_created(category, pool).await;
            tracing::info!(category = path, %bounds, "category created");
            return Ok(());
        }
        Err(self.create_failed(category, &budget, failure, in_doubt))
    }

    /// Creates a category in block allocation with hole nodes (format 4, see
    /// [`create_category`](Self::create_category)): the pool node, its first
    /// generation's sequence parent, the parent of the receipts and that of the holes, in one
    /// `multi`.
    pub(super) async fn create_blocks(
        &self,
        category: &IdCategory,
        first: i64,
        last: i64,
        unit: u64,
        ceiling: Option<i64>,
    ) -> Result<()> {
        if unit == 0 || unit > MAX_TAKE {
            return Err(ZooidError::InvalidArgument(format!(
                "block size {unit}: need 1..={MAX_TAKE}"
            )));
        }
        check_ceiling(ceiling, last)?;
        let bounds = category_bounds(first, last)?;
        let zk = self.on_zookeeper()?.zk;
        let path = category.name();
        let mut pool = Pool::with_hole_nodes(bounds, unit);
        pool.set_ceiling(ceiling);
        let (token, bytes) = self.first_version(&mut pool, bounds.len());
        let parent = sequence_parent(path, 0);
        let mut budget = Budget::start(self.options.retry);
        let mut failure = LastFailure::None;
        // Whether an attempt's reply was lost: it may have made the nodes.
        let mut in_doubt = false;
        while budget.try_attempt() {
            tracing::Span::current().record("attempt", budget.attempts());
            let generation = zk.generation();
            let options = Create::persistent();
            let created = async {
                if let Some(dir) = crate::store::parent(path) {
                    let made = zk.create_all(generation, dir, None).await;
                    made.map_err(|failure| MultiFailed {
                        index: None,
                        failure,
                    })?;
                }
                let mut multi = Multi::new();
                multi
                    .create(path, &bytes, &options)
                    .create(&parent, &[], &options)
                    .create(&returned_parent(path), &[], &options)
                    .create(&holes_parent(path), &[], &options);
                multi.commit(&**zk, generation).await.map(drop)
            };
            let err = match created.await {
                Ok(()) => {
                    self.remember_created(category, pool).await;
                    tracing::info!(category = path, %bounds, unit, "category created (block allocation)");
                    return Ok(());
                }
                Err(failed) => failed.failure,
            };
            match err.verdict {
                Verdict::NodeExists => {
                    // Ours, if an earlier attempt applied before its reply was lost.
                    self.created_by(path, token, in_doubt, &mut budget).await?;
                    self.remember_created(category, pool).await;
                    tracing::info!(category = path, %bounds, unit, "category created (block allocation)");
                    return Ok(());
                }
                Verdict::NotAuthorized => {
                    return Err(crate::zk::not_authorized(path, zk.options()))
                }
                Verdict::BadVersion | Verdict::NoNode | Verdict::Refused => {
                    return Err(ZooidError::Store {
                        path: path.to_string(),
                        reason: err.to_string(),
                    })
                }
                // (`NotSent` only for a write bound to a connection, which this is not.)
                Verdict::Expired | Verdict::Closed | Verdict::Unknown | Verdict::NotSent => {
                    in_doubt |= err.verdict == Verdict::Unknown;
                    failure = LastFailure::Unreachable(err.to_string());
                    budget.backoff().await;
                }
            }
        }
        Err(self.create_failed(category, &budget, failure, in_doubt))
    }

    /// A create that ran out of attempts: `OutcomeUnknown` when a lost reply may have made the
    /// category (the caller cannot tell, and a create sent again would find it there), else
    /// what the last failure says.
    fn create_failed(
        &self,
        category: &IdCategory,
        budget: &Budget,
        failure: LastFailure,
        in_doubt: bool,
    ) -> ZooidError {
        if in_doubt {
            return create_in_doubt(category.name());
        }
        self.budget_error(category, budget, failure)
    }

    /// Logs a new pool's creation in it; returns the creation's token and the node's content.
    fn first_version(&self, pool: &mut Pool, count: u64) -> (OpToken, Vec<u8>) {
        let token = OpToken::random();
        let op = OpRecord {
            version: 0,
            token,
            kind: OpKind::Create,
            count,
        };
        pool.record(op, self.options.op_log_len);
        (token, pool.render().into_bytes())
    }

    /// Remembers a pool this process just created, at version 0, with its incarnation (read:
    /// lost-reply resolution compares it). Not remembered when that read fails or finds the
    /// node written already.
    async fn remember_created(&self, category: &IdCategory, pool: Pool) {
        let slot = self.categories.slot(category.name());
        let read_on = self.read_on();
        let created = match self.store.get(category.name()).await {
            Ok(node) if node.version == 0 => node.created,
            _ => {
                slot.lock().await.cached = None;
                return;
            }
        };
        slot.lock().await.cached = Some(Cached::new(0, Some(created), read_on, pool, false));
    }

    /// Ok when pool `path`, found there by a create, was made by the create with `token` (an
    /// earlier attempt whose reply was lost); `CategoryExists` when another create made it;
    /// `OutcomeUnknown` when the pool's log no longer holds its creation and an attempt of ours
    /// may have applied (`in_doubt`).
    async fn created_by(
        &self,
        path: &str,
        token: OpToken,
        in_doubt: bool,
        budget: &mut Budget,
    ) -> Result<()> {
        let exists = || ZooidError::CategoryExists {
            category: path.to_string(),
        };
        let node = self.read(path, budget).await?;
        let Ok(pool) = Pool::parse(path, &node.data) else {
            return Err(exists()); // Not a node this library writes: not ours.
        };
        match pool.op_at(0) {
            Some(op) if op.token == token => Ok(()),
            None if in_doubt => Err(create_in_doubt(path)),
            _ => Err(exists()),
        }
    }

    /// See [`restore_category`](Self::restore_category); `unit`: the block size of a category
    /// in block allocation, which comes back in block allocation, its fresh blocks above
    /// `ceiling` (the pool node, its generation's sequence parent, the parents of the receipts
    /// and of the holes, created in one `multi`).
    pub(super) async fn restore(
        &self,
        category: &IdCategory,
        bounds: IdRange,
        ceiling: i64,
        epoch: u64,
        layout: Layout,
    ) -> Result<Restored> {
        let path = category.name();
        let mut pool = match layout {
            Layout::SingleNode => Pool::new(bounds),
            Layout::HoleNodes { unit } => Pool::with_hole_nodes(bounds, unit),
        };
        pool.clear_through(ceiling, bounds.start(), epoch);
        pool.set_ceiling(Some(ceiling));
        let free = IdRange::new(ceiling.saturating_add(1).max(bounds.start()), bounds.end())
            .map_or(0, |above| above.len());
        let (token, bytes) = self.first_version(&mut pool, free);
        let mut budget = Budget::start(self.options.retry);
        while budget.try_attempt() {
            let created = match pool.blocks() {
                None => self.store.create(path, &bytes).await,
                Some(layout) => {
                    create_block_pool(self.on_zookeeper()?.zk, path, &bytes, layout.generation)
                        .await
                }
            };
            match created {
                Ok(()) => {
                    tracing::warn!(
                        category = path,
                        ceiling,
                        epoch,
                        ?layout,
                        "category restored from the durable record"
                    );
                    return Ok(Restored::Created);
                }
                Err(StoreError::NodeExists) => {
                    // Ours (an attempt whose reply was lost), or a pool to repair.
                    return match self.created_by(path, token, false, &mut budget).await {
                        Ok(()) => Ok(Restored::Created),
                        Err(ZooidError::CategoryExists { .. }) => {
                            self.repair_pool(category, ceiling, epoch).await
                        }
                        Err(err) => Err(err),
                    };
                }
                Err(StoreError::Unknown(_) | StoreError::Unavailable(_)) => {
                    budget.backoff().await;
                }
                Err(other) => return Err(other.into_zooid(path)),
            }
        }
        Err(ZooidError::ConnectionLost {
            category: path.to_string(),
            reason: "restore: store unreachable".into(),
        })
    }

    /// See [`repair`](Self::repair). Plans on the store as it is now, not on a remembered state,
    /// and accepts a pool older than seen before (that is what it repairs). A pool in block
    /// allocation moves to a new generation above both the record and every block claimed: its
    /// generation is sealed first, so that no claim lands after its frontier was read.
    pub(super) async fn repair_pool(
        &self,
        category: &IdCategory,
        ceiling: i64,
        epoch: u64,
    ) -> Result<Restored> {
        let path = category.name();
        let (mut slot, mut budget) = self.hold(category).await?;
        // Hole IDs given up, over every attempt.
        let mut holes_removed = 0;
        loop {
            // The pool is read again, and the holes given up below listed again by the next take.
            slot.forget();
            // The generation sealed for this attempt and its final frontier (block pools).
            // Sealed first (a missing sequence parent created at the version read, then
            // sealed): no claim and no hole take planned before can apply any more (each checks
            // that its generation is open), so the frontier is final and the listing the holes
            // are given up from is the last word on them.
            let sealed = match self
                .seal_for_attempt(category, &mut budget, |pool| {
                    pool.ceiling().is_none_or(|c| c < ceiling)
                })
                .await?
            {
                Sealing::MovedOn => continue,
                Sealing::NotNeeded => None,
                Sealing::Sealed {
                    generation,
                    frontier,
                } => {
                    if let Some(session) = self.zk.as_ref() {
                        holes_removed +=
                            super::blocks::repair::give_up_holes(session, path, ceiling).await?;
                    }
                    Some((generation, frontier))
                }
            };
            let moved_on = Cell::new(false);
            let plan = |pool: &Pool, _| {
                if pool.ceiling().is_some_and(|c| c >= ceiling) {
                    return Ok(Plan::Keep);
                }
                let frontier = match (pool.blocks(), sealed) {
                    (None, _) => i64::MIN,
                    (Some(b), Some((generation, frontier))) if b.generation == generation => {
                        frontier
                    }
                    // Not the generation sealed (another process moved it on): seal again.
                    (Some(_), _) => {
                        moved_on.set(true);
                        return Ok(Plan::Keep);
                    }
                };
                let mut next = pool.clone();
                let removed = next.clear_through(ceiling, frontier, pool.epoch().max(epoch));
                let count = count_of(&removed);
                next.set_ceiling(Some(ceiling));
                tracing::error!(category = path, ceiling, old_ceiling = ?pool.ceiling(), removed = count, "pool is behind the durable record (rolled back?): removed its free IDs at or below the recorded ceiling");
                Ok(Plan::Write {
                    next,
                    moved: removed,
                    count,
                })
            };
            let step = self
                .update(
                    category,
                    &mut slot,
                    &mut budget,
                    OpKind::Ceiling,
                    false,
                    plan,
                )
                .await?;
            let outcome = match step {
                Step::Done { moved, strategy } => {
                    let written = slot
                        .cached
                        .as_ref()
                        .map(|state| (state.version, state.read_on));
                    if let Strategy::Blocks(layout) = strategy {
                        let on = self.on_zookeeper()?;
                        match written {
                            // The new generation's sequence parent while the pool is as
                            // written (a take creates it too).
                            Some((version, read_on)) => {
                                generations::ensure_parent_at(
                                    on.zk,
                                    path,
                                    layout.generation,
                                    version,
                                    read_on,
                                )
                                .await?;
                            }
                            // Applied as a lost reply's resolution found, which keeps no state
                            // of a pool in block allocation: the pool as it is now says which
                            // generation to number.
                            None => on.repair_sequence_parent(path).await?,
                        }
                        if let Some((sealed, _)) = sealed {
                            generations::retire_before(on.zk, path, sealed);
                        }
                    }
                    Restored::Repaired {
                        removed: count_of(&moved) + holes_removed,
                    }
                }
                Step::Kept if moved_on.get() => {
                    if !budget.try_attempt() {
                        return Err(self.budget_error(category, &budget, LastFailure::Conflict));
                    }
                    continue;
                }
                // Another writer raised the ceiling past the record meanwhile: the holes this
                // repair gave up before are still its report's.
                Step::Kept if holes_removed > 0 => Restored::Repaired {
                    removed: holes_removed,
                },
                Step::Kept => Restored::Kept,
            };
            return Ok(outcome);
        }
    }

    /// Raises the ceiling with a versioned write (see [`raise_ceiling`](Self::raise_ceiling)).
    /// A pool in block allocation without a ceiling gets its first one only once its generation
    /// is sealed: claims of fresh blocks check that their generation is open, not the pool node,
    /// so none planned without a ceiling applies after it.
    /// Returns the ceiling in force after it: `ceiling` clamped to the category's last ID.
    pub(super) async fn raise(&self, category: &IdCategory, ceiling: i64) -> Result<i64> {
        let name = category.name();
        if ceiling < 0 {
            return Err(ZooidError::InvalidArgument(format!(
                "ceiling {ceiling} of {name}: a ceiling is 0 or more"
            )));
        }
        let (mut slot, mut budget) = self.hold(category).await?;
        loop {
            slot.forget();
            // The generation sealed for this attempt (a first ceiling of a block pool).
            #[cfg(not(zooid_mutant = "first_ceiling_unsealed"))]
            let first = |pool: &Pool| pool.ceiling().is_none();
            #[cfg(zooid_mutant = "first_ceiling_unsealed")]
            let first = |_: &Pool| false;
            let sealed = match self.seal_for_attempt(category, &mut budget, first).await? {
                Sealing::MovedOn => continue,
                Sealing::NotNeeded => None,
                Sealing::Sealed { generation, .. } => Some(generation),
            };
            let moved_on = Cell::new(false);
            let in_force = Cell::new(ceiling);
            let plan = |pool: &Pool, _| {
                let target = ceiling.min(pool.bounds().end());
                in_force.set(target);
                if let Some(current) = pool.ceiling().filter(|&c| c > target) {
                    return Err(ZooidError::WentBackwards {
                        what: format!("ceiling of {name}"),
                        reason: format!("raising it to {target} would lower it from {current}"),
                    });
                }
                #[cfg(not(zooid_mutant = "first_ceiling_unsealed"))]
                if let (Some(layout), None) = (pool.blocks(), pool.ceiling()) {
                    if sealed != Some(layout.generation) {
                        // Not the generation sealed (moved on, or a first ceiling not
                        // planned): seal again.
                        moved_on.set(true);
                        return Ok(Plan::Keep);
                    }
                }
                let mut next = pool.clone();
                let raised = target.abs_diff(pool.ceiling().unwrap_or(target));
                next.set_ceiling(Some(target));
                Ok(Plan::Write {
                    next,
                    moved: Vec::new(),
                    count: raised,
                })
            };
            let step = self
                .update(
                    category,
                    &mut slot,
                    &mut budget,
                    OpKind::Ceiling,
                    true,
                    plan,
                )
                .await?;
            if matches!(step, Step::Kept) && moved_on.get() {
                if !budget.try_attempt() {
                    return Err(self.budget_error(category, &budget, LastFailure::Conflict));
                }
                continue;
            }
            return Ok(in_force.get());
        }
    }
}

/// What sealing a block pool's generation for one attempt of an operator's write came to.
enum Sealing {
    /// Not a pool in block allocation on ZooKeeper, or the write does not need it.
    NotNeeded,
    /// The pool moved on while its generation was sealed: read it again (an attempt counted).
    MovedOn,
    /// The generation the pool was read at is sealed: no claim planned before applies any
    /// more, and its blocks end below `frontier`.
    Sealed { generation: u64, frontier: i64 },
}

impl<S: Store> Core<S> {
    /// Reads the pool and, when it is in block allocation and `needed` says so for it, seals
    /// its generation (a missing sequence parent is created at the version read, then sealed:
    /// only on the session and connection that version was read on). Past `budget` after the
    /// pool moved on: the conflict error.
    async fn seal_for_attempt(
        &self,
        category: &IdCategory,
        budget: &mut Budget,
        needed: impl Fn(&Pool) -> bool,
    ) -> Result<Sealing> {
        let Some(session) = self.zk.as_ref() else {
            return Ok(Sealing::NotNeeded);
        };
        let path = category.name();
        // Before the read: the parent is created only on the connection the version was read on.
        let read_on = self.read_on();
        let node = self.read(path, budget).await?;
        let pool = Pool::parse(path, &node.data)?;
        let Some(layout) = pool.blocks().filter(|_| needed(&pool)) else {
            return Ok(Sealing::NotNeeded);
        };
        let sealed = super::blocks::repair::sealed_frontier(
            session,
            path,
            &layout,
            node.version,
            read_on,
        )
        .await?;
        match sealed {
            Some(frontier) => Ok(Sealing::Sealed {
                generation: layout.generation,
                frontier,
            }),
            None if budget.try_attempt() => Ok(Sealing::MovedOn),
            None => Err(self.budget_error(category, budget, LastFailure::Conflict)),
        }
    }
}

/// Creates a pool in block allocation as `restore` does: the pool node with `bytes`, the
/// sequence parent of `generation`, the parents of the receipts and of the holes, in one
/// `multi`. Its errors read as a plain create's.
async fn create_block_pool(
    zk: &Zk,
    path: &str,
    bytes: &[u8],
    generation: u64,
) -> std::result::Result<(), StoreError> {
    let session_generation = zk.generation();
    let options = Create::persistent();
    let created = async {
        if let Some(dir) = crate::store::parent(path) {
            let made = zk.create_all(session_generation, dir, None).await;
            made.map_err(|failure| MultiFailed {
                index: None,
                failure,
            })?;
        }
        let mut multi = Multi::new();
        multi
            .create(path, bytes, &options)
            .create(&sequence_parent(path, generation), &[], &options)
            .create(&returned_parent(path), &[], &options)
            .create(&holes_parent(path), &[], &options);
        multi.commit(&**zk, session_generation).await.map(drop)
    };
    let Err(failed) = created.await else {
        return Ok(());
    };
    Err(match failed.verdict() {
        Verdict::NodeExists => StoreError::NodeExists,
        Verdict::NotAuthorized => StoreError::NotAuthorized {
            identity: zk.options().identity(),
        },
        Verdict::Expired | Verdict::Closed | Verdict::Unknown => {
            StoreError::Unknown(failed.failure.to_string())
        }
        _ => StoreError::Refused(failed.failure.to_string()),
    })
}

/// A new category's ceiling, checked (`0 <= ceiling <= last`).
fn check_ceiling(ceiling: Option<i64>, last: i64) -> Result<()> {
    match ceiling.filter(|&c| c < 0 || c > last) {
        Some(c) => Err(ZooidError::InvalidArgument(format!(
            "ceiling {c}: need 0 <= ceiling <= last ({last})"
        ))),
        None => Ok(()),
    }
}

/// A category's bounds `first..=last`, checked (`1 <= first <= last`).
fn category_bounds(first: i64, last: i64) -> Result<IdRange> {
    IdRange::new(first, last)
        .filter(|_| first >= 1)
        .ok_or_else(|| {
            ZooidError::InvalidArgument(format!(
                "category bounds {first}..={last}: need 1 <= first <= last"
            ))
        })
}

/// The error of a create that may have applied: the category may or may not exist now.
fn create_in_doubt(path: &str) -> ZooidError {
    ZooidError::OutcomeUnknown {
        category: path.to_string(),
        op: crate::error::WriteOp::Create,
        ids: Vec::new(),
        leaked_within: None,
    }
}
