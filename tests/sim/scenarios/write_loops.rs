//! The retry loops of the two hole writes (a push, a take of holes) count an attempt when they
//! recreate what a write found missing (review finding, 2026-11-29): the holes' parent after a
//! push's create found none, the author's receipt after its op found none. Before, they sent
//! again at once without counting, and spun for as long as something deleted it each time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use zooid::{IdCategory, IdGeneratorService, IdRange, IdSet, ZooidError};

use crate::support::{drain, options, run_scenario, setup, Setup};

/// How long (simulated time) a write may go on: the service's budget is 3 attempts within 2 s.
const SPIN: Duration = Duration::from_secs(60);

/// Pushes `set` with `orphan` set: the push ends within its budget in an error that names the
/// fault, and with `orphan` cleared again it lands.
async fn push_while_orphaned(service: &IdGeneratorService, set: &mut IdSet, orphan: &AtomicBool) {
    orphan.store(true, Ordering::SeqCst);
    let pushed = tokio::time::timeout(SPIN, service.push_ids(set)).await;
    orphan.store(false, Ordering::SeqCst);
    let err = match pushed {
        Ok(Err(err)) => err,
        Ok(Ok(())) => panic!("guard: the push landed under the fault"),
        Err(_) => panic!("the push spun for {SPIN:?} resending after a missing node"),
    };
    println!("push under the fault: {err}");
    assert!(
        matches!(err, ZooidError::ConnectionLost { .. }) && err.to_string().contains("parent gone"),
        "guard: the push ended on the injected fault: {err}"
    );
}

/// `category`'s IDs `1..=100` all accounted for: `held` by the test, free, or leaked.
async fn assert_all_found(
    creator: &IdGeneratorService,
    category: &IdCategory,
    held: u64,
    leaked: u64,
) {
    let drained = drain(creator, category, 8).await;
    assert_eq!(
        held + drained + leaked + creator.stats().ids_leaked,
        100,
        "IDs neither held, free nor reported leaked (held {held}, drained {drained}, leaked {leaked})"
    );
}

#[test]
fn a_push_that_keeps_finding_no_holes_parent_stops_within_its_budget() {
    run_scenario(async {
        let Setup {
            category,
            creator,
            flaky,
            orphan_holes,
            ..
        } = setup(17, "/ids/orphan-holes", 100, 10).await;
        let service = IdGeneratorService::on_zookeeper(flaky, options(0));
        let mut set = service.take_ids(&category, 10).await.expect("take");
        push_while_orphaned(&service, &mut set, &orphan_holes).await;
        service
            .push_ids(&mut set)
            .await
            .expect("push once the parent stays");
        assert_all_found(&creator, &category, 0, service.stats().ids_leaked).await;
    });
}

#[test]
fn a_take_of_holes_that_keeps_finding_no_receipt_stops_within_its_budget() {
    run_scenario(async {
        let Setup {
            category,
            creator,
            flaky,
            orphan_receipts,
            ..
        } = setup(19, "/ids/orphan-receipts", 100, 10).await;
        let service = IdGeneratorService::on_zookeeper(flaky, options(0));
        // Every ID handed out (held by the test), then 41..=50 pushed back: the only free IDs
        // are one hole.
        let drained = drain(&creator, &category, 8).await;
        assert_eq!(drained, 100, "guard: the category is drained");
        let hole = IdRange::new(41, 50).unwrap();
        let mut back = IdSet::new(category.clone(), vec![hole]);
        creator.push_ids(&mut back).await.expect("push the hole");

        orphan_receipts.store(true, Ordering::SeqCst);
        let taken = tokio::time::timeout(SPIN, service.take_ids(&category, 10)).await;
        orphan_receipts.store(false, Ordering::SeqCst);
        let err = match taken {
            Ok(Err(err)) => err,
            Ok(Ok(set)) => panic!("guard: the take got {:?} under the fault", set.ranges()),
            Err(_) => panic!("the take spun for {SPIN:?} resending after a missing receipt"),
        };
        println!("take under the fault: {err}");
        assert!(
            err.to_string().contains("parent gone"),
            "guard: the take ended on the injected fault: {err}"
        );
        assert_all_found(&creator, &category, 90, service.stats().ids_leaked).await;
    });
}
