//! Issue 20's queue findings against a real ZooKeeper, each fault guarded by the proxy's
//! counters, each run watched by an overlap checker ([`Ledger`]): a retried release that must not
//! delete the next claimer's lock, two claims on one session after a lost reply, leftover waiter
//! nodes that must not stop idle consumers.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::support::{op, runtime, FaultProxy, MatchFn, RequestMatch, ResetPoint, ZkServer};
use super::{opts, session};
use zooid::queue::{Claim, WorkQueue};

/// The overlap checker: who holds which item, as the consumers report it. A claim of an item
/// another live claim holds, a claim or completion after the item's completion, or a finish by
/// a consumer that does not hold the item are violations.
#[derive(Default)]
pub struct Ledger {
    state: Mutex<LedgerState>,
}

#[derive(Default)]
struct LedgerState {
    held: HashMap<String, String>,
    completed: HashSet<String>,
    claims: u64,
    violations: Vec<String>,
}

impl Ledger {
    /// `who` claimed `item`.
    pub fn claimed(&self, who: &str, item: &str) {
        let mut st = self.state.lock().unwrap();
        st.claims += 1;
        if st.completed.contains(item) {
            st.violations
                .push(format!("{who} claimed {item} after its completion"));
        }
        if let Some(other) = st.held.insert(item.to_string(), who.to_string()) {
            st.violations
                .push(format!("{who} claimed {item} while {other} held it"));
        }
    }

    /// `who` released `item` (its release returned Ok).
    pub fn released(&self, who: &str, item: &str) {
        let mut st = self.state.lock().unwrap();
        match st.held.get(item) {
            Some(h) if h == who => {
                st.held.remove(item);
            }
            other => {
                let other = format!("{other:?}");
                st.violations
                    .push(format!("{who} released {item} held by {other}"));
            }
        }
    }

    /// `who` completed `item` (its complete returned Ok).
    pub fn completed(&self, who: &str, item: &str) {
        let mut st = self.state.lock().unwrap();
        if !st.completed.insert(item.to_string()) {
            st.violations.push(format!("{item} completed twice"));
        }
        match st.held.get(item) {
            Some(h) if h == who => {
                st.held.remove(item);
            }
            other => {
                let other = format!("{other:?}");
                st.violations
                    .push(format!("{who} completed {item} held by {other}"));
            }
        }
    }

    /// The violations so far.
    pub fn violations(&self) -> Vec<String> {
        self.state.lock().unwrap().violations.clone()
    }

    /// Claims recorded so far.
    pub fn claims(&self) -> u64 {
        self.state.lock().unwrap().claims
    }
}

