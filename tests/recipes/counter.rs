//! The CAS counter (seed 000) against real ZooKeeper: concurrent processes through
//! reply-dropping proxies (standalone and a 3-server ensemble), a lost reply whose session is
//! lost before it can be resolved, and bad input.
//!
//! The figures (values handed out, skipped, lost replies) are printed with `--nocapture`.

use zooid_test_support as support;

use std::net::{SocketAddr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use support::{op, runtime, session_options, FaultProxy, ZkEnsemble, ZkServer};
use zooid::counter::{Counter, MARKER_PREFIX};
use zooid::{IdRange, RetryPolicy, Session, ZooidError};

/// A raw `zookeeper_client` connection, independent of zooid.
async fn raw(connect: &str) -> zookeeper_client::Client {
    zookeeper_client::Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .connect(connect)
        .await
        .unwrap()
}

/// Reads the counter node as the seed's code does: 8 bytes, `ByteBuffer.getLong()`.
async fn read_raw(connect: &str, path: &str) -> i64 {
    let client = raw(connect).await;
    client.sync(path).await.unwrap();
    let (data, _) = client.get_data(path).await.unwrap();
    assert_eq!(data.len(), 8, "the counter node must hold exactly 8 bytes");
    i64::from_be_bytes(data.try_into().unwrap())
}

/// Builds examples/counterload.rs once, in this test binary's target dir and profile.
fn counterload_binary() -> PathBuf {
    support::example_binary("counterload")
}

/// What all the worker processes reported.
#[derive(Default, Debug)]
struct Ledger {
    handed: Vec<IdRange>,
    skipped: Vec<IdRange>,
    errors: Vec<String>,
    lost: u64,
    resends: u64,
    applied: u64,
    not_applied: u64,
    lookalikes: u64,
}

impl Ledger {
    fn parse(&mut self, out: &str) {
        for line in out.lines() {
            let mut words = line.split_whitespace();
            match words.next() {
                Some(kind @ ("ok" | "skip")) => {
                    let start: i64 = words.next().unwrap().parse().unwrap();
                    let end: i64 = words.next().unwrap().parse().unwrap();
                    let range = IdRange::new(start, end).unwrap();
                    if kind == "ok" {
                        self.handed.push(range);
                    } else {
                        self.skipped.push(range);
                    }
                }
                Some("stats") => {
                    for word in words {
                        let (key, value) = word.split_once('=').unwrap();
                        let value: u64 = value.parse().unwrap();
                        match key {
                            "lost" => self.lost += value,
                            "resends" => self.resends += value,
                            "applied" => self.applied += value,
                            "not_applied" => self.not_applied += value,
                            "lookalikes" => self.lookalikes += value,
                            _ => {}
                        }
                    }
                }
                Some("err") => self.errors.push(line.to_string()),
                _ => panic!("unexpected workload line {line:?}"),
            }
        }
    }

    fn count(ranges: &[IdRange]) -> u64 {
        ranges.iter().map(IdRange::len).sum()
    }

    /// No value handed out twice; handed out and skipped values are disjoint and together are
    /// exactly `initial + 1 ..= last`.
    fn check(&self, initial: i64, last: i64) {
        let mut all: Vec<(IdRange, &str)> = self
            .handed
            .iter()
            .map(|r| (*r, "handed out"))
            .chain(self.skipped.iter().map(|r| (*r, "skipped")))
            .collect();
        all.sort();
        let mut next = initial + 1;
        for (range, what) in &all {
            assert!(
                range.start() >= next,
                "{what} {range} overlaps a value handed out or skipped before (expected from {next})"
            );
            assert_eq!(
                range.start(),
                next,
                "values {next}..{} were neither handed out nor reported skipped",
                range.start() - 1
            );
            next = range.end() + 1;
        }
        assert_eq!(
            next - 1,
            last,
            "the counter's value is the last value accounted for"
        );
        assert_eq!(
            Self::count(&self.handed) + Self::count(&self.skipped),
            last.abs_diff(initial),
            "handed out + skipped == final - initial"
        );
    }
}

/// Runs `processes` workload processes against `connect` and collects their ledgers.
fn run_workload(
    connect: &str,
    path: &str,
    processes: usize,
    threads: usize,
    calls: usize,
) -> Ledger {
    let bin = counterload_binary();
    let children: Vec<_> = (0..processes)
        .map(|_| {
            let mut cmd = Command::new(&bin);
            cmd.args(["--connect", connect, "--path", path])
                .args(["--threads", &threads.to_string()])
                .args(["--calls", &calls.to_string()])
                .args(["--max-n", "5", "--session-timeout-ms", "4000"])
                .env("RUST_LOG", "zooid=error")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit());
            // SAFETY: prctl and getppid are async-signal-safe. The worker dies with the test.
            unsafe {
                let parent = libc::getpid();
                cmd.pre_exec(move || {
                    libc::prctl(
                        libc::PR_SET_PDEATHSIG,
                        libc::SIGKILL as libc::c_ulong,
                        0,
                        0,
                        0,
                    );
                    if libc::getppid() != parent {
                        libc::_exit(1);
                    }
                    Ok(())
                });
            }
            cmd.spawn().expect("start counterload")
        })
        .collect();
    let mut ledger = Ledger::default();
    for child in children {
        let out = child.wait_with_output().expect("wait for counterload");
        assert!(out.status.success(), "counterload failed: {:?}", out.status);
        ledger.parse(&String::from_utf8_lossy(&out.stdout));
    }
    ledger
}

