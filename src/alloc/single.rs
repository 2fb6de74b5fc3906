//! The single-node strategy: the free list in the pool node is all there is, taken from and
//! pushed to with compare-and-set (src/alloc/engine.rs). On a pool in block allocation (whose
//! node holds no free list) the plans write nothing, and the take or push goes on to the holes
//! and blocks.

use std::time::Duration;

use super::engine::Plan;
use super::state::Strategy;
use crate::error::{Result, ZooidError};
use crate::format::Pool;
use crate::idset::IdCategory;
use crate::range::{IdRange, InsertError};

/// Takes up to `n` of the lowest free IDs at or below the ceiling. With none: a single-node
/// pool is exhausted (or at its ceiling), a pool in block allocation writes nothing and its
/// take goes on to fresh blocks.
pub(crate) fn take(category: &IdCategory, n: u64) -> impl Fn(&Pool, Strategy) -> Result<Plan> + '_ {
    move |pool, strategy| {
        let mut next = pool.clone();
        let top = pool.ceiling().unwrap_or(pool.bounds().end());
        let taken = next.free_mut().take_lowest_at_most(n, top);
        if taken.is_empty() {
            return match strategy {
                Strategy::Blocks(_) => Ok(Plan::Keep),
                Strategy::Single => Err(exhausted(category, pool)),
            };
        }
        let count = taken.iter().map(IdRange::len).sum();
        Ok(Plan::Write {
            next,
            moved: taken,
            count,
        })
    }
}

/// Why a take found no free ID: none left, or none at or below the ceiling.
fn exhausted(category: &IdCategory, pool: &Pool) -> ZooidError {
    let name = category.name().to_string();
    match pool.ceiling() {
        Some(ceiling) if !pool.free().is_empty() => ZooidError::ReservationExhausted {
            category: name,
            ceiling,
            waited: Duration::ZERO,
        },
        _ => ZooidError::Exhausted { category: name },
    }
}

/// Inserts `ranges` into the free list, refusing IDs outside the bounds or already free. A pool
/// in block allocation writes nothing: its pushes become hole nodes (src/alloc/holes/push.rs).
pub(crate) fn push<'a>(
    category: &'a IdCategory,
    ranges: &'a [IdRange],
) -> impl Fn(&Pool, Strategy) -> Result<Plan> + 'a {
    move |pool, strategy| {
        if let Strategy::Blocks(_) = strategy {
            return Ok(Plan::Keep);
        }
        let name = || category.name().to_string();
        if let Some(range) = ranges.iter().find(|r| !pool.bounds().covers(r)) {
            return Err(ZooidError::OutOfBounds {
                category: name(),
                range: *range,
                bounds: pool.bounds(),
            });
        }
        let mut next = pool.clone();
        next.free_mut()
            .insert_all(ranges)
            .map_err(|InsertError::Overlap(range)| ZooidError::AlreadyFree {
                category: name(),
                range,
            })?;
        Ok(Plan::Write {
            next,
            moved: ranges.to_vec(),
            count: ranges.iter().map(IdRange::len).sum(),
        })
    }
}
