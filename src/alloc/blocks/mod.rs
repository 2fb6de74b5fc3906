//! Block allocation: fresh IDs handed out by operations that cannot conflict.
//!
//! A category created for scale (`Layout::Blocks`, pool format 3) splits its IDs in two:
//! the *holes*, IDs that were handed out and pushed back, stay in the pool node's free list and
//! are taken with compare-and-set as in every category; the IDs above them are cut into blocks of
//! `unit` IDs, and a take claims fresh blocks by creating sequential nodes:
//!
//! ```text
//! multi[ check(P, version V),                 the pool as planned on: no holes to take first
//!        check(P/zooid-blocks-G, version 0),  the generation is not sealed
//!        create(P/zooid-blocks-G/<token>-, PERSISTENT_SEQUENTIAL) x m ]
//! ```
//!
//! ZooKeeper numbers the children of `zooid-blocks-G` from its child version, and a `multi`
//! applies as one transaction, so the `m` creates get `m` consecutive numbers that no other
//! create ever gets: block `s` is `base + s * unit ..= base + (s + 1) * unit - 1`. Claims do not
//! conflict with each other (only a write of the pool node itself, a push or a generation move,
//! fails the claims planned on the version before), so contending processes do not retry, the
//! server serves them in arrival order, and each take is one transaction whatever the contention
//! (docs/DESIGN.md). The check of `P` keeps "lowest first" exact: a take claims a fresh block
//! only when the pool has no free ID for it at that moment.
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
//! - **Pushes** do not write the pool node either: a push creates `P/zooid-returned/r-<token>`
//!   holding its ranges, bumps the data version of `P/zooid-returned` (which every take checks,
//!   as it checks the pool node), and creates an ephemeral marker `m-<token>` that tells its
//!   author after a lost reply whether it applied (the marker is deleted by the author's next
//!   push, or with its session). The next take merges the waiting pushes into the free list in its
//!   own write, which deletes their nodes. So neither takes of fresh blocks nor pushes conflict
//!   with each other.
//! - **Ceiling.** A block above the pool's ceiling is not handed out: its IDs above the ceiling
//!   go to the holes (free IDs above a ceiling wait for it to be raised, as in every pool).

//!
//! The modules: [`take`] (holes then claims, under one hold of the category's slot, and the
//! move to a new generation), [`push`] (pushes left in their own nodes), and the ZooKeeper
//! requests beneath them: [`claims`], [`returns`], [`generations`], [`parts`] (the free list
//! split over several nodes).

pub(crate) mod claims;
pub(crate) mod generations;
pub(crate) mod parts;
pub(crate) mod push;
pub(crate) mod repair;
pub(crate) mod returns;
pub(crate) mod take;

pub use super::state::KEEP_PENDING;
use crate::error::{Result, ZooidError};
use crate::format::Pool;
use crate::range::IdRange;
use crate::zk::{not_authorized, Session, Verdict};

/// A take that gets this block number or above moves the category to a new generation.
pub const ROTATE_AT: i64 = 20_000;

/// The largest number of blocks one take claims (one `multi`).
pub const MAX_BLOCKS_PER_TAKE: u64 = 1_000;

/// The error for block allocation on an embedded store.
pub(crate) fn needs_zookeeper() -> ZooidError {
    ZooidError::InvalidArgument(
        "block allocation (pool format 3) needs a ZooKeeper store, not mem: or file:".into(),
    )
}

/// The error of a block-allocation request on pool `path` that ZooKeeper answered with `err`
/// (read by [`crate::zk::classify`] as `verdict`) and the caller has no reading of its own for:
/// a refusal by the node's ACL is `NotAuthorized`; any other is `ConnectionLost`, as block
/// requests have always reported it (unlike [`crate::zk::to_zooid`], which says `Store`).
pub(crate) fn refused(
    session: &Session,
    path: &str,
    verdict: Verdict,
    err: &dyn std::fmt::Display,
) -> ZooidError {
    match verdict {
        Verdict::NotAuthorized => not_authorized(path, session.options()),
        _ => ZooidError::ConnectionLost {
            category: path.to_string(),
            reason: format!("block claim refused: {err}"),
        },
    }
}

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
/// its generation has claimed (needs the ZooKeeper session). `loaded`: the pool's free-list
/// parts are loaded into its free list (else they are counted by their index, a part that
/// straddles the ceiling whole).
pub async fn usage(
    session: Option<&Session>,
    path: &str,
    pool: &Pool,
    loaded: bool,
) -> Result<Usage> {
    let Some(blocks) = pool.blocks() else {
        return Ok(Usage {
            free: pool.free().count(),
            available: pool.available(),
            high_water: pool.high_water(),
        });
    };
    let session = session.ok_or_else(needs_zookeeper)?;
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
    let holes_available = if loaded {
        pool.free().count_at_most(top)
    } else {
        pool.indexed_free_count_at_most(top)
    };
    let (in_nodes, in_nodes_available) = if blocks.hole_nodes {
        hole_nodes_usage(session, path, top).await?
    } else {
        (0, 0)
    };
    Ok(Usage {
        free: pool.free_count() + in_nodes + unclaimed(last),
        available: holes_available + in_nodes_available + unclaimed(top),
        high_water: (frontier - 1).max(pool.bounds().start() - 1),
    })
}

/// The free IDs a pool in format 4 keeps as hole nodes (src/alloc/holes/): all of them, and
/// those at or below `top` (overlapping holes counted once each; they are rare).
async fn hole_nodes_usage(session: &Session, path: &str, top: i64) -> Result<(u64, u64)> {
    let holes = hole_ranges(session, path).await?;
    Ok(holes.iter().fold((0, 0), |(all, below), hole| {
        let below_top = IdRange::new(hole.start(), hole.end().min(top)).map_or(0, |r| r.len());
        (all + hole.len(), below + below_top)
    }))
}

/// The ranges the hole nodes of pool `path` (format 4) hold, as listed now.
pub(crate) async fn hole_ranges(session: &Session, path: &str) -> Result<Vec<IdRange>> {
    let parent = crate::format::holes_parent(path);
    let (client, generation) = session.client();
    let listed = session.run(generation, client.list_children(&parent)).await;
    let children = match crate::zk::Classified::classified(listed) {
        Ok(children) => children,
        Err((Verdict::NoNode, _)) => Vec::new(),
        Err((verdict, err)) => return Err(refused(session, path, verdict, &err)),
    };
    Ok(children
        .iter()
        .filter_map(|name| crate::format::hole_of(name))
        .collect())
}
