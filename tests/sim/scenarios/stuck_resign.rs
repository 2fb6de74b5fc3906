//! Review (election, 2026-12-01): the driver's retry loops ignored a close. A candidate whose
//! create was in doubt (its reply lost) resolves it by reading the group node; while that read
//! kept failing on a session that stayed connected (an ACL that no longer grants the read, a
//! server that keeps timing out), the loop retried for ever: `resign()` never returned, and the
//! node the first copy made headed the line for as long as the session lived. Every retry loop
//! now passes through one wait that a close ends (`Driver::recover`), and what a close cannot
//! settle in time goes on in the background until done or the session is gone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zooid::zk::{Zk, ZooKeeperExt};
use zooid::{Election, ElectionOptions, ZooidError};

use crate::session::{Flaky, Gate};
use crate::support::run_scenario;
use crate::world::{Faults, SimSession, World};

/// A joined on a world of `seed`: its candidate `multi` applied, its reply lost, and from then
/// on its reads of the group node fail (`failing` set).
struct InDoubt {
    world: World,
    admin: Zk,
    failing: Arc<AtomicBool>,
    a_zk: Zk,
    a: Election,
}

async fn a_create_in_doubt(seed: u64) -> InDoubt {
    let world = World::new(seed, Faults::all().none(), false);
    tokio::spawn(world.clone().drive());
    let admin: Zk = SimSession::open(&world, 0, 0);
    admin
        .create_all(admin.generation(), "/election/g", None)
        .await
        .expect("group");
    let gate = Gate::armed();
    let failing = Arc::new(AtomicBool::new(false));
    let mut a_zk = Flaky::over(SimSession::open(&world, 1, 1));
    a_zk.hold_claim = Some(("/election/g".into(), gate.clone()));
    a_zk.fail_reads = Some(("/election/g".into(), failing.clone()));
    let a_zk: Zk = Arc::new(a_zk);
    let a = Election::join(&a_zk, "/election/g", ElectionOptions::new("A"))
        .await
        .expect("join");
    gate.entered.notified().await;
    failing.store(true, Ordering::SeqCst);
    gate.release.notify_one();
    InDoubt {
        world,
        admin,
        failing,
        a_zk,
        a,
    }
}

/// A's candidate `multi` applies and its reply is lost; from then on A's reads of the group node
/// fail. A resigns: the call returns (reporting the cleanup it left to the background), and once
/// the reads work again A's node goes, so B leads.
#[test]
fn a_resign_while_a_create_in_doubt_cannot_be_resolved_returns_and_cleans_up() {
    run_scenario(async {
        let InDoubt {
            world,
            admin,
            failing,
            a_zk,
            a,
        } = a_create_in_doubt(61).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (children, _) = admin
            .children(admin.generation(), "/election/g")
            .await
            .expect("children");
        assert_eq!(children.len(), 1, "guard: A's first copy applied: {children:?}");

        let resigned = tokio::time::timeout(Duration::from_secs(60), a.resign()).await;
        println!("A's resign: {resigned:?}");
        let Ok(resigned) = resigned else {
            panic!("A's resign did not return within 60 s (its create in doubt, reads failing)");
        };
        assert!(
            matches!(&resigned, Ok(()) | Err(ZooidError::Store { .. })),
            "{resigned:?}"
        );

        failing.store(false, Ordering::SeqCst);
        let b_zk: Zk = SimSession::open(&world, 2, 2);
        let b = Election::join(&b_zk, "/election/g", ElectionOptions::new("B"))
            .await
            .expect("join");
        let led = b.await_leadership(Duration::from_secs(30)).await;
        let (children, _) = admin
            .children(admin.generation(), "/election/g")
            .await
            .expect("children");
        assert!(
            led.is_ok(),
            "B never led while A's session lives: {led:?}; candidates {children:?}"
        );
        assert!(a.resign().await.is_ok(), "A's cleanup is done");
        b.resign().await.expect("resign");
        drop(a_zk);
    });
}

/// As above, and the group node is deleted (A's node with it) while A's cleanup waits for its
/// reads: with no group node no copy can apply, so the cleanup ends and a second resign is `Ok`.
/// Before, the cleanup of a create in doubt took the group's `NoNode` for a failure and tried
/// again for as long as the session lived.
#[test]
fn the_cleanup_of_a_create_in_doubt_ends_when_the_group_is_gone() {
    run_scenario(async {
        let InDoubt {
            admin,
            failing,
            a_zk,
            a,
            ..
        } = a_create_in_doubt(71).await;
        let first = tokio::time::timeout(Duration::from_secs(60), a.resign())
            .await
            .expect("resign returns");
        assert!(
            matches!(&first, Err(ZooidError::Store { .. })),
            "guard: the cleanup was left to the background: {first:?}"
        );
        let generation = admin.generation();
        let (children, _) = admin.children(generation, "/election/g").await.expect("children");
        for child in children {
            admin
                .delete(generation, &format!("/election/g/{child}"), None)
                .await
                .expect("delete A's node");
        }
        admin.delete(generation, "/election/g", None).await.expect("delete the group");
        failing.store(false, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_secs(5)).await;
        let second = a.resign().await;
        assert!(second.is_ok(), "the cleanup never ended: {second:?}");
        drop(a_zk);
    });
}
