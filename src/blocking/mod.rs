//! The blocking facade over [`crate::alloc::IdGeneratorService`] and the recipes, for threads that are
//! not async; the C and JNI bindings sit on it. One file per recipe beside this one.

mod counter;
mod election;
mod prefetch;
mod queue;

pub use counter::Counter;
pub use election::{bump_epoch, leader, Election};
pub use prefetch::IdSource;
pub use queue::{Claim, WorkQueue};

use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::time::Duration;

use crate::alloc::{
    CategorySpec, GivenBack, IdGeneratorService as AsyncService, PoolInfo, ServiceOptions,
};
use crate::error::Result;
use crate::idset::{IdCategory, IdSet};
use crate::recipes::election::{ElectionOptions, LeaderInfo};
use crate::recipes::prefetch::SourceOptions;
use crate::recipes::queue::QueueOptions;
use crate::runtime::{self, drop_in_runtime, runtime};
use crate::store::{AnyStore, ConnectOptions};
use crate::zk::Session;

/// Runs `future` to completion on zooid's own runtime (the one every blocking call uses), for a
/// program that mixes async code of its own (signals, child processes, the `as_async`
/// handles) with the blocking facade, without a second runtime. Fails with
/// [`crate::error::ZooidError::RuntimeThread`] when called from inside an async runtime, and with
/// `Store` when the runtime cannot start.
pub fn block_on<F: std::future::Future>(future: F) -> Result<F::Output> {
    runtime::block_on(future)
}

/// Opens a ZooKeeper session on zooid's own runtime, to share between the ID service and the
/// recipes (see [`crate::zk::session`]).
pub fn open_session(connect: &str, options: &ConnectOptions) -> Result<Session> {
    let runtime = runtime()?;
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(crate::error::ZooidError::RuntimeThread);
    }
    runtime.block_on(Session::connect(connect, options))
}

/// A blocking ID generator service. `Send + Sync`: share one between threads.
///
/// Calls block the calling thread on zooid's own runtime and fail with
/// [`crate::error::ZooidError::RuntimeThread`] when made from inside an async runtime.
pub struct IdGeneratorService {
    /// Taken out exactly once, in `drop`.
    inner: ManuallyDrop<Arc<AsyncService<AnyStore>>>,
}

/// How long freeing a service waits for the servers to answer its session's close.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

impl Drop for IdGeneratorService {
    /// Closes the ZooKeeper session on the servers (when no recipe or ID source shares it) and
    /// waits up to [`CLOSE_WAIT`] for their answer: a process that frees its service and exits
    /// leaves no session (and no ephemeral node) behind until the servers would expire it.
    fn drop(&mut self) {
        // SAFETY: taken exactly once, here, and never used again.
        let inner = unsafe { ManuallyDrop::take(&mut self.inner) };
        if runtime::in_forked_child() {
            // The parent's service: closing its session from here would end it for the parent.
            std::mem::forget(inner);
            return;
        }
        let closing = Arc::into_inner(inner).and_then(|service| {
            let zk = service.zookeeper().cloned();
            drop_in_runtime(service);
            zk
        });
        let Some(zk) = closing else { return };
        let closed = runtime::runtime().map(|rt| {
            let _guard = rt.enter();
            zk.close()
        });
        if let Ok(closed) = closed {
            // From inside an async runtime (`RuntimeThread`) the close goes on without waiting.
            let _ = block_on(async { tokio::time::timeout(CLOSE_WAIT, closed).await });
        }
    }
}

impl IdGeneratorService {
    /// Opens a service on the store a connect string names (see [`AnyStore::open`]).
    pub fn connect(
        connect: &str,
        connect_options: &ConnectOptions,
        options: ServiceOptions,
    ) -> Result<Self> {
        let inner = block_on(AsyncService::connect(connect, connect_options, options))??;
        Ok(Self {
            inner: ManuallyDrop::new(Arc::new(inner)),
        })
    }

    /// See [`AsyncService::create_category`].
    pub fn create_category(&self, category: &IdCategory, spec: &CategorySpec) -> Result<()> {
        block_on(self.inner.create_category(category, spec))?
    }

    /// See [`AsyncService::raise_ceiling`].
    pub fn raise_ceiling(&self, category: &IdCategory, ceiling: i64) -> Result<i64> {
        block_on(self.inner.raise_ceiling(category, ceiling))?
    }

    /// See [`AsyncService::take_ids`].
    pub fn take_ids(&self, category: &IdCategory, n: u64) -> Result<IdSet> {
        block_on(self.inner.take_ids(category, n))?
    }

    /// See [`AsyncService::push_ids`].
    pub fn push_ids(&self, ids: &mut IdSet) -> Result<()> {
        block_on(self.inner.push_ids(ids))?
    }

