//! The ID generator service: take and push IDs with versioned compare-and-set, and resolve
//! writes whose reply was lost (docs/DESIGN.md explains the protocol).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tracing::Instrument;

use crate::blocks;
use crate::chunks;
use crate::error::{Result, ZooidError};
use crate::idset::{IdCategory, IdSet};
use crate::pace::Pace;
use crate::pool::{OpKind, OpRecord, OpToken, Pool, DEFAULT_OP_LOG_LEN};
use crate::range::{IdRange, InsertError};
use crate::retry::{Budget, RetryPolicy};
use crate::stats::{outcome_of, LostOutcome, Recorder, ServiceStats};
use crate::store::{AnyStore, ConnectOptions, Store, StoreError, Versioned};

/// Largest number of IDs one take may ask for.
pub const MAX_TAKE: u64 = i32::MAX as u64;

/// Default ceiling on a pool node's size: half of ZooKeeper's default 1 MiB `jute.maxbuffer`.
pub const DEFAULT_MAX_POOL_BYTES: usize = 512 * 1024;

/// The longest `#op` line: `#op <i32> <kind> <16 hex> <u64>\n`.
const MAX_OP_LINE_BYTES: usize = 4 + 11 + 7 + 17 + 21;

/// Tuning for an [`IdGeneratorService`].
#[derive(Clone, Debug)]
pub struct ServiceOptions {
    /// Retry budget of each operation.
    pub retry: RetryPolicy,
    /// Largest pool node a push may write; a push that would exceed it fails with `PoolFull`.
    pub max_pool_bytes: usize,
    /// How many recent writes a pool node remembers, to resolve lost replies.
    pub op_log_len: usize,
    /// How long a take at a category's ceiling waits for the keeper to raise it before failing
    /// with `ReservationExhausted`.
    pub ceiling_wait: Duration,

    /// Share a contended category fairly between processes (src/pace.rs): operations wait their
    /// turn and read afresh instead of writing at once on the version they remember, and the
    /// oldest operation retries first. Off by default: it costs throughput and, with many
    /// contenders on a fast network, more failed writes; it learns the contention from a
    /// process's earlier operations, so it does not help processes that take once (a burst of
    /// one-shot tasks). docs/BENCHMARKS.md has the figures.
    pub fair_pacing: bool,
}

/// Default wait of a take at the ceiling.
pub const DEFAULT_CEILING_WAIT: Duration = Duration::from_secs(10);

impl Default for ServiceOptions {
    fn default() -> Self {
        Self {
            retry: RetryPolicy::default(),
            max_pool_bytes: DEFAULT_MAX_POOL_BYTES,
            op_log_len: DEFAULT_OP_LOG_LEN,
            ceiling_wait: DEFAULT_CEILING_WAIT,
            fair_pacing: false,
        }
    }
}

/// What a pool node holds, for operators.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolInfo {
    /// The category's bounds.
    pub bounds: IdRange,
    /// The free ranges, ascending.
    pub free: Vec<IdRange>,
    /// How many IDs are free.
    pub free_count: u64,
    /// The node's data version.
    pub version: i32,
    /// The node's size in bytes.
    pub bytes: usize,
    /// Whether the node is a headerless, seed-style list.
    pub legacy: bool,
    /// The ceiling of the durable reservation, if the category has one.
    pub ceiling: Option<i64>,
    /// The pool's epoch (restarts of its history by a restore).
    pub epoch: u64,
    /// How many free IDs a take may hand out now (at or below the ceiling).
    pub headroom: u64,
    /// The highest ID that is not free.
    pub high_water: i64,
    /// How fresh IDs are handed out, for a category in block allocation.
    pub blocks: Option<crate::pool::Blocks>,
}

/// What [`IdGeneratorService::restore_category`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restored {
    /// The pool was missing and was created from the record.
    Created,
    /// The pool's ceiling was at or above the record's; it was left alone.
    Kept,
    /// The pool was behind the record; `removed` free IDs at or below the recorded ceiling were
    /// removed and the ceiling raised.
    Repaired {
        /// How many free IDs were removed.
        removed: u64,
    },
}

/// The last pool state this process read or wrote for a category.
#[derive(Clone)]
struct Cached {
    version: i32,
    pool: Pool,
    /// Read from the store just now, rather than remembered from an earlier operation.
    fresh: bool,
}

/// A category's state in one process, behind the lock that serializes its operations.
#[derive(Default)]
struct Slot {
    /// The pool as last read or written.
    cached: Option<Cached>,
    /// How contended the category looks from here (src/pace.rs).
    pace: Pace,
    /// Set when the pool node changed since it was cached (watched for pools in block
    /// allocation, whose takes otherwise never read it): the next operation reads it again.
    changed: Arc<AtomicBool>,
    /// The pool node version this process last read or wrote (the watch ignores its own writes).
    known: Arc<AtomicI32>,
    /// Whether a watch for `changed` is in place.
    armed: Arc<AtomicBool>,
    /// The free-list parts of a format-3 pool already read (src/chunks.rs).
    chunks: chunks::ChunkCache,
}

/// What an update's plan decided.
enum Plan {
    /// Write this pool; the operation moved these IDs (this many).
    Write(Pool, Vec<IdRange>, u64),
    /// Nothing to write: the take is served by fresh blocks of this pool (src/blocks.rs).
    Fresh(Pool),
}

/// A pool as planned on, with its data version.
struct Planned {
    pool: Pool,
    version: i32,
}

/// What an update did.
enum Updated {
    /// The IDs moved, and for a pool in block allocation the pool as the write left it.
    Moved(Vec<IdRange>, Option<Planned>),
    Fresh(Planned),
}

/// How a write with a lost reply turned out.
enum Resolution {
    Applied(Cached),
    NotApplied(Cached),
    Unknown(String),
}

/// A write whose reply was lost, as its author knows it.
struct LostWrite<'a> {
    token: OpToken,
    /// The version the write expected.
    expected: i32,
    bytes: &'a [u8],
    /// The free-list part writes that went with it (src/chunks.rs).
    parts: &'a [chunks::ChunkOp],
    kind: OpKind,
    /// The IDs the write took or pushed.
    moved: &'a [IdRange],
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
}

/// Why the last attempt of an operation did not succeed.
enum LastFailure {
    None,
    Conflict,
    Unreachable(String),
}

/// Hands out unique IDs from categories kept in a [`Store`].
///
/// Share one service between threads: operations on one category are serialized within the
/// process (they would conflict on the node anyway), operations on different categories run in
/// parallel, all over one store session.
pub struct IdGeneratorService<S: Store = AnyStore> {
    store: S,
    options: ServiceOptions,
    categories: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Slot>>>>,
    /// The newest (epoch, data version) this process saw of each pool: a read older than that
    /// means ZooKeeper went back in time, and is refused.
    seen: Mutex<HashMap<String, (u64, i32)>>,
    /// For pools in block allocation: (generation, a block number not claimed yet as far as this
    /// process knows), to see the ceiling coming without reading.
    next_block: Mutex<HashMap<String, (u64, i64)>>,
    /// For pools in block allocation: this process's last push marker per category, deleted by
    /// its next push (src/blocks.rs).
    markers: Mutex<HashMap<String, String>>,
    stats: Recorder,
}

/// The span every service operation runs in: `category`, `op`, and, filled in as it goes, the
/// `attempt` it reached and its `outcome` (`ok` or the error's kind).
fn op_span(category: &str, op: &'static str) -> tracing::Span {
    tracing::info_span!(
        "zooid_op",
        category,
        op,
        attempt = tracing::field::Empty,
        outcome = tracing::field::Empty
    )
}

