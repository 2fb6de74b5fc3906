//! One ZooKeeper session per process, shared by the ID service and every recipe, and the one
//! place its state is interpreted (as Curator's connection-state listener is).
//!
//! [`Session`] owns the current `zookeeper_client::Client` and a monitor task that turns the
//! client's raw states into a [`ConnectionState`] every part observes through
//! [`Session::subscribe`]:
//!
//! - [`ConnectionState::Connected`]: a server answers; the session, its ephemeral nodes and its
//!   watches are alive.
//! - [`ConnectionState::Suspended`]: disconnected. The session may still be alive on the
//!   servers, or may already have expired there: nobody can tell from here.
//! - [`ConnectionState::Lost`]: the session is gone, so are its ephemeral nodes. Either a server
//!   said so (expired, auth failed), or no server answered for the negotiated session timeout
//!   (a client cut off from every server never hears "expired"; the servers expire it after that
//!   long without a heartbeat, so the local timer can only fire later than the real expiry), or
//!   the servers refused to resume the session (after a loss of their data they have not seen
//!   the client's last zxid, so they turn it away until a fresh session is opened). The session
//!   then opens a new session by itself and reports `Connected` with the next
//!   [`SessionStatus::generation`].
//! - [`ConnectionState::Closed`]: the application dropped its last handle.
//!
//! States are published on a `tokio::sync::watch` channel: a slow observer may miss an
//! intermediate state, never the latest one, and a change of `generation` always tells it that
//! the session it knew was lost, even if it never saw `Lost` itself.
//!
//! `Lost` means "stop acting", not "can no longer land": the client's own timer, or the crate's
//! `Expired` after one, is a guess, and the servers may still hold the session (and apply a
//! request of it still in the network). So every generation given up is also *confirmed gone*
//! with the servers, in the background ([`super::fate`]: reattach with its id and password and
//! close it, or be refused because it expired). [`Session::confirm_gone`] waits for that word;
//! every resolution of a write whose reply was lost on a given-up generation asks it before it
//! reads (docs/DESIGN.md, "When a write's fate is decided").
//!
//! Timeouts are the one the servers negotiated ([`SessionStatus::timeout`]), never the one
//! requested.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use zookeeper_client::{Acls, Client, Error as ZkError, SessionInfo, SessionState};

use super::classify::is_gone;
use super::connect::connector_for;
use super::fate::{confirm_dead_over, Confirmed, InDoubt, Unconfirmed};
use super::options::{ConnectOptions, ServerVersion};
use super::version::{open_client, probe_persistent_watches};
use crate::error::{Result, ZooidError};

mod lease;
mod monitor;

pub use super::status::{ConnectionState, LeaseGuard, SessionStatus};

/// The client of one generation.
#[derive(Clone)]
struct Current {
    client: Client,
    generation: u64,
    /// Connections of the generations before this one: [`SessionStatus::connection`] is this
    /// plus the client's own connection number (`Client::connection`, counted by the client's
    /// session task as it connects, before it takes any request on the new connection).
    offset: u64,
}

struct Inner {
    connect: String,
    options: ConnectOptions,
    /// The servers' release the first session found (or the options named); later sessions
    /// are opened for it without asking again.
    server_version: ServerVersion,
    /// Whether the servers have persistent watches, once asked.
    persistent_watches: tokio::sync::OnceCell<bool>,
    current: RwLock<Current>,
    status: watch::Sender<SessionStatus>,
    /// Serializes the replacement of a lost session, so it is opened once.
    replacing: tokio::sync::Mutex<()>,
    /// Sessions declared lost so far (each `Lost` transition, once per generation).
    losses: AtomicU64,
    /// Which connection is caught up for reads (src/zk/catch_up.rs).
    catch_up: super::catch_up::CatchUp,
    /// The servers' word on each given-up generation (`None` while it is being asked).
    confirmations: Mutex<HashMap<u64, watch::Receiver<Option<Verdict>>>>,
    /// Closed when the last [`Session`] handle is dropped: stops the confirmations.
    alive: watch::Receiver<()>,
    /// The confirmations through the quorum (src/zk/session/lease.rs).
    lease: Mutex<lease::Lease>,
    /// How many [`LeaseGuard`]s are held: the lease is renewed while there is one.
    lease_holders: std::sync::atomic::AtomicUsize,
    /// Woken when the lease is renewed or a hold ends (the monitor looks again).
    lease_renewed: Arc<tokio::sync::Notify>,
    /// Woken when a hold starts (the renewal starts).
    renew_wake: Arc<tokio::sync::Notify>,
    /// The runtime the session was opened on: its client's tasks and the monitor run there,
    /// and so does the background cleanup of handles dropped elsewhere.
    runtime: tokio::runtime::Handle,
}

