//! Block allocation (pool format 4): fresh IDs handed out by operations that cannot conflict.
//!
//! A category in block allocation splits its IDs in two: the *holes*, IDs that were handed out
//! and pushed back, are nodes of their own (src/alloc/holes/); the IDs above them are cut into
//! blocks of `unit` IDs, and a take claims fresh blocks by creating sequential nodes:
//!
//! ```text
//! multi[ check(P/zooid-blocks-G, version 0),  the generation is not sealed
//!        create(P/zooid-blocks-G/<token>-, PERSISTENT_SEQUENTIAL) x m ]
//! ```
//!
//! The pool node is not checked: the claim is sent only on the session and connection the pool
//! was read on, every pool write that narrows what a claim planned before it may hand out (a
//! first ceiling, a repair, a move to the next generation) seals the generation first, and a
//! ceiling raised meanwhile only lets through more than the claim hands out.
//!
//! ZooKeeper numbers the children of `zooid-blocks-G` from its child version, and a `multi`
//! applies as one transaction, so the `m` creates get `m` consecutive numbers that no other
//! create ever gets: block `s` is `base + s * unit ..= base + (s + 1) * unit - 1`. Claims do not
//! conflict with each other (only a seal of their generation fails them), so contending
//! processes do not retry, the server serves them in arrival order, and each take is one
//! transaction whatever the contention (docs/DESIGN.md).
//!
//! - **Lost reply.** The created names start with the take's random token: after a `sync`, the
//!   token among the children says whether the take applied and which numbers it got. The nodes
//!   are persistent, so this works after the session was lost too, once it has certainly expired
//!   (a session timeout later): no request of an expired session applies any more. When the
//!   operation's deadline runs out first, or the generation's children were deleted (a retire
//!   under way: the listing cannot tell), the outcome is unknown, and the blocks, if claimed,
//!   stay unused (never handed out twice), named where found and bounded otherwise
//!   (`claims::Doubt`).
//! - **Generations.** Children are never deleted while their generation is in use (a delete would
//!   also advance the numbering). When a take gets number [`ROTATE_AT`] or above, its process
//!   seals the generation (`setData` on `zooid-blocks-G`, after which the `check` above fails),
//!   reads the final child version `c`, and moves the pool to generation `G + 1` with base
//!   `base + c * unit` in one compare-and-set that also creates `zooid-blocks-(G+1)`. Any process
//!   that finds a sealed generation finishes the move, so a crash mid-way stops nothing. The
//!   children of generation `G - 1` are deleted then, a whole generation after its last take.
//! - **Ceiling.** A block above the pool's ceiling is not handed out: its IDs above the ceiling
//!   go back as holes (free IDs above a ceiling wait for it to be raised, as in every pool).
//!
//! The modules: [`take`] (fresh blocks under one hold of the category's slot, and the move to a
//! new generation), [`push`] (a push checked against the pool, then left as hole nodes), and the
//! ZooKeeper requests beneath them: [`claims`], [`generations`], [`repair`].

pub(crate) mod claims;
pub(crate) mod generations;
mod nodes;
pub(crate) mod push;
pub(crate) mod repair;
pub(crate) mod take;

use crate::error::Result;
use crate::format::Pool;
use crate::range::IdRange;
use crate::zk::{Failure, Verdict, Zk, ZooKeeperExt};
pub(crate) use nodes::{ensure_node, refused};

/// A take that gets this block number or above moves the category to a new generation.
pub const ROTATE_AT: i64 = 20_000;

/// The largest number of blocks one take claims (one `multi`).
pub const MAX_BLOCKS_PER_TAKE: u64 = 1_000;

/// What a pool holds, counting the blocks claimed since the node was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    /// Free IDs: holes and blocks not yet claimed.
    pub free: u64,
    /// Free IDs a take may hand out now (at or below the ceiling).
    pub available: u64,
    /// The highest ID that may have been handed out.
    pub high_water: i64,
}

/// The usage of `pool` (node `path`): for a pool in block allocation, reads how many blocks
/// its generation has claimed and lists its holes (needs the ZooKeeper session).
pub async fn usage(zk: Option<&Zk>, path: &str, pool: &Pool) -> Result<Usage> {
    let Some(blocks) = pool.blocks() else {
        return Ok(Usage {
            free: pool.free().count(),
            available: pool.available(),
            high_water: pool.high_water(),
        });
    };
    let session = zk.ok_or_else(crate::alloc::core::needs_zookeeper)?;
    // No sequence parent: a move to this generation stopped before creating it, so no block of
    // it was claimed yet (a take or the keeper creates it).
    let frontier = generations::frontier_if_numbered(session, path, &blocks)
        .await?
        .unwrap_or(blocks.base);
    let last = pool.bounds().end();
    let top = pool.ceiling().unwrap_or(last).min(last);
    let unclaimed = |upto: i64| {
        if upto >= frontier {
            upto.abs_diff(frontier) + 1
        } else {
            0
        }
    };
    let (in_nodes, in_nodes_available) = hole_nodes_usage(session, path, top).await?;
    Ok(Usage {
        free: in_nodes + unclaimed(last),
        available: in_nodes_available + unclaimed(top),
        high_water: (frontier - 1).max(pool.bounds().start() - 1),
    })
}

/// The free IDs a pool in format 4 keeps as hole nodes (src/alloc/holes/): all of them, and
/// those at or below `top` (overlapping holes counted once each; they are rare).
async fn hole_nodes_usage(zk: &Zk, path: &str, top: i64) -> Result<(u64, u64)> {
    let holes = hole_ranges(zk, path).await?;
    Ok(holes.iter().fold((0, 0), |(all, below), hole| {
        let below_top = IdRange::new(hole.start(), hole.end().min(top)).map_or(0, |r| r.len());
        (all + hole.len(), below + below_top)
    }))
}

/// The ranges the hole nodes of pool `path` (format 4) hold, as listed now.
pub(crate) async fn hole_ranges(zk: &Zk, path: &str) -> Result<Vec<IdRange>> {
    let parent = crate::format::holes_parent(path);
    let generation = zk.generation();
    let listed = zk.children(generation, &parent).await;
    let children = match listed {
        Ok((children, _)) => children,
        Err(Failure {
            verdict: Verdict::NoNode,
            ..
        }) => Vec::new(),
        Err(err @ Failure { verdict, .. }) => return Err(refused(zk, path, verdict, &err)),
    };
    Ok(children
        .iter()
        .filter_map(|name| crate::format::hole_of(name))
        .collect())
}
