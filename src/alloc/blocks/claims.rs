//! Claims of fresh blocks: one `multi` that checks the pool as planned on and creates `m`
//! sequential nodes, which get `m` consecutive numbers; a lost reply is resolved by the claim's
//! token among the generation's children (src/alloc/blocks/mod.rs).

use zookeeper_client::{CreateMode, MultiWriteResult};

use super::refused;
use crate::error::{Result, ZooidError};
use crate::format::{returned_parent, sequence_of, sequence_parent, Blocks, OpToken};
use crate::retry::Budget;
use crate::zk::{Classified, Fate, Multi, Session, Verdict};

/// What one attempt to claim blocks did.
#[derive(Debug)]
pub(crate) enum Claim {
    /// The take owns blocks `first..first + count` of the generation.
    Granted { first: i64 },
    /// The pool node changed since the version planned on: plan again.
    Changed,
    /// The generation is sealed: move on to the next one, then try again.
    Sealed,
    /// The sequence parent is missing (the pool moved on, was recreated or deleted): read the
    /// pool again.
    Missing,
    /// A lost reply could not be resolved: the blocks, if claimed, stay unused.
    Unknown(String),
}

/// Claims `count` consecutive blocks of `blocks.generation` under pool `path`, if the pool is
/// still at `version`; resolves a lost reply; retries while ZooKeeper is unreachable, within
/// `budget`.
pub(crate) async fn claim(
    session: &Session,
    path: &str,
    version: i32,
    returned: Option<i32>,
    blocks: &Blocks,
    count: u32,
    budget: &mut Budget,
) -> Result<Claim> {
    let parent = sequence_parent(path, blocks.generation);
    let token = OpToken::random();
    let prefix = format!("{token}-");
    let name = format!("{parent}/{prefix}");
    loop {
        let (client, generation) = session.client();
        let options = CreateMode::PersistentSequential.with_acls(session.default_acls());
        let mut multi = Multi::new(&client);
        // Op 0 checks the pool node, then (with pushes read) op 1 the pushes' node, then the
        // generation's node.
        multi.check(path, version);
        if let Some(returned) = returned {
            multi.check(&returned_parent(path), returned);
        }
        let gate = multi.len();
        multi.check(&parent, 0);
        for _ in 0..count {
            multi.create(&name, &[], &options);
        }
        let failed = match multi.commit(session, generation).await {
            Ok(results) => {
                return granted(path, &results, count).map(|first| Claim::Granted { first })
            }
            Err(failed) => failed,
        };
        let verdict = failed.verdict();
        match (failed.index, verdict) {
            (Some(0), Verdict::BadVersion) => return Ok(Claim::Changed),
            (Some(0), Verdict::NoNode) => {
                return Err(ZooidError::NotFound {
                    category: path.to_string(),
                })
            }
            (Some(i), Verdict::BadVersion | Verdict::NoNode) if i < gate => {
                return Ok(Claim::Changed)
            }
            (Some(i), Verdict::BadVersion) if i == gate => return Ok(Claim::Sealed),
            (Some(_), Verdict::NoNode) => return Ok(Claim::Missing),
            // Not applied on a live session (the commit told the session layer); the next
            // attempt runs on the new one.
            (_, Verdict::Expired | Verdict::Closed) => {}
            (_, Verdict::Unknown) => {
                let err = &failed.error;
                tracing::warn!(category = path, %err, op = "take", "reply lost; resolving the outcome");
                match resolve(session, generation, &parent, &prefix, count, budget).await {
                    Resolved::Applied(first) => return Ok(Claim::Granted { first }),
                    Resolved::NotApplied => {}
                    Resolved::Unknown(why) => return Ok(Claim::Unknown(why)),
                }
            }
            _ => return Err(refused(session, path, verdict, &failed.error)),
        }
        let err = failed.error;
        if !budget.try_attempt() {
            return Err(ZooidError::ConnectionLost {
                category: path.to_string(),
                reason: format!("claiming blocks: {err}"),
            });
        }
        budget.backoff().await;
    }
}

enum Resolved {
    Applied(i64),
    NotApplied,
    Unknown(String),
}

/// Looks for the claim's token among the sequence parent's children. The claimed nodes are
/// persistent, so the lookup works on a later session too: once the servers confirmed that the
/// claim's own session can no longer write ([`Session::confirm_gone`]), a `sync` and a listing
/// decide. Not confirmed within the budget: unknown (the blocks, if claimed, stay unused).
async fn resolve(
    session: &Session,
    generation: u64,
    parent: &str,
    prefix: &str,
    count: u32,
    budget: &mut Budget,
) -> Resolved {
    let mut confirmed = false;
    loop {
        if budget.expired() {
            return Resolved::Unknown(format!("ZooKeeper unreachable for {:?}", budget.deadline()));
        }
        budget.try_attempt();
        let replaced = session.is_gone_generation(generation);
        if replaced && !confirmed {
            let deadline = tokio::time::Instant::now() + budget.remaining();
            if let Err(in_doubt) = session.confirm_gone(generation, deadline).await {
                return Resolved::Unknown(in_doubt.to_string());
            }
            confirmed = true;
        }
        let (client, current) = session.client();
        let lookup = async {
            // Requests of one session apply in order, and none applies after the session
            // expired: after the sync, the claim has applied or never will.
            client.sync(parent).await?;
            client.list_children(parent).await
        };
        match session.run(current, lookup).await.classified() {
            Ok(children) => {
                let mut seqs: Vec<i64> = children
                    .iter()
                    .filter_map(|c| c.strip_prefix(prefix))
                    .filter_map(|s| s.parse().ok())
                    .collect();
                seqs.sort_unstable();
                if seqs.is_empty() {
                    if !replaced && session.is_gone_generation(generation) {
                        continue; // Given up meanwhile: confirm its end, then look again.
                    }
                    return Resolved::NotApplied;
                }
                return match consecutive(&seqs, count) {
                    Some(first) => Resolved::Applied(first),
                    None => Resolved::Unknown(format!("found blocks {seqs:?} for the claim")),
                };
            }
            Err((Verdict::NoNode, _)) => {
                return Resolved::Unknown("the generation's sequence node is gone".into())
            }
            Err((verdict, err)) if verdict.fate() == Fate::Refused => {
                return Resolved::Unknown(err.to_string())
            }
            Err(_) => budget.backoff().await,
        }
    }
}

/// The first of `count` consecutive numbers, if `seqs` (ascending) is exactly that.
fn consecutive(seqs: &[i64], count: u32) -> Option<i64> {
    let first = *seqs.first()?;
    let expected = (0..i64::from(count)).map(|i| first + i);
    (seqs.len() == count as usize && seqs.iter().copied().eq(expected)).then_some(first)
}

/// The block numbers a successful claim got.
fn granted(path: &str, results: &[MultiWriteResult], count: u32) -> Result<i64> {
    let mut seqs: Vec<i64> = results
        .iter()
        .filter_map(|r| match r {
            MultiWriteResult::Create { path, .. } => sequence_of(path),
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

    #[test]
    fn consecutive_numbers() {
        assert_eq!(consecutive(&[4, 5, 6], 3), Some(4));
        assert_eq!(consecutive(&[4, 6, 7], 3), None);
        assert_eq!(consecutive(&[4, 5], 3), None);
    }
}
