//! The work queue (src/queue.rs) against a real ZooKeeper server: order, release and
//! completion, bad input, lost replies to put / claim / complete / release through the fault
//! proxy, the herd measurement against the seed's design, and multi-process runs (producers and
//! consumers from examples/queueload.rs) with a checker over their timestamped logs, also with a
//! consumer SIGKILLed or SIGSTOPped while it holds an item.
//!
//! `cargo test --test queue -- --nocapture` prints the figures (docs/RECIPES.md).

use zooid_test_support as support;

mod drop_anywhere;
mod faults;
mod finish_in_doubt;
mod load;
mod put_consumed;
mod put_doubt;

use std::fs;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use support::{
    op, runtime, session_options, FaultProxy, MatchFn, RequestMatch, ResetPoint, ZkServer,
};
use zooid::queue::{QueueOptions, WorkQueue};
use zooid::{Session, ZooidError};

async fn session(connect: &str, session_ms: u64) -> Session {
    Session::connect(connect, &session_options(session_ms))
        .await
        .unwrap()
}

fn queue(s: &Session, path: &str) -> WorkQueue {
    WorkQueue::open(s.clone().into_zk(), path, QueueOptions::default()).unwrap()
}

fn opts(identity: &str) -> QueueOptions {
    QueueOptions {
        identity: Some(identity.into()),
        ..QueueOptions::default()
    }
}

/// Items come out in put order; a released item comes back first; a completed one never does;
/// `items` shows who holds what.
#[test]
fn order_release_complete_and_listing() {
    support::init_tracing();
    let zk = ZkServer::start();
    let rt = runtime();
    rt.block_on(async {
        let s = session(&zk.connect_string(), 4000).await;
        let q = WorkQueue::open(s.clone().into_zk(), "/basic/q", opts("tester-1")).unwrap();
        let mut names = Vec::new();
        for i in 0..3 {
            names.push(q.put(format!("item {i}").as_bytes()).await.unwrap());
        }
        let zero = Some(Duration::ZERO);
        let a = q.claim(zero).await.unwrap().expect("first item");
        assert_eq!(a.data(), b"item 0");
        assert_eq!(a.item(), names[0]);
        let b = q.claim(zero).await.unwrap().expect("second item");
        assert_eq!(b.data(), b"item 1");

        let listing = q.items().await.unwrap();
        assert_eq!(listing.len(), 3);
        let holder = listing[0].claimed_by.as_ref().expect("item 0 is claimed");
        assert_eq!(holder.identity, "tester-1");
        assert_eq!(holder.session_id, s.status().session_id);
        assert!(listing[2].claimed_by.is_none());
        assert_eq!(listing[2].bytes, 6);

        a.release().await.unwrap();
        let again = q.claim(zero).await.unwrap().expect("the released item");
        assert_eq!(
            again.data(),
            b"item 0",
            "a released item is handed out again, oldest first"
        );
        again.complete().await.unwrap();
        b.complete().await.unwrap();
        // A dropped claim is released in the background.
        let c = q.claim(zero).await.unwrap().expect("third item");
        assert_eq!(c.data(), b"item 2");
        drop(c);
        let c = q
            .claim(Some(Duration::from_secs(5)))
            .await
            .unwrap()
            .expect("the dropped claim's item");
        assert_eq!(c.data(), b"item 2");
        c.complete().await.unwrap();
        assert!(
            q.claim(zero).await.unwrap().is_none(),
            "completed items never come back"
        );
        assert!(q.items().await.unwrap().is_empty());

        // A lock whose item is gone (left by hand or older code) is cleaned up; a live claim's
        // lock is not.
        let admin = zookeeper_client::Client::connect(&zk.connect_string())
            .await
            .unwrap();
        let stray = "/basic/q/locks/i-00000000deadbeef-0000000099";
        let persistent = zookeeper_client::CreateMode::Persistent
            .with_acls(zookeeper_client::Acls::anyone_all());
        admin.create(stray, b"stale", &persistent).await.unwrap();
        q.put(b"held").await.unwrap();
        let held = q.claim(zero).await.unwrap().expect("held item");
        assert!(
            admin.check_stat(stray).await.unwrap().is_none(),
            "the stray lock was deleted"
        );
        let listing = q.items().await.unwrap();
        assert_eq!(listing.len(), 1);
        assert!(
            listing[0].claimed_by.is_some(),
            "the live claim's lock stays"
        );
        held.complete().await.unwrap();

        // A claim waiting in line gets an item put later.
        let waiter = {
            let q = q.clone();
            tokio::spawn(async move { q.claim(Some(Duration::from_secs(10))).await })
        };
        tokio::time::sleep(Duration::from_millis(300)).await; // let it join the line (not needed for correctness)
        q.put(b"late").await.unwrap();
        let got = waiter.await.unwrap().unwrap().expect("woken by the put");
        assert_eq!(got.data(), b"late");
        got.complete().await.unwrap();
    });
}

