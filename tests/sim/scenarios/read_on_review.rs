//! Review of the ReadOn change (Store::set/replace take the plan's ReadOn, Store::read_on
//! issues it): a service over a ZooKeeper store it does not own (`with_store`, as the
//! behaviour suite's FaultyStore<ZkStore>) through a user's own `Store` wrapper. The review
//! also found that a wrapper leaving `read_on` to a default planned every write on an empty
//! `ReadOn` and never wrote: `Store::read_on` has no default now, so such a wrapper does not
//! compile.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use zooid::store::{ReadOn, StoreError, Versioned, ZkStore};
use zooid::zk::Zk;
use zooid::{CategorySpec, IdCategory, IdGeneratorService, ServiceOptions, Store};

use crate::support::run_scenario;
use crate::world::{Faults, SimSession, World};

/// A wrapper over the ZooKeeper store that counts its reads.
struct Wrapper {
    inner: ZkStore,
    gets: Arc<AtomicUsize>,
}

impl Store for Wrapper {
    async fn get(&self, path: &str) -> Result<Versioned, StoreError> {
        self.gets.fetch_add(1, Ordering::SeqCst);
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
        self.inner.set(path, data, expected, planned).await
    }
    async fn replace(
        &self,
        path: &str,
        data: &[u8],
        expected: i32,
        planned: ReadOn,
    ) -> Result<Option<i64>, StoreError> {
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

fn service(zk: Zk) -> (IdGeneratorService<Wrapper>, Arc<AtomicUsize>) {
    let gets = Arc::new(AtomicUsize::new(0));
    let store = Wrapper {
        inner: ZkStore::on(zk),
        gets: gets.clone(),
    };
    (
        IdGeneratorService::with_store(store, ServiceOptions::default()),
        gets,
    )
}

/// A service over a ZooKeeper store it does not own (`with_store`: no Zk of its own) plans on
/// the state its last write left. With the change as first made, the state's generation (the
/// store's, >= 1) was compared with the service's own (0, no Zk) and never kept.
#[test]
fn a_service_over_a_wrapped_zk_store_keeps_its_state() {
    run_scenario(async {
        let world = World::new(42, Faults::all().none(), false);
        tokio::spawn(world.clone().drive());
        let category = IdCategory::new("/ids/kept").unwrap();
        let (svc, gets) = service(SimSession::open(&world, 0, 0));
        svc.create_category(&category, &CategorySpec::new(1, 1000).single_node())
            .await
            .expect("create");
        svc.take_ids(&category, 10).await.expect("first take");
        let before = gets.load(Ordering::SeqCst);
        svc.take_ids(&category, 10).await.expect("second take");
        let reads = gets.load(Ordering::SeqCst) - before;
        assert_eq!(
            reads, 0,
            "the second take read the pool again ({reads} reads): the state the first left was dropped"
        );
    });
}
