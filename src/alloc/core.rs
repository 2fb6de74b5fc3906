//! What every allocation strategy works with: the store, the ZooKeeper session of the block
//! layout, the options, what this process knows of each category, and the counters. The facade
//! (src/alloc/service.rs) owns one [`Core`] and asks it; the modules below implement it.

use std::ops::Deref;

use super::options::ServiceOptions;
use super::state::Categories;
use crate::error::{Result, ZooidError};
use crate::range::IdRange;
use crate::retry::Budget;
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

impl<S: Store> Core<S> {
    /// The core with its ZooKeeper session, for the hole-node layout (format 4) and the admin
    /// operations on it: the one place that refuses them on an embedded store.
    pub(super) fn on_zookeeper(&self) -> Result<OnZooKeeper<'_, S>> {
        match self.zk.as_ref() {
            Some(zk) => Ok(OnZooKeeper {
                core: self,
                zk,
                started: None,
            }),
            None => Err(needs_zookeeper()),
        }
    }
}

/// The error for block allocation on an embedded store.
pub(crate) fn needs_zookeeper() -> ZooidError {
    ZooidError::InvalidArgument(
        "block allocation (pool format 4) needs a ZooKeeper store, not mem: or file:".into(),
    )
}

/// A [`Core`] whose store is ZooKeeper's, with its session: what the hole-node strategy
/// (src/alloc/holes/, src/alloc/blocks/) works on. Made only by [`Core::on_zookeeper`], so the
/// strategy's requests always have a session to go to.
pub(crate) struct OnZooKeeper<'a, S: Store> {
    core: &'a Core<S>,
    /// The session every request of the strategy is sent on.
    pub(super) zk: &'a Zk,
    /// When the take or push these requests serve started ([`Self::serving`]): every phase's
    /// [`budget`](Self::budget) counts its deadline from then, so no attempt starts past the
    /// operation's deadline, however many phases it has (a read of the pool, a listing, a
    /// claim, a push). `None` (the admin operations): each phase has a deadline of its own.
    started: Option<tokio::time::Instant>,
}

impl<'a, S: Store> OnZooKeeper<'a, S> {
    /// These requests serve the take or push whose budget is `operation`.
    pub(crate) fn serving(self, operation: &Budget) -> Self {
        Self {
            started: Some(operation.started()),
            ..self
        }
    }

    /// The same session for work of its own, with a deadline from now: giving back IDs a take
    /// claimed and will not hand out, which would be leaked if it were cut short.
    pub(crate) fn afresh(&self) -> OnZooKeeper<'a, S> {
        OnZooKeeper {
            core: self.core,
            zk: self.zk,
            started: Some(tokio::time::Instant::now()),
        }
    }

    /// A budget with the deadline of the operation served (attempts of its own).
    pub(crate) fn budget(&self) -> Budget {
        match self.started {
            Some(started) => Budget::since(self.options.retry, started),
            None => Budget::start(self.options.retry),
        }
    }

    /// The [`budget`](Self::budget) for the next phase of the operation served on category
    /// `path`, which starts no phase past its deadline: `Timeout` then, before any request.
    pub(crate) fn next_phase(&self, path: &str) -> Result<Budget> {
        let budget = self.budget();
        if budget.expired() {
            return Err(ZooidError::Timeout {
                what: path.to_string(),
                after: budget.elapsed(),
            });
        }
        Ok(budget)
    }
}

impl<S: Store> Deref for OnZooKeeper<'_, S> {
    type Target = Core<S>;

    fn deref(&self) -> &Core<S> {
        self.core
    }
}

/// How a strategy's take ended.
pub(crate) enum Taken {
    /// These IDs: all the take asked for, or fewer where the category has no more to give.
    Ids(Vec<IdRange>),
    /// The pool was found in another layout (recreated or migrated meanwhile) after these IDs
    /// were taken: the dispatch point (src/alloc/dispatch.rs) serves the rest with the strategy
    /// of the pool as it is now.
    Moved(Vec<IdRange>),
}

/// How many IDs `ranges` hold.
pub(super) fn count_of(ranges: &[IdRange]) -> u64 {
    ranges.iter().map(IdRange::len).sum()
}

/// What a take that got `taken` and then failed with `err` (not `OutcomeUnknown`: nothing of it
/// is in doubt) hands out: the IDs it got, served short, rather than giving them back under the
/// conditions that stopped it (its deadline passed, ZooKeeper unreachable, fewer remain). With
/// none, the error. One rule for every way a take ends short (of format 4, or across a change
/// of layout).
pub(crate) fn served_short(
    path: &str,
    taken: Vec<IdRange>,
    err: ZooidError,
) -> Result<Vec<IdRange>> {
    debug_assert!(
        !matches!(err, ZooidError::OutcomeUnknown { .. }),
        "served short on an outcome unknown: {err}"
    );
    if taken.is_empty() {
        return Err(err);
    }
    if !matches!(
        err,
        ZooidError::Exhausted { .. } | ZooidError::ReservationExhausted { .. }
    ) {
        tracing::warn!(category = path, %err, served = count_of(&taken), "the take is served short");
    }
    Ok(taken)
}
