//! Claims of fresh blocks: one `multi` that checks the pool as planned on and creates `m`
//! sequential nodes, which get `m` consecutive numbers; a lost reply is resolved by the claim's
//! token among the generation's children (src/alloc/blocks/mod.rs). A claim whose fate cannot be
//! told says where its blocks may lie ([`Doubt`]): the ones found by its token exactly, the rest
//! within its generation.

use super::nodes::refused;
use crate::error::{LeakBound, Result, ZooidError};
use crate::format::{sequence_of, sequence_parent, Blocks, OpToken, Pool};
use crate::range::{IdRange, RangeSet};
use crate::retry::Budget;
use crate::zk::{
    Create, Failure, Fate, Mode, Multi, OpResult, ReadOn, Stat, Verdict, Zk, ZooKeeperExt,
};

/// What one attempt to claim blocks did.
#[derive(Debug)]
pub(crate) enum Claim {
    /// The take owns blocks `first..first + count` of the generation.
    Granted { first: i64 },
    /// The claim was not applied on the session it was planned on (which ended, or whose lost reply was found not applied): plan
    /// again, on the pool as it is now. A plan never crosses a session.
    Changed,
    /// The generation is sealed: move on to the next one, then try again.
    Sealed,
    /// The sequence parent is missing (the pool moved on, was recreated or deleted): read the
    /// pool again.
    Missing,
    /// A lost reply could not be resolved: the blocks, if claimed, stay unused (never handed
    /// out); the doubt says where they may lie.
    Unknown(Doubt),
}

/// Where the blocks of a claim of `count` whose outcome is unknown may lie, in block numbers of
/// its generation.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Doubt {
    /// Why the outcome could not be told.
    pub(crate) why: String,
    /// Blocks found under the claim's token: certainly its own.
    found: Vec<i64>,
    /// How many of its blocks may exist besides those found...
    missing: u64,
    /// ...among block numbers `first..end` (`None`: up to the category's end)...
    first: i64,
    end: Option<i64>,
    /// ...and below this ID, the base of a later generation, when known.
    below: Option<i64>,
}

impl Doubt {
    /// Nothing was listed: any `count` blocks of the generation, or none.
    fn in_doubt(why: String, count: u32) -> Self {
        Doubt {
            why,
            found: Vec::new(),
            missing: u64::from(count),
            first: 0,
            end: None,
            below: None,
        }
    }

    /// The IDs concerned in `blocks`' generation of a category ending at `last`: those of the
    /// blocks found (named), and a bound for the ones not found (`None`: none may exist, or
    /// none lies inside the category).
    pub(crate) fn report(&self, blocks: &Blocks, last: i64) -> (Vec<IdRange>, Option<LeakBound>) {
        let mut named = RangeSet::new();
        for &seq in &self.found {
            if let Some(block) = blocks.block(seq, last) {
                // Blocks are disjoint: cannot overlap.
                let _ = named.insert_all(&[block]);
            }
        }
        (named.ranges().to_vec(), self.bound(blocks, last))
    }

    fn bound(&self, blocks: &Blocks, last: i64) -> Option<LeakBound> {
        if self.missing == 0 {
            return None;
        }
        let start = blocks.block(self.first, last)?.start();
        let mut end = match self.end {
            Some(end) if end <= self.first => return None,
            Some(end) => blocks.block(end - 1, last).map_or(last, |b| b.end()),
            None => last,
        };
        if let Some(below) = self.below {
            end = end.min(below.saturating_sub(1));
        }
        let within = IdRange::new(start, end)?;
        let at_most = self.missing.saturating_mul(blocks.unit).min(within.len());
        Some(LeakBound { at_most, within })
    }
}

