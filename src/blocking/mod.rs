//! The blocking facade over [`crate::IdGeneratorService`] and the recipes, for threads that are
//! not async; the C and JNI bindings sit on it. One file per recipe beside this one.

mod election;

pub use election::{leader, Election};

use std::mem::ManuallyDrop;

use crate::error::Result;
use crate::idset::{IdCategory, IdSet};
use crate::runtime::{block_on, runtime};
use crate::service::{IdGeneratorService as AsyncService, PoolInfo, ServiceOptions};
use crate::session::Session;
use crate::store::{AnyStore, ConnectOptions};

/// Opens a ZooKeeper session on zooid's own runtime, to share between the ID service and the
/// recipes (see [`crate::session`]).
pub fn open_session(connect: &str, options: &ConnectOptions) -> Result<Session> {
    let runtime = runtime()?;
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(crate::ZooidError::RuntimeThread);
    }
    runtime.block_on(Session::connect(connect, options))
}

/// A blocking ID generator service. `Send + Sync`: share one between threads.
///
/// Calls block the calling thread on zooid's own runtime and fail with
/// [`crate::ZooidError::RuntimeThread`] when made from inside an async runtime.
pub struct IdGeneratorService {
    inner: ManuallyDrop<AsyncService<AnyStore>>,
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
            inner: ManuallyDrop::new(inner),
        })
    }

    /// See [`AsyncService::create_category`].
    pub fn create_category(&self, category: &IdCategory, first: i64, last: i64) -> Result<()> {
        block_on(self.inner.create_category(category, first, last))?
    }

    /// See [`AsyncService::create_category_with_ceiling`].
    pub fn create_category_with_ceiling(
        &self,
        category: &IdCategory,
        first: i64,
        last: i64,
        ceiling: Option<i64>,
    ) -> Result<()> {
        block_on(
            self.inner
                .create_category_with_ceiling(category, first, last, ceiling),
        )?
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

    /// See [`AsyncService::pool_info`].
    pub fn pool_info(&self, category: &IdCategory) -> Result<PoolInfo> {
        block_on(self.inner.pool_info(category))?
    }

    /// See [`AsyncService::list_categories`].
    pub fn list_categories(&self, parent: &str) -> Result<Vec<String>> {
        block_on(self.inner.list_categories(parent))?
    }

    /// See [`AsyncService::read_node`].
    pub fn read_raw(&self, path: &str) -> Result<Vec<u8>> {
        block_on(self.inner.read_node(path))?
    }

    /// The async service underneath.
    pub fn as_async(&self) -> &AsyncService<AnyStore> {
        &self.inner
    }

    /// The service's ZooKeeper session, which the recipes share; `InvalidArgument` on the
    /// embedded stores (`mem:`, `file:`), which have no session.
    pub fn session(&self) -> Result<Session> {
        self.inner.session().cloned().ok_or_else(|| {
            crate::ZooidError::InvalidArgument(
                "this needs a ZooKeeper connect string; the embedded stores (mem:, file:) have no session".into(),
            )
        })
    }
}

impl Drop for IdGeneratorService {
    fn drop(&mut self) {
        // The ZooKeeper client spawns tasks when dropped, so drop it inside the runtime.
        // SAFETY: `inner` is never used again after this.
        let inner = unsafe { ManuallyDrop::take(&mut self.inner) };
        match runtime() {
            Ok(rt) => {
                let _guard = rt.enter();
                drop(inner);
            }
            Err(_) => drop(inner),
        }
    }
}
