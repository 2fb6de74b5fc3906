//! The shared session layer against a real ZooKeeper server: the states every part of zooid
//! observes (Connected, Suspended, Lost, then Connected with the next generation), the local
//! loss timer for a client cut off from every server, expiry reported by the server, and a
//! service and a raw client sharing one session.

use zooid::zk::{Create, ZooKeeper};
use zooid::CategorySpec;
use zooid_test_support as support;

use std::time::{Duration, Instant};

use support::{runtime, session_options, FaultProxy, ZkEnsemble, ZkServer};
use tokio::sync::watch;
use zooid::{
    ConnectionState, IdCategory, IdGeneratorService, ServiceOptions, Session, SessionStatus,
};

/// Every status the receiver sees until `until` holds or `timeout` passes.
async fn record_until(
    rx: &mut watch::Receiver<SessionStatus>,
    timeout: Duration,
    until: impl Fn(&SessionStatus) -> bool,
) -> Vec<SessionStatus> {
    let mut seen = vec![*rx.borrow_and_update()];
    let deadline = tokio::time::Instant::now() + timeout;
    while !until(seen.last().unwrap()) {
        match tokio::time::timeout_at(deadline, rx.changed()).await {
            Ok(Ok(())) => seen.push(*rx.borrow_and_update()),
            _ => break,
        }
    }
    seen
}

fn states(seen: &[SessionStatus]) -> Vec<(ConnectionState, u64)> {
    seen.iter().map(|s| (s.state, s.generation)).collect()
}

/// A blackhole shorter than the session: Suspended, then Connected again in the same
/// generation (the same session, so ephemeral nodes survive).
#[test]
fn short_partition_suspends_and_resumes_the_same_session() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    runtime().block_on(async {
        let session = Session::connect(&proxy.connect_string(), &session_options(6000))
            .await
            .unwrap();
        let first = session.status();
        assert_eq!(first.state, ConnectionState::Connected);
        assert_eq!(first.generation, 1);
        let mut rx = session.subscribe();

        // Long enough for the client to notice (2/3 of the timeout without a reply), shorter
        // than the session.
        proxy.blackhole_then_close(Duration::from_millis(4500));
        let mut seen = record_until(&mut rx, Duration::from_secs(20), |s| {
            s.state != ConnectionState::Connected
        })
        .await;
        seen.extend(
            record_until(&mut rx, Duration::from_secs(20), |s| {
                s.state == ConnectionState::Connected
            })
            .await,
        );
        eprintln!("states: {:?}", states(&seen));
        assert!(
            proxy.stats().blackholes >= 1,
            "the partition must have happened"
        );
        assert!(
            seen.iter().any(|s| s.state == ConnectionState::Suspended),
            "a disconnection shows as Suspended: {:?}",
            states(&seen)
        );
        assert!(
            !seen.iter().any(|s| s.state == ConnectionState::Lost),
            "a partition shorter than the session is not a loss: {:?}",
            states(&seen)
        );
        let last = seen.last().unwrap();
        assert_eq!(
            (last.state, last.generation),
            (ConnectionState::Connected, 1)
        );
        assert_eq!(last.session_id, first.session_id, "the same session");
    });
}

/// A client cut off from every server never hears "expired": the session layer declares the
/// session Lost by its local timer (the negotiated timeout after the disconnection), and once a
/// server is reachable again opens a new session (generation 2) that works.
#[test]
fn long_partition_is_lost_by_the_local_timer_and_replaced() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    runtime().block_on(async {
        let session = Session::connect(&proxy.connect_string(), &session_options(3000))
            .await
            .unwrap();
        let timeout = session.status().timeout;
        let first = session.status();
        let mut rx = session.subscribe();
        let cut = Instant::now();
        proxy.blackhole();
        let seen = record_until(&mut rx, Duration::from_secs(30), |s| {
            s.state == ConnectionState::Lost
        })
        .await;
        let lost_after = cut.elapsed();
        eprintln!(
            "states: {:?}; Lost {lost_after:?} after the cut (negotiated timeout {timeout:?})",
            states(&seen)
        );
        assert!(
            proxy.is_blackholed(),
            "still cut off: only the local timer can tell"
        );
        assert_eq!(seen.last().unwrap().state, ConnectionState::Lost);
        assert!(
            seen.iter().any(|s| s.state == ConnectionState::Suspended),
            "Suspended comes first"
        );
        assert!(
            lost_after >= timeout,
            "never declared lost before the session timeout ({lost_after:?} < {timeout:?})"
        );

        proxy.heal();
        proxy.close_all();
        let seen = record_until(&mut rx, Duration::from_secs(30), |s| {
            s.state == ConnectionState::Connected && s.generation == 2
        })
        .await;
        eprintln!("after healing: {:?}", states(&seen));
        let now = session.status();
        assert_eq!((now.state, now.generation), (ConnectionState::Connected, 2));
        assert_ne!(now.session_id, first.session_id, "a new session");

        // The new session serves requests.
        ZooKeeper::sync(&session, 2, "/").await.unwrap();
    });
}