impl IdGeneratorService<AnyStore> {
    /// Opens a service on the store a connect string names (see [`AnyStore::open`]).
    pub async fn connect(
        connect: &str,
        connect_options: &ConnectOptions,
        options: ServiceOptions,
    ) -> Result<Self> {
        Ok(Self::with_store(
            AnyStore::open(connect, connect_options).await?,
            options,
        ))
    }

    /// A service on an already open ZooKeeper session, shared with the recipes.
    pub fn on_session(session: crate::session::Session, options: ServiceOptions) -> Self {
        Self::with_store(
            AnyStore::ZooKeeper(crate::store::ZkStore::on(session)),
            options,
        )
    }

    /// The ZooKeeper session the service uses; `None` on the embedded stores.
    pub fn session(&self) -> Option<&crate::session::Session> {
        self.store.session()
    }

    /// The options the service was opened with (the recipes opened from it follow its retry
    /// policy).
    pub fn options(&self) -> &ServiceOptions {
        &self.options
    }
}

impl<S: Store> IdGeneratorService<S> {
    /// A service over an already opened store.
    pub fn with_store(store: S, options: ServiceOptions) -> Self {
        Self {
            store,
            options,
            categories: Mutex::new(HashMap::new()),
            stats: Recorder::default(),
            seen: Mutex::new(HashMap::new()),
            next_block: Mutex::new(HashMap::new()),
            markers: Mutex::new(HashMap::new()),
        }
    }

    /// What the service did since it was opened, and each category's pool as last seen
    /// (see [`ServiceStats`]; the same figures go to the `metrics` facade).
    pub fn stats(&self) -> ServiceStats {
        let mut stats = self.stats.snapshot();
        if let Some(session) = self.store.session() {
            stats.session_losses = session.losses();
            stats.session_generation = session.status().generation;
        }
        stats
    }

    /// Runs one operation in its span, and counts it when it ends.
    async fn observed<T>(
        &self,
        category: &str,
        op: &'static str,
        moved: impl FnOnce(&T) -> u64,
        operation: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        let span = op_span(category, op);
        let started = Instant::now();
        let result = operation.instrument(span.clone()).await;
        let outcome = outcome_of(result.as_ref().err());
        span.record("outcome", outcome);
        let ids = result.as_ref().map(moved).unwrap_or(0);
        self.stats
            .op_done(category, op, outcome, ids, started.elapsed());
        result
    }

    /// The store the service uses.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Creates a category whose IDs are `first..=last` (first >= 1), all free.
    ///
    /// Fails with `CategoryExists` when the node is already there: an existing pool is never
    /// reset, since that would hand out its IDs again.
    pub async fn create_category(
        &self,
        category: &IdCategory,
        first: i64,
        last: i64,
    ) -> Result<()> {
        self.create_category_full(category, first, last, None, None)
            .await
    }

    /// [`create_category`](Self::create_category) with the ACL `acl` on the pool node (`None`:
    /// the store's default, `creator_all` for an authenticated session, else open to all).
    ///
    /// Clients the ACL does not grant read and write get `NotAuthorized` on every take and
    /// push, and nothing changes. Needs a ZooKeeper store (`InvalidArgument` on `mem:`/`file:`)
    /// and a non-empty ACL.
    pub async fn create_category_with_acl(
        &self,
        category: &IdCategory,
        first: i64,
        last: i64,
        acl: Option<&[crate::acl::Acl]>,
    ) -> Result<()> {
        self.create_category_full(category, first, last, acl, None)
            .await
    }

    /// Creates a category like [`create_category`](Self::create_category) whose takes never
    /// hand out an ID above `ceiling` (until a keeper raises it); `None` for no ceiling.
    pub async fn create_category_with_ceiling(
        &self,
        category: &IdCategory,
        first: i64,
        last: i64,
        ceiling: Option<i64>,
    ) -> Result<()> {
        self.create_category_full(category, first, last, None, ceiling)
            .await
    }

    /// Creates a category with both an ACL ([`create_category_with_acl`]) and a ceiling
    /// ([`create_category_with_ceiling`]).
    ///
    /// [`create_category_with_acl`]: Self::create_category_with_acl
    /// [`create_category_with_ceiling`]: Self::create_category_with_ceiling
    pub async fn create_category_full(
        &self,
        category: &IdCategory,
        first: i64,
        last: i64,
        acl: Option<&[crate::acl::Acl]>,
        ceiling: Option<i64>,
    ) -> Result<()> {
        self.observed(
            category.name(),
            "create",
            |_| 0,
            self.create_category_inner(category, first, last, acl, ceiling),
        )
        .await
    }

