//! The generations of a pool in block allocation: the sequence parent that numbers a
//! generation's blocks, its frontier, sealing it and retiring it.

use super::nodes::refused;
use crate::error::{Result, ZooidError};
use crate::format::{generation_of, sequence_parent, Blocks};
use crate::zk::{Create, Failure, Multi, ReadOn, Verdict, Zk, ZooKeeperExt};

/// Retiring a generation deletes its claims this many at a time...
const RETIRE_BATCH: usize = 100;

/// ...with this pause between two deletes.
const RETIRE_PAUSE: std::time::Duration = std::time::Duration::from_millis(5);

/// The next block number of the pool's generation: the sequence parent's child version (every
/// child create advances it, and children are not deleted while the generation is in use).
pub(crate) async fn next_block(zk: &Zk, path: &str, blocks: &Blocks) -> Result<i64> {
    let parent = sequence_parent(path, blocks.generation);
    let generation = zk.generation();
    match zk.exists(generation, &parent).await {
        Ok(Some(stat)) => Ok(i64::from(stat.cversion)),
        Ok(None)
        | Err(Failure {
            verdict: Verdict::NoNode,
            ..
        }) => Err(ZooidError::NotFound { category: parent }),
        Err(err) => Err(ZooidError::ConnectionLost {
            category: path.to_string(),
            reason: err.to_string(),
        }),
    }
}

/// The first ID of block `next` of `blocks`' generation (saturating).
pub(crate) fn block_start(blocks: &Blocks, next: i64) -> i64 {
    let unit = i64::try_from(blocks.unit).unwrap_or(i64::MAX);
    next.saturating_mul(unit).saturating_add(blocks.base)
}

/// The frontier of the pool's generation, or `None` when its sequence parent does not exist
/// (a move to it stopped before creating it: no block of it was claimed).
pub(crate) async fn frontier_if_numbered(
    zk: &Zk,
    path: &str,
    blocks: &Blocks,
) -> Result<Option<i64>> {
    match next_block(zk, path, blocks).await {
        Ok(next) => Ok(Some(block_start(blocks, next))),
        Err(ZooidError::NotFound { category }) if category != path => Ok(None),
        Err(err) => Err(err),
    }
}

/// Creates the sequence parent of `generation`, the pool's current one, with the pool node's
/// ACL, provided the pool node is still at `version` (one `multi`); an existing parent is left
/// alone. The only way a sequence parent is created: a pool read from a lagging server, or by a
/// process paused through later moves, never gets a retired generation's numbering back (a
/// claim in it whose reply was lost would be judged not applied). `false`: the pool moved on
/// (read again).
///
/// `read_on` is the session generation and connection `version` was read (or written) on: the
/// check goes only on them, as every write planned on a read does (`zk::ReadOn`). After a wipe
/// (or a rollback) and a restore, the restored pool may stand at `version` again; a parent
/// created there for a generation of the old incarnation would let a give-back or a take of
/// holes planned before the wipe (each checks its generation's parent at data version 0) apply
/// to the restored pool. A session or connection ended is `false`: nothing sent, read again.
/// The `multi` is bound to the read's connection (`Multi::commit_on`), so a reconnection the
/// session layer has not noticed yet is caught where the client writes it.
pub(crate) async fn ensure_parent_at(
    zk: &Zk,
    path: &str,
    generation: u64,
    version: i32,
    read_on: ReadOn,
) -> Result<bool> {
    let parent = sequence_parent(path, generation);
    if !zk.still_on(read_on) {
        return Ok(false);
    }
    let gen = read_on.generation;
    let unreachable = |err: &dyn std::fmt::Display| ZooidError::ConnectionLost {
        category: path.to_string(),
        reason: format!("creating {parent}: {err}"),
    };
    let acl = match zk.get_acl(gen, path).await {
        Ok(got) => got,
        Err(Failure {
            verdict: Verdict::NoNode,
            ..
        }) => {
            return Err(ZooidError::NotFound {
                category: path.to_string(),
            })
        }
        Err(err) => return Err(unreachable(&err)),
    };
    let options = Create::persistent().with_acl(acl);
    // The ACL's read may have waited through a reconnection.
    if !zk.still_on(read_on) {
        return Ok(false);
    }
    let mut multi = Multi::new();
    multi.check(path, version);
    multi.create(&parent, &[], &options);
    match multi.commit_on(&**zk, read_on).await {
        Ok(_) => Ok(true),
        Err(failed) => match failed.verdict() {
            Verdict::NodeExists if failed.index == Some(1) => Ok(true),
            // The client reconnected since the read (the session layer may not know yet).
            Verdict::NotSent => Ok(false),
            Verdict::BadVersion | Verdict::NoNode if failed.index == Some(0) => Ok(false),
            verdict @ Verdict::NotAuthorized => Err(refused(zk, path, verdict, &failed)),
            _ => Err(unreachable(&failed)),
        },
    }
}

