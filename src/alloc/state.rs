//! What this process knows of each category: the pool as last read or written, the holes of a
//! pool in format 4 as last listed, how contended the category looks, the newest state seen (to
//! refuse one from the past), the next block, and its last receipt.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32};
use std::sync::{Arc, Mutex};

use crate::error::{Result, ZooidError};
use crate::format::{Blocks, Pool};
use crate::pace::Pace;
use crate::stats::CategoryStats;

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
    /// The session generation this state was read or written on: a state from an earlier
    /// session (which may have ended with a wipe of ZooKeeper) is never planned on.
    pub session: u64,
    /// The pool.
    pub pool: Pool,
    /// Read from the store just now, rather than remembered from an earlier operation.
    pub fresh: bool,
    /// How the pool hands out fresh IDs.
    pub strategy: Strategy,
    /// When it was read or written: a state older than [`Cached::REMEMBER_FOR`] is read again.
    pub at: std::time::Instant,
}

impl Cached {
    /// How long a state is planned on without reading the pool again. A single-node pool moves
    /// to a fresh node, whose data versions start again at 0, every
    /// `ServiceOptions::move_at_version` writes: a compare-and-set planned on a state of the old
    /// node would apply to the new one once that reaches the same data version. Within 60 s
    /// that needs more than 35 million writes per second at the default threshold; a lowered
    /// threshold (a test hook) plans on no remembered state.
    pub(crate) const REMEMBER_FOR: std::time::Duration = std::time::Duration::from_secs(60);

