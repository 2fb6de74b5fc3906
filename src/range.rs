//! The range algebra: inclusive ID ranges and sorted, disjoint sets of them.
//!
//! Pure data structures with no I/O, so they can be tested exhaustively against a simple model.

use std::fmt;

/// An inclusive range of IDs, `start..=end`, with `start <= end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IdRange {
    start: i64,
    end: i64,
}

impl IdRange {
    /// A range `start..=end`; `None` when `start > end`.
    pub const fn new(start: i64, end: i64) -> Option<Self> {
        if start <= end {
            Some(Self { start, end })
        } else {
            None
        }
    }

    /// A range holding the single ID `id`.
    pub const fn single(id: i64) -> Self {
        Self { start: id, end: id }
    }

    /// The first ID in the range.
    pub const fn start(&self) -> i64 {
        self.start
    }

    /// The last ID in the range (inclusive).
    pub const fn end(&self) -> i64 {
        self.end
    }

    /// How many IDs the range holds (at least 1; saturates at `u64::MAX` for the full i64 span).
    pub const fn len(&self) -> u64 {
        self.end.abs_diff(self.start).saturating_add(1)
    }

    /// Always false: a range holds at least one ID. Present for API symmetry with `len`.
    pub const fn is_empty(&self) -> bool {
        false
    }

    /// Whether `id` lies in the range.
    pub const fn contains(&self, id: i64) -> bool {
        self.start <= id && id <= self.end
    }

    /// Whether the two ranges share at least one ID.
    pub const fn overlaps(&self, other: &IdRange) -> bool {
        self.start <= other.end && other.start <= self.end
    }

    /// Whether `other` lies entirely inside `self`.
    pub const fn covers(&self, other: &IdRange) -> bool {
        self.start <= other.start && other.end <= self.end
    }

    /// Whether `other` starts right after `self` ends.
    const fn touches_from_below(&self, other: &IdRange) -> bool {
        self.end != i64::MAX && self.end + 1 == other.start
    }
}

impl fmt::Display for IdRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.start, self.end)
    }
}

/// A set of IDs kept as ascending, disjoint, non-adjacent ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    ranges: Vec<IdRange>,
}

/// Why ranges could not be added to a [`RangeSet`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertError {
    /// The range shares IDs with the set (or with another range of the same batch).
    Overlap(IdRange),
}

impl RangeSet {
    /// The empty set.
    pub const fn new() -> Self {
        Self { ranges: Vec::new() }
    }

    /// A set holding exactly `range`.
    pub fn from_range(range: IdRange) -> Self {
        Self {
            ranges: vec![range],
        }
    }

    /// The ranges, ascending, disjoint and non-adjacent.
    pub fn ranges(&self) -> &[IdRange] {
        &self.ranges
    }

    /// How many ranges the set is made of.
    pub fn range_count(&self) -> usize {
        self.ranges.len()
    }

    /// How many IDs the set holds.
    pub fn count(&self) -> u64 {
        self.ranges.iter().map(IdRange::len).sum()
    }

    /// Whether the set holds no IDs.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Whether `id` is in the set.
    pub fn contains(&self, id: i64) -> bool {
        let i = self.ranges.partition_point(|r| r.end < id);
        self.ranges.get(i).is_some_and(|r| r.contains(id))
    }

    /// Whether every ID of `range` is in the set.
    pub fn covers(&self, range: &IdRange) -> bool {
        let i = self.ranges.partition_point(|r| r.end < range.start);
        self.ranges
            .get(i)
            .is_some_and(|r| r.start <= range.start && range.end <= r.end)
    }

    /// Removes the IDs of `range` if the set holds every one of them (else changes nothing);
    /// returns whether it did.
    pub fn remove(&mut self, range: &IdRange) -> bool {
        if !self.covers(range) {
            return false;
        }
        let i = self.ranges.partition_point(|r| r.end < range.start);
        let r = self.ranges[i];
        let mut rest = Vec::with_capacity(2);
        if r.start < range.start {
            rest.push(IdRange {
                start: r.start,
                end: range.start - 1,
            });
        }
        if range.end < r.end {
            rest.push(IdRange {
                start: range.end + 1,
                end: r.end,
            });
        }
        self.ranges.splice(i..=i, rest);
        true
    }

