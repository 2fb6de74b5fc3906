//! Nothing a handle remembers survives a put in doubt. A put whose outcome was unknown for a
//! while (a lost reply resolved later, a deadline exit, a dropped future) may have moved the
//! handle's put guard; the next put on the handle must not trust the guard's old version. Each
//! test does two puts on one handle, the second one's reply lost too, then takes every item and
//! checks that every put reported done is in the queue under the name it returned.

use std::time::Duration;

use super::{opts, session, support};
use support::{op, runtime, FaultProxy, ResetPoint, ZkServer};
use zooid::queue::WorkQueue;

/// An address nothing listens on.
fn dead_addr() -> std::net::SocketAddr {
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    dead.local_addr().unwrap()
}

/// Takes every item of the queue (claim, complete): `(name, data)` in put order.
async fn take_all(q: &WorkQueue) -> Vec<(String, String)> {
    let mut taken = Vec::new();
    while let Some(claim) = q.claim(Some(Duration::ZERO)).await.unwrap() {
        taken.push((
            claim.item().to_string(),
            String::from_utf8_lossy(claim.data()).into_owned(),
        ));
        claim.complete().await.unwrap();
    }
    taken
}

/// Every put that returned Ok is in `taken` under the name it returned.
fn assert_every_ok_put_is_there(
    reported: &[(&str, zooid::Result<String>)],
    taken: &[(String, String)],
) {
    for (data, out) in reported {
        if let Ok(name) = out {
            assert!(
                taken.iter().any(|(n, d)| n == name && d == data),
                "put {data:?} reported Ok({name:?}) but that item is not in the queue; taken: {taken:?}"
            );
        }
    }
}

/// Two consecutive puts of one handle, each one's connection reset after its multi reached the
/// server (a tenth of a second of faults in all). The first applied and is found by its marker;
/// the second's multi must not be sent with the guard version the handle had before the first.
#[test]
fn two_puts_on_one_handle_whose_replies_are_lost_are_both_in_the_queue() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    rt.block_on(async {
        let path = "/pd1/q";
        let sp = session(&proxy.connect_string(), 6000).await;
        let sc = session(&zk.connect_string(), 6000).await;
        let producer = WorkQueue::open(sp.clone().into_zk(), path, opts("producer")).unwrap();
        let consumer = WorkQueue::open(sc.clone().into_zk(), path, opts("consumer")).unwrap();
        let mut reported = vec![("warm", producer.put(b"warm").await)];
        let resets = proxy.resets();
        for data in ["first", "second"] {
            proxy.reset_on(op::MULTI, "/pd1/q/guards/", ResetPoint::AfterRequest);
            reported.push((data, producer.put(data.as_bytes()).await));
        }
        assert_eq!(
            proxy.resets() - resets,
            2,
            "guard: both puts' multis reached the server and their replies were lost"
        );
        let taken = take_all(&consumer).await;
        eprintln!("lost replies on two puts: reported {reported:?}; taken {taken:?}");
        assert_every_ok_put_is_there(&reported, &taken);
        assert!(
            reported.iter().all(|(_, out)| out.is_ok()),
            "a put resolved on its live session: {reported:?}"
        );
    });
}

/// A put that gives up at its deadline with its multi applied on the server (reply lost, no
/// server reachable until the deadline): `OutcomeUnknown`. The next put of the handle, its own
/// reply lost, must not be reported done unless its item is there.
#[test]
fn a_put_after_a_put_that_timed_out_in_doubt_is_in_the_queue() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    rt.block_on(async {
        let path = "/pd2/q";
        let sp = session(&proxy.connect_string(), 6000).await;
        let sc = session(&zk.connect_string(), 6000).await;
        let mut options = opts("producer");
        options.op_timeout = Duration::from_millis(800);
        let producer = WorkQueue::open(sp.clone().into_zk(), path, options).unwrap();
        let consumer = WorkQueue::open(sc.clone().into_zk(), path, opts("consumer")).unwrap();
        let mut reported = vec![("warm", producer.put(b"warm").await)];

        // The multi reaches the server, its reply is lost, and no server can be reached again
        // for 1.5 s, past the put's deadline but well within the session timeout (new
        // connections go nowhere; the open one carries the put until its reply is lost). The
        // reply to the first read of the guard after that is lost too.
        let upstream = proxy.upstream();
        proxy.set_upstream(dead_addr());
        let dropped = proxy.dropped_replies();
        proxy.drop_reply_to(op::MULTI, "/pd2/q/guards/");
        proxy.drop_reply_to(op::SYNC, "/pd2/q/guards/");
        let (put, ()) = tokio::join!(producer.put(b"timed out"), async {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            proxy.set_upstream(upstream);
        });
        proxy.clear_faults();
        assert!(
            proxy.dropped_replies() > dropped,
            "guard: the first put's reply was lost"
        );
        assert!(
            matches!(put, Err(zooid::ZooidError::OutcomeUnknown { .. })),
            "guard: the first put gave up in doubt: {put:?}"
        );
        reported.push(("timed out", put));
        let losses = sp.losses();

        let resets = proxy.resets();
        proxy.reset_on(op::MULTI, "/pd2/q/guards/", ResetPoint::AfterRequest);
        reported.push(("after", producer.put(b"after").await));
        assert_eq!(
            proxy.resets() - resets,
            1,
            "guard: the second put's reply was lost"
        );
        let taken = take_all(&consumer).await;
        assert_eq!(
            sp.losses(),
            losses,
            "guard: the producer's session lived on"
        );
        eprintln!("put after a deadline exit in doubt: reported {reported:?}; taken {taken:?}");
        assert_every_ok_put_is_there(&reported, &taken);
        assert!(
            taken.iter().any(|(_, d)| d == "timed out"),
            "guard: the put given up in doubt had applied: {taken:?}"
        );
    });
}