async fn wait_until<F: std::future::Future<Output = bool>>(
    timeout: Duration,
    what: &str,
    mut cond: impl FnMut() -> F,
) {
    let until = Instant::now() + timeout;
    while !cond().await {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Finding 1: consumer A's release applies but its reply is lost; H, first in line, locks the
/// item again; A resends. The resend must not delete H's lock (every lock was a new node at
/// version 0, so `check(lock, 0)` passed), or D claims the item while H holds it.
#[test]
fn a_resent_release_does_not_delete_the_next_claimers_lock() {
    super::support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    rt.block_on(async {
        let path = "/f1/q";
        let sa = session(&proxy.connect_string(), 6000).await;
        let sh = session(&zk.connect_string(), 6000).await;
        let sd = session(&zk.connect_string(), 6000).await;
        let admin = zookeeper_client::Client::connect(&zk.connect_string())
            .await
            .unwrap();
        let qa = WorkQueue::open(sa.clone().into_zk(), path, opts("A")).unwrap();
        let qh = WorkQueue::open(sh.clone().into_zk(), path, opts("H")).unwrap();
        let qd = WorkQueue::open(sd.clone().into_zk(), path, opts("D")).unwrap();
        let ledger = Ledger::default();
        let item = qa.put(b"one").await.unwrap();
        let a = qa
            .claim(Some(Duration::ZERO))
            .await
            .unwrap()
            .expect("A claims");
        ledger.claimed("A", a.item());

        // H waits, first in line.
        let h_task = tokio::spawn({
            let qh = qh.clone();
            async move { qh.claim(Some(Duration::from_secs(20))).await }
        });
        let waiters = format!("{path}/waiters");
        wait_until(Duration::from_secs(5), "H in line", || {
            let admin = admin.clone();
            let waiters = waiters.clone();
            async move { !admin.list_children(&waiters).await.unwrap().is_empty() }
        })
        .await;

        // A's release reaches the server, its reply is held back.
        proxy.mute_replies();
        let forced_before = proxy.stats().forced_closes;
        let a_task = tokio::spawn(async move { a.release().await });
        let lock = format!("{path}/locks/{item}");
        wait_until(Duration::from_secs(10), "H's lock on the item", || {
            let admin = admin.clone();
            let lock = lock.clone();
            async move {
                match admin.get_data(&lock).await {
                    Ok((data, _)) => String::from_utf8_lossy(&data).ends_with('H'),
                    Err(_) => false,
                }
            }
        })
        .await;
        let h = h_task
            .await
            .unwrap()
            .unwrap()
            .expect("H claims the released item");
        assert_eq!(h.item(), item);
        // Guard: A's release applied on the server while A had no reply yet.
        assert!(!a_task.is_finished(), "A's reply was held back");
        // The reply is lost: A's connection is closed, A resends on a new one.
        proxy.close_all();
        proxy.unmute();
        let a_out = a_task.await.unwrap();
        assert!(
            proxy.stats().forced_closes > forced_before,
            "guard: A's connection was closed with its reply"
        );
        assert!(a_out.is_ok(), "A's release applied: {a_out:?}");
        ledger.released("A", &item);
        ledger.claimed("H", h.item());

        // H's lock must have survived A's resend: D finds nothing to claim.
        let h_lock = admin.get_data(&lock).await;
        assert!(
            matches!(&h_lock, Ok((data, _)) if String::from_utf8_lossy(data).ends_with('H')),
            "H's lock was deleted by A's resent release: {h_lock:?}"
        );
        if let Some(d) = qd.claim(Some(Duration::ZERO)).await.unwrap() {
            ledger.claimed("D", d.item());
            d.complete().await.unwrap();
            ledger.completed("D", &item);
        }
        let h_done = h.complete().await;
        if h_done.is_ok() {
            ledger.completed("H", &item);
        }
        assert_eq!(ledger.violations(), Vec::<String>::new());
        h_done.unwrap();
        eprintln!(
            "finding 1: release reply lost ({} forced close), H's lock intact, D found nothing",
            proxy.stats().forced_closes - forced_before
        );
    });
}

/// Finding 2: two claims on one handle (one session) race for one item; the second one's lock
/// create fails with NodeExists and its reply is lost. Resolving by `ephemeralOwner == our
/// session` takes the first claim's lock as its own: both hold the item.
#[test]
fn two_claims_on_one_session_never_take_one_item_after_a_lost_reply() {
    super::support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    rt.block_on(async {
        let path = "/f2/q";
        let s = session(&proxy.connect_string(), 6000).await;
        let sp = session(&zk.connect_string(), 6000).await;
        let q = WorkQueue::open(s.clone().into_zk(), path, opts("shared")).unwrap();
        let producer = WorkQueue::open(sp.clone().into_zk(), path, opts("producer")).unwrap();
        let ledger = Ledger::default();
        let mut fired = 0;
        for round in 0..40 {
            let item = producer.put(format!("{round}").as_bytes()).await.unwrap();
            let seen = Arc::new(AtomicUsize::new(0));
            let needle = format!("{path}/locks/{item}").into_bytes();
            let counter = seen.clone();
            // The reply to the second lock multi on this item (the one that finds the lock).
            proxy.drop_reply(RequestMatch::Custom(MatchFn::new(move |opcode, frame| {
                opcode == op::MULTI
                    && frame.windows(needle.len()).any(|w| w == needle.as_slice())
                    && counter.fetch_add(1, Ordering::SeqCst) == 1
            })));
            let dropped = proxy.dropped_replies();
            let wait = Some(Duration::from_millis(1500));
            let (c1, c2) = tokio::join!(q.claim(wait), q.claim(wait));
            let claims: Vec<Claim> = [c1.unwrap(), c2.unwrap()].into_iter().flatten().collect();
            if proxy.dropped_replies() > dropped {
                fired += 1;
            } else {
                proxy.clear_faults();
            }
            for (i, c) in claims.iter().enumerate() {
                ledger.claimed(&format!("thread{i}"), c.item());
            }
            for (i, c) in claims.into_iter().enumerate() {
                let name = c.item().to_string();
                if c.complete().await.is_ok() {
                    ledger.completed(&format!("thread{i}"), &name);
                }
            }
            if fired >= 5 {
                break;
            }
        }
        assert!(
            fired >= 1,
            "guard: no round had a second lock create on one item with its reply lost"
        );
        assert_eq!(ledger.violations(), Vec::<String>::new());
        eprintln!(
            "finding 2: {fired} rounds with the second claim's reply lost, {} claims, no overlap",
            ledger.claims()
        );
    });
}

/// Finding 3a: a waiter node whose owner is alive but not waiting (here made by hand, as a lost
/// `join` or a failed `leave` leaves one) heads the line. An idle consumer behind it must still
/// get an item put later, in about a session timeout, not when the stray's session ends.
#[test]
fn a_waiter_whose_owner_is_not_waiting_does_not_stop_idle_consumers() {
    super::support::init_tracing();
    let zk = ZkServer::start();
    let rt = runtime();
    rt.block_on(async {
        let path = "/f3a/q";
        let s = session(&zk.connect_string(), 2000).await;
        let q = WorkQueue::open(s.clone().into_zk(), path, opts("consumer")).unwrap();
        assert!(q.claim(Some(Duration::ZERO)).await.unwrap().is_none());
        let stray_owner = zookeeper_client::Client::connect(&zk.connect_string())
            .await
            .unwrap();
        let seq = zookeeper_client::CreateMode::EphemeralSequential
            .with_acls(zookeeper_client::Acls::anyone_all());
        let (_, stray) = stray_owner
            .create(&format!("{path}/waiters/w-0000000000000000-"), b"", &seq)
            .await
            .unwrap();
        let waiting = tokio::spawn({
            let q = q.clone();
            async move { q.claim(Some(Duration::from_secs(20))).await }
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
        let put_at = Instant::now();
        q.put(b"wanted").await.unwrap();
        let got = waiting.await.unwrap().unwrap();
        let took = put_at.elapsed();
        // Guard: the stray was there, first in line, the whole time.
        let listed = stray_owner
            .list_children(&format!("{path}/waiters"))
            .await
            .unwrap();
        assert!(
            listed.contains(&format!("w-0000000000000000-{stray}")),
            "guard: the stray waiter stayed: {listed:?}"
        );
        let got = got.expect("the idle consumer got the item despite the stray waiter");
        assert!(
            took < Duration::from_secs(6),
            "the item waited {took:?} behind the stray waiter"
        );
        got.complete().await.unwrap();
        eprintln!("finding 3a: item claimed {took:?} after the put, behind a stray waiter");
    });
}

/// Finding 3b: a consumer whose wait ends and whose waiter delete never reaches the server
/// (connection reset before the request) must not leave its node behind while it lives.
#[test]
fn a_waiter_whose_delete_is_lost_is_deleted_in_the_background() {
    super::support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    rt.block_on(async {
        let path = "/f3b/q";
        let s = session(&proxy.connect_string(), 4000).await;
        let q = WorkQueue::open(s.clone().into_zk(), path, opts("leaver")).unwrap();
        q.put(b"x").await.unwrap();
        q.claim(Some(Duration::ZERO))
            .await
            .unwrap()
            .unwrap()
            .complete()
            .await
            .unwrap();
        let admin = zookeeper_client::Client::connect(&zk.connect_string())
            .await
            .unwrap();
        let waiters = format!("{path}/waiters");
        let resets = proxy.resets();
        proxy.reset_on(op::DELETE, "/f3b/q/waiters/", ResetPoint::BeforeRequest);
        // Waits in line, times out, leaves: the delete is reset before reaching the server.
        assert!(q
            .claim(Some(Duration::from_millis(500)))
            .await
            .unwrap()
            .is_none());
        wait_until(Duration::from_secs(5), "the reset", || {
            let proxy = &proxy;
            async move { proxy.resets() > resets }
        })
        .await;
        // The consumer lives on, idle: its waiter node must go.
        let until = Instant::now() + Duration::from_secs(5);
        let mut left = admin.list_children(&waiters).await.unwrap();
        while !left.is_empty() && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(100)).await;
            left = admin.list_children(&waiters).await.unwrap();
        }
        assert_eq!(
            left,
            Vec::<String>::new(),
            "the waiter node of an idle consumer stayed after its delete was lost"
        );
        assert_eq!(proxy.resets() - resets, 1, "guard: the delete was reset");
        eprintln!("finding 3b: waiter delete reset once, node gone while its owner lives");
        drop(s);
    });
}

/// Finding 8: a handle's put guard is an ephemeral node; dropped handles must not leave theirs
/// behind on a long-lived session (they would pile up until the session ends).
#[test]
fn a_dropped_handle_deletes_its_put_guard() {
    super::support::init_tracing();
    let zk = ZkServer::start();
    let rt = runtime();
    rt.block_on(async {
        let path = "/f8g/q";
        let s = session(&zk.connect_string(), 4000).await;
        let admin = zookeeper_client::Client::connect(&zk.connect_string())
            .await
            .unwrap();
        let guards = format!("{path}/guards");
        for round in 0..3 {
            let q = WorkQueue::open(s.clone().into_zk(), path, opts("producer")).unwrap();
            q.put(format!("{round}").as_bytes()).await.unwrap();
            // Guard: the handle made a guard node.
            assert_eq!(admin.list_children(&guards).await.unwrap().len(), 1);
            let claim = q.claim(Some(Duration::ZERO)).await.unwrap().unwrap();
            drop(q);
            // A live claim keeps the handle's state; completing it lets the handle go.
            claim.complete().await.unwrap();
            let until = Instant::now() + Duration::from_secs(3);
            let mut left = admin.list_children(&guards).await.unwrap();
            while !left.is_empty() && Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(50)).await;
                left = admin.list_children(&guards).await.unwrap();
            }
            assert_eq!(
                left,
                Vec::<String>::new(),
                "round {round}: the dropped handle's guard stayed"
            );
        }
        assert!(
            !s.is_gone_generation(s.status().generation),
            "the session lived on"
        );
        eprintln!("finding 8: 3 handles dropped, no guard left on the live session");
    });
}

