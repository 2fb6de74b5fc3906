//! The facade: [`IdGeneratorService`], its constructors and its public operations, each run in
//! its span and counted. The work is done by the allocator's other modules (src/alloc/mod.rs).

use tokio::time::Instant;

use tracing::Instrument;

mod undelivered;

pub(crate) use undelivered::GivenBack;

use super::core::{count_of, Core};
use super::options::{Layout, PoolInfo, Restored, ServiceOptions};
use crate::error::{Result, ZooidError};
use crate::format::MAX_TAKE;
use crate::idset::{IdCategory, IdSet};
use crate::range::IdRange;
use crate::stats::{outcome_of, LostOutcome, ServiceStats};
use crate::store::{AnyStore, ConnectOptions, Store};
use crate::zk::Zk;

/// Hands out unique IDs from categories kept in a [`Store`].
///
/// Share one service between threads: operations on one category are serialized within the
/// process (they would conflict on the node anyway), operations on different categories run in
/// parallel, all over one store session.
pub struct IdGeneratorService<S: Store = AnyStore> {
    /// The allocator the facade asks (src/alloc/core.rs).
    core: Core<S>,
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
        let store = AnyStore::open(connect, connect_options).await?;
        Ok(match store.zookeeper().cloned() {
            Some(zk) => Self::on_zookeeper(zk, options),
            None => Self::with_store(store, options),
        })
    }

    /// A service on an already open ZooKeeper session (a real one, or the simulation's), shared
    /// with the recipes.
    pub fn on_zookeeper(zk: Zk, options: ServiceOptions) -> Self {
        let mut service = Self::with_store(
            AnyStore::ZooKeeper(crate::store::ZkStore::on(zk.clone())),
            options,
        );
        service.core.zk = Some(zk);
        service
    }

    /// Closes the service: when no recipe shares its ZooKeeper session, the session is closed on
    /// the servers and this resolves once they answered (dropping the service closes it too,
    /// without waiting).
    pub async fn close(self) {
        let Core { store, zk, .. } = self.core;
        drop(store);
        if let Some(zk) = zk {
            zk.close().await;
        }
    }

    /// The options the service was opened with (the recipes opened from it follow its retry
    /// policy).
    pub fn options(&self) -> &ServiceOptions {
        &self.core.options
    }
}

impl<S: Store> IdGeneratorService<S> {
    /// A service over an already opened store, holding single-node categories (a service on
    /// ZooKeeper is opened with [`IdGeneratorService::on_zookeeper`]).
    pub fn with_store(store: S, options: ServiceOptions) -> Self {
        Self {
            core: Core::new(store, None, options),
        }
    }

    /// What the service did since it was opened, and each category's pool as last seen
    /// (see [`ServiceStats`]; the same figures go to the `metrics` facade).
    pub fn stats(&self) -> ServiceStats {
        let mut stats = self.core.stats.snapshot();
        if let Some(zk) = &self.core.zk {
            stats.session_losses = zk.losses();
            stats.session_generation = zk.status().generation;
        }
        stats
    }

    /// The ZooKeeper session the service uses; `None` on the embedded stores.
    pub fn zookeeper(&self) -> Option<&Zk> {
        self.core.zk.as_ref()
    }

    /// The store the service uses.
    pub fn store(&self) -> &S {
        &self.core.store
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
        // Every ID in doubt is counted here, once, whichever path gave it up: the IDs named
        // and the bound of those that may have been claimed.
        if let Err(ZooidError::OutcomeUnknown {
            ids, leaked_within, ..
        }) = &result
        {
            let leaked = count_of(ids) + leaked_within.as_ref().map_or(0, |b| b.at_most);
            self.core
                .stats
                .lost_reply(category, LostOutcome::Unknown, leaked);
        }
        let outcome = outcome_of(result.as_ref().err());
        span.record("outcome", outcome);
        let ids = result.as_ref().map(moved).unwrap_or(0);
        self.core
            .stats
            .op_done(category, op, outcome, ids, started.elapsed());
        result
    }

