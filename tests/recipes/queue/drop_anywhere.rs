//! A claim of the async API dropped where no runtime of the session's is current: on a plain
//! thread, or inside a runtime of the caller's that shuts down right after. The release runs on
//! the runtime the session lives on, so the item is handed out again while the session lives.

use std::time::{Duration, Instant};

use super::support::{self, session_options, ZkServer};
use zooid::blocking::{self, WorkQueue};
use zooid::queue::QueueOptions;

/// Puts one item on a queue of a session opened with the blocking API and claims it through
/// `as_async()`; returns the session (kept alive by the caller) and the claim.
fn claimed(connect: &str, path: &str) -> (zooid::Session, zooid::queue::Claim) {
    let s = blocking::open_session(connect, &session_options(4000)).unwrap();
    let q = WorkQueue::open(s.clone().into_zk(), path, QueueOptions::default()).unwrap();
    q.put(b"held").unwrap();
    let claim = blocking::block_on(q.as_async().claim(Some(Duration::ZERO)))
        .unwrap()
        .unwrap()
        .expect("the item just put");
    (s, claim)
}

/// How long a consumer on a second session waited for the item (`None`: not within 5 s).
fn handed_out_again(connect: &str, path: &str) -> Option<Duration> {
    let other = blocking::open_session(connect, &session_options(4000)).unwrap();
    let q = WorkQueue::open(other.clone().into_zk(), path, QueueOptions::default()).unwrap();
    let start = Instant::now();
    let Some(got) = q.claim(Some(Duration::from_secs(5))).unwrap() else {
        close(other);
        return None;
    };
    assert_eq!(got.data(), b"held");
    got.complete().unwrap();
    let waited = start.elapsed();
    close(other);
    Some(waited)
}

/// Drops a session inside zooid's runtime (its client's tasks live there).
fn close(s: zooid::Session) {
    blocking::block_on(async move { drop(s) }).unwrap();
}

/// Dropped on a plain thread (no runtime context at all), the claim is still released.
#[test]
fn claim_dropped_on_a_plain_thread_is_released() {
    support::init_tracing();
    let zk = ZkServer::start();
    let connect = zk.connect_string();
    let (s, claim) = claimed(&connect, "/drop/plain");
    drop(claim);
    let waited = handed_out_again(&connect, "/drop/plain");
    assert!(
        waited.is_some(),
        "a claim dropped on a plain thread was never released while its session lives"
    );
    close(s);
}

/// Dropped inside a runtime of the caller's that shuts down before its tasks run, the claim is
/// still released: its release does not run on that runtime.
#[test]
fn claim_dropped_in_a_runtime_that_shuts_down_is_released() {
    support::init_tracing();
    let zk = ZkServer::start();
    let connect = zk.connect_string();
    let (s, claim) = claimed(&connect, "/drop/other-runtime");
    let caller = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // A current-thread runtime runs no spawned task before this block returns.
    caller.block_on(async move { drop(claim) });
    drop(caller);
    let waited = handed_out_again(&connect, "/drop/other-runtime");
    assert!(
        waited.is_some(),
        "a claim dropped in a runtime that then shut down was never released while its session lives"
    );
    close(s);
}