/// The outcome of confirming a given-up generation's end: how, or why not.
type Verdict = std::result::Result<Confirmed, String>;

/// How long one round of reattach attempts may take before the next one starts (the
/// confirmation goes on until the servers answer or the session layer is dropped).
const CONFIRM_ROUND: Duration = Duration::from_secs(10);

/// A shared ZooKeeper session (cheap to clone; every clone is the same session).
///
/// Open one per process and hand it to the ID service and the recipes. Dropping the last clone
/// closes the session and stops its monitor.
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
    /// Dropped with the last handle, which stops the monitor task and ends [`Session::ended`].
    alive: Arc<watch::Sender<()>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("connect", &self.inner.connect)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Which connection is caught up for reads.
    pub(crate) fn catch_up_state(&self) -> &super::catch_up::CatchUp {
        &self.inner.catch_up
    }

    /// Opens a session on the ensemble a ZooKeeper connect string names
    /// (`host:port,...[/chroot]`). Must be called inside a tokio runtime; the monitor task runs
    /// on it.
    pub async fn connect(connect: &str, options: &ConnectOptions) -> Result<Session> {
        if connect.trim().is_empty() {
            return Err(ZooidError::InvalidArgument(
                "empty ZooKeeper connect string".into(),
            ));
        }
        if let Some((user, _)) = &options.digest_auth {
            if user.is_empty() || user.contains(':') {
                return Err(ZooidError::InvalidArgument(
                    "digest auth user must be non-empty without ':'".into(),
                ));
            }
        }
        let (client, server_version) =
            open_client(connect, options, options.server_version).await?;
        // There is one: the client was just opened on it.
        let runtime = tokio::runtime::Handle::try_current().map_err(|err| ZooidError::Store {
            path: String::new(),
            reason: format!("a ZooKeeper session needs a tokio runtime: {err}"),
        })?;
        let status = SessionStatus {
            state: ConnectionState::Connected,
            generation: 1,
            session_id: client.session_id().0,
            timeout: client.session_timeout(),
            requested: options.session_timeout,
            connection: client.connection(),
            stop_acting: false,
        };
        let (status_tx, _) = watch::channel(status);
        let (alive_tx, alive_rx) = watch::channel(());
        let inner = Arc::new(Inner {
            connect: connect.to_string(),
            options: options.clone(),
            server_version,
            persistent_watches: tokio::sync::OnceCell::new(),
            current: RwLock::new(Current {
                client,
                generation: 1,
                offset: 0,
            }),
            status: status_tx,
            replacing: tokio::sync::Mutex::new(()),
            losses: AtomicU64::new(0),
            catch_up: super::catch_up::CatchUp::default(),
            confirmations: Mutex::new(HashMap::new()),
            alive: alive_rx.clone(),
            lease: Mutex::new(lease::Lease::of(1)),
            lease_holders: std::sync::atomic::AtomicUsize::new(0),
            lease_renewed: Arc::new(tokio::sync::Notify::new()),
            renew_wake: Arc::new(tokio::sync::Notify::new()),
            runtime,
        });
        metrics::gauge!("zooid_session_generation").set(1.0);
        publish_timeouts(&status);
        tokio::spawn(monitor::monitor(Arc::downgrade(&inner), alive_rx.clone()));
        tokio::spawn(lease::renew(Arc::downgrade(&inner), alive_rx));
        tracing::info!(session = %format_args!("{:#x}", status.session_id), timeout = ?status.timeout, requested = ?status.requested, %server_version, "ZooKeeper session opened");
        Ok(Session {
            inner,
            alive: Arc::new(alive_tx),
        })
    }

    /// The connect string the session was opened with.
    pub fn connect_string(&self) -> &str {
        &self.inner.connect
    }

    /// The options the session was opened with.
    pub fn options(&self) -> &ConnectOptions {
        &self.inner.options
    }

    /// The tokio runtime the session was opened on, where its client's tasks run.
    pub fn runtime(&self) -> &tokio::runtime::Handle {
        &self.inner.runtime
    }

    /// The servers' release the session's requests suit: [`ServerVersion::V3_4`] or
    /// [`ServerVersion::V3_5`] (3.5 or later), as detected when the session opened or as
    /// [`ConnectOptions::server_version`] named it; never `Detect`.
    pub fn server_version(&self) -> ServerVersion {
        self.inner.server_version
    }

    /// Whether the servers support persistent watches (`addWatch`, ZooKeeper 3.6 and later).
    /// Asked once, on a separate short-lived session (3.5 drops the connection that sends an
    /// unknown request); `false` without asking on 3.4.
    pub async fn persistent_watches(&self) -> Result<bool> {
        let inner = &self.inner;
        inner
            .persistent_watches
            .get_or_try_init(|| {
                probe_persistent_watches(&inner.connect, &inner.options, inner.server_version)
            })
            .await
            .copied()
    }

    /// The client of the current generation, and that generation. Requests made on it belong
    /// to that session; after a loss the next call returns the new session's client.
    pub(crate) fn client(&self) -> (Client, u64) {
        let current = self.inner.read_current();
        (current.client, current.generation)
    }

    /// [`Session::client`], with the connections of the generations before it: the client's
    /// connection number `n` is [`SessionStatus::connection`] `offset + n`.
    pub(crate) fn client_offset(&self) -> (Client, u64, u64) {
        let current = self.inner.read_current();
        (current.client, current.generation, current.offset)
    }

    /// How many sessions were declared lost since this one was opened (each generation counts
    /// once, whether a server expired it, it stayed unreachable for its whole timeout, or a
    /// request reported it gone). Also counted as `zooid_session_losses_total`.
    pub fn losses(&self) -> u64 {
        self.inner.losses.load(Ordering::Relaxed)
    }

    /// The latest status.
    pub fn status(&self) -> SessionStatus {
        *self.inner.status.borrow()
    }

    /// A receiver of every status change (the latest one is always delivered).
    pub fn subscribe(&self) -> watch::Receiver<SessionStatus> {
        self.inner.status.subscribe()
    }

    /// Waits until the session is `Connected`, for at most `timeout`; returns the status then.
    pub async fn wait_connected(&self, timeout: Duration) -> Result<SessionStatus> {
        let mut rx = self.subscribe();
        let wait = async {
            rx.wait_for(|s| s.state == ConnectionState::Connected)
                .await
                .map(|status| *status)
        };
        match tokio::time::timeout(timeout, wait).await {
            Ok(Ok(status)) => Ok(status),
            Ok(Err(_)) => Err(ZooidError::ConnectionLost {
                category: self.inner.connect.clone(),
                reason: "the session was closed".into(),
            }),
            Err(_) => Err(ZooidError::Timeout {
                what: format!("connecting to {}", self.inner.connect),
                after: timeout,
            }),
        }
    }

    /// The ACLs zooid gives the nodes it creates without an explicit ACL: creator-only on an
    /// authenticated session (SASL or digest), open otherwise.
    pub fn default_acls(&self) -> Acls<'static> {
        super::acl::default_zk_acls(&self.inner.options)
    }

    /// How long one request may go unanswered before it counts as lost: the session timeout
    /// the servers negotiated for the current generation, at least 500 ms.
    pub fn request_limit(&self) -> Duration {
        self.status().timeout.max(Duration::from_millis(500))
    }

    /// Runs one request made on the client of `generation`, bounded by
    /// [`Session::request_limit`] (no reply in time: `ZkError::Timeout`, an outcome as unknown as
    /// a connection loss). A request that finds its session gone (expired, closed) reports that
    /// generation lost, so the next request runs on a new session.
    pub async fn run<T>(
        &self,
        generation: u64,
        request: impl std::future::Future<Output = std::result::Result<T, ZkError>>,
    ) -> std::result::Result<T, ZkError> {
        let outcome = self.bounded(request).await;
        if let Err(err) = &outcome {
            if is_gone(err) {
                self.report_lost(generation, &err.to_string()).await;
            }
        }
        outcome
    }

    /// Runs one request bounded by [`Session::request_limit`]; no reply in time is
    /// `ZkError::Timeout` (as unknown an outcome as a connection loss). A request sent on a
    /// client whose session the servers refuse (after a wipe) may otherwise never complete.
    pub async fn bounded<T>(
        &self,
        request: impl std::future::Future<Output = std::result::Result<T, ZkError>>,
    ) -> std::result::Result<T, ZkError> {
        tokio::time::timeout(self.request_limit(), request)
            .await
            .unwrap_or(Err(ZkError::Timeout))
    }

    /// Whether the session of `generation` is given up: replaced by a newer one, or declared
    /// lost or closed. Its ephemeral nodes are gone, or may go at any moment.
    pub fn is_gone_generation(&self, generation: u64) -> bool {
        let status = self.status();
        status.generation != generation
            || matches!(
                status.state,
                ConnectionState::Lost | ConnectionState::Closed
            )
    }

    /// Tells the session layer that a request of `generation` failed because its session is
    /// gone (expired, closed); returns once a newer generation is in place, or the replacement
    /// failed for now (then the monitor keeps trying).
    pub async fn report_lost(&self, generation: u64, why: &str) {
        self.inner.replace(generation, why).await;
    }

    /// Waits, until `deadline`, for the servers' word that no request of the session of
    /// `generation` can apply any more: the session expired, or zooid reattached to it and closed
    /// it (src/zk/fate.rs). Every given-up generation is being confirmed in the background from
    /// the moment it is given up, so this usually returns within milliseconds of the servers
    /// being reachable.
    ///
    /// After `Ok`, a `sync` and a read on any session tell whether a request of that generation
    /// applied: it did before the end, or it never will. `Err(InDoubt::Live)` for the live
    /// generation (not given up: read on it, its requests are ordered);
    /// `Err(InDoubt::Unconfirmed)` when the servers did not answer before `deadline`: the
    /// outcome of the generation's lost replies is in doubt, and the caller reports it so.
    pub async fn confirm_gone(
        &self,
        generation: u64,
        deadline: Instant,
    ) -> std::result::Result<Confirmed, InDoubt> {
        if !self.is_gone_generation(generation) {
            return Err(InDoubt::Live { generation });
        }
        let unconfirmed = |reason: String| InDoubt::Unconfirmed { generation, reason };
        let rx = self
            .inner
            .confirmations
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&generation)
            .cloned();
        let Some(mut rx) = rx else {
            return Err(unconfirmed(
                "the session layer holds no record of it (it was never given up)".into(),
            ));
        };
        let verdict = {
            let wait = rx.wait_for(Option::is_some);
            match tokio::time::timeout_at(deadline, wait).await {
                Ok(Ok(verdict)) => verdict.clone(),
                Ok(Err(_)) => Some(Err("the session layer was closed".into())),
                Err(_) => Some(Err("no server answered before the caller's deadline".into())),
            }
        };
        match verdict {
            Some(Ok(confirmed)) => Ok(confirmed),
            Some(Err(reason)) => Err(unconfirmed(reason)),
            None => Err(unconfirmed("no answer".into())),
        }
    }
}

