//! One write of the counter: its `multi` (the versioned `setData`, the write's marker, the delete
//! of the handle's previous marker or anchor), kept to be sent again unchanged, and what its
//! failure says.

use super::Counter;
use crate::zk::{Create, Failure, Fate, Multi, Verdict};

/// One write `multi`'s content, kept to send it again unchanged.
pub(super) struct Write<'a> {
    pub(super) value: [u8; 8],
    pub(super) version: i32,
    pub(super) marker: &'a str,
    /// The handle's marker made under the node before the read this write was planned on: the
    /// write applies only to that node, not to one made again since.
    pub(super) previous: &'a str,
    pub(super) marker_data: String,
}

/// Why one attempt's write failed.
pub(super) enum WriteError {
    /// The counter's version moved (`BADVERSION` on the `setData`).
    Conflict,
    /// The counter node is gone.
    NoNode,
    /// The previous marker was not there: the node was made again since (a wipe and a restore),
    /// or the marker was deleted by hand. Forget it and try again.
    StaleMarker,
    /// The reply was lost: the write may or may not have applied.
    Lost(String),
    /// Refused for a reason that proves nothing was written.
    Refused(Failure),
}

impl Counter {
    /// Sends one write `multi` on the session of `generation` (a given-up generation's is not
    /// sent: it fails as a lost write, which [`Counter::resolve`] settles on the next session).
    pub(super) async fn send(
        &self,
        generation: u64,
        write: &Write<'_>,
    ) -> std::result::Result<(), WriteError> {
        let mut multi = Multi::new();
        multi
            .set(&self.path, &write.value, Some(write.version))
            .create(
                write.marker,
                write.marker_data.as_bytes(),
                &Create::ephemeral(),
            )
            .delete(write.previous, Some(0));
        let failed = match multi.commit(&*self.zk, generation).await {
            Ok(_) => return Ok(()),
            Err(failed) => failed,
        };
        match (failed.index, failed.verdict()) {
            (Some(0), Verdict::BadVersion) => Err(WriteError::Conflict),
            (Some(0), Verdict::NoNode) => Err(WriteError::NoNode),
            (Some(2), Verdict::NoNode | Verdict::BadVersion) => Err(WriteError::StaleMarker),
            (_, verdict) if verdict.fate() == Fate::Refused => {
                Err(WriteError::Refused(failed.failure))
            }
            _ => Err(WriteError::Lost(failed.failure.message)),
        }
    }
}
