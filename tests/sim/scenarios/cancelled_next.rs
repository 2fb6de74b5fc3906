//! Review (counter, cancellation): a `next` future dropped after its write `multi` applied (an
//! async caller's own timeout around it) left the write unresolved and its values counted
//! nowhere: the counter moved past values no call returned, reported or counted as skipped.
//! `next` now runs in a task of its own, which resolves the write whatever its caller does, and
//! counts the values of a caller that gave up as skipped.

use std::sync::Arc;
use std::time::Duration;

use zooid::Counter;
use zooid::zk::Zk;

use crate::session::{Flaky, Gate};
use crate::support::run_scenario;
use crate::world::{Faults, SimSession, World};

#[test]
fn a_next_dropped_after_its_write_applied_counts_its_values_as_skipped() {
    run_scenario(async {
        let world = World::new(47, Faults::all().none(), false);
        tokio::spawn(world.clone().drive());
        let admin: Zk = SimSession::open(&world, 0, 0);
        Counter::new(admin.clone(), "/counter")
            .expect("counter")
            .init(0)
            .await
            .expect("init");

        // A's write `multi` (it creates its marker under the counter) applies; its reply is
        // held, then lost.
        let gate = Gate::armed();
        let mut a_zk = Flaky::over(SimSession::open(&world, 1, 1));
        a_zk.hold_claim = Some(("/counter".to_string(), gate.clone()));
        let a = Counter::new(Arc::new(a_zk), "/counter").expect("counter");
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