/// The ID service and a raw client share one session: the service's node is created by the
/// session the application sees, and the service keeps working after the session is replaced.
#[test]
fn service_and_recipes_share_one_session_across_replacement() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    runtime().block_on(async {
        let session = Session::connect(&proxy.connect_string(), &session_options(3000))
            .await
            .unwrap();
        let service =
            IdGeneratorService::on_zookeeper(session.clone().into_zk(), ServiceOptions::default());
        assert_eq!(
            service.zookeeper().unwrap().status().session_id,
            session.status().session_id
        );
        let category = IdCategory::new("/shared/ids").unwrap();
        service
            .create_category(&category, &CategorySpec::new(1, 1000))
            .await
            .unwrap();
        assert_eq!(
            service.take_ids(&category, 10).await.unwrap().count_ids(),
            10
        );

        let mut rx = session.subscribe();
        proxy.blackhole();
        record_until(&mut rx, Duration::from_secs(30), |s| {
            s.state == ConnectionState::Lost
        })
        .await;
        assert_eq!(session.status().state, ConnectionState::Lost);
        proxy.heal();
        proxy.close_all();
        let status = session
            .wait_connected(Duration::from_secs(30))
            .await
            .unwrap();
        assert_eq!(status.generation, 2);

        let ids = service.take_ids(&category, 10).await.unwrap();
        assert_eq!(ids.ranges()[0].start(), 11, "no ID twice across sessions");
        assert_eq!(
            service.zookeeper().unwrap().status().generation,
            2,
            "the service follows the shared session"
        );
    });
}

