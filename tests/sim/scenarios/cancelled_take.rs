//! Review (allocator, cancellation): a `take_ids` or `push_ids` future dropped while its write
//! was on its way (an async caller's own timeout around it, a `select!` with a shutdown signal)
//! left the write unresolved and its IDs counted nowhere: taken from the pool, held by no
//! caller, named in no `OutcomeUnknown` and not in `ids_leaked`. The counter had the same
//! defect (cancelled_next.rs). Takes and pushes now run in a task of their own, which finishes
//! and resolves the write whatever its caller does: IDs taken for a caller that gave up are
//! pushed back (or reported leaked), a push goes on to its end.

use std::sync::Arc;
use std::time::Duration;

use zooid::format::sequence_parent;
use zooid::zk::Zk;
use zooid::{CategorySpec, IdCategory, IdGeneratorService, Layout};

use crate::session::{Flaky, Gate};
use crate::support::{drain, options, run_scenario};
use crate::world::{Faults, SimSession, World};

/// The world, a category `1..=100` in `layout` made by an admin service, and process 1's
/// session with `faults` applied to it.
async fn category_and_flaky(
    path: &str,
    layout: Layout,
    faults: impl FnOnce(&mut Flaky, &str),
) -> (IdCategory, IdGeneratorService, IdGeneratorService) {
    let world = World::new(47, Faults::all().none(), false);
    tokio::spawn(world.clone().drive());
    let admin: Zk = SimSession::open(&world, 0, 0);
    let category = IdCategory::new(path).unwrap();
    let creator = IdGeneratorService::on_zookeeper(admin, options(0));
    creator
        .create_category(&category, &CategorySpec::new(1, 100).layout(layout))
        .await
        .expect("create");
    let mut flaky = Flaky::over(SimSession::open(&world, 1, 1));
    faults(&mut flaky, category.name());
    let a = IdGeneratorService::on_zookeeper(Arc::new(flaky), options(0));
    (category, creator, a)
}

/// Polls `operation` until `gate` trips (its write or read is held there), then drops it: the
/// caller gave up. Lets the gate go and the world run on for 5 s.
async fn give_up_at<T: std::fmt::Debug>(
    gate: &Gate,
    operation: impl std::future::Future<Output = T>,
) {
    {
        tokio::pin!(operation);
        tokio::select! {
            result = &mut operation => panic!("guard: the request was held, yet the call returned {result:?}"),
            _ = gate.entered.notified() => {}
        }
    }
    gate.release.notify_one();
    tokio::time::sleep(Duration::from_secs(5)).await;
}

/// Every ID of `1..=100` is free again or counted leaked by `a`: the creator drains the rest.
async fn accounted(category: &IdCategory, creator: &IdGeneratorService, a: &IdGeneratorService) {
    assert_eq!(
        a.stats().abandoned_running,
        0,
        "the given-up operation still runs after 5 s"
    );
    let drained = drain(creator, category, 10).await;
    let leaked = a.stats().ids_leaked;
    assert_eq!(
        drained + leaked,
        100,
        "IDs neither free, nor held, nor reported leaked: drained {drained}, leaked {leaked}"
    );
}

/// A take of fresh blocks: its claim `multi` applies, its reply is held, and the caller gives
/// up. On the code before: `drained 90, leaked 0`.
#[test]
fn a_take_of_blocks_dropped_after_its_claim_applied_loses_no_id() {
    run_scenario(async {
        let gate = Gate::armed();
        let (category, creator, a) = category_and_flaky(
            "/ids/cancelled-take",
            Layout::HoleNodes { unit: 10 },
            |flaky, path| flaky.hold_claim = Some((sequence_parent(path, 0), gate.clone())),
        )
        .await;
        give_up_at(&gate, a.take_ids(&category, 10)).await;
        let info = creator.pool_info(&category).await.expect("info");
        assert!(info.high_water >= 10, "guard: A's claim applied: {info:?}");
        accounted(&category, &creator, &a).await;
    });
}

/// A take of a single-node pool: its compare-and-set applies, its reply is held, and the caller
/// gives up. On the code before: `drained 90, leaked 0`.
#[test]
fn a_take_of_a_single_node_dropped_after_its_write_applied_loses_no_id() {
    run_scenario(async {
        let gate = Gate::armed();
        let (category, creator, a) = category_and_flaky(
            "/ids/cancelled-single",
            Layout::SingleNode,
            |flaky, path| flaky.hold_set = Some((path.to_string(), gate.clone())),
        )
        .await;
        give_up_at(&gate, a.take_ids(&category, 10)).await;
        accounted(&category, &creator, &a).await;
    });
}

/// A push of IDs the creator took: its read of the pool is slow, and the caller gives up. The
/// push empties the caller's set when it starts, so the IDs are the push's to finish. On the
/// code before: `drained 90, leaked 0` (nothing was written, and the IDs were nowhere).
#[test]
fn a_push_dropped_before_its_write_loses_no_id() {
    run_scenario(async {
        let gate = Gate::armed();
        let (category, creator, a) = category_and_flaky(
            "/ids/cancelled-push",
            Layout::HoleNodes { unit: 10 },
            |flaky, path| flaky.delay_get = Some((path.to_string(), gate.clone())),
        )
        .await;
        let mut ids = creator.take_ids(&category, 10).await.expect("take");
        give_up_at(&gate, a.push_ids(&mut ids)).await;
        assert!(!ids.has_more_ids(), "guard: the push had taken the caller's IDs");
        accounted(&category, &creator, &a).await;
    });
}

/// A take whose caller gave up while it waited for the category's slot (behind another take of
/// the process) takes nothing: before, it went on to claim a block for nobody and pushed it
/// back, two writes and a hole for each caller's timeout. On the code before: `high water 20`.
#[test]
fn a_take_given_up_before_it_held_the_slot_writes_nothing() {
    run_scenario(async {
        let gate = Gate::armed();
        let (category, creator, a) = category_and_flaky(
            "/ids/given-up-waiting",
            Layout::HoleNodes { unit: 10 },
            |flaky, path| flaky.hold_claim = Some((sequence_parent(path, 0), gate.clone())),
        )
        .await;
        let first = a.take_ids(&category, 10);
        tokio::pin!(first);
        tokio::select! {
            result = &mut first => panic!("guard: the first claim was held, yet the take returned {result:?}"),
            _ = gate.entered.notified() => {}
        }
        {
            let second = a.take_ids(&category, 10);
            tokio::pin!(second);
            let waited = tokio::time::timeout(Duration::from_millis(100), &mut second).await;
            assert!(waited.is_err(), "guard: the second take waited for the slot: {waited:?}");
        }
        gate.release.notify_one();
        let held = first.await.expect("the first take");
        tokio::time::sleep(Duration::from_secs(5)).await;
        let info = creator.pool_info(&category).await.expect("info");
        assert_eq!(
            info.high_water, 10,
            "only the first take claimed a block (high water {})",
            info.high_water
        );
        assert_eq!(a.stats().abandoned_running, 0, "the given-up take ended");
        let drained = drain(&creator, &category, 10).await;
        assert_eq!(drained + held.count_ids(), 100, "every ID free or held");
    });
}