fn print_figures(name: &str, ledger: &Ledger, dropped: u64, initial: i64, last: i64) {
    eprintln!(
        "counter figures [{name}]: calls ok={} values handed out={} skipped={} ({} ranges); \
         replies dropped by the proxy={dropped}; lost replies seen={} resolved applied={} \
         not applied={} (of which the next version held our exact bytes: {}) resends={}; \
         errors={}; counter {initial} -> {last}",
        ledger.handed.len(),
        Ledger::count(&ledger.handed),
        Ledger::count(&ledger.skipped),
        ledger.skipped.len(),
        ledger.lost,
        ledger.applied,
        ledger.not_applied,
        ledger.lookalikes,
        ledger.resends,
        ledger.errors.len(),
    );
}

/// Three processes x three threads calling `next` through a proxy that drops 40 replies to the
/// counter's `multi`: no value is handed out twice and every value is accounted for.
#[test]
fn concurrent_next_through_lost_replies_on_a_standalone_server() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    let path = "/counter/standalone/c";
    let initial = 1000;
    rt.block_on(async {
        let session = Session::connect(&zk.connect_string(), &session_options(4000))
            .await
            .unwrap();
        Counter::new(session.into_zk(), path)
            .unwrap()
            .init(initial)
            .await
            .unwrap();
    });
    for _ in 0..40 {
        proxy.drop_reply_to(op::MULTI, path);
    }
    let ledger = run_workload(&proxy.connect_string(), path, 3, 3, 30);
    let dropped = proxy.dropped_replies();
    let last = rt.block_on(read_raw(&zk.connect_string(), path));
    print_figures("standalone", &ledger, dropped, initial, last);
    assert!(
        dropped > 0,
        "the proxy must have dropped replies to the counter's multi"
    );
    assert!(ledger.lost > 0, "the counter must have seen lost replies");
    assert!(ledger.errors.is_empty(), "errors: {:?}", ledger.errors);
    assert_eq!(ledger.handed.len(), 3 * 3 * 30 - ledger.skipped.len());
    ledger.check(initial, last);
}

/// The same against a 3-server ensemble, one dropping proxy in front of each server.
#[test]
fn concurrent_next_through_lost_replies_on_an_ensemble() {
    support::init_tracing();
    let ensemble = ZkEnsemble::start(3);
    ensemble.wait_for_quorum(Duration::from_secs(60));
    let proxies: Vec<FaultProxy> = (0..3)
        .map(|i| FaultProxy::start(ensemble.server_addr(i)))
        .collect();
    let connect = proxies
        .iter()
        .map(FaultProxy::connect_string)
        .collect::<Vec<_>>()
        .join(",");
    let rt = runtime();
    let path = "/counter/ensemble/c";
    let initial = -50;
    rt.block_on(async {
        let session = Session::connect(&ensemble.connect_string(), &session_options(4000))
            .await
            .unwrap();
        Counter::new(session.into_zk(), path)
            .unwrap()
            .init(initial)
            .await
            .unwrap();
    });
    for proxy in &proxies {
        for _ in 0..12 {
            proxy.drop_reply_to(op::MULTI, path);
        }
    }
    let ledger = run_workload(&connect, path, 3, 2, 25);
    let dropped: u64 = proxies.iter().map(FaultProxy::dropped_replies).sum();
    let last = rt.block_on(read_raw(&ensemble.connect_string(), path));
    print_figures("ensemble", &ledger, dropped, initial, last);
    assert!(
        dropped > 0,
        "the proxies must have dropped replies to the counter's multi"
    );
    assert!(ledger.errors.is_empty(), "errors: {:?}", ledger.errors);
    ledger.check(initial, last);
}