/// Dropping the last handle closes the session on the server (its ephemeral nodes vanish).
#[test]
fn dropping_the_last_handle_closes_the_session() {
    support::init_tracing();
    let zk = ZkServer::start();
    runtime().block_on(async {
        let session = Session::connect(&zk.connect_string(), &session_options(20000))
            .await
            .unwrap();
        let generation = session.status().generation;
        ZooKeeper::create(&session, generation, "/eph", b"x", &Create::ephemeral())
            .await
            .unwrap();
        let observer = Session::connect(&zk.connect_string(), &session_options(20000))
            .await
            .unwrap();
        drop(session);
        let watching = observer.status().generation;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let stat = ZooKeeper::exists(&observer, watching, "/eph")
                .await
                .unwrap();
            if stat.is_none() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the ephemeral node outlived its session's last handle by 10 s (timeout 20 s)"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}

/// "Stop acting" comes half-way through a suspension, before the generation is given up: the
/// statuses of a client cut off from every server go Connected, Suspended (`stop_acting`
/// false), Suspended with `stop_acting` at least half the negotiated timeout later, then Lost
/// (`stop_acting` true) and, once healed, Connected in generation 2 (`stop_acting` false).
#[test]
fn stop_acting_is_published_half_way_through_a_suspension_before_the_loss() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    runtime().block_on(async {
        let session = Session::connect(&proxy.connect_string(), &session_options(4000))
            .await
            .unwrap();
        let first = session.status();
        assert!(!first.stop_acting, "a connected session acts: {first:?}");
        let half = first.stop_acting_after();
        assert_eq!(half, first.timeout / 2);
        let mut rx = session.subscribe();
        proxy.blackhole();
        // Every status, with when it was seen.
        let mut seen = vec![(Instant::now(), *rx.borrow_and_update())];
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while seen.last().map(|(_, s)| s.state) != Some(ConnectionState::Lost) {
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => seen.push((Instant::now(), *rx.borrow_and_update())),
                _ => break,
            }
        }
        let brief: Vec<_> = seen
            .iter()
            .map(|(at, s)| (at.duration_since(seen[0].0), s.state, s.stop_acting))
            .collect();
        eprintln!(
            "statuses after the cut (negotiated {:?}): {brief:?}",
            first.timeout
        );
        // Guard: the cut happened and lasted.
        assert!(proxy.is_blackholed() && proxy.stats().blackholes == 1);
        let suspended = seen
            .iter()
            .find(|(_, s)| s.state == ConnectionState::Suspended)
            .expect("a Suspended status");
        assert!(!suspended.1.stop_acting, "early in a suspension: {brief:?}");
        let stop = seen
            .iter()
            .find(|(_, s)| s.stop_acting)
            .expect("a status with stop_acting");
        assert_eq!(
            (stop.1.state, stop.1.generation),
            (ConnectionState::Suspended, 1),
            "stop acting comes before the loss: {brief:?}"
        );
        // Measured from when this test saw the suspension, which on a loaded machine is later
        // than when it began (the timer runs from then): a quarter second of slack for that.
        let waited = stop.0.duration_since(suspended.0);
        assert!(
            waited + Duration::from_millis(250) >= half,
            "stop acting {waited:?} into the suspension, before half the timeout {half:?}"
        );
        let (lost_at, lost) = seen.last().copied().expect("statuses");
        assert_eq!(lost.state, ConnectionState::Lost, "{brief:?}");
        assert!(lost.stop_acting);
        assert!(lost_at > stop.0, "{brief:?}");

        proxy.heal();
        let renewed = session
            .wait_connected(Duration::from_secs(30))
            .await
            .unwrap();
        assert_eq!(renewed.generation, 2);
        assert!(!renewed.stop_acting, "the new generation acts: {renewed:?}");
    });
}

/// A given-up generation stays given up: when the new session cannot be opened yet (every
/// server still cut off), the session layer must not go back to watching the old client and
/// publish its generation as Suspended (with `stop_acting` reset) or Connected again; it keeps
/// trying to open the next generation, which is the next thing published.
#[test]
fn a_given_up_generation_never_comes_back() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    runtime().block_on(async {
        let session = Session::connect(&proxy.connect_string(), &session_options(1000))
            .await
            .unwrap();
        let mut rx = session.subscribe();
        proxy.blackhole();
        let cut = Instant::now();
        let mut seen = record_until(&mut rx, Duration::from_secs(10), |s| {
            s.state == ConnectionState::Lost
        })
        .await;
        assert_eq!(
            seen.last().map(|s| (s.state, s.generation)),
            Some((ConnectionState::Lost, 1)),
            "generation 1 given up: {seen:?}"
        );
        let lost_after = cut.elapsed();
        // Every server stays cut off while the session layer tries to open generation 2.
        let until = tokio::time::Instant::now() + Duration::from_millis(2500);
        while let Ok(Ok(())) = tokio::time::timeout_at(until, rx.changed()).await {
            seen.push(*rx.borrow_and_update());
        }
        // Guard: the cut lasted throughout.
        assert!(proxy.is_blackholed() && proxy.stats().blackholes == 1);
        proxy.heal();
        seen.extend(
            record_until(&mut rx, Duration::from_secs(15), |s| {
                s.state == ConnectionState::Connected && s.generation >= 2
            })
            .await
            .into_iter()
            .skip(1),
        );
        let brief: Vec<_> = seen
            .iter()
            .map(|s| (s.state, s.generation, s.stop_acting))
            .collect();
        eprintln!("statuses after the cut (lost {lost_after:?} after it): {brief:?}");
        let lost = seen
            .iter()
            .position(|s| s.state == ConnectionState::Lost && s.generation == 1)
            .expect("generation 1 lost");
        let back: Vec<_> = seen[lost..]
            .iter()
            .filter(|s| s.generation == 1 && s.state != ConnectionState::Lost)
            .collect();
        assert!(
            back.is_empty(),
            "the given-up generation 1 came back after Lost: {back:?} (all: {brief:?})"
        );
        let last = seen.last().unwrap();
        assert_eq!(
            (last.state, last.generation),
            (ConnectionState::Connected, 2)
        );
    });
}

