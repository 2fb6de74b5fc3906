//! A push that panics midway (a bug below it, a store that panics): the IDs it was pushing are
//! out of the caller's set before anything is sent, so a caller that survives the panic (the C
//! and Java bindings turn it into an error) cannot push them a second time. A push sent twice
//! can free IDs another process took in between: handed out twice.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures_util::FutureExt;
use zooid::store::{MemoryStore, ReadOn, Store, StoreError, Versioned};
use zooid::{CategorySpec, IdCategory, IdGeneratorService, ServiceOptions};

/// A memory store whose writes panic once `armed`.
#[derive(Clone, Default)]
struct Panicking {
    inner: Arc<MemoryStore>,
    armed: Arc<AtomicBool>,
}

impl Panicking {
    fn check(&self) {
        if self.armed.load(Ordering::SeqCst) {
            panic!("the store panics on a write (the test's fault)");
        }
    }
}

impl Store for Panicking {
    async fn get(&self, path: &str) -> Result<Versioned, StoreError> {
        self.inner.get(path).await
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
        self.check();
        self.inner.set(path, data, expected, planned).await
    }
    async fn replace(
        &self,
        path: &str,
        data: &[u8],
        expected: i32,
        planned: ReadOn,
    ) -> Result<Option<i64>, StoreError> {
        self.check();
        self.inner.replace(path, data, expected, planned).await
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

#[tokio::test]
async fn a_push_that_panics_leaves_nothing_to_push_again() {
    let store = Panicking::default();
    let service = IdGeneratorService::with_store(store.clone(), ServiceOptions::default());
    let category = IdCategory::new("/panics/push").unwrap();
    service
        .create_category(&category, &CategorySpec::new(1, 1000))
        .await
        .unwrap();
    let mut ids = service.take_ids(&category, 10).await.unwrap();
    assert_eq!(ids.count_ids(), 10, "guard: the take");
    store.armed.store(true, Ordering::SeqCst);
    let pushed = AssertUnwindSafe(service.push_ids(&mut ids))
        .catch_unwind()
        .await;
    assert!(pushed.is_err(), "guard: the push panicked");
    assert_eq!(
        ids.count_ids(),
        0,
        "the set still holds the IDs of a push that may have been sent: {:?}",
        ids.ranges()
    );
    store.armed.store(false, Ordering::SeqCst);
    service.push_ids(&mut ids).await.unwrap();
    assert_eq!(
        service.pool_info(&category).await.unwrap().free_count,
        990,
        "nothing pushed a second time"
    );
}