    async fn create_category_inner(
        &self,
        category: &IdCategory,
        first: i64,
        last: i64,
        acl: Option<&[crate::acl::Acl]>,
        ceiling: Option<i64>,
    ) -> Result<()> {
        if let Some(acl) = acl {
            crate::acl::check_acl_list(acl)?;
        }
        if let Some(c) = ceiling.filter(|&c| c < 0 || c > last) {
            return Err(ZooidError::InvalidArgument(format!(
                "ceiling {c}: need 0 <= ceiling <= last ({last})"
            )));
        }
        let bounds = category_bounds(first, last)?;
        let path = category.name();
        let token = OpToken::random();
        let mut pool = Pool::new(bounds);
        pool.set_ceiling(ceiling);
        pool.record(
            OpRecord {
                version: 0,
                token,
                kind: OpKind::Create,
                count: bounds.len(),
            },
            self.options.op_log_len,
        );
        let bytes = pool.render().into_bytes();
        let mut budget = Budget::start(self.options.retry);
        let mut failure = LastFailure::None;
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
                    if !self.created_by(path, token, &mut budget).await? {
                        return Err(ZooidError::CategoryExists {
                            category: path.to_string(),
                        });
                    }
                }
                Err(StoreError::Unknown(why) | StoreError::Unavailable(why)) => {
                    failure = LastFailure::Unreachable(why);
                    budget.backoff().await;
                    continue;
                }
                Err(other) => return Err(other.into_zooid(path)),
            }
            self.stats
                .pool_seen(path, &pool, bytes.len(), 0, self.options.max_pool_bytes);
            self.slot(category).lock().await.cached = Some(Cached {
                version: 0,
                pool,
                fresh: false,
            });
            tracing::info!(category = path, %bounds, "category created");
            return Ok(());
        }
        Err(self.budget_error(category, &budget, failure))
    }

    /// Creates a category in block allocation (pool format 3; needs ZooKeeper): takes of fresh
    /// IDs claim blocks of `unit` IDs by creating sequential nodes, which never conflict, so
    /// contending processes are served in arrival order with one transaction per take; pushed
    /// IDs go to the node's free list and are handed out first (src/blocks.rs, docs/DESIGN.md).
    ///
    /// A take of `n` IDs claims `ceil(n / unit)` blocks and returns what it does not hand out to
    /// the free list: choose `unit` as the batch size the workers take (or a divisor of it).
    pub async fn create_category_blocks(
        &self,
        category: &IdCategory,
        first: i64,
        last: i64,
        unit: u64,
    ) -> Result<()> {
        self.observed(
            category.name(),
            "create",
            |_| 0,
            self.create_blocks_inner(category, first, last, unit),
        )
        .await
    }

    async fn create_blocks_inner(
        &self,
        category: &IdCategory,
        first: i64,
        last: i64,
        unit: u64,
    ) -> Result<()> {
        if unit == 0 || unit > MAX_TAKE {
            return Err(ZooidError::InvalidArgument(format!(
                "block size {unit}: need 1..={MAX_TAKE}"
            )));
        }
        let bounds = category_bounds(first, last)?;
        let session = self.store.session().ok_or_else(blocks::needs_zookeeper)?;
        let path = category.name();
        let token = OpToken::random();
        let mut pool = Pool::with_blocks(bounds, unit);
        pool.record(
            OpRecord {
                version: 0,
                token,
                kind: OpKind::Create,
                count: bounds.len(),
            },
            self.options.op_log_len,
        );
        let bytes = pool.render().into_bytes();
        let parent = blocks::sequence_parent(path, 0);
        let mut budget = Budget::start(self.options.retry);
        let mut failure = LastFailure::None;
        while budget.try_attempt() {
            tracing::Span::current().record("attempt", budget.attempts());
            let (client, generation) = session.client();
            let options =
                zookeeper_client::CreateMode::Persistent.with_acls(session.default_acls());
            let created = async {
                if let Some(dir) = crate::store::parent(path) {
                    client.mkdir(dir, &options).await?;
                }
                let mut multi = client.new_multi_writer();
                multi.add_create(path, &bytes, &options)?;
                multi.add_create(&parent, &[], &options)?;
                multi.add_create(&blocks::returned_parent(path), &[], &options)?;
                multi
                    .commit()
                    .await
                    .map(drop)
                    .map_err(zookeeper_client::Error::from)
            };
            match session.run(generation, created).await {
                Ok(()) => {}
                Err(zookeeper_client::Error::NodeExists) => {
                    // Ours, if an earlier attempt applied before its reply was lost.
                    if !self.created_by(path, token, &mut budget).await? {
                        return Err(ZooidError::CategoryExists {
                            category: path.to_string(),
                        });
                    }
                }
                Err(zookeeper_client::Error::NoAuth) => {
                    return Err(ZooidError::NotAuthorized {
                        path: path.to_string(),
                        identity: session.options().identity(),
                    })
                }
                Err(err) if crate::session::fate(&err) == crate::session::Fate::Refused => {
                    return Err(ZooidError::Store {
                        path: path.to_string(),
                        reason: err.to_string(),
                    })
                }
                Err(err) => {
                    failure = LastFailure::Unreachable(err.to_string());
                    budget.backoff().await;
                    continue;
                }
            }
            self.slot(category).lock().await.cached = Some(Cached {
                version: 0,
                pool,
                fresh: false,
            });
            tracing::info!(category = path, %bounds, unit, "category created (block allocation)");
            return Ok(());
        }
        Err(self.budget_error(category, &budget, failure))
    }

    async fn created_by(&self, path: &str, token: OpToken, budget: &mut Budget) -> Result<bool> {
        let node = self.read(path, budget).await?;
        Ok(Pool::parse(path, &node.data)
            .is_ok_and(|pool| pool.op_at(0).is_some_and(|op| op.token == token)))
    }

    /// Takes up to `n` of the lowest free IDs of `category` (fewer when fewer remain).
    ///
    /// Errors: `Exhausted` when none remain, `NotFound` for a missing category, `OutcomeUnknown`
    /// (naming the leaked IDs) when a lost reply could not be resolved.
    pub async fn take_ids(&self, category: &IdCategory, n: u64) -> Result<IdSet> {
        if n == 0 || n > MAX_TAKE {
            return Err(ZooidError::InvalidArgument(format!(
                "take of {n} IDs: ask for 1..={MAX_TAKE}"
            )));
        }
        let take = async {
            let started = tokio::time::Instant::now();
            let mut reroutes = Budget::start(self.options.retry);
            loop {
                let result = match self.take_once(category, n).await {
                    Err(ZooidError::Closed { what }) if what.is_empty() => {
                        // The pool changed under a block claim (a push, a generation moved on):
                        // plan again on the pool as it is now, at once the first time.
                        if !reroutes.try_attempt() {
                            return Err(ZooidError::Contention {
                                category: category.name().to_string(),
                                attempts: reroutes.attempts(),
                                elapsed: started.elapsed(),
                            });
                        }
                        if reroutes.attempts() > 1 {
                            reroutes.backoff().await;
                        }
                        continue;
                    }
                    other => other,
                };
                match result {
                    Ok(ranges) => return Ok(ranges),
                    Err(ZooidError::ReservationExhausted { ceiling, .. }) => {
                        let waited = started.elapsed();
                        let Some(left) = self.options.ceiling_wait.checked_sub(waited) else {
                            tracing::warn!(
                                category = category.name(),
                                ceiling,
                                ?waited,
                                "take at the ceiling: the durable reservation is exhausted"
                            );
                            return Err(ZooidError::ReservationExhausted {
                                category: category.name().to_string(),
                                ceiling,
                                waited,
                            });
                        };
                        self.wait_for_raise(category, left).await;
                    }
                    Err(err) => return Err(err),
                }
            }
        };
        let ranges = self
            .observed(category.name(), "take", |r| count_of(r), take)
            .await?;
        Ok(IdSet::new(category.clone(), ranges))
    }

    /// One take: from the free list with compare-and-set, and for a pool in block allocation
    /// from fresh blocks for what the free list (its holes) did not cover. `Closed` with an
    /// empty name asks the caller to plan again (the blocks' generation moved on).
    async fn take_once(&self, category: &IdCategory, n: u64) -> Result<Vec<IdRange>> {
        let updated = self
            .update_checked(category, OpKind::Take, true, |pool| {
                let blocks = pool.blocks().is_some();
                let mut next = pool.clone();
                let top = pool.ceiling().unwrap_or(pool.bounds().end());
                let taken = next.free_mut().take_lowest_at_most(n, top);
                if taken.is_empty() {
                    if blocks {
                        return Ok(Plan::Fresh(pool.clone()));
                    }
                    let name = category.name().to_string();
                    return Err(match pool.ceiling() {
                        Some(ceiling) if !pool.free().is_empty() => {
                            ZooidError::ReservationExhausted {
                                category: name,
                                ceiling,
                                waited: Duration::ZERO,
                            }
                        }
                        _ => ZooidError::Exhausted { category: name },
                    });
                }
                let count = taken.iter().map(IdRange::len).sum();
                Ok(Plan::Write(next, taken, count))
            })
            .await?;
        let (holes, planned) = match updated {
            Updated::Fresh(planned) => (Vec::new(), planned),
            Updated::Moved(holes, Some(after)) if count_of(&holes) < n => (holes, after),
            Updated::Moved(holes, _) => return Ok(holes),
        };
        let wanted = n - count_of(&holes);
        match self.take_fresh(category, &planned, wanted).await {
            Ok(mut fresh) => {
                let mut all = holes;
                all.append(&mut fresh);
                Ok(all)
            }
            // Fewer remain (at the ceiling, or at the end): hand out the holes taken.
            Err(ZooidError::ReservationExhausted { .. } | ZooidError::Exhausted { .. })
                if !holes.is_empty() =>
            {
                Ok(holes)
            }
            Err(err) => {
                if !holes.is_empty() {
                    self.give_back(category, holes).await;
                }
                Err(err)
            }
        }
    }

    /// Claims fresh blocks for `n` IDs from `pool` (in block allocation, src/blocks.rs); IDs of
    /// the claimed blocks beyond `n`, or above the ceiling, go to the free list.
    async fn take_fresh(
        &self,
        category: &IdCategory,
        planned: &Planned,
        n: u64,
    ) -> Result<Vec<IdRange>> {
        let path = category.name();
        let pool = &planned.pool;
        let session = self.store.session().ok_or_else(blocks::needs_zookeeper)?;
        let Some(layout) = pool.blocks() else {
            return Err(reroute());
        };
        let last = pool.bounds().end();
        let top = pool.ceiling().unwrap_or(last).min(last);
        let count = n
            .div_ceil(layout.unit)
            .clamp(1, blocks::MAX_BLOCKS_PER_TAKE);
        let count = u32::try_from(count).unwrap_or(1);
        let known = self.known_next_block(path, layout.generation);
        match layout.block(known, last) {
            None => {
                // Past the end as far as this process knows: ask the store before saying so.
                let next = blocks::next_block(session, path, &layout).await?;
                self.note_next_block(path, layout.generation, next);
                if layout.block(next, last).is_none() {
                    return Err(ZooidError::Exhausted {
                        category: path.to_string(),
                    });
                }
            }
            Some(block) if block.start() > top => {
                if let Some(ceiling) = pool.ceiling() {
                    return Err(ZooidError::ReservationExhausted {
                        category: path.to_string(),
                        ceiling,
                        waited: Duration::ZERO,
                    });
                }
            }
            Some(_) => {}
        }
        let mut budget = Budget::start(self.options.retry);
        let returned = planned.pool.returned_version();
        let claimed = blocks::claim(
            session,
            path,
            planned.version,
            returned,
            &layout,
            count,
            &mut budget,
        );
        let first = match claimed.await? {
            blocks::Claim::Granted { first } => first,
            blocks::Claim::Changed => {
                self.forget_cached(category).await;
                return Err(reroute());
            }
            blocks::Claim::Sealed => {
                self.rotate(category, &layout).await?;
                return Err(reroute());
            }
            blocks::Claim::Missing => {
                self.forget_cached(category).await;
                self.repair_sequence_parent(category).await?;
                return Err(reroute());
            }
            blocks::Claim::Unknown(why) => {
                tracing::error!(category = path, %why, "block claim outcome unknown; its blocks stay unused");
                self.stats.lost_reply(path, LostOutcome::Unknown, 0);
                return Err(ZooidError::OutcomeUnknown {
                    category: path.to_string(),
                    op: crate::WriteOp::Take,
                    ids: Vec::new(),
                });
            }
        };
        let end = first + i64::from(count);
        self.note_next_block(path, layout.generation, end);
        let mut claimed = crate::range::RangeSet::new();
        for seq in first..end {
            if let Some(block) = layout.block(seq, last) {
                // Blocks are disjoint, so this cannot overlap.
                let _ = claimed.insert_all(&[block]);
            }
        }
        let handed = claimed.take_lowest_at_most(n, top);
        let leftover = claimed.ranges().to_vec();
        if !leftover.is_empty() {
            self.give_back(category, leftover).await;
        }
        if end > blocks::ROTATE_AT {
            if let Err(err) = self.rotate(category, &layout).await {
                tracing::warn!(category = path, %err, "moving the blocks to a new generation; the next take tries again");
            }
        }
        if handed.is_empty() {
            return Err(match pool.ceiling() {
                Some(ceiling) if top < last => ZooidError::ReservationExhausted {
                    category: path.to_string(),
                    ceiling,
                    waited: Duration::ZERO,
                },
                _ => ZooidError::Exhausted {
                    category: path.to_string(),
                },
            });
        }
        Ok(handed)
    }

    /// Pushes IDs this process claimed but will not hand out back to the free list; a failure
    /// leaves them unused (never handed out twice) and is logged.
    async fn give_back(&self, category: &IdCategory, ranges: Vec<IdRange>) {
        let result = match self.store.session() {
            Some(session) => self.return_ids(category, session, &ranges).await,
            None => Err(blocks::needs_zookeeper()),
        };
        if let Err(err) = result {
            tracing::warn!(category = category.name(), %err, ids = ?ranges, "could not return unused block IDs; they stay unused");
        }
    }

    /// Moves the pool's block allocation past generation `layout.generation` (src/blocks.rs):
    /// seals it, reads how many blocks it claimed, writes the next generation's base, creates its
    /// sequence parent and retires the generation before. Any process may finish a move another
    /// one started.
    async fn rotate(&self, category: &IdCategory, layout: &crate::pool::Blocks) -> Result<()> {
        let path = category.name();
        let session = self.store.session().ok_or_else(blocks::needs_zookeeper)?;
        blocks::seal(session, path, layout).await?;
        let next = match blocks::next_block(session, path, layout).await {
            Ok(next) => next,
            // Gone: the move is done (and the generation retired), or the pool was recreated.
            Err(ZooidError::NotFound { .. }) => {
                self.forget_cached(category).await;
                return Ok(());
            }
            Err(err) => return Err(err),
        };
        let unit = i64::try_from(layout.unit).unwrap_or(i64::MAX);
        let generation = layout.generation;
        let updated = self
            .update_checked(category, OpKind::Blocks, true, |pool| match pool.blocks() {
                Some(current) if current.generation == generation => {
                    let base = next
                        .saturating_mul(unit)
                        .saturating_add(current.base)
                        .min(pool.bounds().end().saturating_add(1));
                    let mut moved = pool.clone();
                    moved.set_blocks(crate::pool::Blocks {
                        unit: current.unit,
                        generation: generation + 1,
                        base,
                    });
                    Ok(Plan::Write(moved, Vec::new(), base.abs_diff(current.base)))
                }
                // Another process moved it already.
                _ => Ok(Plan::Fresh(pool.clone())),
            })
            .await?;
        if let Updated::Moved(..) = updated {
            tracing::info!(
                category = path,
                generation = generation + 1,
                "blocks moved to a new generation"
            );
        }
        blocks::ensure_parent(session, path, generation + 1).await?;
        if generation >= 1 {
            // In the background: the take that moved the generation does not wait for it.
            let (session, path) = (session.clone(), path.to_string());
            tokio::spawn(async move { blocks::retire(&session, &path, generation - 1).await });
        }
        Ok(())
    }

    /// After a claim found no sequence parent: creates the one of the pool's current generation
    /// if it is missing (a process that moved the generation stopped before creating it). Reads
    /// the pool after a `sync`, so that a lagging server does not bring back a retired one.
    async fn repair_sequence_parent(&self, category: &IdCategory) -> Result<()> {
        let path = category.name();
        let session = self.store.session().ok_or_else(blocks::needs_zookeeper)?;
        let node = self
            .sync_and_read(path)
            .await
            .map_err(|e| e.into_zooid(path))?;
        let pool = Pool::parse(path, &node.data)?;
        self.observe(path, pool.epoch(), node.version)?;
        match pool.blocks() {
            Some(layout) => blocks::ensure_parent(session, path, layout.generation).await,
            None => Ok(()),
        }
    }

    /// A push to a pool in block allocation (`pool`, as this process last read or wrote it):
    /// checked against the bounds, the blocks' frontier (read when the push reaches into the
    /// current generation: IDs no block claimed yet are free already) and the free list as last
    /// read, then left for the next take to merge, without writing the pool node
    /// (src/blocks.rs).
    async fn push_waiting(
        &self,
        category: &IdCategory,
        ranges: &[IdRange],
        pool: &Pool,
    ) -> Result<()> {
        let path = category.name();
        let session = self.store.session().ok_or_else(blocks::needs_zookeeper)?;
        let name = || path.to_string();
        if let Some(range) = ranges.iter().find(|r| !pool.bounds().covers(r)) {
            return Err(ZooidError::OutOfBounds {
                category: name(),
                range: *range,
                bounds: pool.bounds(),
            });
        }
        let fresh_part = match pool.blocks() {
            Some(layout) if ranges.iter().any(|r| r.end() >= layout.base) => {
                let frontier = blocks::frontier(session, path, &layout).await?;
                ranges
                    .iter()
                    .find(|r| r.end() >= frontier)
                    .and_then(|r| IdRange::new(r.start().max(frontier), r.end()))
            }
            _ => None,
        };
        let doubled =
            fresh_part.or_else(|| ranges.iter().find_map(|r| pool.free().first_overlap(r)));
        if let Some(range) = doubled {
            return Err(ZooidError::AlreadyFree {
                category: name(),
                range,
            });
        }
        self.return_ids(category, session, ranges).await
    }

    /// Leaves `ranges` under a pool in block allocation for the next take to merge.
    async fn return_ids(
        &self,
        category: &IdCategory,
        session: &crate::session::Session,
        ranges: &[IdRange],
    ) -> Result<()> {
        let path = category.name();
        let previous = self
            .markers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(path);
        let mut budget = Budget::start(self.options.retry);
        let returned =
            blocks::push_return(session, path, ranges, previous.as_deref(), &mut budget).await?;
        self.markers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(path.to_string(), returned.marker);
        // The push moved the node takes check. When no other push came between, this process
        // knows the pending pushes exactly: it adds its own to what it remembers. Otherwise the
        // next take reads them.
        let slot = self.slot(category);
        let mut slot = slot.lock().await;
        let merged = match (slot.cached.as_mut(), returned.announced) {
            (Some(state), Some(announced))
                if state.pool.returned_version() == Some(announced - 1) =>
            {
                let doubled = state
                    .pool
                    .merge_pending(announced, vec![(returned.node, ranges.to_vec())]);
                doubled == 0
            }
            _ => false,
        };
        if !merged {
            slot.cached = None;
        }
        Ok(())
    }

    /// Forgets the cached pool, so the next operation reads it.
    async fn forget_cached(&self, category: &IdCategory) {
        self.slot(category).lock().await.cached = None;
    }

    fn known_next_block(&self, path: &str, generation: u64) -> i64 {
        let known = self.next_block.lock().unwrap_or_else(|p| p.into_inner());
        match known.get(path) {
            Some(&(g, next)) if g == generation => next,
            _ => 0,
        }
    }

    fn note_next_block(&self, path: &str, generation: u64, next: i64) {
        let mut known = self.next_block.lock().unwrap_or_else(|p| p.into_inner());
        let entry = known.entry(path.to_string()).or_insert((generation, next));
        if entry.0 < generation || (entry.0 == generation && entry.1 < next) {
            *entry = (generation, next);
        }
    }

    /// Waits up to `limit` for the pool to change from the version last read (the keeper
    /// raising the ceiling), then forgets the cached state so the next attempt reads afresh.
    async fn wait_for_raise(&self, category: &IdCategory, limit: Duration) {
        let slot = self.slot(category);
        let seen = slot.lock().await.cached.take().map(|state| state.version);
        let Some(seen) = seen else { return };
        tracing::debug!(
            category = category.name(),
            version = seen,
            ?limit,
            "take at the ceiling: waiting for the keeper"
        );
        if let Err(err) = self.store.wait_change(category.name(), seen, limit).await {
            // Unreachable store: pause briefly; the next attempt reports it within its budget.
            tracing::debug!(category = category.name(), %err, "waiting for the ceiling");
            tokio::time::sleep(limit.min(Duration::from_millis(100))).await;
        }
    }

    /// Whether (`epoch`, `version`) is older than what this process saw of the pool.
    fn is_older(&self, path: &str, epoch: u64, version: i32) -> bool {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.get(path)
            .is_some_and(|&newest| (epoch, version) < newest)
    }

    /// Forgets what this process saw of a pool (after repairing it).
    fn forget_seen(&self, path: &str) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.remove(path);
    }

    /// Records that this process saw the pool at (`epoch`, `version`), refusing a state older
    /// than one seen before (ZooKeeper restored from an older snapshot or lost writes). Callers
    /// `sync` first, so that a lagging server is not mistaken for a rollback.
    fn observe(&self, path: &str, epoch: u64, version: i32) -> Result<()> {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let entry = seen.entry(path.to_string()).or_insert((epoch, version));
        if (epoch, version) < *entry {
            let (old_epoch, old_version) = *entry;
            tracing::error!(
                category = path,
                epoch,
                version,
                old_epoch,
                old_version,
                "pool went back in time; refusing it"
            );
            return Err(ZooidError::WentBackwards {
                what: format!("pool {path}"),
                reason: format!("it is at epoch {epoch} version {version}, but this process saw epoch {old_epoch} version {old_version} earlier (ZooKeeper restored from an older state?)"),
            });
        }
        *entry = (epoch, version);
        Ok(())
    }

    /// Returns the unused IDs of `ids` to their category and empties `ids`.
    ///
    /// Nothing changes, and `ids` is kept, when an ID lies outside the category's bounds
    /// (`OutOfBounds`), is already free (`AlreadyFree`), or the pool would outgrow its size
    /// limit (`PoolFull`). On `OutcomeUnknown` the push is not repeated and `ids` is emptied.
    pub async fn push_ids(&self, ids: &mut IdSet) -> Result<()> {
        let ranges = ids.ranges();
        if ranges.is_empty() {
            return Ok(());
        }
        let category = ids.category().clone();
        let count: u64 = ranges.iter().map(IdRange::len).sum();
        let update = async {
            let updated = self
                .update_checked(&category, OpKind::Push, true, |pool| {
                    // Pushes to a pool in block allocation do not write it (src/blocks.rs).
                    if pool.blocks().is_some() {
                        return Ok(Plan::Fresh(pool.clone()));
                    }
                    let name = || category.name().to_string();
                    if let Some(range) = ranges.iter().find(|r| !pool.bounds().covers(r)) {
                        return Err(ZooidError::OutOfBounds {
                            category: name(),
                            range: *range,
                            bounds: pool.bounds(),
                        });
                    }
                    let mut next = pool.clone();
                    next.free_mut().insert_all(&ranges).map_err(
                        |InsertError::Overlap(range)| ZooidError::AlreadyFree {
                            category: name(),
                            range,
                        },
                    )?;
                    Ok(Plan::Write(next, ranges.clone(), count))
                })
                .await?;
            match updated {
                Updated::Moved(moved, _) => Ok(moved),
                Updated::Fresh(planned) => {
                    self.push_waiting(&category, &ranges, &planned.pool).await?;
                    Ok(ranges.clone())
                }
            }
        };
        let result = self
            .observed(category.name(), "push", |r| count_of(r), update)
            .await;
        if matches!(result, Ok(_) | Err(ZooidError::OutcomeUnknown { .. })) {
            ids.clear();
        }
        result.map(drop)
    }

    /// Raises the category's ceiling to `ceiling` (clamped to its bounds) with a versioned
    /// write; returns the ceiling now in force. A pool without a ceiling gets one, at the version
    /// read: IDs handed out before are at or below it only if the caller made sure of it (the
    /// keeper writes the durable record first). Never lowers a ceiling (`WentBackwards`).
    ///
    /// This is the operator's and the tests' way; the keeper raises ceilings with fenced writes.
    pub async fn raise_ceiling(&self, category: &IdCategory, ceiling: i64) -> Result<i64> {
        let name = category.name().to_string();
        let result = self
            .update(category, OpKind::Ceiling, |pool| {
                let target = ceiling.min(pool.bounds().end());
                if let Some(current) = pool.ceiling().filter(|&c| c > target) {
                    return Err(ZooidError::WentBackwards {
                        what: format!("ceiling of {name}"),
                        reason: format!("raising it to {target} would lower it from {current}"),
                    });
                }
                let mut next = pool.clone();
                let raised = target.abs_diff(pool.ceiling().unwrap_or(target));
                next.set_ceiling(Some(target));
                Ok((next, vec![], raised))
            })
            .await;
        result?;
        Ok(self.pool_info(category).await?.ceiling.unwrap_or(ceiling))
    }

    /// Recreates a category from its durable record after ZooKeeper lost its data: free IDs
    /// `ceiling+1..=last`, the same ceiling, and `epoch` (the record's bumped generation), so
    /// no ID at or below the ceiling is ever handed out again. An existing pool whose ceiling
    /// is at or above the record's is left alone; one below it (rolled back) is repaired: its
    /// free IDs at or below the record's ceiling are removed and the ceiling raised.
    pub async fn restore_category(
        &self,
        category: &IdCategory,
        bounds: IdRange,
        ceiling: i64,
        epoch: u64,
    ) -> Result<Restored> {
        let path = category.name();
        let mut pool = Pool::new(bounds);
        pool.free_mut().remove_at_most(ceiling);
        pool.set_ceiling(Some(ceiling));
        pool.set_epoch(epoch);
        let token = OpToken::random();
        pool.record(
            OpRecord {
                version: 0,
                token,
                kind: OpKind::Create,
                count: pool.free().count(),
            },
            self.options.op_log_len,
        );
        let bytes = pool.render().into_bytes();
        let mut budget = Budget::start(self.options.retry);
        while budget.try_attempt() {
            match self.store.create(path, &bytes).await {
                Ok(()) => {
                    tracing::warn!(
                        category = path,
                        ceiling,
                        epoch,
                        "category restored from the durable record"
                    );
                    return Ok(Restored::Created);
                }
                Err(StoreError::NodeExists) => {
                    if self.created_by(path, token, &mut budget).await? {
                        return Ok(Restored::Created);
                    }
                    return self.repair(category, ceiling, epoch).await;
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

    /// Repairs an existing pool against a durable ceiling: no-op when its ceiling is at or
    /// above; otherwise removes its free IDs at or below `ceiling`, raises the ceiling and sets
    /// the epoch to at least `epoch` (so clients that saw its newer past accept it again).
    pub async fn repair(
        &self,
        category: &IdCategory,
        ceiling: i64,
        epoch: u64,
    ) -> Result<Restored> {
        let path = category.name();
        // Read the store as it is now, not through a remembered state.
        self.slot(category).lock().await.cached = None;
        let outcome = Mutex::new(Restored::Kept);
        // A pool at or above the record needs nothing: the plan stops with this marker error
        // (decided on a fresh read, since `update` retries a remembered state before failing).
        let kept = || ZooidError::Closed {
            what: String::new(),
        };
        self.update_checked(category, OpKind::Ceiling, false, |pool| {
            if pool.ceiling().is_some_and(|c| c >= ceiling) {
                return Err(kept());
            }
            let mut next = pool.clone();
            let removed = next.clear_through(ceiling);
            let count = removed.iter().map(IdRange::len).sum();
            next.set_ceiling(Some(ceiling));
            next.set_epoch(pool.epoch().max(epoch));
            tracing::error!(category = path, ceiling, old_ceiling = ?pool.ceiling(), removed = count, "pool is behind the durable record (rolled back?): removed its free IDs at or below the recorded ceiling");
            *outcome.lock().unwrap_or_else(|p| p.into_inner()) = Restored::Repaired { removed: count };
            Ok(Plan::Write(next, removed, count))
        })
        .await
        .map(|_| outcome.into_inner().unwrap_or_else(|p| p.into_inner()))
        .or_else(|err| match err {
            ZooidError::Closed { what } if what.is_empty() => Ok(Restored::Kept),
            other => Err(other),
        })
    }

    /// Reads the category's pool afresh.
    pub async fn pool_info(&self, category: &IdCategory) -> Result<PoolInfo> {
        self.observed(
            category.name(),
            "show",
            |_| 0,
            self.pool_info_inner(category),
        )
        .await
    }

    /// Reads the pool with all its free IDs: its parts loaded and, in block allocation, the
    /// pushes waiting in their own nodes merged.
    async fn read_complete(
        &self,
        category: &IdCategory,
        budget: &mut Budget,
    ) -> Result<(Versioned, Pool)> {
        let path = category.name();
        loop {
            let node = self.read(path, budget).await?;
            let mut pool = Pool::parse(path, &node.data)?;
            if !pool.chunks().is_empty() {
                let session = self.store.session().ok_or_else(blocks::needs_zookeeper)?;
                let mut cache = chunks::ChunkCache::new();
                if let chunks::Loaded::Stale =
                    chunks::load(session, path, &mut pool, &mut cache).await?
                {
                    if budget.try_attempt() {
                        continue;
                    }
                    return Err(ZooidError::Timeout {
                        what: path.to_string(),
                        after: budget.elapsed(),
                    });
                }
            }
            if let (Some(_), Some(session)) = (pool.blocks(), self.store.session()) {
                let (version, pending) = blocks::read_returns(session, path).await?;
                pool.merge_pending(version, pending);
            }
            return Ok((node, pool));
        }
    }

    async fn pool_info_inner(&self, category: &IdCategory) -> Result<PoolInfo> {
        let mut budget = Budget::start(self.options.retry);
        tracing::Span::current().record("attempt", 1);
        let (node, pool) = self.read_complete(category, &mut budget).await?;
        let usage = blocks::usage(self.store.session(), category.name(), &pool).await?;
        self.stats.pool_seen(
            category.name(),
            &pool,
            node.data.len(),
            node.version,
            self.options.max_pool_bytes,
        );
        Ok(PoolInfo {
            bounds: pool.bounds(),
            free: pool.free().ranges().to_vec(),
            free_count: usage.free,
            version: node.version,
            bytes: node.data.len(),
            legacy: pool.is_legacy(),
            ceiling: pool.ceiling(),
            epoch: pool.epoch(),
            headroom: usage.available,
            high_water: usage.high_water,
            blocks: pool.blocks(),
        })
    }

    /// The raw content of any node (for migration tools, such as reading a legacy counter).
    pub async fn read_node(&self, path: &str) -> Result<Vec<u8>> {
        let mut budget = Budget::start(self.options.retry);
        Ok(self.read(path, &mut budget).await?.data)
    }

    /// The categories directly below `parent` (by path), for discovery.
    pub async fn list_categories(&self, parent: &str) -> Result<Vec<String>> {
        self.observed(parent, "list", |_| 0, self.list_categories_inner(parent))
            .await
    }

    async fn list_categories_inner(&self, parent: &str) -> Result<Vec<String>> {
        tracing::Span::current().record("attempt", 1);
        self.store.children(parent).await.map_err(|e| match e {
            StoreError::NoNode => ZooidError::NotFound {
                category: parent.to_string(),
            },
            other => other.into_zooid(parent),
        })
    }

    /// The node's size once its operation log is full: a push must leave room for the log so
    /// that later takes, which never add ranges, always fit.
    fn projected_size(&self, pool: &Pool, bytes: usize) -> usize {
        let missing = self.options.op_log_len.saturating_sub(pool.log().count());
        bytes + missing * MAX_OP_LINE_BYTES
    }

    fn slot(&self, category: &IdCategory) -> Arc<tokio::sync::Mutex<Slot>> {
        // The map is only ever inserted into, so a poisoned lock is safe to reuse.
        let mut map = self.categories.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(map.entry(category.name().to_string()).or_default())
    }

    /// Applies `plan` to the pool with compare-and-set until it sticks or the budget runs out.
    ///
    /// `plan` returns the new pool, the operation's result (the ranges it moved) and their count.
    async fn update(
        &self,
        category: &IdCategory,
        kind: OpKind,
        plan: impl Fn(&Pool) -> Result<(Pool, Vec<IdRange>, u64)>,
    ) -> Result<Vec<IdRange>> {
        self.update_checked(category, kind, true, |pool| {
            plan(pool).map(|(next, moved, count)| Plan::Write(next, moved, count))
        })
        .await
        .map(|updated| match updated {
            Updated::Moved(moved, _) => moved,
            Updated::Fresh(_) => Vec::new(), // `plan` never says so.
        })
    }

    /// [`update`](Self::update) with a plan that may also defer to fresh blocks, refusing a pool
    /// older than seen before when `refuse_older` (everything but the repair of such a pool).
    async fn update_checked(
        &self,
        category: &IdCategory,
        kind: OpKind,
        refuse_older: bool,
        plan: impl Fn(&Pool) -> Result<Plan>,
    ) -> Result<Updated> {
        let path = category.name();
        // The deadline counts from the call, including the wait behind this process's other
        // operations on the category.
        let mut budget = Budget::start(self.options.retry);
        let slot = self.slot(category);
        let Ok(mut guard) = tokio::time::timeout(budget.remaining(), slot.lock()).await else {
            return Err(ZooidError::Timeout {
                what: path.to_string(),
                after: budget.elapsed(),
            });
        };
        let result = self
            .update_attempts(category, kind, refuse_older, plan, &mut budget, &mut guard)
            .await;
        self.stats
            .retries(path, u64::from(budget.attempts().saturating_sub(1)));
        result
    }

    /// The attempts of [`Self::update`], holding the category's slot.
    async fn update_attempts(
        &self,
        category: &IdCategory,
        kind: OpKind,
        refuse_older: bool,
        plan: impl Fn(&Pool) -> Result<Plan>,
        budget: &mut Budget,
        slot: &mut Slot,
    ) -> Result<Updated> {
        let path = category.name();
        let Slot {
            cached,
            pace,
            changed,
            known,
            armed,
            chunks: chunk_cache,
        } = slot;
        if changed.swap(false, Ordering::AcqRel) {
            *cached = None;
        }
        let mut failure = LastFailure::None;
        let mut conflicts = 0u32;
        // The version this process last wrote, when it yielded instead of writing on it.
        let mut mine = None;
        let fair = self.options.fair_pacing;
        while budget.try_attempt() {
            tracing::Span::current().record("attempt", budget.attempts());
            if fair && budget.attempts() == 1 && pace.contended() {
                // Contended: yield to the others first, then plan on what the store holds after
                // the wait rather than on the version this process last wrote (src/pace.rs).
                budget
                    .sleep_up_to(pace.wait_ceiling(1).min(self.options.retry.max_delay))
                    .await;
                mine = cached.take().filter(|c| !c.fresh).map(|c| c.version);
            }
            let current = match cached.take() {
                Some(state) => state,
                None => {
                    let mut node = self.read(path, budget).await?;
                    if let Some(mine) = mine.take() {
                        pace.on_fresh_read(
                            u32::try_from(node.version.saturating_sub(mine).max(0)).unwrap_or(0),
                        );
                    }
                    let mut pool = Pool::parse(path, &node.data)?;
                    if refuse_older && self.is_older(path, pool.epoch(), node.version) {
                        // A new session may have reached a server that lags behind the one the
                        // newer state came from: catch it up before concluding anything.
                        if self.store.sync(path).await.is_ok() {
                            node = self.read(path, budget).await?;
                            pool = Pool::parse(path, &node.data)?;
                        }
                    }
                    if refuse_older {
                        self.observe(path, pool.epoch(), node.version)?;
                    }
                    self.stats.pool_seen(
                        path,
                        &pool,
                        node.data.len(),
                        node.version,
                        self.options.max_pool_bytes,
                    );
                    if !pool.chunks().is_empty() {
                        let session = self.store.session().ok_or_else(blocks::needs_zookeeper)?;
                        if let chunks::Loaded::Stale =
                            chunks::load(session, path, &mut pool, chunk_cache).await?
                        {
                            // Read the pool node before a later write: read again.
                            budget.backoff().await;
                            continue;
                        }
                    }
                    if let (Some(_), Some(session)) = (pool.blocks(), self.store.session()) {
                        // Pushes waiting in their own nodes are free IDs too.
                        let (version, pending) = blocks::read_returns(session, path).await?;
                        let doubled = pool.merge_pending(version, pending);
                        if doubled > 0 {
                            tracing::error!(
                                category = path,
                                ids = doubled,
                                "IDs pushed twice (or pushed while free); counted once"
                            );
                        }
                    }
                    known.store(node.version, Ordering::Release);
                    if let (Some(_), Some(session)) = (pool.blocks(), self.store.session()) {
                        blocks::watch_pool(
                            session,
                            path,
                            Arc::clone(known),
                            Arc::clone(armed),
                            Arc::clone(changed),
                        );
                    }
                    Cached {
                        version: node.version,
                        pool,
                        fresh: true,
                    }
                }
            };
            let (mut next, moved, count, part_ops, mut stored) = match plan(&current.pool) {
                Ok(Plan::Write(mut next, moved, count)) => {
                    // A format-3 pool writes only the parts of its free list that changed. Pushes
                    // waiting in their own nodes whose IDs this write does not take stay there
                    // (up to KEEP_PENDING); the others are merged and their nodes deleted. (Not
                    // checked: that no push arrived since they were read; one that did is merged
                    // by a later write, so pushes never starve takes.)
                    let untouched: Vec<(String, Vec<IdRange>)> = next
                        .pending()
                        .iter()
                        .filter(|(_, ranges)| ranges.iter().all(|r| next.free().covers(r)))
                        .cloned()
                        .collect();
                    let kept = if untouched.len() <= blocks::KEEP_PENDING {
                        untouched
                    } else {
                        Vec::new()
                    };
                    let returned = blocks::returned_parent(path);
                    let merged = current
                        .pool
                        .pending()
                        .iter()
                        .filter(|(name, _)| !kept.iter().any(|(k, _)| k == name))
                        .map(|(name, _)| chunks::ChunkOp::DeleteNode {
                            node: format!("{returned}/{name}"),
                        })
                        .collect::<Vec<_>>();
                    next.set_pending(kept);
                    // `stored`: the pool as its nodes will hold it, when pushes wait.
                    let (mut ops, stored) =
                        if current.pool.pending().is_empty() && next.pending().is_empty() {
                            (chunks::plan(&current.pool, &mut next), None)
                        } else {
                            let mut stored = next.stored();
                            let ops = chunks::plan(&current.pool.stored(), &mut stored);
                            next.set_chunks(stored.chunks().to_vec());
                            (ops, Some(stored))
                        };
                    ops.extend(merged);
                    (next, moved, count, ops, stored)
                }
                Ok(Plan::Fresh(pool)) => {
                    let version = current.version;
                    *cached = Some(current);
                    return Ok(Updated::Fresh(Planned { pool, version }));
                }
                // A remembered state may be stale: decide only on what the store holds now.
                Err(_) if !current.fresh => continue,
                Err(err) => {
                    *cached = Some(current);
                    return Err(err);
                }
            };
            let version =
                current
                    .version
                    .checked_add(1)
                    .ok_or_else(|| ZooidError::VersionWrap {
                        path: path.to_string(),
                        version: current.version,
                    })?;
            let token = OpToken::random();
            let op = OpRecord {
                version,
                token,
                kind,
                count,
            };
            next.record(op, self.options.op_log_len);
            if let Some(stored) = stored.as_mut() {
                stored.record(op, self.options.op_log_len);
            }
            let bytes = stored.as_ref().unwrap_or(&next).render().into_bytes();
            if kind == OpKind::Push
                && self.projected_size(&next, bytes.len()) > self.options.max_pool_bytes
            {
                if !current.fresh {
                    continue; // Decide on what the store holds now, not on a remembered state.
                }
                *cached = Some(current);
                return Err(ZooidError::PoolFull {
                    category: path.to_string(),
                    bytes: self.projected_size(&next, bytes.len()),
                    limit: self.options.max_pool_bytes,
                });
            }
            let sent = std::time::Instant::now();
            // Before sending: the watch must not take this process's own write for another's.
            known.store(version, Ordering::Release);
            match self.write(path, &bytes, current.version, &part_ops).await {
                Ok(written) => {
                    known.store(written, Ordering::Release);
                    chunks::remember(stored.as_ref().unwrap_or(&next), chunk_cache);
                    if refuse_older {
                        self.observe(path, next.epoch(), written)?;
                    } else {
                        self.forget_seen(path);
                        self.observe(path, next.epoch(), written)?;
                    }
                    self.stats.pool_seen(
                        path,
                        &next,
                        bytes.len(),
                        written,
                        self.options.max_pool_bytes,
                    );
                    pace.on_success(sent.elapsed());
                    let after = next.blocks().map(|_| Planned {
                        pool: next.skeleton(),
                        version: written,
                    });
                    *cached = Some(Cached {
                        version: written,
                        pool: next,
                        fresh: false,
                    });
                    return Ok(Updated::Moved(moved, after));
                }
                Err(StoreError::BadVersion) => {
                    self.stats.conflict(path);
                    failure = LastFailure::Conflict;
                    conflicts += 1;
                    if fair {
                        pace.on_conflict();
                        budget
                            .sleep_up_to(
                                pace.wait_ceiling(conflicts + 1)
                                    .min(self.options.retry.max_delay),
                            )
                            .await;
                    } else {
                        budget.backoff().await;
                    }
                }
                Err(StoreError::NoNode) => {
                    return Err(ZooidError::NotFound {
                        category: path.to_string(),
                    })
                }
                Err(StoreError::Unavailable(why)) => {
                    *cached = Some(current);
                    failure = LastFailure::Unreachable(why);
                    budget.backoff().await;
                }
                Err(StoreError::Unknown(why)) => {
                    tracing::warn!(category = path, %why, op = kind.as_str(), "reply lost; resolving the outcome");
                    let expected = current.version;
                    let write = LostWrite {
                        token,
                        expected,
                        bytes: &bytes,
                        parts: &part_ops,
                        kind,
                        moved: &moved,
                    };
                    match self.resolve(path, write, next).await? {
                        Resolution::Applied(state) => {
                            self.stats.lost_reply(path, LostOutcome::Applied, 0);
                            let after = state.pool.blocks().map(|_| Planned {
                                pool: state.pool.skeleton(),
                                version: state.version,
                            });
                            // A pool read without its free-list parts or waiting pushes is not
                            // planned on.
                            *cached = Some(state).filter(|s| {
                                s.pool.chunks().is_empty() && s.pool.blocks().is_none()
                            });
                            return Ok(Updated::Moved(moved, after));
                        }
                        Resolution::NotApplied(state) => {
                            self.stats.lost_reply(path, LostOutcome::NotApplied, 0);
                            *cached = Some(state)
                                .filter(|s| s.pool.chunks().is_empty() && s.pool.blocks().is_none())
                        }
                        Resolution::Unknown(why) => {
                            self.stats
                                .lost_reply(path, LostOutcome::Unknown, count_of(&moved));
                            tracing::error!(category = path, %why, op = kind.as_str(), ids = ?moved, "outcome unknown; IDs leaked");
                            return Err(ZooidError::OutcomeUnknown {
                                category: path.to_string(),
                                op: kind.into(),
                                ids: moved,
                            });
                        }
                    }
                }
                Err(
                    other @ (StoreError::NodeExists
                    | StoreError::Refused(_)
                    | StoreError::NotAuthorized { .. }),
                ) => return Err(other.into_zooid(path)),
            }
        }
        Err(self.budget_error(category, budget, failure))
    }

    /// Finds out whether the write `bytes` (token `token`, expecting version `expected`) applied.
    ///
    /// The node records the token of the write that produced each recent version, so once the
    /// version has moved past `expected`, version `expected + 1` tells whose write won. While it
    /// has not moved, the identical write is sent again: both copies expect `expected`, so at most
    /// one of them can ever apply.
    async fn resolve(&self, path: &str, write: LostWrite<'_>, next: Pool) -> Result<Resolution> {
        let LostWrite {
            token,
            expected,
            bytes,
            parts,
            ..
        } = write;
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
            if node.version == expected {
                match self.write(path, bytes, expected, parts).await {
                    Ok(written) => {
                        return Ok(Resolution::Applied(Cached {
                            version: written,
                            pool: next,
                            fresh: false,
                        }))
                    }
                    Err(StoreError::BadVersion) => continue,
                    Err(StoreError::Unknown(_) | StoreError::Unavailable(_)) => {
                        budget.backoff().await
                    }
                    Err(other) => return Ok(Resolution::Unknown(other.to_string())),
                }
                continue;
            }
            let Ok(pool) = Pool::parse(path, &node.data) else {
                return Ok(Resolution::Unknown(
                    "the pool node is no longer parseable".into(),
                ));
            };
            if node.version < expected {
                return Ok(Resolution::Unknown(format!(
                    "node version went back to {} (recreated?)",
                    node.version
                )));
            }
            let state = Cached {
                version: node.version,
                pool,
                fresh: true,
            };
            // `expected < node.version`, so `expected + 1` does not overflow.
            return Ok(match state.pool.op_at(expected + 1) {
                Some(op) if op.token == token => Resolution::Applied(state),
                Some(_) => Resolution::NotApplied(state),
                None => match write.told_by_free_list(&state.pool) {
                    Some(true) => Resolution::Applied(state),
                    Some(false) => Resolution::NotApplied(state),
                    None => Resolution::Unknown(format!(
                        "version {} is no longer in the node's operation log (now at {})",
                        expected + 1,
                        node.version
                    )),
                },
            });
        }
    }

    /// Writes the pool node at `expected`, with the free-list part writes `parts` in the same
    /// `multi` when there are any.
    async fn write(
        &self,
        path: &str,
        bytes: &[u8],
        expected: i32,
        parts: &[chunks::ChunkOp],
    ) -> Result<i32, StoreError> {
        match (parts.is_empty(), self.store.session()) {
            (true, _) => self.store.set(path, bytes, expected).await,
            (false, Some(session)) => chunks::commit(session, path, bytes, expected, parts).await,
            (false, None) => Err(StoreError::Refused(
                "free-list parts need a ZooKeeper store".into(),
            )),
        }
    }

    async fn sync_and_read(&self, path: &str) -> Result<Versioned, StoreError> {
        self.store.sync(path).await?;
        self.store.get(path).await
    }

    /// Reads a node, retrying while the store is unreachable.
    async fn read(&self, path: &str, budget: &mut Budget) -> Result<Versioned> {
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

    fn budget_error(
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
}

/// The signal of [`IdGeneratorService::take_fresh`] to plan the take again.
fn reroute() -> ZooidError {
    ZooidError::Closed {
        what: String::new(),
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

/// How many IDs `ranges` hold.
fn count_of(ranges: &[IdRange]) -> u64 {
    ranges.iter().map(IdRange::len).sum()
}
