//! What this process knows of each category: the pool as last read or written, how contended
//! the category looks, the newest state seen (to refuse one from the past), the next block, its
//! last receipt, and whatever the category's strategy keeps (held for it, not known here).

use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32};
use std::sync::{Arc, Mutex};

use crate::error::{Result, ZooidError};
use crate::format::{Blocks, Pool};
use crate::pace::Pace;
use crate::stats::CategoryStats;
use crate::store::ReadOn;

/// How a category hands out fresh IDs, as its pool node says: decided once per read, and every
/// operation follows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Strategy {
    /// One node: the free list is all there is (formats 1 and 2; src/alloc/single.rs).
    Single,
    /// Block allocation (format 4; src/alloc/blocks/, src/alloc/holes/): fresh IDs come in
    /// blocks claimed by sequential creates, free IDs are hole nodes.
    Blocks(Blocks),
}

impl Strategy {
    /// The strategy a pool node asks for.
    pub(crate) fn of(pool: &Pool) -> Self {
        match pool.blocks() {
            Some(blocks) => Strategy::Blocks(blocks),
            None => Strategy::Single,
        }
    }
}

/// The last pool state this process read or wrote for a category.
pub(crate) struct Cached {
    /// The pool node's data version.
    pub version: i32,
    /// The pool node's incarnation (its `czxid`), when known: a node created again (a wipe and
    /// restore) at the same version is another node.
    pub created: Option<i64>,
    /// The session generation and connection this state was read on (or, for a state a write
    /// left, the read that write was planned on): a state from an earlier session (which may
    /// have ended with a wipe of ZooKeeper) is never planned on, and a write planned on it is
    /// sent only on them ([`crate::store::Store::set`]).
    pub read_on: ReadOn,
    /// The pool.
    pub pool: Pool,
    /// Read from the store just now, rather than remembered from an earlier operation.
    pub fresh: bool,
    /// How the pool hands out fresh IDs.
    pub strategy: Strategy,
    /// When it was read or written: a state older than [`Cached::REMEMBER_FOR`] is read again.
    pub at: tokio::time::Instant,
}

impl Cached {
    /// How long a state is planned on without reading the pool again. A single-node pool moves
    /// to a fresh node, whose data versions start again at 0, every
    /// `ServiceOptions::move_at_version` writes: a compare-and-set planned on a state of the old
    /// node would apply to the new one once that reaches the same data version. Within 60 s
    /// that needs more than 35 million writes per second at the default threshold; a lowered
    /// threshold (a test hook) plans on no remembered state.
    pub(crate) const REMEMBER_FOR: std::time::Duration = std::time::Duration::from_secs(60);

    /// The state of `pool` at `version` of incarnation `created`, read on `read_on`, its
    /// strategy decided.
    pub(crate) fn new(
        version: i32,
        created: Option<i64>,
        read_on: ReadOn,
        pool: Pool,
        fresh: bool,
    ) -> Self {
        Self {
            version,
            created,
            read_on,
            strategy: Strategy::of(&pool),
            pool,
            fresh,
            at: tokio::time::Instant::now(),
        }
    }
}

/// A category's state in one process, behind the lock that serializes its operations.
#[derive(Default)]
pub(crate) struct Slot {
    /// The pool as last read or written.
    pub cached: Option<Cached>,
    /// How contended the category looks from here (src/pace.rs).
    pub pace: Pace,
    /// Set when the pool node changed since it was cached (watched for pools in block
    /// allocation, whose takes otherwise never read it): the next operation reads it again.
    pub changed: Arc<AtomicBool>,
    /// The pool node version this process last read or wrote (the watch ignores its own writes).
    pub known: Arc<AtomicI32>,
    /// Whether a watch for `changed` is in place.
    pub armed: Arc<AtomicBool>,
    /// What the strategy serving the category keeps between its operations, in a type of its
    /// own that the slot does not know (the hole-node strategy's listing and races:
    /// src/alloc/holes/memory.rs).
    pub memory: Option<Box<dyn Any + Send>>,
    /// How many times the slot forgot what it remembered: a strategy's memory made before the
    /// last time is forgotten too.
    pub forgotten: u64,
    /// The data version at which moving this single-node pool to a fresh node was last refused
    /// (a child under it, or no delete and create on its parent): until
    /// [`MOVE_RETRY_AFTER`] writes later, or the last data version, it is written in place.
    pub move_refused_at: Option<i32>,
    /// The connection ([`crate::zk::SessionStatus::connection`]) on which what the slot
    /// remembers was read or written: on a later one, it is forgotten.
    pub connection: u64,
    /// Set while a take runs under this slot and left set when it ended in doubt (an unknown
    /// outcome, or its future dropped mid-write): the next hold forgets what the slot
    /// remembers (the pool, the holes' listing) and reads again.
    pub in_doubt: bool,
    /// The pool the running take got its first IDs from: IDs it gives back go only to that
    /// pool, never to one restored or created since ([`PoolIdentity`]).
    pub taken_from: Option<PoolIdentity>,
}