/// Claims `count` consecutive blocks of `blocks.generation` under pool `path`, if that
/// generation is still open, on the session generation and connection `planned` the pool was
/// read on; resolves a lost reply within a deadline of its own. The pool node is not checked:
/// every pool write that narrows what a claim may hand out (a first ceiling, a repair, a move)
/// seals the generation first, so a claim planned on the pool before such a write fails (a take
/// of holes, sent again on a new session, checks the pool node too). The claim is sent once, and only bound to the session and
/// connection it was planned on (`Multi::commit_on`): after a session ended, a reconnection, or
/// a lost reply found not applied, the caller reads the pool and plans again (a pool restored
/// after ZooKeeper lost its data may sit at the same version with another base).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn claim(
    zk: &Zk,
    path: &str,
    blocks: &Blocks,
    count: u32,
    planned: ReadOn,
    budget: &mut Budget,
) -> Result<Claim> {
    let parent = sequence_parent(path, blocks.generation);
    let token = OpToken::random();
    let prefix = format!("{token}-");
    let name = format!("{parent}/{prefix}");
    let generation = zk.generation();
    if generation != planned.generation {
        return Ok(Claim::Changed);
    }
    let options = Create::new(Mode::PersistentSequential);
    let mut multi = Multi::new();
    // Op 0 checks that the generation is open.
    multi.check(&parent, 0);
    for _ in 0..count {
        multi.create(&name, &[], &options);
    }
    let failed = match multi.commit_on(&**zk, planned).await {
        Ok(results) => return granted(path, &results, count).map(|first| Claim::Granted { first }),
        Err(failed) => failed,
    };
    let verdict = failed.verdict();
    match (failed.index, verdict) {
        (Some(0), Verdict::BadVersion) => Ok(Claim::Sealed),
        (Some(_), Verdict::NoNode) => Ok(Claim::Missing),
        // Not sent: the client reconnected since the pool was read. Plan again on a new read.
        (_, Verdict::NotSent) => Ok(Claim::Changed),
        // Not applied; the session it was planned on is gone (the commit told the session
        // layer): plan again on the new one.
        #[cfg(not(zooid_mutant = "claim_resent_across_restore"))]
        (_, Verdict::Expired | Verdict::Closed) => Ok(Claim::Changed),
        #[cfg(zooid_mutant = "claim_resent_across_restore")]
        (_, Verdict::Expired | Verdict::Closed) => {
            mutant_resend(zk, path, blocks, count, budget).await
        }
        (_, Verdict::Unknown) => {
            let err = &failed.failure;
            tracing::warn!(category = path, %err, op = "take", "reply lost; resolving the outcome");
            let lookup = Lookup {
                path,
                parent: &parent,
                prefix: &prefix,
                generation: blocks.generation,
                count,
            };
            match resolve(zk, generation, &lookup, budget).await {
                Resolved::Applied(first) => Ok(Claim::Granted { first }),
                #[cfg(not(zooid_mutant = "claim_resent_across_restore"))]
                Resolved::NotApplied => Ok(Claim::Changed),
                #[cfg(zooid_mutant = "claim_resent_across_restore")]
                Resolved::NotApplied => {
                    mutant_resend(zk, path, blocks, count, budget).await
                }
                Resolved::Unknown(doubt) => Ok(Claim::Unknown(doubt)),
            }
        }
        _ => Err(refused(zk, path, verdict, &failed.failure)),
    }
}

/// The mutant `claim_resent_across_restore` (tests/sim/README.md): the claim as planned sent
/// again on the next session, as before a claim was tied to its session.
#[cfg(zooid_mutant = "claim_resent_across_restore")]
fn mutant_resend<'a>(
    zk: &'a Zk,
    path: &'a str,
    blocks: &'a Blocks,
    count: u32,
    budget: &'a mut Budget,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Claim>> + Send + 'a>> {
    Box::pin(async move {
        if !budget.try_attempt() {
            return Ok(Claim::Changed);
        }
        budget.backoff().await;
        claim(zk, path, blocks, count, zk.read_on(), budget).await
    })
}

/// What a lookup of a lost claim found.
#[derive(Debug, PartialEq, Eq)]
enum Resolved {
    Applied(i64),
    NotApplied,
    Unknown(Doubt),
}

/// What a lost claim is looked for by.
struct Lookup<'a> {
    /// The pool node.
    path: &'a str,
    /// The sequence parent of generation `generation`, and the claim's name prefix under it.
    parent: &'a str,
    prefix: &'a str,
    generation: u64,
    /// The blocks claimed.
    count: u32,
}

