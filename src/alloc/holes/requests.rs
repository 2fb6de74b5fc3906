//! The two writes of format 4 (src/alloc/holes/mod.rs), and their lost replies: a push creates
//! hole nodes (a plain `create` for one range), a take deletes the holes it chose and creates
//! what is left of them, and writes its token into its author's receipt (an ephemeral node the
//! author's first take on a session creates, [`Receipt`]). A push carries no receipt: its hole
//! nodes are its witnesses, and a push in doubt whose holes are not all there is
//! `OutcomeUnknown` ([`Write::resolve`]).

use crate::alloc::blocks::ensure_node;
use crate::alloc::blocks::refused;
use crate::alloc::state::Receipt;
use crate::error::{Result, ZooidError};
use crate::format::{
    hole_name, holes_parent, returned_parent, sequence_parent, OpToken, MARKER_PREFIX,
};
use crate::range::IdRange;
use crate::retry::Budget;
use crate::stats::{LostOutcome, Recorder};
use crate::zk::{Create, Failure, Multi, MultiFailed, Verdict, Zk, ZooKeeperExt};

/// What a take's claim of holes came to.
#[derive(Debug)]
pub(crate) enum Claimed {
    /// The holes are this take's; `marker` is its author's receipt, holding its token.
    Taken { marker: Receipt },
    /// Another take deleted one of the holes first, or a node for the rest exists already:
    /// nothing changed.
    Raced,
    /// The pool node moved on from the version planned on (a ceiling, a new generation):
    /// nothing changed.
    Changed,
    /// The generation planned on is sealed (a move to the next one, or a repair, under way):
    /// nothing changed; the take finishes the move, or waits for the repair, and plans again.
    Sealed,
    /// The generation planned on has no sequence parent (a move to it stopped before creating
    /// it): nothing changed; the take creates it and plans again.
    Unnumbered,
}

/// One of the two writes, as sent.
struct Write<'a> {
    path: &'a str,
    /// The hole nodes whose presence, once the write's fate is decided (after a `sync` on its
    /// session, or once the servers confirmed that session can write no more), tells: all
    /// there means `present_means_applied`.
    witnesses: Vec<String>,
    present_means_applied: bool,
    /// The incarnation (`czxid`) of the holes' parent the write was planned on, as listed: a
    /// lost reply is resolved only on that incarnation. On one created since (a wipe or a
    /// rollback, then a restore) neither the receipt nor the holes tell what the write did.
    incarnation: Option<i64>,
}

/// A take's receipt as its write sends it.
struct Marked {
    /// The author's receipt under `zooid-returned` (`m-NAME`), and whether it exists on the
    /// session it names (the write sets it) or not yet (the write creates it).
    marker: Receipt,
    exists: bool,
    /// This write's token: the receipt's data once the write applied.
    token: String,
}

/// How a lost reply resolved.
enum Outcome {
    Applied,
    NotApplied,
    Unknown(String),
}

