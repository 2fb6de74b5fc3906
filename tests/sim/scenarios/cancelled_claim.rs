//! Review (queue, cancellation): a `claim` future dropped after its lock create applied and
//! before it returned the [`zooid::queue::Claim`] (an async caller's own timeout around
//! `claim(None)`, a `select!` with a shutdown signal) left the lock on its session. The waiter
//! node of such a claim is deleted by its `Drop`, a dropped `Claim` is released in the
//! background, a dropped `complete` too, and a put's guard is retired: only the lock a claim
//! had created but not yet handed to a `Claim` had no owner. On a session that lives on (the
//! process's shared session, also taking IDs or leading), no one else could claim the item
//! until the process ended: an item taken by no one, lost to the queue.

use std::sync::Arc;
use std::time::Duration;

use zooid::zk::Zk;
use zooid::WorkQueue;

use crate::session::{Flaky, Gate};
use crate::support::{queue_options as options, run_scenario};
use crate::world::{Faults, SimSession, World};

/// P puts one item. A's claim creates its lock (the `multi` checking the item applies) and A's
/// caller gives up on it (`tokio::time::timeout` around `claim(None)`) while the reply is on
/// its way: the future is dropped. A's session lives on (its queue handle is kept). B then
/// claims, waiting up to 30 s: it must get the item, once A's dropped claim let go of its
/// lock. On the code before this commit B's claim returns `None` and the item's lock is still
/// A's: `the item is held by no claim, yet B could not claim it in 30 s`.
#[test]
fn a_claim_dropped_after_its_lock_applied_does_not_keep_the_item() {
    run_scenario(async {
        let world = World::new(43, Faults::all().none(), false);
        tokio::spawn(world.clone().drive());
        let producer: Zk = SimSession::open(&world, 0, 0);
        let p = WorkQueue::open(producer.clone(), "/jobs", options("P")).expect("open");
        let name = p.put(b"job 1").await.expect("put");
        let item = format!("/jobs/items/{name}");

        // A: the reply to the `multi` that checks the item (the lock create) is held.
        let gate = Gate::armed();
        let mut a_zk = Flaky::over(SimSession::open(&world, 1, 1));
        a_zk.hold_check = Some((item.clone(), gate.clone()));
        let a_zk: Zk = Arc::new(a_zk);
        let a = WorkQueue::open(a_zk.clone(), "/jobs", options("A")).expect("open");
        let given_up = tokio::time::timeout(Duration::from_secs(2), a.claim(None)).await;
        assert!(given_up.is_err(), "guard: A's caller gave up on its claim");
        // Let the dropped claim's background work (if any) run.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let listed = p.items().await.expect("items");
        println!("after A's caller gave up: {listed:?}");

        // B: a consumer on another session.
        let b_zk: Zk = SimSession::open(&world, 2, 2);
        let b = WorkQueue::open(b_zk, "/jobs", options("B")).expect("open");
        let claimed = b
            .claim(Some(Duration::from_secs(30)))
            .await
            .expect("B claim");
        let listed = p.items().await.expect("items");
        assert!(
            claimed.is_some(),
            "the item is held by no claim, yet B could not claim it in 30 s (A's session alive: \
             {}): {listed:?}",
            !a_zk_gone(&a_zk)
        );
        let claim = claimed.unwrap();
        assert_eq!(claim.data(), b"job 1");
        claim.complete().await.expect("B complete");
        assert!(p.items().await.expect("items").is_empty());
        drop(a);
    });
}

fn a_zk_gone(zk: &Zk) -> bool {
    zk.is_gone_generation(zk.status().generation)
}
