//! A put whose reply is lost while a consumer claims and completes the item before the put
//! looks for it: the guard moved (the put applied), the item is gone (completed). The put must
//! report success, not put the item a second time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{opts, session, support};
use support::{op, runtime, FaultProxy, MatchFn, RequestMatch, ZkServer};
use zooid::queue::WorkQueue;

#[test]
fn a_put_whose_item_was_completed_before_the_lookup_lands_once() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    rt.block_on(async {
        let sp = session(&proxy.connect_string(), 6000).await;
        let sc = session(&zk.connect_string(), 6000).await;
        let producer = WorkQueue::open(sp.clone().into_zk(), "/pc/q", opts("producer")).unwrap();
        let consumer =
            Arc::new(WorkQueue::open(sc.clone().into_zk(), "/pc/q", opts("consumer")).unwrap());
        producer.put(b"warm").await.unwrap();

        // The consumer completes everything it gets, recording when.
        let done: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
        let worker = {
            let (consumer, done) = (consumer.clone(), done.clone());
            tokio::spawn(async move {
                while let Ok(Some(claim)) = consumer.claim(Some(Duration::from_secs(20))).await {
                    let data = String::from_utf8_lossy(claim.data()).into_owned();
                    claim.complete().await.unwrap();
                    done.lock().unwrap().push((data, Instant::now()));
                }
            })
        };
        while done.lock().unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }

        // The put's reply is lost; the first request after it is held 1.5 s in the proxy, so
        // the consumer completes the item before the put can look for it.
        let dropped = Arc::new(AtomicBool::new(false));
        let delayed = Arc::new(AtomicBool::new(false));
        let flag = dropped.clone();
        proxy.drop_reply(RequestMatch::Custom(MatchFn::new(move |opcode, frame| {
            let hit = opcode == op::MULTI && frame.windows(8).any(|w| w == b"/guards/");
            if hit {
                flag.store(true, Ordering::SeqCst);
            }
            hit
        })));
        let (flag, held) = (dropped.clone(), delayed.clone());
        proxy.drop_reply(RequestMatch::Custom(MatchFn::new(move |_, _| {
            if flag.load(Ordering::SeqCst) && !held.swap(true, Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1500));
            }
            false
        })));
        let name = producer.put(b"once").await;
        let returned = Instant::now();
        proxy.clear_faults();
        assert!(
            dropped.load(Ordering::SeqCst),
            "guard: the put's reply was dropped"
        );
        assert_eq!(proxy.dropped_replies(), 1, "guard: one reply dropped");
        assert!(
            delayed.load(Ordering::SeqCst),
            "guard: the put's lookup was delayed"
        );
        let name = name.expect("the put applied: it reports success");

        tokio::time::sleep(Duration::from_secs(2)).await;
        let completed: Vec<(String, Instant)> = done.lock().unwrap().clone();
        let once: Vec<&(String, Instant)> = completed.iter().filter(|(d, _)| d == "once").collect();
        assert!(
            once.first().is_some_and(|(_, at)| *at < returned),
            "guard: the consumer completed the item before the put returned; {completed:?}"
        );
        assert_eq!(
            once.len(),
            1,
            "the item was put once, not twice: {completed:?}"
        );
        assert!(producer.items().await.unwrap().is_empty());
        println!(
            "FIGURES queue put-consumed: put returned {name:?}; completions {:?}",
            completed.iter().map(|(d, _)| d).collect::<Vec<_>>()
        );
        worker.abort();
    });
}

/// Issue 20 finding 8: a put in doubt whose check then finds the queue full. The put's multi is
/// held in the proxy (its client sees a connection loss; the proxy keeps the server connection
/// and the session alive with pings) while another producer fills the queue; the put's check
/// finds the guard still at V and the queue full and returns `QueueFull`. The held copy is
/// then delivered: it must not land (the server closed that connection when the session
/// reattached), so `QueueFull` means "not added".
#[test]
fn queue_full_after_a_put_in_doubt_means_not_added() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    rt.block_on(async {
        let sp = session(&proxy.connect_string(), 6000).await;
        let so = session(&zk.connect_string(), 6000).await;
        let mut options = opts("held");
        options.max_items = 3;
        let producer = WorkQueue::open(sp.clone().into_zk(), "/full/q", options.clone()).unwrap();
        options.identity = Some("other".into());
        let other = WorkQueue::open(so.clone().into_zk(), "/full/q", options).unwrap();
        producer.put(b"a").await.unwrap();
        other.put(b"b").await.unwrap();

        // The next put multi of `producer` is held 2 s; the first request after it (the
        // resolution's, on the fresh connection) is delayed 1 s in the proxy while `other` fills
        // the queue.
        let held = Arc::new(AtomicBool::new(false));
        let delayed = Arc::new(AtomicBool::new(false));
        let flag = held.clone();
        proxy.hold_request_keeping_session(
            RequestMatch::Custom(MatchFn::new(move |opcode, frame| {
                let hit = opcode == op::MULTI && frame.windows(15).any(|w| w == b"/full/q/guards/");
                if hit {
                    flag.store(true, Ordering::SeqCst);
                }
                hit
            })),
            Duration::from_secs(2),
            Duration::from_millis(500),
        );
        let (flag, once) = (held.clone(), delayed.clone());
        proxy.drop_reply(RequestMatch::Custom(MatchFn::new(move |_, _| {
            if flag.load(Ordering::SeqCst) && !once.swap(true, Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1000));
            }
            false
        })));
        let fill = async {
            while !held.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            other.put(b"c").await.unwrap();
        };
        let (put, ()) = tokio::join!(producer.put(b"held"), fill);
        proxy.clear_faults();
        assert!(
            delayed.load(Ordering::SeqCst),
            "guard: the resolution was delayed"
        );
        let deliveries = proxy.wait_deliveries(1, Duration::from_secs(10)).await;
        assert_eq!(
            proxy.stats().held_requests,
            1,
            "guard: the put's multi was held"
        );
        assert_eq!(
            deliveries.len(),
            1,
            "guard: the held copy was delivered: {deliveries:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        let items: Vec<String> = {
            let mut data = Vec::new();
            for item in other.items().await.unwrap() {
                data.push(item.name);
            }
            data
        };
        match &put {
            Err(zooid::ZooidError::QueueFull { .. }) => {
                assert_eq!(
                    items.len(),
                    3,
                    "QueueFull, and the held copy did not land: {items:?}"
                );
            }
            Ok(name) => assert!(items.contains(name), "a put reported done is in the queue"),
            Err(zooid::ZooidError::OutcomeUnknown { .. }) => {}
            Err(other) => panic!("unexpected error {other:?}"),
        }
        println!(
            "FIGURES queue full-in-doubt: put -> {put:?}; items {items:?}; delivery {:?}",
            deliveries[0]
        );
    });
}
