//! Pushes to a pool in block allocation, left in nodes of their own: one `multi` creates the
//! push's node and its author's ephemeral marker and announces it on `zooid-returned`; the next
//! take reads the waiting pushes and merges them in its own write (src/alloc/engine.rs).

use zookeeper_client::{CreateMode, Error as ZkError};

use super::refused;
use crate::error::{Result, ZooidError};
use crate::format::{
    parse_return, render_return, returned_parent, OpToken, MARKER_PREFIX, PUSH_PREFIX,
};
use crate::range::IdRange;
use crate::retry::Budget;
use crate::zk::legacy::client_set_version;
use crate::zk::{Classified, ClientMulti, Session, Verdict};

/// Reads the pushes waiting under pool `path` (creating their parent if missing): the parent's
/// data version and each push's node name and ranges.
pub(crate) async fn read_returns(
    session: &Session,
    path: &str,
) -> Result<(i32, Vec<(String, Vec<IdRange>)>)> {
    let parent = returned_parent(path);
    let unreachable = |err: ZkError| ZooidError::ConnectionLost {
        category: path.to_string(),
        reason: format!("reading {parent}: {err}"),
    };
    loop {
        let (client, generation) = session.client();
        let listed = session.run(generation, client.get_children(&parent)).await;
        let (children, stat) = match listed.classified() {
            Ok(got) => got,
            Err((Verdict::NoNode, _)) => {
                ensure_node(session, path, &parent).await?;
                continue;
            }
            Err((_, err)) => return Err(unreachable(err)),
        };
        let names: Vec<String> = children
            .into_iter()
            .filter(|c| c.starts_with(PUSH_PREFIX))
            .collect();
        let mut pending = Vec::with_capacity(names.len());
        let mut gone = false;
        for batch in names.chunks(64) {
            let reads = batch.iter().map(|name| {
                let node = format!("{parent}/{name}");
                let client = client.clone();
                async move { (node.clone(), client.get_data(&node).await) }
            });
            for (node, read) in futures_util::future::join_all(reads).await {
                match read.classified() {
                    Ok((data, _)) => {
                        let name = node.rsplit('/').next().unwrap_or_default().to_string();
                        pending.push((name, parse_return(&node, &data)?));
                    }
                    // Merged by another take meanwhile: read again.
                    Err((Verdict::NoNode, _)) => gone = true,
                    Err((_, err)) => return Err(unreachable(err)),
                }
            }
        }
        if !gone {
            return Ok((stat.version, pending));
        }
    }
}

/// Creates `node` (a persistent, empty child of pool `path`) unless it exists.
pub(crate) async fn ensure_node(session: &Session, path: &str, node: &str) -> Result<()> {
    let (client, generation) = session.client();
    let options = CreateMode::Persistent.with_acls(session.default_acls());
    match session
        .run(generation, client.create(node, &[], &options))
        .await
        .classified()
    {
        Ok(_) | Err((Verdict::NodeExists, _)) => Ok(()),
        Err((Verdict::NoNode, _)) => Err(ZooidError::NotFound {
            category: path.to_string(),
        }),
        Err((verdict @ Verdict::NotAuthorized, err)) => Err(refused(session, path, verdict, &err)),
        Err((_, err)) => Err(ZooidError::ConnectionLost {
            category: path.to_string(),
            reason: format!("creating {node}: {err}"),
        }),
    }
}

/// A push left under a pool in block allocation.
pub(crate) struct Returned {
    /// The push's node, a child of `zooid-returned`.
    pub node: String,
    /// Its author's marker (deleted by the author's next push).
    pub marker: String,
    /// The version of `zooid-returned` the push left, when its reply told.
    pub announced: Option<i32>,
}