    /// The set without the IDs of `remove` (one pass; a range of `remove` that the set does not
    /// wholly hold is left out of the subtraction, as [`RangeSet::remove`] would).
    pub fn without(&self, remove: &[IdRange]) -> RangeSet {
        let mut holes: Vec<IdRange> = remove.iter().filter(|r| self.covers(r)).copied().collect();
        holes.sort_unstable_by_key(|r| r.start);
        let mut out = Vec::with_capacity(self.ranges.len() + holes.len());
        let mut holes = holes.into_iter().peekable();
        for &range in &self.ranges {
            let mut start = range.start;
            while let Some(hole) = holes.next_if(|h| h.end <= range.end) {
                if hole.start > start {
                    out.push(IdRange {
                        start,
                        end: hole.start - 1,
                    });
                }
                start = hole.end.saturating_add(1);
            }
            if start <= range.end {
                out.push(IdRange {
                    start,
                    end: range.end,
                });
            }
        }
        RangeSet { ranges: out }
    }

    /// The first range of the set that overlaps `range`, if any.
    pub fn first_overlap(&self, range: &IdRange) -> Option<IdRange> {
        let i = self.ranges.partition_point(|r| r.end < range.start);
        self.ranges.get(i).filter(|r| r.overlaps(range)).copied()
    }

    /// Removes up to `n` of the lowest IDs and returns them as ascending ranges.
    pub fn take_lowest(&mut self, n: u64) -> Vec<IdRange> {
        let mut taken = Vec::new();
        let mut wanted = n;
        let mut whole = 0;
        for range in &self.ranges {
            if wanted == 0 {
                break;
            }
            if range.len() <= wanted {
                taken.push(*range);
                wanted -= range.len();
                whole += 1;
            } else {
                // 0 < wanted < len, so the sum stays inside the range and cannot overflow.
                let last = range.start + (wanted as i64 - 1);
                taken.push(IdRange {
                    start: range.start,
                    end: last,
                });
                wanted = 0;
            }
        }
        self.ranges.drain(..whole);
        if let (Some(last_taken), Some(first)) = (taken.last(), self.ranges.first_mut()) {
            if first.start == last_taken.start {
                first.start = last_taken.end + 1;
            }
        }
        taken
    }

    /// How many IDs of the set are at or below `limit`.
    pub fn count_at_most(&self, limit: i64) -> u64 {
        self.ranges
            .iter()
            .take_while(|r| r.start <= limit)
            .map(|r| IdRange::new(r.start, r.end.min(limit)).map_or(0, |c| c.len()))
            .sum()
    }

    /// Removes up to `n` of the lowest IDs, none above `limit`, and returns them as ascending
    /// ranges.
    pub fn take_lowest_at_most(&mut self, n: u64, limit: i64) -> Vec<IdRange> {
        let available = self.count_at_most(limit);
        self.take_lowest(n.min(available))
    }

    /// Removes every ID at or below `limit` and returns them as ascending ranges.
    pub fn remove_at_most(&mut self, limit: i64) -> Vec<IdRange> {
        let n = self.count_at_most(limit);
        self.take_lowest(n)
    }

    /// Adds every range of `batch`, or none of them: when any of them overlaps the set or another
    /// range of the batch, the set is left unchanged and the first such range is returned.
    pub fn insert_all(&mut self, batch: &[IdRange]) -> Result<(), InsertError> {
        let mut sorted = batch.to_vec();
        sorted.sort_unstable();
        for pair in sorted.windows(2) {
            if pair[0].overlaps(&pair[1]) {
                return Err(InsertError::Overlap(pair[1]));
            }
        }
        if let Some(clash) = sorted.iter().find(|r| self.first_overlap(r).is_some()) {
            return Err(InsertError::Overlap(*clash));
        }
        for range in sorted {
            self.insert_disjoint(range);
        }
        Ok(())
    }