/// A free loopback address nothing listens on.
fn dead_addr() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// The reply to the counter's write is lost and the session cannot be reached again before it
/// times out: the outcome cannot be told, so the values are skipped (reported, not handed
/// out). The write did reach the server, so the counter moved past them: nobody gets them.
#[test]
fn a_lost_reply_and_a_lost_session_skip_the_values() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    let path = "/counter/lostsession/c";
    rt.block_on(async {
        let session = Session::connect(&proxy.connect_string(), &session_options(2000))
            .await
            .unwrap();
        let policy = RetryPolicy {
            deadline: Duration::from_secs(20),
            ..RetryPolicy::default()
        };
        let counter = Counter::with_policy(session.clone().into_zk(), path, policy).unwrap();
        counter.init(0).await.unwrap();
        assert_eq!(counter.next(1).await.unwrap(), IdRange::single(1));
        let generation = session.status().generation;

        // The open connection keeps its upstream; reconnects find no server.
        proxy.set_upstream(dead_addr());
        proxy.drop_reply_to(op::MULTI, path);
        let started = std::time::Instant::now();
        let err = counter.next(5).await.unwrap_err();
        assert_eq!(proxy.dropped_replies(), 1, "the fault must have happened");
        match &err {
            ZooidError::OutcomeUnknown { op, ids, .. } => {
                assert_eq!(*op, zooid::WriteOp::Next);
                assert_eq!(ids, &vec![IdRange::new(2, 6).unwrap()]);
            }
            other => panic!("expected OutcomeUnknown, got {other:?}"),
        }
        eprintln!(
            "counter figures [lost session]: values skipped=5 after {:?} (session timeout 2 s)",
            started.elapsed()
        );
        let stats = counter.stats().await;
        assert_eq!((stats.lost_replies, stats.skipped), (1, 5));

        // The server applied the write: the skipped values are consumed, never handed out.
        proxy.set_upstream(zk.addr());
        assert_eq!(read_raw(&zk.connect_string(), path).await, 6);
        session
            .wait_connected(Duration::from_secs(20))
            .await
            .unwrap();
        assert!(session.status().generation > generation, "a new session");
        assert_eq!(counter.next(2).await.unwrap(), IdRange::new(7, 8).unwrap());
        assert_eq!(counter.get().await.unwrap(), 8);
    });
}

/// One lost reply resolved on the same session: the values are handed out once, the resend path
/// and the marker path are both exercised, and at most one marker per handle stays alive.
#[test]
fn lost_replies_are_resolved_on_the_same_session() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = runtime();
    let path = "/counter/resolve/c";
    rt.block_on(async {
        let session = Session::connect(&proxy.connect_string(), &session_options(4000))
            .await
            .unwrap();
        let counter = Counter::new(session.clone().into_zk(), path).unwrap();
        counter.init(41).await.unwrap();
        for i in 0..5_i64 {
            proxy.drop_reply_to(op::MULTI, path);
            let range = counter.next(2).await.unwrap();
            assert_eq!(range, IdRange::new(42 + 2 * i, 43 + 2 * i).unwrap());
        }
        assert_eq!(proxy.dropped_replies(), 5, "every write lost its reply");
        let stats = counter.stats().await;
        assert_eq!((stats.lost_replies, stats.resolved_applied), (5, 5));
        assert_eq!(read_raw(&zk.connect_string(), path).await, 51);
        let client = raw(&zk.connect_string()).await;
        let markers: Vec<String> = client
            .list_children(path)
            .await
            .unwrap()
            .into_iter()
            .filter(|name| name.starts_with(MARKER_PREFIX))
            .collect();
        assert_eq!(markers.len(), 1, "one live marker per handle: {markers:?}");
    });
}

/// The markers under a counter node, listed by a client of its own.
async fn markers(connect: &str, path: &str) -> Vec<String> {
    let client = raw(connect).await;
    client
        .list_children(path)
        .await
        .unwrap()
        .into_iter()
        .filter(|name| name.starts_with(MARKER_PREFIX))
        .collect()
}

