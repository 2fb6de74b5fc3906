//! The free-list parts of a format-3 pool in ZooKeeper (their layout is
//! [`crate::format::parts`]): loading them, remembering those read, and writing the pool node
//! with the part writes a change implies in one `multi`.

use zookeeper_client::{CreateMode, Error as ZkError};

use crate::error::{Result, ZooidError};
use crate::format::parts::{parse_chunk, within};
use crate::format::{chunk_key, chunk_path, is_chunk, ChunkOp, Pool};
use crate::range::IdRange;
use crate::store::StoreError;
use crate::zk::legacy::client_set_version;
use crate::zk::{Classified, ClientMulti, Session, Verdict};

pub(crate) use crate::alloc::state::ChunkCache;

/// What loading the parts found.
pub(crate) enum Loaded {
    /// Every part was at the version the index names; the free list is whole.
    Whole,
    /// A part has moved on: the pool node was read before a later write; read it again.
    Stale,
}

/// Loads `pool`'s parts into its free list, reading only those `cache` does not hold at the
/// index's version (each checked against the count its index line gives).
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
                let read = session.run(generation, client.get_data(&node)).await;
                let (data, stat) = match read.classified() {
                    Ok(got) => got,
                    Err((Verdict::NoNode, _)) => return Ok(Loaded::Stale),
                    Err((_, err)) => {
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
    let mut multi = ClientMulti::new(&client);
    multi.set(path, data, Some(expected));
    for op in ops {
        match op {
            ChunkOp::Set { key, data, version } => {
                multi.set(&chunk_path(path, *key), data, Some(*version))
            }
            ChunkOp::Create { key, data } => multi.create(&chunk_path(path, *key), data, &options),
            ChunkOp::Delete { key, version } => {
                multi.delete(&chunk_path(path, *key), Some(*version))
            }
            ChunkOp::DeleteNode { node } => multi.delete(node, None),
        };
    }
    let failed = match multi.commit(session, generation).await {
        Ok(results) => return Ok(client_set_version(&results).unwrap_or(expected + 1)),
        Err(failed) => failed,
    };
    match (failed.index, failed.verdict()) {
        // A part no index names (a repair gave it up) is in the way.
        (Some(index), Verdict::NodeExists) if index > 0 => {
            sweep(session, path).await;
            Err(StoreError::BadVersion)
        }
        // A part moved on or is missing: the pool node was read too early.
        (Some(index), Verdict::BadVersion | Verdict::NoNode) if index > 0 => {
            let source = &failed.error;
            tracing::debug!(category = path, index, %source, "free-list part out of date");
            Err(StoreError::BadVersion)
        }
        // The pool node's own op, or the request: what the error says, for a write.
        _ => Err(StoreError::from_zk(&failed.error, true, session.options())),
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
        .filter(|c| chunk_key(c).is_some_and(|k| !pool.chunks().iter().any(|chunk| chunk.key == k)))
        .map(|c| format!("{path}/{c}"))
        .collect();
    if orphans.is_empty() {
        return;
    }
    let mut multi = ClientMulti::new(&client);
    multi.check(path, stat.version);
    for orphan in &orphans {
        multi.delete(orphan, None);
    }
    let done = multi.commit(session, generation).await;
    tracing::warn!(
        category = path,
        parts = orphans.len(),
        ok = done.is_ok(),
        "deleted free-list parts the pool no longer names"
    );
}
