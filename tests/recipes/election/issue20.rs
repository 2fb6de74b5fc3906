//! Issue 20's election findings against real ZooKeeper: two Active leaders behind a follower cut
//! off from the quorum (finding 4) with `leader()` reading that follower's stale view (finding
//! 8), and fencing tokens across a wipe of the ensemble (finding 7).

use std::time::{Duration, Instant};

use super::{create, opts, session, support};
use support::{runtime, ZkEnsemble, ZkServer};
use zooid::zk::ZooKeeperExt;
use zooid::{Election, LeaderState, PausePolicy};

/// A follower F is cut off from the quorum (its quorum and election links held, syncLimit 40
/// ticks = 10 s) while the leader's client stays connected to it. The ensemble expires the
/// leader's session (2 s) and the next candidate leads; F keeps answering the old leader's
/// pings. Checks: the old leader is not Active while the new one is, and `leader()` through F
/// does not name the expired leader.
#[test]
fn isolated_follower_does_not_make_two_active_leaders() {
    support::init_tracing();
    let (ens, links) = ZkEnsemble::start_with_links(3, &[("syncLimit", "40")]);
    let rt = runtime();
    let group = "/el/isolated";
    let quorum_leader = ens.leader().expect("a quorum leader");
    let f = (0..3).find(|&i| i != quorum_leader).unwrap();
    let g = (0..3).find(|&i| i != quorum_leader && i != f).unwrap();
    rt.block_on(async {
        let sa = session(&ens.server_connect_string(f), 2000).await;
        let sb = session(&ens.server_connect_string(g), 2000).await;
        let observer_f = session(&ens.server_connect_string(f), 4000).await;
        let a = Election::join(&sa, group, opts("a", PausePolicy::Stop))
            .await
            .unwrap();
        let a_token = a.await_leadership(Duration::from_secs(20)).await.unwrap();
        let b = Election::join(&sb, group, opts("b", PausePolicy::Stop))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(b.state(), LeaderState::Inactive, "b waits in line");

        links.isolate(f);
        let cut = Instant::now();
        let mut violations = Vec::new();
        // Sample both candidates until b leads.
        let mut a_left_active = None;
        let mut a_suspended = None;
        let a_active_at_b;
        let b_token = loop {
            if a.state() != LeaderState::Active && a_left_active.is_none() {
                a_left_active = Some(cut.elapsed());
            }
            if sa.status().state != zooid::ConnectionState::Connected && a_suspended.is_none() {
                a_suspended = Some(cut.elapsed());
            }
            if b.state() == LeaderState::Active {
                a_active_at_b = Some(a.state());
                break b.token().unwrap();
            }
            assert!(cut.elapsed() < Duration::from_secs(9), "b never led");
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        let b_at = cut.elapsed();
        // Guards: the fault happened as described.
        let held = links.held(f);
        let a_session = sa.status().state;
        let f_mode = ens.mode(f);
        eprintln!(
            "FIGURES isolated follower: b Active {b_at:?} after the cut (token {b_token:#x} > {a_token:#x}); a left Active at {a_left_active:?} (its session suspended at {a_suspended:?}), a's state then {a_active_at_b:?}; guards: relay holds {held}, a's session {a_session:?}, follower mode {f_mode:?}"
        );
        assert!(held > 0, "the relays held F's quorum traffic");
        assert_eq!(f_mode.as_deref(), Some("follower"), "F still serves clients");
        if a_active_at_b == Some(LeaderState::Active) {
            violations.push(format!(
                "two Active at once: a (token {a_token:#x}, session {a_session:?} through the isolated follower) and b (token {b_token:#x}) {b_at:?} after the cut"
            ));
        }
        // Finding 8: `leader()` through F must not name the expired leader.
        let seen = zooid::election::leader(&observer_f, group).await;
        eprintln!("FIGURES leader() through the isolated follower: {seen:?}");
        if let Ok(Some(info)) = &seen {
            if info.token == a_token {
                violations.push(format!(
                    "leader() through the isolated follower named the expired leader (token {:#x}) while b leads",
                    info.token
                ));
            }
        }
        links.heal();
        drop(a);
        drop(b);
        assert!(violations.is_empty(), "{violations:#?}");
    });
}

/// The ensemble is wiped (data deleted, server restarted empty): zxids start again from 0. The
/// candidate re-creates the group and leads again; its new token must exceed the old one.
#[test]
fn tokens_grow_across_a_wipe() {
    support::init_tracing();
    let zk = ZkServer::start();
    let rt = runtime();
    let group = "/el/wipe";
    rt.block_on(async {
        let s = session(&zk.connect_string(), 2000).await;
        // Some history, so zxids before the wipe are well above the ones after it.
        for i in 0..50 {
            create(&s, &format!("/filler-{i}")).await;
        }
        let e = Election::join(&s, group, opts("w", PausePolicy::Stop))
            .await
            .unwrap();
        let before = e.await_leadership(Duration::from_secs(20)).await.unwrap();
        let observed_before = zooid::election::leader(&s, group).await.unwrap().unwrap().token;
        zk.kill();
        let version2 = zk.data_dir().join("version-2");
        let wiped = std::fs::remove_dir_all(&version2).is_ok();
        zk.restart();
        // Guard: the data is gone (the filler nodes no longer exist).
        let after = e.await_leadership(Duration::from_secs(30)).await;
        let after = match after {
            Ok(t) if t != before => t,
            _ => {
                let mut rx = e.subscribe();
                let status = tokio::time::timeout(
                    Duration::from_secs(30),
                    rx.wait_for(|st| {
                        st.state == LeaderState::Active && st.token.is_some_and(|t| t != before)
                    }),
                )
                .await
                .expect("leads again after the wipe")
                .map(|st| st.clone())
                .unwrap();
                status.token.unwrap()
            }
        };
        let filler_gone = s
            .exists(s.generation(), "/filler-0")
            .await
            .map(|s| s.is_none())
            .unwrap_or(false);
        let observed_after = zooid::election::leader(&s, group).await.unwrap().unwrap().token;
        eprintln!(
            "FIGURES wipe: token before {before} ({before:#x}), after {after} ({after:#x}); observer {observed_before} -> {observed_after}; guards: version-2 deleted {wiped}, filler gone {filler_gone}, session losses {}",
            s.losses()
        );
        assert!(wiped && filler_gone, "the ensemble was wiped");
        assert_eq!(observed_after, after, "the observer reads the same token");
        assert!(
            after > before,
            "the token after the wipe ({after:#x}) must exceed the one before ({before:#x})"
        );
    });
}