/// The requested and negotiated session timeouts as gauges (seconds).
fn publish_timeouts(status: &SessionStatus) {
    metrics::gauge!("zooid_session_timeout_seconds", "timeout" => "negotiated")
        .set(status.timeout.as_secs_f64());
    metrics::gauge!("zooid_session_timeout_seconds", "timeout" => "requested")
        .set(status.requested.as_secs_f64());
}

/// A handle on a [`Session`] that does not keep it open: a background task that must stop
/// when the application closes the session (its ephemeral nodes then go with it) holds this
/// between its requests, and [`WeakSession::upgrade`]s it for each one.
#[derive(Clone)]
pub(crate) struct WeakSession {
    inner: std::sync::Weak<Inner>,
    alive: std::sync::Weak<watch::Sender<()>>,
}

impl WeakSession {
    /// The session, while the application still holds a handle on it; `None` once the last
    /// one was dropped.
    pub(crate) fn upgrade(&self) -> Option<Session> {
        Some(Session {
            inner: self.inner.upgrade()?,
            alive: self.alive.upgrade()?,
        })
    }
}

impl Session {
    /// A handle that does not keep the session open (see [`WeakSession`]).
    pub(crate) fn downgrade(&self) -> WeakSession {
        WeakSession {
            inner: Arc::downgrade(&self.inner),
            alive: Arc::downgrade(&self.alive),
        }
    }

    /// Resolves once the last handle of this session is dropped. A background task that holds a
    /// ZooKeeper client of its own (a watch that may never fire) selects on it, so that it never
    /// keeps the session open on the servers after the application closed it.
    pub(crate) fn ended(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut alive = self.alive.subscribe();
        async move { while alive.changed().await.is_ok() {} }
    }

    /// Releases this handle. When it is the last one, the client closes the session on the
    /// servers: the future resolves once they answered the close (or the session had already
    /// ended), so its ephemeral nodes are gone and the servers no longer count it. With other
    /// handles alive (a recipe opened on the same session) it resolves at once and the session
    /// stays open.
    pub fn close(self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let last = Arc::strong_count(&self.inner) == 1;
        let watcher = last.then(|| self.client().0.state_watcher());
        drop(self);
        async move {
            let Some(mut watcher) = watcher else { return };
            let mut state = watcher.peek_state();
            while !state.is_terminated() {
                state = watcher.changed().await;
            }
        }
    }
}