/// Which pool a state is of: its epoch (a restore or a repair moves it on) and, when known, the
/// pool node's incarnation (`czxid`; a category deleted and created again is another node).
/// IDs claimed from one pool are not free in another: in a pool restored since, fresh blocks
/// are numbered again from its ceiling, and IDs above it are handed out as fresh.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PoolIdentity {
    pub epoch: u64,
    pub created: Option<i64>,
}

impl PoolIdentity {
    /// The pool `state` is of.
    pub(crate) fn of(state: &Cached) -> Self {
        Self {
            epoch: state.pool.epoch(),
            created: state.created,
        }
    }

    /// Whether `other` is the same pool as far as both are known.
    pub(crate) fn same_pool(&self, other: &PoolIdentity) -> bool {
        self.epoch == other.epoch
            && match (self.created, other.created) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }
}

impl Slot {
    /// Forgets what was remembered if the last operation under this slot ended in doubt.
    pub(crate) fn settle_doubt(&mut self) {
        if std::mem::take(&mut self.in_doubt) {
            self.forget();
        }
    }

    /// Forgets the pool and what the strategy remembers of it (the holes listed): the next
    /// operation reads them again.
    pub(crate) fn forget(&mut self) {
        self.cached = None;
        self.forgotten += 1;
    }
}

/// How many writes after a refused move of a pool to a fresh node the move is tried again.
pub(crate) const MOVE_RETRY_AFTER: i32 = 1_024;

/// A category's slot, held: the operations of one category in this process run one at a time.
pub(crate) type Held = tokio::sync::OwnedMutexGuard<Slot>;

/// What this process knows of every category it touched.
#[derive(Default)]
pub(crate) struct Categories {
    slots: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Slot>>>>,
    /// The newest (epoch, pool version) this process saw of each pool: a read older than that
    /// means ZooKeeper went back in time, and is refused. The pool version
    /// ([`Pool::version_at`](crate::format::Pool::version_at)) goes on across moves to fresh nodes.
    seen: Mutex<HashMap<String, (u64, i64)>>,
    /// For pools in block allocation: (generation, a block number not claimed yet as far as this
    /// process knows), to see the ceiling coming without reading.
    next_block: Mutex<HashMap<String, (u64, i64, i64)>>,
    /// For pools in block allocation: this process's last receipt per category, deleted by its
    /// next write (src/alloc/holes/requests.rs).
    markers: Mutex<HashMap<String, Receipt>>,
}

/// Locks one of the maps; they are only ever inserted into or updated entry by entry, so a
/// poisoned one is still consistent.
fn locked<T>(map: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    map.lock().unwrap_or_else(|p| p.into_inner())
}

impl Categories {
    /// The slot of category `path`.
    pub(crate) fn slot(&self, path: &str) -> Arc<tokio::sync::Mutex<Slot>> {
        Arc::clone(locked(&self.slots).entry(path.to_string()).or_default())
    }

    /// Whether (`epoch`, `version`) is older than what this process saw of the pool.
    pub(crate) fn is_older(&self, path: &str, epoch: u64, version: i64) -> bool {
        locked(&self.seen)
            .get(path)
            .is_some_and(|&newest| (epoch, version) < newest)
    }

    /// Forgets what this process saw of a pool (after repairing it).
    pub(crate) fn forget_seen(&self, path: &str) {
        locked(&self.seen).remove(path);
    }

