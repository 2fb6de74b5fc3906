//! A store wrapper that injects lost replies, for testing the lost-reply protocol on the
//! embedded stores (the ZooKeeper tests lose real replies through a TCP proxy instead).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use zooid::format::{OpKind, OpRecord, OpToken, Pool};
use zooid::store::{StoreError, Versioned};
use zooid::Store;

/// What to do to the next `set`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Apply the write, then report its reply lost.
    LoseReplyAfterApply,
    /// Report the reply lost without applying the write (the request never arrived).
    LoseRequest,
    /// Apply the write, let `n` other clients take one ID each, then report the reply lost.
    LoseReplyThenOthersWrite(u32),
    /// Let `n` other clients take one ID each, drop this write, report the reply lost.
    OthersWriteThenLoseRequest(u32),
    /// Another client takes one ID first, so this write meets a version conflict.
    OtherWinsRace,
}

/// Wraps a store; faults are consumed one per `set`, in order.
pub struct FaultyStore<S> {
    pub inner: S,
    faults: Mutex<VecDeque<Fault>>,
    /// When set, reads report this version instead of the real one.
    pub report_version: Mutex<Option<i32>>,
    pub sets: AtomicUsize,
    pub injected: AtomicUsize,
    /// How many operations the other clients' writes keep in the node's log.
    pub foreign_log_len: AtomicUsize,
}

impl<S: Store> FaultyStore<S> {
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            faults: Mutex::new(VecDeque::new()),
            report_version: Mutex::new(None),
            sets: AtomicUsize::new(0),
            injected: AtomicUsize::new(0),
            foreign_log_len: AtomicUsize::new(zooid::format::DEFAULT_OP_LOG_LEN),
        }
    }

    pub fn arm(&self, fault: Fault) {
        self.faults.lock().unwrap().push_back(fault);
    }

    /// Another client takes one ID, writing through the inner store.
    async fn foreign_take(&self, path: &str) {
        let node = self.inner.get(path).await.expect("foreign read");
        let mut pool = Pool::parse(path, &node.data).expect("foreign parse");
        let taken = pool.free_mut().take_lowest(1);
        assert_eq!(taken.len(), 1);
        pool.record(
            OpRecord {
                version: node.version + 1,
                token: OpToken::random(),
                kind: OpKind::Take,
                count: 1,
            },
            self.foreign_log_len.load(Ordering::SeqCst),
        );
        self.inner
            .set(path, pool.render().as_bytes(), node.version)
            .await
            .expect("foreign write");
    }
}

impl<S: Store> Store for FaultyStore<S> {
    async fn get(&self, path: &str) -> Result<Versioned, StoreError> {
        let mut node = self.inner.get(path).await?;
        if let Some(v) = *self.report_version.lock().unwrap() {
            node.version = v;
        }
        Ok(node)
    }
    async fn create(&self, path: &str, data: &[u8]) -> Result<(), StoreError> {
        self.inner.create(path, data).await
    }
    async fn set(&self, path: &str, data: &[u8], expected: i32) -> Result<i32, StoreError> {
        self.sets.fetch_add(1, Ordering::SeqCst);
        let fault = self.faults.lock().unwrap().pop_front();
        let Some(fault) = fault else {
            return self.inner.set(path, data, expected).await;
        };
        self.injected.fetch_add(1, Ordering::SeqCst);
        match fault {
            Fault::LoseReplyAfterApply => {
                self.inner.set(path, data, expected).await?;
            }
            Fault::LoseRequest => {}
            Fault::LoseReplyThenOthersWrite(n) => {
                self.inner.set(path, data, expected).await?;
                for _ in 0..n {
                    self.foreign_take(path).await;
                }
            }
            Fault::OthersWriteThenLoseRequest(n) => {
                for _ in 0..n {
                    self.foreign_take(path).await;
                }
            }
            Fault::OtherWinsRace => {
                self.foreign_take(path).await;
                return self.inner.set(path, data, expected).await;
            }
        }
        Err(StoreError::Unknown("injected: reply lost".into()))
    }
    async fn sync(&self, path: &str) -> Result<(), StoreError> {
        self.inner.sync(path).await
    }
    async fn children(&self, path: &str) -> Result<Vec<String>, StoreError> {
        self.inner.children(path).await
    }
    async fn delete(&self, path: &str, expected: i32) -> Result<(), StoreError> {
        self.inner.delete(path, expected).await
    }
}
