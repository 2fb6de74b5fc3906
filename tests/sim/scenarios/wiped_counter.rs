//! Review (counter, incarnation class): a counter's write was tied to the node it read by the
//! data version alone. When the node is deleted and made again (a wipe and a restore) it starts
//! over at version 0, so a write planned on the old node, or the identical copy sent again after
//! a lost reply, applied to the new one: the counter went back under values already handed out,
//! and a node holding anything (even bytes that are not a counter) was overwritten unread.
//! Every write now deletes a marker the handle made under the node before its read (an anchor
//! on its first write, else its last write's marker): a node made again has none of them.

use std::sync::Arc;

use zooid::zk::{Create, Zk, ZooKeeperExt};
use zooid::{Counter, IdRange};

use crate::session::{Flaky, Gate};
use crate::support::run_scenario;
use crate::world::{Faults, SimSession, World};

/// A world of `seed` with its admin session and a counter at 1000 (version 0).
async fn counter_at_1000(seed: u64) -> (World, Zk, &'static str) {
    let world = World::new(seed, Faults::all().none(), false);
    tokio::spawn(world.clone().drive());
    let admin: Zk = SimSession::open(&world, 0, 0);
    let path = "/wiped-counter";
    Counter::new(admin.clone(), path)
        .expect("counter")
        .init(1000)
        .await
        .expect("init");
    (world, admin, path)
}

/// Deletes the counter at `path` with its children (the markers) and makes it again holding
/// `value`, as an operator's wipe and safe restore (above what was handed out) would.
async fn wipe_and_restore(admin: &Zk, path: &str, value: i64) {
    let generation = admin.generation();
    let (children, _) = admin.children(generation, path).await.expect("list");
    for child in children {
        admin
            .delete(generation, &format!("{path}/{child}"), None)
            .await
            .expect("delete a marker");
    }
    admin.delete(generation, path, None).await.expect("delete");
    admin
        .create(
            generation,
            path,
            &zooid::recipes::counter::encode(value),
            &Create::persistent(),
        )
        .await
        .expect("restore");
}

/// H reads the counter (1000, version 0) for its first write and pauses. The node is wiped and
/// restored at 2000 (version 0 again). H goes on: its write must not land on the restored node.
#[test]
fn a_next_paused_after_its_read_across_a_wipe_does_not_write_the_restored_counter() {
    run_scenario(async {
        let (world, admin, path) = counter_at_1000(53).await;

        let gate = Gate::armed();
        let mut h_zk = Flaky::over(SimSession::open(&world, 1, 1));
        h_zk.pause_get = Some((path.to_string(), gate.clone()));
        let h = Counter::new(Arc::new(h_zk), path).expect("counter");
        let h_next = tokio::spawn({
            let h = h.clone();
            async move { h.next(10).await }
        });
        gate.entered.notified().await;
        wipe_and_restore(&admin, path, 2000).await;
        gate.release.notify_one();
        let got = h_next.await.expect("join");
        println!("H: {got:?}");

        let admin_counter = Counter::new(admin.clone(), path).expect("counter");
        let value = admin_counter.get().await.expect("get");
        assert!(
            value >= 2000,
            "the write planned on the wiped counter took the restored one back to {value} \
             (H got {got:?})"
        );
        if let Ok(range) = got {
            assert!(
                range.start() > 2000,
                "H was handed {range}, planned on the wiped counter"
            );
        }
    });
}

/// H's write applies and its reply is held, then lost. Meanwhile the node is wiped and restored
/// at 2000 (version 0, the version H's write expected). H's lookup finds version 0 and sends the
/// identical write again: it must not apply to the restored node.
#[test]
fn a_lost_next_resent_across_a_wipe_does_not_write_the_restored_counter() {
    run_scenario(async {
        let (world, admin, path) = counter_at_1000(59).await;

        let gate = Gate::armed();
        let mut h_zk = Flaky::over(SimSession::open(&world, 1, 1));
        h_zk.hold_claim = Some((path.to_string(), gate.clone()));
        let h = Counter::new(Arc::new(h_zk), path).expect("counter");
        let h_next = tokio::spawn({
            let h = h.clone();
            async move { h.next(10).await }
        });
        gate.entered.notified().await;
        let admin_counter = Counter::new(admin.clone(), path).expect("counter");
        assert_eq!(
            admin_counter.get().await.expect("get"),
            1010,
            "guard: H's first copy applied"
        );
        wipe_and_restore(&admin, path, 2000).await;
        gate.release.notify_one();
        let got = h_next.await.expect("join");
        println!("H: {got:?}, stats {:?}", h.stats().await);

        let value = admin_counter.get().await.expect("get");
        assert!(
            value >= 2000,
            "the copy sent again after the lost reply took the restored counter back to {value} \
             (H got {got:?})"
        );
        if let Ok(range) = &got {
            assert!(
                range.start() > 2000,
                "H was handed {range}, values the restored counter had handed out"
            );
        }
        let next: IdRange = admin_counter.next(1).await.expect("next");
        assert!(next.start() > 2000, "after H, the counter handed out {next}");
    });
}

/// H's anchor create loses its reply and lands late: after H read the node, the node is wiped
/// and restored at 2000 (version 0), and only then the anchor lands, under the restored node. H's
/// write deletes its anchor: it must not find it there and apply to the restored node (a reply
/// lost does not say the anchor was made under the node H read).
#[test]
fn an_anchor_that_lands_late_under_a_restored_counter_does_not_let_a_write_through() {
    run_scenario(async {
        let (world, admin, path) = counter_at_1000(67).await;

        let anchor = Gate::armed();
        let read = Gate::armed();
        let mut h_zk = Flaky::over(SimSession::open(&world, 1, 1));
        h_zk.late_create_under = Some((path.to_string(), anchor.clone()));
        h_zk.pause_get = Some((path.to_string(), read.clone()));
        let h = Counter::new(Arc::new(h_zk), path).expect("counter");
        let h_next = tokio::spawn({
            let h = h.clone();
            async move { h.next(10).await }
        });
        anchor.entered.notified().await;
        read.entered.notified().await;
        wipe_and_restore(&admin, path, 2000).await;
        anchor.release.notify_one();
        // The late anchor lands under the restored node before H goes on.
        let mut landed = false;
        for _ in 0..100 {
            let (children, _) = admin.children(admin.generation(), path).await.expect("list");
            if !children.is_empty() {
                landed = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert!(landed, "guard: the late anchor landed under the restored node");
        read.release.notify_one();
        let got = h_next.await.expect("join");
        println!("H: {got:?}");

        let admin_counter = Counter::new(admin.clone(), path).expect("counter");
        let value = admin_counter.get().await.expect("get");
        assert!(
            value >= 2000,
            "a write planned on the wiped counter, its late anchor under the restored one, took \
             it back to {value} (H got {got:?})"
        );
        if let Ok(range) = got {
            assert!(range.start() > 2000, "H was handed {range}");
        }
    });
}
