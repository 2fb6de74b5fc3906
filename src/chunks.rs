//! A fragmented free list split over several nodes, so that a write touches only the part it
//! changes (pool format 3).
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

use zookeeper_client::{CreateMode, Error as ZkError, MultiWriteError};

use crate::error::{Result, ZooidError};
use crate::pool::{ChunkRef, Pool};
use crate::range::{IdRange, RangeSet};
use crate::session::Session;
use crate::store::StoreError;

/// Most ranges the pool node itself keeps.
pub const HEAD_MAX_RANGES: usize = 32;

/// Most ranges a part keeps.
pub const CHUNK_MAX_RANGES: usize = 1024;

/// The node of part `key`.
pub fn chunk_path(path: &str, key: i64) -> String {
    format!("{path}/zooid-free-{key}")
}

/// Whether `name` (a child of a pool node) is one of zooid's free-list parts.
pub fn is_chunk(name: &str) -> bool {
    is_numbered(name, "zooid-free-")
}

/// Whether `name` is `prefix` followed by decimal digits.
pub(crate) fn is_numbered(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

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
    /// Delete another node (a merged push, src/blocks.rs).
    DeleteNode { node: String },
    /// Check another node's data version (that no push arrived since it was read).
    Check { node: String, version: i32 },
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

/// A node of zooid's own: a `header` line, then one `START:END` line per range.
pub(crate) fn render_ranges(header: &str, ranges: &[IdRange]) -> Vec<u8> {
    let mut out = format!("{header}\n");
    for range in ranges {
        out.push_str(&format!("{range}\n"));
    }
    out.into_bytes()
}

/// Parses a node written by [`render_ranges`] strictly: the `header` line, then ascending,
/// disjoint ranges of decimal IDs within `first..=last`.
pub(crate) fn parse_ranges(
    node: &str,
    header: &str,
    data: &[u8],
    (first, last): (i64, i64),
) -> Result<Vec<IdRange>> {
    let corrupt = |line: usize, content: &str, reason: &str| ZooidError::CorruptPool {
        path: node.to_string(),
        line,
        content: content.to_string(),
        reason: reason.to_string(),
    };
    let text = std::str::from_utf8(data).map_err(|_| corrupt(1, "", "not UTF-8 text"))?;
    let mut lines = (1..).zip(text.lines());
    match lines.next() {
        Some((_, line)) if line.trim() == header => {}
        Some((_, line)) => return Err(corrupt(1, line, &format!("expected '{header}'"))),
        None => return Err(corrupt(1, "", "empty node")),
    }
    let mut ranges: Vec<IdRange> = Vec::new();
    for (line_no, raw) in lines {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let range = line
            .split_once(':')
            .and_then(|(a, b)| {
                let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
                (digits(a) && digits(b)).then_some((a.parse().ok()?, b.parse().ok()?))
            })
            .and_then(|(a, b)| IdRange::new(a, b))
            .ok_or_else(|| corrupt(line_no, raw, "expected start:end with decimal IDs"))?;
        if range.start() < first || range.end() > last {
            return Err(corrupt(line_no, raw, &format!("outside {first}:{last}")));
        }
        if ranges.last().is_some_and(|p| range.start() <= p.end()) {
            return Err(corrupt(
                line_no,
                raw,
                "overlaps or precedes the previous range",
            ));
        }
        ranges.push(range);
    }
    Ok(ranges)
}

/// The ranges of `free` from `start` up to (not including) `end`.
fn within(free: &RangeSet, start: i64, end: i64) -> &[IdRange] {
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
/// parts loaded, no waiting pushes; see [`Pool::stored`]) and returns the part writes that go
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

/// The parts already read, by key: (version, ranges).
pub(crate) type ChunkCache = HashMap<i64, (i32, Vec<IdRange>)>;

/// What loading the parts found.
pub(crate) enum Loaded {
    /// Every part was at the version the index names; the free list is whole.
    Whole,
    /// A part has moved on: the pool node was read before a later write; read it again.
    Stale,
}

/// Loads `pool`'s parts into its free list, reading only those `cache` does not hold at the
/// index's version.
pub(crate) async fn load(
    session: &Session,
    path: &str,
    pool: &mut Pool,
    cache: &mut ChunkCache,
) -> Result<Loaded> {
    let refs = pool.chunks().to_vec();
    for (j, chunk) in refs.iter().enumerate() {
        let end = refs.get(j + 1).map_or(i64::MAX, |n| n.key);
        let ranges = match cache.get(&chunk.key) {
            Some((version, ranges)) if *version == chunk.version => ranges.clone(),
            _ => {
                let node = chunk_path(path, chunk.key);
                let (client, generation) = session.client();
                let (data, stat) = match session.run(generation, client.get_data(&node)).await {
                    Ok(got) => got,
                    Err(ZkError::NoNode) => return Ok(Loaded::Stale),
                    Err(err) => {
                        return Err(ZooidError::ConnectionLost {
                            category: path.to_string(),
                            reason: format!("reading {node}: {err}"),
                        })
                    }
                };
                if stat.version != chunk.version {
                    return Ok(Loaded::Stale);
                }
                let ranges = parse_chunk(path, chunk.key, end, &data)?;
                cache.insert(chunk.key, (stat.version, ranges.clone()));
                ranges
            }
        };
        if ranges.iter().map(IdRange::len).sum::<u64>() != chunk.ids {
            return Err(ZooidError::CorruptPool {
                path: chunk_path(path, chunk.key),
                line: 0,
                content: String::new(),
                reason: format!(
                    "holds a different number of IDs than the pool's index says ({})",
                    chunk.ids
                ),
            });
        }
        pool.free_mut()
            .insert_all(&ranges)
            .map_err(|_| ZooidError::CorruptPool {
                path: chunk_path(path, chunk.key),
                line: 0,
                content: String::new(),
                reason: "overlaps the pool's other free ranges".into(),
            })?;
    }
    pool.set_complete();
    Ok(Loaded::Whole)
}

/// Remembers the parts of `pool` (written or read) in `cache`.
pub(crate) fn remember(pool: &Pool, cache: &mut ChunkCache) {
    let refs = pool.chunks();
    cache.retain(|key, _| refs.iter().any(|c| c.key == *key));
    for (j, chunk) in refs.iter().enumerate() {
        let end = refs.get(j + 1).map_or(i64::MAX, |n| n.key);
        if cache
            .get(&chunk.key)
            .is_none_or(|(v, _)| *v != chunk.version)
        {
            let ranges = within(pool.free(), chunk.key, end).to_vec();
            cache.insert(chunk.key, (chunk.version, ranges));
        }
    }
}

/// Writes the pool node at `expected` together with the part writes `ops`, in one `multi`.
/// Returns the pool node's new version. A part at another version than expected is reported
/// as a conflict (`BadVersion`): the caller reads again.
pub(crate) async fn commit(
    session: &Session,
    path: &str,
    data: &[u8],
    expected: i32,
    ops: &[ChunkOp],
) -> std::result::Result<i32, StoreError> {
    let (client, generation) = session.client();
    let options = CreateMode::Persistent.with_acls(session.default_acls());
    let mut multi = client.new_multi_writer();
    let mut built = multi.add_set_data(path, data, Some(expected));
    for op in ops {
        built = built.and_then(|()| match op {
            ChunkOp::Set { key, data, version } => {
                multi.add_set_data(&chunk_path(path, *key), data, Some(*version))
            }
            ChunkOp::Create { key, data } => {
                multi.add_create(&chunk_path(path, *key), data, &options)
            }
            ChunkOp::Delete { key, version } => {
                multi.add_delete(&chunk_path(path, *key), Some(*version))
            }
            ChunkOp::DeleteNode { node } => multi.add_delete(node, None),
            ChunkOp::Check { node, version } => multi.add_check_version(node, *version),
        });
    }
    built.map_err(|err| StoreError::Refused(err.to_string()))?;
    let reply = tokio::time::timeout(session.request_limit(), multi.commit())
        .await
        .unwrap_or(Err(MultiWriteError::RequestFailed {
            source: ZkError::Timeout,
        }));
    match reply {
        Ok(results) => Ok(results
            .iter()
            .find_map(|r| match r {
                zookeeper_client::MultiWriteResult::SetData { stat } => Some(stat.version),
                _ => None,
            })
            .unwrap_or(expected + 1)),
        Err(MultiWriteError::OperationFailed { index: 0, source }) => {
            Err(classify(session, generation, source).await)
        }
        Err(MultiWriteError::OperationFailed { index, source }) => match source {
            ZkError::NodeExists => {
                // A part no index names (a repair gave it up) is in the way.
                sweep(session, path).await;
                Err(StoreError::BadVersion)
            }
            // A part moved on or is missing: the pool node was read too early.
            ZkError::BadVersion | ZkError::NoNode => {
                tracing::debug!(category = path, index, %source, "free-list part out of date");
                Err(StoreError::BadVersion)
            }
            other => Err(classify(session, generation, other).await),
        },
        Err(MultiWriteError::RequestFailed { source }) => {
            Err(classify(session, generation, source).await)
        }
    }
}

async fn classify(session: &Session, generation: u64, err: ZkError) -> StoreError {
    match err {
        ZkError::BadVersion => StoreError::BadVersion,
        ZkError::NoNode => StoreError::NoNode,
        ZkError::NoAuth => StoreError::NotAuthorized {
            identity: session.options().identity(),
        },
        err if crate::session::fate(&err) == crate::session::Fate::Refused => {
            StoreError::Refused(err.to_string())
        }
        err => {
            if crate::session::is_gone(&err) {
                session.report_lost(generation, &err.to_string()).await;
            }
            StoreError::Unknown(err.to_string())
        }
    }
}

/// Deletes part nodes the pool's index does not name (left by a repair that gave up the parts),
/// so that their keys can be used again: reads the pool node afresh and deletes them in a `multi`
/// that checks the pool node's version, so a part a newer write indexed is never touched.
pub(crate) async fn sweep(session: &Session, path: &str) {
    let (client, generation) = session.client();
    let read = async {
        client.sync(path).await?;
        let (data, stat) = client.get_data(path).await?;
        let children = client.list_children(path).await?;
        Ok::<_, ZkError>((data, stat, children))
    };
    let Ok((data, stat, children)) = session.run(generation, read).await else {
        return;
    };
    let Ok(pool) = Pool::parse(path, &data) else {
        return;
    };
    let orphans: Vec<String> = children
        .iter()
        .filter(|c| is_chunk(c))
        .filter(|c| {
            let key: Option<i64> = c.strip_prefix("zooid-free-").and_then(|k| k.parse().ok());
            key.is_some_and(|k| !pool.chunks().iter().any(|chunk| chunk.key == k))
        })
        .map(|c| format!("{path}/{c}"))
        .collect();
    if orphans.is_empty() {
        return;
    }
    let mut multi = client.new_multi_writer();
    let built = multi
        .add_check_version(path, stat.version)
        .and_then(|()| orphans.iter().try_for_each(|o| multi.add_delete(o, None)));
    if built.is_ok() {
        let done = tokio::time::timeout(session.request_limit(), multi.commit()).await;
        tracing::warn!(
            category = path,
            parts = orphans.len(),
            ok = matches!(done, Ok(Ok(_))),
            "deleted free-list parts the pool no longer names"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::Blocks;

    fn r(a: i64, b: i64) -> IdRange {
        IdRange::new(a, b).unwrap()
    }

    fn pool_with(ranges: &[IdRange]) -> Pool {
        let mut pool = Pool::with_blocks(r(1, 10_000_000), 10);
        pool.set_blocks(Blocks {
            unit: 10,
            generation: 0,
            base: 5_000_001,
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