/// Looks for the claim's token among the sequence parent's children. The claimed nodes are
/// persistent, so the lookup works on a later session too: once the servers confirmed that the
/// claim's own session can no longer write ([`Session::confirm_gone`]), a `sync` and a listing
/// decide. No node found means "not applied" only while no child of the generation was ever
/// deleted (its child version equals its number of children): a generation being retired
/// loses its children before its node, and the claim's fate cannot be told then. Not confirmed
/// within a deadline of its own ([`Budget::to_resolve`]): unknown (the blocks, if claimed, stay
/// unused).
async fn resolve(zk: &Zk, generation: u64, lookup: &Lookup<'_>, operation: &Budget) -> Resolved {
    let mut budget = operation.to_resolve();
    let mut confirmed = false;
    loop {
        if budget.expired() {
            let why = format!("ZooKeeper unreachable for {:?}", budget.deadline());
            return Resolved::Unknown(Doubt::in_doubt(why, lookup.count));
        }
        budget.try_attempt();
        let replaced = zk.is_gone_generation(generation);
        if replaced && !confirmed {
            let deadline = tokio::time::Instant::now() + budget.remaining();
            if let Err(in_doubt) = zk.confirm_gone(generation, deadline).await {
                return Resolved::Unknown(Doubt::in_doubt(in_doubt.to_string(), lookup.count));
            }
            confirmed = true;
        }
        let current = zk.generation();
        let parent = lookup.parent;
        let listing = async {
            // Requests of one session apply in order, and none applies after the session
            // expired: after the sync, the claim has applied or never will.
            zk.sync(current, parent).await?;
            zk.children(current, parent).await
        };
        match listing.await {
            Ok((children, stat)) => {
                let given_up = !replaced && zk.is_gone_generation(generation);
                match judge(lookup, &children, &stat, given_up) {
                    Judged::Done(resolved) => return resolved,
                    // Given up meanwhile: confirm its end, then look again.
                    Judged::LookAgain => continue,
                    Judged::Retired(mut doubt) => {
                        doubt.below = later_base(zk, lookup).await;
                        return Resolved::Unknown(doubt);
                    }
                }
            }
            Err(Failure {
                verdict: Verdict::NoNode,
                ..
            }) => {
                let why = "the generation's sequence node is gone (retired)".to_string();
                let mut doubt = Doubt::in_doubt(why, lookup.count);
                doubt.below = later_base(zk, lookup).await;
                return Resolved::Unknown(doubt);
            }
            Err(err @ Failure { verdict, .. }) if verdict.fate() == Fate::Refused => {
                return Resolved::Unknown(Doubt::in_doubt(err.to_string(), lookup.count))
            }
            Err(_) => budget.backoff().await,
        }
    }
}

/// What a listing of the generation says about the claim.
#[derive(Debug, PartialEq, Eq)]
enum Judged {
    Done(Resolved),
    /// Nothing found, but the claim's session was given up during the lookup.
    LookAgain,
    /// Not all of the claim's nodes found, and children of the generation were deleted: the
    /// rest may be among them (the bound still lacks the next generation's base).
    Retired(Doubt),
}

/// Judges a listing (`children` of the sequence parent, whose stat is `stat`, read after a
/// `sync`): the claim's blocks are the children under its token. `given_up`: the claim's
/// session was given up while it was listed.
fn judge(lookup: &Lookup<'_>, children: &[String], stat: &Stat, given_up: bool) -> Judged {
    let count = lookup.count;
    let mut seqs: Vec<i64> = children
        .iter()
        .filter_map(|c| c.strip_prefix(lookup.prefix))
        .filter_map(|s| s.parse().ok())
        .collect();
    seqs.sort_unstable();
    // Every create and every delete of a child advances the child version: equal to the
    // number of children, none was ever deleted, and the listing shows every claim.
    let untouched = i64::from(stat.cversion) == children.len() as i64;
    let (Some(&low), Some(&high)) = (seqs.first(), seqs.last()) else {
        if given_up {
            return Judged::LookAgain;
        }
        if untouched {
            return Judged::Done(Resolved::NotApplied);
        }
        return Judged::Retired(Doubt {
            why: format!(
                "no block of the claim found, and {} blocks of the generation deleted (retired)",
                // The child version counts creates and deletes, the listing their difference.
                (i64::from(stat.cversion) - children.len() as i64) / 2
            ),
            found: Vec::new(),
            missing: u64::from(count),
            first: 0,
            end: Some(i64::from(stat.cversion)),
            below: None,
        });
    };
    if let Some(first) = consecutive(&seqs, count) {
        return Judged::Done(Resolved::Applied(first));
    }
    let why = format!("found blocks {seqs:?} of a claim of {count}");
    let missing = u64::from(count).saturating_sub(seqs.len() as u64);
    if untouched || missing == 0 {
        // Every node of the claim is listed: the blocks found are all it got.
        return Judged::Done(Resolved::Unknown(Doubt {
            why,
            found: seqs,
            missing: 0,
            first: 0,
            end: None,
            below: None,
        }));
    }
    // Its blocks are consecutive: the ones deleted lie next to the ones found, short of any
    // block another claim holds.
    let span = i64::from(count) - 1;
    let others: Vec<i64> = children
        .iter()
        .filter(|c| !c.starts_with(lookup.prefix))
        .filter_map(|c| sequence_of(c))
        .collect();
    let first = (high - span).max(0);
    let first = others
        .iter()
        .filter(|&&s| s >= first && s < low)
        .map(|s| s + 1)
        .max()
        .unwrap_or(first);
    let end = low + span + 1;
    let end = others
        .iter()
        .filter(|&&s| s > high && s < end)
        .min()
        .copied()
        .unwrap_or(end);
    Judged::Retired(Doubt {
        why,
        found: seqs,
        missing,
        first,
        end: Some(end),
        below: None,
    })
}