/// Claims the holes `nodes` (names under `zooid-holes`) for a take on pool `path` planned at
/// pool version `version` in block generation `block_generation`, creating `remainder` again as
/// holes. The claim checks that the generation is still open (its sequence parent at data
/// version 0): a repair seals it before it gives up the holes at or below its record, so no
/// take planned before can delete one of them and create its remainder under a name the
/// repair did not list. Unlike a claim of fresh blocks it also checks the pool node: it is not
/// bound to the connection it was planned on (it is sent again on a new session), and after a
/// rollback of ZooKeeper the version is what stops a take planned on the newer pool from
/// taking, from the rolled-back one, a hole another process took since the snapshot. A lost reply is resolved (see [`resolve`]), within a deadline of its own;
/// not then: `OutcomeUnknown` naming `handed`, which stay unused.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn claim(
    zk: &Zk,
    path: &str,
    version: i32,
    block_generation: u64,
    nodes: &[String],
    remainder: &[IdRange],
    handed: &[IdRange],
    receipt: Option<Receipt>,
    incarnation: Option<i64>,
    stats: &Recorder,
    budget: &mut Budget,
) -> Result<Claimed> {
    let parent = holes_parent(path);
    let deleted: Vec<String> = nodes.iter().map(|n| format!("{parent}/{n}")).collect();
    let created: Vec<String> = remainder
        .iter()
        .map(|r| format!("{parent}/{}", hole_name(r)))
        .collect();
    let write = Write::new(path, deleted.clone(), false, incarnation);
    let mut marked = Marked::new(receipt);
    loop {
        let generation = zk.generation();
        let persistent = Create::persistent();
        let mut multi = Multi::new();
        multi.check(path, version);
        multi.check(&sequence_parent(path, block_generation), 0);
        for node in &deleted {
            multi.delete(node, None);
        }
        for node in &created {
            multi.create(node, &[], &persistent);
        }
        let receipt = marked.add_to(&mut multi, path, generation);
        let failed = match multi.commit(&**zk, generation).await {
            Ok(_) => {
                return Ok(Claimed::Taken {
                    marker: marked.marker,
                })
            }
            Err(failed) => failed,
        };
        let verdict = failed.verdict();
        let holes_end = 2 + deleted.len() + created.len();
        match (failed.index, verdict) {
            // The pool moved on: plan again on the pool as it is.
            (Some(0), Verdict::BadVersion) => return Ok(Claimed::Changed),
            (Some(1), Verdict::BadVersion) => return Ok(Claimed::Sealed),
            (Some(1), Verdict::NoNode) => return Ok(Claimed::Unnumbered),
            (Some(0), Verdict::NoNode) => {
                return Err(ZooidError::NotFound {
                    category: path.to_string(),
                })
            }
            (Some(i), Verdict::NoNode | Verdict::NodeExists) if i < holes_end => {
                return Ok(Claimed::Raced)
            }
            // Recreated, then sent again: an attempt as any other, so that something deleting
            // it each time cannot keep the write going past its budget.
            (Some(i), Verdict::NoNode) if i >= receipt => marked.missing(zk, path).await?,
            (_, Verdict::Expired | Verdict::Closed) => {}
            (_, Verdict::Unknown) => {
                tracing::warn!(category = path, err = %failed.failure, op = "take", "reply lost; resolving the outcome");
                match write.resolve(zk, generation, Some(&marked), budget).await {
                    Outcome::Applied => {
                        stats.lost_reply(path, LostOutcome::Applied, 0);
                        return Ok(Claimed::Taken {
                            marker: marked.marker,
                        });
                    }
                    Outcome::NotApplied => {
                        stats.lost_reply(path, LostOutcome::NotApplied, 0);
                        return Ok(Claimed::Raced);
                    }
                    Outcome::Unknown(why) => {
                        tracing::error!(category = path, %why, "hole claim outcome unknown; its IDs stay unused");
                        return Err(ZooidError::OutcomeUnknown {
                            category: path.to_string(),
                            op: crate::error::WriteOp::Take,
                            ids: handed.to_vec(),
                            leaked_within: None,
                        });
                    }
                }
            }
            _ => return Err(refused(zk, path, verdict, &failed.failure)),
        }
        if !budget.try_attempt() {
            return Err(ZooidError::ConnectionLost {
                category: path.to_string(),
                reason: format!("taking holes: {}", failed.failure),
            });
        }
        budget.backoff().await;
    }
}

