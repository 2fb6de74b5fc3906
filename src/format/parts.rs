//! The parts layout: a fragmented free list split over several nodes, so that a write touches
//! only the part it changes (pool format 3). Pure: it plans the part writes, the allocator
//! sends them (src/alloc/blocks/parts.rs).
//!
//! The pool node stays the one compare-and-set point of the category: it keeps the lowest free
//! ranges (the *head*, at most [`HEAD_MAX_RANGES`]) and an index line per *part*,
//! `#chunk KEY VERSION IDS`; part `KEY` is the node `PATH/zooid-free-KEY` and holds the free
//! ranges from `KEY` up to the next part's key (at most [`CHUNK_MAX_RANGES`]). Every write is one
//! `multi`: the pool node at the version read, plus `setData` / `create` / `delete` of exactly the
//! parts whose ranges changed, at the versions the index names. So a take (which removes the
//! lowest IDs) writes the pool node and the head, a push writes the pool node and the one part it
//! lands in, whatever the number of free ranges elsewhere; lost replies are resolved by the pool
//! node's operation log as before (the `multi` applied whole or not at all), and a reader that
//! finds a part at another version than the index says read the pool node too early and reads
//! again.
//!
//! [`plan`] lays the parts out again after every change: a part left empty is deleted, the head
//! left empty takes over the first part, and a head or part over its limit is split in two.

use std::collections::HashMap;

use super::names::chunk_path;
use super::pool::{ChunkRef, Pool};
use super::ranges::{parse_ranges, render_ranges};
use crate::error::Result;
use crate::range::{IdRange, RangeSet};

/// Most ranges the pool node itself keeps.
pub const HEAD_MAX_RANGES: usize = 32;

/// Most ranges a part keeps.
pub const CHUNK_MAX_RANGES: usize = 1024;

/// One change to a part node, in a write's `multi`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChunkOp {
    /// Write the part at `version` (it becomes `version + 1`).
    Set {
        key: i64,
        data: Vec<u8>,
        version: i32,
    },
    /// Create the part (version 0).
    Create { key: i64, data: Vec<u8> },
    /// Delete the part, at `version`.
    Delete { key: i64, version: i32 },
    /// Delete another node (a merged push, src/alloc/blocks/returns.rs).
    DeleteNode { node: String },
}

/// A part's content: `#zooid-chunk KEY` then its ranges, one `START:END` per line.
pub fn render_chunk(key: i64, ranges: &[IdRange]) -> Vec<u8> {
    render_ranges(&format!("#zooid-chunk {key}"), ranges)
}

/// Parses part `key` of pool `path`, whose ranges must lie in `key..end`.
pub fn parse_chunk(path: &str, key: i64, end: i64, data: &[u8]) -> Result<Vec<IdRange>> {
    // `end` is exclusive, except for the last part, which reaches the largest ID.
    let last = if end == i64::MAX { end } else { end - 1 };
    parse_ranges(
        &chunk_path(path, key),
        &format!("#zooid-chunk {key}"),
        data,
        (key, last),
    )
}

/// The ranges of `free` from `start` up to (not including) `end` (`i64::MAX`: to the end).
pub fn within(free: &RangeSet, start: i64, end: i64) -> &[IdRange] {
    // Sorted and disjoint: starts and ends ascend together.
    let ranges = free.ranges();
    let lo = ranges.partition_point(|r| r.start() < start);
    // The last part reaches the largest ID (`end` is exclusive, so it cannot say so).
    let hi = if end == i64::MAX {
        ranges.len()
    } else {
        ranges.partition_point(|r| r.end() < end)
    }
    .max(lo);
    &ranges[lo..hi]
}