/// A handle opened for one `next` and dropped, over and over on one long session (the Java and
/// C pattern `counter(path)`, `next`, `close`), leaves no marker behind: each handle's marker went
/// with the handle, not with the session.
#[test]
fn handles_opened_and_dropped_on_one_session_leave_no_markers() {
    support::init_tracing();
    let zk = ZkServer::start();
    let rt = runtime();
    let path = "/counter/handles/c";
    rt.block_on(async {
        let session = Session::connect(&zk.connect_string(), &session_options(4000))
            .await
            .unwrap();
        let zk_handle = session.clone().into_zk();
        Counter::new(zk_handle.clone(), path).unwrap().init(0).await.unwrap();
        for i in 0..50_i64 {
            let counter = Counter::new(zk_handle.clone(), path).unwrap();
            assert_eq!(counter.next(1).await.unwrap(), IdRange::single(i + 1));
            // The handle is dropped here.
        }
        let mut left = markers(&zk.connect_string(), path).await;
        for _ in 0..50 {
            if left.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            left = markers(&zk.connect_string(), path).await;
        }
        assert!(
            left.is_empty(),
            "{} markers stayed after 50 handles were dropped, on a session still open",
            left.len()
        );
        // A handle still open keeps its marker (its next write deletes it).
        let kept = Counter::new(zk_handle.clone(), path).unwrap();
        assert_eq!(kept.next(1).await.unwrap(), IdRange::single(51));
        assert_eq!(markers(&zk.connect_string(), path).await.len(), 1);
        drop(session);
    });
}

/// The counter deleted and made again at a higher value (a wipe and a restore) between a
/// handle's writes: the handle's next write is planned on the restored node, never written on
/// the old one's version.
#[test]
fn a_handle_writes_the_restored_counter_only_after_reading_it() {
    support::init_tracing();
    let zk = ZkServer::start();
    let rt = runtime();
    let path = "/counter/restored/c";
    rt.block_on(async {
        let session = Session::connect(&zk.connect_string(), &session_options(4000))
            .await
            .unwrap();
        let counter = Counter::new(session.clone().into_zk(), path).unwrap();
        counter.init(1000).await.unwrap();
        assert_eq!(counter.next(10).await.unwrap(), IdRange::new(1001, 1010).unwrap());
        let client = raw(&zk.connect_string()).await;
        for marker in markers(&zk.connect_string(), path).await {
            client.delete(&format!("{path}/{marker}"), None).await.unwrap();
        }
        client.delete(path, None).await.unwrap();
        let acl = zookeeper_client::CreateMode::Persistent
            .with_acls(zookeeper_client::Acls::anyone_all());
        client.create(path, &2000_i64.to_be_bytes(), &acl).await.unwrap();
        assert_eq!(counter.next(10).await.unwrap(), IdRange::new(2001, 2010).unwrap());
        assert_eq!(read_raw(&zk.connect_string(), path).await, 2010);
        drop(session);
    });
}

