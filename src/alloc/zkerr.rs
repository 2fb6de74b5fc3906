//! The allocator's reading of ZooKeeper errors: one classification for every request it sends
//! through the session itself (claims, pushes, part writes, the creates of a category in block
//! allocation, generation moves), and the errors derived from it. One place, so that the `zk`
//! layer's classifier can replace it whole.

use zookeeper_client::Error as ZkError;

use crate::error::ZooidError;
use crate::session::{fate, Fate, Session};
use crate::store::StoreError;

/// What a failed ZooKeeper request means for the allocator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ZkFailure {
    /// A version check failed: another write came first. Not applied.
    BadVersion,
    /// A node the request needs is missing. Not applied.
    NoNode,
    /// A node the request creates exists. Not applied.
    NodeExists,
    /// The node's ACL refuses this client. Not applied.
    NoAuth,
    /// Refused for another reason (bad arguments, quota, ...). Not applied.
    Refused,
    /// The session is gone: the request did not apply on it, and never will.
    Expired,
    /// The reply was lost: the request may have applied.
    Unknown,
}

/// Classifies a ZooKeeper error.
pub(crate) fn classify(err: &ZkError) -> ZkFailure {
    match err {
        ZkError::BadVersion => ZkFailure::BadVersion,
        ZkError::NoNode => ZkFailure::NoNode,
        ZkError::NodeExists => ZkFailure::NodeExists,
        ZkError::NoAuth => ZkFailure::NoAuth,
        other => match fate(other) {
            Fate::Refused => ZkFailure::Refused,
            Fate::Expired => ZkFailure::Expired,
            Fate::Unknown => ZkFailure::Unknown,
        },
    }
}

/// The store error of a pool write that failed with `err`, sent on session `generation`: a
/// gone session is reported (so that the next attempt runs on a new one), and counts as a lost
/// reply, like every error after which the write may have applied.
pub(crate) async fn store_error(session: &Session, generation: u64, err: ZkError) -> StoreError {
    match classify(&err) {
        ZkFailure::BadVersion => StoreError::BadVersion,
        ZkFailure::NoNode => StoreError::NoNode,
        ZkFailure::NoAuth => StoreError::NotAuthorized {
            identity: session.options().identity(),
        },
        ZkFailure::NodeExists | ZkFailure::Refused => StoreError::Refused(err.to_string()),
        ZkFailure::Expired => {
            session.report_lost(generation, &err.to_string()).await;
            StoreError::Unknown(err.to_string())
        }
        ZkFailure::Unknown => StoreError::Unknown(err.to_string()),
    }
}

/// The error of a block-allocation request on pool `path` that ZooKeeper refused.
pub(crate) fn refused(session: &Session, path: &str, err: ZkError) -> ZooidError {
    match classify(&err) {
        ZkFailure::NoAuth => ZooidError::NotAuthorized {
            path: path.to_string(),
            identity: session.options().identity(),
        },
        _ => ZooidError::ConnectionLost {
            category: path.to_string(),
            reason: format!("block claim refused: {err}"),
        },
    }
}

/// The error for block allocation on an embedded store.
pub(crate) fn needs_zookeeper() -> ZooidError {
    ZooidError::InvalidArgument(
        "block allocation (pool format 3) needs a ZooKeeper store, not mem: or file:".into(),
    )
}
