//! A fault-injecting TCP proxy for ZooKeeper client connections.
//!
//! ```ignore
//! let zk = ZkServer::start();
//! let proxy = FaultProxy::start(zk.addr());
//! // connect the code under test to proxy.connect_string() ...
//! proxy.drop_reply_to(op::SET_DATA, "/ids/counter");   // the next setData on that path
//! // ... the write reaches the server, its reply is swallowed and the client connection is
//! // closed, so the client sees ConnectionLoss and must reconnect (through the proxy again).
//! assert_eq!(proxy.dropped_replies(), 1);
//! ```
//!
//! The proxy understands ZooKeeper's framing (4-byte big-endian length prefix; the first
//! client frame is the ConnectRequest, the first server frame the ConnectResponse; then
//! requests start with `xid: i32, opcode: i32` and replies with `xid: i32, zxid: i64, err: i32`),
//! so faults can target one request precisely and ignore pings (xid -2) and other internal
//! requests with negative xids. A connection whose bytes do not look like ZooKeeper frames
//! (e.g. a four-letter word) is passed through raw; only blackholes and closes apply to it.
//!
//! Faults armed with the methods below are one-shot and global to the proxy: the first
//! matching request on any connection consumes the fault. Several can be armed at once; they
//! are tried in the order they were armed.
//!
//! The proxy runs on its own thread with its own single-threaded tokio runtime, so it works
//! the same under `#[test]` and any `#[tokio::test]` flavor, and never stalls because the test
//! blocks. Dropping the [`FaultProxy`] stops the listener, closes every connection and joins
//! the thread.

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// ZooKeeper request opcodes (`org.apache.zookeeper.ZooDefs.OpCode`).
pub mod op {
    pub const CREATE: i32 = 1;
    pub const DELETE: i32 = 2;
    pub const EXISTS: i32 = 3;
    pub const GET_DATA: i32 = 4;
    pub const SET_DATA: i32 = 5;
    pub const GET_ACL: i32 = 6;
    pub const SET_ACL: i32 = 7;
    pub const GET_CHILDREN: i32 = 8;
    pub const SYNC: i32 = 9;
    pub const PING: i32 = 11;
    pub const GET_CHILDREN2: i32 = 12;
    pub const CHECK: i32 = 13;
    pub const MULTI: i32 = 14;
    pub const CREATE2: i32 = 15;
    pub const RECONFIG: i32 = 16;
    pub const CHECK_WATCHES: i32 = 17;
    pub const REMOVE_WATCHES: i32 = 18;
    pub const CREATE_CONTAINER: i32 = 19;
    pub const DELETE_CONTAINER: i32 = 20;
    pub const CREATE_TTL: i32 = 21;
    pub const MULTI_READ: i32 = 22;
    pub const AUTH: i32 = 100;
    pub const SET_WATCHES: i32 = 101;
    pub const SASL: i32 = 102;
    pub const GET_EPHEMERALS: i32 = 103;
    pub const GET_ALL_CHILDREN_NUMBER: i32 = 104;
    pub const SET_WATCHES2: i32 = 105;
    pub const ADD_WATCH: i32 = 106;
    pub const WHO_AM_I: i32 = 107;
    pub const CREATE_SESSION: i32 = -10;
    pub const CLOSE_SESSION: i32 = -11;

    /// Opcodes whose request body starts with the node path (a jute ustring).
    pub(crate) fn body_starts_with_path(opcode: i32) -> bool {
        matches!(
            opcode,
            CREATE
                | DELETE
                | EXISTS
                | GET_DATA
                | SET_DATA
                | GET_ACL
                | SET_ACL
                | GET_CHILDREN
                | SYNC
                | GET_CHILDREN2
                | CHECK
                | CREATE2
                | CHECK_WATCHES
                | REMOVE_WATCHES
                | CREATE_CONTAINER
                | DELETE_CONTAINER
                | CREATE_TTL
                | GET_EPHEMERALS
                | GET_ALL_CHILDREN_NUMBER
                | ADD_WATCH
        )
    }
}

/// Frames larger than this are taken as "not ZooKeeper" and the connection is passed raw.
const MAX_FRAME: usize = 64 << 20;
/// After forwarding a torn request ([`ResetPoint::MidRequest`]), wait this long before the
/// reset so the server has read the partial frame.
const TORN_FRAME_SETTLE: Duration = Duration::from_millis(50);

/// Which client request a fault applies to. Pings, the connect handshake and other requests
/// with negative xids (auth, setWatches) never match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestMatch {
    /// The next request.
    Any,
    /// The next request whose frame contains these bytes anywhere.
    Contains(Vec<u8>),
    /// The next request with this opcode whose path contains `path_contains`. For requests
    /// without a leading path (multi, multiRead), any occurrence in the body matches.
    Op { opcode: i32, path_contains: String },
    /// The next request for which the predicate, given the opcode and the whole frame (length
    /// prefix included), returns true.
    Custom(MatchFn),
}

