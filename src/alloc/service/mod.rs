//! The facade: [`IdGeneratorService`], its constructors and its public operations, each run in
//! its span and counted. The work is done by the allocator's other modules (src/alloc/mod.rs).

use std::sync::Arc;
use std::time::Instant;

use tracing::Instrument;

mod to_end;
mod undelivered;

pub(crate) use undelivered::GivenBack;

use super::core::{count_of, Core};
use super::options::{Layout, PoolInfo, Restored, ServiceOptions};
use super::spec::CategorySpec;
use crate::error::{Result, ZooidError};
use crate::format::MAX_TAKE;
use crate::idset::{IdCategory, IdSet};
use crate::range::IdRange;
use crate::stats::{outcome_of, LostOutcome, Recorder, ServiceStats};
use crate::store::{AnyStore, ConnectOptions, Store};
use crate::zk::Zk;

/// Hands out unique IDs from categories kept in a [`Store`].
///
/// Share one service between threads: operations on one category are serialized within the
/// process (they would conflict on the node anyway), operations on different categories run in
/// parallel, all over one store session.
pub struct IdGeneratorService<S: Store = AnyStore> {
    /// The allocator the facade asks (src/alloc/core.rs), shared with the tasks its takes and
    /// pushes run in (src/alloc/service/to_end.rs).
    core: Arc<Core<S>>,
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
        let store = AnyStore::ZooKeeper(crate::store::ZkStore::on(zk.clone()));
        Self {
            core: Arc::new(Core::new(store, Some(zk), options)),
        }
    }

    /// Closes the service: when no recipe shares its ZooKeeper session, and no take or push
    /// whose caller gave up is still finishing, the session is closed on the servers and this
    /// resolves once they answered (dropping the service closes it too, without waiting).
    pub async fn close(self) {
        let zk = self.core.zk.clone();
        drop(self);
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

/// Runs one operation in its span, and counts it in `stats` when it ends.
async fn observe<T>(
    stats: &Recorder,
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
        stats.lost_reply(category, LostOutcome::Unknown, leaked);
    }
    let outcome = outcome_of(result.as_ref().err());
    span.record("outcome", outcome);
    let ids = result.as_ref().map(moved).unwrap_or(0);
    stats.op_done(category, op, outcome, ids, started.elapsed());
    result
}