/// Oversize put, full queue, claim on a missing queue: typed errors, nothing changed.
#[test]
fn bad_input_gets_typed_errors_and_changes_nothing() {
    support::init_tracing();
    let zk = ZkServer::start();
    let rt = runtime();
    rt.block_on(async {
        let s = session(&zk.connect_string(), 4000).await;
        let missing = queue(&s, "/bad/never-put");
        assert!(matches!(
            missing.items().await,
            Err(ZooidError::QueueNotFound { .. })
        ));
        // Workers start before producers: a claim on a queue never put to finds nothing.
        match missing.claim(Some(Duration::ZERO)).await {
            Ok(None) => {}
            other => panic!("claim on a missing queue: {other:?}"),
        }

        let q = WorkQueue::open(
            s.clone().into_zk(),
            "/bad/small",
            QueueOptions {
                max_items: 3,
                max_item_bytes: 100,
                ..QueueOptions::default()
            },
        )
        .unwrap();
        match q.put(&[7u8; 101]).await {
            Err(ZooidError::TooLarge {
                bytes: 101,
                limit: 100,
                ..
            }) => {}
            other => panic!("oversize put: {other:?}"),
        }
        q.put(&[7u8; 100]).await.unwrap();
        q.put(b"2").await.unwrap();
        q.put(b"3").await.unwrap();
        match q.put(b"4").await {
            Err(ZooidError::QueueFull { limit: 3, .. }) => {}
            other => panic!("put to a full queue: {other:?}"),
        }
        let items = q.items().await.unwrap();
        assert_eq!(items.len(), 3, "nothing added by the refused puts");
        assert_eq!(items[0].bytes, 100);
        // Completing one makes room again.
        q.claim(Some(Duration::ZERO))
            .await
            .unwrap()
            .unwrap()
            .complete()
            .await
            .unwrap();
        q.put(b"4").await.unwrap();

        for bad in ["", "/", "rel", "/a/", "/a//b"] {
            assert!(matches!(
                WorkQueue::open(s.clone().into_zk(), bad, QueueOptions::default()),
                Err(ZooidError::InvalidArgument(_))
            ));
        }
        let too_many = QueueOptions {
            max_items: zooid::queue::MAX_MAX_ITEMS + 1,
            ..QueueOptions::default()
        };
        assert!(WorkQueue::open(s.clone().into_zk(), "/bad/x", too_many).is_err());
    });
}

/// A predicate on multi requests: `needle` in the frame and `absent` not.
fn multi_with(needle: &str, absent: Option<&str>) -> RequestMatch {
    let needle = needle.as_bytes().to_vec();
    let absent = absent.map(|a| a.as_bytes().to_vec());
    RequestMatch::Custom(MatchFn::new(move |opcode, frame| {
        let has = |p: &[u8]| frame.windows(p.len()).any(|w| w == p);
        opcode == op::MULTI && has(&needle) && absent.as_ref().is_none_or(|a| !has(a))
    }))
}

