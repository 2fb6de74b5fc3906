//! A push that panics midway (a bug below it, after its write went out): the IDs it was pushing
//! are out of the caller's set before anything is sent, so a caller that survives the panic (the
//! C and Java bindings turn it into an error) cannot push them a second time. A push sent twice
//! can free IDs another process took in between: handed out twice.

use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;
use zooid::store::MemoryStore;
use zooid::{CategorySpec, IdCategory, IdGeneratorService, ServiceOptions};
use zooid_test_support::faulty::{Fault, FaultyStore};

#[tokio::test]
async fn a_push_that_panics_leaves_nothing_to_push_again() {
    let service = IdGeneratorService::with_store(
        FaultyStore::new(MemoryStore::new()),
        ServiceOptions::default(),
    );
    let category = IdCategory::new("/panics/push").unwrap();
    service
        .create_category(&category, &CategorySpec::new(1, 1000))
        .await
        .unwrap();
    let mut ids = service.take_ids(&category, 10).await.unwrap();
    assert_eq!(ids.count_ids(), 10, "guard: the take");
    service.store().arm(Fault::PanicAfterApply);
    let pushed = AssertUnwindSafe(service.push_ids(&mut ids))
        .catch_unwind()
        .await;
    assert!(pushed.is_err(), "guard: the push panicked");
    assert_eq!(
        service.pool_info(&category).await.unwrap().free_count,
        1000,
        "guard: the push applied before the panic"
    );
    assert_eq!(
        ids.count_ids(),
        0,
        "the set still holds the IDs of a push that applied: {:?}",
        ids.ranges()
    );
    service.push_ids(&mut ids).await.unwrap();
    assert_eq!(
        service.pool_info(&category).await.unwrap().free_count,
        1000,
        "nothing pushed a second time"
    );
}
