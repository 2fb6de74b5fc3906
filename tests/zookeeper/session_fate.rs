//! What happens to a ZooKeeper request whose caller gave up, established against real servers
//! with the raw `zookeeper_client` crate (0.11), the groundwork of issue 18
//! (docs/DESIGN.md, "When a write's fate is decided"):
//!
//! - a request made while the client is disconnected waits in the crate's queue; once its
//!   caller dropped the future it is never sent (the vendored crate's `zooid patch`; unpatched,
//!   it was sent on reconnection, also with every client handle dropped);
//! - a request in flight when the connection dropped (the caller saw ConnectionLoss) can apply
//!   later, after a read on another session found it absent;
//! - the crate reports the session timeout the server negotiated, not the one requested;
//! - reattaching to the session with its id and password and closing it (`zooid::zk::confirm_dead`)
//!   makes a request still in flight unable to apply;
//! - the crate reports `Expired` on its own timer while the servers still hold the session.
//!
//! Each test proves its fault happened (proxy counters, client states, the proxy's delivery
//! log) before asserting what followed. The tests run one at a time (each starts JVMs).
//! Needs the ZooKeeper jars (`bash scripts/fetch-zookeeper.sh`, or `ZOOID_ZK_LIB`).

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};
use zooid::CategorySpec;

use zooid::zk::{confirm_dead, Confirmed};
use zooid_test_support::proxy::Delivery;
use zooid_test_support::proxy::ProxyStats;
use zooid_test_support::{runtime, FaultProxy, RequestMatch, ZkEnsemble, ZkServer};
use zookeeper_client::{Acls, Client, Connector, CreateMode, CreateOptions, Error, SessionState};

/// One test at a time, whatever `--test-threads` says.
pub(crate) fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The connector zooid's session layer builds (src/session.rs `open_client`): the requested
/// session timeout and a connection timeout of a third of it.
pub(crate) fn connector(session_timeout: Duration) -> Connector {
    Client::connector()
        .with_session_timeout(session_timeout)
        .with_connection_timeout((session_timeout / 3).max(Duration::from_millis(200)))
}

pub(crate) async fn connect(connect: &str, session_timeout: Duration) -> Client {
    connector(session_timeout)
        .connect(connect)
        .await
        .unwrap_or_else(|e| panic!("connect to {connect}: {e}"))
}

fn persistent() -> CreateOptions<'static> {
    CreateMode::Persistent.with_acls(Acls::anyone_all())
}

pub(crate) fn ephemeral() -> CreateOptions<'static> {
    CreateMode::Ephemeral.with_acls(Acls::anyone_all())
}

/// Whether `path` exists, read after a `sync` (so a write committed anywhere before is seen).
pub(crate) async fn exists(client: &Client, path: &str) -> bool {
    client.sync("/").await.expect("sync");
    client.check_stat(path).await.expect("exists").is_some()
}

