//! ID categories and the sets of IDs handed to callers.

use std::fmt;
use std::sync::Arc;

use crate::error::{Result, ZooidError};
use crate::range::IdRange;

/// A named pool of IDs: the path of its pool node, such as `/eventpublish/idgen/did`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IdCategory {
    path: String,
}

impl IdCategory {
    /// A category at `path`: absolute, no trailing `/`, no empty, `.` or `..` segments, no NUL,
    /// no character ZooKeeper refuses in a path ([`crate::zk::path::unsupported_char`]), on
    /// every store, so that a category of an embedded store can live on ZooKeeper too, and no
    /// segment named as a node zooid keeps below a pool node
    /// ([`crate::format::is_pool_child`]: `zooid-holes`, `zooid-blocks-N`, ...): a category
    /// there would sit among another category's hole nodes or claims, and be read as one.
    pub fn new(path: impl Into<String>) -> Result<Self> {
        let path = path.into();
        let bad = |why: &str| {
            Err(ZooidError::InvalidArgument(format!(
                "category path {path:?} {why}"
            )))
        };
        if !path.starts_with('/') {
            return bad("must start with '/'");
        }
        if path.len() == 1 {
            return bad("must name a node below the root");
        }
        if path.ends_with('/') {
            return bad("must not end with '/'");
        }
        if path.contains('\0') {
            return bad("must not contain NUL");
        }
        if path[1..]
            .split('/')
            .any(|seg| seg.is_empty() || seg == "." || seg == "..")
        {
            return bad("has an empty, '.' or '..' segment");
        }
        if let Some(seg) = path[1..]
            .split('/')
            .find(|seg| crate::format::is_pool_child(seg))
        {
            return bad(&format!(
                "has the segment {seg:?}, a name zooid keeps for the nodes below a pool node"
            ));
        }
        crate::zk::path::check_chars("category path", &path)?;
        Ok(Self { path })
    }

    /// The pool node's path; also the category's name.
    pub fn name(&self) -> &str {
        &self.path
    }
}

impl fmt::Display for IdCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path)
    }
}

/// IDs handed out by one take: ascending ranges, consumed one ID at a time with [`IdSet::take_id`].
///
/// Taking an ID is local: no I/O, no allocation, no lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdSet {
    category: IdCategory,
    ranges: Vec<IdRange>,
    /// Index of the range the next ID comes from.
    pos: usize,
    /// The next ID to hand out, inside `ranges[pos]` when `pos < ranges.len()`.
    next: i64,
    /// The store a take got the IDs from ([`Store::origin`](crate::store::Store::origin)): a
    /// push through a service on another store is refused. `None` for a set built from ranges.
    origin: Option<Arc<str>>,
}

impl IdSet {
    /// A set over `ranges` (ascending, disjoint) of `category`. It names no store: a push
    /// through any service sends its IDs (the caller vouches that they came from its store).
    pub fn new(category: IdCategory, ranges: Vec<IdRange>) -> Self {
        let next = ranges.first().map_or(0, IdRange::start);
        Self {
            category,
            ranges,
            pos: 0,
            next,
            origin: None,
        }
    }

    /// A set a take got from the store `origin`.
    pub(crate) fn taken_from(
        category: IdCategory,
        ranges: Vec<IdRange>,
        origin: Option<Arc<str>>,
    ) -> Self {
        Self {
            origin,
            ..Self::new(category, ranges)
        }
    }

    /// The store the IDs were taken from, when a take made the set.
    pub(crate) fn origin(&self) -> Option<&Arc<str>> {
        self.origin.as_ref()
    }

    /// The category the IDs belong to.
    pub fn category(&self) -> &IdCategory {
        &self.category
    }

    /// The next unused ID, or `None` when the set is used up.
    #[inline]
    pub fn take_id(&mut self) -> Option<i64> {
        let range = *self.ranges.get(self.pos)?;
        let id = self.next;
        if id == range.end() {
            self.pos += 1;
            self.next = self.ranges.get(self.pos).map_or(0, IdRange::start);
        } else {
            self.next = id + 1;
        }
        Some(id)
    }

