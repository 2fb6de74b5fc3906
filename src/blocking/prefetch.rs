//! The blocking prefetching ID source (see [`crate::recipes::prefetch`]).

use crate::error::Result;
use crate::idset::IdCategory;
use crate::range::IdRange;
use crate::recipes::prefetch::{IdSource as AsyncSource, SourceOptions, SourceStats};
use crate::runtime::{block_on, runtime, DropInRuntime};
use crate::store::AnyStore;

use super::IdGeneratorService;

/// A prefetching source of IDs of one category, for threads that are not async. `Send + Sync`:
/// share one between threads.
///
/// [`IdSource::next`] takes an ID from the local batch without blocking; it blocks on ZooKeeper
/// only when the current and the prefetched batch are both used up. Refills run on zooid's
/// runtime. The source keeps the service's session open until it is dropped.
pub struct IdSource {
    inner: DropInRuntime<AsyncSource<AnyStore>>,
}

impl IdSource {
    /// Opens a source over `category` of `service`, taking the first batch now.
    pub fn open(
        service: &IdGeneratorService,
        category: &IdCategory,
        options: SourceOptions,
    ) -> Result<Self> {
        let handle = runtime()?.handle().clone();
        let inner = block_on(AsyncSource::open_on(
            handle,
            service.shared(),
            category.clone(),
            options,
        ))??;
        Ok(Self {
            inner: DropInRuntime::new(inner),
        })
    }

    /// The next ID: from the local batch when one is held (no blocking, no I/O), otherwise
    /// blocking until a refill arrives. See [`AsyncSource::next`] for the errors.
    #[inline]
    pub fn next(&self) -> Result<i64> {
        match self.inner.try_next()? {
            Some(id) => Ok(id),
            None => block_on(self.inner.next())?,
        }
    }

    /// See [`AsyncSource::try_next`].
    #[inline]
    pub fn try_next(&self) -> Result<Option<i64>> {
        self.inner.try_next()
    }

    /// Up to `max` consecutive IDs as one range, blocking only when none is held locally.
    pub fn next_run(&self, max: u64) -> Result<IdRange> {
        match self.inner.try_next_run(max)? {
            Some(run) => Ok(run),
            None => block_on(self.inner.next_run(max))?,
        }
    }

    /// See [`AsyncSource::close`].
    pub fn close(&self) -> Result<()> {
        block_on(self.inner.close())?
    }

    /// See [`AsyncSource::close_returning`].
    pub fn close_returning(&self, unused: &[IdRange]) -> Result<()> {
        block_on(self.inner.close_returning(unused))?
    }

    /// See [`AsyncSource::stats`].
    pub fn stats(&self) -> SourceStats {
        self.inner.stats()
    }

    /// The category the IDs come from.
    pub fn category(&self) -> &IdCategory {
        self.inner.category()
    }

    /// The async source underneath.
    pub fn as_async(&self) -> &AsyncSource<AnyStore> {
        &self.inner
    }
}