/// Replies to puts, claims, completes and releases dropped after the server applied them:
/// every put lands exactly once, a claim whose reply was lost is found by its session, a
/// complete whose reply was lost reports success, and nothing is completed twice or lost.
#[test]
fn lost_replies_to_put_claim_complete_release() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    rt.block_on(async {
        let s = session(&proxy.connect_string(), 4000).await;
        let q = WorkQueue::open(s.clone().into_zk(), "/lossy/q", opts("claimer-lossy")).unwrap();
        q.put(b"warm").await.unwrap();
        q.claim(Some(Duration::ZERO))
            .await
            .unwrap()
            .unwrap()
            .complete()
            .await
            .unwrap();

        // Puts: the reply of every other put multi is lost.
        const PUTS0: usize = 20;
        let mut names = Vec::new();
        for i in 0..PUTS0 {
            if i % 2 == 0 {
                proxy.drop_reply(multi_with("/lossy/q/guards/", None));
            }
            names.push(q.put(format!("{i}").as_bytes()).await.unwrap());
        }
        let dropped_puts = proxy.dropped_replies();
        assert_eq!(
            dropped_puts,
            (PUTS0 / 2) as u64,
            "the put faults must have happened"
        );
        let listed = q.items().await.unwrap();
        let data: Vec<String> = {
            let mut v = Vec::new();
            for item in &listed {
                v.push(item.name.clone());
            }
            v
        };
        assert_eq!(
            data, names,
            "every put exactly once, in order, under the name put returned"
        );
        assert!(q.stats().puts_resolved >= (PUTS0 / 2) as u64);

        // Puts whose request never reaches the server, or reaches it torn: the guard is still
        // at V, so the identical multi is sent again and applies once.
        let resets_before = proxy.resets();
        for point in [
            ResetPoint::BeforeRequest,
            ResetPoint::MidRequest,
            ResetPoint::AfterRequest,
        ] {
            proxy.reset_on_request(multi_with("/lossy/q/guards/", None), point);
            names.push(q.put(format!("{point:?}").as_bytes()).await.unwrap());
        }
        assert_eq!(
            proxy.resets() - resets_before,
            3,
            "the reset faults must have happened"
        );
        let listed: Vec<String> = q
            .items()
            .await
            .unwrap()
            .into_iter()
            .map(|i| i.name)
            .collect();
        assert_eq!(listed, names, "reset puts applied exactly once each");
        const PUTS: usize = PUTS0 + 3;

        // Claims: the reply to the lock-creating multi (it carries our identity) is lost.
        let other = session(&zk.connect_string(), 4000).await;
        let rival = WorkQueue::open(other.clone().into_zk(), "/lossy/q", opts("rival")).unwrap();
        let mut completed = Vec::new();
        for round in 0..PUTS / 2 {
            proxy.drop_reply(multi_with("claimer-lossy", None));
            let before = proxy.dropped_replies();
            let claim = q
                .claim(Some(Duration::from_secs(10)))
                .await
                .unwrap()
                .expect("an item");
            assert_eq!(
                proxy.dropped_replies(),
                before + 1,
                "claim fault {round} happened"
            );
            // Nobody else can take the item we hold.
            if let Some(r) = rival.claim(Some(Duration::ZERO)).await.unwrap() {
                assert_ne!(r.item(), claim.item(), "two live claims on one item");
                r.release().await.unwrap();
            }
            // Complete with the reply lost too: success, and the item is gone.
            proxy.drop_reply(multi_with("/lossy/q/locks/", Some("claimer-lossy")));
            let item = claim.item().to_string();
            claim.complete().await.unwrap();
            assert_eq!(
                proxy.dropped_replies(),
                before + 2,
                "complete fault {round} happened"
            );
            completed.push(item);
        }
        // Releases: the reply is lost; the item comes back.
        for _ in 0..3 {
            // A release is multi[check(item), delete(lock), setData(item)]: no identity (the
            // claims carry it), and no complete goes through this session in this loop.
            proxy.drop_reply(multi_with("/lossy/q/locks/", Some("claimer-lossy")));
            let before = proxy.dropped_replies();
            let claim = q
                .claim(Some(Duration::ZERO))
                .await
                .unwrap()
                .expect("an item");
            let item = claim.item().to_string();
            claim.release().await.unwrap();
            assert_eq!(
                proxy.dropped_replies(),
                before + 1,
                "release fault happened"
            );
            let again = rival
                .claim(Some(Duration::from_secs(5)))
                .await
                .unwrap()
                .expect("released");
            assert_eq!(again.item(), item, "the released item is handed out again");
            again.release().await.unwrap();
        }
        let rest = q.items().await.unwrap();
        assert_eq!(rest.len() + completed.len(), PUTS, "no item lost");
        for item in &rest {
            assert!(
                !completed.contains(&item.name),
                "a completed item is still there"
            );
            assert!(item.claimed_by.is_none(), "stray lock on {}", item.name);
        }
        let mut unique = completed.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), completed.len(), "an item completed twice");
        eprintln!(
            "lost replies: {} dropped (puts {dropped_puts}), all resolved",
            proxy.dropped_replies()
        );
    });
}

