//! Review (counter, cancellation): a `next` future dropped after its write `multi` applied (an
//! async caller's own timeout around it) left the write unresolved and its values counted
//! nowhere: the counter moved past values no call returned, reported or counted as skipped.
//! `next` now runs in a task of its own, which resolves the write whatever its caller does, and
//! counts the values of a caller that gave up as skipped.

use std::sync::Arc;
use std::time::Duration;

use zooid::zk::Zk;
use zooid::{Counter, ZooidError};

use crate::session::{Flaky, Gate};
use crate::support::run_scenario;
use crate::world::{Faults, SimSession, World};

/// A world of `seed` with a counter at 0, its admin session, and A's counter on a session whose
/// first write `multi` under the counter applies with its reply held at the gate, then lost.
async fn a_write_held(seed: u64) -> (Zk, Arc<Gate>, Counter) {
    let world = World::new(seed, Faults::all().none(), false);
    tokio::spawn(world.clone().drive());
    let admin: Zk = SimSession::open(&world, 0, 0);
    Counter::new(admin.clone(), "/counter")
        .expect("counter")
        .init(0)
        .await
        .expect("init");
    let gate = Gate::armed();
    let mut a_zk = Flaky::over(SimSession::open(&world, 1, 1));
    a_zk.hold_claim = Some(("/counter".to_string(), gate.clone()));
    let a = Counter::new(Arc::new(a_zk), "/counter").expect("counter");
    (admin, gate, a)
}

#[test]
fn a_next_dropped_after_its_write_applied_counts_its_values_as_skipped() {
    run_scenario(async {
        // A's write `multi` (it creates its marker under the counter) applies; its reply is
        // held, then lost.
        let (admin, gate, a) = a_write_held(47).await;
        {
            let next = a.next(10);
            tokio::pin!(next);
            tokio::select! {
                result = &mut next => panic!("guard: the write was held, yet next returned {result:?}"),
                _ = gate.entered.notified() => {}
            }
            // A's caller gives up: the future is dropped here.
        }
        gate.release.notify_one();
        tokio::time::sleep(Duration::from_secs(5)).await;

        let b = Counter::new(admin.clone(), "/counter").expect("counter");
        assert_eq!(b.get().await.expect("get"), 10, "guard: A's write applied");
        let stats = a.stats().await;
        assert_eq!(
            stats.skipped, 10,
            "the counter moved past 1..=10, which no call returned or reported: {stats:?}"
        );
        // A's handle goes on: its next values follow.
        let after = a.next(5).await.expect("next");
        assert_eq!((after.start(), after.end()), (11, 15));
    });
}

/// A `next` whose task ends unfinished (its runtime shut down) after its write `multi` applied,
/// its reply held: the caller, on another runtime, gets `OutcomeUnknown` naming the values the
/// write may have taken, not `Closed` (which says nothing about a write, and which Java maps to
/// an `IllegalStateException`).
#[test]
fn a_next_whose_task_ends_with_its_write_unresolved_reports_its_values() {
    run_scenario(async {
        let (admin, gate, a) = a_write_held(73).await;

        // The `next`'s task is spawned on a runtime of its own (the first poll, in its context).
        let tasks = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let mut next = Box::pin(a.next(10));
        {
            let _in = tasks.enter();
            assert!(
                futures_util::poll!(next.as_mut()).is_pending(),
                "guard: the write is held"
            );
        }
        gate.entered.notified().await;
        // Shut down and wait for it (from a thread of its own: a runtime is not dropped inside
        // another's context): the task is dropped unfinished.
        std::thread::spawn(move || drop(tasks))
            .join()
            .expect("the task's runtime shut down");
        let result = tokio::time::timeout(Duration::from_secs(10), next)
            .await
            .expect("the caller hears of its task's end");
        println!("next: {result:?}");
        let b = Counter::new(admin.clone(), "/counter").expect("counter");
        assert_eq!(b.get().await.expect("get"), 10, "guard: the write applied");
        match result {
            Err(ZooidError::OutcomeUnknown { ids, .. }) => {
                assert_eq!(ids.len(), 1);
                assert_eq!((ids[0].start(), ids[0].end()), (1, 10));
            }
            other => panic!("expected OutcomeUnknown naming 1..=10, got {other:?}"),
        }
    });
}
