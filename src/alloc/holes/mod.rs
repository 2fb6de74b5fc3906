//! Hole nodes (pool format 4, `Layout::HoleNodes`), the layout for scale on ZooKeeper, built
//! for the workload of the seeds: thousands of tasks that take a batch and push back their leftovers.
//!
//! Fresh IDs come in blocks claimed by sequential creates (src/alloc/blocks/): those claims
//! never conflict. Recycled IDs never go back into the pool node (a take that merged pushes into
//! it with compare-and-set would conflict with every other take: 9.5 failed writes per take at
//! 32 processes, as the retired format 3 measured): every pushed range stays a node of its own,
//! named by its range, and a take claims holes by deleting their nodes:
//!
//! ```text
//! push:  create(P/zooid-holes/h-START-END)                   one range; a multi of them for more
//! take:  multi[ check(P, version V),                          the pool as planned on
//!               check(P/zooid-blocks-G, version 0),           the generation is open
//!               delete(P/zooid-holes/h-...) x holes chosen,
//!               create(P/zooid-holes/h-...) x what is left of them,
//!               setData(P/zooid-returned/m-NAME, TOKEN) ]     the author's receipt
//! ```
//!
//! A delete succeeds for exactly one take, so a hole is handed out once; takes that choose
//! different holes do not conflict. Node names sort by ID, so one listing (`getChildren`, cached
//! under a child watch while nobody changes the holes) is all a take reads.
//!
//! - **Which holes.** A take hands out holes first: all it wants when the holes it listed cover
//!   it, else as many as leave whole blocks to claim ([`choice::hole_amount`]: the seed's worked
//!   example, holes of 3,000 and a take of 10,000, gets them and 7 blocks), else none: holes of
//!   100 wait for a take they cover, since cutting a fresh block would leave its rest behind as
//!   one more write. A take of whole blocks leaves a hole another process pushed moments ago to
//!   that process for [`young::LEFT_TO_PUSHER_FOR`] (it takes its own holes back; a first look
//!   takes any). Among the holes, lowest first, unless this process lost a race for a hole
//!   less than a second ago and has not won 8 claims since; then it starts at one of the lowest
//!   64 groups of holes that each cover the take ([`choice::group_start`]), so that contending
//!   takes choose apart. After `k` races lost in a row its takes of whole blocks also leave the
//!   holes to others for a random number of its next takes below `2^k` (at most 31, for at most
//!   a second; `HoleRaces` in src/alloc/holes/memory.rs): binary exponential backoff.
//!   A take makes at most one attempt on holes: when another take deleted one of its holes
//!   first, it claims fresh blocks. So a take costs at most one failed write, and pushes none.
//!   Except at a process's first look (no listing yet, no race lost of late: each task of a job
//!   that starts at once): all such takes choose the lowest holes, so one that lost tries once
//!   more at once, on its listing without the holes it lost, from one of all the groups that
//!   cover it at random ([`choice::FIRST_LOOK_GROUPS`]; any hole is below the fresh blocks it
//!   would claim instead): at most two failed writes for such a take.
//! - **Lost replies.** A take of holes carries a receipt: the author's ephemeral node, created
//!   by its first take on a session (`create` instead of the `setData` above) and set to each
//!   take's token. On the take's own session, after a `sync`, the receipt holds its token
//!   exactly when it applied. With that session given up, once the servers confirmed it can
//!   write no more ([`crate::zk::Session::confirm_gone`]): a take whose holes are all still
//!   there did not apply. A push carries none: once its fate is decided, its holes all there
//!   mean it applied (a hole not there may have been taken since). Otherwise the outcome is
//!   unknown, and the IDs are reported leaked (`OutcomeUnknown`), never handed out twice.
//! - **Double pushes.** A push of a range that is free as a node already fails at the create
//!   (`AlreadyFree`); a push overlapping a hole the pusher knows (its listing, with its own pushes) is refused too. Overlapping
//!   holes that got in anyway are taken together, counted once.
//!
//! The modules: [`listing`] (the holes, under a child watch), [`choice`] (which holes a take
//! claims: pure), [`young`] (which holes are left to their pusher: pure), [`requests`] (the two
//! `multi`s and their lost replies), [`memory`] (what the strategy keeps of a category: the
//! listing, the races), [`take`] and [`push`] (the service's side).

use crate::alloc::blocks::push::Pushed;
use crate::alloc::core::{OnZooKeeper, Taken};
use crate::alloc::state::{Held, Slot};
use crate::error::Result;
use crate::idset::IdCategory;
use crate::range::IdRange;
use crate::retry::Budget;
use crate::store::Store;

pub(crate) mod choice;
pub(crate) mod listing;
pub(crate) mod memory;
pub(crate) mod push;
pub(crate) mod requests;
pub(crate) mod take;
pub(crate) mod young;

/// A take of `n` IDs from a pool in format 4: holes, then fresh blocks ([`take`]).
pub(crate) async fn take<S: Store>(
    on: &OnZooKeeper<'_, S>,
    category: &IdCategory,
    slot: &mut Slot,
    n: u64,
) -> Result<Taken> {
    on.take_hole_nodes(category, slot, n).await
}

/// A push of `ranges` to a pool in format 4: checked against the pool as the slot holds it,
/// then written as hole nodes without the slot (others take meanwhile); IDs above the frontier
/// of the generation checked against come back as [`Pushed::AboveFrontier`].
pub(crate) async fn push<S: Store>(
    on: &OnZooKeeper<'_, S>,
    category: &IdCategory,
    mut slot: Held,
    budget: &mut Budget,
    ranges: &[IdRange],
) -> Result<Pushed> {
    let state = on.current(category, &mut slot, budget).await?;
    let checked = on.check_push(category, state, ranges)?;
    drop(slot);
    on.push_blocks(category, ranges, checked).await
}