    /// Creates a category whose IDs are `first..=last` (first >= 1), all free, in the
    /// [`default_layout`](Self::default_layout) of its store: format 4 on ZooKeeper, a single
    /// node on the embedded stores; [`create_category_in`](Self::create_category_in) chooses.
    ///
    /// Fails with `CategoryExists` when the node is already there: an existing pool is never
    /// reset, since that would hand out its IDs again.
    pub async fn create_category(
        &self,
        category: &IdCategory,
        first: i64,
        last: i64,
    ) -> Result<()> {
        self.create_category_with_ceiling(category, first, last, None)
            .await
    }

    /// Creates a category whose IDs are `first..=last` (first >= 1), all free, in `layout`
    /// (block layouts need ZooKeeper: `InvalidArgument` on `mem:`/`file:`).
    pub async fn create_category_in(
        &self,
        category: &IdCategory,
        first: i64,
        last: i64,
        layout: Layout,
    ) -> Result<()> {
        self.create_category_in_with_ceiling(category, first, last, layout, None)
            .await
    }

    /// [`create_category_in`](Self::create_category_in) with a durable-reservation ceiling
    /// (`None`: none).
    pub async fn create_category_in_with_ceiling(
        &self,
        category: &IdCategory,
        first: i64,
        last: i64,
        layout: Layout,
        ceiling: Option<i64>,
    ) -> Result<()> {
        let create = async {
            match layout {
                Layout::SingleNode => {
                    self.core
                        .create_single(category, first, last, None, ceiling)
                        .await
                }
                Layout::HoleNodes { unit } => {
                    self.core
                        .create_blocks(category, first, last, unit, ceiling)
                        .await
                }
            }
        };
        self.observed(category.name(), "create", |_| 0, create)
            .await
    }

    /// The layout [`create_category`](Self::create_category) uses on this service's store: on
    /// ZooKeeper [`Layout::for_scale`] (format 4, hole nodes in blocks of
    /// [`DEFAULT_BLOCK_SIZE`](super::DEFAULT_BLOCK_SIZE)), on the embedded stores
    /// [`Layout::SingleNode`].
    pub fn default_layout(&self) -> Layout {
        if self.core.zk.as_ref().is_some() {
            Layout::for_scale()
        } else {
            Layout::SingleNode
        }
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
        acl: Option<&[crate::zk::Acl]>,
    ) -> Result<()> {
        self.create_category_full(category, first, last, acl, None)
            .await
    }

    /// Creates a category like [`create_category`](Self::create_category) (in the store's
    /// default layout) whose takes never hand out an ID above `ceiling` (until a keeper raises
    /// it); `None` for no ceiling.
    pub async fn create_category_with_ceiling(
        &self,
        category: &IdCategory,
        first: i64,
        last: i64,
        ceiling: Option<i64>,
    ) -> Result<()> {
        let layout = self.default_layout();
        self.create_category_in_with_ceiling(category, first, last, layout, ceiling)
            .await
    }

    /// Creates a category with both an ACL ([`create_category_with_acl`]) and a ceiling
    /// ([`create_category_with_ceiling`]). A category with its own ACL keeps the single-node
    /// layout (the nodes of the block layouts are created with the session's default ACL).
    ///
    /// [`create_category_with_acl`]: Self::create_category_with_acl
    /// [`create_category_with_ceiling`]: Self::create_category_with_ceiling
    pub async fn create_category_full(
        &self,
        category: &IdCategory,
        first: i64,
        last: i64,
        acl: Option<&[crate::zk::Acl]>,
        ceiling: Option<i64>,
    ) -> Result<()> {
        if acl.is_none() {
            return self
                .create_category_with_ceiling(category, first, last, ceiling)
                .await;
        }
        let create = self.core.create_single(category, first, last, acl, ceiling);
        self.observed(category.name(), "create", |_| 0, create)
            .await
    }

