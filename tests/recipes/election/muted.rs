//! A leader whose replies are all lost while the servers still hear it (the proxy mutes
//! server-to-client bytes): it must step down, and the servers must be able to expire its
//! session, so the next candidate leads. The session layer's confirmation of the given-up
//! session (reattach-and-close) must not keep that session alive by touching it forever.

use std::time::{Duration, Instant};

use super::{opts, session, support, wait_status};
use support::{runtime, FaultProxy, ZkServer};
use zooid::{Election, LeaderState, PausePolicy};

#[test]
fn muted_leader_steps_down_and_the_next_one_leads() {
    support::init_tracing();
    let zk = ZkServer::start();
    let rt = runtime();
    rt.block_on(async {
        let group = "/el/muted";
        let proxy = FaultProxy::start(zk.addr());
        let sa = session(&proxy.connect_string(), 2000).await;
        let sb = session(&zk.connect_string(), 4000).await;
        let a = Election::join(&sa, group, opts("a", PausePolicy::Keep))
            .await
            .unwrap();
        let a_token = a.await_leadership(Duration::from_secs(20)).await.unwrap();
        let b = Election::join(&sb, group, opts("b", PausePolicy::Keep))
            .await
            .unwrap();
        wait_status(&b, Duration::from_secs(10), |s| s.node.is_some()).await;
        let accepted_before = proxy.accepted_connections();

        proxy.mute_replies();
        let muted = Instant::now();
        wait_status(&a, Duration::from_secs(10), |s| {
            s.state == LeaderState::Inactive
        })
        .await;
        let stepped_down = muted.elapsed();
        let b_token = b.await_leadership(Duration::from_secs(30)).await;
        let took = muted.elapsed();
        // Guard: the servers heard A's side after the mute (reconnections or reattaches through
        // the proxy, each touching the session).
        let heard = proxy.accepted_connections() - accepted_before;
        assert!(heard >= 1, "no connection reached the proxy after the mute");
        let b_token = b_token.expect("b leads once the muted leader's session is gone");
        assert!(b_token > a_token, "{b_token} > {a_token}");
        assert_ne!(a.state(), LeaderState::Active);
        println!(
            "FIGURES election muted-leader: a inactive {stepped_down:?} and b active {took:?} after the mute (session 2 s; {heard} connections through the proxy after the mute)"
        );
        proxy.unmute();
    });
}
