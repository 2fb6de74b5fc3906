//! Holes left to the process that pushed them (pure).
//!
//! Under the seeds' workload every process pushes back what it did not use and takes again. Were
//! each hole claimed by whichever take listed it first, the processes would race for each
//! other's holes, and every race lost is a failed write. Instead, a take of whole blocks leaves
//! a hole another process pushed moments ago to its pusher, which takes it back with its own
//! next takes: it claims, lowest first, the holes its own process pushed and those it has seen
//! listed for [`LEFT_TO_PUSHER_FOR`]. A hole its pusher does not take back within that time (the
//! pusher ended, or takes parts of blocks) is anybody's. Where fewer fresh IDs remain than a
//! take wants (a ceiling, the end of the category), every hole is a candidate, young or not.
//!
//! A hole is young only when this process saw it appear: listed now, not in its previous
//! listing, which it looked at less than [`LEFT_TO_PUSHER_FOR`] ago. A process that looks at the
//! holes for the first time (a task that takes once), or after a longer pause, cannot tell how
//! long they have been there: every hole it lists is old to it.

use std::time::Duration;
use tokio::time::Instant;

use super::choice::Hole;
use crate::range::IdRange;

/// How long a take of whole blocks leaves a hole another process pushed to its pusher, counted
/// from when this process first listed it.
pub const LEFT_TO_PUSHER_FOR: Duration = Duration::from_secs(1);

/// The holes of a listing that this process saw appear, and until when each is left to its
/// pusher.
#[derive(Debug, Default)]
pub(crate) struct YoungHoles {
    /// By the hole's (start, end), ascending: a take asks about every hole it lists, in ID
    /// order, and one pass along this answers them all ([`YoungHoles::in_order`]).
    until: Vec<((i64, i64), Instant)>,
}

/// The listing before a new one, as [`YoungHoles::after`] reads it.
pub(crate) struct Previous<'a> {
    /// Its holes in ID order, with this process's own writes applied.
    pub holes: &'a [Hole],
    /// Its young holes.
    pub young: &'a YoungHoles,
    /// When this process last found it current (or made it).
    pub looked_at: Instant,
}

fn key(range: &IdRange) -> (i64, i64) {
    (range.start(), range.end())
}

impl YoungHoles {
    /// The young holes of a listing of `holes` made at `listed_at`, after `previous`: a hole
    /// the previous listing showed keeps its age (this process's own pushes are in it, old);
    /// one it did not show is young until [`LEFT_TO_PUSHER_FOR`] after `listed_at`. Without a
    /// previous listing, or one last looked at that long before, none is young.
    pub(crate) fn after(
        previous: Option<Previous<'_>>,
        holes: &[Hole],
        listed_at: Instant,
    ) -> YoungHoles {
        let Some(previous) = previous else {
            return YoungHoles::default();
        };
        if listed_at.saturating_duration_since(previous.looked_at) >= LEFT_TO_PUSHER_FOR {
            return YoungHoles::default();
        }
        let known = |range: &IdRange| {
            previous
                .holes
                .binary_search_by_key(&key(range), |(_, r)| key(r))
                .is_ok()
        };
        let mut until: Vec<_> = holes
            .iter()
            .filter_map(|(_, range)| {
                if known(range) {
                    let kept = previous.young.until_of(range)?;
                    (kept > listed_at).then_some((key(range), kept))
                } else {
                    Some((key(range), listed_at + LEFT_TO_PUSHER_FOR))
                }
            })
            .collect();
        // A listing's holes are in ID order already: this only checks it.
        until.sort_by_key(|(key, _)| *key);
        YoungHoles { until }
    }

    /// Whether any hole is young at `now`.
    pub(crate) fn any(&self, now: Instant) -> bool {
        self.until.iter().any(|(_, until)| *until > now)
    }

    /// Whether the hole of `range` is young at `now`.
    pub(crate) fn is_young(&self, range: &IdRange, now: Instant) -> bool {
        self.until_of(range).is_some_and(|until| until > now)
    }

    /// [`Self::is_young`] for holes asked about in ID order, as a take walks its listing: one
    /// pass over the young holes for the whole listing instead of a binary search per hole.
    pub(crate) fn in_order(&self, now: Instant) -> InOrder<'_> {
        InOrder {
            young: self,
            now,
            next: std::cell::Cell::new(0),
            last: std::cell::Cell::new((i64::MIN, i64::MIN)),
        }
    }

    /// Until when the hole of `range` is left to its pusher, if it was seen appear.
    fn until_of(&self, range: &IdRange) -> Option<Instant> {
        let at = self
            .until
            .binary_search_by_key(&key(range), |(key, _)| *key)
            .ok()?;
        Some(self.until[at].1)
    }

    /// Forgets the age of the hole of `range`: this process created it (a hole with the same
    /// range another process pushed and this one took and pushed back is its own now).
    pub(crate) fn forget(&mut self, range: &IdRange) {
        if let Ok(at) = self
            .until
            .binary_search_by_key(&key(range), |(key, _)| *key)
        {
            self.until.remove(at);
        }
    }
}

/// Answers whether holes asked about in ascending (start, end) order are young
/// ([`YoungHoles::in_order`]). A hole asked about out of that order is answered by a binary
/// search, as [`YoungHoles::is_young`] does.
pub(crate) struct InOrder<'y> {
    young: &'y YoungHoles,
    now: Instant,
    /// The first young hole not below the last hole asked about.
    next: std::cell::Cell<usize>,
    /// The last hole asked about.
    last: std::cell::Cell<(i64, i64)>,
}

