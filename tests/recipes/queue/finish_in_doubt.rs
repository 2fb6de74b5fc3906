//! A complete whose outcome the caller never learns, on a session that stays alive: its lock
//! must not outlive the claim. Review finding (2026-11-29): a `complete` that ended in
//! `Timeout` ("outcome unknown: the item is completed, or it will be handed out again") left its
//! lock in place, and so did a `complete` future dropped before it finished; nothing released
//! either, so the item was neither completed nor handed out again while the session lived.

use std::time::{Duration, Instant};

use super::support::{self, op, runtime, FaultProxy, ResetPoint, ZkServer};
use super::{opts, session};
use zooid::queue::{Claim, QueueOptions, WorkQueue};
use zooid::{Session, ZooidError};

/// Waits until `item` is no longer held by session `holder` (completed, or its lock released),
/// up to `within`; the holder's session must stay the one it was.
async fn wait_not_held(q: &WorkQueue, holder: &Session, item: &str, within: Duration) {
    let generation = holder.status().generation;
    let session_id = holder.status().session_id;
    let until = Instant::now() + within;
    loop {
        let listing = q.items().await.unwrap();
        let held = listing
            .iter()
            .find(|i| i.name == item)
            .and_then(|i| i.claimed_by.clone());
        match held {
            Some(by) if by.session_id == session_id => {}
            _ => break,
        }
        assert!(
            Instant::now() < until,
            "item {item} still locked by the live session {session_id:#x} after {within:?}: \
             neither completed nor handed out again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        holder.status().generation,
        generation,
        "guard: the holder's session stayed alive throughout"
    );
}

/// Puts an item through `other`, has `consumer` (on session `sc`) claim it, arms a fault with
/// `arm`, and runs `finish` on the claim; again with a new item until `finish` says its outcome
/// is the one the test needs (which only the fault can bring). Returns that item.
/// How many items a test tries before its guard says the fault never brought the outcome.
const ATTEMPTS: usize = 10;

async fn finish_under_fault<F, Fut>(
    other: &WorkQueue,
    consumer: &WorkQueue,
    proxy: &FaultProxy,
    sc: &Session,
    arm: impl Fn(&FaultProxy),
    mut finish: F,
) -> String
where
    F: FnMut(Claim) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..ATTEMPTS {
        let item = other.put(b"job").await.unwrap();
        let claim = consumer
            .claim(Some(Duration::from_secs(5)))
            .await
            .unwrap()
            .expect("the item");
        assert_eq!(claim.item(), item);
        arm(proxy);
        let wanted = finish(claim).await;
        proxy.clear_faults();
        proxy.heal();
        sc.wait_connected(Duration::from_secs(5)).await.unwrap();
        if wanted {
            return item;
        }
    }
    panic!("guard: no finish met the fault with the outcome wanted in {ATTEMPTS} items");
}

/// A complete's `multi` never reaches the server (held in a blackhole, then dropped with the
/// connection), and the complete gives up at its `op_timeout` with `Timeout`; the session
/// reconnects and lives on. The
/// claim keeps trying in the background: the item is completed (or, had the session ended,
/// handed out again) well within the session timeout.
#[test]
fn a_complete_in_doubt_on_a_live_session_is_finished_in_the_background() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    rt.block_on(async {
        let path = "/fid1/q";
        let sc = session(&proxy.connect_string(), 6000).await;
        let consumer = WorkQueue::open(
            sc.clone().into_zk(),
            path,
            QueueOptions {
                op_timeout: Duration::from_millis(1),
                ..opts("consumer")
            },
        )
        .unwrap();
        let sd = session(&zk.connect_string(), 6000).await;
        let other = WorkQueue::open(sd.clone().into_zk(), path, opts("other")).unwrap();
        let blackhole = |p: &FaultProxy| p.blackhole_then_close(Duration::from_millis(300));
        let item = finish_under_fault(&other, &consumer, &proxy, &sc, blackhole, |claim| async {
            let out = claim.complete().await;
            eprintln!("complete: {out:?}");
            // Guard: only a request lost with the connection ends in `Timeout`.
            matches!(out, Err(ZooidError::Timeout { .. }))
        })
        .await;
        wait_not_held(&other, &sc, &item, Duration::from_secs(3)).await;
        let listing = other.items().await.unwrap();
        assert!(
            listing.iter().all(|i| i.name != item),
            "the complete went on in the background and deleted the item: {listing:?}"
        );
    });
}

/// A `complete` future dropped while it waits to resend (its first `multi` lost with the
/// connection): the dropped claim is released in the background, as any claim dropped
/// unfinished, and the item is handed out again while the consumer's session lives.
#[test]
fn a_complete_dropped_unfinished_releases_its_claim() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    rt.block_on(async {
        let path = "/fid2/q";
        let sc = session(&proxy.connect_string(), 6000).await;
        let consumer = WorkQueue::open(sc.clone().into_zk(), path, opts("consumer")).unwrap();
        let sd = session(&zk.connect_string(), 6000).await;
        let other = WorkQueue::open(sd.clone().into_zk(), path, opts("other")).unwrap();
        // The caller gives up on the complete (its own timeout) while it is in doubt.
        let reset = |p: &FaultProxy| p.reset_on(op::MULTI, "locks", ResetPoint::BeforeRequest);
        let item = finish_under_fault(&other, &consumer, &proxy, &sc, reset, |claim| async {
            let resets = proxy.stats().resets;
            match tokio::time::timeout(Duration::from_millis(30), claim.complete()).await {
                // Guard: the connection was reset under the complete.
                Err(_elapsed) => proxy.stats().resets > resets,
                Ok(Ok(())) => false,
                Ok(Err(e)) => panic!("complete: {e}"),
            }
        })
        .await;
        wait_not_held(&other, &sc, &item, Duration::from_secs(3)).await;
        let again = other
            .claim(Some(Duration::from_secs(5)))
            .await
            .unwrap()
            .expect("the item of the dropped complete, handed out again");
        assert_eq!(again.item(), item);
        again.complete().await.unwrap();
    });
}