/// A reconnection is a new connection ([`SessionStatus::connection`]), and the ID service reads
/// a pool again after one rather than plan on the state it remembered: only a restart of the
/// servers rolls their data back, a restart drops every connection, and a session the restored
/// snapshot knew reattaches to a pool that may have reached the remembered data version again
/// with other contents (a compare-and-set planned on it would apply). Observed here through a
/// pool another process moved on meanwhile: planned on the remembered state, the take's write
/// meets a version conflict; read again after a reconnection, it meets none.
#[test]
fn a_reconnection_forgets_the_remembered_pool() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    runtime().block_on(async {
        let session = Session::connect(&proxy.connect_string(), &session_options(6000))
            .await
            .unwrap();
        let service =
            IdGeneratorService::on_zookeeper(session.clone().into_zk(), ServiceOptions::default());
        let other = IdGeneratorService::connect(
            &zk.connect_string(),
            &session_options(6000),
            ServiceOptions::default(),
        )
        .await
        .unwrap();
        let category = IdCategory::new("/reconnect/ids").unwrap();
        service
            .create_category(&category, &CategorySpec::new(1, 1000).single_node())
            .await
            .unwrap();
        service.take_ids(&category, 10).await.unwrap();

        // Without a reconnection the remembered state is planned on: the other process's take
        // makes this one's write conflict once.
        other.take_ids(&category, 10).await.unwrap();
        let before = service.stats().version_conflicts;
        service.take_ids(&category, 10).await.unwrap();
        let remembered = service.stats().version_conflicts - before;
        assert_eq!(remembered, 1, "a take planned on the remembered pool conflicts");

        // Across a reconnection (the same session) it is not.
        other.take_ids(&category, 10).await.unwrap();
        let first = session.status();
        proxy.close_all();
        let mut rx = session.subscribe();
        let seen = record_until(&mut rx, Duration::from_secs(20), |s| {
            s.state == ConnectionState::Connected && s.connection > first.connection
        })
        .await;
        let now = *seen.last().unwrap();
        assert!(
            now.connection > first.connection && now.state == ConnectionState::Connected,
            "the proxy's close must have made the client reconnect: {seen:?}"
        );
        assert_eq!(now.session_id, first.session_id, "the same session");
        let before = service.stats().version_conflicts;
        let ids = service.take_ids(&category, 10).await.unwrap();
        let after_reconnect = service.stats().version_conflicts - before;
        eprintln!(
            "connection {} -> {}; conflicts: remembered {remembered}, after the reconnection {after_reconnect}; took {ids:?}",
            first.connection, now.connection
        );
        assert_eq!(
            after_reconnect, 0,
            "the first take after a reconnection reads the pool again"
        );
        assert_eq!(ids.ranges()[0].start(), 41, "lowest first, no ID twice");
    });
}

/// A reconnection to a server with a lower `maxSessionTimeout` renegotiates the session's
/// timeout lower, and the ensemble expires the session by the new one: the session layer reports
/// the new value, and a leader's lease shrinks with it. The client kept the first negotiated
/// value (the larger of it and the connection timeout), so a lease outlived the session.
#[test]
fn a_timeout_renegotiated_lower_on_reconnection_is_the_one_counted() {
    support::init_tracing();
    let zk = ZkEnsemble::start(3);
    zk.wait_for_quorum(Duration::from_secs(60));
    // Server 2 grants at most 4 s.
    zk.configure(2, &[("maxSessionTimeout", "4000")]);
    zk.restart(2);
    zk.wait_for_quorum(Duration::from_secs(60));
    let proxy = FaultProxy::start(zk.server_addr(0));
    let rt = runtime();
    rt.block_on(async {
        let session = Session::connect(&proxy.connect_string(), &session_options(20_000))
            .await
            .unwrap();
        let mut rx = session.subscribe();
        assert_eq!(rx.borrow().timeout, Duration::from_secs(20), "guard: 20 s at first");
        let zk_handle = session.clone().into_zk();
        let mut options = zooid::ElectionOptions::new("a");
        options.on_pause = zooid::PausePolicy::Keep;
        let a = zooid::Election::join(&zk_handle, "/renegotiated/g", options)
            .await
            .unwrap();
        a.await_leadership(Duration::from_secs(30)).await.unwrap();
        let before = a.lease_remaining().expect("a lease while Active");
        assert!(before > Duration::from_secs(4), "guard: a lease of the 20 s session: {before:?}");

        // The same session moves to server 2.
        proxy.set_upstream(zk.server_addr(2));
        proxy.close_all();
        let seen = record_until(&mut rx, Duration::from_secs(30), |s| {
            s.state == ConnectionState::Connected && s.connection >= 2
        })
        .await;
        let now = *seen.last().unwrap();
        assert_eq!(
            (now.state, now.generation),
            (ConnectionState::Connected, 1),
            "guard: the same session reconnected: {seen:?}"
        );
        assert_eq!(
            now.timeout,
            Duration::from_secs(4),
            "the session timeout after reconnecting to a server that grants 4 s"
        );
        // The lease counts the new timeout: at most half of 4 s from a confirmation already sent.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match a.lease_remaining() {
                Some(left) if left <= Duration::from_secs(2) => break,
                left => {
                    assert!(
                        Instant::now() < deadline,
                        "the leader's lease still counts the old timeout: {left:?} left"
                    );
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
        a.resign().await.unwrap();
    });
}
