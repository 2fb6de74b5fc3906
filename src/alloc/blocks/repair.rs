//! Moving a pool in block allocation to a new generation on behalf of its durable record: the
//! keeper's first ceiling, and a repair of a pool behind its record (the keeper's, `repair` and
//! `restore`). The current generation is sealed first, so that no claim lands between reading
//! its frontier and the pool write: the next generation starts above every block claimed (and
//! above the record when repairing), and a first ceiling covers every ID handed out before it.
//! A repair gives up every free ID at or below the record: the hole nodes there.

use super::generations;
use crate::error::{Result, ZooidError};
use crate::format::{Blocks, Pool};
use crate::range::IdRange;
use crate::zk::{ReadOn, Zk, ZooKeeperExt};

/// A pool in block allocation, laid out in its next generation.
#[derive(Debug)]
pub(crate) struct Moved {
    /// The pool node as it will be: the next generation.
    pub next: Pool,
    /// The first ID the sealed generation's blocks did not claim.
    pub frontier: i64,
    /// Free IDs given up: the holes at or below the record, and the fresh IDs up to it that
    /// the next generation's blocks skip.
    pub removed: u64,
}

/// Seals the generation of `pool` (the node as read at `version`) and lays out its move to the
/// next one, starting above its frontier; with `cleared` (a recorded ceiling and the epoch the
/// repair starts), a repair: in the epoch's first new generation, above the ceiling too, and
/// without the hole nodes at or below it (given up before the pool write). `None`: the pool
/// moved on meanwhile (read again).
pub(crate) async fn seal_and_move(
    zk: &Zk,
    path: &str,
    pool: &Pool,
    version: i32,
    read_on: ReadOn,
    cleared: Option<(i64, u64)>,
) -> Result<Option<Moved>> {
    let Some(blocks) = pool.blocks() else {
        return Ok(None);
    };
    let Some(frontier) = sealed_frontier(zk, path, &blocks, version, read_on).await? else {
        return Ok(None);
    };
    let mut next = pool.clone();
    let removed = match cleared {
        Some((ceiling, epoch)) => {
            let skipped: u64 = next
                .clear_through(ceiling, frontier, epoch)
                .iter()
                .map(IdRange::len)
                .sum();
            // A ZooKeeper restored from a snapshot brings back holes taken since: given up
            // before the pool write.
            skipped + give_up_holes(zk, path, ceiling).await?
        }
        None => {
            next.set_blocks(Blocks {
                generation: blocks.next_generation(pool.epoch()),
                base: blocks
                    .base
                    .max(frontier)
                    .min(pool.bounds().end().saturating_add(1)),
                ..blocks
            });
            0
        }
    };
    Ok(Some(Moved {
        next,
        frontier,
        removed,
    }))
}

/// Seals `blocks`' generation and reads its final frontier. A missing sequence parent is
/// created first (while the pool is still at `version`) and sealed, so that no process
/// creates it and claims (or takes holes) in it after the frontier was read. `None`: the pool
/// moved on.
pub(crate) async fn sealed_frontier(
    zk: &Zk,
    path: &str,
    blocks: &Blocks,
    version: i32,
    read_on: ReadOn,
) -> Result<Option<i64>> {
    for _ in 0..2 {
        if !generations::seal(zk, path, blocks).await? {
            // Missing: created (unless the pool moved on), then sealed on the next pass.
            if !generations::ensure_parent_at(zk, path, blocks.generation, version, read_on).await?
            {
                return Ok(None);
            }
            continue;
        }
        match generations::sealed_next_block(zk, path, blocks).await {
            Ok(next) => return Ok(Some(generations::block_start(blocks, next))),
            // Sealed, then gone: the pool moved on and the generation was retired.
            Err(ZooidError::NotFound { category }) if category != path => return Ok(None),
            Err(err) => return Err(err),
        }
    }
    Ok(None)
}

/// After the pool write of a [`Moved`] applied (leaving the pool at `version`): creates the new
/// generation's sequence parent while the pool is still at that version (only on the session
/// and connection `read_on` its version was read on), and retires those before the `sealed`
/// generation (in the background).
pub(crate) async fn finish_move(
    zk: &Zk,
    path: &str,
    sealed: u64,
    moved_to: u64,
    version: i32,
    read_on: ReadOn,
) -> Result<()> {
    generations::ensure_parent_at(zk, path, moved_to, version, read_on).await?;
    generations::retire_before(zk, path, sealed);
    Ok(())
}

/// Gives up the hole nodes of pool `path` (format 4) at or below `ceiling`: each is deleted, and
/// the part of one above `ceiling` created again as a hole, in one `multi` per hole (a crash
/// between two leaks, never duplicates). A hole a take deleted meanwhile is skipped. Returns the
/// IDs given up. Run after the repair sealed the pool's generation and before its pool write:
/// a take of holes checks that its generation is open, so none planned before the seal deletes
/// a hole and creates its remainder after this listing (the remainder would survive the
/// repair); takes after the seal go through a move to a new generation, a pool write that
/// fails the repair's, which then lists again.
pub(crate) async fn give_up_holes(zk: &Zk, path: &str, ceiling: i64) -> Result<u64> {
    let parent = crate::format::holes_parent(path);
    let mut removed = 0;
    for hole in super::hole_ranges(zk, path).await? {
        if hole.start() > ceiling {
            continue;
        }
        let generation = zk.generation();
        let options = crate::zk::Create::persistent();
        let mut multi = crate::zk::Multi::new();
        multi.delete(
            &format!("{parent}/{}", crate::format::hole_name(&hole)),
            None,
        );
        let above = IdRange::new(ceiling.saturating_add(1), hole.end());
        if let Some(above) = above {
            multi.create(
                &format!("{parent}/{}", crate::format::hole_name(&above)),
                &[],
                &options,
            );
        }
        match multi.commit(&**zk, generation).await {
            Ok(_) => {
                removed +=
                    IdRange::new(hole.start(), hole.end().min(ceiling)).map_or(0, |r| r.len());
            }
            Err(failed)
                if failed.index == Some(0) && failed.verdict() == crate::zk::Verdict::NoNode => {}
            Err(failed) => {
                return Err(ZooidError::ConnectionLost {
                    category: path.to_string(),
                    reason: format!("giving up hole {hole}: {}", failed.failure),
                })
            }
        }
    }
    if removed > 0 {
        tracing::error!(
            category = path,
            ceiling,
            removed,
            "hole nodes at or below the durable record given up"
        );
    }
    Ok(removed)
}
