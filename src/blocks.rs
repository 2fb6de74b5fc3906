//! Block allocation: fresh IDs handed out by operations that cannot conflict.
//!
//! A category created for scale (`create_category_blocks`, pool format 3) splits its IDs in two:
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
//!   (a session timeout later): no request of an expired session applies any more. Only when
//!   the operation's deadline runs out first is the outcome unknown, and the blocks, if claimed,
//!   stay unused (never handed out twice).
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

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

use zookeeper_client::{CreateMode, Error as ZkError, MultiWriteError, MultiWriteResult};

use crate::error::{Result, ZooidError};
use crate::pool::{Blocks, OpToken};
use crate::retry::Budget;
use crate::session::{fate, Fate, Session};

/// A take that gets this block number or above moves the category to a new generation.
pub const ROTATE_AT: i64 = 20_000;

/// Up to this many pushes stay waiting in their own nodes when a write does not take their IDs
/// (so that a take does not rewrite the parts of the free list they land in); beyond it, a write
/// merges them all.
pub const KEEP_PENDING: usize = 64;

/// Retiring a generation deletes its claims this many at a time...
const RETIRE_BATCH: usize = 100;

/// ...with this pause between two deletes.
const RETIRE_PAUSE: std::time::Duration = std::time::Duration::from_millis(5);

/// The largest number of blocks one take claims (one `multi`).
pub const MAX_BLOCKS_PER_TAKE: u64 = 1_000;

/// The node whose children number generation `generation`'s blocks.
pub fn sequence_parent(path: &str, generation: u64) -> String {
    format!("{path}/zooid-blocks-{generation}")
}

