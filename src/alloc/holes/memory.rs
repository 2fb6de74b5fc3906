//! What the hole-node strategy keeps of a category between its operations, in the category's
//! slot: the holes as last listed and this process's recent races for them. The slot holds it
//! without knowing its type (`Slot::memory`); [`of`] finds it, and starts afresh when the slot
//! forgot what it remembered since (an operation in doubt, a restore).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::young::{Previous, YoungHoles};
use crate::alloc::state::Slot;

/// The hole-node strategy's memory of one category.
#[derive(Default)]
pub(crate) struct HoleMemory {
    /// The holes as last listed (src/alloc/holes/listing.rs).
    pub listing: Option<Listing>,
    /// This process's recent races for the holes (src/alloc/holes/mod.rs).
    pub races: HoleRaces,
    /// The slot's `forgotten` count when the listing was kept.
    forgotten: u64,
}

/// The hole-node strategy's memory in `slot`, made when the slot holds none (or another
/// strategy's). The listing is dropped when the slot forgot what it remembered since it was
/// kept; the races are not (they tell how contended the holes are, not what they hold).
pub(crate) fn of(slot: &mut Slot) -> &mut HoleMemory {
    let forgotten = slot.forgotten;
    let memory = slot
        .memory
        .get_or_insert_with(|| Box::new(HoleMemory::default()));
    if !memory.is::<HoleMemory>() {
        *memory = Box::new(HoleMemory::default());
    }
    let Some(memory) = memory.downcast_mut::<HoleMemory>() else {
        unreachable!("the slot's memory was just made a HoleMemory")
    };
    if memory.forgotten != forgotten {
        memory.forgotten = forgotten;
        memory.listing = None;
    }
    memory
}

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
    pub trusted_until: Option<tokio::time::Instant>,
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
    pub looked_at: tokio::time::Instant,
    /// The holes it shows that another process pushed moments ago: left to their pusher for a
    /// while by takes of whole blocks (src/alloc/holes/young.rs).
    pub young: YoungHoles,
}

/// A check of the holes' parent sent ahead of a write (src/alloc/holes/listing.rs).
pub(crate) struct AheadCheck {
    /// When it was sent: an answer of `true` means the listing was exact then.
    pub sent: tokio::time::Instant,
    /// Whether the parent was at the child version and incarnation the listing expected.
    pub answer: tokio::task::JoinHandle<bool>,
}