/// The final block count of a sealed generation: its sequence parent's child version, read
/// after a `sync` (the seal may have been another process's, and this session's server may
/// lag behind the claims it saw).
pub(crate) async fn sealed_next_block(zk: &Zk, path: &str, blocks: &Blocks) -> Result<i64> {
    let parent = sequence_parent(path, blocks.generation);
    let generation = zk.generation();
    match zk.sync(generation, &parent).await {
        Ok(())
        | Err(Failure {
            verdict: Verdict::NoNode,
            ..
        }) => {}
        Err(err) => {
            return Err(ZooidError::ConnectionLost {
                category: path.to_string(),
                reason: format!("sync of {parent}: {err}"),
            })
        }
    }
    next_block(zk, path, blocks).await
}

/// Seals the generation: creates in it (and takes of holes planned on it) fail from now on.
/// Idempotent. `false`: its sequence parent does not exist, so nothing was sealed (a move to it
/// stopped before creating it); a caller that needs it sealed creates it, at the pool version
/// it planned on, and seals again.
pub(crate) async fn seal(zk: &Zk, path: &str, blocks: &Blocks) -> Result<bool> {
    let parent = sequence_parent(path, blocks.generation);
    let generation = zk.generation();
    match zk.set(generation.into(), &parent, b"sealed", Some(0)).await {
        Ok(_)
        | Err(Failure {
            verdict: Verdict::BadVersion,
            ..
        }) => Ok(true),
        Err(Failure {
            verdict: Verdict::NoNode,
            ..
        }) => Ok(false),
        Err(err) => Err(ZooidError::ConnectionLost {
            category: path.to_string(),
            reason: format!("sealing a block generation: {err}"),
        }),
    }
}

/// After a move of pool `path` applied: retires, in the background (the mover does not wait),
/// every generation numbered before `sealed`, the one the move sealed (kept until the next
/// move: a claim in it whose reply was lost is resolved on its children). Every one, not only
/// `sealed - 1`: a restore or a repair starts a new epoch's numbering, and the generations of
/// the epoch before are below it, not next to it. Best effort, as [`retire`]: the next move
/// tries again.
pub(crate) fn retire_before(zk: &Zk, path: &str, sealed: u64) {
    let (session, path) = (zk.clone(), path.to_string());
    tokio::spawn(async move { retire_all_before(&session, &path, sealed).await });
}

async fn retire_all_before(zk: &Zk, path: &str, sealed: u64) {
    let children = match zk.children(zk.generation(), path).await {
        Ok((children, _)) => children,
        Err(err) => {
            tracing::debug!(category = path, %err, sealed, "listing the block generations to retire");
            return;
        }
    };
    let mut retired: Vec<u64> = children
        .iter()
        .filter_map(|name| generation_of(name))
        .filter(|&generation| generation < sealed)
        .collect();
    retired.sort_unstable();
    for generation in retired {
        retire(zk, path, generation).await;
    }
}

/// Deletes a retired generation's sequence parent and its children (best effort: a failure is
/// logged and the next rotation tries again).
async fn retire(zk: &Zk, path: &str, generation: u64) {
    let parent = sequence_parent(path, generation);
    let gen = zk.generation();
    let children = match zk.children(gen, &parent).await {
        Ok((children, _)) => children,
        Err(Failure {
            verdict: Verdict::NoNode,
            ..
        }) => return,
        Err(err) => {
            tracing::debug!(category = path, %err, generation, "retiring a block generation");
            return;
        }
    };
    // Small deletes with pauses between them: the claims of the new generation queue behind
    // each one on the server, so none may be long.
    for (i, chunk) in children.chunks(RETIRE_BATCH).enumerate() {
        if i > 0 {
            tokio::time::sleep(RETIRE_PAUSE).await;
        }
        let mut multi = Multi::new();
        for child in chunk {
            multi.delete(&format!("{parent}/{child}"), None);
        }
        if let Err(failed) = multi.commit(&**zk, gen).await {
            tracing::debug!(
                category = path,
                generation,
                %failed,
                "retiring a block generation: delete failed"
            );
            return;
        }
    }
    if let Err(err) = zk.delete(gen, &parent, None).await {
        tracing::debug!(category = path, %err, generation, "retiring a block generation");
    }
}
