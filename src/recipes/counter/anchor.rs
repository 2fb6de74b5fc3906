//! A handle's markers under the counter node: made by each write, and by an anchor before a
//! handle's first read on a session, which ties that first write to the node it read.

use super::{retryable, Counter, MARKER_PREFIX};
use crate::zk::{Create, Failure, Verdict};

/// How making an anchor went.
pub(super) enum Anchor {
    /// Made: its path.
    Made(String),
    /// The counter node is not there.
    NoNode,
    /// Refused (nothing made).
    Refused(Failure),
    /// The reply was lost: the anchor at this path may or may not have been made, and may still
    /// be, later (so it cannot be used).
    Lost(String, Failure),
}

/// A new marker's path under the counter at `path`: a 128-bit random token no other write uses.
pub(super) fn new_marker(path: &str) -> String {
    format!("{path}/{MARKER_PREFIX}{:032x}", crate::random::random::<u128>())
}

impl Counter {
    /// Makes an anchor (an ephemeral marker holding nothing) under the counter node on the
    /// session of `generation`, for a handle that has no marker there yet.
    pub(super) async fn anchor(&self, generation: u64) -> Anchor {
        let anchor = new_marker(&self.path);
        match self
            .zk
            .create(generation, &anchor, &[], &Create::ephemeral())
            .await
        {
            Ok(_) => Anchor::Made(anchor),
            Err(Failure {
                verdict: Verdict::NoNode,
                ..
            }) => Anchor::NoNode,
            Err(failure) if !retryable(&failure) => Anchor::Refused(failure),
            Err(failure) => Anchor::Lost(anchor, failure),
        }
    }
}
