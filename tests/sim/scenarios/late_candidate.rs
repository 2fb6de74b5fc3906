//! Review (election, 2026-11-30): a candidate create in doubt, abandoned on a refusal, landed
//! later as a second candidate node of the same live session, which no driver tracked
//! (src/recipes/election/driver/join.rs). After a lost reply the join resends the same `multi`
//! (`setData(group, V)` with the create of its marker's node); a resend refused (`NoAuth` while
//! an ACL changes) ended the candidacy, and the next one drew a new marker. The first copy,
//! still on its way, then applied: a node of ours ahead of the one the driver confirmed, which
//! it waits behind for as long as the session lives. Now a marker whose copies are unresolved
//! goes on to the next candidacy of the same session, which looks for it before it sends.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zooid::zk::{Zk, ZooKeeperExt};
use zooid::{Election, ElectionOptions, LeaderState};

use crate::session::{Flaky, Gate};
use crate::support::run_scenario;
use crate::world::{Faults, SimSession, World};

/// A joined on a world of `seed`, its first candidate `multi` sent with its reply lost and the
/// copy held back at the gate, its resend refused (checked); refusals are off again on return.
struct InFlight {
    world: World,
    admin: Zk,
    gate: Arc<Gate>,
    a_zk: Zk,
    a: Election,
}

async fn a_copy_in_flight(seed: u64) -> InFlight {
    let world = World::new(seed, Faults::all().none(), false);
    tokio::spawn(world.clone().drive());
    let admin: Zk = SimSession::open(&world, 0, 0);
    admin
        .create_all(admin.generation(), "/election/g", None)
        .await
        .expect("group");
    let gate = Gate::armed();
    let refusing = Arc::new(AtomicBool::new(true));
    let refused = Arc::new(AtomicUsize::new(0));
    let mut a_zk = Flaky::over(SimSession::open(&world, 1, 1));
    a_zk.late_under = Some(("/election/g".into(), gate.clone()));
    a_zk.refuse_creates_under = Some(("/election/g".into(), refusing.clone(), refused.clone()));
    let a_zk: Zk = Arc::new(a_zk);
    let a = Election::join(&a_zk, "/election/g", ElectionOptions::new("A"))
        .await
        .expect("join");
    gate.entered.notified().await;
    for _ in 0..100 {
        if refused.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert!(
        refused.load(Ordering::SeqCst) > 0,
        "guard: A's resend was refused"
    );
    refusing.store(false, Ordering::SeqCst);
    InFlight {
        world,
        admin,
        gate,
        a_zk,
        a,
    }
}

/// A joins; its first candidate `multi` is sent and its reply lost, the copy held back; the
/// resend is refused. The held copy then applies, before A's next candidacy. A must lead (it is
/// alone), with exactly one candidate node. On the code before, A's next candidacy created a
/// second node behind the late one and waited behind it: `A never led; its session's candidate
/// nodes: 2`.
#[test]
fn a_candidate_create_in_doubt_is_not_abandoned_on_a_refusal() {
    run_scenario(async {
        let InFlight {
            admin,
            gate,
            a_zk,
            a,
            ..
        } = a_copy_in_flight(45).await;
        // The first copy lands, before A's next candidacy (its pause is 100 ms).
        gate.release.notify_one();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let (children, _) = admin
            .children(admin.generation(), "/election/g")
            .await
            .expect("children");
        assert_eq!(
            children.len(),
            1,
            "guard: the late copy applied: {children:?}"
        );

        let led = a.await_leadership(Duration::from_secs(10)).await;
        let session = a_zk.status().session_id;
        let mut ours = 0;
        let (children, _) = admin
            .children(admin.generation(), "/election/g")
            .await
            .expect("children");
        for child in &children {
            let (_, stat) = admin
                .get(admin.generation(), &format!("/election/g/{child}"))
                .await
                .expect("candidate");
            if stat.ephemeral_owner == session {
                ours += 1;
            }
        }
        assert!(
            led.is_ok() && ours == 1,
            "A {}; its session's candidate nodes: {ours} ({children:?})",
            if led.is_ok() { "led" } else { "never led" }
        );
        assert_eq!(a.state(), LeaderState::Active);
        a.resign().await.expect("resign");
        let (children, _) = admin
            .children(admin.generation(), "/election/g")
            .await
            .expect("children");
        assert!(children.is_empty(), "A's resign left {children:?}");
    });
}

/// The same copy on its way, the resend refused; A resigns while its driver pauses before the
/// next candidacy, and the copy arrives after the resign returned. It must not make a node: the
/// resign moved the group node's version past it. On the code before, the resign left with the
/// copy unresolved, and it made a node of A's live session, heading the line with no one to
/// delete it: `B never led; the line: [A's late node, B's]`.
#[test]
fn a_resign_settles_a_candidate_create_in_doubt() {
    run_scenario(async {
        let InFlight {
            world,
            admin,
            gate,
            a_zk,
            a,
        } = a_copy_in_flight(46).await;
        a.resign().await.expect("resign");
        assert!(
            !a_zk.is_gone_generation(a_zk.status().generation),
            "guard: A's session lives on"
        );
        // The copy arrives now.
        gate.release.notify_one();
        tokio::time::sleep(Duration::from_millis(20)).await;

        let b_zk: Zk = SimSession::open(&world, 2, 2);
        let b = Election::join(&b_zk, "/election/g", ElectionOptions::new("B"))
            .await
            .expect("join B");
        let led = b.await_leadership(Duration::from_secs(10)).await;
        let (children, _) = admin
            .children(admin.generation(), "/election/g")
            .await
            .expect("children");
        assert!(
            led.is_ok(),
            "B never led; the line: {children:?} (A's late node first)"
        );
        assert_eq!(children.len(), 1, "{children:?}");
        b.resign().await.expect("resign B");
    });
}
