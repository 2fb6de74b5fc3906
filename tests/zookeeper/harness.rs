//! Tests of the test harness itself (tests/support): real ZooKeeper servers and ensembles,
//! and the fault-injecting proxy, driven with the plain `zookeeper-client` crate.
//!
//! Needs the ZooKeeper jars: `bash scripts/fetch-zookeeper.sh` first.

use zooid_test_support as support;

use std::future::Future;
use std::path::Path;
use std::time::{Duration, Instant};

use support::{op, FaultProxy, Mode, ResetPoint, ZkEnsemble, ZkServer};
use zookeeper_client as zk;

async fn connect(connect_string: &str, session_timeout: Duration) -> zk::Client {
    zk::Client::connector()
        .with_session_timeout(session_timeout)
        .connect(connect_string)
        .await
        .unwrap_or_else(|e| panic!("connect to {connect_string}: {e}"))
}

fn persistent() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

fn process_exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Retries `f` until it returns `Ok` or `timeout` passes (then panics with the last error).
async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, zk::Error>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        match f().await {
            Ok(v) => return v,
            Err(e) if Instant::now() >= deadline => {
                panic!("{what}: still failing after {timeout:?}: {e}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standalone_server_serves_restarts_and_dies_with_its_value() {
    support::init_tracing();
    let server = ZkServer::start();
    assert!(server.connect_string().starts_with("127.0.0.1:"));
    assert!(server.is_running());
    let srvr = server.four_letter("srvr").unwrap();
    assert!(srvr.contains("Mode: standalone"), "srvr: {srvr}");
    assert_eq!(server.four_letter("ruok").unwrap(), "imok");

    let client = connect(&server.connect_string(), Duration::from_secs(5)).await;
    client
        .create("/harness", b"v0", &persistent())
        .await
        .unwrap();
    let stat = client.set_data("/harness", b"v1", Some(0)).await.unwrap();
    assert_eq!(stat.version, 1);
    let (data, stat) = client.get_data("/harness").await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (&b"v1"[..], 1));
    drop(client);

    // Restart: same port, same data, new process.
    let first_pid = server.pid();
    server.restart();
    assert_ne!(server.pid(), first_pid);
    assert!(
        !process_exists(first_pid),
        "old server process {first_pid} still exists"
    );
    let client = connect(&server.connect_string(), Duration::from_secs(5)).await;
    let (data, _) = client.get_data("/harness").await.unwrap();
    assert_eq!(data, b"v1");
    drop(client);

    // Stop, then start again.
    server.stop();
    assert!(!server.is_running());
    assert!(!server.is_serving());
    server.restart();
    assert!(server.is_serving());

    // Dropping the value kills and reaps the JVM and removes its files.
    let pid = server.pid();
    let data_dir = server.data_dir();
    assert!(process_exists(pid));
    drop(server);
    assert!(
        !process_exists(pid),
        "server process {pid} survived the drop of its ZkServer"
    );
    assert!(
        !data_dir.exists(),
        "temp dir {} survived",
        data_dir.display()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_drops_the_reply_to_a_set_data_that_was_applied() {
    support::init_tracing();
    let server = ZkServer::start();
    let proxy = FaultProxy::start(server.addr());
    let client = connect(&proxy.connect_string(), Duration::from_secs(5)).await;
    client
        .create("/drop-me", b"before", &persistent())
        .await
        .unwrap();
    client.create("/other", b"x", &persistent()).await.unwrap();

    proxy.drop_reply_to(op::SET_DATA, "/drop-me");
    assert_eq!(proxy.armed_faults(), 1);
    // Not matched: other path, other opcode on the same path.
    client.set_data("/other", b"y", None).await.unwrap();
    client.get_data("/drop-me").await.unwrap();
    assert_eq!(proxy.dropped_replies(), 0);

    let err = client
        .set_data("/drop-me", b"after", Some(0))
        .await
        .unwrap_err();
    assert_eq!(err, zk::Error::ConnectionLoss, "unexpected error {err:?}");
    assert_eq!(proxy.dropped_replies(), 1);
    assert_eq!(proxy.armed_faults(), 0);

    // The write did happen.
    let direct = connect(&server.connect_string(), Duration::from_secs(5)).await;
    let (data, stat) = direct.get_data("/drop-me").await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (&b"after"[..], 1));

    // The proxied client reconnects (through the proxy) and sees it too.
    let (data, _) = eventually("read through proxy", Duration::from_secs(10), || {
        client.get_data("/drop-me")
    })
    .await;
    assert_eq!(data, b"after");
    assert!(proxy.accepted_connections() >= 2, "{:?}", proxy.stats());
    assert_eq!(proxy.dropped_replies(), 1, "{:?}", proxy.stats());

    // Raw pattern variant: the next request containing the bytes, whatever its opcode.
    proxy.drop_reply_after_request_containing(b"/other".to_vec());
    assert_eq!(
        client.get_data("/other").await.unwrap_err(),
        zk::Error::ConnectionLoss
    );
    assert_eq!(proxy.dropped_replies(), 2);
    assert_eq!(proxy.faults_injected(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_resets_blackholes_and_closes() {
    support::init_tracing();
    let server = ZkServer::start();
    let proxy = FaultProxy::start(server.addr());
    let client = connect(&proxy.connect_string(), Duration::from_secs(6)).await;
    let direct = connect(&server.connect_string(), Duration::from_secs(6)).await;
    client.create("/r", b"0", &persistent()).await.unwrap();

    // Reset before the request is sent: not applied. (zookeeper-client reports a reset as an
    // I/O error, `Error::Custom(ConnectionReset)`, where a plain close gives ConnectionLoss.)
    proxy.reset_on(op::SET_DATA, "/r", ResetPoint::BeforeRequest);
    let err = client.set_data("/r", b"1", None).await.unwrap_err();
    eprintln!("set_data reset before request: {err:?}");
    assert_eq!(proxy.resets(), 1);
    assert_eq!(direct.get_data("/r").await.unwrap().1.version, 0);

    // Half a request, then reset: not applied either.
    eventually("reconnect", Duration::from_secs(10), || {
        client.get_data("/r")
    })
    .await;
    proxy.reset_on(op::SET_DATA, "/r", ResetPoint::MidRequest);
    client.set_data("/r", b"2", None).await.unwrap_err();
    assert_eq!(proxy.resets(), 2);
    assert_eq!(direct.get_data("/r").await.unwrap().1.version, 0);

    // Whole request, then reset when the reply comes: applied.
    eventually("reconnect", Duration::from_secs(10), || {
        client.get_data("/r")
    })
    .await;
    proxy.reset_on(op::SET_DATA, "/r", ResetPoint::AfterRequest);
    client.set_data("/r", b"3", None).await.unwrap_err();
    assert_eq!(proxy.resets(), 3, "{:?}", proxy.stats());
    let (data, stat) = direct.get_data("/r").await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (&b"3"[..], 1));
    assert_eq!(proxy.dropped_replies(), 0);

    // close_all: the client reconnects.
    eventually("read", Duration::from_secs(10), || client.get_data("/r")).await;
    let accepted = proxy.accepted_connections();
    proxy.close_all();
    assert!(
        proxy
            .wait_for(Duration::from_secs(5), |s| s.forced_closes >= 1)
            .await,
        "{:?}",
        proxy.stats()
    );
    eventually("read after close_all", Duration::from_secs(10), || {
        client.get_data("/r")
    })
    .await;
    assert!(proxy.accepted_connections() > accepted);

    // A short blackhole delays a request; it completes once traffic flows again.
    let started = Instant::now();
    proxy.blackhole_for(Duration::from_millis(1500));
    assert!(proxy.is_blackholed());
    let (data, _) = client.get_data("/r").await.unwrap();
    assert_eq!(data, b"3");
    assert!(
        started.elapsed() >= Duration::from_millis(1400),
        "answered during the blackhole"
    );
    assert!(!proxy.is_blackholed());

    // Manual blackhole / heal.
    proxy.blackhole();
    let pending = tokio::spawn({
        let client = client.clone();
        async move { client.get_data("/r").await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !pending.is_finished(),
        "request answered through a blackhole"
    );
    proxy.heal();
    let (data, _) = tokio::time::timeout(Duration::from_secs(5), pending)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(data, b"3");
    assert!(proxy.stats().blackholes >= 2);

    // Dropping the proxy closes everything: nothing listens on its port afterwards.
    let addr = proxy.addr();
    drop(proxy);
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "proxy still listening after drop"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_modes_ignore_pings_and_can_be_cleared() {
    support::init_tracing();
    let server = ZkServer::start();
    let proxy = FaultProxy::start(server.addr());
    // zookeeper-client pings every 0.15 x session timeout when idle: ~450 ms here.
    let client = connect(&proxy.connect_string(), Duration::from_secs(3)).await;
    client.create("/m", b"m", &persistent()).await.unwrap();

    // DropNextReply waits for a real request: the pings meanwhile pass untouched.
    proxy.set_mode(Mode::DropNextReply);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(proxy.dropped_replies(), 0);
    assert_eq!(proxy.armed_faults(), 1);
    assert_eq!(
        client.get_data("/m").await.unwrap_err(),
        zk::Error::ConnectionLoss
    );
    assert_eq!(proxy.dropped_replies(), 1);

    // Pass disarms.
    proxy.set_mode(Mode::ResetMidRequest);
    assert_eq!(proxy.armed_faults(), 1);
    proxy.set_mode(Mode::Pass);
    assert_eq!(proxy.armed_faults(), 0);
    eventually("read", Duration::from_secs(10), || client.get_data("/m")).await;
    client.set_data("/m", b"n", None).await.unwrap();
    assert_eq!(proxy.resets(), 0);

    // A blackhole that ends by closing every connection; the client reconnects.
    let closes = proxy.stats().forced_closes;
    proxy.set_mode(Mode::BlackholeThenClose(Duration::from_millis(300)));
    assert!(proxy.is_blackholed());
    assert!(
        proxy
            .wait_for(Duration::from_secs(5), |s| s.forced_closes > closes)
            .await,
        "{:?}",
        proxy.stats()
    );
    assert!(!proxy.is_blackholed());
    let (data, _) = eventually("read after blackhole", Duration::from_secs(10), || {
        client.get_data("/m")
    })
    .await;
    assert_eq!(data, b"n");

    // A timed blackhole ends by itself.
    proxy.set_mode(Mode::Blackhole(Duration::from_millis(300)));
    assert!(proxy.is_blackholed());
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!proxy.is_blackholed());
    eventually(
        "read after timed blackhole",
        Duration::from_secs(10),
        || client.get_data("/m"),
    )
    .await;
    assert!(proxy.open_connections() >= 1);
    assert_eq!(proxy.stats().upstream_failures, 0);

    // Pausing the server (SIGSTOP) makes it unresponsive until resumed.
    server.pause();
    assert!(!server.is_serving());
    server.resume();
    assert!(server.is_serving());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ensemble_elects_a_new_leader_after_the_leader_dies() {
    support::init_tracing();
    let started = Instant::now();
    let ensemble = ZkEnsemble::start(3);
    eprintln!("ensemble formed in {:?}", started.elapsed());
    assert_eq!(ensemble.len(), 3);
    assert_eq!(ensemble.connect_string().split(',').count(), 3);
    let leader = ensemble.leader().expect("a leader");
    assert_eq!(ensemble.wait_for_quorum(Duration::from_secs(5)), leader);
    assert_eq!(ensemble.mode(leader).as_deref(), Some("leader"));
    let followers: Vec<usize> = (0..3).filter(|&i| i != leader).collect();
    for &f in &followers {
        assert_eq!(ensemble.mode(f).as_deref(), Some("follower"));
    }

    let client = connect(&ensemble.connect_string(), Duration::from_secs(6)).await;
    client.create("/ens", b"0", &persistent()).await.unwrap();

    // A paused follower leaves a quorum of two: writes go on.
    let paused = followers[0];
    ensemble.pause(paused);
    assert!(ensemble.is_paused(paused) && ensemble.is_running(paused));
    assert_eq!(ensemble.mode(paused), None);
    eventually(
        "write with a follower paused",
        Duration::from_secs(20),
        || client.set_data("/ens", b"1", None),
    )
    .await;
    ensemble.resume(paused);
    assert!(!ensemble.is_paused(paused));
    assert_eq!(ensemble.wait_for_quorum(Duration::from_secs(30)), leader);

    // SIGKILL the leader: the other two elect a new one and writes go on.
    let leader_pid = ensemble.pid(leader).unwrap();
    ensemble.kill(leader);
    assert!(!ensemble.is_running(leader));
    assert!(!process_exists(leader_pid));
    let t = Instant::now();
    let new_leader = ensemble.wait_for_new_leader(leader, Duration::from_secs(30));
    eprintln!(
        "new leader {new_leader} (was {leader}) after {:?}",
        t.elapsed()
    );
    assert_ne!(new_leader, leader);
    assert_eq!(ensemble.leader(), Some(new_leader));
    eventually("write after leader death", Duration::from_secs(20), || {
        client.set_data("/ens", b"2", None)
    })
    .await;

    // The old leader comes back as a follower with the data it missed.
    ensemble.restart(leader);
    assert_eq!(
        ensemble.wait_for_quorum(Duration::from_secs(30)),
        new_leader
    );
    assert_eq!(ensemble.mode(leader).as_deref(), Some("follower"));
    let direct = connect(
        &ensemble.server_connect_string(leader),
        Duration::from_secs(6),
    )
    .await;
    direct.sync("/ens").await.unwrap();
    assert_eq!(direct.get_data("/ens").await.unwrap().0, b"2");
    drop(direct);

    // A wiped follower rejoins empty and syncs everything from the leader.
    let wiped = (0..3).find(|&i| i != new_leader).unwrap();
    ensemble.wipe(wiped);
    assert!(!ensemble.is_running(wiped));
    assert!(!ensemble.data_dir(wiped).join("version-2").exists());
    assert!(ensemble.data_dir(wiped).join("myid").exists());
    ensemble.restart(wiped);
    ensemble.wait_for_quorum(Duration::from_secs(30));
    let direct = connect(
        &ensemble.server_connect_string(wiped),
        Duration::from_secs(6),
    )
    .await;
    direct.sync("/ens").await.unwrap();
    assert_eq!(direct.get_data("/ens").await.unwrap().0, b"2");
    drop(direct);
    drop(client);

    // Dropping the ensemble kills every server, including a paused one.
    ensemble.pause(new_leader);
    let pids: Vec<u32> = (0..3).map(|i| ensemble.pid(i).unwrap()).collect();
    drop(ensemble);
    for pid in pids {
        assert!(
            !process_exists(pid),
            "server process {pid} survived the drop of its ZkEnsemble"
        );
    }
    eprintln!("ensemble test took {:?}", started.elapsed());
}
