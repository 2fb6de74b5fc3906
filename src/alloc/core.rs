//! What every allocation strategy works with: the store, the ZooKeeper session of the block
//! layout, the options, what this process knows of each category, and the counters. The facade
//! (src/alloc/service.rs) owns one [`Core`] and asks it; the modules below implement it.

use super::options::ServiceOptions;
use super::state::Categories;
use crate::range::IdRange;
use crate::stats::Recorder;
use crate::store::{AnyStore, Store};
use crate::zk::Zk;

/// The allocator beneath the facade.
pub(crate) struct Core<S: Store = AnyStore> {
    pub(super) store: S,
    /// The ZooKeeper session, on a ZooKeeper store: the block layout's requests go through it
    /// (`None` on the embedded stores, which hold single nodes only).
    pub(super) zk: Option<Zk>,
    pub(super) options: ServiceOptions,
    /// What this process knows of each category (src/alloc/state.rs).
    pub(super) categories: Categories,
    pub(super) stats: Recorder,
}

impl<S: Store> Core<S> {
    /// An allocator over `store`, on ZooKeeper session `zk` when the store is ZooKeeper's.
    pub(super) fn new(store: S, zk: Option<Zk>, options: ServiceOptions) -> Self {
        Self {
            store,
            zk,
            options,
            categories: Categories::default(),
            stats: Recorder::default(),
        }
    }
}

/// How many IDs `ranges` hold.
pub(super) fn count_of(ranges: &[IdRange]) -> u64 {
    ranges.iter().map(IdRange::len).sum()
}