    /// The state of `pool` at `version` of incarnation `created`, known on session generation
    /// `session`, its strategy decided.
    pub(crate) fn new(
        version: i32,
        created: Option<i64>,
        session: u64,
        pool: Pool,
        fresh: bool,
    ) -> Self {
        Self {
            version,
            created,
            session,
            strategy: Strategy::of(&pool),
            pool,
            fresh,
            at: std::time::Instant::now(),
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
    /// The holes of a format-4 pool as last listed (src/alloc/holes/listing.rs).
    pub holes: Option<Listing>,
    /// This process's recent races for holes (src/alloc/holes/mod.rs).
    pub hole_races: HoleRaces,
    /// The data version at which moving this single-node pool to a fresh node was last refused
    /// (a child under it, or no delete and create on its parent): until
    /// [`MOVE_RETRY_AFTER`] writes later, or the last data version, it is written in place.
    pub move_refused_at: Option<i32>,
    /// Set while a take runs under this slot and left set when it ended in doubt (an unknown
    /// outcome, or its future dropped mid-write): the next hold forgets what the slot
    /// remembers (the pool, the holes' listing) and reads again.
    pub in_doubt: bool,
}

impl Slot {
    /// Forgets what was remembered if the last operation under this slot ended in doubt.
    pub(crate) fn settle_doubt(&mut self) {
        if std::mem::take(&mut self.in_doubt) {
            self.cached = None;
            self.holes = None;
        }
    }
}

/// How many writes after a refused move of a pool to a fresh node the move is tried again.
pub(crate) const MOVE_RETRY_AFTER: i32 = 1_024;

/// The holes of a pool in format 4 as one listing found them, and whether they may have changed
/// since (src/alloc/holes/listing.rs).
pub(crate) struct Listing {
    /// The holes, by node name and range, in ID order.
    pub holes: Vec<(String, crate::range::IdRange)>,
    /// Set by the listing's child watch when a hole was created or deleted, or the session ended.
    pub stale: Arc<AtomicBool>,
    /// The session generation the listing was made on (a watch does not outlive it).
    pub generation: u64,
    /// The child version (`cversion`) of the holes' parent that `holes` show: the listing's, plus
    /// one per hole this process's own writes created or deleted since. Each create or delete of
    /// a child adds one, so an equal `cversion` read later means nobody else changed the holes.
    pub cversion: i32,
    /// The holes' parent's incarnation (`czxid`): a parent deleted and created again (a category
    /// recreated, a migration) counts its child version from 0 again.
    pub created: i64,
    /// Until when the listing may be used while its check is still on its way: set when a look
    /// found that nobody else changed the holes (`refresh` in src/alloc/holes/listing.rs).
    pub trusted_until: Option<std::time::Instant>,
    /// A check of the holes' parent sent ahead of this process's next write; it is answered by
    /// the time the write is (a session's requests are answered in order).
    pub ahead: Option<AheadCheck>,
    /// Whether others changed the holes when this listing was made (the look before found their
    /// changes): the next look lists them again without checking first.
    pub busy: bool,
    /// The names of the holes this process's own writes created since the listing was made:
    /// known as of those writes, later than the listing.
    pub own_since: std::collections::HashSet<String>,
    /// When this process last found the listing current, or made it.
    pub looked_at: std::time::Instant,
    /// The holes it shows that another process pushed moments ago: left to their pusher for a
    /// while by takes of whole blocks (src/alloc/holes/young.rs).
    pub young: crate::alloc::holes::young::YoungHoles,
}

/// A check of the holes' parent sent ahead of a write (src/alloc/holes/listing.rs).
pub(crate) struct AheadCheck {
    /// When it was sent: an answer of `true` means the listing was exact then.
    pub sent: std::time::Instant,
    /// Whether the parent was at the child version and incarnation the listing expected.
    pub answer: tokio::task::JoinHandle<bool>,
}

impl Listing {
    /// Applies this process's own write to the listing: `deleted` holes gone, `created` new.
    pub(crate) fn apply_own(&mut self, deleted: &[String], created: &[crate::range::IdRange]) {
        if !deleted.is_empty() {
            self.holes.retain(|(name, _)| !deleted.contains(name));
            self.own_since.retain(|name| !deleted.contains(name));
        }
        // Kept in ID order (the listing sorts them): each new hole where it belongs.
        for range in created {
            let key = (range.start(), range.end());
            let at = self
                .holes
                .partition_point(|(_, r)| (r.start(), r.end()) < key);
            let name = crate::format::hole_name(range);
            self.young.forget(range);
            self.own_since.insert(name.clone());
            self.holes.insert(at, (name, *range));
        }
        let changes = i32::try_from(deleted.len() + created.len()).unwrap_or(i32::MAX);
        // ZooKeeper's child version never wraps: it stops at 2^31 - 1, where no listing is
        // trusted on it any more (listing::CVERSION_TRUSTED_BELOW).
        self.cversion = self.cversion.saturating_add(changes);
    }

    /// Whether every one of `nodes` is a hole this process's own writes created since the
    /// listing was made.
    pub(crate) fn all_own_since(&self, nodes: &[String]) -> bool {
        nodes.iter().all(|name| self.own_since.contains(name))
    }

    /// Takes the holes' ages from `previous`, the listing this one replaces (on the same
    /// session generation), as [`YoungHoles::after`](crate::alloc::holes::young::YoungHoles::after) says.
    pub(crate) fn follow(&mut self, previous: Option<&Listing>) {
        use crate::alloc::holes::young::{Previous, YoungHoles};
        let previous = previous.map(|old| Previous {
            holes: &old.holes,
            young: &old.young,
            looked_at: old.looked_at,
        });
        self.young = YoungHoles::after(previous, &self.holes, self.looked_at);
    }

    /// Marks the listing out of date (a claim on it found a hole gone): the next look lists
    /// the holes again, at once and without a watch, as for a busy process.
    pub(crate) fn outdated(&mut self) {
        self.stale.store(true, std::sync::atomic::Ordering::Release);
        self.busy = true;
        self.trusted_until = None;
        self.ahead = None;
    }

    /// Whether the listing still shows the holes as they are on session `generation`.
    pub(crate) fn is_current(&self, generation: u64) -> bool {
        !self.stale.load(std::sync::atomic::Ordering::Acquire) && generation == self.generation
    }
}

/// A process's recent races for the holes of a format-4 pool: after it lost one, it chooses its
/// holes at random for a while, and leaves the holes to other takes for a random number of its
/// next takes, doubling that range with each race lost in a row (binary exponential backoff, as
/// Ethernet's): contending takes then try the holes about once per round between them instead
/// of all at once, and the holes are still taken as soon as they cover a take. All of it lapses
/// [`HoleRaces::LAPSES_AFTER`] after the last race lost: a process left alone is lowest first
/// again.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HoleRaces {
    /// Claims of holes left during which this process chooses them at random.
    random_for: u8,
    /// Races lost in a row (up to [`HoleRaces::MAX_DOUBLINGS`]).
    lost_in_a_row: u8,
    /// Takes left that leave the holes to others (claim fresh blocks).
    leave_for: u32,
    /// When the last race was lost.
    lost_at: Option<std::time::Instant>,
    /// Whether [`HoleRaces::start`] ran.
    started: bool,
}

impl HoleRaces {
    /// How many claims of holes after a lost race a process keeps choosing them at random.
    pub const RANDOM_FOR: u8 = 8;
    /// How many times the range of takes that leave the holes to others doubles, at most: a
    /// process leaves them for at most `2^MAX_DOUBLINGS - 1` takes in a row.
    pub const MAX_DOUBLINGS: u8 = 5;
    /// How long after the last race lost the backoff and the random choice last, at most.
    pub const LAPSES_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