/// Pushes `ranges` back to pool `path` as hole nodes: `AlreadyFree` when one of them is a hole
/// already. One range is one `create`; more are one `multi` of creates. With `claimed_in` (a take
/// giving back IDs it claimed in that block generation), the push checks that the generation is
/// still open (its sequence parent at data version 0, as a claim of holes does): once it was
/// sealed or is gone (a repair, a move to the next generation, a wipe and a restore), IDs of its
/// blocks may be handed out again as fresh ones of a later generation, and the push fails
/// (`InvalidArgument`, the caller reports them leaked). A push carries no receipt: a lost reply
/// is resolved by its hole nodes (see [`Write::resolve`]), `OutcomeUnknown` when they are not
/// all there or not within a deadline of their own (the push is not repeated).
pub(crate) async fn push(
    zk: &Zk,
    path: &str,
    ranges: &[IdRange],
    claimed_in: Option<u64>,
    incarnation: Option<i64>,
    stats: &Recorder,
    budget: &mut Budget,
) -> Result<()> {
    let parent = holes_parent(path);
    let created: Vec<String> = ranges
        .iter()
        .map(|r| format!("{parent}/{}", hole_name(r)))
        .collect();
    let write = Write::new(path, created.clone(), true, incarnation);
    loop {
        let generation = zk.generation();
        let persistent = Create::persistent();
        let mut multi = Multi::new();
        if let Some(block_generation) = claimed_in {
            multi.check(&sequence_parent(path, block_generation), 0);
        }
        // The index of the first hole's create.
        let first = multi.len();
        for node in &created {
            multi.create(node, &[], &persistent);
        }
        let end = multi.len();
        let sent = match created.as_slice() {
            // One create alone: no `multi` to wrap it. A failure the servers answered is the
            // create's, the op at `first`.
            [node] if first == 0 => zk
                .create(generation, node, &[], &persistent)
                .await
                .map(drop)
                .map_err(|failure| MultiFailed {
                    index: matches!(failure.verdict, Verdict::NoNode | Verdict::NodeExists)
                        .then_some(first),
                    failure,
                }),
            _ => multi.commit(&**zk, generation).await.map(drop),
        };
        let failed = match sent {
            Ok(()) => return Ok(()),
            Err(failed) => failed,
        };
        let verdict = failed.verdict();
        match (failed.index, verdict) {
            (Some(i), Verdict::NoNode | Verdict::BadVersion) if i < first => {
                return Err(ZooidError::InvalidArgument(format!(
                    "{path}: block generation {} is sealed or gone (a repair, a move, a restore): IDs claimed in it are not given back",
                    claimed_in.unwrap_or_default()
                )))
            }
            (Some(i), Verdict::NodeExists) if (first..end).contains(&i) => {
                return Err(ZooidError::AlreadyFree {
                    category: path.to_string(),
                    range: ranges[i - first],
                })
            }
            // Recreated, then sent again: an attempt as any other (see `take`).
            (Some(i), Verdict::NoNode) if (first..end).contains(&i) => {
                ensure_node(zk, path, &parent).await?
            }
            (_, Verdict::Expired | Verdict::Closed) => {}
            (_, Verdict::Unknown) => {
                tracing::warn!(category = path, err = %failed.failure, op = "push", "reply lost; resolving the outcome");
                match write.resolve(zk, generation, None, budget).await {
                    Outcome::Applied => {
                        stats.lost_reply(path, LostOutcome::Applied, 0);
                        return Ok(());
                    }
                    // A push without a receipt is never found not applied (only the mutant
                    // `push_gone_not_applied` says so, and sends it again).
                    Outcome::NotApplied => stats.lost_reply(path, LostOutcome::NotApplied, 0),
                    Outcome::Unknown(why) => {
                        tracing::error!(category = path, %why, "push outcome unknown; not repeated");
                        return Err(ZooidError::OutcomeUnknown {
                            category: path.to_string(),
                            op: crate::error::WriteOp::Push,
                            ids: ranges.to_vec(),
                            leaked_within: None,
                        });
                    }
                }
            }
            _ => return Err(refused(zk, path, verdict, &failed.failure)),
        }
        if !budget.try_attempt() {
            return Err(ZooidError::ConnectionLost {
                category: path.to_string(),
                reason: format!("pushing: {}", failed.failure),
            });
        }
        budget.backoff().await;
    }
}

impl Marked {
    /// The receipt `receipt` this process holds on the pool (`None`: none yet, the write creates
    /// one), with a fresh token.
    fn new(receipt: Option<Receipt>) -> Self {
        Marked {
            exists: receipt.is_some(),
            marker: receipt.unwrap_or_else(|| Receipt {
                name: format!("{MARKER_PREFIX}{}", OpToken::random()),
                generation: 0,
            }),
            token: OpToken::random().to_string(),
        }
    }

    /// Adds the receipt to `multi` (a write on pool `path`), sent on session `generation`: sets
    /// the author's receipt to this write's token when it exists on that session, else creates
    /// one holding it (a receipt of an earlier session goes with that session, so a new name:
    /// the old one may still be there). Returns the index of the receipt's op.
    fn add_to(&mut self, multi: &mut Multi, path: &str, generation: u64) -> usize {
        if self.marker.generation != generation {
            if self.exists {
                self.marker.name = format!("{MARKER_PREFIX}{}", OpToken::random());
            }
            self.marker.generation = generation;
            self.exists = false;
        }
        let node = format!("{}/{}", returned_parent(path), self.marker.name);
        let index = multi.len();
        if self.exists {
            multi.set(&node, self.token.as_bytes(), None);
        } else {
            multi.create(&node, self.token.as_bytes(), &Create::ephemeral());
        }
        index
    }

    /// The receipt's op found no node: the receipt went (with its session, or deleted), so the
    /// next attempt creates one under a new name; or, when this attempt created it, its parent
    /// (under pool `path`) is missing.
    async fn missing(&mut self, zk: &Zk, path: &str) -> Result<()> {
        if self.exists {
            self.exists = false;
            self.marker.name = format!("{MARKER_PREFIX}{}", OpToken::random());
            Ok(())
        } else {
            ensure_node(zk, path, &returned_parent(path)).await
        }
    }
}