/// Finding 8: `claim(timeout)` bounds the lock attempt too. The reply to the lock create is lost
/// and no server can be reached afterwards: a 300 ms claim must return in about that time, not
/// after resolving for a session timeout; the lock it may have made is handed back once a
/// server answers again.
#[test]
fn a_claim_timeout_bounds_a_lock_attempt_in_doubt() {
    super::support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    rt.block_on(async {
        let path = "/f8t/q";
        let s = session(&proxy.connect_string(), 6000).await;
        let sp = session(&zk.connect_string(), 6000).await;
        let q = WorkQueue::open(s.clone().into_zk(), path, opts("bounded")).unwrap();
        let producer = WorkQueue::open(sp.clone().into_zk(), path, opts("producer")).unwrap();
        let item = producer.put(b"x").await.unwrap();
        // New connections go nowhere; the open one carries the claim until its reply is lost.
        let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let dead_addr = dead.local_addr().unwrap();
        drop(dead);
        let upstream = proxy.upstream();
        proxy.set_upstream(dead_addr);
        let dropped = proxy.dropped_replies();
        proxy.drop_reply(RequestMatch::Custom(MatchFn::new(|opcode, frame| {
            opcode == op::MULTI && frame.windows(7).any(|w| w == b"bounded")
        })));
        let started = Instant::now();
        let out = q.claim(Some(Duration::from_millis(300))).await;
        let took = started.elapsed();
        assert_eq!(
            proxy.dropped_replies(),
            dropped + 1,
            "guard: the lock create's reply was lost"
        );
        assert!(matches!(out, Ok(None)), "{out:?}");
        assert!(
            took < Duration::from_millis(1500),
            "a 300 ms claim took {took:?}"
        );
        // Servers reachable again: the lock made in doubt is handed back, the item is claimable.
        proxy.set_upstream(upstream);
        let got = producer
            .claim(Some(Duration::from_secs(20)))
            .await
            .unwrap()
            .expect("the item, once the stray lock is handed back");
        assert_eq!(got.item(), item);
        got.complete().await.unwrap();
        eprintln!("finding 8: 300 ms claim returned after {took:?} with its lock create in doubt");
    });
}