    /// Takes up to `max` consecutive unused IDs at once, as one range (never spanning two of the
    /// set's ranges); `None` when the set is used up or `max` is 0.
    #[inline]
    pub fn take_run(&mut self, max: u64) -> Option<IdRange> {
        let range = *self.ranges.get(self.pos)?;
        if max == 0 {
            return None;
        }
        let start = self.next;
        let room = range.end().abs_diff(start); // IDs after `start` left in this range
        let end = if max > room {
            range.end()
        } else {
            start.saturating_add_unsigned(max - 1)
        };
        if end == range.end() {
            self.pos += 1;
            self.next = self.ranges.get(self.pos).map_or(0, IdRange::start);
        } else {
            self.next = end + 1;
        }
        IdRange::new(start, end)
    }

    /// Whether unused IDs remain.
    #[inline]
    pub fn has_more_ids(&self) -> bool {
        self.pos < self.ranges.len()
    }

    /// How many unused IDs remain.
    pub fn count_ids(&self) -> u64 {
        match self.ranges.get(self.pos) {
            None => 0,
            Some(current) => {
                let rest: u64 = self.ranges[self.pos + 1..].iter().map(IdRange::len).sum();
                current.end().abs_diff(self.next) + 1 + rest
            }
        }
    }

    /// The unused IDs as ascending ranges (the first one trimmed to what is left of it).
    pub fn ranges(&self) -> Vec<IdRange> {
        let mut rest: Vec<IdRange> = self.ranges[self.pos.min(self.ranges.len())..].to_vec();
        if let Some(first) = rest.first_mut() {
            *first = IdRange::new(self.next, first.end()).unwrap_or(*first);
        }
        rest
    }

    /// Every range the set was created with, used or not.
    pub fn original_ranges(&self) -> &[IdRange] {
        &self.ranges
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start: i64, end: i64) -> IdRange {
        IdRange::new(start, end).unwrap()
    }

    #[test]
    fn category_paths_are_validated() {
        assert!(IdCategory::new("/a/b").is_ok());
        for bad in [
            "",
            "/",
            "a/b",
            "/a/",
            "/a//b",
            "/a/./b",
            "/a/../b",
            "/a\0",
            "/a\tb",
            "/a\u{e000}",
            "/a\u{1f600}",
            "/a/zooid-holes/h-0000000000000000001-0000000000000001000",
            "/a/zooid-blocks-0/x",
            "/a/zooid-returned",
            "/zooid-free-7/b",
        ] {
            let err = IdCategory::new(bad).unwrap_err();
            assert!(
                matches!(err, ZooidError::InvalidArgument(_)),
                "{bad:?}: {err}"
            );
        }
    }

    #[test]
    fn take_id_walks_every_range_then_stops() {
        let cat = IdCategory::new("/c").unwrap();
        let mut set = IdSet::new(cat, vec![r(1, 2), r(5, 5), r(i64::MAX - 1, i64::MAX)]);
        assert_eq!(set.count_ids(), 5);
        assert_eq!(set.take_id(), Some(1));
        assert_eq!(
            set.ranges(),
            vec![r(2, 2), r(5, 5), r(i64::MAX - 1, i64::MAX)]
        );
        let rest: Vec<i64> = std::iter::from_fn(|| set.take_id()).collect();
        assert_eq!(rest, vec![2, 5, i64::MAX - 1, i64::MAX]);
        assert!(!set.has_more_ids());
        assert_eq!(set.count_ids(), 0);
        assert!(set.ranges().is_empty());
        assert_eq!(set.take_id(), None);
    }

    #[test]
    fn take_run_hands_out_what_take_id_would() {
        let cat = IdCategory::new("/c").unwrap();
        let ranges = vec![r(1, 10), r(20, 20), r(i64::MAX - 2, i64::MAX)];
        for max in [1u64, 2, 3, 7, 10, 11, u64::MAX] {
            let mut by_run = IdSet::new(cat.clone(), ranges.clone());
            let mut by_id = IdSet::new(cat.clone(), ranges.clone());
            assert_eq!(by_run.take_run(0), None);
            while let Some(run) = by_run.take_run(max) {
                assert!(run.len() <= max);
                for expected in run.start()..=run.end() {
                    assert_eq!(by_id.take_id(), Some(expected), "max {max}");
                }
                assert_eq!(by_run.count_ids(), by_id.count_ids());
                assert_eq!(by_run.ranges(), by_id.ranges());
            }
            assert_eq!(by_id.take_id(), None);
            assert_eq!(by_run.count_ids(), 0);
        }
    }
}