/// Bad input: nothing is written, and the errors are typed.
#[test]
fn bad_input_is_refused_and_nothing_is_written() {
    support::init_tracing();
    let zk = ZkServer::start();
    let rt = runtime();
    rt.block_on(async {
        let session = Session::connect(&zk.connect_string(), &session_options(4000))
            .await
            .unwrap();
        let client = raw(&zk.connect_string()).await;

        // Missing node.
        let missing = Counter::new(session.clone().into_zk(), "/counter/bad/missing").unwrap();
        assert!(matches!(
            missing.next(1).await,
            Err(ZooidError::NotFound { .. })
        ));
        assert!(matches!(
            missing.get().await,
            Err(ZooidError::NotFound { .. })
        ));

        // A node that is not 8 bytes: named in the error, never overwritten.
        client
            .mkdir(
                "/counter/bad",
                &zookeeper_client::CreateMode::Persistent
                    .with_acls(zookeeper_client::Acls::anyone_all()),
            )
            .await
            .unwrap();
        client
            .create(
                "/counter/bad/text",
                b"1:100\n",
                &zookeeper_client::CreateMode::Persistent
                    .with_acls(zookeeper_client::Acls::anyone_all()),
            )
            .await
            .unwrap();
        let text = Counter::new(session.clone().into_zk(), "/counter/bad/text").unwrap();
        match text.next(1).await {
            Err(ZooidError::CorruptPool { path, .. }) => assert_eq!(path, "/counter/bad/text"),
            other => panic!("expected CorruptPool, got {other:?}"),
        }
        assert!(matches!(
            text.get().await,
            Err(ZooidError::CorruptPool { .. })
        ));
        let (data, stat) = client.get_data("/counter/bad/text").await.unwrap();
        assert_eq!((data.as_slice(), stat.version), (&b"1:100\n"[..], 0));
        // Nor does it keep a child there (the anchor a first `next` makes before its read).
        let mut children = client.list_children("/counter/bad/text").await.unwrap();
        for _ in 0..50 {
            if children.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            children = client.list_children("/counter/bad/text").await.unwrap();
        }
        assert!(children.is_empty(), "children left under a node that is not a counter: {children:?}");

        // init on an existing node leaves it untouched.
        assert!(matches!(
            text.init(5).await,
            Err(ZooidError::CategoryExists { .. })
        ));
        let (data, _) = client.get_data("/counter/bad/text").await.unwrap();
        assert_eq!(data, b"1:100\n");

        // n = 0 and overflow.
        let c = Counter::new(session.clone().into_zk(), "/counter/bad/c").unwrap();
        c.init(i64::MAX - 3).await.unwrap();
        assert!(matches!(
            c.next(0).await,
            Err(ZooidError::InvalidArgument(_))
        ));
        assert!(matches!(
            c.next(4).await,
            Err(ZooidError::InvalidArgument(_))
        ));
        assert!(matches!(
            c.next(u64::MAX).await,
            Err(ZooidError::InvalidArgument(_))
        ));
        let (_, stat) = client.get_data("/counter/bad/c").await.unwrap();
        assert_eq!(stat.version, 0, "nothing written");
        assert_eq!(
            c.next(3).await.unwrap(),
            IdRange::new(i64::MAX - 2, i64::MAX).unwrap()
        );
        assert!(matches!(c.next(1).await, Err(ZooidError::Exhausted { .. })));
        assert_eq!(c.get().await.unwrap(), i64::MAX);

        // Bad paths.
        for bad in ["", "/", "relative", "/trailing/", "/app/zooid-holes"] {
            assert!(matches!(
                Counter::new(session.clone().into_zk(), bad),
                Err(ZooidError::InvalidArgument(_))
            ));
        }
    });
}

/// A node written by the seed's code (`ByteBuffer.putLong`, a plain `setData`) is read, and the
/// values the counter writes are read back by the seed's parsing, including negative values.
#[test]
fn the_seeds_format_is_read_and_written() {
    support::init_tracing();
    let zk = ZkServer::start();
    let rt = runtime();
    rt.block_on(async {
        let client = raw(&zk.connect_string()).await;
        let acl = zookeeper_client::CreateMode::Persistent
            .with_acls(zookeeper_client::Acls::anyone_all());
        client.mkdir("/counter/seed", &acl).await.unwrap();
        // The seed's node, created with an arbitrary value and advanced by a seed-style CAS.
        client
            .create("/counter/seed/c", &0x1234_i64.to_be_bytes(), &acl)
            .await
            .unwrap();
        let (_, stat) = client.get_data("/counter/seed/c").await.unwrap();
        client
            .set_data(
                "/counter/seed/c",
                &0x1235_i64.to_be_bytes(),
                Some(stat.version),
            )
            .await
            .unwrap();
        let session = Session::connect(&zk.connect_string(), &session_options(4000))
            .await
            .unwrap();
        let c = Counter::new(session.into_zk(), "/counter/seed/c").unwrap();
        assert_eq!(c.get().await.unwrap(), 0x1235);
        assert_eq!(c.next(1).await.unwrap(), IdRange::single(0x1236));
        assert_eq!(
            read_raw(&zk.connect_string(), "/counter/seed/c").await,
            0x1236
        );

        let neg = Counter::new(c.zk().clone(), "/counter/seed/neg").unwrap();
        neg.init(-3).await.unwrap();
        assert_eq!(neg.next(2).await.unwrap(), IdRange::new(-2, -1).unwrap());
        let (data, _) = client.get_data("/counter/seed/neg").await.unwrap();
        assert_eq!(data, (-1_i64).to_be_bytes());
    });
}

type Shared<T> = std::sync::Arc<std::sync::Mutex<Option<T>>>;