/// A put future dropped after its multi applied (its reply lost, no server reachable): the next put of the
/// handle, its own reply lost, must not be reported done unless its item is there.
#[test]
fn a_put_after_a_dropped_put_is_in_the_queue() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    rt.block_on(async {
        let path = "/pd3/q";
        let sp = session(&proxy.connect_string(), 6000).await;
        let sc = session(&zk.connect_string(), 6000).await;
        let producer = WorkQueue::open(sp.clone().into_zk(), path, opts("producer")).unwrap();
        let consumer = WorkQueue::open(sc.clone().into_zk(), path, opts("consumer")).unwrap();
        let mut reported = vec![("warm", producer.put(b"warm").await)];
        let admin = zookeeper_client::Client::connect(&zk.connect_string())
            .await
            .unwrap();
        let items = format!("{path}/items");

        // The put's multi applies, its reply is lost and no server can be reached again; the
        // caller drops the put then.
        let upstream = proxy.upstream();
        proxy.set_upstream(dead_addr());
        let dropped = proxy.dropped_replies();
        proxy.drop_reply_to(op::MULTI, "/pd3/q/guards/");
        let applied = async {
            while admin.list_children(&items).await.unwrap().len() < 2 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        let dropped_put = tokio::select! {
            out = producer.put(b"dropped") => Some(out),
            () = applied => None,
        };
        assert!(
            dropped_put.is_none(),
            "guard: the put was dropped while in doubt: {dropped_put:?}"
        );
        assert_eq!(
            proxy.dropped_replies(),
            dropped + 1,
            "guard: the dropped put's reply was lost"
        );
        proxy.set_upstream(upstream);

        let resets = proxy.resets();
        proxy.reset_on(op::MULTI, "/pd3/q/guards/", ResetPoint::AfterRequest);
        reported.push(("after", producer.put(b"after").await));
        assert_eq!(
            proxy.resets() - resets,
            1,
            "guard: the second put's reply was lost"
        );
        let taken = take_all(&consumer).await;
        eprintln!("put after a dropped put: reported {reported:?}; taken {taken:?}");
        assert_every_ok_put_is_there(&reported, &taken);
        assert!(
            taken.iter().any(|(_, d)| d == "dropped"),
            "guard: the dropped put had applied: {taken:?}"
        );
    });
}

/// A complete whose multi applied (its reply lost) and whose session is then given up (no server
/// reachable for longer than the session timeout) must not report `SessionLost`, whose promise
/// is "nothing was done": the item is gone. Either it is resolved once the servers confirm the
/// session's end (the item absent: done), or it reports the outcome unknown.
#[test]
fn a_complete_in_doubt_when_its_session_is_given_up_is_not_nothing_done() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    rt.block_on(async {
        let path = "/pd4/q";
        let sc = session(&proxy.connect_string(), 2000).await;
        let sp = session(&zk.connect_string(), 6000).await;
        let consumer = WorkQueue::open(sc.clone().into_zk(), path, opts("consumer")).unwrap();
        let producer = WorkQueue::open(sp.clone().into_zk(), path, opts("producer")).unwrap();
        let item = producer.put(b"x").await.unwrap();
        let claim = consumer
            .claim(Some(Duration::ZERO))
            .await
            .unwrap()
            .expect("the item");

        // The complete's multi applies, its reply is lost, and no server can be reached for
        // 3 s (the session timeout is 2 s): the session is given up with the complete in doubt.
        let upstream = proxy.upstream();
        proxy.set_upstream(dead_addr());
        let dropped = proxy.dropped_replies();
        let losses = sc.losses();
        proxy.drop_reply_to(op::MULTI, "/pd4/q/locks/");
        let (out, ()) = tokio::join!(claim.complete(), async {
            tokio::time::sleep(Duration::from_secs(3)).await;
            proxy.set_upstream(upstream);
        });
        assert_eq!(
            proxy.dropped_replies(),
            dropped + 1,
            "guard: the complete's reply was lost"
        );
        assert!(sc.losses() > losses, "guard: the session was given up");
        let items: Vec<String> = producer
            .items()
            .await
            .unwrap()
            .into_iter()
            .map(|i| i.name)
            .collect();
        eprintln!("complete in doubt, session given up: {out:?}; items {items:?}");
        assert!(
            !items.contains(&item),
            "guard: the complete applied on the server: {items:?}"
        );
        assert!(
            !matches!(out, Err(zooid::ZooidError::SessionLost { .. })),
            "complete reported SessionLost (nothing was done) but the item is completed: {out:?}"
        );
    });
}