/// Counts for one consumer design.
#[derive(Default)]
struct Herd {
    notifications: AtomicU64,
    get_children: AtomicU64,
    requests: AtomicU64,
    completed: AtomicU64,
}

/// The seed's consumer: a getChildren watch on the queue; on every change, list, sort, and for
/// each child without a lock try to lock it; the holder deletes the item and its lock.
async fn seed_consumer(client: zookeeper_client::Client, base: String, herd: Arc<Herd>) {
    let items = format!("{base}/items");
    let locks = format!("{base}/locks");
    let lock_opts =
        zookeeper_client::CreateMode::Ephemeral.with_acls(zookeeper_client::Acls::anyone_all());
    loop {
        herd.get_children.fetch_add(1, Ordering::Relaxed);
        herd.requests.fetch_add(1, Ordering::Relaxed);
        let Ok((mut children, watcher)) = client.list_and_watch_children(&items).await else {
            return;
        };
        children.sort();
        for child in children {
            herd.requests.fetch_add(1, Ordering::Relaxed);
            let lock = format!("{locks}/{child}");
            if client.check_stat(&lock).await.ok().flatten().is_some() {
                continue;
            }
            herd.requests.fetch_add(1, Ordering::Relaxed);
            if client.create(&lock, b"seed", &lock_opts).await.is_ok() {
                herd.requests.fetch_add(3, Ordering::Relaxed);
                // The item may have been completed between the listing and the lock.
                if client.get_data(&format!("{items}/{child}")).await.is_ok() {
                    let _ = client.delete(&format!("{items}/{child}"), None).await;
                    herd.completed.fetch_add(1, Ordering::Relaxed);
                }
                let _ = client.delete(&lock, None).await;
            }
        }
        watcher.changed().await;
        herd.notifications.fetch_add(1, Ordering::Relaxed);
    }
}