impl Listing {
    /// Applies this process's own write to the listing: `deleted` holes gone, `created` new.
    pub(crate) fn apply_own(&mut self, deleted: &[String], created: &[crate::range::IdRange]) {
        // Each deleted hole found by its range (the holes are in ID order), not by comparing
        // every name listed with every name deleted.
        for name in deleted {
            let found = crate::format::hole_of(name).and_then(|range| {
                let key = (range.start(), range.end());
                let at = self
                    .holes
                    .partition_point(|(_, r)| (r.start(), r.end()) < key);
                self.holes
                    .get(at)
                    .is_some_and(|(n, _)| n == name)
                    .then_some(at)
            });
            match found {
                // Every entry of that name (side by side, if a listing ever showed one twice).
                Some(at) => {
                    while self.holes.get(at).is_some_and(|(n, _)| n == name) {
                        self.holes.remove(at);
                    }
                }
                None => self.holes.retain(|(n, _)| n != name),
            }
            self.own_since.remove(name);
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
    /// session generation), as [`YoungHoles::after`] says.
    pub(crate) fn follow(&mut self, previous: Option<&Listing>) {
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
    lost_at: Option<tokio::time::Instant>,
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
    pub(crate) fn lost(&mut self, random: u32, now: tokio::time::Instant) {
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
    pub(crate) fn leaves_holes(&mut self, now: tokio::time::Instant) -> bool {
        self.lapse(now);
        let leaves = self.leave_for > 0;
        self.leave_for = self.leave_for.saturating_sub(1);
        leaves
    }

    /// Whether a take at `now` chooses its holes at random (from one of the lowest groups).
    pub(crate) fn chooses_at_random(&mut self, now: tokio::time::Instant) -> bool {
        self.lapse(now);
        self.random_for > 0
    }

    /// Whether this process lost no race for the holes within [`HoleRaces::LAPSES_AFTER`]
    /// before `now`.
    pub(crate) fn quiet(&mut self, now: tokio::time::Instant) -> bool {
        self.lapse(now);
        self.lost_at.is_none()
    }

    /// Forgets the races once [`HoleRaces::LAPSES_AFTER`] passed since the last one lost.
    fn lapse(&mut self, now: tokio::time::Instant) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::hole_name;
    use crate::range::IdRange;

    fn listing(ranges: &[(i64, i64)]) -> Listing {
        let holes = ranges
            .iter()
            .map(|&(a, b)| {
                let range = IdRange::new(a, b).unwrap();
                (hole_name(&range), range)
            })
            .collect();
        Listing {
            holes,
            stale: Default::default(),
            generation: 1,
            cversion: 10,
            created: 5,
            trusted_until: None,
            ahead: None,
            busy: false,
            own_since: Default::default(),
            looked_at: tokio::time::Instant::now(),
            young: Default::default(),
        }
    }

    fn ranges(listing: &Listing) -> Vec<(i64, i64)> {
        listing
            .holes
            .iter()
            .map(|(_, r)| (r.start(), r.end()))
            .collect()
    }

    /// A take's own claim leaves the listing as the servers have it: the holes it deleted gone
    /// (found by range among overlapping ones), its remainder and a push's holes in ID order,
    /// counted in the child version, and known as its own.
    #[test]
    fn own_writes_apply_to_the_listing_in_id_order() {
        let mut l = listing(&[(1, 100), (50, 150), (201, 300), (401, 500)]);
        let claimed = [
            hole_name(&IdRange::new(50, 150).unwrap()),
            hole_name(&IdRange::new(201, 300).unwrap()),
        ];
        let rest = IdRange::new(251, 300).unwrap();
        l.apply_own(&claimed, &[rest]);
        assert_eq!(ranges(&l), vec![(1, 100), (251, 300), (401, 500)]);
        assert_eq!(l.cversion, 13);
        assert!(l.all_own_since(&[hole_name(&rest)]));
        // A hole it created and then took is no longer its own since.
        l.apply_own(&[hole_name(&rest)], &[IdRange::new(301, 350).unwrap()]);
        assert_eq!(ranges(&l), vec![(1, 100), (301, 350), (401, 500)]);
        assert!(!l.all_own_since(&[hole_name(&rest)]));
        // A name that is not listed (a stale choice) changes nothing but the count.
        l.apply_own(&["h-not-a-hole".to_string()], &[]);
        assert_eq!(ranges(&l), vec![(1, 100), (301, 350), (401, 500)]);
    }

    /// After a lost race a process leaves the holes for fewer than `2^k` takes (k races lost
    /// in a row, at most `MAX_DOUBLINGS`), chooses at random for `RANDOM_FOR` claims, a won
    /// claim starts the doubling over, and all of it lapses `LAPSES_AFTER` the last race lost.
    #[test]
    fn lost_races_leave_the_holes_for_a_doubling_random_number_of_takes() {
        let now = tokio::time::Instant::now();
        let leaves = |races: &mut HoleRaces| {
            let mut n = 0;
            while races.leaves_holes(now) {
                n += 1;
            }
            n
        };
        let mut races = HoleRaces::default();
        assert!(!races.leaves_holes(now) && !races.chooses_at_random(now));
        assert!(races.quiet(now), "no race lost yet");
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
        assert!(!races.quiet(now));
        let later = now + HoleRaces::LAPSES_AFTER;
        assert!(races.quiet(later), "quiet once the races lapsed");
        assert!(!races.leaves_holes(later) && !races.chooses_at_random(later));
        races.lost(u32::MAX, later);
        assert_eq!(races.leave_for, 1, "the doubling starts over after a lapse");
    }
}