impl<'a> Write<'a> {
    fn new(
        path: &'a str,
        witnesses: Vec<String>,
        present_means_applied: bool,
        incarnation: Option<i64>,
    ) -> Self {
        Self {
            path,
            witnesses,
            present_means_applied,
            incarnation,
        }
    }

    /// Whether the write sent on session `generation`, whose reply was lost, applied. Its fate is
    /// decided on that session (reconnected) after a `sync` (requests of one session apply in
    /// order), or, with that session given up, once the servers confirmed it can write no more.
    /// Then a take's `receipt` holds its token exactly when it applied, while its session lives
    /// (only its author writes it). Otherwise the witnesses tell when they are all there (a take
    /// did not apply, a push did): a push's hole that is not there may never have been created,
    /// or may have been created and taken since, so the outcome is unknown. Within a deadline of
    /// its own ([`Budget::to_resolve`]), however much of the `operation`'s is left.
    async fn resolve(
        &self,
        zk: &Zk,
        generation: u64,
        receipt: Option<&Marked>,
        operation: &Budget,
    ) -> Outcome {
        let mut budget = operation.to_resolve();
        let mut confirmed = false;
        loop {
            if budget.expired() {
                return Outcome::Unknown(format!(
                    "ZooKeeper unreachable for {:?}",
                    budget.deadline()
                ));
            }
            budget.try_attempt();
            let replaced = zk.is_gone_generation(generation);
            if replaced && !confirmed {
                let deadline = tokio::time::Instant::now() + budget.remaining();
                if let Err(in_doubt) = zk.confirm_gone(generation, deadline).await {
                    return Outcome::Unknown(in_doubt.to_string());
                }
                confirmed = true;
            }
            let current = zk.generation();
            let lookup = async {
                zk.sync(current, self.path).await?;
                if let Some(planned) = self.incarnation {
                    let parent = zk.exists(current, &holes_parent(self.path)).await?;
                    if parent.is_none_or(|stat| stat.czxid != planned) {
                        return Ok(None);
                    }
                }
                let mut witnessed = 0;
                for node in &self.witnesses {
                    witnessed += usize::from(zk.exists(current, node).await?.is_some());
                }
                let marked = match receipt {
                    Some(receipt) if !replaced => {
                        let marker =
                            format!("{}/{}", returned_parent(self.path), receipt.marker.name);
                        Some(match zk.get(current, &marker).await {
                            // The mutant: a receipt that is there counts, whatever token it
                            // holds (the rule of receipts created per write, wrong for one set
                            // per write).
                            #[cfg(zooid_mutant = "hole_receipt_any_token")]
                            Ok(_) => true,
                            #[cfg(not(zooid_mutant = "hole_receipt_any_token"))]
                            Ok((data, _)) => data == receipt.token.as_bytes(),
                            Err(Failure {
                                verdict: Verdict::NoNode,
                                ..
                            }) => false,
                            Err(failure) => return Err(failure),
                        })
                    }
                    _ => None,
                };
                Ok::<_, Failure>(Some((witnessed, marked)))
            };
            let (witnessed, marked) = match lookup.await {
                Ok(Some(found)) => found,
                Ok(None) => {
                    return Outcome::Unknown(
                        "the pool's holes were created again since the write was planned (a wipe or a rollback, then a restore)".into(),
                    )
                }
                Err(_) => {
                    budget.backoff().await;
                    continue;
                }
            };
            if !replaced && zk.is_gone_generation(generation) {
                continue; // Given up meanwhile: confirm its end, then look again.
            }
            return match marked {
                Some(true) => Outcome::Applied,
                Some(false) => Outcome::NotApplied,
                None if witnessed == self.witnesses.len() => {
                    if self.present_means_applied {
                        Outcome::Applied
                    } else {
                        Outcome::NotApplied
                    }
                }
                // The mutant: a push whose holes are not all there counts as not applied and
                // is sent again (the rule of a push with a receipt, wrong without one).
                #[cfg(zooid_mutant = "push_gone_not_applied")]
                None if self.present_means_applied => Outcome::NotApplied,
                None => Outcome::Unknown(format!(
                    "{witnessed} of the write's {} hole nodes are there once its fate was decided",
                    self.witnesses.len()
                )),
            };
        }
    }
}