/// Lays out `next`'s parts again after a change from `current` (both as their nodes hold them:
/// parts loaded, no waiting pushes) and returns the part writes that go
/// with the pool node's write. Parts
/// never split a range: a key is always the start of a free range or the end of one plus one.
pub fn plan(current: &Pool, next: &mut Pool) -> Vec<ChunkOp> {
    if current.blocks().is_none() && current.chunks().is_empty() {
        return Vec::new(); // Formats 1 and 2 are one node.
    }
    let free = next.free();
    let mut keys: Vec<i64> = next.chunks().iter().map(|c| c.key).collect();
    // A key inside a range (the range was merged across it) moves to the range's end + 1, or
    // goes when another key already bounds that range.
    let mut fixed: Vec<i64> = Vec::with_capacity(keys.len());
    for key in keys.drain(..) {
        let key = match IdRange::new(key, key).and_then(|point| free.first_overlap(&point)) {
            Some(r) if r.start() < key => r.end().saturating_add(1),
            _ => key,
        };
        if fixed.last().is_none_or(|&last| last < key) {
            fixed.push(key);
        }
    }
    keys = fixed;
    let count = |start: i64, end: i64| within(free, start, end).len();
    // Empty parts go (their IDs' span joins the part before).
    let mut i = 0;
    while i < keys.len() {
        let end = keys.get(i + 1).copied().unwrap_or(i64::MAX);
        if count(keys[i], end) == 0 {
            keys.remove(i);
        } else {
            i += 1;
        }
    }
    // An empty head takes over the first part.
    if !keys.is_empty() && count(i64::MIN, keys[0]) == 0 {
        keys.remove(0);
    }
    // Overfull head and parts are split.
    let mut out: Vec<i64> = Vec::with_capacity(keys.len() + 1);
    let mut starts = vec![i64::MIN];
    starts.extend(keys.iter().copied());
    for (idx, &start) in starts.iter().enumerate() {
        let end = starts.get(idx + 1).copied().unwrap_or(i64::MAX);
        if idx > 0 {
            out.push(start);
        }
        let ranges = within(free, start, end);
        let limit = if idx == 0 {
            HEAD_MAX_RANGES
        } else {
            CHUNK_MAX_RANGES
        };
        if ranges.len() > limit {
            // Half of the limit stays below the first new key; the rest goes into parts of half
            // a part's limit each.
            let step = (CHUNK_MAX_RANGES / 2).max(1);
            out.extend(
                ranges
                    .iter()
                    .skip((limit / 2).max(1))
                    .step_by(step)
                    .map(|r| r.start()),
            );
        }
    }
    keys = out;
    // The writes: parts whose ranges changed, created or gone.
    let old: HashMap<i64, (i32, i64)> = {
        let refs = current.chunks();
        refs.iter()
            .enumerate()
            .map(|(j, c)| {
                let end = refs.get(j + 1).map_or(i64::MAX, |n| n.key);
                (c.key, (c.version, end))
            })
            .collect()
    };
    let mut ops = Vec::new();
    let mut refs = Vec::with_capacity(keys.len());
    for (j, &key) in keys.iter().enumerate() {
        let end = keys.get(j + 1).copied().unwrap_or(i64::MAX);
        let ranges = within(free, key, end);
        let ids = ranges.iter().map(IdRange::len).sum();
        let version = match old.get(&key) {
            Some(&(version, old_end)) => {
                if within(current.free(), key, old_end) == ranges {
                    version
                } else {
                    ops.push(ChunkOp::Set {
                        key,
                        data: render_chunk(key, ranges),
                        version,
                    });
                    version.saturating_add(1)
                }
            }
            None => {
                ops.push(ChunkOp::Create {
                    key,
                    data: render_chunk(key, ranges),
                });
                0
            }
        };
        refs.push(ChunkRef { key, version, ids });
    }
    for c in current.chunks() {
        if !keys.contains(&c.key) {
            ops.push(ChunkOp::Delete {
                key: c.key,
                version: c.version,
            });
        }
    }
    next.set_chunks(refs);
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ZooidError;
    use crate::format::Blocks;

    fn r(a: i64, b: i64) -> IdRange {
        IdRange::new(a, b).unwrap()
    }

    fn pool_with(ranges: &[IdRange]) -> Pool {
        let mut pool = Pool::with_blocks(r(1, 10_000_000), 10);
        pool.set_blocks(Blocks {
            unit: 10,
            generation: 0,
            base: 5_000_001,
            hole_nodes: false,
        });
        pool.free_mut().insert_all(ranges).unwrap();
        pool
    }

    fn holes(n: i64) -> Vec<IdRange> {
        (0..n).map(|i| r(i * 10 + 1, i * 10 + 5)).collect()
    }

    /// Applies `ops` to a model of the part nodes.
    fn apply(nodes: &mut HashMap<i64, (i32, Vec<u8>)>, ops: &[ChunkOp]) {
        for op in ops {
            match op {
                ChunkOp::Set { key, data, version } => {
                    let node = nodes.get_mut(key).expect("set of a missing part");
                    assert_eq!(node.0, *version, "set at the wrong version");
                    *node = (version + 1, data.clone());
                }
                ChunkOp::Create { key, data } => {
                    assert!(
                        nodes.insert(*key, (0, data.clone())).is_none(),
                        "created twice"
                    );
                }
                ChunkOp::Delete { key, version } => {
                    assert_eq!(
                        nodes.remove(key).expect("delete of a missing part").0,
                        *version
                    );
                }
                other => panic!("not a part write: {other:?}"),
            }
        }
    }

    /// The free list a reader rebuilds from the rendered pool node and the part nodes.
    fn reread(pool: &Pool, nodes: &HashMap<i64, (i32, Vec<u8>)>) -> RangeSet {
        let mut back = Pool::parse("/p", pool.render().as_bytes()).unwrap();
        let refs = back.chunks().to_vec();
        assert_eq!(refs.len(), nodes.len());
        for (j, c) in refs.iter().enumerate() {
            let end = refs.get(j + 1).map_or(i64::MAX, |n| n.key);
            let (version, data) = &nodes[&c.key];
            assert_eq!(*version, c.version);
            let ranges = parse_chunk("/p", c.key, end, data).unwrap();
            assert!(ranges.len() <= CHUNK_MAX_RANGES);
            back.free_mut().insert_all(&ranges).unwrap();
        }
        back.free().clone()
    }

    #[test]
    fn a_fragmented_free_list_is_split_and_writes_touch_one_part() {
        let empty = pool_with(&[]);
        let mut next = empty.clone();
        next.free_mut().insert_all(&holes(20_000)).unwrap();
        let ops = plan(&empty, &mut next);
        let mut nodes = HashMap::new();
        apply(&mut nodes, &ops);
        assert!(next.chunks().len() >= 20_000 / CHUNK_MAX_RANGES);
        assert_eq!(reread(&next, &nodes), *next.free());
        assert!(
            next.render().len() < 4 * 1024,
            "the pool node stays small: {}",
            next.render().len()
        );
        assert!(
            next.chunks().len() <= 20_000 / (CHUNK_MAX_RANGES / 2) + 1,
            "{} parts",
            next.chunks().len()
        );
        assert_eq!(next.free_count(), 20_000 * 5);

        // A take of the lowest IDs touches the head only.
        let current = next.clone();
        let mut taken = current.clone();
        taken.free_mut().take_lowest(7);
        assert!(plan(&current, &mut taken).is_empty());
        // A push into the middle writes one part.
        let mut pushed = current.clone();
        pushed
            .free_mut()
            .insert_all(&[r(100_007, 100_008)])
            .unwrap();
        let ops = plan(&current, &mut pushed);
        assert_eq!(ops.len(), 1, "{ops:?}");
        apply(&mut nodes, &ops);
        assert_eq!(reread(&pushed, &nodes), *pushed.free());
    }

    #[test]
    fn parts_merge_back_as_ids_are_taken() {
        let empty = pool_with(&[]);
        let mut current = empty.clone();
        current.free_mut().insert_all(&holes(2_000)).unwrap();
        let mut nodes = HashMap::new();
        apply(&mut nodes, &plan(&empty, &mut current));
        // Take everything, 333 IDs at a time: parts empty out and go.
        while !current.free().is_empty() {
            let mut next = current.clone();
            next.free_mut().take_lowest(333);
            let ops = plan(&current, &mut next);
            apply(&mut nodes, &ops);
            assert_eq!(reread(&next, &nodes), *next.free());
            current = next;
        }
        assert!(current.chunks().is_empty());
        assert!(nodes.is_empty());
        // A push that merges ranges across a part's key keeps every ID once.
        let mut current = empty.clone();
        current.free_mut().insert_all(&holes(600)).unwrap();
        let mut nodes = HashMap::new();
        apply(&mut nodes, &plan(&empty, &mut current));
        let key = current.chunks()[0].key;
        let mut next = current.clone();
        next.free_mut().insert_all(&[r(key - 5, key - 1)]).unwrap();
        apply(&mut nodes, &plan(&current, &mut next));
        assert_eq!(reread(&next, &nodes), *next.free());
    }

    #[test]
    fn parts_are_parsed_strictly() {
        assert_eq!(
            parse_chunk("/p", 10, 100, b"#zooid-chunk 10\n10:20\n30:40\n").unwrap(),
            vec![r(10, 20), r(30, 40)]
        );
        for bad in [
            &b"#zooid-chunk 11\n10:20\n"[..],
            b"#zooid-chunk 10\n5:20\n",
            b"#zooid-chunk 10\n10:100\n",
            b"#zooid-chunk 10\n30:40\n10:20\n",
            b"#zooid-chunk 10\n10:x\n",
            b"",
        ] {
            assert!(
                matches!(
                    parse_chunk("/p", 10, 100, bad),
                    Err(ZooidError::CorruptPool { .. })
                ),
                "{bad:?}"
            );
        }
    }
}