/// Whether `name` (a child of a pool node) is one of zooid's sequence parents.
pub fn is_sequence_parent(name: &str) -> bool {
    crate::chunks::is_numbered(name, "zooid-blocks-")
}

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
    let prefix = format!("{:016x}-", token.0);
    let name = format!("{parent}/{prefix}");
    loop {
        let (client, generation) = session.client();
        let options = CreateMode::PersistentSequential.with_acls(session.default_acls());
        let mut multi = client.new_multi_writer();
        // Op 0 checks the pool node, then (with pushes read) op 1 the pushes' node, then the
        // generation's node.
        let returned_node = returned_parent(path);
        let mut built = multi.add_check_version(path, version);
        if let Some(returned) = returned {
            built = built.and_then(|()| multi.add_check_version(&returned_node, returned));
        }
        let gate = usize::from(returned.is_some()) + 1;
        built = built.and_then(|()| multi.add_check_version(&parent, 0));
        for _ in 0..count {
            built = built.and_then(|()| multi.add_create(&name, &[], &options));
        }
        built.map_err(|err| refused(session, path, err))?;
        let reply = tokio::time::timeout(session.request_limit(), multi.commit())
            .await
            .unwrap_or(Err(MultiWriteError::RequestFailed {
                source: ZkError::Timeout,
            }));
        let err = match reply {
            Ok(results) => {
                return granted(path, &results, count).map(|first| Claim::Granted { first })
            }
            Err(MultiWriteError::OperationFailed { index, source }) => match (index, &source) {
                (0, ZkError::BadVersion) => return Ok(Claim::Changed),
                (0, ZkError::NoNode) => {
                    return Err(ZooidError::NotFound {
                        category: path.to_string(),
                    })
                }
                (i, ZkError::BadVersion | ZkError::NoNode) if i < gate => {
                    return Ok(Claim::Changed)
                }
                (i, ZkError::BadVersion) if i == gate => return Ok(Claim::Sealed),
                (_, ZkError::NoNode) => return Ok(Claim::Missing),
                _ => source,
            },
            Err(MultiWriteError::RequestFailed { source }) => source,
        };
        match fate(&err) {
            Fate::Refused => return Err(refused(session, path, err)),
            Fate::Expired => {
                // Not applied on a live session; the next attempt runs on the new one.
                session.report_lost(generation, &err.to_string()).await;
            }
            Fate::Unknown => {
                tracing::warn!(category = path, %err, op = "take", "reply lost; resolving the outcome");
                match resolve(session, generation, &parent, &prefix, count, budget).await {
                    Resolved::Applied(first) => return Ok(Claim::Granted { first }),
                    Resolved::NotApplied => {}
                    Resolved::Unknown(why) => return Ok(Claim::Unknown(why)),
                }
            }
        }
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
/// persistent, so the lookup works on a later session too: once the claim's own session has
/// certainly expired on the servers (no request of it can apply after its expiry), a `sync` and
/// a listing decide.
async fn resolve(
    session: &Session,
    generation: u64,
    parent: &str,
    prefix: &str,
    count: u32,
    budget: &mut Budget,
) -> Resolved {
    let mut waited_for_expiry = false;
    loop {
        if budget.expired() {
            return Resolved::Unknown(format!("ZooKeeper unreachable for {:?}", budget.deadline()));
        }
        budget.try_attempt();
        let (client, current) = session.client();
        let replaced = session.is_gone_generation(generation);
        if replaced && !waited_for_expiry {
            let timeout = session.options().session_timeout;
            if budget.remaining() <= timeout {
                return Resolved::Unknown(
                    "the ZooKeeper session was lost, with no time left to outwait its expiry"
                        .into(),
                );
            }
            tokio::time::sleep(timeout).await;
            waited_for_expiry = true;
            continue;
        }
        let lookup = async {
            // Requests of one session apply in order, and none applies after the session
            // expired: after the sync, the claim has applied or never will.
            client.sync(parent).await?;
            client.list_children(parent).await
        };
        match session.run(current, lookup).await {
            Ok(children) => {
                let mut seqs: Vec<i64> = children
                    .iter()
                    .filter_map(|c| c.strip_prefix(prefix))
                    .filter_map(|s| s.parse().ok())
                    .collect();
                seqs.sort_unstable();
                if seqs.is_empty() {
                    if !replaced && session.is_gone_generation(generation) {
                        continue; // Lost meanwhile: outwait its expiry, then look again.
                    }
                    return Resolved::NotApplied;
                }
                return match consecutive(&seqs, count) {
                    Some(first) => Resolved::Applied(first),
                    None => Resolved::Unknown(format!("found blocks {seqs:?} for the claim")),
                };
            }
            Err(ZkError::NoNode) => {
                return Resolved::Unknown("the generation's sequence node is gone".into())
            }
            Err(err) if fate(&err) == Fate::Refused => return Resolved::Unknown(err.to_string()),
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

/// The sequence number ZooKeeper appended to a created node's name.
fn sequence_of(path: &str) -> Option<i64> {
    let digits = path.rsplit('-').next()?;
    digits.parse().ok()
}

fn refused(session: &Session, path: &str, err: ZkError) -> ZooidError {
    match err {
        ZkError::NoAuth => ZooidError::NotAuthorized {
            path: path.to_string(),
            identity: session.options().identity(),
        },
        other => ZooidError::ConnectionLost {
            category: path.to_string(),
            reason: format!("block claim refused: {other}"),
        },
    }
}

/// The next block number of the pool's generation: the sequence parent's child version (every
/// child create advances it, and children are not deleted while the generation is in use).
pub(crate) async fn next_block(session: &Session, path: &str, blocks: &Blocks) -> Result<i64> {
    let parent = sequence_parent(path, blocks.generation);
    let (client, generation) = session.client();
    match session.run(generation, client.check_stat(&parent)).await {
        Ok(Some(stat)) => Ok(i64::from(stat.cversion)),
        Ok(None) | Err(ZkError::NoNode) => Err(ZooidError::NotFound { category: parent }),
        Err(err) => Err(ZooidError::ConnectionLost {
            category: path.to_string(),
            reason: err.to_string(),
        }),
    }
}

/// The first ID no block of the pool's generation has claimed yet.
pub async fn frontier(session: &Session, path: &str, blocks: &Blocks) -> Result<i64> {
    let next = next_block(session, path, blocks).await?;
    let unit = i64::try_from(blocks.unit).unwrap_or(i64::MAX);
    Ok(next.saturating_mul(unit).saturating_add(blocks.base))
}

/// The node pushes to pool `path` are announced on; its children are the pushes.
pub fn returned_parent(path: &str) -> String {
    format!("{path}/zooid-returned")
}

/// Reads the pushes waiting under pool `path` (creating their parent if missing): the parent's
/// data version and each push's node name and ranges.
pub(crate) async fn read_returns(
    session: &Session,
    path: &str,
) -> Result<(i32, Vec<(String, Vec<crate::range::IdRange>)>)> {
    let parent = returned_parent(path);
    let unreachable = |err: ZkError| ZooidError::ConnectionLost {
        category: path.to_string(),
        reason: format!("reading {parent}: {err}"),
    };
    loop {
        let (client, generation) = session.client();
        let listed = session.run(generation, client.get_children(&parent)).await;
        let (children, stat) = match listed {
            Ok(got) => got,
            Err(ZkError::NoNode) => {
                ensure_node(session, path, &parent).await?;
                continue;
            }
            Err(err) => return Err(unreachable(err)),
        };
        let names: Vec<String> = children
            .into_iter()
            .filter(|c| c.starts_with("r-"))
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
                match read {
                    Ok((data, _)) => {
                        let name = node.rsplit('/').next().unwrap_or_default().to_string();
                        pending.push((name, parse_return(&node, &data)?));
                    }
                    // Merged by another take meanwhile: read again.
                    Err(ZkError::NoNode) => gone = true,
                    Err(err) => return Err(unreachable(err)),
                }
            }
        }
        if !gone {
            return Ok((stat.version, pending));
        }
    }
}

/// A push's content: `#zooid-returned` then its ranges, one `START:END` per line.
fn render_return(ranges: &[crate::range::IdRange]) -> Vec<u8> {
    crate::chunks::render_ranges("#zooid-returned", ranges)
}

fn parse_return(node: &str, data: &[u8]) -> Result<Vec<crate::range::IdRange>> {
    crate::chunks::parse_ranges(node, "#zooid-returned", data, (1, i64::MAX))
}

/// Creates `node` (a persistent, empty child of pool `path`) unless it exists.
async fn ensure_node(session: &Session, path: &str, node: &str) -> Result<()> {
    let (client, generation) = session.client();
    let options = CreateMode::Persistent.with_acls(session.default_acls());
    match session
        .run(generation, client.create(node, &[], &options))
        .await
    {
        Ok(_) | Err(ZkError::NodeExists) => Ok(()),
        Err(ZkError::NoNode) => Err(ZooidError::NotFound {
            category: path.to_string(),
        }),
        Err(ZkError::NoAuth) => Err(refused(session, path, ZkError::NoAuth)),
        Err(err) => Err(ZooidError::ConnectionLost {
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
/// the author's previous marker `previous`. A lost reply is resolved by the marker; with the
/// session lost the outcome is unknown (`OutcomeUnknown`).
pub(crate) async fn push_return(
    session: &Session,
    path: &str,
    ranges: &[crate::range::IdRange],
    previous: Option<&str>,
    budget: &mut Budget,
) -> Result<Returned> {
    let parent = returned_parent(path);
    let token = format!("{:016x}", OpToken::random().0);
    let node = format!("{parent}/r-{token}");
    let marker = format!("{parent}/m-{token}");
    let data = render_return(ranges);
    let mut previous = previous.map(str::to_string);
    loop {
        let (client, generation) = session.client();
        let persistent = CreateMode::Persistent.with_acls(session.default_acls());
        let ephemeral = CreateMode::Ephemeral.with_acls(session.default_acls());
        let mut multi = client.new_multi_writer();
        let built = multi
            .add_create(&node, &data, &persistent)
            .and_then(|()| multi.add_set_data(&parent, &[], None))
            .and_then(|()| multi.add_create(&marker, &[], &ephemeral))
            .and_then(|()| match &previous {
                Some(p) => multi.add_delete(&format!("{parent}/{p}"), None),
                None => Ok(()),
            });
        built.map_err(|err| refused(session, path, err))?;
        let reply = tokio::time::timeout(session.request_limit(), multi.commit())
            .await
            .unwrap_or(Err(MultiWriteError::RequestFailed {
                source: ZkError::Timeout,
            }));
        let err = match reply {
            Ok(results) => {
                let announced = results.iter().find_map(|r| match r {
                    MultiWriteResult::SetData { stat } => Some(stat.version),
                    _ => None,
                });
                return Ok(Returned {
                    node: format!("r-{token}"),
                    marker: format!("m-{token}"),
                    announced,
                });
            }
            Err(MultiWriteError::OperationFailed { index, source }) => match (index, &source) {
                // The parent is missing (a category created before pushes had their node).
                (0 | 1, ZkError::NoNode) => {
                    ensure_node(session, path, &parent).await?;
                    continue;
                }
                // The previous marker went with an earlier session: leave it out.
                (3, ZkError::NoNode) => {
                    previous = None;
                    continue;
                }
                _ => source,
            },
            Err(MultiWriteError::RequestFailed { source }) => source,
        };
        match fate(&err) {
            Fate::Refused => return Err(refused(session, path, err)),
            Fate::Expired => session.report_lost(generation, &err.to_string()).await,
            Fate::Unknown => {
                tracing::warn!(category = path, %err, op = "push", "reply lost; resolving the outcome");
                loop {
                    if session.is_gone_generation(generation) || budget.expired() {
                        return Err(ZooidError::OutcomeUnknown {
                            category: path.to_string(),
                            op: crate::WriteOp::Push,
                            ids: ranges.to_vec(),
                        });
                    }
                    budget.try_attempt();
                    let lookup = async {
                        client.sync(&parent).await?;
                        client.check_stat(&marker).await
                    };
                    match session.run(generation, lookup).await {
                        Ok(Some(_)) => {
                            return Ok(Returned {
                                node: format!("r-{token}"),
                                marker: format!("m-{token}"),
                                announced: None,
                            })
                        }
                        Ok(None) if !session.is_gone_generation(generation) => break,
                        Ok(None) => {}
                        Err(_) => budget.backoff().await,
                    }
                }
            }
        }
        if !budget.try_attempt() {
            return Err(ZooidError::ConnectionLost {
                category: path.to_string(),
                reason: format!("pushing: {err}"),
            });
        }
        budget.backoff().await;
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
/// its generation has claimed (needs the ZooKeeper session).
pub async fn usage(
    session: Option<&Session>,
    path: &str,
    pool: &crate::pool::Pool,
) -> Result<Usage> {
    let Some(blocks) = pool.blocks() else {
        return Ok(Usage {
            free: pool.free().count(),
            available: pool.available(),
            high_water: pool.high_water(),
        });
    };
    let session = session.ok_or_else(needs_zookeeper)?;
    let frontier = frontier(session, path, &blocks).await?;
    let last = pool.bounds().end();
    let top = pool.ceiling().unwrap_or(last).min(last);
    let unclaimed = |upto: i64| {
        if upto >= frontier {
            upto.abs_diff(frontier) + 1
        } else {
            0
        }
    };
    Ok(Usage {
        free: pool.free_count() + unclaimed(last),
        available: pool.free_count_at_most(top) + unclaimed(top),
        high_water: (frontier - 1).max(pool.bounds().start() - 1),
    })
}

/// The error for block allocation on an embedded store.
pub(crate) fn needs_zookeeper() -> ZooidError {
    ZooidError::InvalidArgument(
        "block allocation (pool format 3) needs a ZooKeeper store, not mem: or file:".into(),
    )
}

/// Creates the sequence parent of `generation` (after a rotation or a repair), with the pool
/// node's ACL; an existing one is left alone.
pub(crate) async fn ensure_parent(session: &Session, path: &str, generation: u64) -> Result<()> {
    let parent = sequence_parent(path, generation);
    let (client, gen) = session.client();
    let unreachable = |err: ZkError| ZooidError::ConnectionLost {
        category: path.to_string(),
        reason: format!("creating {parent}: {err}"),
    };
    let (acl, _) = session
        .run(gen, client.get_acl(path))
        .await
        .map_err(unreachable)?;
    let options = CreateMode::Persistent.with_acls(zookeeper_client::Acls::new(&acl));
    match session
        .run(gen, client.create(&parent, &[], &options))
        .await
    {
        Ok(_) | Err(ZkError::NodeExists) => Ok(()),
        Err(ZkError::NoAuth) => Err(refused(session, path, ZkError::NoAuth)),
        Err(err) => Err(unreachable(err)),
    }
}

/// Seals the generation: creates in it fail from now on. Idempotent.
pub(crate) async fn seal(session: &Session, path: &str, blocks: &Blocks) -> Result<()> {
    let parent = sequence_parent(path, blocks.generation);
    let (client, generation) = session.client();
    match session
        .run(generation, client.set_data(&parent, b"sealed", Some(0)))
        .await
    {
        Ok(_) | Err(ZkError::BadVersion) | Err(ZkError::NoNode) => Ok(()),
        Err(err) => Err(ZooidError::ConnectionLost {
            category: path.to_string(),
            reason: format!("sealing a block generation: {err}"),
        }),
    }
}

/// Deletes a retired generation's sequence parent and its children (best effort: a failure is
/// logged and the next rotation tries again).
pub(crate) async fn retire(session: &Session, path: &str, generation: u64) {
    let parent = sequence_parent(path, generation);
    let (client, gen) = session.client();
    let children = match session.run(gen, client.list_children(&parent)).await {
        Ok(children) => children,
        Err(ZkError::NoNode) => return,
        Err(err) => {
            tracing::debug!(category = path, %err, generation, "retiring a block generation");
            return;
        }
    };
    // Small deletes with pauses between them: the claims of the new generation queue behind
    // each one on the server, so none may be long.
    for (i, chunk) in children.chunks(RETIRE_BATCH).enumerate() {
        if i > 0 {
            tokio::time::sleep(RETIRE_PAUSE).await;
        }
        let mut multi = client.new_multi_writer();
        let built = chunk
            .iter()
            .try_for_each(|child| multi.add_delete(&format!("{parent}/{child}"), None));
        let committed = tokio::time::timeout(session.request_limit(), multi.commit()).await;
        if built.is_err() || !matches!(committed, Ok(Ok(_))) {
            tracing::debug!(
                category = path,
                generation,
                "retiring a block generation: delete failed"
            );
            return;
        }
    }
    if let Err(err) = session.run(gen, client.delete(&parent, None)).await {
        tracing::debug!(category = path, %err, generation, "retiring a block generation");
    }
}

/// Watches a pool node in block allocation for changes made by others, so that the next take
/// reads it again instead of claiming on a remembered state (the claim's `check` of the pool node
/// would fail): sets `changed` when the node's version moves away from `known`, the version this
/// process last read or wrote (its own writes do not count). One watch per category at a time
/// (`armed`); it ends when it has set `changed` or the session ended.
pub(crate) fn watch_pool(
    session: &Session,
    path: &str,
    known: Arc<AtomicI32>,
    armed: Arc<AtomicBool>,
    changed: Arc<AtomicBool>,
) {
    if armed.swap(true, Ordering::AcqRel) {
        return;
    }
    let (client, _) = session.client();
    let path = path.to_string();
    tokio::spawn(async move {
        loop {
            match client.check_and_watch_stat(&path).await {
                // At or below: this process's own write (`known` is set before it is sent, so
                // the node may still be a version behind). Above: another process wrote.
                Ok((Some(stat), watcher)) if stat.version <= known.load(Ordering::Acquire) => {
                    watcher.changed().await;
                }
                _ => break,
            }
        }
        changed.store(true, Ordering::Release);
        armed.store(false, Ordering::Release);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_numbers_and_names() {
        assert_eq!(sequence_of("/p/zooid-blocks-3/00ab-0000000042"), Some(42));
        assert_eq!(sequence_of("/p/zooid-blocks-3/x"), None);
        assert_eq!(consecutive(&[4, 5, 6], 3), Some(4));
        assert_eq!(consecutive(&[4, 6, 7], 3), None);
        assert_eq!(consecutive(&[4, 5], 3), None);
        assert!(is_sequence_parent("zooid-blocks-12"));
        assert!(!is_sequence_parent("zooid-blocks-"));
        assert!(!is_sequence_parent("zooid-blocks-1a"));
        assert_eq!(sequence_parent("/a/b", 7), "/a/b/zooid-blocks-7");
    }
}
