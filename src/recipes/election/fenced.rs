//! Fenced writes: `multi(check(own candidate node, any version), ops...)`, applied only while
//! this candidate leads on a live session.

use super::*;

/// One write of a fenced `multi` (see [`Election::fenced`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FencedOp {
    /// Create a persistent node (its parent must exist).
    Create { path: String, data: Vec<u8> },
    /// Set a node's data, at an expected version (`None`: any version).
    SetData {
        path: String,
        data: Vec<u8>,
        version: Option<i32>,
    },
    /// Delete a node, at an expected version (`None`: any version).
    Delete { path: String, version: Option<i32> },
    /// Require a node to be at this data version.
    Check { path: String, version: i32 },
}

/// The result of one [`FencedOp`], in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FencedResult {
    /// The node was created at this path.
    Created { path: String },
    /// The data was set; the node's new data version.
    Set { version: i32 },
    /// The node was deleted.
    Deleted,
    /// The check passed.
    Checked,
}

impl FencedOp {
    /// The node the op is about.
    pub fn path(&self) -> &str {
        match self {
            FencedOp::Create { path, .. }
            | FencedOp::SetData { path, .. }
            | FencedOp::Delete { path, .. }
            | FencedOp::Check { path, .. } => path,
        }
    }
}

impl Election {
    /// Runs `ops` as one ZooKeeper `multi` whose first op checks that our own candidate node
    /// exists (any version), so they apply only while we still lead on a live session. Returns one result per op.
    ///
    /// Errors: `NotLeader` when we do not lead (refused locally when we are Inactive, or Paused
    /// under [`PausePolicy::Stop`]; refused by ZooKeeper when our node is gone or our session
    /// expired): nothing was written. `Store` when one of `ops` failed (nothing was written), or
    /// when the reply was lost (the reason says the outcome is unknown). `InvalidArgument` for a
    /// malformed op path (nothing was sent). `Closed` after resign.
    pub async fn fenced(&self, ops: &[FencedOp]) -> Result<Vec<FencedResult>> {
        self.fenced_write(self.zk.generation().into(), ops).await
    }

    /// [`Election::fenced`] sent only on the session generation and connection `read`, the ones
    /// the caller read what it planned on: a plan read on an earlier session (before a wipe and
    /// a restore, whose node may be back at the version read with other contents) is refused as
    /// `NotLeader` even when this candidate leads again on a later one, and nothing is sent; one
    /// read on an earlier connection of the same session is not sent either (`Store`, "not
    /// sent"), even when the session layer has not noticed the reconnection yet (the client
    /// checks it where it writes the request).
    pub async fn fenced_on(&self, read: ReadOn, ops: &[FencedOp]) -> Result<Vec<FencedResult>> {
        self.fenced_write(read.into(), ops).await
    }

    /// A fenced write on `on` (a generation, and the connection of a plan's read if any).
    async fn fenced_write(&self, on: WriteOn, ops: &[FencedOp]) -> Result<Vec<FencedResult>> {
        let generation = on.generation;
        if *self.close.borrow() {
            return Err(self.closed_error());
        }
        let status = self.status();
        let leading = lock(&self.shared).leading.clone();
        let not_leader = |reason: &str| ZooidError::NotLeader {
            group: self.group.clone(),
            reason: reason.to_string(),
        };
        let Some(leading) = leading else {
            return Err(not_leader("this candidate does not lead"));
        };
        if status.state == LeaderState::Inactive {
            // Leading, but not confirmed yet (the second confirmation makes it Active).
            return Err(not_leader("this candidate does not lead yet"));
        }
        if self.policy == PausePolicy::Stop && status.state != LeaderState::Active {
            return Err(not_leader(
                "paused, and the stop policy ends a paused leadership",
            ));
        }
        if generation != leading.generation {
            return Err(not_leader(
                "the session of the leadership is not the one the write was planned on",
            ));
        }
        // A malformed path is the caller's mistake, refused here before anything is sent (the
        // client would refuse it too, but as a refused op, indistinguishable from the servers').
        for op in ops {
            let path = op.path();
            if path != "/" {
                crate::zk::validate_path("fenced op path", path)?;
            }
        }
        let create = Create::persistent();
        let mut multi = Multi::new();
        // Any version: the node's existence is what proves the leadership (an operator's
        // `setData` on it must not block the leader's writes).
        multi.check(&leading.node, -1);
        for op in ops {
            match op {
                FencedOp::Create { path, data } => multi.create(path, data, &create),
                FencedOp::SetData {
                    path,
                    data,
                    version,
                } => multi.set(path, data, *version),
                FencedOp::Delete { path, version } => multi.delete(path, *version),
                FencedOp::Check { path, version } => multi.check(path, *version),
            };
        }
        let committed = match on.connection {
            Some(connection) => {
                let read = ReadOn {
                    generation,
                    connection,
                };
                multi.commit_on(&*self.zk, read).await
            }
            None => multi.commit(&*self.zk, generation).await,
        };
        match committed {
            Ok(results) => Ok(fenced_results(results)),
            Err(failed) => Err(self.fenced_error(ops, failed)),
        }
    }

    /// The error of a fenced write that failed (see [`Election::fenced`]).
    fn fenced_error(&self, ops: &[FencedOp], failed: MultiFailed) -> ZooidError {
        let not_leader = |reason: String| ZooidError::NotLeader {
            group: self.group.clone(),
            reason,
        };
        let source = &failed.failure;
        match (failed.index, failed.verdict()) {
            (Some(0), _) => not_leader(format!(
                "ZooKeeper refused the write: our candidate node is gone ({source})"
            )),
            (Some(index), verdict) => {
                let path = ops
                    .get(index - 1)
                    .map(|op| op.path().to_string())
                    .unwrap_or_default();
                if verdict == Verdict::NotAuthorized {
                    return crate::zk::not_authorized(&path, self.zk.options());
                }
                ZooidError::Store {
                    path,
                    reason: format!(
                        "fenced op {} failed: {source}; nothing was written",
                        index - 1
                    ),
                }
            }
            // The commit told the session layer (or the generation was given up already, and
            // the multi was not sent).
            (None, Verdict::Expired | Verdict::Closed) => {
                not_leader(format!("ZooKeeper refused the write: {source}"))
            }
            (None, Verdict::NotAuthorized) => {
                crate::zk::not_authorized(&self.group, self.zk.options())
            }
            (None, Verdict::NotSent) => ZooidError::Store {
                path: self.group.clone(),
                reason: format!("fenced write not sent: {source}; nothing was written"),
            },
            (None, Verdict::Unknown) => ZooidError::Store {
                path: self.group.clone(),
                reason: format!("fenced write: {source}; outcome unknown"),
            },
            (None, _) => ZooidError::Store {
                path: self.group.clone(),
                reason: format!("fenced write refused: {source}; nothing was written"),
            },
        }
    }
}

/// One result per fenced op: the committed `multi`'s results without the leadership check's.
fn fenced_results(mut results: Vec<OpResult>) -> Vec<FencedResult> {
    if !results.is_empty() {
        results.remove(0);
    }
    results
        .into_iter()
        .map(|r| match r {
            OpResult::Create { path, .. } => FencedResult::Created { path },
            OpResult::Set { stat } => FencedResult::Set {
                version: stat.version,
            },
            OpResult::Delete => FencedResult::Deleted,
            OpResult::Check => FencedResult::Checked,
        })
        .collect()
}