    /// Another take won a hole this process tried to claim, at `now`; `random` draws how many
    /// of its next takes leave the holes to others.
    pub(crate) fn lost(&mut self, random: u32, now: std::time::Instant) {
        self.lapse(now);
        self.random_for = Self::RANDOM_FOR;
        self.lost_in_a_row = (self.lost_in_a_row + 1).min(Self::MAX_DOUBLINGS);
        self.leave_for = random % (1u32 << self.lost_in_a_row);
        self.lost_at = Some(now);
    }

    /// This process claimed the holes it chose.
    pub(crate) fn won(&mut self) {
        self.random_for = self.random_for.saturating_sub(1);
        self.lost_in_a_row = 0;
    }

    /// Whether a take at `now` leaves the holes to others (counted down).
    pub(crate) fn leaves_holes(&mut self, now: std::time::Instant) -> bool {
        self.lapse(now);
        let leaves = self.leave_for > 0;
        self.leave_for = self.leave_for.saturating_sub(1);
        leaves
    }

    /// Whether a take at `now` chooses its holes at random (from one of the lowest groups).
    pub(crate) fn chooses_at_random(&mut self, now: std::time::Instant) -> bool {
        self.lapse(now);
        self.random_for > 0
    }

    /// Forgets the races once [`HoleRaces::LAPSES_AFTER`] passed since the last one lost.
    fn lapse(&mut self, now: std::time::Instant) {
        if self
            .lost_at
            .is_some_and(|at| now.saturating_duration_since(at) >= Self::LAPSES_AFTER)
        {
            *self = Self {
                started: self.started,
                ..Self::default()
            };
        }
    }

    /// Before a category's first take in this process: its first `takes` leave the holes to
    /// others (`ServiceOptions::hole_backoff_from_start`, for tests; 0 otherwise).
    pub(crate) fn start(&mut self, takes: u32) {
        if !self.started {
            self.started = true;
            self.leave_for = takes;
        }
    }
}

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
    markers: Mutex<HashMap<String, String>>,
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

    /// This process's last receipt under pool `path`, forgotten here.
    pub(crate) fn take_marker(&self, path: &str) -> Option<String> {
        locked(&self.markers).remove(path)
    }

    /// Records this process's last receipt under pool `path`.
    pub(crate) fn put_marker(&self, path: &str, marker: String) {
        locked(&self.markers).insert(path.to_string(), marker);
    }
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

    /// After a lost race a process leaves the holes for fewer than `2^k` takes (k races lost
    /// in a row, at most `MAX_DOUBLINGS`), chooses at random for `RANDOM_FOR` claims, a won
    /// claim starts the doubling over, and all of it lapses `LAPSES_AFTER` the last race lost.
    #[test]
    fn lost_races_leave_the_holes_for_a_doubling_random_number_of_takes() {
        let now = std::time::Instant::now();
        let leaves = |races: &mut HoleRaces| {
            let mut n = 0;
            while races.leaves_holes(now) {
                n += 1;
            }
            n
        };
        let mut races = HoleRaces::default();
        assert!(!races.leaves_holes(now) && !races.chooses_at_random(now));
        for k in 1..=7u32 {
            races.lost(u32::MAX, now);
            let cap = (1u32 << k.min(u32::from(HoleRaces::MAX_DOUBLINGS))) - 1;
            assert_eq!(leaves(&mut races), cap, "after {k} races lost in a row");
            assert!(races.chooses_at_random(now));
        }
        races.lost(0, now);
        assert_eq!(leaves(&mut races), 0, "a draw of 0 leaves none");
        races.won();
        races.lost(u32::MAX, now);
        assert_eq!(
            leaves(&mut races),
            1,
            "a won claim starts the doubling over"
        );
        for _ in 0..HoleRaces::RANDOM_FOR {
            assert!(races.chooses_at_random(now));
            races.won();
        }
        assert!(!races.chooses_at_random(now));
        // Lapsed: a process left alone takes the lowest holes again at once.
        for _ in 0..5 {
            races.lost(u32::MAX, now);
        }
        let later = now + HoleRaces::LAPSES_AFTER;
        assert!(!races.leaves_holes(later) && !races.chooses_at_random(later));
        races.lost(u32::MAX, later);
        assert_eq!(races.leave_for, 1, "the doubling starts over after a lapse");
    }
}
