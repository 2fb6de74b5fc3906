//! A ZooKeeper leader change while zooid resolves a write whose reply was lost (issue 18): the
//! new leader restarts every session's expiry, so the servers hold the given-up session longer
//! than any client-side timer would assume. zooid's resolution waits for the servers' word
//! (`Session::confirm_gone`), never for a time (docs/GUARANTEES.md, "When a write's fate is
//! decided"). Shares the helpers and the one-test-at-a-time lock of `session_fate`.

use std::sync::Arc;
use std::time::{Duration, Instant};
use zooid::zk::{Create, ZooKeeper};
use zooid::CategorySpec;

use zooid_test_support::{runtime, FaultProxy, RequestMatch, ZkEnsemble};
use zookeeper_client::Client;

use crate::session_fate::{assert_unique, connect, drain, serial, write_naming, F_TIMEOUT};

/// When the faults of a g test happen, counted from the hold.
#[derive(Clone, Copy, Debug)]
struct Timing {
    /// When the ensemble's leader is killed (`None`: no leader change).
    kill_at: Option<Duration>,
    /// When a timer-based resolution would read "on a later session, the old one has certainly
    /// expired"; the old session's ephemeral node is read then.
    timer_at: Duration,
    /// How long reattach attempts (the old client's and zooid's confirmation) stay refused.
    refuse_for: Duration,
    /// How long the proxy holds the write's request.
    hold: Duration,
    /// Whether the proxy pings the server on the held connection (every 500 ms) until the
    /// server closes it: the servers keep the old session until the leader change.
    keep_alive: bool,
    /// Whether only the old session's reattach attempts are refused (the new generation
    /// reconnects through the proxy after the leader change), rather than every reattach.
    refuse_only_old: bool,
}

/// The leader killed 1 s after the hold; the timer's moment is the requested (= negotiated)
/// timeout after the loss plus two ticks of the servers' rounding of expiry (tick 250 ms).
const G_EARLY: Timing = Timing {
    kill_at: Some(Duration::from_secs(1)),
    timer_at: Duration::from_millis(4_500),
    refuse_for: Duration::from_secs(6),
    hold: Duration::from_secs(8),
    keep_alive: false,
    refuse_only_old: false,
};

/// [`G_EARLY`] without the leader change.
const G_NO_CHANGE: Timing = Timing {
    kill_at: None,
    ..G_EARLY
};

/// The leader killed 5 s after the hold (after zooid gave generation 1 up at 4 s), the old
/// session kept alive until then by pings on the held connection, only its reattach refused
/// (generation 2 reconnects after the election); the timer's
/// moment is where the claim resolution before issue 18 read: the requested timeout after the
/// give-up (8 s), plus two ticks.
const G_LATE: Timing = Timing {
    kill_at: Some(Duration::from_secs(5)),
    timer_at: Duration::from_millis(8_500),
    refuse_for: Duration::from_secs(10),
    hold: Duration::from_secs(12),
    keep_alive: true,
    refuse_only_old: true,
};

