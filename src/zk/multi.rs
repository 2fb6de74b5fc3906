//! One ZooKeeper `multi`: built op by op, committed within the session's request limit, and its
//! failure decoded into which op failed and what the error says.

use zookeeper_client::{
    Client, CreateOptions, Error as ZkError, MultiWriteError, MultiWriteResult, MultiWriter,
};

use super::classify::{classify, is_gone, Verdict};
use super::session::Session;

/// Why a `multi` failed.
#[derive(Clone, Debug)]
pub struct MultiFailed {
    /// The index of the op that failed, counted from 0 in the order the ops were added; `None`
    /// when the request as a whole failed (no reply in time, connection loss, session gone).
    pub index: Option<usize>,
    /// What the servers (or the client) said.
    pub error: ZkError,
}

impl MultiFailed {
    /// What the error says (see [`classify`]). A failed op means the servers answered and
    /// nothing of the `multi` applied.
    pub fn verdict(&self) -> Verdict {
        classify(&self.error)
    }

    /// What op `index` failed with, if it is the one that failed.
    pub fn at(&self, index: usize) -> Option<Verdict> {
        (self.index == Some(index)).then(|| self.verdict())
    }
}

impl std::fmt::Display for MultiFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.index {
            Some(index) => write!(f, "op {index} of the multi failed: {}", self.error),
            None => self.error.fmt(f),
        }
    }
}

impl From<MultiWriteError> for MultiFailed {
    fn from(err: MultiWriteError) -> Self {
        match err {
            MultiWriteError::RequestFailed { source } => Self {
                index: None,
                error: source,
            },
            MultiWriteError::OperationFailed { index, source } => Self {
                index: Some(index),
                error: source,
            },
        }
    }
}

/// A `multi` being built on the client of one session generation. An op the client refuses to
/// add (a malformed path) is reported by [`Multi::commit`] as that op's failure, so callers
/// chain ops without checking each.
pub struct Multi<'a> {
    writer: MultiWriter<'a>,
    ops: usize,
    refused: Option<MultiFailed>,
}

impl<'a> Multi<'a> {
    /// An empty `multi` on `client`.
    pub fn new(client: &'a Client) -> Self {
        Self {
            writer: client.new_multi_writer(),
            ops: 0,
            refused: None,
        }
    }

    /// The number of ops added so far (the index the next op gets).
    pub fn len(&self) -> usize {
        self.ops
    }

    /// Whether no op was added.
    pub fn is_empty(&self) -> bool {
        self.ops == 0
    }

    /// The first op the client refused to add (a malformed path, say), if any: nothing is
    /// sent then, and [`Multi::commit`] reports it.
    pub fn refused(&self) -> Option<&MultiFailed> {
        self.refused.as_ref()
    }

    fn add(&mut self, added: Result<(), ZkError>) -> &mut Self {
        if let (Err(error), None) = (added, &self.refused) {
            self.refused = Some(MultiFailed {
                index: Some(self.ops),
                error,
            });
        }
        self.ops += 1;
        self
    }

    /// Checks that `path` is at data version `version`.
    pub fn check(&mut self, path: &str, version: i32) -> &mut Self {
        let added = self.writer.add_check_version(path, version);
        self.add(added)
    }

    /// Creates `path` holding `data`.
    pub fn create(&mut self, path: &str, data: &[u8], options: &CreateOptions<'_>) -> &mut Self {
        let added = self.writer.add_create(path, data, options);
        self.add(added)
    }

    /// Sets `path`'s data if it is at `expected` (`None`: any version).
    pub fn set(&mut self, path: &str, data: &[u8], expected: Option<i32>) -> &mut Self {
        let added = self.writer.add_set_data(path, data, expected);
        self.add(added)
    }

    /// Deletes `path` if it is at `expected` (`None`: any version).
    pub fn delete(&mut self, path: &str, expected: Option<i32>) -> &mut Self {
        let added = self.writer.add_delete(path, expected);
        self.add(added)
    }

    /// Commits the ops as one transaction, bounded by [`Session::request_limit`] (no reply in
    /// time: `Timeout` with no index, an outcome as unknown as a connection loss). When the error
    /// says the session of `generation` is gone, the session layer is told, so the caller's next
    /// attempt runs on a new session.
    pub async fn commit(
        mut self,
        session: &Session,
        generation: u64,
    ) -> Result<Vec<MultiWriteResult>, MultiFailed> {
        if let Some(refused) = self.refused {
            return Err(refused);
        }
        let reply = tokio::time::timeout(session.request_limit(), self.writer.commit())
            .await
            .unwrap_or(Err(MultiWriteError::RequestFailed {
                source: ZkError::Timeout,
            }));
        let failed = match reply {
            Ok(results) => return Ok(results),
            Err(err) => MultiFailed::from(err),
        };
        if failed.index.is_none() && is_gone(&failed.error) {
            session
                .report_lost(generation, &failed.error.to_string())
                .await;
        }
        Err(failed)
    }
}

/// The data version the first set-data op of a committed `multi` produced.
pub fn set_version(results: &[MultiWriteResult]) -> Option<i32> {
    results.iter().find_map(|r| match r {
        MultiWriteResult::SetData { stat } => Some(stat.version),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_op_is_told_apart_from_a_failed_request() {
        let op = MultiFailed::from(MultiWriteError::OperationFailed {
            index: 2,
            source: ZkError::BadVersion,
        });
        assert_eq!(op.at(2), Some(Verdict::BadVersion));
        assert_eq!(op.at(0), None);
        assert_eq!(op.to_string(), "op 2 of the multi failed: mismatch version");
        let lost = MultiFailed::from(MultiWriteError::RequestFailed {
            source: ZkError::ConnectionLoss,
        });
        assert_eq!((lost.index, lost.verdict()), (None, Verdict::Unknown));
        assert_eq!(lost.at(0), None);
    }
}