    /// Records that this process saw the pool at (`epoch`, `version`), refusing a state older
    /// than one seen before (ZooKeeper restored from an older snapshot or lost writes). Callers
    /// `sync` first, so that a lagging server is not mistaken for a rollback.
    pub(crate) fn observe(&self, path: &str, epoch: u64, version: i64) -> Result<()> {
        let mut seen = locked(&self.seen);
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

    /// Records that this process's own write produced (`epoch`, `version`). Never fails: the
    /// write applied, so what it moved is the caller's; a newer state seen already stays the
    /// newest (and is logged, as it should not happen: every observation runs under the
    /// category's slot).
    pub(crate) fn note_written(&self, path: &str, epoch: u64, version: i64) {
        let mut seen = locked(&self.seen);
        let entry = seen.entry(path.to_string()).or_insert((epoch, version));
        if (epoch, version) < *entry {
            tracing::warn!(category = path, epoch, version, newest = ?*entry, "own write older than a state seen before; keeping the newest");
        } else {
            *entry = (epoch, version);
        }
    }

    /// A block number of `layout`'s generation not claimed yet as far as this process knows (0
    /// when it knows nothing of that generation). Keyed by the generation and its base: a pool
    /// restored or repaired may number a generation again from another base.
    pub(crate) fn known_next_block(&self, path: &str, layout: &Blocks) -> i64 {
        match locked(&self.next_block).get(path) {
            Some(&(g, base, next)) if g == layout.generation && base == layout.base => next,
            _ => 0,
        }
    }

    /// Records that blocks of `layout`'s generation below `next` are claimed.
    pub(crate) fn note_next_block(&self, path: &str, layout: &Blocks, next: i64) {
        let key = (layout.generation, layout.base);
        let mut known = locked(&self.next_block);
        let entry = known
            .entry(path.to_string())
            .or_insert((key.0, key.1, next));
        if (entry.0, entry.1) != key || entry.2 < next {
            *entry = (key.0, key.1, next);
        }
    }

    /// This process's receipt under pool `path`, forgotten here while a write uses it.
    pub(crate) fn take_marker(&self, path: &str) -> Option<Receipt> {
        locked(&self.markers).remove(path)
    }

    /// Records this process's receipt under pool `path`.
    pub(crate) fn put_marker(&self, path: &str, receipt: Receipt) {
        locked(&self.markers).insert(path.to_string(), receipt);
    }
}

/// A taker's receipt under a format-4 pool (`zooid-returned/m-NAME`, docs/FORMAT.md): an
/// ephemeral node its first take of holes on a session creates and every later one on that
/// session sets to its own token, in the same `multi`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Receipt {
    /// The node's name (`m-NAME`).
    pub name: String,
    /// The session generation that created it (and owns it: it goes with that session).
    pub generation: u64,
}

/// The figures of a pool as read or written, for the statistics: its node is `bytes` long at
/// `version`; a push may grow it to `limit`.
pub(crate) fn figures(
    path: &str,
    pool: &Pool,
    bytes: usize,
    version: i32,
    limit: usize,
) -> CategoryStats {
    CategoryStats {
        category: path.to_string(),
        free_ids: pool.free().count(),
        ranges: pool.free().range_count() as u64,
        node_bytes: bytes as u64,
        node_bytes_limit: limit as u64,
        version,
        ceiling_headroom: pool.ceiling().map(|_| pool.available()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::range::IdRange;

    fn r(start: i64, end: i64) -> IdRange {
        IdRange::new(start, end).unwrap()
    }

    #[test]
    fn an_own_write_is_noted_without_failing() {
        let categories = Categories::default();
        categories.observe("/c", 1, 10).unwrap();
        // Older than seen (cannot happen under the slot): noted, not an error; the newest stays.
        categories.note_written("/c", 0, 11);
        assert!(categories.is_older("/c", 1, 9));
        assert!(categories.observe("/c", 0, 12).is_err());
        categories.note_written("/c", 1, 11);
        assert!(categories.is_older("/c", 1, 10));
    }

    #[test]
    fn figures_follow_the_pool() {
        let mut pool = Pool::new(r(1, 100));
        pool.free_mut().take_lowest(10);
        pool.free_mut().insert_all(&[r(3, 4)]).unwrap();
        let f = figures("/c", &pool, 60, 2, 1000);
        assert_eq!(
            (
                f.free_ids,
                f.ranges,
                f.node_bytes,
                f.version,
                f.ceiling_headroom
            ),
            (92, 2, 60, 2, None)
        );
        pool.set_ceiling(Some(50));
        assert_eq!(figures("/c", &pool, 60, 2, 1000).ceiling_headroom, Some(42));
    }
}
