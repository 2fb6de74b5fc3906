//! A candidate node whose delete keeps failing (the proxy resets every delete before it reaches
//! the server) while its session lives: it must never be left behind silently. `resign()` must
//! not return Ok while the node may still be there, a rejoin must never line up behind the
//! candidate's own old node, and once deletes get through again the node goes and the group
//! has a leader.

use std::time::{Duration, Instant};

use super::{nodes_of, opts, session, support, wait_status};
use support::{op, runtime, FaultProxy, ResetPoint, ZkServer};
use zooid::{Election, LeaderState, PausePolicy, ZooidError};

/// More resets than any bounded delete can use up in these tests; cleared by hand.
const RESETS: usize = 400;

fn fail_every_delete(proxy: &FaultProxy, group: &str) {
    for _ in 0..RESETS {
        proxy.reset_on(op::DELETE, group, ResetPoint::BeforeRequest);
    }
}

/// The leader resigns while every delete of its node fails: `resign()` reports that the node
/// may still be there (a typed error, not Ok), and a background task keeps deleting it, so the
/// next candidate leads once deletes get through.
#[test]
fn resign_whose_delete_fails_reports_it_and_the_node_still_goes() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    rt.block_on(async {
        let group = "/el/leftover-resign";
        let observer = session(&zk.connect_string(), 4000).await;
        let sa = session(&proxy.connect_string(), 1000).await;
        let a = Election::join(&sa, group, opts("a", PausePolicy::Keep))
            .await
            .unwrap();
        let a_token = a.await_leadership(Duration::from_secs(10)).await.unwrap();
        let b = Election::join(&observer, group, opts("b", PausePolicy::Keep))
            .await
            .unwrap();
        wait_status(&b, Duration::from_secs(10), |s| s.node.is_some()).await;
        let a_node = a.status().node.unwrap();
        let a_session = sa.status().session_id;

        fail_every_delete(&proxy, group);
        let started = Instant::now();
        let resigned = a.resign().await;
        let took = started.elapsed();
        // Guards: the deletes were refused by the fault, and the session is the same one.
        let resets = proxy.resets();
        assert!(resets >= 2, "the delete fault fired ({resets} resets)");
        assert_eq!(sa.status().generation, 1, "a's session survived");
        let left = nodes_of(&observer, group, a_session).await;
        eprintln!(
            "FIGURES leftover resign: resign() -> {resigned:?} after {took:?}; {resets} deletes reset; a's nodes then {left:?}"
        );
        assert!(a.status().closed, "the candidacy is closed either way");
        match &resigned {
            Ok(()) => assert!(
                left.is_empty(),
                "resign() returned Ok with its candidate node {a_node} still there: {left:?}"
            ),
            Err(ZooidError::Store { path, .. }) => assert_eq!(path, &a_node),
            Err(other) => panic!("resign(): unexpected error {other:?}"),
        }

        // Deletes get through again: the node goes (nobody else deletes it) and b leads.
        proxy.clear_faults();
        let healed = Instant::now();
        let b_token = b.await_leadership(Duration::from_secs(5)).await;
        let left = nodes_of(&observer, group, a_session).await;
        assert!(
            left.is_empty(),
            "a's candidate node is still there {:?} after deletes got through again, with a's session alive: the group has no leader",
            healed.elapsed()
        );
        let b_token = b_token.expect("b leads once a's node is gone");
        assert!(b_token > a_token);
        // Repeating resign once the node is gone: Ok.
        a.resign().await.unwrap();
        eprintln!(
            "FIGURES leftover resign: a's node gone and b Active {:?} after the fault was cleared",
            healed.elapsed()
        );
    });
}

/// A stop-policy leader is paused by a short network pause (its session survives), so it gives
/// up its node and rejoins; every delete of that node fails for longer than the delete's own
/// bound. The rejoin must not line up behind its own old node (nobody would lead): once deletes
/// get through, the old node goes and the next candidate leads.
#[test]
fn rejoin_never_queues_behind_its_own_old_node() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    rt.block_on(async {
        let group = "/el/leftover-rejoin";
        let observer = session(&zk.connect_string(), 4000).await;
        let sa = session(&proxy.connect_string(), 1000).await;
        let a = Election::join(&sa, group, opts("a", PausePolicy::Stop))
            .await
            .unwrap();
        let a_token = a.await_leadership(Duration::from_secs(10)).await.unwrap();
        let b = Election::join(&observer, group, opts("b", PausePolicy::Keep))
            .await
            .unwrap();
        wait_status(&b, Duration::from_secs(10), |s| s.node.is_some()).await;
        let a_node = a.status().node.unwrap();
        let a_session = sa.status().session_id;

        fail_every_delete(&proxy, group);
        proxy.blackhole_for(Duration::from_millis(600));
        wait_status(&a, Duration::from_secs(5), |s| s.state == LeaderState::Paused).await;
        wait_status(&a, Duration::from_secs(5), |s| {
            s.state == LeaderState::Inactive
        })
        .await;
        let gave_up = Instant::now();
        // Longer than the old code's bound on the delete (twice the 1 s session).
        tokio::time::sleep(Duration::from_millis(2600)).await;
        let resets = proxy.resets();
        let line = nodes_of(&observer, group, a_session).await;
        proxy.clear_faults();
        let healed = Instant::now();
        // Guards: the deletes were refused by the fault, and the session survived the pause.
        assert!(resets >= 2, "the delete fault fired ({resets} resets)");
        assert_eq!(sa.status().generation, 1, "a's session survived the pause");
        eprintln!(
            "FIGURES leftover rejoin: {resets} deletes of {a_node} reset over {:?}; a's nodes then {line:?}",
            gave_up.elapsed()
        );

        let led = tokio::time::timeout(Duration::from_secs(4), async {
            loop {
                if b.state() == LeaderState::Active || a.state() == LeaderState::Active {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        let mine = nodes_of(&observer, group, a_session).await;
        assert!(
            led.is_ok(),
            "nobody leads {:?} after deletes got through again: a's old node {a_node} is still first in line (a's nodes {mine:?}), a rejoined behind it and b waits on it",
            healed.elapsed()
        );
        assert!(!mine.contains(&a_node), "a's old node is gone: {mine:?}");
        let b_token = b.await_leadership(Duration::from_secs(1)).await.unwrap();
        assert!(b_token > a_token);
        // a is back in line (one node, behind b), on the same session.
        let st = wait_status(&a, Duration::from_secs(5), |s| {
            s.node.as_deref().is_some_and(|n| n != a_node)
        })
        .await;
        assert_eq!(st.state, LeaderState::Inactive);
        assert_eq!(nodes_of(&observer, group, a_session).await.len(), 1);
        eprintln!(
            "FIGURES leftover rejoin: b Active {:?} after the fault was cleared; a back in line",
            healed.elapsed()
        );
    });
}