/// `(opcode, frame) -> matches`.
pub type MatchPredicate = dyn Fn(i32, &[u8]) -> bool + Send + Sync;

/// A request predicate for [`RequestMatch::Custom`].
#[derive(Clone)]
pub struct MatchFn(pub Arc<MatchPredicate>);

impl MatchFn {
    pub fn new(f: impl Fn(i32, &[u8]) -> bool + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }
}

impl std::fmt::Debug for MatchFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MatchFn(..)")
    }
}

impl PartialEq for MatchFn {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for MatchFn {}

impl RequestMatch {
    fn matches(&self, opcode: i32, frame: &[u8]) -> bool {
        match self {
            RequestMatch::Any => true,
            RequestMatch::Contains(pattern) => contains(frame, pattern),
            RequestMatch::Custom(f) => (f.0)(opcode, frame),
            RequestMatch::Op {
                opcode: want,
                path_contains,
            } => {
                if opcode != *want {
                    return false;
                }
                let body = &frame[12..];
                if op::body_starts_with_path(opcode) {
                    if let Some(path) = leading_ustring(body) {
                        return contains(path, path_contains.as_bytes());
                    }
                }
                contains(body, path_contains.as_bytes())
            }
        }
    }
}

/// Where, relative to the matched request, both sides of the connection are reset (RST).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)]
pub enum ResetPoint {
    /// Nothing of the request reaches the server.
    BeforeRequest,
    /// The first half of the request frame reaches the server (a torn frame), then reset.
    MidRequest,
    /// The whole request reaches the server; its reply is swallowed and both sides are reset
    /// when it arrives (the server did the work, the client never hears of it).
    AfterRequest,
}

/// Coarse proxy modes, settable at any time with [`FaultProxy::set_mode`]. The one-shot ones
/// return to passing traffic once they fired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Pass everything through; clears armed faults and ends any blackhole.
    Pass,
    /// Swallow the reply to the next request (not ping), then close that client connection.
    /// Same as [`FaultProxy::drop_next_reply`].
    DropNextReply,
    /// On the next request, forward half of it, then reset both sides.
    /// Same as `reset_on_request(RequestMatch::Any, ResetPoint::MidRequest)`.
    ResetMidRequest,
    /// Stop forwarding in both directions (bytes are held, connections stay open, new
    /// connections are accepted but not connected upstream) for this long, then resume.
    Blackhole(Duration),
    /// Like `Blackhole`, but when the time is up every connection is closed instead.
    BlackholeThenClose(Duration),
}

#[derive(Clone, Debug)]
enum Fault {
    DropReply(RequestMatch),
    Reset(RequestMatch, ResetPoint),
    /// Close the client side at once, deliver the request upstream after the delay; ping the
    /// server on the held connection this often meanwhile, if set.
    Hold(RequestMatch, Duration, Option<Duration>),
    /// Forward the request, then mute every server reply (as [`FaultProxy::mute_replies`]).
    MuteFrom(RequestMatch),
}

