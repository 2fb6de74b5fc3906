//! The ID generator service: take and push IDs with versioned compare-and-set, and resolve
//! writes whose reply was lost (docs/DESIGN.md explains the protocol).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::{Result, ZooidError};
use crate::idset::{IdCategory, IdSet};
use crate::pace::Pace;
use crate::pool::{OpKind, OpRecord, OpToken, Pool, DEFAULT_OP_LOG_LEN};
use crate::range::{IdRange, InsertError};
use crate::retry::{Budget, RetryPolicy};
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
    /// Share a contended category fairly between processes (src/pace.rs): operations wait their
    /// turn and read afresh instead of writing at once on the version they remember, and the
    /// oldest operation retries first. Off by default: it costs throughput and, with many
    /// contenders on a fast network, more failed writes; it learns the contention from a
    /// process's earlier operations, so it does not help processes that take once (a burst of
    /// one-shot tasks). docs/BENCHMARKS.md has the figures.
    pub fair_pacing: bool,
}

impl Default for ServiceOptions {
    fn default() -> Self {
        Self {
            retry: RetryPolicy::default(),
            max_pool_bytes: DEFAULT_MAX_POOL_BYTES,
            op_log_len: DEFAULT_OP_LOG_LEN,
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
        }
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
        let bounds = IdRange::new(first, last)
            .filter(|_| first >= 1)
            .ok_or_else(|| {
                ZooidError::InvalidArgument(format!(
                    "category bounds {first}..={last}: need 1 <= first <= last"
                ))
            })?;
        let path = category.name();
        let token = OpToken::random();
        let mut pool = Pool::new(bounds);
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
            match self.store.create(path, &bytes).await {
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
        let ranges = self
            .update(category, OpKind::Take, |pool| {
                let mut next = pool.clone();
                let taken = next.free_mut().take_lowest(n);
                if taken.is_empty() {
                    return Err(ZooidError::Exhausted {
                        category: category.name().to_string(),
                    });
                }
                let count = taken.iter().map(IdRange::len).sum();
                Ok((next, taken, count))
            })
            .await?;
        Ok(IdSet::new(category.clone(), ranges))
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
        let result = self
            .update(&category, OpKind::Push, |pool| {
                let name = || category.name().to_string();
                if let Some(range) = ranges.iter().find(|r| !pool.bounds().covers(r)) {
                    return Err(ZooidError::OutOfBounds {
                        category: name(),
                        range: *range,
                        bounds: pool.bounds(),
                    });
                }
                let mut next = pool.clone();
                next.free_mut()
                    .insert_all(&ranges)
                    .map_err(|InsertError::Overlap(range)| ZooidError::AlreadyFree {
                        category: name(),
                        range,
                    })?;
                Ok((next, ranges.clone(), count))
            })
            .await;
        if matches!(result, Ok(_) | Err(ZooidError::OutcomeUnknown { .. })) {
            ids.clear();
        }
        result.map(drop)
    }

    /// Reads the category's pool afresh.
    pub async fn pool_info(&self, category: &IdCategory) -> Result<PoolInfo> {
        let mut budget = Budget::start(self.options.retry);
        let node = self.read(category.name(), &mut budget).await?;
        let pool = Pool::parse(category.name(), &node.data)?;
        Ok(PoolInfo {
            bounds: pool.bounds(),
            free: pool.free().ranges().to_vec(),
            free_count: pool.free().count(),
            version: node.version,
            bytes: node.data.len(),
            legacy: pool.is_legacy(),
        })
    }

    /// The raw content of any node (for migration tools, such as reading a legacy counter).
    pub async fn read_node(&self, path: &str) -> Result<Vec<u8>> {
        let mut budget = Budget::start(self.options.retry);
        Ok(self.read(path, &mut budget).await?.data)
    }

    /// The categories directly below `parent` (by path), for discovery.
    pub async fn list_categories(&self, parent: &str) -> Result<Vec<String>> {
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
        let Slot { cached, pace } = &mut *guard;
        let mut failure = LastFailure::None;
        let mut conflicts = 0u32;
        // The version this process last wrote, when it yielded instead of writing on it.
        let mut mine = None;
        let fair = self.options.fair_pacing;
        while budget.try_attempt() {
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
                    let node = self.read(path, &mut budget).await?;
                    if let Some(mine) = mine.take() {
                        pace.on_fresh_read(
                            u32::try_from(node.version.saturating_sub(mine).max(0)).unwrap_or(0),
                        );
                    }
                    Cached {
                        version: node.version,
                        pool: Pool::parse(path, &node.data)?,
                        fresh: true,
                    }
                }
            };
            let (mut next, moved, count) = match plan(&current.pool) {
                Ok(planned) => planned,
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
            next.record(
                OpRecord {
                    version,
                    token,
                    kind,
                    count,
                },
                self.options.op_log_len,
            );
            let bytes = next.render().into_bytes();
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
            match self.store.set(path, &bytes, current.version).await {
                Ok(written) => {
                    pace.on_success(sent.elapsed());
                    *cached = Some(Cached {
                        version: written,
                        pool: next,
                        fresh: false,
                    });
                    return Ok(moved);
                }
                Err(StoreError::BadVersion) => {
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
                        kind,
                        moved: &moved,
                    };
                    match self.resolve(path, write, next).await? {
                        Resolution::Applied(state) => {
                            *cached = Some(state);
                            return Ok(moved);
                        }
                        Resolution::NotApplied(state) => *cached = Some(state),
                        Resolution::Unknown(why) => {
                            tracing::error!(category = path, %why, op = kind.as_str(), ids = ?moved, "outcome unknown; IDs leaked");
                            return Err(ZooidError::OutcomeUnknown {
                                category: path.to_string(),
                                op: kind.as_str(),
                                ids: moved,
                            });
                        }
                    }
                }
                Err(other @ StoreError::NodeExists) | Err(other @ StoreError::Refused(_)) => {
                    return Err(other.into_zooid(path))
                }
            }
        }
        Err(self.budget_error(category, &budget, failure))
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
                Err(err @ StoreError::Refused(_)) => {
                    return Ok(Resolution::Unknown(err.to_string()))
                }
                Err(_) => {
                    budget.backoff().await;
                    continue;
                }
            };
            if node.version == expected {
                match self.store.set(path, bytes, expected).await {
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
