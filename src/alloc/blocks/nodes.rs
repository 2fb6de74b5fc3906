//! The small requests of block allocation on a pool's child nodes, and how their refusals
//! read as errors.

use crate::error::{Result, ZooidError};
use crate::zk::{not_authorized, Create, Failure, Verdict, Zk, ZooKeeperExt};

/// The error of a block-allocation request on pool `path` that ZooKeeper answered with `err`
/// (read by [`crate::zk::classify`] as `verdict`) and the caller has no reading of its own for:
/// a refusal by the node's ACL is `NotAuthorized`; any other is `ConnectionLost`, as block
/// requests have always reported it (unlike [`crate::zk::to_zooid`], which says `Store`).
pub(crate) fn refused(
    zk: &Zk,
    path: &str,
    verdict: Verdict,
    err: &dyn std::fmt::Display,
) -> ZooidError {
    match verdict {
        Verdict::NotAuthorized => not_authorized(path, zk.options()),
        _ => ZooidError::ConnectionLost {
            category: path.to_string(),
            reason: format!("block claim refused: {err}"),
        },
    }
}

/// Creates `node` (a persistent, empty child of pool `path`) unless it exists.
pub(crate) async fn ensure_node(zk: &Zk, path: &str, node: &str) -> Result<()> {
    let generation = zk.generation();
    let options = Create::persistent();
    match zk.create(generation, node, &[], &options).await {
        Ok(_)
        | Err(Failure {
            verdict: Verdict::NodeExists,
            ..
        }) => Ok(()),
        Err(Failure {
            verdict: Verdict::NoNode,
            ..
        }) => Err(ZooidError::NotFound {
            category: path.to_string(),
        }),
        Err(
            err @ Failure {
                verdict: verdict @ Verdict::NotAuthorized,
                ..
            },
        ) => Err(refused(zk, path, verdict, &err)),
        Err(err) => Err(ZooidError::ConnectionLost {
            category: path.to_string(),
            reason: format!("creating {node}: {err}"),
        }),
    }
}