    /// Inserts a range known not to overlap the set, merging it with adjacent neighbours.
    fn insert_disjoint(&mut self, range: IdRange) {
        let i = self.ranges.partition_point(|r| r.end < range.start);
        let merges_left = i > 0 && self.ranges[i - 1].touches_from_below(&range);
        let merges_right = i < self.ranges.len() && range.touches_from_below(&self.ranges[i]);
        match (merges_left, merges_right) {
            (true, true) => {
                self.ranges[i - 1].end = self.ranges[i].end;
                self.ranges.remove(i);
            }
            (true, false) => self.ranges[i - 1].end = range.end,
            (false, true) => self.ranges[i].start = range.start,
            (false, false) => self.ranges.insert(i, range),
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn covers_and_remove_a_range() {
        let mut set = RangeSet::new();
        set.insert_all(&[IdRange::new(1, 10).unwrap(), IdRange::new(20, 30).unwrap()])
            .unwrap();
        assert!(set.covers(&IdRange::new(3, 5).unwrap()));
        assert!(!set.covers(&IdRange::new(9, 20).unwrap()));
        assert!(
            !set.remove(&IdRange::new(9, 20).unwrap()),
            "not all free: nothing removed"
        );
        assert_eq!(set.count(), 21);
        assert!(set.remove(&IdRange::new(3, 5).unwrap()));
        assert!(set.remove(&IdRange::new(20, 20).unwrap()));
        assert!(set.remove(&IdRange::new(30, 30).unwrap()));
        let expected: Vec<IdRange> = [(1, 2), (6, 10), (21, 29)]
            .iter()
            .map(|&(a, b)| IdRange::new(a, b).unwrap())
            .collect();
        assert_eq!(set.ranges(), &expected[..]);
        let mut again = RangeSet::new();
        again
            .insert_all(&[IdRange::new(1, 10).unwrap(), IdRange::new(20, 30).unwrap()])
            .unwrap();
        let cut = again.without(&[
            IdRange::new(30, 30).unwrap(),
            IdRange::new(3, 5).unwrap(),
            IdRange::new(20, 20).unwrap(),
            IdRange::new(9, 20).unwrap(),
        ]);
        assert_eq!(cut.ranges(), &expected[..]);
    }

    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn r(start: i64, end: i64) -> IdRange {
        IdRange::new(start, end).unwrap()
    }

    #[test]
    fn range_rejects_reversed_bounds_and_counts_extremes() {
        assert_eq!(IdRange::new(5, 4), None);
        assert_eq!(r(1, i64::MAX).len(), i64::MAX as u64);
        assert_eq!(r(i64::MIN, i64::MAX).len(), u64::MAX);
        assert_eq!(r(7, 7).to_string(), "7:7");
    }

    #[test]
    fn take_lowest_splits_the_last_range_it_touches() {
        let mut set = RangeSet::new();
        set.insert_all(&[r(1, 3), r(10, 20)]).unwrap();
        assert_eq!(set.take_lowest(5), vec![r(1, 3), r(10, 11)]);
        assert_eq!(set.ranges(), &[r(12, 20)]);
        assert_eq!(set.take_lowest(100), vec![r(12, 20)]);
        assert!(set.is_empty());
        assert!(set.take_lowest(1).is_empty());
    }

    #[test]
    fn insert_merges_neighbours_and_rejects_overlap_atomically() {
        let mut set = RangeSet::from_range(r(30001, 123456789));
        set.insert_all(&[r(9001, 10000)]).unwrap();
        set.insert_all(&[r(29001, 30000)]).unwrap();
        assert_eq!(set.ranges(), &[r(9001, 10000), r(29001, 123456789)]);
        let before = set.clone();
        assert_eq!(
            set.insert_all(&[r(1, 5), r(10000, 10001)]),
            Err(InsertError::Overlap(r(10000, 10001)))
        );
        assert_eq!(set, before);
        assert_eq!(
            set.insert_all(&[r(1, 5), r(3, 4)]),
            Err(InsertError::Overlap(r(3, 4)))
        );
        assert_eq!(set, before);
    }

    #[test]
    fn merge_at_the_top_of_the_id_space_does_not_overflow() {
        let mut set = RangeSet::from_range(r(i64::MAX, i64::MAX));
        set.insert_all(&[r(1, i64::MAX - 1)]).unwrap();
        assert_eq!(set.ranges(), &[r(1, i64::MAX)]);
    }

    /// Operations applied to both the real set and the model.
    #[derive(Clone, Debug)]
    enum Op {
        Take(u64),
        Insert(Vec<(i64, i64)>),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u64..40).prop_map(Op::Take),
            prop::collection::vec((0i64..200, 0i64..12), 1..4)
                .prop_map(|v| Op::Insert(v.into_iter().map(|(s, l)| (s, s + l)).collect())),
        ]
    }

