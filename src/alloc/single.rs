//! The single-node strategy (formats 1 and 2, and every pool of the embedded stores): the free
//! list in the pool node is all there is, taken from and pushed to with compare-and-set
//! (src/alloc/engine.rs). Its plans write nothing on a pool found in another layout: the
//! dispatch point (src/alloc/dispatch.rs) then hands the operation to that layout's strategy.

use std::time::Duration;

use super::core::{Core, Taken};
use super::engine::{Plan, Step};
use super::state::{Slot, Strategy};
use crate::error::{Result, ZooidError};
use crate::format::{OpKind, Pool};
use crate::idset::IdCategory;
use crate::range::{IdRange, InsertError};
use crate::retry::Budget;
use crate::store::Store;

/// Takes up to `n` of the lowest free IDs at or below the ceiling, within `budget`.
pub(super) async fn take<S: Store>(
    core: &Core<S>,
    category: &IdCategory,
    slot: &mut Slot,
    budget: &mut Budget,
    n: u64,
) -> Result<Taken> {
    let plan = take_plan(category, n);
    let step = core
        .update(category, slot, budget, OpKind::Take, true, plan)
        .await?;
    Ok(match step {
        Step::Done { moved, .. } => Taken::Ids(moved),
        Step::Kept => Taken::Moved(Vec::new()),
    })
}

/// Inserts `ranges` into the free list, within `budget`: the ranges pushed, or `None` when the
/// pool was found in another layout.
pub(super) async fn push<S: Store>(
    core: &Core<S>,
    category: &IdCategory,
    slot: &mut Slot,
    budget: &mut Budget,
    ranges: &[IdRange],
) -> Result<Option<Vec<IdRange>>> {
    let plan = push_plan(category, ranges);
    let step = core
        .update(category, slot, budget, OpKind::Push, true, plan)
        .await?;
    Ok(match step {
        Step::Done { moved, .. } => Some(moved),
        Step::Kept => None,
    })
}

/// The plan of a take of up to `n` IDs. With none free: the pool is exhausted (or at its
/// ceiling).
fn take_plan(category: &IdCategory, n: u64) -> impl Fn(&Pool, Strategy) -> Result<Plan> + '_ {
    move |pool, strategy| {
        if strategy != Strategy::Single {
            return Ok(Plan::Keep);
        }
        let mut next = pool.clone();
        let top = pool.ceiling().unwrap_or(pool.bounds().end());
        let taken = next.free_mut().take_lowest_at_most(n, top);
        if taken.is_empty() {
            return Err(exhausted(category, pool));
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

/// The plan of a push of `ranges`, refusing IDs outside the bounds or already free.
fn push_plan<'a>(
    category: &'a IdCategory,
    ranges: &'a [IdRange],
) -> impl Fn(&Pool, Strategy) -> Result<Plan> + 'a {
    move |pool, strategy| {
        if strategy != Strategy::Single {
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