impl Fault {
    fn request_match(&self) -> &RequestMatch {
        match self {
            Fault::DropReply(m)
            | Fault::Reset(m, _)
            | Fault::Hold(m, _, _)
            | Fault::MuteFrom(m) => m,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Blackhole {
    until: Option<Instant>,
    then_close: bool,
}

struct State {
    upstream: SocketAddr,
    faults: VecDeque<Fault>,
    blackhole: Option<Blackhole>,
    close_generation: u64,
    shutdown: bool,
    /// Server-to-client bytes are held (client-to-server bytes still flow).
    muted: bool,
    /// Connections whose first frame is a ConnectRequest naming an existing session (a
    /// reattach) are closed before anything reaches the server.
    refuse_reattach: bool,
    /// With `refuse_reattach`: only reattaches naming this session are refused.
    refuse_only: Option<i64>,
}

/// A request held by [`FaultProxy::hold_request`] and delivered to the server later, with what
/// the server answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub opcode: i32,
    pub xid: i32,
    /// When the request was held (its client connection closed).
    pub held_at: Instant,
    /// When it was written to the server (or the write failed).
    pub delivered_at: Instant,
    /// The write to the server's socket succeeded.
    pub written: bool,
    /// The error code of the server's reply to it (0: applied), or `None` when the server
    /// closed the connection or sent nothing within [`HELD_REPLY_WAIT`].
    pub reply_err: Option<i32>,
    /// The server closed the connection without replying to it.
    pub closed_by_server: bool,
}

/// How long a delivered held request waits for its reply.
pub const HELD_REPLY_WAIT: Duration = Duration::from_secs(5);

/// Counters, all since the proxy started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProxyStats {
    /// Client connections accepted.
    pub accepted: u64,
    /// Client connections currently open.
    pub open: u64,
    /// Replies swallowed by drop-reply faults (each followed by closing the connection).
    pub dropped_replies: u64,
    /// Connections reset by reset faults.
    pub resets: u64,
    /// Connections closed by `close_all` or by a blackhole that ended in closing.
    pub forced_closes: u64,
    /// Times a blackhole started.
    pub blackholes: u64,
    /// Client connections closed because the upstream could not be reached.
    pub upstream_failures: u64,
    /// Requests held by [`FaultProxy::hold_request`] (their client connection closed).
    pub held_requests: u64,
    /// Reattach attempts closed by [`FaultProxy::refuse_reattach`].
    pub refused_reattaches: u64,
}

impl ProxyStats {
    /// All faults injected: dropped replies + resets + forced closes + blackholes + held
    /// requests.
    pub fn faults_injected(&self) -> u64 {
        self.dropped_replies
            + self.resets
            + self.forced_closes
            + self.blackholes
            + self.held_requests
    }
}

#[derive(Default)]
struct Counters {
    accepted: AtomicU64,
    open: AtomicU64,
    dropped_replies: AtomicU64,
    resets: AtomicU64,
    forced_closes: AtomicU64,
    blackholes: AtomicU64,
    upstream_failures: AtomicU64,
    held_requests: AtomicU64,
    refused_reattaches: AtomicU64,
}

struct Shared {
    state: Mutex<State>,
    /// Bumped on every state change; connections and the accept loop wait on it.
    notify: watch::Sender<()>,
    counters: Counters,
    deliveries: Mutex<Vec<Delivery>>,
}

enum Gate {
    Go,
    Hold,
    Close,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn update(&self, f: impl FnOnce(&mut State)) {
        f(&mut self.state());
        self.notify.send_replace(());
    }

    /// What a connection accepted in `generation` should do now.
    fn gate(&self, generation: u64) -> Gate {
        let st = self.state();
        if st.shutdown || st.close_generation != generation {
            return Gate::Close;
        }
        match st.blackhole {
            Some(bh) if bh.until.is_none_or(|t| Instant::now() < t) => Gate::Hold,
            _ => Gate::Go,
        }
    }

    fn should_close(&self, generation: u64) -> bool {
        let st = self.state();
        st.shutdown || st.close_generation != generation
    }

    fn take_fault(&self, opcode: i32, frame: &[u8]) -> Option<Fault> {
        let mut st = self.state();
        let pos = st
            .faults
            .iter()
            .position(|f| f.request_match().matches(opcode, frame))?;
        st.faults.remove(pos)
    }

