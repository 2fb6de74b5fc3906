//! Active never outlives the lease, also while the leader waits on a read of its own: here the
//! read that re-arms the watch on its own candidate node, which nobody answers.

use std::time::{Duration, Instant};

use super::{opts, session, support};
use support::{op, runtime, FaultProxy, RequestMatch, ZkServer};
use zooid::zk::ZooKeeperExt;
use zooid::{Election, LeaderState, PausePolicy};

/// The leader's own-node watch fires (an observer writes the node's data), so the leader reads
/// its node again to re-arm it; the proxy forwards that read and mutes every reply from then on
/// (the connection stays open). The lease is not renewed any more: the state must leave Active
/// by the lease's end, not when the unanswered read gives up.
#[test]
fn active_ends_at_the_lease_while_the_own_node_watch_is_rearmed() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    rt.block_on(async {
        let group = "/el/active-lease";
        let observer = session(&zk.connect_string(), 4000).await;
        let sa = session(&proxy.connect_string(), 2000).await;
        let a = Election::join(&sa, group, opts("a", PausePolicy::Keep))
            .await
            .unwrap();
        a.await_leadership(Duration::from_secs(10)).await.unwrap();
        // Let the own-node watch be armed (a read after Active).
        tokio::time::sleep(Duration::from_millis(300)).await;
        let node = a.status().node.unwrap();
        proxy.mute_replies_from(RequestMatch::Op {
            opcode: op::GET_DATA,
            path_contains: node.clone(),
        });
        observer
            .set(observer.generation().into(), &node, b"poke", None)
            .await
            .unwrap();
        let started = Instant::now();
        // How long past the lease `state()` still read Active, at worst.
        let mut worst = Duration::ZERO;
        let mut left_active = None;
        while started.elapsed() < Duration::from_secs(5) {
            let lease = a.lease().map(tokio::time::Instant::into_std);
            let state = a.state();
            let now = Instant::now();
            if state == LeaderState::Active {
                if let Some(until) = lease.filter(|until| now > *until) {
                    worst = worst.max(now - until);
                }
            } else if proxy.is_muted() {
                left_active = Some(started.elapsed());
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        // Guards: the read re-arming the watch was sent and muted the replies.
        assert!(proxy.is_muted(), "the leader re-read its node (the mute fired)");
        assert_eq!(proxy.armed_faults(), 0);
        eprintln!(
            "FIGURES active-lease: Active read at worst {worst:?} past the lease; left Active {left_active:?} after the poke; state then {:?}",
            a.state()
        );
        assert!(
            worst <= Duration::from_millis(100),
            "state() read Active {worst:?} past the lease while the leader awaited the read re-arming its own-node watch"
        );
        assert!(left_active.is_some(), "the leader left Active");
        proxy.unmute();
    });
}
