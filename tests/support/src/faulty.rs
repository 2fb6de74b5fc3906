//! A store wrapper that injects lost replies, for testing the lost-reply protocol on the
//! embedded stores (the ZooKeeper tests lose real replies through a TCP proxy instead).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::Mutex;

use zooid::format::{OpKind, OpRecord, OpToken, Pool};
use zooid::store::{ReadOn, StoreError, Versioned};
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
    /// Apply the write, then panic (a bug below the caller, after its request went out).
    PanicAfterApply,
}

/// Wraps a store; faults are consumed one per write (`set` or `replace`), in order.
pub struct FaultyStore<S> {
    pub inner: S,
    faults: Mutex<VecDeque<Fault>>,
    /// When set, reads report this version instead of the real one.
    pub report_version: Mutex<Option<i32>>,
    pub sets: AtomicUsize,
    pub injected: AtomicUsize,
    /// How many operations the other clients' writes keep in the node's log.
    pub foreign_log_len: AtomicUsize,
    /// The data version at which the other clients' writes move the node to a fresh one (as
    /// `ServiceOptions::move_at_version`).
    pub foreign_move_at: AtomicI32,
    /// How many of the writes this store passed on were moves (`replace`), the service's and
    /// the other clients'.
    pub replaces: AtomicUsize,
}

/// One write passed on to the inner store: a compare-and-set, or a move to a fresh node.
#[derive(Clone, Copy)]
enum Write<'a> {
    Set(&'a [u8], i32, ReadOn),
    Replace(&'a [u8], i32, ReadOn),
}

/// What the inner store answered to a [`Write`].
enum Written {
    Set(i32),
    Replaced(Option<i64>),
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
            foreign_move_at: AtomicI32::new(i32::MAX),
            replaces: AtomicUsize::new(0),
        }
    }

    pub fn arm(&self, fault: Fault) {
        self.faults.lock().unwrap().push_back(fault);
    }

    /// Another client takes one ID, writing through the inner store (moving the node to a fresh
    /// one at `foreign_move_at`, as the service does).
    async fn foreign_take(&self, path: &str) {
        let node = self.inner.get(path).await.expect("foreign read");
        let mut pool = Pool::parse(path, &node.data).expect("foreign parse");
        let taken = pool.free_mut().take_lowest(1);
        assert_eq!(taken.len(), 1);
        let version = pool.version_at(node.version) + 1;
        let moves = node.version >= self.foreign_move_at.load(Ordering::SeqCst);
        if moves {
            pool.set_offset(version);
        }
        pool.record(
            OpRecord {
                version,
                token: OpToken::random(),
                kind: OpKind::Take,
                count: 1,
            },
            self.foreign_log_len.load(Ordering::SeqCst),
        );
        let data = pool.render();
        let write = match moves {
            true => Write::Replace(data.as_bytes(), node.version, self.inner.read_on()),
            false => Write::Set(data.as_bytes(), node.version, self.inner.read_on()),
        };
        self.pass_on(path, write).await.expect("foreign write");
    }

    async fn pass_on(&self, path: &str, write: Write<'_>) -> Result<Written, StoreError> {
        match write {
            Write::Set(data, expected, planned) => self
                .inner
                .set(path, data, expected, planned)
                .await
                .map(Written::Set),
            Write::Replace(data, expected, planned) => {
                let created = self.inner.replace(path, data, expected, planned).await?;
                self.replaces.fetch_add(1, Ordering::SeqCst);
                Ok(Written::Replaced(created))
            }
        }
    }

    /// Passes `write` on, after the next armed fault (one per write, set or move).
    async fn faulted(&self, path: &str, write: Write<'_>) -> Result<Written, StoreError> {
        self.sets.fetch_add(1, Ordering::SeqCst);
        let fault = self.faults.lock().unwrap().pop_front();
        let Some(fault) = fault else {
            return self.pass_on(path, write).await;
        };
        self.injected.fetch_add(1, Ordering::SeqCst);
        match fault {
            Fault::LoseReplyAfterApply => {
                self.pass_on(path, write).await?;
            }
            Fault::LoseRequest => {}
            Fault::LoseReplyThenOthersWrite(n) => {
                self.pass_on(path, write).await?;
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
                return self.pass_on(path, write).await;
            }
            Fault::PanicAfterApply => {
                self.pass_on(path, write).await?;
                panic!("injected: a panic after the write applied");
            }
        }
        Err(StoreError::Unknown("injected: reply lost".into()))
    }
}

impl<S: Store> Store for FaultyStore<S> {
    fn origin(&self) -> Option<std::sync::Arc<str>> {
        self.inner.origin()
    }
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
    async fn set(
        &self,
        path: &str,
        data: &[u8],
        expected: i32,
        planned: ReadOn,
    ) -> Result<i32, StoreError> {
        match self
            .faulted(path, Write::Set(data, expected, planned))
            .await?
        {
            Written::Set(version) => Ok(version),
            Written::Replaced(_) => unreachable!("a set is passed on as a set"),
        }
    }
    async fn replace(
        &self,
        path: &str,
        data: &[u8],
        expected: i32,
        planned: ReadOn,
    ) -> Result<Option<i64>, StoreError> {
        match self
            .faulted(path, Write::Replace(data, expected, planned))
            .await?
        {
            Written::Replaced(created) => Ok(created),
            Written::Set(_) => unreachable!("a move is passed on as a move"),
        }
    }
    fn read_on(&self) -> ReadOn {
        self.inner.read_on()
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