/// The base of the pool's generation when it is later than the claim's: every block of the
/// claim's generation lies below it. `None` when it cannot be read or is not later.
async fn later_base(zk: &Zk, lookup: &Lookup<'_>) -> Option<i64> {
    let current = zk.generation();
    let (data, _) = zk.get(current, lookup.path).await.ok()?;
    let blocks = Pool::parse(lookup.path, &data).ok()?.blocks()?;
    (blocks.generation > lookup.generation).then_some(blocks.base)
}

/// The first of `count` consecutive numbers, if `seqs` (ascending) is exactly that.
fn consecutive(seqs: &[i64], count: u32) -> Option<i64> {
    let first = *seqs.first()?;
    let expected = (0..i64::from(count)).map(|i| first + i);
    (seqs.len() == count as usize && seqs.iter().copied().eq(expected)).then_some(first)
}

/// The block numbers a successful claim got.
fn granted(path: &str, results: &[OpResult], count: u32) -> Result<i64> {
    let mut seqs: Vec<i64> = results
        .iter()
        .filter_map(|r| match r {
            OpResult::Create { path, .. } => sequence_of(path),
            _ => None,
        })
        .collect();
    seqs.sort_unstable();
    consecutive(&seqs, count).ok_or_else(|| ZooidError::CorruptPool {
        path: path.to_string(),
        line: 0,
        content: String::new(),
        reason: format!("a block claim got non-consecutive numbers {seqs:?}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(count: u32) -> Lookup<'static> {
        Lookup {
            path: "/c",
            parent: "/c/zooid-blocks-3",
            prefix: "0123456789abcdef-",
            generation: 3,
            count,
        }
    }

    fn stat(cversion: i32) -> Stat {
        Stat {
            czxid: 1,
            mzxid: 1,
            pzxid: 1,
            ctime: 0,
            mtime: 0,
            version: 0,
            cversion,
            aversion: 0,
            ephemeral_owner: 0,
            data_length: 0,
            num_children: 0,
        }
    }

    fn names(own: &[i64], others: &[i64]) -> Vec<String> {
        let own = own.iter().map(|s| format!("0123456789abcdef-{s:010}"));
        let others = others.iter().map(|s| format!("fedcba9876543210-{s:010}"));
        own.chain(others).collect()
    }

    /// Blocks of 100 from ID 1001, in a category ending at 5000.
    const BLOCKS: Blocks = Blocks {
        unit: 100,
        generation: 3,
        base: 1001,
    };

    fn range(start: i64, end: i64) -> IdRange {
        IdRange::new(start, end).unwrap()
    }

    #[test]
    fn a_claim_found_whole_applied() {
        let children = names(&[4, 5], &[0, 1, 2, 3]);
        let judged = judge(&lookup(2), &children, &stat(6), false);
        assert_eq!(judged, Judged::Done(Resolved::Applied(4)));
        // Found whole while the generation is being retired: still its own.
        let judged = judge(&lookup(2), &names(&[4, 5], &[]), &stat(14), false);
        assert_eq!(judged, Judged::Done(Resolved::Applied(4)));
    }

    #[test]
    fn nothing_found_is_not_applied_only_while_no_child_was_deleted() {
        let children = names(&[], &[0, 1, 2]);
        assert_eq!(
            judge(&lookup(2), &children, &stat(3), false),
            Judged::Done(Resolved::NotApplied)
        );
        assert_eq!(
            judge(&lookup(2), &children, &stat(3), true),
            Judged::LookAgain
        );
        // Blocks 0..=2 claimed by others and 3, 4 by the claim, then 0, 1, 3 and 4 deleted:
        // 5 creates and 4 deletes.
        let children = names(&[], &[2]);
        let Judged::Retired(doubt) = judge(&lookup(2), &children, &stat(9), false) else {
            panic!("not told");
        };
        assert!(doubt.why.contains("4 blocks"), "{}", doubt.why);
        // Anywhere below the child version; the next generation's base bounds it further.
        assert_eq!(
            doubt.report(&BLOCKS, 5000),
            (
                Vec::new(),
                Some(LeakBound {
                    at_most: 200,
                    within: range(1001, 1900)
                })
            )
        );
        let doubt = Doubt {
            below: Some(1501),
            ..doubt
        };
        assert_eq!(
            doubt.report(&BLOCKS, 5000).1,
            Some(LeakBound {
                at_most: 200,
                within: range(1001, 1500)
            })
        );
    }

    #[test]
    fn blocks_found_are_named_and_the_rest_bounded_next_to_them() {
        // A claim of 3 got 4..=6; of blocks 0..=8 all but 6 deleted by a retire under way (9
        // creates, 8 deletes): 4..=8 may be its.
        let children = names(&[6], &[]);
        let Judged::Retired(doubt) = judge(&lookup(3), &children, &stat(17), false) else {
            panic!("not told");
        };
        assert_eq!(
            doubt.report(&BLOCKS, 5000),
            (
                vec![range(1601, 1700)],
                Some(LeakBound {
                    at_most: 200,
                    within: range(1401, 1900)
                })
            )
        );
        // Blocks of other claims listed next to it bound it: 3 and 7 are others'.
        let children = names(&[5], &[3, 7, 8]);
        let Judged::Retired(doubt) = judge(&lookup(3), &children, &stat(13), false) else {
            panic!("not told");
        };
        assert_eq!(
            doubt.report(&BLOCKS, 5000),
            (
                vec![range(1501, 1600)],
                Some(LeakBound {
                    at_most: 200,
                    within: range(1401, 1700)
                })
            )
        );
        // Nothing deleted: what is found is all the claim got (two attempts applied).
        let children = names(&[1, 2, 5, 6], &[0, 3, 4]);
        let judged = judge(&lookup(2), &children, &stat(7), false);
        let Judged::Done(Resolved::Unknown(doubt)) = judged else {
            panic!("{judged:?}");
        };
        assert_eq!(
            doubt.report(&BLOCKS, 5000),
            (vec![range(1101, 1300), range(1501, 1700)], None)
        );
    }

    #[test]
    fn a_claim_in_doubt_is_bounded_by_its_generation_and_the_category() {
        let doubt = Doubt::in_doubt("unreachable".into(), 3);
        assert_eq!(
            doubt.report(&BLOCKS, 5000),
            (
                Vec::new(),
                Some(LeakBound {
                    at_most: 300,
                    within: range(1001, 5000)
                })
            )
        );
        // The last block clipped to the category's end; a bound past the end names nothing.
        let doubt = Doubt {
            first: 39,
            end: Some(45),
            ..doubt
        };
        assert_eq!(
            doubt.report(&BLOCKS, 5000).1,
            Some(LeakBound {
                at_most: 100,
                within: range(4901, 5000)
            })
        );
        let doubt = Doubt { first: 40, ..doubt };
        assert_eq!(doubt.report(&BLOCKS, 5000).1, None);
    }

    #[test]
    fn consecutive_numbers() {
        assert_eq!(consecutive(&[4, 5, 6], 3), Some(4));
        assert_eq!(consecutive(&[4, 6, 7], 3), None);
        assert_eq!(consecutive(&[4, 5], 3), None);
    }
}
