//! The keeper's writes of a pool node (a raise of its ceiling, a repair, the move of a block
//! pool to its next generation), planned here like every other pool write and sent by the
//! caller under its fence (the keeper's leadership: src/keeper/raise.rs). The allocator is the
//! one module that lays out a pool node; the keeper decides the ceiling and holds the fence.

use super::blocks::repair::{self, Moved};
use crate::error::{Result, ZooidError};
use crate::format::{OpKind, OpRecord, OpToken, Pool, DEFAULT_OP_LOG_LEN};
use crate::zk::{ReadOn, Zk};

/// What a raise changes besides the ceiling.
pub(crate) enum Change {
    /// Nothing else.
    Ceiling,
    /// A repair of a single-node pool: its free IDs at or below `through` given up.
    Clear { through: i64 },
    /// A pool in block allocation moved to its next generation above its sealed frontier; with
    /// `cleared` (a recorded ceiling and the epoch the repair starts), a repair
    /// ([`repair::seal_and_move`]).
    Move { cleared: Option<(i64, u64)> },
}

/// A pool write planned for the keeper: `data` for node `path`, at data version `version`.
pub(crate) struct PlannedWrite {
    /// The pool node.
    pub path: String,
    /// The pool as it will be, rendered.
    pub data: Vec<u8>,
    /// The data version the write is conditioned on (the pool as read).
    pub version: i32,
    /// The session generation and connection the pool was read on: the new generation's
    /// sequence parent is created only on them ([`finish`]).
    pub read_on: ReadOn,
    /// The pool as it will be.
    pub next: Pool,
    /// Free IDs a repair gave up.
    pub removed: u64,
    /// The block generation the pool moves to.
    pub moved_to: Option<u64>,
    /// The block generation the move sealed.
    pub sealed: Option<u64>,
}

/// What planning a raise came to.
pub(crate) enum Planned {
    /// This write, to be sent under the caller's fence, then [`finish`]ed.
    Write(Box<PlannedWrite>),
    /// The pool moved on meanwhile (another write, a move of its blocks), or blocks were
    /// claimed above `ceiling` while it was made durable (`claimed_to`, the last ID claimed):
    /// read it again and plan on what it holds then.
    Again { claimed_to: Option<i64> },
}

/// Plans the write that sets `pool`'s ceiling to `ceiling` (the pool node `path` as read at
/// `version`), with `change` laid out (a move seals the generation first) and, for a repair,
/// the epoch it starts (`epoch`); the operation is recorded in the pool's log like every write.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn plan_raise(
    zk: &Zk,
    path: &str,
    pool: &Pool,
    version: i32,
    read_on: ReadOn,
    ceiling: i64,
    change: Change,
    epoch: Option<u64>,
) -> Result<Planned> {
    let (mut next, removed, moved_to) = match change {
        Change::Ceiling => (pool.clone(), 0, None),
        Change::Clear { through } => {
            let mut next = pool.clone();
            let removed = next.clear_through(through, i64::MIN, epoch.unwrap_or(pool.epoch()));
            (next, removed.iter().map(|r| r.len()).sum(), None)
        }
        Change::Move { cleared } => {
            let Some(Moved {
                next,
                frontier,
                removed,
            }) = repair::seal_and_move(zk, path, pool, version, read_on, cleared).await?
            else {
                return Ok(Planned::Again { claimed_to: None });
            };
            if frontier - 1 > ceiling {
                // Claims passed the ceiling while it was made durable: plan again on the sealed
                // generation (its frontier no longer moves).
                return Ok(Planned::Again {
                    claimed_to: Some(frontier - 1),
                });
            }
            let moved_to = next.blocks().map(|b| b.generation);
            (next, removed, moved_to)
        }
    };
    let Some(next_version) = version.checked_add(1) else {
        return Err(ZooidError::VersionWrap {
            path: path.to_string(),
            version,
        });
    };
    if let Some(epoch) = epoch {
        next.set_epoch(epoch);
    }
    next.set_ceiling(Some(ceiling));
    let old = pool.ceiling();
    // Keep as many entries as the clients keep (a longer `op_log_len` stays longer).
    let keep = pool.log().count().max(DEFAULT_OP_LOG_LEN);
    next.record(
        OpRecord {
            version: pool.version_at(next_version),
            token: OpToken::random(),
            kind: OpKind::Ceiling,
            count: ceiling.abs_diff(old.unwrap_or(ceiling)),
        },
        keep,
    );
    Ok(Planned::Write(Box::new(PlannedWrite {
        path: path.to_string(),
        data: next.render().into_bytes(),
        version,
        read_on,
        next,
        removed,
        moved_to,
        sealed: moved_to.and(pool.blocks().map(|b| b.generation)),
    })))
}

/// After `write` applied: the sequence parent of the generation it moved the pool to (a take
/// creates it too, so a failure here only delays it).
pub(crate) async fn finish(zk: &Zk, write: &PlannedWrite) -> Result<()> {
    match (write.sealed, write.moved_to) {
        (Some(sealed), Some(moved_to)) => {
            repair::finish_move(
                zk,
                &write.path,
                sealed,
                moved_to,
                write.version + 1,
                write.read_on,
            )
            .await
        }
        _ => Ok(()),
    }
}