    /// Creates a category in block allocation with hole nodes (pool format 4, the layout
    /// `Layout::HoleNodes { unit }`; needs ZooKeeper): takes of fresh IDs claim blocks of `unit`
    /// IDs by creating sequential nodes, which never conflict, so contending processes are
    /// served in arrival order with one transaction per take; pushed ranges become nodes of
    /// their own, taken by deleting them (src/alloc/blocks/, src/alloc/holes/, docs/DESIGN.md).
    ///
    /// A take of `n` IDs claims `ceil(n / unit)` blocks and pushes back what it does not hand
    /// out as holes: choose `unit` as the batch size the workers take (or a divisor of it).
    pub async fn create_category_blocks(
        &self,
        category: &IdCategory,
        first: i64,
        last: i64,
        unit: u64,
    ) -> Result<()> {
        self.create_category_blocks_with_ceiling(category, first, last, unit, None)
            .await
    }

    /// Creates a category in block allocation (see
    /// [`create_category_blocks`](Self::create_category_blocks)) with a durable-reservation
    /// ceiling (`0 <= ceiling <= last`): no ID above it is handed out until it is raised, so a
    /// keeper's first durable record covers every ID from the start.
    pub async fn create_category_blocks_with_ceiling(
        &self,
        category: &IdCategory,
        first: i64,
        last: i64,
        unit: u64,
        ceiling: Option<i64>,
    ) -> Result<()> {
        let create = self
            .core
            .create_blocks(category, first, last, unit, ceiling);
        self.observed(category.name(), "create", |_| 0, create)
            .await
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
        let take = self.core.take_waiting(category, n);
        let ranges = self
            .observed(category.name(), "take", |r| count_of(r), take)
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
        let push = self.core.push_once(&category, &ranges);
        let result = self
            .observed(category.name(), "push", |r| count_of(r), push)
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
        let raise = self.core.raise(category, ceiling);
        self.observed(category.name(), "raise", |_| 0, raise)
            .await?;
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
        self.core
            .restore(category, bounds, ceiling, epoch, Layout::SingleNode)
            .await
    }

    /// [`restore_category`](Self::restore_category) for a category in `layout` (the durable
    /// record's [`layout`](crate::durable::Record::layout)): a block layout comes back with its
    /// block size, its fresh blocks above `ceiling` (needs ZooKeeper).
    pub async fn restore_category_in(
        &self,
        category: &IdCategory,
        bounds: IdRange,
        ceiling: i64,
        epoch: u64,
        layout: Layout,
    ) -> Result<Restored> {
        let restore = self.core.restore(category, bounds, ceiling, epoch, layout);
        self.observed(category.name(), "restore", |_| 0, restore)
            .await
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
        let repair = self.core.repair_pool(category, ceiling, epoch);
        self.observed(category.name(), "repair", |_| 0, repair)
            .await
    }

    /// Reads the category's pool afresh.
    pub async fn pool_info(&self, category: &IdCategory) -> Result<PoolInfo> {
        let read = self.core.read_info(category);
        self.observed(category.name(), "show", |_| 0, read).await
    }

    /// The raw content of any node (for migration tools, such as reading a legacy counter).
    pub async fn read_node(&self, path: &str) -> Result<Vec<u8>> {
        let mut budget = crate::retry::Budget::start(self.core.options.retry);
        Ok(self.core.read(path, &mut budget).await?.data)
    }

    /// The categories directly below `parent` (by path), for discovery.
    pub async fn list_categories(&self, parent: &str) -> Result<Vec<String>> {
        self.observed(parent, "list", |_| 0, self.core.list_children(parent))
            .await
    }

    /// Moves an existing single-node category (formats 1 and 2, or a seed-style node) to
    /// `layout` (`Layout::HoleNodes`, format 4; needs ZooKeeper) in place, while processes keep
    /// taking and pushing: no ID is handed out twice and none is lost (src/alloc/migrate.rs).
    /// The free range that ends at the last ID becomes the fresh-block region; every other free
    /// range becomes a hole node. `Migrated::Already` when it is in `layout` already;
    /// `InvalidArgument` for the single-node layout (no way back); `RetiredFormat` for a pool
    /// in format 3, left as it is.
    pub async fn migrate_category(
        &self,
        category: &IdCategory,
        layout: Layout,
    ) -> Result<super::Migrated> {
        let migrate = self.core.migrate(category, layout);
        self.observed(category.name(), "migrate", |_| 0, migrate)
            .await
    }
}
