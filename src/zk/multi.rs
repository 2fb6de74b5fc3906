//! One ZooKeeper `multi`, built op by op and committed on a named session generation through
//! the [`ZooKeeper`] interface (which bounds it by the request limit and decodes its failure
//! into which op failed and what the error says).

use super::interface::{Create, MultiFailed, Op, OpResult, ZooKeeper};
use super::status::ReadOn;

/// A `multi` being built.
#[derive(Clone, Debug, Default)]
pub struct Multi {
    ops: Vec<Op>,
}

impl Multi {
    /// An empty `multi`.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of ops added so far (the index the next op gets).
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether no op was added.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Checks that `path` is at data version `version`.
    pub fn check(&mut self, path: &str, version: i32) -> &mut Self {
        self.ops.push(Op::Check {
            path: path.to_string(),
            version,
        });
        self
    }

    /// Creates `path` holding `data`.
    pub fn create(&mut self, path: &str, data: &[u8], create: &Create) -> &mut Self {
        self.ops.push(Op::Create {
            path: path.to_string(),
            data: data.to_vec(),
            create: create.clone(),
        });
        self
    }

    /// Sets `path`'s data if it is at `expected` (`None`: any version).
    pub fn set(&mut self, path: &str, data: &[u8], expected: Option<i32>) -> &mut Self {
        self.ops.push(Op::Set {
            path: path.to_string(),
            data: data.to_vec(),
            expected,
        });
        self
    }

    /// Deletes `path` if it is at `expected` (`None`: any version).
    pub fn delete(&mut self, path: &str, expected: Option<i32>) -> &mut Self {
        self.ops.push(Op::Delete {
            path: path.to_string(),
            expected,
        });
        self
    }

    /// Commits the ops as one transaction on the session of `generation`.
    pub async fn commit<Z: ZooKeeper + ?Sized>(
        self,
        zk: &Z,
        generation: u64,
    ) -> Result<Vec<OpResult>, MultiFailed> {
        zk.multi(generation.into(), self.ops).await
    }

    /// Commits the ops as one transaction on the session generation and connection `read` a
    /// plan was made on: written on that connection only; after a reconnection (noticed by the
    /// session layer or not) it fails unsent with [`Verdict::NotSent`](super::Verdict::NotSent).
    pub async fn commit_on<Z: ZooKeeper + ?Sized>(
        self,
        zk: &Z,
        read: ReadOn,
    ) -> Result<Vec<OpResult>, MultiFailed> {
        zk.multi(read.into(), self.ops).await
    }
}

/// The data version the first set-data op of a committed `multi` produced.
pub fn set_version(results: &[OpResult]) -> Option<i32> {
    results.iter().find_map(|r| match r {
        OpResult::Set { stat } => Some(stat.version),
        _ => None,
    })
}