    /// Which store the service's IDs come from ([`Store::origin`](crate::store::Store::origin)),
    /// for a binding that keeps a set's IDs on its own side and pushes them back here.
    pub(crate) fn origin(&self) -> Option<std::sync::Arc<str>> {
        crate::store::Store::origin(self.inner.store())
    }

    /// See [`AsyncService::give_back_undelivered`]: for a binding that took `ids` but could not
    /// hand them to its caller.
    pub(crate) fn give_back_undelivered(&self, ids: IdSet) -> GivenBack {
        let category = ids.category().clone();
        let ranges = ids.ranges();
        match block_on(self.inner.give_back_undelivered(ids)) {
            Ok(given) => given,
            Err(err) => self.inner.leaked_undelivered(&category, &ranges, err),
        }
    }

    /// See [`AsyncService::pool_info`].
    pub fn pool_info(&self, category: &IdCategory) -> Result<PoolInfo> {
        block_on(self.inner.pool_info(category))?
    }

    /// See [`AsyncService::migrate_category`].
    pub fn migrate_category(
        &self,
        category: &IdCategory,
        layout: crate::alloc::Layout,
    ) -> Result<crate::alloc::Migrated> {
        block_on(self.inner.migrate_category(category, layout))?
    }

    /// See [`AsyncService::list_categories`].
    pub fn list_categories(&self, parent: &str) -> Result<Vec<String>> {
        block_on(self.inner.list_categories(parent))?
    }

    /// See [`AsyncService::read_node`].
    pub fn read_raw(&self, path: &str) -> Result<Vec<u8>> {
        block_on(self.inner.read_node(path))?
    }

    /// See [`AsyncService::stats`].
    pub fn stats(&self) -> crate::stats::ServiceStats {
        self.inner.stats()
    }

    /// The async service underneath.
    pub fn as_async(&self) -> &AsyncService<AnyStore> {
        &self.inner
    }

    /// A shared reference to the async service underneath, for objects that outlive a call (a
    /// prefetching [`IdSource`]). The session stays open while any reference lives; drop it
    /// inside zooid's runtime or on a thread outside any runtime.
    pub fn shared(&self) -> Arc<AsyncService<AnyStore>> {
        Arc::clone(&self.inner)
    }

    /// The service's ZooKeeper session, which the recipes share; `InvalidArgument` on the
    /// embedded stores (`mem:`, `file:`), which have no session.
    pub fn zookeeper(&self) -> Result<crate::zk::Zk> {
        self.live_zk()
    }

    /// The service's ZooKeeper session, for the recipes; `InvalidArgument` on the embedded
    /// stores.
    fn live_zk(&self) -> Result<crate::zk::Zk> {
        self.inner.zookeeper().cloned().ok_or_else(|| {
            crate::error::ZooidError::InvalidArgument(
                "this needs a ZooKeeper connect string; the embedded stores (mem:, file:) have no session".into(),
            )
        })
    }

    // The recipes, each opened from the service in one call: this is how the C and JNI bindings
    // open them. The session-based ones share the service's session and keep it open until they
    // are dropped; `InvalidArgument` on the embedded stores.

    /// The CAS counter at `path` on the service's session, retrying as the service does (see
    /// [`Counter`]). The node need not exist yet.
    pub fn open_counter(&self, path: &str) -> Result<Counter> {
        // The clone is never the session's last handle: the service holds one for this call.
        Counter::with_policy(self.live_zk()?, path, self.inner.options().retry)
    }

    /// The work queue at `path` on the service's session (see [`WorkQueue::open`]).
    pub fn open_queue(&self, path: &str, options: QueueOptions) -> Result<WorkQueue> {
        WorkQueue::open(self.live_zk()?, path, options)
    }

    /// Joins the election of `group` on the service's session (see [`Election::join`]).
    pub fn join_election(&self, group: &str, options: ElectionOptions) -> Result<Election> {
        Election::join(&self.live_zk()?, group, options)
    }

    /// Raises the epoch of `group` on the service's session (see [`bump_epoch`]).
    pub fn bump_epoch(&self, group: &str) -> Result<i64> {
        bump_epoch(&self.live_zk()?, group)
    }

    /// Who leads `group`, without joining it (see [`leader`]).
    pub fn leader(&self, group: &str) -> Result<Option<LeaderInfo>> {
        leader(&self.live_zk()?, group)
    }

    /// A prefetching source over `category`, taking its first batch now (see
    /// [`IdSource::open`]).
    pub fn open_source(&self, category: &IdCategory, options: SourceOptions) -> Result<IdSource> {
        IdSource::open(self, category, options)
    }
}
