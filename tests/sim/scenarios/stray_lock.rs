//! Review (queue, 2026-11-30): a lock whose create was in doubt when its claim gave up is looked
//! for in the background (src/recipes/queue/lock.rs, `resolve_stray_lock`) and released if it
//! shows up with the claim's token. The search stopped on a timer, 4 × the request limit,
//! whatever it had seen: when every read of the lock failed for that long on a session that
//! lived on (a flaky connection reconnecting within the session timeout), the search ended
//! with the lock in place, held by no claim, and no one else could claim the item while the
//! session lived. Now the search ends only on an answer (the lock ours: released; after a
//! `sync`, not there or another's, once the window has passed) or with the session.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zooid::zk::Zk;
use zooid::WorkQueue;

use crate::session::{Flaky, Gate};
use crate::support::{exists, queue_options as options, run_scenario};
use crate::world::{Faults, SimSession, World};

/// P puts one item. A's claim creates its lock (the `multi` applies, its reply is lost) and
/// every read of the lock fails, for a minute, on A's session that lives on: A's claim gives
/// up. Then the reads answer again, and B claims, waiting up to 30 s: it must get the item once
/// A's background search found its lock and released it. On the code before, B got `None`
/// (`the item is held by no claim ...`), the lock still A's.
#[test]
fn a_lock_in_doubt_is_released_however_long_its_reads_fail() {
    run_scenario(async {
        let world = World::new(44, Faults::all().none(), false);
        tokio::spawn(world.clone().drive());
        let producer: Zk = SimSession::open(&world, 0, 0);
        let p = WorkQueue::open(producer.clone(), "/jobs", options("P")).expect("open");
        let name = p.put(b"job 1").await.expect("put");
        let lock = format!("/jobs/locks/{name}");

        // A: its lock create applies, the reply is held, then lost; the lock's reads fail.
        let gate = Gate::armed();
        let failing = Arc::new(AtomicBool::new(true));
        let mut a_zk = Flaky::over(SimSession::open(&world, 1, 1));
        a_zk.hold_claim = Some(("/jobs/locks".into(), gate.clone()));
        a_zk.fail_reads = Some((lock.clone(), failing.clone()));
        let a_zk: Zk = Arc::new(a_zk);
        let a = WorkQueue::open(a_zk.clone(), "/jobs", options("A")).expect("open");
        let claiming = tokio::spawn(async move {
            let claimed = a.claim(Some(Duration::from_secs(2))).await;
            (a, claimed)
        });
        gate.entered.notified().await;
        assert!(
            exists(&producer, &lock).await,
            "guard: A's lock create applied"
        );
        gate.release.notify_one();
        let (a, claimed) = claiming.await.expect("A's claim");
        println!("A's claim: {:?}", claimed.as_ref().map(|c| c.is_some()));
        assert!(
            !matches!(claimed, Ok(Some(_))),
            "guard: A's claim did not get the item"
        );
        // Past the search's window (4 × the request limit), reads of the lock still failing.
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(
            exists(&producer, &lock).await,
            "guard: A's lock is still there after a minute of failed reads"
        );
        assert!(
            !a_zk.is_gone_generation(a_zk.status().generation),
            "guard: A's session lives on"
        );
        failing.store(false, Ordering::SeqCst);

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
            !a_zk.is_gone_generation(a_zk.status().generation)
        );
        let claim = claimed.unwrap();
        assert_eq!(claim.data(), b"job 1");
        claim.complete().await.expect("B complete");
        assert!(p.items().await.expect("items").is_empty());
        drop(a);
    });
}