/// Polls `exists` every 50 ms until it equals `want` or `timeout` passes; returns the last
/// answer.
pub(crate) async fn wait_exists(
    client: &Client,
    path: &str,
    want: bool,
    timeout: Duration,
) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        let now = exists(client, path).await;
        if now == want || Instant::now() >= deadline {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the client's state satisfies `want`; returns the state reached and when.
async fn wait_state(
    watcher: &mut zookeeper_client::StateWatcher,
    timeout: Duration,
    want: impl Fn(SessionState) -> bool,
) -> (SessionState, Instant) {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut state = watcher.peek_state();
    while !want(state) {
        match tokio::time::timeout_at(deadline, watcher.changed()).await {
            Ok(next) => state = next,
            Err(_) => break,
        }
    }
    (state, Instant::now())
}

/// A loopback address nothing listens on: proxies pointed at it refuse every new connection,
/// so a client behind them cannot reattach its session.
fn dead_upstream() -> SocketAddr {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
    let addr = listener.local_addr().expect("local_addr");
    drop(listener);
    addr
}

// ---------------------------------------------------------------------------------------------
// a. A request made while disconnected.
// ---------------------------------------------------------------------------------------------

/// Cuts the client off (blackhole), makes a create while it is disconnected and times the
/// caller out; optionally drops every client handle too (zooid giving up the generation); then
/// heals. Returns whether the node exists 5 s after the heal.
fn queued_create_after_heal(drop_client: bool, path: &str) -> bool {
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    runtime().block_on(async {
        let direct = connect(&zk.connect_string(), Duration::from_secs(10)).await;
        let client = connect(&proxy.connect_string(), Duration::from_secs(4)).await;
        assert_eq!(client.session_timeout(), Duration::from_secs(4));
        let mut watcher = client.state_watcher();

        proxy.blackhole();
        let (state, _) = wait_state(&mut watcher, Duration::from_secs(4), |s| {
            s == SessionState::Disconnected
        })
        .await;
        // Guard: the fault happened, and the client knows it is disconnected.
        assert_eq!(
            state,
            SessionState::Disconnected,
            "the client never noticed"
        );
        assert_eq!(proxy.stats().blackholes, 1);

        let create = client.create(path, b"queued", &persistent());
        let caller = tokio::time::timeout(Duration::from_millis(300), create).await;
        assert!(caller.is_err(), "the caller timed out: {caller:?}");
        // The caller's future is gone (dropped by `timeout`); zooid may drop the client too.
        let kept = (!drop_client).then_some(client);
        assert!(
            !exists(&direct, path).await,
            "nothing reached the server while blackholed"
        );

        proxy.heal();
        if kept.is_some() {
            let (state, _) = wait_state(&mut watcher, Duration::from_secs(5), |s| {
                s == SessionState::SyncConnected
            })
            .await;
            assert_eq!(
                state,
                SessionState::SyncConnected,
                "the session reconnected"
            );
        }
        let seen = wait_exists(&direct, path, true, Duration::from_secs(5)).await;
        eprintln!(
            "a: drop_client={drop_client}: node {path} exists after the heal: {seen}; proxy {:?}",
            proxy.stats()
        );
        seen
    })
}

/// A create made while disconnected, whose caller timed out (dropped the future), is never
/// sent: the vendored crate drops a request whose caller gave up when it takes it from its
/// queue (vendor/zookeeper-client, `zooid patch`; before it, the create applied after the
/// heal, docs/DESIGN.md, "When a write's fate is decided" fact A).
#[test]
fn a_request_queued_while_disconnected_is_not_sent_after_the_caller_gave_up() {
    let _serial = serial();
    zooid_test_support::init_tracing();
    assert!(
        !queued_create_after_heal(false, "/fate-a-safe"),
        "a create whose caller timed out while disconnected applied after reconnection"
    );
}

/// The same with every client handle dropped too (zooid giving up the generation): the crate
/// closes the session on reconnection without sending the abandoned create first.
#[test]
fn a_request_queued_while_disconnected_is_not_sent_after_the_client_is_dropped() {
    let _serial = serial();
    zooid_test_support::init_tracing();
    assert!(
        !queued_create_after_heal(true, "/fate-a-dropped"),
        "a create whose caller timed out while disconnected applied after reconnection"
    );
}

/// Calling a request method sends the request at once: a future kept but never polled still
/// applies (so a caller that stops waiting cannot withdraw a request already taken from the
/// crate's queue: that one is in flight, its fate in doubt).
#[test]
fn a_request_is_sent_when_the_method_is_called_not_when_polled() {
    let _serial = serial();
    zooid_test_support::init_tracing();
    let zk = ZkServer::start();
    runtime().block_on(async {
        let client = connect(&zk.connect_string(), Duration::from_secs(4)).await;
        let path = "/fate-a-unpolled";
        let never_polled = client.create(path, b"never polled", &persistent());
        assert!(
            wait_exists(&client, path, true, Duration::from_secs(3)).await,
            "the never-polled create applied"
        );
        drop(never_polled);
    });
}

// ---------------------------------------------------------------------------------------------
// b. and d. A request in flight when the connection dropped.
// ---------------------------------------------------------------------------------------------

/// How long the proxy holds the in-flight create before delivering it.
const HOLD: Duration = Duration::from_millis(2500);

/// A client whose create is held in the network: the ensemble (minimum session timeout 4 s),
/// a proxy in front of server 0, the client (requesting 1 s) connected through it alone, and a
/// direct client on server 1.
struct InFlight {
    zk: ZkEnsemble,
    proxy: FaultProxy,
}

impl InFlight {
    fn start() -> InFlight {
        let zk = ZkEnsemble::start_with(3, &[("minSessionTimeout", "4000")]);
        let proxy = FaultProxy::start(zk.server_addr(0));
        InFlight { zk, proxy }
    }

    /// Makes the create of `path` on `client`, which the proxy holds for [`HOLD`]: the caller
    /// sees ConnectionLoss at once; the client cannot reattach (new connections through the
    /// proxy are refused). Returns when the caller saw the loss.
    async fn create_in_flight(&self, client: &Client, path: &str) -> Instant {
        // The crate sends create2 (or create with TTL), not create: match the path's bytes.
        self.proxy
            .hold_request(RequestMatch::Contains(path.as_bytes().to_vec()), HOLD);
        // Only new connections go to the dead address; the held one stays on server 0.
        self.proxy.set_upstream(dead_upstream());
        let outcome = client.create(path, b"in flight", &persistent()).await;
        let lost_at = Instant::now();
        // Guard: the fault happened.
        assert_eq!(self.proxy.stats().held_requests, 1, "the create was held");
        assert!(
            matches!(outcome, Err(Error::ConnectionLoss)),
            "the caller saw ConnectionLoss: {outcome:?}"
        );
        lost_at
    }
}

/// A create whose caller saw ConnectionLoss applies 2.5 s later, after a read on another
/// session, made once the *requested* session timeout (1 s) had passed, found it absent: the
/// servers negotiated 4 s and the session was still alive when the request arrived.
#[test]
fn b_request_in_flight_at_connection_loss_can_apply_after_a_later_read_found_it_absent() {
    let _serial = serial();
    zooid_test_support::init_tracing();
    let rig = InFlight::start();
    runtime().block_on(async {
        let requested = Duration::from_secs(1);
        let client = connect(&rig.proxy.connect_string(), requested).await;
        assert_eq!(client.session_timeout(), Duration::from_secs(4), "negotiated");
        let other = connect(&rig.zk.server_connect_string(1), Duration::from_secs(10)).await;
        let path = "/fate-b";

        let lost_at = rig.create_in_flight(&client, path).await;
        tokio::time::sleep_until((lost_at + requested).into()).await;
        let absent_at = Instant::now();
        assert!(
            !exists(&other, path).await,
            "absent one requested timeout after the loss"
        );

        let deliveries = rig.proxy.wait_deliveries(1, HOLD * 3).await;
        let [Delivery {
            written: true,
            reply_err,
            delivered_at,
            ..
        }] = deliveries[..]
        else {
            panic!("one held create delivered: {deliveries:?}");
        };
        eprintln!(
            "b: absent {:?} after the loss, held create delivered {:?} after the loss, reply {reply_err:?}",
            absent_at - lost_at,
            delivered_at - lost_at
        );
        assert_eq!(reply_err, Some(0), "the servers applied the late create");
        assert!(delivered_at > absent_at);
        assert!(exists(&other, path).await, "the late create applied");
    });
}

/// Reattach-and-close (`zooid::zk::confirm_dead`) through server `via` before the held create
/// arrives on the old connection to server 0: the servers refuse it and it never applies.
/// Returns the delivery.
fn reattach_and_close_then_delivery(via: usize) -> Delivery {
    let rig = InFlight::start();
    runtime().block_on(async {
        let client = connect(&rig.proxy.connect_string(), Duration::from_secs(1)).await;
        let negotiated = client.session_timeout();
        let session = client.session().clone();
        let other = connect(&rig.zk.server_connect_string(1), Duration::from_secs(10)).await;
        let path = "/fate-d";

        let lost_at = rig.create_in_flight(&client, path).await;
        let confirming = Instant::now();
        let confirmed = confirm_dead(
            &connector(negotiated),
            &rig.zk.server_connect_string(via),
            &session,
            Duration::from_secs(10),
        )
        .await
        .expect("confirmed");
        let confirmed_at = Instant::now();
        eprintln!(
            "d via server {via}: confirm_dead: {confirmed:?} in {:?}",
            confirmed_at - confirming
        );
        assert_eq!(confirmed, Confirmed::Closed, "the live session was closed");
        assert!(
            confirmed_at < lost_at + HOLD,
            "confirmed before the delivery"
        );

        let deliveries = rig.proxy.wait_deliveries(1, HOLD * 3).await;
        let [delivery] = &deliveries[..] else {
            panic!("one held create delivered: {deliveries:?}");
        };
        eprintln!(
            "d via server {via}: held create delivered {:?} after the loss: {delivery:?}",
            delivery.delivered_at - lost_at
        );
        assert!(
            delivery.delivered_at > confirmed_at,
            "delivered after the close"
        );
        assert_ne!(
            delivery.reply_err,
            Some(0),
            "the servers refused the late create"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!exists(&other, path).await, "the late create never applied");
        assert!(!exists(&direct_on_server_0(&rig).await, path).await);
        delivery.clone()
    })
}

/// A fresh direct client on server 0 (the old connection's server).
async fn direct_on_server_0(rig: &InFlight) -> Client {
    connect(&rig.zk.server_connect_string(0), Duration::from_secs(10)).await
}

/// Reattach-and-close through another server than the old connection's.
#[test]
fn d_after_reattach_and_close_elsewhere_a_delayed_request_is_refused() {
    let _serial = serial();
    zooid_test_support::init_tracing();
    let delivery = reattach_and_close_then_delivery(1);
    // What server 0 does today: it closes the old connection when the close commits.
    assert!(delivery.closed_by_server, "{delivery:?}");
}

/// Reattach-and-close through the old connection's own server.
#[test]
fn d_after_reattach_and_close_on_the_same_server_a_delayed_request_is_refused() {
    let _serial = serial();
    zooid_test_support::init_tracing();
    let delivery = reattach_and_close_then_delivery(0);
    assert!(delivery.closed_by_server, "{delivery:?}");
}

/// How long `confirm_dead` takes on an ensemble: reattach-and-close of live sessions (each
/// through another server than its own), then on a session already closed (the servers refuse
/// the reattach).
#[test]
fn d_confirm_dead_timings() {
    let _serial = serial();
    zooid_test_support::init_tracing();
    let zk = ZkEnsemble::start(3);
    runtime().block_on(async {
        let timeout = Duration::from_secs(2);
        let mut closes = Vec::new();
        let mut last = None;
        for i in 0..5 {
            let client = connect(&zk.server_connect_string(i % 3), timeout).await;
            client
                .create(&format!("/fate-d-eph-{i}"), b"", &ephemeral())
                .await
                .expect("create ephemeral");
            let session = client.session().clone();
            let started = Instant::now();
            let confirmed = confirm_dead(
                &connector(timeout),
                &zk.server_connect_string((i + 1) % 3),
                &session,
                Duration::from_secs(10),
            )
            .await
            .expect("confirmed");
            closes.push(started.elapsed());
            assert_eq!(confirmed, Confirmed::Closed);
            // The session is gone: its own client hears so, its ephemeral node is deleted.
            let mut watcher = client.state_watcher();
            let (state, _) =
                wait_state(&mut watcher, Duration::from_secs(5), |s| s.is_terminated()).await;
            assert_eq!(
                state,
                SessionState::Expired,
                "the old client learns the end"
            );
            let checker = connect(&zk.server_connect_string(i % 3), timeout).await;
            assert!(!exists(&checker, &format!("/fate-d-eph-{i}")).await);
            last = Some(session);
        }
        let session = last.expect("a session");
        let started = Instant::now();
        let confirmed = confirm_dead(
            &connector(timeout),
            &zk.connect_string(),
            &session,
            Duration::from_secs(10),
        )
        .await
        .expect("confirmed");
        let refused = started.elapsed();
        assert_eq!(confirmed, Confirmed::Expired, "a closed session is refused");
        eprintln!("d timings: reattach-and-close {closes:?}; refused reattach {refused:?}");
    });
}

// ---------------------------------------------------------------------------------------------
// c. Requested and negotiated session timeouts.
// ---------------------------------------------------------------------------------------------

/// With tickTime 1000 and the default bounds (2 to 20 ticks), a 500 ms request gets 2 s and a
/// 60 s request 20 s; the crate's `Client::session_timeout` reports the negotiated value.
#[test]
fn c_session_timeout_below_the_servers_minimum_is_negotiated_up() {
    let _serial = serial();
    zooid_test_support::init_tracing();
    let zk = ZkServer::start_with(&[
        ("tickTime", "1000"),
        ("minSessionTimeout", "-1"),
        ("maxSessionTimeout", "-1"),
    ]);
    runtime().block_on(async {
        for (requested, negotiated) in [
            (Duration::from_millis(500), Duration::from_secs(2)),
            (Duration::from_secs(5), Duration::from_secs(5)),
            (Duration::from_secs(60), Duration::from_secs(20)),
        ] {
            let client = connect(&zk.connect_string(), requested).await;
            eprintln!(
                "c: requested {requested:?}, crate reports {:?}",
                client.session_timeout()
            );
            assert_eq!(client.session_timeout(), negotiated, "for {requested:?}");
        }
    });
}

/// zooid's session layer times from the negotiated value: a 500 ms request on a 1 s tick gets
/// 2 s, and `Session::request_limit` (how long one request may go unanswered) follows it.
#[test]
fn c_zooid_session_times_from_the_negotiated_timeout() {
    let _serial = serial();
    zooid_test_support::init_tracing();
    let zk = ZkServer::start_with(&[
        ("tickTime", "1000"),
        ("minSessionTimeout", "-1"),
        ("maxSessionTimeout", "-1"),
    ]);
    runtime().block_on(async {
        let options = zooid::ConnectOptions {
            session_timeout: Duration::from_millis(500),
            ..Default::default()
        };
        let session = zooid::Session::connect(&zk.connect_string(), &options)
            .await
            .expect("connect");
        let status = session.status();
        eprintln!(
            "c: zooid session: status {status:?}, request limit {:?}",
            session.request_limit()
        );
        // Guard: the server negotiated up.
        assert_eq!(status.timeout, Duration::from_secs(2), "negotiated");
        assert_eq!(status.requested, Duration::from_millis(500), "requested");
        assert_eq!(
            session.request_limit(),
            Duration::from_secs(2),
            "request limit"
        );
    });
}

// ---------------------------------------------------------------------------------------------
// e. The crate's own Expired.
// ---------------------------------------------------------------------------------------------

/// The proxy holds every reply (the servers hear the client, the client hears nothing): the
/// crate reports Expired after 7/5 of the negotiated timeout on its own timer, while its
/// reconnection attempts keep the session alive on the servers; its ephemeral node is still
/// there when the crate reports Expired.
#[test]
fn e_crate_reports_expired_while_the_servers_hold_the_session() {
    let _serial = serial();
    zooid_test_support::init_tracing();
    let zk = ZkEnsemble::start(3);
    let proxy = FaultProxy::start(zk.server_addr(0));
    runtime().block_on(async {
        let client = connect(&proxy.connect_string(), Duration::from_secs(2)).await;
        let negotiated = client.session_timeout();
        assert_eq!(negotiated, Duration::from_secs(2));
        let other = connect(&zk.server_connect_string(1), Duration::from_secs(10)).await;
        let path = "/fate-e-eph";
        client
            .create(path, b"", &ephemeral())
            .await
            .expect("create ephemeral");
        let mut watcher = client.state_watcher();

        let muted_at = Instant::now();
        proxy.mute_replies();
        let (state, expired_at) = wait_state(&mut watcher, negotiated * 4, |s| {
            s.is_terminated()
        })
        .await;
        let still_there = exists(&other, path).await;
        let accepted = proxy.stats().accepted;
        eprintln!(
            "e: crate state {state} {:?} after the mute; ephemeral still there: {still_there}; connections through the proxy: {accepted}",
            expired_at - muted_at
        );
        // Guard: the client tried to reattach (each attempt reached a server).
        assert!(accepted > 1, "the client reconnected through the proxy");
        assert_eq!(state, SessionState::Expired, "the crate reported Expired");
        assert!(
            still_there,
            "the servers still hold the session the crate reported expired"
        );
        let gone = !wait_exists(&other, path, false, negotiated * 3).await;
        assert!(gone, "the servers expire it later");
        eprintln!(
            "e: the servers deleted the ephemeral {:?} after the crate reported Expired",
            Instant::now() - expired_at
        );
    });
}

// ---------------------------------------------------------------------------------------------
// f. A zooid write held past zooid's give-up while the servers still hold its session.
// ---------------------------------------------------------------------------------------------

/// The session timeout of the f tests (the ensemble's minimum: negotiated as requested).
pub(crate) const F_TIMEOUT: Duration = Duration::from_secs(4);
/// How long the proxy holds the write (zooid gives the generation up after [`F_TIMEOUT`]).
const F_HOLD: Duration = Duration::from_secs(8);
/// How long after the hold reattach attempts stay refused (the crate's own reattach gives up
/// after 7/5 of the session timeout, 5.6 s).
const F_REFUSE_FOR: Duration = Duration::from_secs(6);

/// A 3-server ensemble, a proxy in front of server 0, a zooid session through the proxy
/// (timeout [`F_TIMEOUT`]) and a direct client on server 1.
struct GaveUp {
    _zk: ZkEnsemble,
    proxy: FaultProxy,
    session: zooid::Session,
    direct: Client,
}

impl GaveUp {
    async fn start(zk: ZkEnsemble) -> GaveUp {
        let proxy = FaultProxy::start(zk.server_addr(0));
        let options = zooid::ConnectOptions {
            session_timeout: F_TIMEOUT,
            ..Default::default()
        };
        let session = zooid::Session::connect(&proxy.connect_string(), &options)
            .await
            .expect("zooid session");
        assert_eq!(session.status().timeout, F_TIMEOUT, "negotiated");
        let direct = connect(&zk.server_connect_string(1), Duration::from_secs(10)).await;
        GaveUp {
            _zk: zk,
            proxy,
            session,
            direct,
        }
    }

    /// Runs `write` (one zooid operation) while the proxy holds its request matching `m` for
    /// [`F_HOLD`], keeps the old session alive on server 0 meanwhile (pings on the held
    /// connection) and refuses reattach attempts for [`F_REFUSE_FOR`]: zooid gives the
    /// generation up after [`F_TIMEOUT`] and opens a new one while the servers still hold the
    /// old session. Returns the write's result once it and the delivery are done.
    async fn held_past_give_up<T>(
        &self,
        m: RequestMatch,
        write: impl std::future::Future<Output = T>,
    ) -> (T, Duration, Delivery, ProxyStats) {
        let proxy = &self.proxy;
        let write = async {
            let result = write.await;
            (result, Instant::now())
        };
        proxy.refuse_reattach(true);
        proxy.hold_request_keeping_session(m, F_HOLD, Duration::from_millis(500));
        let opener = async {
            let started = Instant::now();
            while proxy.stats().held_requests == 0 {
                assert!(started.elapsed() < Duration::from_secs(20), "nothing held");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let held_at = Instant::now();
            tokio::time::sleep_until((held_at + F_REFUSE_FOR).into()).await;
            proxy.refuse_reattach(false);
        };
        let ((result, done_at), ()) = tokio::join!(write, opener);
        let deliveries = proxy.wait_deliveries(1, F_HOLD * 3).await;
        let [delivery] = &deliveries[..] else {
            panic!("one held request delivered: {deliveries:?}");
        };
        let delivery = delivery.clone();
        let stats = proxy.stats();
        // Guards: the write was held and its delivery attempted (written, or its connection
        // already closed by the servers); zooid gave the generation up; the old client's
        // reattach attempts were refused (so the servers never moved the session).
        assert_eq!(stats.held_requests, 1);
        assert!(stats.refused_reattaches > 0, "{stats:?}");
        assert!(
            self.session.status().generation >= 2,
            "zooid gave up generation 1"
        );
        let done = done_at.saturating_duration_since(delivery.held_at);
        (result, done, delivery, stats)
    }

    /// The data of every child of `parent`, read on server 1 after a sync.
    async fn children_data(&self, parent: &str) -> Vec<Vec<u8>> {
        self.direct.sync(parent).await.expect("sync");
        let mut out = Vec::new();
        for child in self.direct.list_children(parent).await.expect("list") {
            let (data, _) = self
                .direct
                .get_data(&format!("{parent}/{child}"))
                .await
                .expect("get_data");
            out.push(data);
        }
        out
    }
}

/// A queue put whose request (`multi[setData(guard), create(item)]`) is held past zooid's
/// give-up of its session and delivered while the servers still hold that session: the put is
/// in the queue once, never twice. Before issue 18 the put's resolution read "absent" on the
/// new session and put again, and the held copy applied too (its guard, an ephemeral node of
/// the old session, was still at the version it expected).
#[test]
fn f_a_held_queue_put_delivered_after_the_give_up_is_not_applied_twice() {
    let _serial = serial();
    zooid_test_support::init_tracing();
    let zk = ZkEnsemble::start_with(3, &[("minSessionTimeout", "4000")]);
    runtime().block_on(async {
        let rig = GaveUp::start(zk).await;
        let queue = zooid::WorkQueue::open(rig.session.clone().into_zk(), "/fate-f-q", Default::default())
            .expect("queue");
        queue.put(b"before").await.expect("first put");
        let (put, done, delivery, stats) = rig
            .held_past_give_up(
                RequestMatch::Contains(b"/fate-f-q/items/i-".to_vec()),
                queue.put(b"held"),
            )
            .await;
        let items = rig.children_data("/fate-f-q/items").await;
        let held = items.iter().filter(|d| d.as_slice() == b"held").count();
        eprintln!(
            "f put: result {put:?} {done:?} after the hold; delivery {:?} after the hold: written {}, reply {:?}, closed by the server {}; items with the put's data: {held}; proxy {stats:?}; session {:?}",
            delivery.delivered_at - delivery.held_at,
            delivery.written,
            delivery.reply_err,
            delivery.closed_by_server,
            rig.session.status()
        );
        assert!(put.is_ok(), "the put succeeded: {put:?}");
        assert_eq!(held, 1, "the put is in the queue exactly once");
    });
}

/// A request matcher: the next `create` (opcodes 1 and 15), `setData` (5) or `multi` (14) whose
/// frame names `path` (a take's or a push's write, never its reads).
pub(crate) fn write_naming(path: &str) -> RequestMatch {
    let needle = path.as_bytes().to_vec();
    RequestMatch::Custom(zooid_test_support::proxy::MatchFn::new(
        move |opcode, frame| {
            matches!(opcode, 1 | 5 | 14 | 15) && frame.windows(needle.len()).any(|w| w == needle)
        },
    ))
}

/// Takes IDs of `category` until it is exhausted; returns every ID taken.
pub(crate) async fn drain(
    service: &zooid::IdGeneratorService,
    category: &zooid::IdCategory,
) -> Vec<i64> {
    let mut ids = Vec::new();
    loop {
        match service.take_ids(category, 50).await {
            Ok(set) => ids.extend(set.ranges().iter().flat_map(|r| r.start()..=r.end())),
            Err(zooid::ZooidError::Exhausted { .. }) => return ids,
            Err(err) => panic!("draining {}: {err}", category.name()),
        }
    }
}

/// Panics when an ID occurs twice in `ids`.
pub(crate) fn assert_unique(what: &str, ids: &[i64]) {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    let twice: Vec<i64> = sorted
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| w[0])
        .collect();
    assert!(twice.is_empty(), "{what}: IDs handed out twice: {twice:?}");
}

/// A take (default category: a compare-and-set of the pool node) whose write is held past
/// zooid's give-up and delivered while the servers still hold the old session: no ID is handed
/// out twice (the late copy expects a version the pool has left).
#[test]
fn f_a_held_take_delivered_after_the_give_up_hands_out_no_id_twice() {
    let _serial = serial();
    zooid_test_support::init_tracing();
    let zk = ZkEnsemble::start_with(3, &[("minSessionTimeout", "4000")]);
    runtime().block_on(async {
        let rig = GaveUp::start(zk).await;
        let service = zooid::IdGeneratorService::on_zookeeper(rig.session.clone().into_zk(), Default::default());
        let category = zooid::IdCategory::new("/fate-f-take").expect("category");
        service.create_category(&category, &CategorySpec::new(1, 300).single_node()).await.expect("create");
        let mut ids: Vec<i64> = Vec::new();
        let first = service.take_ids(&category, 10).await.expect("first take");
        ids.extend(first.ranges().iter().flat_map(|r| r.start()..=r.end()));
        let (take, done, delivery, stats) = rig
            .held_past_give_up(write_naming("/fate-f-take"), service.take_ids(&category, 10))
            .await;
        eprintln!(
            "f take: result {take:?} {done:?} after the hold; delivery {:?} after the hold: written {}, reply {:?}; proxy {stats:?}",
            delivery.delivered_at - delivery.held_at,
            delivery.written,
            delivery.reply_err,
        );
        if let Ok(set) = &take {
            ids.extend(set.ranges().iter().flat_map(|r| r.start()..=r.end()));
        }
        ids.extend(drain(&service, &category).await);
        assert_unique("take", &ids);
        assert!(take.is_ok(), "the take succeeded: {take:?}");
    });
}

/// A push of two ranges to a block-allocated category (a `multi` creating a hole node for each)
/// held past zooid's give-up and delivered while the servers still hold the old session: the
/// pushed IDs are handed out at most once afterwards.
#[test]
fn f_a_held_push_delivered_after_the_give_up_hands_out_no_id_twice() {
    let _serial = serial();
    zooid_test_support::init_tracing();
    let zk = ZkEnsemble::start_with(3, &[("minSessionTimeout", "4000")]);
    runtime().block_on(async {
        let rig = GaveUp::start(zk).await;
        let service = zooid::IdGeneratorService::on_zookeeper(rig.session.clone().into_zk(), Default::default());
        let category = zooid::IdCategory::new("/fate-f-push").expect("category");
        service
            .create_category(&category, &CategorySpec::new(1, 300).blocks(10))
            .await
            .expect("create");
        let first = service.take_ids(&category, 10).await.expect("take");
        let _between = service.take_ids(&category, 10).await.expect("take");
        let second = service.take_ids(&category, 10).await.expect("take");
        let mut ranges = first.ranges();
        ranges.extend(second.ranges());
        assert_eq!(ranges.len(), 2, "guard: two blocks apart: {ranges:?}");
        let mut taken = zooid::IdSet::new(category.clone(), ranges);
        let (push, done, delivery, stats) = rig
            .held_past_give_up(
                write_naming("/fate-f-push/zooid-holes/h-"),
                service.push_ids(&mut taken),
            )
            .await;
        eprintln!(
            "f push: result {push:?} {done:?} after the hold; delivery {:?} after the hold: written {}, reply {:?}; proxy {stats:?}",
            delivery.delivered_at - delivery.held_at,
            delivery.written,
            delivery.reply_err,
        );
        let ids = drain(&service, &category).await;
        assert_unique("push", &ids);
        match &push {
            Ok(()) => {}
            Err(err) => assert_eq!(
                err.kind(),
                zooid::ErrorKind::OutcomeUnknown,
                "a push whose fate is unknown says so: {err}"
            ),
        }
    });
}

/// A take from a block-allocated category whose block claim (a `multi` of sequential creates)
/// is held past zooid's give-up and delivered while the servers still hold the old session: no
/// ID is handed out twice.
#[test]
fn f_a_held_block_claim_delivered_after_the_give_up_hands_out_no_id_twice() {
    let _serial = serial();
    zooid_test_support::init_tracing();
    let zk = ZkEnsemble::start_with(3, &[("minSessionTimeout", "4000")]);
    runtime().block_on(async {
        let rig = GaveUp::start(zk).await;
        let service = zooid::IdGeneratorService::on_zookeeper(rig.session.clone().into_zk(), Default::default());
        let category = zooid::IdCategory::new("/fate-f-claim").expect("category");
        service
            .create_category(&category, &CategorySpec::new(1, 300).blocks(10))
            .await
            .expect("create");
        let (take, done, delivery, stats) = rig
            .held_past_give_up(
                write_naming("/fate-f-claim/zooid-blocks-"),
                service.take_ids(&category, 10),
            )
            .await;
        eprintln!(
            "f claim: result {take:?} {done:?} after the hold; delivery {:?} after the hold: written {}, reply {:?}; proxy {stats:?}",
            delivery.delivered_at - delivery.held_at,
            delivery.written,
            delivery.reply_err,
        );
        let mut ids: Vec<i64> = Vec::new();
        if let Ok(set) = &take {
            ids.extend(set.ranges().iter().flat_map(|r| r.start()..=r.end()));
        }
        ids.extend(drain(&service, &category).await);
        assert_unique("block claim", &ids);
        match &take {
            Ok(_) => {}
            Err(err) => assert_eq!(err.kind(), zooid::ErrorKind::OutcomeUnknown, "{err}"),
        }
    });
}

/// Format 4 (hole nodes, the default on ZooKeeper): a take's claim of holes (a `multi` that
/// deletes hole nodes and creates its receipt) held past zooid's give-up and delivered while the
/// servers still hold the old session: no ID is handed out twice, and the take says what became
/// of its IDs.
#[test]
fn f_a_held_hole_claim_delivered_after_the_give_up_hands_out_no_id_twice() {
    let _serial = serial();
    zooid_test_support::init_tracing();
    let zk = ZkEnsemble::start_with(3, &[("minSessionTimeout", "4000")]);
    runtime().block_on(async {
        let rig = GaveUp::start(zk).await;
        let service = zooid::IdGeneratorService::on_zookeeper(rig.session.clone().into_zk(), Default::default());
        let category = zooid::IdCategory::new("/fate-f-hole").expect("category");
        service
            .create_category(&category, &CategorySpec::new(1, 300).blocks(10))
            .await
            .expect("create");
        let mut first = service.take_ids(&category, 10).await.expect("take");
        service.push_ids(&mut first).await.expect("push: a hole node");
        let (take, done, delivery, stats) = rig
            .held_past_give_up(
                write_naming("/fate-f-hole/zooid-holes/h-"),
                service.take_ids(&category, 10),
            )
            .await;
        eprintln!(
            "f hole claim: result {take:?} {done:?} after the hold; delivery {:?} after the hold: written {}, reply {:?}; proxy {stats:?}",
            delivery.delivered_at - delivery.held_at,
            delivery.written,
            delivery.reply_err,
        );
        let mut ids: Vec<i64> = Vec::new();
        match &take {
            Ok(set) => ids.extend(set.ranges().iter().flat_map(|r| r.start()..=r.end())),
            Err(err) => assert_eq!(
                err.kind(),
                zooid::ErrorKind::OutcomeUnknown,
                "a take whose fate is unknown says so: {err}"
            ),
        }
        ids.extend(drain(&service, &category).await);
        assert_unique("hole claim", &ids);
        assert!(
            ids.len() <= 300,
            "no more IDs than the category holds: {}",
            ids.len()
        );
    });
}

/// Format 4: a push of one range (a `create` of its hole node) held past zooid's give-up
/// and delivered while the servers still hold the old session: the pushed IDs are handed out
/// at most once afterwards.
#[test]
fn f_a_held_hole_push_delivered_after_the_give_up_hands_out_no_id_twice() {
    let _serial = serial();
    zooid_test_support::init_tracing();
    let zk = ZkEnsemble::start_with(3, &[("minSessionTimeout", "4000")]);
    runtime().block_on(async {
        let rig = GaveUp::start(zk).await;
        let service = zooid::IdGeneratorService::on_zookeeper(rig.session.clone().into_zk(), Default::default());
        let category = zooid::IdCategory::new("/fate-f-hpush").expect("category");
        service
            .create_category(&category, &CategorySpec::new(1, 300).blocks(10))
            .await
            .expect("create");
        let mut taken = service.take_ids(&category, 10).await.expect("take");
        let (push, done, delivery, stats) = rig
            .held_past_give_up(
                write_naming("/fate-f-hpush/zooid-holes/h-"),
                service.push_ids(&mut taken),
            )
            .await;
        eprintln!(
            "f hole push: result {push:?} {done:?} after the hold; delivery {:?} after the hold: written {}, reply {:?}; proxy {stats:?}",
            delivery.delivered_at - delivery.held_at,
            delivery.written,
            delivery.reply_err,
        );
        let ids = drain(&service, &category).await;
        assert_unique("hole push", &ids);
        match &push {
            Ok(()) => {}
            Err(err) => assert_eq!(
                err.kind(),
                zooid::ErrorKind::OutcomeUnknown,
                "a push whose fate is unknown says so: {err}"
            ),
        }
    });
}
