//! The session's lease through the quorum (src/zk/session/lease.rs): a client holding it that
//! stays connected to a follower cut off from the quorum (the follower answers its pings for
//! `syncLimit` ticks) stops acting before the ensemble expires its session. Before the lease,
//! `stop_acting` came only half a timeout after the follower dropped its clients, long after
//! the expiry: a worker went on with an item the ensemble had handed to another.

use std::time::{Duration, Instant};

use zooid::zk::{Create, Mode, Session, ZooKeeperExt};
use zooid::ConnectionState;
use zooid_test_support as support;
use zooid_test_support::{runtime, session_options, ZkEnsemble};

#[test]
fn a_session_on_a_follower_cut_off_from_the_quorum_stops_acting_before_it_expires() {
    support::init_tracing();
    // syncLimit 40 ticks (10 s): the cut-off follower keeps its clients that long.
    let (ens, links) = ZkEnsemble::start_with_links(3, &[("syncLimit", "40")]);
    let leader = ens.leader().expect("a quorum leader");
    let f = (0..3).find(|&i| i != leader).unwrap();
    let g = (0..3).find(|&i| i != leader && i != f).unwrap();
    runtime().block_on(async {
        let a = Session::connect(&ens.server_connect_string(f), &session_options(2000))
            .await
            .unwrap();
        let lease = a.hold_lease().await.expect("the quorum confirms A's session");
        let a = a.into_zk();
        let observer = Session::connect(&ens.server_connect_string(g), &session_options(4000))
            .await
            .unwrap()
            .into_zk();
        let node = "/lease-a";
        a.create(a.generation(), node, b"", &Create::new(Mode::Ephemeral))
            .await
            .expect("A's ephemeral node");
        // Guard: connected and renewed, A acts (longer than the lease: the renewals count).
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(!a.status().stop_acting, "stop_acting before any fault");

        links.isolate(f);
        let cut = Instant::now();
        let mut stopped: Option<(Duration, ConnectionState)> = None;
        let gone = loop {
            let status = a.status();
            if status.stop_acting && stopped.is_none() {
                stopped = Some((cut.elapsed(), status.state));
            }
            let seen = observer.exists(observer.generation(), node).await;
            if matches!(seen, Ok(None)) {
                break cut.elapsed();
            }
            assert!(
                cut.elapsed() < Duration::from_secs(9),
                "the ensemble never expired A's session"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        // Guards: the fault is the one described.
        let held = links.held(f);
        let f_mode = ens.mode(f);
        eprintln!(
            "FIGURES cut-off follower: A stopped acting at {stopped:?} after the cut, its \
             session expired (node gone through G) at {gone:?}; relay holds {held}, F {f_mode:?}"
        );
        assert!(held > 0, "the relays held F's quorum traffic");
        assert_eq!(f_mode.as_deref(), Some("follower"), "F still serves clients");
        links.heal();
        drop(lease);
        let (at, state) = stopped.expect("A never stopped acting while its session expired");
        assert!(
            at < gone,
            "A stopped acting at {at:?}, after the ensemble expired its session ({gone:?})"
        );
        assert_eq!(
            state,
            ConnectionState::Connected,
            "guard: A was still connected to F when it stopped (the lease, not a suspension)"
        );
    });
}
