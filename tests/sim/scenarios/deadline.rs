//! CI (faults `f9i_holes_quorum_lost`, 2026-11-30): a push to a pool of hole nodes returned
//! after 10.5 s against a deadline of 3 s while the quorum was lost. A take or push of format 4
//! runs in phases (the pool, the holes' listing, the claim or the push, a wait for the
//! category's slot) and each phase started a deadline of its own, so an attempt could start long
//! after the operation's deadline had passed. Now every phase counts from the operation's start
//! and none starts past it (`OnZooKeeper::next_phase`): `Timeout`, nothing written.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use zooid::format::holes_parent;
use zooid::zk::Zk;
use zooid::{
    CategorySpec, IdCategory, IdGeneratorService, Layout, RetryPolicy, ServiceOptions, ZooidError,
};

use crate::session::{Flaky, Gate};
use crate::support::run_scenario;
use crate::world::{Faults, SimSession, World};

/// The operations' deadline.
const DEADLINE: Duration = Duration::from_secs(1);

/// How long process A's first listing of the holes is held: past the deadline.
const LISTING_HELD: Duration = Duration::from_millis(1_500);

/// A hole-node pool made by service B, and service A (deadline [`DEADLINE`]) whose first
/// listing of the holes is answered only after [`LISTING_HELD`].
async fn slow_listing(path: &str) -> (IdCategory, IdGeneratorService, IdGeneratorService, Arc<Gate>) {
    let world = World::new(53, Faults::all().none(), false);
    tokio::spawn(world.clone().drive());
    let admin: Zk = SimSession::open(&world, 0, 0);
    let category = IdCategory::new(path).unwrap();
    let b = IdGeneratorService::on_zookeeper(admin, ServiceOptions::default());
    let spec = CategorySpec::new(1, 1_000_000).layout(Layout::HoleNodes { unit: 10 });
    b.create_category(&category, &spec).await.expect("create");
    let gate = Gate::armed();
    let mut flaky = Flaky::over(SimSession::open(&world, 1, 1));
    flaky.pause_listing = Some((holes_parent(path), gate.clone()));
    let options = ServiceOptions {
        retry: RetryPolicy {
            deadline: DEADLINE,
            ..RetryPolicy::default()
        },
        ..ServiceOptions::default()
    };
    let a = IdGeneratorService::on_zookeeper(Arc::new(flaky), options);
    (category, b, a, gate)
}

/// Runs `operation` while the held listing is let go after [`LISTING_HELD`]; its result and
/// how long it took.
async fn with_listing_held<T>(
    gate: &Gate,
    operation: impl std::future::Future<Output = T>,
) -> (T, Duration) {
    let started = Instant::now();
    let release = async {
        gate.entered.notified().await;
        tokio::time::sleep(LISTING_HELD).await;
        gate.release.notify_one();
    };
    let (result, ()) = tokio::join!(operation, release);
    (result, started.elapsed())
}

/// A push whose listing of the holes came back past its deadline writes nothing and fails
/// `Timeout`; the caller keeps its IDs. On the code before: `Ok(())`, the write sent 0.5 s
/// after the deadline.
#[test]
fn a_push_starts_no_write_past_its_deadline() {
    run_scenario(async {
        let path = "/ids/deadline-push";
        let (category, b, a, gate) = slow_listing(path).await;
        let mut handed = b.take_ids(&category, 10).await.expect("B take");
        let range = handed.ranges()[0];
        let (pushed, took) = with_listing_held(&gate, a.push_ids(&mut handed)).await;
        assert!(took >= LISTING_HELD, "guard: the listing was held ({took:?})");
        assert!(
            matches!(pushed, Err(ZooidError::Timeout { .. })),
            "a push whose deadline passed during its listing: {pushed:?}"
        );
        assert_eq!(handed.ranges(), [range], "the caller keeps the IDs it could not push");
        let free = b.pool_info(&category).await.expect("info").free;
        assert!(
            !free.iter().any(|f| f.overlaps(&range)),
            "no hole was written for {range:?}: {free:?}"
        );
        // Once the listing is there, the same push applies.
        a.push_ids(&mut handed).await.expect("the push again");
        let free = b.pool_info(&category).await.expect("info").free;
        assert!(free.iter().any(|f| f.covers(&range)), "{range:?} pushed: {free:?}");
    });
}

/// A take whose listing of the holes came back past its deadline claims no block and fails
/// `Timeout`. On the code before: the claim was sent after the deadline and the take served.
#[test]
fn a_take_starts_no_claim_past_its_deadline() {
    run_scenario(async {
        let path = "/ids/deadline-take";
        let (category, b, a, gate) = slow_listing(path).await;
        let before = b.pool_info(&category).await.expect("info");
        let (taken, took) = with_listing_held(&gate, a.take_ids(&category, 10)).await;
        assert!(took >= LISTING_HELD, "guard: the listing was held ({took:?})");
        assert!(
            matches!(taken, Err(ZooidError::Timeout { .. })),
            "a take whose deadline passed during its listing: {taken:?}"
        );
        let after = b.pool_info(&category).await.expect("info");
        assert_eq!(
            format!("{:?}", before.blocks),
            format!("{:?}", after.blocks),
            "no block was claimed"
        );
        assert_eq!(a.stats().ids_leaked, 0, "nothing leaked");
        let got = a.take_ids(&category, 10).await.expect("the take again");
        assert_eq!(got.ranges().iter().map(|r| r.len()).sum::<u64>(), 10);
    });
}
