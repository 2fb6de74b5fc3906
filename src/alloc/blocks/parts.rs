//! The free-list parts of a format-3 pool in ZooKeeper (their layout is
//! [`crate::format::parts`]): loading them, remembering those read, and writing the pool node
//! with the part writes a change implies in one `multi`.

use zookeeper_client::{CreateMode, Error as ZkError, MultiWriteError};

use crate::alloc::zkerr::store_error;
use crate::error::{Result, ZooidError};
use crate::format::parts::{parse_chunk, within};
use crate::format::{chunk_key, chunk_path, is_chunk, ChunkOp, Pool};
use crate::range::IdRange;
use crate::session::Session;
use crate::store::StoreError;

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
            Err(store_error(session, generation, source).await)
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
            other => Err(store_error(session, generation, other).await),
        },
        Err(MultiWriteError::RequestFailed { source }) => {
            Err(store_error(session, generation, source).await)
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
        .filter(|c| chunk_key(c).is_some_and(|k| !pool.chunks().iter().any(|chunk| chunk.key == k)))
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