/// A proxy request predicate matching the first `multi` on `path`; just before that request is
/// forwarded, it has `b` (on its own, direct connection) reserve 3 values, and keeps what `b` got.
fn b_goes_first(
    b: std::sync::Arc<zooid::blocking::Counter>,
    path: &'static str,
) -> (support::MatchFn, Shared<IdRange>) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let got: Shared<IdRange> = Default::default();
    let fired = AtomicBool::new(false);
    let kept = got.clone();
    let predicate = support::MatchFn::new(move |opcode, frame| {
        let ours = opcode == op::MULTI && frame.windows(path.len()).any(|w| w == path.as_bytes());
        if ours && !fired.swap(true, Ordering::SeqCst) {
            let b = b.clone();
            let range = std::thread::spawn(move || b.next(3)).join().unwrap();
            *kept.lock().unwrap() = Some(range.unwrap());
        }
        ours
    });
    (predicate, got)
}

/// Two blocking counters on `path`: `a` through `proxy`, `b` directly to the server.
fn two_clients(
    zk: &ZkServer,
    proxy: &FaultProxy,
    path: &str,
    policy: RetryPolicy,
) -> (
    zooid::blocking::Counter,
    std::sync::Arc<zooid::blocking::Counter>,
) {
    let a = zooid::blocking::Counter::with_policy(
        zooid::blocking::open_session(&proxy.connect_string(), &session_options(4000))
            .unwrap()
            .into_zk(),
        path,
        policy,
    )
    .unwrap();
    let b = zooid::blocking::Counter::new(
        zooid::blocking::open_session(&zk.connect_string(), &session_options(4000))
            .unwrap()
            .into_zk(),
        path,
    )
    .unwrap();
    (a, std::sync::Arc::new(b))
}

/// The seed's trap, made to happen: client A reads version V and sends its write; just before
/// the write reaches the server, client B (same protocol, same n) reserves the same values and
/// writes the very bytes A would have written. A's write then fails on the version, and its reply
/// is lost. The node now holds "A's value", but A must not take it as applied: its marker is
/// absent, so A retries and gets the next values; nothing is handed out twice.
#[test]
fn an_identical_write_by_another_client_is_not_taken_for_ours() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let path = "/counter/trap/c";
    let (a, b) = two_clients(&zk, &proxy, path, RetryPolicy::default());
    a.init(0).unwrap();
    let (predicate, b_got) = b_goes_first(b, path);
    proxy.drop_reply(support::RequestMatch::Custom(predicate));
    let a_got = a.next(3).unwrap();
    assert_eq!(proxy.dropped_replies(), 1, "A's reply must have been lost");
    let b_got = b_got.lock().unwrap().expect("B ran before A's write");
    assert_eq!(b_got, IdRange::new(1, 3).unwrap());
    assert_eq!(
        a_got,
        IdRange::new(4, 6).unwrap(),
        "A retried instead of taking 1..3"
    );
    let stats = a.stats().unwrap();
    assert_eq!(
        (
            stats.lost_replies,
            stats.resolved_not_applied,
            stats.lookalikes
        ),
        (1, 1, 1),
        "{stats:?}"
    );
    assert_eq!(a.get().unwrap(), 6);
}

/// Version conflicts past the retry budget give `Contention`, and nothing is written: here A has
/// one attempt, B moves the counter right before A's write, which is then lost before reaching
/// the server (the resolution finds B's version and no marker of A's).
#[test]
fn conflicts_past_the_budget_are_contention() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let path = "/counter/contention/c";
    let policy = RetryPolicy {
        max_attempts: 1,
        ..RetryPolicy::default()
    };
    let (a, b) = two_clients(&zk, &proxy, path, policy);
    a.init(10).unwrap();
    let (predicate, b_got) = b_goes_first(b, path);
    proxy.reset_on_request(
        support::RequestMatch::Custom(predicate),
        support::ResetPoint::BeforeRequest,
    );
    match a.next(3) {
        Err(ZooidError::Contention { attempts, .. }) => assert_eq!(attempts, 1),
        other => panic!("expected Contention, got {other:?}"),
    }
    assert_eq!(proxy.resets(), 1, "the fault must have happened");
    assert_eq!(
        b_got.lock().unwrap().unwrap(),
        IdRange::new(11, 13).unwrap()
    );
    assert_eq!(a.get().unwrap(), 13, "only B's write applied");
    assert_eq!(a.stats().unwrap().resolved_not_applied, 1);
}