/// Finding 8: once a claim is known lost it stays lost. With no server reachable the session is
/// declared lost, its replacement fails, and the session layer goes back to Suspended on the
/// same generation: `is_lost()` must not flip back to false.
#[test]
fn a_lost_claim_stays_lost_while_the_session_cannot_be_replaced() {
    super::support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    rt.block_on(async {
        let path = "/f8l/q";
        let s = session(&proxy.connect_string(), 2000).await;
        let q = WorkQueue::open(s.clone().into_zk(), path, opts("latched")).unwrap();
        q.put(b"x").await.unwrap();
        let claim = q.claim(Some(Duration::ZERO)).await.unwrap().unwrap();
        let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let dead_addr = dead.local_addr().unwrap();
        drop(dead);
        proxy.set_upstream(dead_addr);
        proxy.close_all();
        let until = Instant::now() + Duration::from_secs(10);
        let mut seen_lost_at = None;
        let mut flipped = None;
        let losses = s.losses();
        while Instant::now() < until {
            let lost = claim.is_lost();
            match (lost, seen_lost_at) {
                (true, None) => seen_lost_at = Some(Instant::now()),
                (false, Some(at)) => {
                    flipped = Some(Instant::now() - at);
                    break;
                }
                _ => {}
            }
            if seen_lost_at.is_some_and(|at: Instant| at.elapsed() > Duration::from_secs(4)) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(s.losses() > losses, "guard: the session was declared lost");
        assert!(seen_lost_at.is_some(), "guard: the claim was seen lost");
        assert_eq!(
            flipped, None,
            "is_lost() went back to false after being true"
        );
        let err = claim.complete().await.unwrap_err();
        assert!(
            matches!(err, zooid::ZooidError::SessionLost { .. }),
            "{err:?}"
        );
        eprintln!("finding 8: claim lost and stayed lost while the session could not be replaced");
    });
}