impl InOrder<'_> {
    /// Whether the hole of `range` is young.
    pub(crate) fn is_young(&self, range: &IdRange) -> bool {
        let asked = key(range);
        if asked < self.last.get() {
            return self.young.is_young(range, self.now);
        }
        self.last.set(asked);
        let until = &self.young.until;
        let mut next = self.next.get();
        while until.get(next).is_some_and(|(key, _)| *key < asked) {
            next += 1;
        }
        self.next.set(next);
        until
            .get(next)
            .is_some_and(|(key, until)| *key == asked && *until > self.now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hole(start: i64, end: i64) -> Hole {
        let range = IdRange::new(start, end).unwrap();
        (crate::format::hole_name(&range), range)
    }

    fn r(start: i64, end: i64) -> IdRange {
        IdRange::new(start, end).unwrap()
    }

    #[test]
    fn a_first_listing_has_no_young_holes() {
        let now = Instant::now();
        let young = YoungHoles::after(None, &[hole(1, 100)], now);
        assert!(!young.any(now));
    }

    #[test]
    fn holes_that_appear_between_looks_are_young_for_a_while() {
        let t0 = Instant::now();
        let before = [hole(1, 100)];
        let previous = Previous {
            holes: &before,
            young: &YoungHoles::default(),
            looked_at: t0,
        };
        let t1 = t0 + Duration::from_millis(300);
        let now = [hole(1, 100), hole(201, 300)];
        let young = YoungHoles::after(Some(previous), &now, t1);
        assert!(!young.is_young(&r(1, 100), t1), "known before: old");
        assert!(
            young.is_young(&r(201, 300), t1),
            "new since the last look: young"
        );
        assert!(young.is_young(
            &r(201, 300),
            t1 + LEFT_TO_PUSHER_FOR - Duration::from_millis(1)
        ));
        assert!(!young.is_young(&r(201, 300), t1 + LEFT_TO_PUSHER_FOR));
        assert!(!young.any(t1 + LEFT_TO_PUSHER_FOR));

        // Listed again later: the hole keeps the age it had, it does not start over.
        let t2 = t1 + Duration::from_millis(500);
        let again = YoungHoles::after(
            Some(Previous {
                holes: &now,
                young: &young,
                looked_at: t1,
            }),
            &now,
            t2,
        );
        assert!(again.is_young(&r(201, 300), t2));
        assert!(!again.is_young(&r(201, 300), t1 + LEFT_TO_PUSHER_FOR));
    }

    /// Found by review: a process that takes a hole another pushed and pushes the same range
    /// back within the second found its own hole young.
    #[test]
    fn a_hole_this_process_created_is_not_young() {
        let t0 = Instant::now();
        let previous = Previous {
            holes: &[],
            young: &YoungHoles::default(),
            looked_at: t0,
        };
        let mut young = YoungHoles::after(Some(previous), &[hole(1001, 2000)], t0);
        assert!(young.is_young(&r(1001, 2000), t0));
        young.forget(&r(1001, 2000));
        assert!(!young.is_young(&r(1001, 2000), t0));
    }

    #[test]
    fn after_a_long_pause_every_hole_is_old() {
        let t0 = Instant::now();
        let previous = Previous {
            holes: &[],
            young: &YoungHoles::default(),
            looked_at: t0,
        };
        let later = t0 + LEFT_TO_PUSHER_FOR;
        let young = YoungHoles::after(Some(previous), &[hole(1, 100)], later);
        assert!(!young.any(later));
    }

    proptest::proptest! {
        /// Asked in ID order, with some holes asked out of order or twice, the one-pass answer
        /// is the binary search's.
        #[test]
        fn in_order_answers_as_is_young(
            starts in proptest::collection::btree_set(0i64..400, 0..40),
            known_mask in proptest::num::u64::ANY,
            extra_asks in proptest::collection::vec(0i64..400, 0..10),
            later_ms in 0u64..1500,
        ) {
            let t0 = Instant::now();
            let listed: Vec<Hole> = starts.iter().map(|s| hole(s * 10 + 1, s * 10 + 5)).collect();
            let known: Vec<Hole> = listed
                .iter()
                .enumerate()
                .filter(|(i, _)| known_mask >> (i % 64) & 1 == 1)
                .map(|(_, h)| h.clone())
                .collect();
            let old = YoungHoles::default();
            let previous = Previous { holes: &known, young: &old, looked_at: t0 };
            let young = YoungHoles::after(Some(previous), &listed, t0);
            let now = t0 + Duration::from_millis(later_ms);
            let mut asks: Vec<IdRange> = listed.iter().map(|(_, r)| *r).collect();
            // Ranges not listed, and listed ones asked again, anywhere in the order.
            for (i, s) in extra_asks.iter().enumerate() {
                let at = (i * 7) % (asks.len() + 1);
                asks.insert(at, r(s * 10 + 1, s * 10 + 5 + i64::from(i % 2 == 0)));
            }
            let walk = young.in_order(now);
            for range in &asks {
                proptest::prop_assert_eq!(
                    walk.is_young(range),
                    young.is_young(range, now),
                    "{:?}",
                    range
                );
            }
        }
    }
}
