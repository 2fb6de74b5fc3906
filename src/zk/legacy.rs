//! The road to ZooKeeper being retired: the raw client's `multi` and error reading, kept only
//! while the modules above `zk` move onto [`super::ZooKeeper`]. Nothing new uses it.

use zookeeper_client::{
    Client, CreateOptions, Error as ZkError, MultiWriteError, MultiWriteResult, MultiWriter,
};

use super::classify::{classify, is_gone, Verdict};
use super::session::Session;

/// Why a `multi` failed.
#[derive(Clone, Debug)]
pub struct ClientMultiFailed {
    /// The index of the op that failed, counted from 0 in the order the ops were added; `None`
    /// when the request as a whole failed (no reply in time, connection loss, session gone).
    pub index: Option<usize>,
    /// What the servers (or the client) said.
    pub error: ZkError,
}

impl ClientMultiFailed {
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

impl std::fmt::Display for ClientMultiFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.index {
            Some(index) => write!(f, "op {index} of the multi failed: {}", self.error),
            None => self.error.fmt(f),
        }
    }
}

impl From<MultiWriteError> for ClientMultiFailed {
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
pub struct ClientMulti<'a> {
    writer: MultiWriter<'a>,
    ops: usize,
    refused: Option<ClientMultiFailed>,
}

impl<'a> ClientMulti<'a> {
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
    pub fn refused(&self) -> Option<&ClientMultiFailed> {
        self.refused.as_ref()
    }

    fn add(&mut self, added: Result<(), ZkError>) -> &mut Self {
        if let (Err(error), None) = (added, &self.refused) {
            self.refused = Some(ClientMultiFailed {
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
    ) -> Result<Vec<MultiWriteResult>, ClientMultiFailed> {
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
            Err(err) => ClientMultiFailed::from(err),
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
pub fn client_set_version(results: &[MultiWriteResult]) -> Option<i32> {
    results.iter().find_map(|r| match r {
        MultiWriteResult::SetData { stat } => Some(stat.version),
        _ => None,
    })
}

/// A request's result with a failure's error paired with its [`Verdict`].
pub trait Classified<T> {
    /// `Err(error)` becomes `Err((classify(&error), error))`.
    fn classified(self) -> Result<T, (Verdict, ZkError)>;
}

impl<T> Classified<T> for Result<T, ZkError> {
    fn classified(self) -> Result<T, (Verdict, ZkError)> {
        self.map_err(|err| (classify(&err), err))
    }
}

/// [`super::to_zooid`] for a raw client error.
pub fn client_to_zooid(
    err: &ZkError,
    path: &str,
    options: &super::options::ConnectOptions,
) -> crate::error::ZooidError {
    super::classify::to_zooid(&super::interface::Failure::from(err), path, options)
}