/// Whether `path` exists, read after a `sync` on `client`; retried every 100 ms while the
/// ensemble cannot answer (an election), for at most 10 s. Returns the answer and when it was
/// read.
async fn exists_now(client: &Client, path: &str) -> (bool, Instant) {
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        let read = async {
            client.sync("/").await?;
            client.check_stat(path).await
        };
        match tokio::time::timeout(Duration::from_secs(2), read).await {
            Ok(Ok(stat)) => return (stat.is_some(), Instant::now()),
            other => assert!(
                Instant::now() < give_up,
                "no answer about {path} for 10 s: {other:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The data of every child of `parent`, read after a sync, retried like [`exists_now`].
async fn children_data(client: &Client, parent: &str) -> Vec<Vec<u8>> {
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        let read = async {
            client.sync(parent).await?;
            let mut out = Vec::new();
            for child in client.list_children(parent).await? {
                let (data, _) = client.get_data(&format!("{parent}/{child}")).await?;
                out.push(data);
            }
            Ok::<_, zookeeper_client::Error>(out)
        };
        match tokio::time::timeout(Duration::from_secs(2), read).await {
            Ok(Ok(data)) => return data,
            other => assert!(Instant::now() < give_up, "cannot list {parent}: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A queue put whose request the proxy holds (its connection to a follower closed on the client
/// side at once, the old client's reattach refused), while the ensemble's leader is killed and
/// a new one elected: the new leader restarts the old session's expiry. At the moment a
/// timer-based resolution would have read (the timeout after the loss, plus two ticks), the
/// old session's ephemeral node still exists, so the servers still held the session and a
/// request of it could still apply (the control below: without the leader change it is gone by
/// then). zooid's put resolves only after the servers confirmed the session's end (it finishes
/// after reattaching became possible, and `confirm_gone` says how), and the put is in the
/// queue once.
#[test]
fn g_a_leader_change_while_a_put_resolves_extends_the_old_session_and_zooid_waits_for_the_servers()
{
    let run = held_write(G_EARLY, Write::Put);
    assert!(
        run.held_by_servers,
        "the servers held the old session {:?} after the loss (a timer's moment)",
        run.read_after
    );
}

/// The control of the test above, without the leader change: at the same moment the servers
/// have already expired the old session (its ephemeral node is gone), so what kept it alive
/// there was the leader change. The put is resolved once as well.
#[test]
fn g_control_without_a_leader_change_the_old_session_is_gone_at_the_timers_moment() {
    let run = held_write(G_NO_CHANGE, Write::Put);
    assert!(
        !run.held_by_servers,
        "without a leader change the servers expired the old session {:?} after the loss",
        run.read_after
    );
}

/// A block claim (a take from a block-allocated category: a `multi` of sequential creates)
/// held while the leader changes, as the put above: no ID is handed out twice, the claim
/// resolves only after the servers could confirm, and it succeeds or says `OutcomeUnknown`.
#[test]
fn g_a_leader_change_while_a_block_claim_resolves_hands_out_no_id_twice() {
    let run = held_write(G_EARLY, Write::BlockClaim);
    assert!(
        run.held_by_servers,
        "the servers held the old session {:?} after the loss (a timer's moment)",
        run.read_after
    );
}

/// A block claim held while the leader changes *after* zooid gave its session up (at 5 s, the
/// give-up at 4 s): the new leader restarts the old session's expiry, so the servers still hold
/// it where the claim resolution before issue 18 read (it slept the requested timeout after the
/// give-up, then listed on the new session: 8 s). zooid waits for the servers instead. Before
/// (claims.rs of 90c3df5) this test failed: the claim resolved at 8.0 s, while the session was
/// alive, before the servers could answer.
#[test]
fn g_a_leader_change_after_the_give_up_outlives_the_old_timer_and_zooid_waits_for_the_servers() {
    let run = held_write(G_LATE, Write::BlockClaim);
    assert!(
        run.held_by_servers,
        "the servers held the old session {:?} after the loss (the old resolution's moment)",
        run.read_after
    );
}

/// The write [`held_write`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Write {
    /// A queue put (`multi[setData(guard), create(item)]`).
    Put,
    /// A take that claims a block (`multi` of sequential creates).
    BlockClaim,
}

/// What [`held_write`] saw at a timer's moment.
struct HeldPut {
    /// The old session's ephemeral node existed [`Timing::timer_at`] after the loss.
    held_by_servers: bool,
    /// When that was read, after the loss.
    read_after: Duration,
}

/// Holds `what`'s request as described above, kills the leader when `timing` says, and checks what holds either way: guards (held, delivered, generation
/// given up, reattach refused, the leader changed when asked), the write resolved only after
/// the servers could confirm, confirmed; a put in the queue once, a claim's IDs never twice.
fn held_write(timing: Timing, what: Write) -> HeldPut {
    let change_leader = timing.kill_at.is_some();
    let _serial = serial();
    zooid_test_support::init_tracing();
    let zk = Arc::new(ZkEnsemble::start_with(3, &[("minSessionTimeout", "4000")]));
    let leader = zk.wait_for_quorum(Duration::from_secs(30));
    let follower = (leader + 1) % 3;
    let other = (leader + 2) % 3;
    let proxy = FaultProxy::start(zk.server_addr(follower));
    runtime().block_on(async {
        let options = zooid::ConnectOptions {
            session_timeout: F_TIMEOUT,
            ..Default::default()
        };
        let session = zooid::Session::connect(&proxy.connect_string(), &options)
            .await
            .expect("zooid session");
        assert_eq!(session.status().timeout, F_TIMEOUT, "negotiated");
        let direct_connect = format!(
            "{},{}",
            zk.server_connect_string(other),
            zk.server_connect_string(follower)
        );
        let direct = connect(&direct_connect, Duration::from_secs(20)).await;
        // The old session's liveness on the servers, as its ephemeral node tells.
        let marker = "/fate-g-eph";
        let (old_generation, old_session_id) = {
            let status = session.status();
            (status.generation, status.session_id)
        };
        ZooKeeper::create(&session, old_generation, marker, b"", &Create::ephemeral())
            .await
            .expect("ephemeral of generation 1");
        let queue =
            zooid::WorkQueue::open(session.clone().into_zk(), "/fate-g-q", Default::default()).expect("queue");
        let service =
            zooid::IdGeneratorService::on_zookeeper(session.clone().into_zk(), Default::default());
        let category = zooid::IdCategory::new("/fate-g-claim").expect("category");
        let matcher = match what {
            Write::Put => {
                queue.put(b"before").await.expect("first put");
                RequestMatch::Contains(b"/fate-g-q/items/i-".to_vec())
            }
            Write::BlockClaim => {
                service
                    .create_category(&category, &CategorySpec::new(1, 300).blocks(10))
                    .await
                    .expect("create");
                write_naming("/fate-g-claim/zooid-blocks-")
            }
        };

        if timing.refuse_only_old {
            proxy.refuse_reattach_of(old_session_id);
        } else {
            proxy.refuse_reattach(true);
        }
        if timing.keep_alive {
            proxy.hold_request_keeping_session(matcher, timing.hold, Duration::from_millis(500));
        } else {
            proxy.hold_request(matcher, timing.hold);
        }
        // The write's result: the IDs it handed out (none for a put).
        let put = async {
            let result = match what {
                Write::Put => queue.put(b"held").await.map(|_| Vec::new()),
                Write::BlockClaim => service.take_ids(&category, 10).await.map(|set| {
                    set.ranges()
                        .iter()
                        .flat_map(|r| r.start()..=r.end())
                        .collect::<Vec<i64>>()
                }),
            };
            (result, Instant::now())
        };
        let faults = async {
            let started = Instant::now();
            while proxy.stats().held_requests == 0 {
                assert!(started.elapsed() < Duration::from_secs(20), "nothing held");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let held_at = Instant::now();
            let kill_at = timing.kill_at.unwrap_or_default();
            tokio::time::sleep_until((held_at + kill_at).into()).await;
            let ensemble = zk.clone();
            let new_leader = tokio::task::spawn_blocking(move || {
                if !change_leader {
                    return leader;
                }
                ensemble.kill(leader);
                ensemble.wait_for_new_leader(leader, Duration::from_secs(30))
            })
            .await
            .expect("leader change");
            let elected_at = Instant::now();
            tokio::time::sleep_until((held_at + timing.timer_at).into()).await;
            let (held_by_servers, read_at) = exists_now(&direct, marker).await;
            // When the servers expired the old session by themselves (before zooid may ask).
            let mut expired_at = None;
            let mut present = held_by_servers;
            while present && Instant::now() < held_at + timing.refuse_for {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let (now, at) = exists_now(&direct, marker).await;
                present = now;
                expired_at = (!now).then_some(at);
            }
            tokio::time::sleep_until((held_at + timing.refuse_for).into()).await;
            proxy.refuse_reattach(false);
            let reattach_at = Instant::now();
            if change_leader {
                let ensemble = zk.clone();
                tokio::task::spawn_blocking(move || ensemble.restart(leader))
                    .await
                    .expect("restart the old leader");
            }
            let expired_after = expired_at.map(|at| at.saturating_duration_since(held_at));
            (
                held_at,
                new_leader,
                elected_at,
                (held_by_servers, read_at, expired_after),
                reattach_at,
            )
        };
        let ((put, done_at), (held_at, new_leader, elected_at, (held_by_servers, read_at, expired_after), reattach_at)) =
            tokio::join!(put, faults);
        let deliveries = proxy.wait_deliveries(1, timing.hold * 3).await;
        let confirmed = session
            .confirm_gone(
                old_generation,
                tokio::time::Instant::now() + Duration::from_secs(1),
            )
            .await;
        let (marker_left, _) = exists_now(&direct, marker).await;
        let held = match what {
            Write::Put => {
                let items = children_data(&direct, "/fate-g-q/items").await;
                items.iter().filter(|d| d.as_slice() == b"held").count()
            }
            Write::BlockClaim => {
                let mut ids = put.clone().unwrap_or_default();
                let taken = ids.len();
                ids.extend(drain(&service, &category).await);
                assert_unique("block claim", &ids);
                taken
            }
        };
        let stats = proxy.stats();
        let after = |at: Instant| at.saturating_duration_since(held_at);
        eprintln!(
            "g: {what:?}, {timing:?}: leader {leader}, leader {new_leader} known {:?} after; \
             old session's ephemeral at {:?} (a timer's moment): {held_by_servers}; expired by the servers (seen) {expired_after:?} after the hold; reattach allowed at {:?}; \
             put {put:?} at {:?}; confirm_gone({old_generation}) {confirmed:?}; ephemeral left {marker_left}; \
             items with the put's data (or IDs the claim took): {held}; deliveries {deliveries:?}; proxy {stats:?}; session {:?}",
            after(elected_at),
            after(read_at),
            after(reattach_at),
            after(done_at),
            session.status()
        );
        // Guards: the request was held and its delivery logged; the leader changed; zooid gave
        // generation 1 up; the old client's reattach attempts were refused.
        assert_eq!(stats.held_requests, 1);
        assert_eq!(deliveries.len(), 1, "{deliveries:?}");
        assert_eq!(new_leader != leader, change_leader, "the leader changed as asked");
        assert!(stats.refused_reattaches > 0, "{stats:?}");
        assert!(session.status().generation > old_generation, "generation 1 given up");
        // zooid waited for the servers' word: it could come only once reattaching was allowed.
        assert!(
            done_at >= reattach_at,
            "the write resolved {:?} after the hold, before the servers could confirm ({:?})",
            after(done_at),
            after(reattach_at)
        );
        assert!(confirmed.is_ok(), "the servers confirmed: {confirmed:?}");
        assert!(!marker_left, "the old session ended");
        match what {
            Write::Put => {
                assert!(put.is_ok(), "the put succeeded: {put:?}");
                assert_eq!(held, 1, "the put is in the queue exactly once");
            }
            Write::BlockClaim => {
                if let Err(err) = &put {
                    assert_eq!(err.kind(), zooid::ErrorKind::OutcomeUnknown, "{err}");
                }
            }
        }
        HeldPut {
            held_by_servers,
            read_after: after(read_at),
        }
    })
}