/// Pushes `ranges` back to pool `path` without writing the pool node (see the module docs):
/// one `multi` that creates the push's node and its author's marker, announces it, and deletes
/// the author's previous marker `previous`. A lost reply is resolved by the marker on the push's
/// own session (its requests are ordered). With that session given up, by the push's node once
/// the servers confirmed the session can no longer write ([`Session::confirm_gone`]): there, the
/// push applied; absent, it may have applied and been merged by a take, so the outcome is
/// unknown (`OutcomeUnknown`, the push is not repeated), as it is without the confirmation.
pub(crate) async fn push_return(
    session: &Session,
    path: &str,
    ranges: &[IdRange],
    previous: Option<&str>,
    budget: &mut Budget,
) -> Result<Returned> {
    let parent = returned_parent(path);
    let token = OpToken::random();
    let (name, marker_name) = (
        format!("{PUSH_PREFIX}{token}"),
        format!("{MARKER_PREFIX}{token}"),
    );
    let node = format!("{parent}/{name}");
    let marker = format!("{parent}/{marker_name}");
    let data = render_return(ranges);
    let mut previous = previous.map(str::to_string);
    loop {
        let (client, generation) = session.client();
        let persistent = CreateMode::Persistent.with_acls(session.default_acls());
        let ephemeral = CreateMode::Ephemeral.with_acls(session.default_acls());
        let mut multi = ClientMulti::new(&client);
        multi
            .create(&node, &data, &persistent)
            .set(&parent, &[], None)
            .create(&marker, &[], &ephemeral);
        if let Some(p) = &previous {
            multi.delete(&format!("{parent}/{p}"), None);
        }
        let failed = match multi.commit(session, generation).await {
            Ok(results) => {
                return Ok(Returned {
                    node: name,
                    marker: marker_name,
                    announced: client_set_version(&results),
                });
            }
            Err(failed) => failed,
        };
        let verdict = failed.verdict();
        match (failed.index, verdict) {
            // The parent is missing (a category created before pushes had their node).
            (Some(0 | 1), Verdict::NoNode) => {
                ensure_node(session, path, &parent).await?;
                continue;
            }
            // The previous marker went with an earlier session: leave it out.
            (Some(3), Verdict::NoNode) => {
                previous = None;
                continue;
            }
            // Not applied on a live session (the commit told the session layer).
            (_, Verdict::Expired | Verdict::Closed) => {}
            (_, Verdict::Unknown) => {
                let err = &failed.error;
                tracing::warn!(category = path, %err, op = "push", "reply lost; resolving the outcome");
                let in_doubt = || ZooidError::OutcomeUnknown {
                    category: path.to_string(),
                    op: crate::WriteOp::Push,
                    ids: ranges.to_vec(),
                    leaked_within: None,
                };
                loop {
                    if budget.expired() {
                        return Err(in_doubt());
                    }
                    if session.is_gone_generation(generation) {
                        return match pushed_after_confirmation(session, generation, &node, budget)
                            .await
                        {
                            Some(true) => Ok(Returned {
                                node: name,
                                marker: marker_name,
                                announced: None,
                            }),
                            _ => Err(in_doubt()),
                        };
                    }
                    budget.try_attempt();
                    let lookup = async {
                        client.sync(&parent).await?;
                        client.check_stat(&marker).await
                    };
                    match session.run(generation, lookup).await {
                        Ok(Some(_)) => {
                            return Ok(Returned {
                                node: name,
                                marker: marker_name,
                                announced: None,
                            })
                        }
                        Ok(None) if !session.is_gone_generation(generation) => break,
                        Ok(None) => {}
                        Err(_) => budget.backoff().await,
                    }
                }
            }
            _ => return Err(refused(session, path, verdict, &failed.error)),
        }
        let err = failed.error;
        if !budget.try_attempt() {
            return Err(ZooidError::ConnectionLost {
                category: path.to_string(),
                reason: format!("pushing: {err}"),
            });
        }
        budget.backoff().await;
    }
}

/// Whether the push that created `node` on the given-up session of `generation` applied: once
/// the servers confirmed that session can no longer write, `Some(true)` when the node is there
/// (read after a `sync` on the current session); `Some(false)` when it is not (never applied, or
/// applied and already merged by a take: the caller cannot tell which); `None` when the
/// confirmation or the read did not come within the budget.
async fn pushed_after_confirmation(
    session: &Session,
    generation: u64,
    node: &str,
    budget: &mut Budget,
) -> Option<bool> {
    let deadline = tokio::time::Instant::now() + budget.remaining();
    if let Err(why) = session.confirm_gone(generation, deadline).await {
        tracing::warn!(node, %why, "push outcome in doubt");
        return None;
    }
    while !budget.expired() {
        budget.try_attempt();
        let (client, current) = session.client();
        let parent = node.rsplit_once('/').map_or("/", |(parent, _)| parent);
        let lookup = async {
            client.sync(parent).await?;
            client.check_stat(node).await
        };
        match session.run(current, lookup).await {
            Ok(found) => return Some(found.is_some()),
            Err(_) => budget.backoff().await,
        }
    }
    None
}