/// 20 idle consumers, items put one at a time: watch notifications and getChildren calls per
/// put, zooid's line of waiters against the seed's design, same server, same run.
#[test]
fn herd_measurement_against_the_seed_design() {
    support::init_tracing();
    let zk = ZkServer::start();
    let rt = runtime();
    const CONSUMERS: usize = 20;
    const PUTS: u64 = 30;
    rt.block_on(async {
        let producer = session(&zk.connect_string(), 10000).await;

        // zooid: 20 consumers, each its own session and handle, claim + complete in a loop.
        let q = queue(&producer, "/herd/zooid");
        q.put(b"create").await.unwrap();
        q.claim(Some(Duration::ZERO)).await.unwrap().unwrap().complete().await.unwrap();
        let done = Arc::new(AtomicU64::new(0));
        let mut handles = Vec::new();
        let mut tasks = Vec::new();
        for _ in 0..CONSUMERS {
            let s = session(&zk.connect_string(), 10000).await;
            let cq = queue(&s, "/herd/zooid");
            handles.push(cq.clone());
            let done = done.clone();
            tasks.push(tokio::spawn(async move {
                let _s = s;
                while let Ok(Some(claim)) = cq.claim(None).await {
                    claim.complete().await.unwrap();
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        // Let every consumer reach its idle wait (the line settles).
        wait_quiet(|| handles.iter().map(|h| h.stats().requests).sum()).await;
        let before: Vec<_> = handles.iter().map(|h| h.stats()).collect();
        for i in 0..PUTS {
            q.put(b"x").await.unwrap();
            wait_for(|| done.load(Ordering::Relaxed) == i + 1).await;
        }
        wait_quiet(|| handles.iter().map(|h| h.stats().requests).sum()).await;
        let after: Vec<_> = handles.iter().map(|h| h.stats()).collect();
        let sum = |f: fn(&zooid::queue::QueueStats) -> u64| -> u64 {
            after.iter().zip(&before).map(|(a, b)| f(a) - f(b)).sum()
        };
        let z_events = sum(|s| s.watch_events) as f64 / PUTS as f64;
        let z_lists = sum(|s| s.get_children) as f64 / PUTS as f64;
        let z_reqs = sum(|s| s.requests) as f64 / PUTS as f64;
        let woken = after
            .iter()
            .zip(&before)
            .filter(|(a, b)| a.watch_events > b.watch_events)
            .count();
        for t in tasks {
            t.abort();
        }

        // The seed: 20 consumers each watching the queue.
        let base = "/herd/seed";
        let admin = zookeeper_client::Client::connect(&zk.connect_string()).await.unwrap();
        let dir = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
        admin.mkdir(&format!("{base}/items"), &dir).await.unwrap();
        admin.mkdir(&format!("{base}/locks"), &dir).await.unwrap();
        let herd = Arc::new(Herd::default());
        let mut seeds = Vec::new();
        for _ in 0..CONSUMERS {
            let client = zookeeper_client::Client::connect(&zk.connect_string()).await.unwrap();
            seeds.push(tokio::spawn(seed_consumer(client, base.to_string(), herd.clone())));
        }
        wait_quiet(|| herd.requests.load(Ordering::Relaxed)).await;
        let n0 = herd.notifications.load(Ordering::Relaxed);
        let g0 = herd.get_children.load(Ordering::Relaxed);
        let r0 = herd.requests.load(Ordering::Relaxed);
        let seq = zookeeper_client::CreateMode::PersistentSequential.with_acls(zookeeper_client::Acls::anyone_all());
        for i in 0..PUTS {
            admin.create(&format!("{base}/items/q-"), b"x", &seq).await.unwrap();
            wait_for(|| herd.completed.load(Ordering::Relaxed) == i + 1).await;
        }
        wait_quiet(|| herd.requests.load(Ordering::Relaxed)).await;
        let s_events = (herd.notifications.load(Ordering::Relaxed) - n0) as f64 / PUTS as f64;
        let s_lists = (herd.get_children.load(Ordering::Relaxed) - g0) as f64 / PUTS as f64;
        let s_reqs = (herd.requests.load(Ordering::Relaxed) - r0) as f64 / PUTS as f64;
        for t in seeds {
            t.abort();
        }
        assert_eq!(herd.completed.load(Ordering::Relaxed), PUTS, "the seed design did the work");

        eprintln!("herd, {CONSUMERS} idle consumers, {PUTS} puts one at a time (per put: put, claim, complete):");
        eprintln!("| design | watch notifications | getChildren | requests by consumers |");
        eprintln!("|---|---|---|---|");
        eprintln!("| zooid (line of waiters) | {z_events:.1} | {z_lists:.1} | {z_reqs:.1} |");
        eprintln!("| seed (all watch the queue) | {s_events:.1} | {s_lists:.1} | {s_reqs:.1} |");
        eprintln!("zooid consumers woken by a watch at all during the run: {woken} of {CONSUMERS}");
        // The seed wakes every consumer on every put and every completion.
        assert!(s_events >= CONSUMERS as f64, "the seed design must show the herd: {s_events}");
        // zooid wakes a constant number, independent of the consumer count.
        assert!(z_events <= 4.0, "zooid woke {z_events} consumers per put");
        assert!(z_lists <= 12.0, "zooid listed {z_lists} times per put");
    });
}

/// Waits until `f` stops changing for 500 ms (the consumers went idle).
async fn wait_quiet(f: impl Fn() -> u64) {
    let mut last = f();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = f();
        if now == last || tokio::time::Instant::now() > deadline {
            return;
        }
        last = now;
    }
}

async fn wait_for(cond: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not reached in 30 s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn wait_lines(p: &load::Proc, timeout: Duration, what: &str, cond: impl Fn(&[String]) -> bool) {
    assert!(
        support::wait_until(timeout, || cond(&p.lines())),
        "{}: {what} not seen in {timeout:?}; log:\n{}",
        p.name,
        p.lines().join("\n")
    );
}

/// 3 producer and 4 consumer processes, 3000 items: every item completed exactly once, none
/// lost, no item held by two live claims at once.
#[test]
fn three_producers_four_consumers_processes() {
    support::init_tracing();
    let zk = ZkServer::start();
    let dir = tempfile::tempdir().unwrap();
    let stop = dir.path().join("STOP");
    const PER_PRODUCER: usize = 1000;
    let connect = zk.connect_string();
    let q = "/load/q";
    let started = std::time::Instant::now();
    let consumers: Vec<load::Proc> = (0..4)
        .map(|i| {
            load::Proc::start(
                dir.path(),
                &format!("c{i}"),
                &connect,
                q,
                4000,
                &[
                    "consume".into(),
                    "--stop-file".into(),
                    stop.display().to_string(),
                ],
            )
        })
        .collect();
    let mut producers: Vec<load::Proc> = (0..3)
        .map(|i| {
            load::Proc::start(
                dir.path(),
                &format!("p{i}"),
                &connect,
                q,
                4000,
                &[
                    "produce".into(),
                    "--name".into(),
                    format!("p{i}"),
                    "--count".into(),
                    PER_PRODUCER.to_string(),
                ],
            )
        })
        .collect();
    for p in &mut producers {
        assert!(
            p.wait_exit(Duration::from_secs(120)),
            "{} did not finish",
            p.name
        );
    }
    let put_done = started.elapsed();
    let total = 3 * PER_PRODUCER;
    let done = || -> usize {
        consumers
            .iter()
            .map(|c| c.lines().iter().filter(|l| l.starts_with("D ")).count())
            .sum()
    };
    assert!(
        support::wait_until(Duration::from_secs(120), || done() >= total),
        "only {} of {total} completed",
        done()
    );
    let all_done = started.elapsed();
    fs::write(&stop, b"").unwrap();
    let mut consumers = consumers;
    for c in &mut consumers {
        assert!(
            c.wait_exit(Duration::from_secs(20)),
            "{} did not stop",
            c.name
        );
    }
    let report = load::check(
        &producers.iter().collect::<Vec<_>>(),
        &consumers.iter().collect::<Vec<_>>(),
    );
    let per: Vec<usize> = consumers
        .iter()
        .map(|c| c.lines().iter().filter(|l| l.starts_with("D ")).count())
        .collect();
    eprintln!(
        "processes: {} items put by 3 producers in {put_done:?}, all completed after {all_done:?} by 4 consumers {per:?}; {} claims, {} lost, {} errors, {} violations",
        report.put,
        report.claims,
        report.lost_claims,
        report.errors.len(),
        report.violations.len()
    );
    assert_eq!(report.put, total);
    assert_eq!(report.completed, total);
    assert!(
        report.violations.is_empty(),
        "violations: {:#?}",
        &report.violations[..report.violations.len().min(20)]
    );
    // Consumers started before the first put see the queue missing until it exists.
    let errors: Vec<&String> = report
        .errors
        .iter()
        .filter(|e| !e.contains("does not exist"))
        .collect();
    assert!(errors.is_empty(), "errors: {errors:#?}");
    assert!(per.iter().all(|&n| n > 0), "every consumer worked: {per:?}");
}

/// A consumer SIGKILLed while holding an item: another consumer processes it. A consumer
/// SIGSTOPped past its session while holding an item: another consumer processes it, and the
/// stopped one, resumed, is told its claim was lost.
#[test]
fn killed_and_paused_consumers_lose_their_items_to_others() {
    support::init_tracing();
    let zk = ZkServer::start();
    let dir = tempfile::tempdir().unwrap();
    let stop = dir.path().join("STOP");
    let connect = zk.connect_string();
    let q = "/crash/q";
    const SESSION_MS: u64 = 1500;
    let consume = |hold_ms: u64| -> Vec<String> {
        vec![
            "consume".into(),
            "--stop-file".into(),
            stop.display().to_string(),
            "--hold-ms".into(),
            hold_ms.to_string(),
        ]
    };
    let rt = runtime();
    let s = rt.block_on(session(&connect, 4000));
    let producer = queue(&s, q);
    let put = |data: &str| rt.block_on(producer.put(data.as_bytes())).unwrap();

    // SIGKILL while holding.
    let victim = load::Proc::start(
        dir.path(),
        "killed",
        &connect,
        q,
        SESSION_MS,
        &consume(60_000),
    );
    let item = put("kill-me");
    wait_lines(&victim, Duration::from_secs(20), "claim", |l| {
        l.iter().any(|l| l.starts_with(&format!("C {item} ")))
    });
    victim.signal(libc::SIGKILL);
    let killed_at = std::time::Instant::now();
    let rescuer = load::Proc::start(dir.path(), "rescuer", &connect, q, SESSION_MS, &consume(0));
    wait_lines(
        &rescuer,
        Duration::from_secs(20),
        "completion of the killed consumer's item",
        |l| l.iter().any(|l| l.starts_with(&format!("D {item} "))),
    );
    let rescued_after = killed_at.elapsed();

    // SIGSTOP past the session while holding.
    let paused = load::Proc::start(
        dir.path(),
        "paused",
        &connect,
        q,
        SESSION_MS,
        &consume(2_000),
    );
    // The rescuer would take the item first: stop it while the paused one claims.
    rescuer.signal(libc::SIGSTOP);
    let item2 = put("pause-me");
    wait_lines(&paused, Duration::from_secs(20), "claim", |l| {
        l.iter().any(|l| l.starts_with(&format!("C {item2} ")))
    });
    paused.signal(libc::SIGSTOP);
    let paused_at = std::time::Instant::now();
    rescuer.signal(libc::SIGCONT);
    wait_lines(
        &rescuer,
        Duration::from_secs(20),
        "completion of the paused consumer's item",
        |l| l.iter().any(|l| l.starts_with(&format!("D {item2} "))),
    );
    let taken_over_after = paused_at.elapsed();
    paused.signal(libc::SIGCONT);
    wait_lines(
        &paused,
        Duration::from_secs(20),
        "the lost claim reported",
        |l| l.iter().any(|l| l.starts_with(&format!("L {item2} "))),
    );
    let lost_line = paused
        .lines()
        .into_iter()
        .find(|l| l.starts_with(&format!("L {item2} ")))
        .unwrap();
    assert!(
        lost_line.contains("lost with its ZooKeeper session"),
        "{lost_line}"
    );
    assert!(
        !paused
            .lines()
            .iter()
            .any(|l| l.starts_with(&format!("D {item2} "))),
        "the paused consumer must not complete an item it no longer holds"
    );
    fs::write(&stop, b"").unwrap();
    let mut rescuer = rescuer;
    let mut paused = paused;
    assert!(rescuer.wait_exit(Duration::from_secs(20)));
    assert!(paused.wait_exit(Duration::from_secs(20)));
    let report = load::check(&[], &[&victim, &rescuer, &paused]);
    assert!(
        report.violations.iter().all(|v| v.contains("never put")),
        "{:#?}",
        report.violations
    );
    eprintln!(
        "crash: killed consumer's item completed by another {rescued_after:?} after SIGKILL; paused consumer's item {taken_over_after:?} after SIGSTOP (session {SESSION_MS} ms); resumed consumer told: {lost_line}"
    );
    drop(producer);
    rt.block_on(async move { drop(s) });
}

/// The head of the line SIGSTOPped while the queue is empty: a put still reaches the waiter
/// behind it, once the paused head's session expired (its waiter node vanishes).
#[test]
fn a_paused_head_of_the_line_delays_idle_consumers_only_until_its_session_ends() {
    support::init_tracing();
    let zk = ZkServer::start();
    let dir = tempfile::tempdir().unwrap();
    let stop = dir.path().join("STOP"); // never written: the processes are killed
    let connect = zk.connect_string();
    let q = "/line/q";
    const SESSION_MS: u64 = 1500;
    let rt = runtime();
    let s = rt.block_on(session(&connect, 4000));
    let producer = queue(&s, q);
    rt.block_on(producer.put(b"create")).unwrap();
    rt.block_on(async {
        producer
            .claim(Some(Duration::ZERO))
            .await
            .unwrap()
            .unwrap()
            .complete()
            .await
    })
    .unwrap();
    let admin = rt
        .block_on(zookeeper_client::Client::connect(&connect))
        .unwrap();
    let waiters = |n: usize| {
        support::wait_until(Duration::from_secs(20), || {
            rt.block_on(admin.list_children("/line/q/waiters"))
                .unwrap()
                .len()
                == n
        })
    };
    // Claims that wait long: a consumer polling with short claims would try the queue
    // directly at each call and hide the line.
    let args = vec![
        "consume".into(),
        "--stop-file".into(),
        stop.display().to_string(),
        "--claim-ms".into(),
        "60000".into(),
    ];
    let head = load::Proc::start(dir.path(), "head", &connect, q, SESSION_MS, &args);
    assert!(waiters(1), "the first consumer joined the line");
    let behind = load::Proc::start(dir.path(), "behind", &connect, q, SESSION_MS, &args);
    assert!(waiters(2), "the second consumer joined behind it");
    head.signal(libc::SIGSTOP);
    let paused_at = std::time::Instant::now();
    let item = rt.block_on(producer.put(b"for whoever waits")).unwrap();
    wait_lines(&behind, Duration::from_secs(20), "the claim", |l| {
        l.iter().any(|l| l.starts_with(&format!("C {item} ")))
    });
    let delay = paused_at.elapsed();
    assert!(!head
        .lines()
        .iter()
        .any(|l| l.starts_with(&format!("C {item} "))));
    eprintln!("line: with the head paused, the waiter behind it got the item {delay:?} after the put (session {SESSION_MS} ms)");
    assert!(
        delay >= Duration::from_millis(SESSION_MS / 2),
        "the item went to the waiter behind the paused head only after that head's session ended"
    );
    // The processes are killed on drop (their claims wait for a minute).
    drop((head, behind));
    drop((producer, admin));
    rt.block_on(async move { drop(s) });
}

/// A release the item refuses (its ACL lets the consumer read it but not write it, a
/// deployment whose producer and consumers have different identities): the release fails with
/// `NotAuthorized` naming the item, and the item is handed back (its lock released), so that a
/// consumer that may write it can have it. Before, the release said `SessionLost` ("its lock is
/// gone or not ours") and left the lock on the consumer's live session: no one else could claim
/// the item while it lived.
#[test]
fn a_release_the_item_refuses_names_it_and_hands_the_item_back() {
    support::init_tracing();
    let zk = ZkServer::start();
    let rt = runtime();
    rt.block_on(async {
        let s = session(&zk.connect_string(), 4000).await;
        let q = WorkQueue::open(s.clone().into_zk(), "/acl/q", opts("consumer-a")).unwrap();
        let name = q.put(b"job").await.unwrap();
        let item = format!("/acl/q/items/{name}");
        let admin = zookeeper_client::Client::connect(&zk.connect_string())
            .await
            .unwrap();
        let read_only = [zookeeper_client::Acl::new(
            zookeeper_client::Permission::READ,
            zookeeper_client::AuthId::anyone(),
        )];
        admin.set_acl(&item, &read_only, None).await.unwrap();

        let zero = Some(Duration::ZERO);
        let claim = q.claim(zero).await.unwrap().expect("the item");
        let err = claim.release().await.unwrap_err();
        assert!(
            matches!(&err, ZooidError::NotAuthorized { path, .. } if path == &item),
            "{err}"
        );
        // Another consumer gets the item: its lock was released.
        let s2 = session(&zk.connect_string(), 4000).await;
        let b = WorkQueue::open(s2.clone().into_zk(), "/acl/q", opts("consumer-b")).unwrap();
        let again = b
            .claim(Some(Duration::from_secs(5)))
            .await
            .unwrap()
            .expect("the item handed back, its lock released");
        assert_eq!(again.data(), b"job");
        // A complete needs only the parent's DELETE: it goes through.
        again.complete().await.unwrap();
        assert!(q.items().await.unwrap().is_empty());
    });
}