    fn start_blackhole(&self, until: Option<Instant>, then_close: bool) {
        self.update(|st| {
            if st.blackhole.is_none() {
                self.counters.blackholes.fetch_add(1, Ordering::SeqCst);
            }
            st.blackhole = Some(Blackhole { until, then_close });
        });
    }
}

/// A TCP proxy on 127.0.0.1:<free port> in front of one upstream (normally a ZooKeeper
/// server), with injectable faults. All methods take `&self` and may be called from any thread.
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl FaultProxy {
    /// Starts a proxy listening on a free 127.0.0.1 port, forwarding to `upstream` (which must
    /// be a loopback address).
    pub fn start(upstream: SocketAddr) -> FaultProxy {
        assert!(
            upstream.ip().is_loopback(),
            "FaultProxy only proxies to loopback addresses, not {upstream}"
        );
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .expect("bind proxy on 127.0.0.1:0");
        listener.set_nonblocking(true).expect("set_nonblocking");
        let addr = listener.local_addr().expect("proxy local_addr");
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                upstream,
                faults: VecDeque::new(),
                blackhole: None,
                close_generation: 0,
                shutdown: false,
                muted: false,
                refuse_reattach: false,
                refuse_only: None,
            }),
            notify: watch::Sender::new(()),
            counters: Counters::default(),
            deliveries: Mutex::new(Vec::new()),
        });
        let thread_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("fault-proxy-{}", addr.port()))
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("build proxy runtime");
                rt.block_on(accept_loop(listener, thread_shared));
                // Dropping the runtime drops every connection task and with it its sockets.
                rt.shutdown_timeout(Duration::from_secs(2));
            })
            .expect("spawn proxy thread");
        FaultProxy {
            addr,
            shared,
            thread: Some(thread),
        }
    }

    /// The proxy's listening address (127.0.0.1:PORT).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `"127.0.0.1:PORT"` of the proxy, for a ZooKeeper connect string.
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// Where new connections are forwarded.
    pub fn upstream(&self) -> SocketAddr {
        self.shared.state().upstream
    }

    /// Forward new connections to another (loopback) upstream; open connections stay as they are.
    pub fn set_upstream(&self, upstream: SocketAddr) {
        assert!(
            upstream.ip().is_loopback(),
            "FaultProxy only proxies to loopback addresses, not {upstream}"
        );
        self.shared.update(|st| st.upstream = upstream);
    }

    /// Sets a coarse [`Mode`].
    pub fn set_mode(&self, mode: Mode) {
        match mode {
            Mode::Pass => {
                self.clear_faults();
                self.heal();
            }
            Mode::DropNextReply => self.drop_next_reply(),
            Mode::ResetMidRequest => {
                self.reset_on_request(RequestMatch::Any, ResetPoint::MidRequest)
            }
            Mode::Blackhole(d) => self.blackhole_for(d),
            Mode::BlackholeThenClose(d) => self.blackhole_then_close(d),
        }
    }

    /// Arms: swallow the server's reply to the next request matching `m` (it does reach the
    /// server), then close that client connection (and its upstream connection).
    pub fn drop_reply(&self, m: RequestMatch) {
        self.shared
            .update(|st| st.faults.push_back(Fault::DropReply(m)));
    }

    /// Arms: drop the reply to the next request with `opcode` (see [`op`]) on a path containing
    /// `path_contains`, then close the client connection. The main tool for "the write
    /// happened but the client never learned it".
    pub fn drop_reply_to(&self, opcode: i32, path_contains: &str) {
        self.drop_reply(RequestMatch::Op {
            opcode,
            path_contains: path_contains.to_string(),
        });
    }

    /// Arms: drop the reply to the next request whose bytes contain `pattern` (e.g. a node
    /// path), then close the client connection.
    pub fn drop_reply_after_request_containing(&self, pattern: impl Into<Vec<u8>>) {
        self.drop_reply(RequestMatch::Contains(pattern.into()));
    }

    /// Arms: drop the reply to the next request (pings excluded), then close the connection.
    pub fn drop_next_reply(&self) {
        self.drop_reply(RequestMatch::Any);
    }

    /// Arms: on the next request matching `m`, reset (RST) both sides at `point`.
    pub fn reset_on_request(&self, m: RequestMatch, point: ResetPoint) {
        self.shared
            .update(|st| st.faults.push_back(Fault::Reset(m, point)));
    }

    /// Arms: on the next request with `opcode` on a path containing `path_contains`, reset
    /// both sides at `point`.
    pub fn reset_on(&self, opcode: i32, path_contains: &str, point: ResetPoint) {
        self.reset_on_request(
            RequestMatch::Op {
                opcode,
                path_contains: path_contains.to_string(),
            },
            point,
        );
    }

    /// Arms: on the next request matching `m`, close the client connection at once (the client
    /// sees a connection loss for it) but keep the server connection open, hold the request
    /// for `hold`, then write it to the server and wait up to [`HELD_REPLY_WAIT`] for its
    /// reply: a request that was in flight when its client gave up, arriving late on the old
    /// connection. Requests after it on that connection are lost. Blackholes do not delay the
    /// delivery. Each delivery is logged to stderr and in [`FaultProxy::deliveries`].
    pub fn hold_request(&self, m: RequestMatch, hold: Duration) {
        self.shared
            .update(|st| st.faults.push_back(Fault::Hold(m, hold, None)));
    }

    /// [`FaultProxy::hold_request`], and while the request is held the proxy pings the server
    /// every `ping_every` on the held connection (replies discarded): the session stays alive
    /// and owned by that server, as when a client's packets still arrive but its replies are
    /// lost (docs/DESIGN.md, "When a write's fate is decided" fact E), until the request is delivered.
    pub fn hold_request_keeping_session(
        &self,
        m: RequestMatch,
        hold: Duration,
        ping_every: Duration,
    ) {
        self.shared
            .update(|st| st.faults.push_back(Fault::Hold(m, hold, Some(ping_every))));
    }

    /// While set, a new connection whose ConnectRequest names an existing session (a client
    /// reattaching, not opening a new session) is closed before anything reaches the server;
    /// counted in [`ProxyStats::refused_reattaches`].
    pub fn refuse_reattach(&self, refuse: bool) {
        self.shared.update(|st| {
            st.refuse_reattach = refuse;
            st.refuse_only = None;
        });
    }

    /// [`FaultProxy::refuse_reattach`] for the reattach attempts naming `session` only; other
    /// sessions reattach through the proxy as usual. `refuse_reattach(false)` ends it.
    pub fn refuse_reattach_of(&self, session: i64) {
        self.shared.update(|st| {
            st.refuse_reattach = true;
            st.refuse_only = Some(session);
        });
    }

    /// Held requests delivered so far (see [`FaultProxy::hold_request`]), in delivery order.
    pub fn deliveries(&self) -> Vec<Delivery> {
        self.shared
            .deliveries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Waits (async, polling) until `n` held requests were delivered or `timeout` passes;
    /// returns the deliveries so far.
    pub async fn wait_deliveries(&self, n: usize, timeout: Duration) -> Vec<Delivery> {
        let deadline = Instant::now() + timeout;
        loop {
            let done = self.deliveries();
            if done.len() >= n || Instant::now() >= deadline {
                return done;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Holds every server-to-client byte (on open and new connections) until
    /// [`FaultProxy::unmute`]; client-to-server bytes still flow. The server hears the client
    /// (pings, reconnection attempts), the client hears nothing.
    pub fn mute_replies(&self) {
        self.shared.update(|st| st.muted = true);
    }

    /// Arms: forward the next request matching `m`, then hold every server-to-client byte (its
    /// reply included) as [`FaultProxy::mute_replies`] does, until [`FaultProxy::unmute`]: the
    /// client waits on that request with its connection open and hears nothing more.
    pub fn mute_replies_from(&self, m: RequestMatch) {
        self.shared
            .update(|st| st.faults.push_back(Fault::MuteFrom(m)));
    }

    /// Whether server-to-client bytes are held ([`FaultProxy::mute_replies`], or a fired
    /// [`FaultProxy::mute_replies_from`]).
    pub fn is_muted(&self) -> bool {
        self.shared.state().muted
    }

    /// Ends [`FaultProxy::mute_replies`]: held server bytes flow again.
    pub fn unmute(&self) {
        self.shared.update(|st| st.muted = false);
    }

    /// Disarms every pending one-shot fault.
    pub fn clear_faults(&self) {
        self.shared.update(|st| st.faults.clear());
    }

    /// Number of armed faults that have not fired yet.
    pub fn armed_faults(&self) -> usize {
        self.shared.state().faults.len()
    }

    /// Stops forwarding in both directions until [`FaultProxy::heal`]; connections stay open.
    pub fn blackhole(&self) {
        self.shared.start_blackhole(None, false);
    }

    /// Blackhole for `d`, then resume forwarding.
    pub fn blackhole_for(&self, d: Duration) {
        self.shared.start_blackhole(Some(Instant::now() + d), false);
    }

    /// Blackhole for `d`, then close every connection.
    pub fn blackhole_then_close(&self, d: Duration) {
        self.shared.start_blackhole(Some(Instant::now() + d), true);
    }

    /// Ends a blackhole: held bytes flow again.
    pub fn heal(&self) {
        self.shared.update(|st| st.blackhole = None);
    }

    pub fn is_blackholed(&self) -> bool {
        matches!(self.shared.state().blackhole, Some(bh) if bh.until.is_none_or(|t| Instant::now() < t))
    }

    /// Closes every open connection now (new ones are accepted as usual).
    pub fn close_all(&self) {
        self.shared.update(|st| st.close_generation += 1);
    }

    pub fn stats(&self) -> ProxyStats {
        let c = &self.shared.counters;
        ProxyStats {
            accepted: c.accepted.load(Ordering::SeqCst),
            open: c.open.load(Ordering::SeqCst),
            dropped_replies: c.dropped_replies.load(Ordering::SeqCst),
            resets: c.resets.load(Ordering::SeqCst),
            forced_closes: c.forced_closes.load(Ordering::SeqCst),
            blackholes: c.blackholes.load(Ordering::SeqCst),
            upstream_failures: c.upstream_failures.load(Ordering::SeqCst),
            held_requests: c.held_requests.load(Ordering::SeqCst),
            refused_reattaches: c.refused_reattaches.load(Ordering::SeqCst),
        }
    }

    pub fn accepted_connections(&self) -> u64 {
        self.stats().accepted
    }

    pub fn open_connections(&self) -> u64 {
        self.stats().open
    }

    pub fn dropped_replies(&self) -> u64 {
        self.stats().dropped_replies
    }

    pub fn resets(&self) -> u64 {
        self.stats().resets
    }

    pub fn faults_injected(&self) -> u64 {
        self.stats().faults_injected()
    }

    /// Waits (async, polling) until `cond(stats)` holds or `timeout` passes; returns whether it held.
    pub async fn wait_for(
        &self,
        timeout: Duration,
        mut cond: impl FnMut(&ProxyStats) -> bool,
    ) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if cond(&self.stats()) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.update(|st| st.shutdown = true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn accept_loop(listener: std::net::TcpListener, shared: Arc<Shared>) {
    let listener = TcpListener::from_std(listener).expect("register proxy listener");
    let mut rx = shared.notify.subscribe();
    // A far-away instant for the disabled timer branch.
    let never = tokio::time::Instant::now() + Duration::from_secs(365 * 24 * 3600);
    loop {
        rx.borrow_and_update();
        let deadline = {
            let st = shared.state();
            if st.shutdown {
                return;
            }
            st.blackhole.and_then(|bh| bh.until)
        };
        let wake = deadline.map_or(never, tokio::time::Instant::from_std);
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((client, _)) = accepted else { continue };
                let generation = shared.state().close_generation;
                shared.counters.accepted.fetch_add(1, Ordering::SeqCst);
                shared.counters.open.fetch_add(1, Ordering::SeqCst);
                let conn_shared = shared.clone();
                tokio::spawn(async move {
                    let _open = OpenGuard(conn_shared.clone());
                    handle_connection(conn_shared, client, generation).await;
                });
            }
            _ = tokio::time::sleep_until(wake) => {
                shared.update(|st| {
                    if let Some(bh) = st.blackhole {
                        if bh.until.is_some_and(|t| t <= Instant::now()) {
                            st.blackhole = None;
                            if bh.then_close {
                                st.close_generation += 1;
                            }
                        }
                    }
                });
            }
            _ = rx.changed() => {}
        }
    }
}

struct OpenGuard(Arc<Shared>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.counters.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What the connection loop does after handling some bytes.
enum Flow {
    Continue,
    /// Close both sides gracefully (FIN).
    Close,
    /// Reset both sides (RST).
    Reset,
    /// Close the client side; deliver this held request to the server later.
    Detach(Held),
}

/// A request held back from the server by a [`Fault::Hold`].
struct Held {
    frame: Vec<u8>,
    xid: i32,
    opcode: i32,
    hold: Duration,
    /// Ping the server on the held connection this often until the delivery.
    keepalive: Option<Duration>,
    held_at: Instant,
}

/// What to do when the server's reply with a given xid arrives.
#[derive(Clone, Copy)]
enum OnReply {
    DropAndClose,
    DropAndReset,
}

struct Conn {
    client: TcpStream,
    server: TcpStream,
    /// Client bytes not yet forwarded (an incomplete frame).
    cbuf: Vec<u8>,
    /// Server bytes not yet forwarded (an incomplete frame).
    sbuf: Vec<u8>,
    client_frames: u64,
    server_frames: u64,
    /// The stream did not look like ZooKeeper frames: forward bytes as they come.
    raw: bool,
    pending: Vec<(i32, OnReply)>,
    generation: u64,
}

async fn handle_connection(shared: Arc<Shared>, client: TcpStream, generation: u64) {
    let mut rx = shared.notify.subscribe();
    // Do not even connect upstream while blackholed.
    loop {
        rx.borrow_and_update();
        match shared.gate(generation) {
            Gate::Go => break,
            Gate::Close => {
                shared.counters.forced_closes.fetch_add(1, Ordering::SeqCst);
                return;
            }
            Gate::Hold => {
                let _ = rx.changed().await;
            }
        }
    }
    let upstream = shared.state().upstream;
    let server =
        match tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(upstream)).await {
            Ok(Ok(s)) => s,
            _ => {
                shared
                    .counters
                    .upstream_failures
                    .fetch_add(1, Ordering::SeqCst);
                return;
            }
        };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let mut conn = Conn {
        client,
        server,
        cbuf: Vec::with_capacity(64 * 1024),
        sbuf: Vec::with_capacity(64 * 1024),
        client_frames: 0,
        server_frames: 0,
        raw: false,
        pending: Vec::new(),
        generation,
    };
    let flow = conn.run(&shared, &mut rx).await;
    if let Flow::Detach(held) = flow {
        let Conn { client, server, .. } = conn;
        drop(client);
        deliver_held(&shared, server, held).await;
        return;
    }
    if let Flow::Reset = flow {
        let _ = conn.client.set_zero_linger();
        let _ = conn.server.set_zero_linger();
    }
    // Dropping `conn` closes both sockets (RST with zero linger, else FIN).
}

impl Conn {
    async fn run(&mut self, shared: &Shared, rx: &mut watch::Receiver<()>) -> Flow {
        loop {
            rx.borrow_and_update();
            match shared.gate(self.generation) {
                Gate::Close => {
                    shared.counters.forced_closes.fetch_add(1, Ordering::SeqCst);
                    return Flow::Close;
                }
                Gate::Hold => {
                    // Hold: read nothing, so bytes wait in the kernel buffers.
                    let _ = rx.changed().await;
                    continue;
                }
                Gate::Go => {}
            }
            enum Event {
                Client(std::io::Result<usize>),
                Server(std::io::Result<usize>),
                Changed,
            }
            let muted = shared.state().muted;
            let event = tokio::select! {
                r = self.client.read_buf(&mut self.cbuf) => Event::Client(r),
                r = self.server.read_buf(&mut self.sbuf), if !muted => Event::Server(r),
                _ = rx.changed() => Event::Changed,
            };
            let flow = match event {
                Event::Client(Ok(0) | Err(_)) | Event::Server(Ok(0) | Err(_)) => Flow::Close,
                Event::Client(Ok(_)) => self.on_client_bytes(shared, rx).await,
                Event::Server(Ok(_)) => self.on_server_bytes(shared, rx).await,
                Event::Changed => Flow::Continue,
            };
            match flow {
                Flow::Continue => {
                    if self.cbuf.capacity() - self.cbuf.len() < 4096 {
                        self.cbuf.reserve(64 * 1024);
                    }
                    if self.sbuf.capacity() - self.sbuf.len() < 4096 {
                        self.sbuf.reserve(64 * 1024);
                    }
                }
                other => return other,
            }
        }
    }

    async fn on_client_bytes(&mut self, shared: &Shared, rx: &mut watch::Receiver<()>) -> Flow {
        let mut out: Vec<u8> = Vec::new();
        while let Some(frame) = next_frame(&mut self.cbuf, &mut self.raw) {
            let first = self.client_frames == 0;
            self.client_frames += 1;
            // ConnectRequest: length, protocolVersion, lastZxidSeen, timeOut, sessionId, ...
            let (refuse, only) = {
                let st = shared.state();
                (st.refuse_reattach, st.refuse_only)
            };
            if first && frame.len() >= 28 && refuse {
                let session = i64::from_be_bytes(frame[20..28].try_into().unwrap_or([0; 8]));
                if session != 0 && only.is_none_or(|only| only == session) {
                    shared
                        .counters
                        .refused_reattaches
                        .fetch_add(1, Ordering::SeqCst);
                    return Flow::Close;
                }
            }
            let fault = if !first && frame.len() >= 12 {
                let xid = be_i32(&frame[4..8]);
                let opcode = be_i32(&frame[8..12]);
                if xid >= 0 {
                    shared.take_fault(opcode, &frame).map(|f| (xid, f))
                } else {
                    None
                }
            } else {
                None
            };
            match fault {
                None => out.extend_from_slice(&frame),
                Some((_, Fault::MuteFrom(_))) => {
                    out.extend_from_slice(&frame);
                    shared.update(|st| st.muted = true);
                }
                Some((xid, Fault::DropReply(_))) => {
                    out.extend_from_slice(&frame);
                    self.pending.push((xid, OnReply::DropAndClose));
                }
                Some((xid, Fault::Reset(_, ResetPoint::AfterRequest))) => {
                    out.extend_from_slice(&frame);
                    self.pending.push((xid, OnReply::DropAndReset));
                }
                Some((_, Fault::Reset(_, ResetPoint::BeforeRequest))) => {
                    if !self.send(true, &out, shared, rx).await {
                        return Flow::Close;
                    }
                    shared.counters.resets.fetch_add(1, Ordering::SeqCst);
                    return Flow::Reset;
                }
                Some((xid, Fault::Hold(_, hold, keepalive))) => {
                    if !self.send(true, &out, shared, rx).await {
                        return Flow::Close;
                    }
                    shared.counters.held_requests.fetch_add(1, Ordering::SeqCst);
                    let opcode = be_i32(&frame[8..12]);
                    return Flow::Detach(Held {
                        frame,
                        xid,
                        opcode,
                        hold,
                        keepalive,
                        held_at: Instant::now(),
                    });
                }
                Some((_, Fault::Reset(_, ResetPoint::MidRequest))) => {
                    let cut = 4 + (frame.len() - 4) / 2;
                    out.extend_from_slice(&frame[..cut]);
                    if !self.send(true, &out, shared, rx).await {
                        return Flow::Close;
                    }
                    tokio::time::sleep(TORN_FRAME_SETTLE).await;
                    shared.counters.resets.fetch_add(1, Ordering::SeqCst);
                    return Flow::Reset;
                }
            }
        }
        if self.raw {
            out.append(&mut self.cbuf);
        }
        if self.send(true, &out, shared, rx).await {
            Flow::Continue
        } else {
            Flow::Close
        }
    }

    async fn on_server_bytes(&mut self, shared: &Shared, rx: &mut watch::Receiver<()>) -> Flow {
        let mut out: Vec<u8> = Vec::new();
        while let Some(frame) = next_frame(&mut self.sbuf, &mut self.raw) {
            let first = self.server_frames == 0;
            self.server_frames += 1;
            if !first && frame.len() >= 8 && !self.pending.is_empty() {
                let xid = be_i32(&frame[4..8]);
                if let Some(pos) = self.pending.iter().position(|(x, _)| *x == xid) {
                    let (_, action) = self.pending.remove(pos);
                    // Deliver what came before the swallowed reply, then cut the connection.
                    if !self.send(false, &out, shared, rx).await {
                        return Flow::Close;
                    }
                    return match action {
                        OnReply::DropAndClose => {
                            shared
                                .counters
                                .dropped_replies
                                .fetch_add(1, Ordering::SeqCst);
                            Flow::Close
                        }
                        OnReply::DropAndReset => {
                            shared.counters.resets.fetch_add(1, Ordering::SeqCst);
                            Flow::Reset
                        }
                    };
                }
            }
            out.extend_from_slice(&frame);
        }
        if self.raw {
            out.append(&mut self.sbuf);
        }
        if self.send(false, &out, shared, rx).await {
            Flow::Continue
        } else {
            Flow::Close
        }
    }

    /// Writes `data` to the server (`to_server`) or the client; gives up (false) on a write
    /// error or when the connection is to be closed meanwhile (e.g. the peer is SIGSTOPped and
    /// its buffers are full when `close_all` comes).
    async fn send(
        &mut self,
        to_server: bool,
        data: &[u8],
        shared: &Shared,
        rx: &mut watch::Receiver<()>,
    ) -> bool {
        if data.is_empty() {
            return true;
        }
        let stream = if to_server {
            &mut self.server
        } else {
            &mut self.client
        };
        let write = stream.write_all(data);
        tokio::pin!(write);
        loop {
            tokio::select! {
                r = &mut write => return r.is_ok(),
                _ = rx.changed() => {
                    if shared.should_close(self.generation) {
                        return false;
                    }
                }
            }
        }
    }
}

/// Delivers a held request on its (still open) server connection after its hold, waits for the
/// reply to it, and logs the delivery. Gives up early when the proxy shuts down.
async fn deliver_held(shared: &Shared, mut server: TcpStream, held: Held) {
    let mut rx = shared.notify.subscribe();
    let due = tokio::time::Instant::from_std(held.held_at + held.hold);
    // A ping: length 8, xid -2, opcode 11 (its replies wait in the socket, skipped below).
    const PING: [u8; 12] = [0, 0, 0, 8, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 11];
    let mut next_ping = held
        .keepalive
        .map(|every| tokio::time::Instant::now() + every);
    loop {
        if shared.state().shutdown {
            return;
        }
        let ping_at = next_ping.unwrap_or(due).min(due);
        tokio::select! {
            _ = tokio::time::sleep_until(ping_at) => {
                if ping_at >= due {
                    break;
                }
                let _ = server.write_all(&PING).await;
                next_ping = held.keepalive.map(|every| tokio::time::Instant::now() + every);
            }
            _ = rx.changed() => {}
        }
    }
    let written = server.write_all(&held.frame).await.is_ok();
    let delivered_at = Instant::now();
    let mut reply_err = None;
    let mut closed_by_server = false;
    if written {
        let mut buf = Vec::new();
        let mut raw = false;
        let waited = tokio::time::timeout(HELD_REPLY_WAIT, async {
            loop {
                while let Some(frame) = next_frame(&mut buf, &mut raw) {
                    if frame.len() >= 20 && be_i32(&frame[4..8]) == held.xid {
                        return Ok(be_i32(&frame[16..20]));
                    }
                }
                match server.read_buf(&mut buf).await {
                    Ok(0) | Err(_) => return Err(()),
                    Ok(_) => {}
                }
            }
        })
        .await;
        match waited {
            Ok(Ok(err)) => reply_err = Some(err),
            Ok(Err(())) => closed_by_server = true,
            Err(_) => {}
        }
    }
    eprintln!(
        "fault proxy: held request xid {} opcode {} delivered after {:?}: written={written}, reply error code {reply_err:?}, closed by the server: {closed_by_server}",
        held.xid,
        held.opcode,
        delivered_at - held.held_at,
    );
    shared
        .deliveries
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Delivery {
            opcode: held.opcode,
            xid: held.xid,
            held_at: held.held_at,
            delivered_at,
            written,
            reply_err,
            closed_by_server,
        });
}

/// Takes the next complete length-prefixed frame off `buf`. Switches to raw mode (and returns
/// `None`) if the length is implausible, i.e. this is not ZooKeeper's framing.
fn next_frame(buf: &mut Vec<u8>, raw: &mut bool) -> Option<Vec<u8>> {
    if *raw || buf.len() < 4 {
        return None;
    }
    let len = be_i32(&buf[..4]);
    if len < 0 || len as usize > MAX_FRAME {
        *raw = true;
        return None;
    }
    let total = 4 + len as usize;
    if buf.len() < total {
        return None;
    }
    let rest = buf.split_off(total);
    Some(std::mem::replace(buf, rest))
}

fn be_i32(b: &[u8]) -> i32 {
    i32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// The jute ustring (i32 length + bytes) at the start of `body`.
fn leading_ustring(body: &[u8]) -> Option<&[u8]> {
    if body.len() < 4 {
        return None;
    }
    let len = be_i32(&body[..4]);
    if len < 0 || body.len() < 4 + len as usize {
        return None;
    }
    Some(&body[4..4 + len as usize])
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<FaultProxy>();
}