    proptest! {
        #[test]
        fn behaves_like_a_set_of_ids(ops in prop::collection::vec(op(), 1..60)) {
            let mut set = RangeSet::from_range(r(50, 150));
            let mut model: BTreeSet<i64> = (50..=150).collect();
            for op in ops {
                match op {
                    Op::Take(n) => {
                        let taken = set.take_lowest(n);
                        let expected: Vec<i64> = model.iter().copied().take(n as usize).collect();
                        let got: Vec<i64> = taken.iter().flat_map(|r| r.start()..=r.end()).collect();
                        prop_assert_eq!(&got, &expected);
                        for id in expected { model.remove(&id); }
                    }
                    Op::Insert(batch) => {
                        let ranges: Vec<IdRange> = batch.iter().map(|&(s, e)| r(s, e)).collect();
                        let ids: Vec<i64> = batch.iter().flat_map(|&(s, e)| s..=e).collect();
                        let unique: BTreeSet<i64> = ids.iter().copied().collect();
                        let clash = unique.len() != ids.len() || ids.iter().any(|id| model.contains(id));
                        let result = set.insert_all(&ranges);
                        prop_assert_eq!(result.is_err(), clash);
                        if !clash { model.extend(ids); }
                    }
                }
                // Invariants: ascending, disjoint, non-adjacent, same IDs as the model.
                for pair in set.ranges().windows(2) {
                    prop_assert!(pair[0].end() + 1 < pair[1].start());
                }
                let ids: BTreeSet<i64> = set.ranges().iter().flat_map(|r| r.start()..=r.end()).collect();
                prop_assert_eq!(&ids, &model);
                prop_assert_eq!(set.count(), model.len() as u64);
                for probe in [0i64, 49, 50, 100, 150, 151, 199] {
                    prop_assert_eq!(set.contains(probe), model.contains(&probe));
                }
            }
        }
    }

    proptest! {
        #[test]
        fn taking_under_a_limit_matches_the_model(
            ranges in proptest::collection::vec((1i64..200, 0i64..20), 0..8),
            n in 1u64..300,
            limit in 0i64..260,
        ) {
            let mut set = RangeSet::new();
            let mut model = BTreeSet::new();
            for (start, len) in ranges {
                let range = r(start, start + len);
                if set.insert_all(&[range]).is_ok() {
                    model.extend(range.start()..=range.end());
                }
            }
            prop_assert_eq!(set.count_at_most(limit), model.iter().filter(|&&id| id <= limit).count() as u64);
            let mut under = set.clone();
            let taken = under.take_lowest_at_most(n, limit);
            let want: Vec<i64> = model.iter().copied().filter(|&id| id <= limit).take(n as usize).collect();
            let got: Vec<i64> = taken.iter().flat_map(|r| r.start()..=r.end()).collect();
            prop_assert_eq!(&got, &want);
            prop_assert!(got.iter().all(|&id| !under.contains(id)));
            let removed = set.remove_at_most(limit);
            prop_assert!(removed.iter().all(|r| r.end() <= limit));
            prop_assert_eq!(set.count_at_most(limit), 0);
            prop_assert_eq!(set.count(), model.iter().filter(|&&id| id > limit).count() as u64);
        }
    }
}