impl<S: Store> IdGeneratorService<S> {
    /// A service over an already opened store, holding single-node categories (a service on
    /// ZooKeeper is opened with [`IdGeneratorService::on_zookeeper`]).
    pub fn with_store(store: S, options: ServiceOptions) -> Self {
        Self {
            core: Arc::new(Core::new(store, None, options)),
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

    /// Runs one operation in its span, and counts it when it ends ([`observe`]).
    async fn observed<T>(
        &self,
        category: &str,
        op: &'static str,
        moved: impl FnOnce(&T) -> u64,
        operation: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        observe(&self.core.stats, category, op, moved, operation).await
    }

    /// Creates the category `category` as `spec` says: its bounds, all free, in its layout (the
    /// store's [`default_layout`](Self::default_layout) when it names none, or the single node
    /// when it has an ACL), with its ceiling and its ACL (see [`CategorySpec`]).
    ///
    /// Fails with `InvalidArgument` naming the field when the spec does not
    /// [`validate`](CategorySpec::validate) or asks for a block layout on an embedded store
    /// (`mem:`, `file:`); with `Store` for an ACL there (they have no ACLs); with
    /// `CategoryExists` when the node is already there: an existing pool is never reset, since
    /// that would hand out its IDs again; with `OutcomeUnknown` when a create whose reply was
    /// lost may have made the category and that cannot be told.
    pub async fn create_category(&self, category: &IdCategory, spec: &CategorySpec) -> Result<()> {
        let create = async {
            spec.validate()?;
            let (first, last) = (spec.first(), spec.last());
            let ceiling = spec.ceiling_asked();
            let acl = spec.acl_asked();
            let layout = match (spec.layout_asked(), acl) {
                (Some(layout), _) => layout,
                (None, Some(_)) => Layout::SingleNode,
                (None, None) => self.default_layout(),
            };
            match layout {
                Layout::SingleNode => {
                    self.core
                        .create_single(category, first, last, acl, ceiling)
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

    /// The layout [`create_category`](Self::create_category) uses on this service's store when
    /// the spec names none (and has no ACL): on ZooKeeper [`Layout::for_scale`] (format 4, hole
    /// nodes in blocks of [`DEFAULT_BLOCK_SIZE`](super::options::DEFAULT_BLOCK_SIZE)), on the embedded
    /// stores [`Layout::SingleNode`].
    pub fn default_layout(&self) -> Layout {
        if self.core.zk.as_ref().is_some() {
            Layout::for_scale()
        } else {
            Layout::SingleNode
        }
    }

    /// Takes up to `n` of the lowest free IDs of `category`: fewer when fewer remain, or when a
    /// take that got some could not get the rest (its deadline passed, ZooKeeper unreachable)
    /// with nothing in doubt.
    ///
    /// Errors: `Exhausted` when none remain, `NotFound` for a missing category, `OutcomeUnknown`
    /// (naming the leaked IDs) when a lost reply could not be resolved.
    ///
    /// Runs to its end even if its future is dropped (see [`push_ids`](Self::push_ids)): the
    /// IDs it took then go back to the pool.
    pub async fn take_ids(&self, category: &IdCategory, n: u64) -> Result<IdSet> {
        if n == 0 || n > MAX_TAKE {
            return Err(ZooidError::InvalidArgument(format!(
                "take of {n} IDs: ask for 1..={MAX_TAKE}"
            )));
        }
        let ranges = to_end::take(&self.core, category, n).await?;
        Ok(IdSet::taken_from(
            category.clone(),
            ranges,
            self.core.store.origin(),
        ))
    }

    /// Returns the unused IDs of `ids` to their category and empties `ids`.
    ///
    /// Nothing changes, and `ids` is kept, when `ids` was taken from another store (another
    /// ensemble or chroot, directory or memory store: `InvalidArgument`; an ensemble reached by
    /// another connect string counts as another store, and a set rebuilt with [`IdSet::new`]
    /// from its ranges goes anywhere, vouched for by its caller), when an ID lies
    /// outside the category's bounds
    /// (`OutOfBounds`), is already free (`AlreadyFree`), or the pool would outgrow its size
    /// limit (`PoolFull`). On `OutcomeUnknown` the push is not repeated and `ids` is emptied.
    ///
    /// `ids` is emptied before anything is sent and given its IDs back only on an error that
    /// proves nothing was written: a push that ends otherwise (a panic below it) leaves nothing
    /// to push a second time, since a push sent twice can free IDs another process took in
    /// between.
    ///
    /// Takes and pushes run to their end even if their future is dropped (an async caller's
    /// timeout or `select!`): a write sent is always resolved; IDs taken for a caller that gave
    /// up are pushed back, and IDs of a push refused after its caller gave up are reported
    /// leaked (`ids_leaked`, logged), never lost silently.
    pub async fn push_ids(&self, ids: &mut IdSet) -> Result<()> {
        let ranges = ids.ranges();
        if ranges.is_empty() {
            return Ok(());
        }
        let category = ids.category().clone();
        // Pushed into another store's pool of the same name, they would be freed where that
        // store may have handed them out.
        if let (Some(taken), Some(here)) = (ids.origin(), self.core.store.origin()) {
            if *taken != here {
                return Err(ZooidError::InvalidArgument(format!(
                    "the IDs of {category} were taken from another store ({taken}) than this \
                     service's ({here}): push them through a service on that store"
                )));
            }
        }
        let held = std::mem::replace(ids, IdSet::new(category.clone(), Vec::new()));
        let (result, nothing_written) = to_end::push(&self.core, category, ranges).await;
        if nothing_written {
            *ids = held;
        }
        result
    }

    /// Raises the category's ceiling to `ceiling` (clamped to the category's last ID) with a
    /// versioned write; returns the ceiling now in force. A pool without a ceiling gets one, at
    /// the version read: IDs handed out before are at or below it only if the caller made sure
    /// of it (the keeper writes the durable record first). Never lowers a ceiling
    /// (`WentBackwards`); a negative `ceiling` is `InvalidArgument`, with nothing written.
    ///
    /// This is the operator's and the tests' way; the keeper raises ceilings with fenced writes.
    pub async fn raise_ceiling(&self, category: &IdCategory, ceiling: i64) -> Result<i64> {
        let raise = self.core.raise(category, ceiling);
        self.observed(category.name(), "raise", |_| 0, raise).await
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
    ) -> Result<super::migrate::Migrated> {
        let migrate = self.core.migrate(category, layout);
        self.observed(category.name(), "migrate", |_| 0, migrate)
            .await
    }
}
