//! Leader election on a group node, with Active / Paused / Inactive states and fencing tokens.
//!
//! Candidates are `EPHEMERAL_SEQUENTIAL` children of the group node, named
//! `_c_<32 hex marker>-n_<sequence>`; the lowest sequence leads, and each other candidate watches
//! only its immediate predecessor (a `getData` watch), so a leader change wakes one candidate.
//!
//! - [`LeaderState::Active`]: this candidate's node is the lowest, the session is connected, and
//!   the quorum confirmed it within the lease ([`Election::lease`]: a `sync` answered by the
//!   ensemble's leader, renewed every sixth of the session timeout).
//! - [`LeaderState::Paused`]: it is the lowest, but the session is suspended (disconnected; it may
//!   still be alive on the servers) or the lease ran out unconfirmed (e.g. its server is cut off
//!   from the quorum). [`PausePolicy`] says what happens on reconnection.
//! - [`LeaderState::Inactive`]: anything else (waiting in line, session lost, resigned, closed).
//!
//! The session layer ([`crate::zk::session`]) is the only interpreter of the connection: a session
//! it declares `Lost` (expired, or unreachable for its whole negotiated timeout) makes the
//! candidate Inactive, and the candidate rejoins on the next session by itself unless it
//! resigned or was dropped. The leadership does not wait for [`SessionStatus::stop_acting`]:
//! it is Paused from the first moment of a suspension, and Active ends at the lease (timed from
//! the quorum's confirmation, not from when anything was noticed) whatever request is in flight.
//!
//! **Joining without a lost-reply race.** The candidate node is created by one `multi`:
//! `[setData(group, its data unchanged, expected version V), create(candidate)]`. When the reply
//! is lost the candidate syncs and re-reads the group node's version: still `V` means neither
//! copy has applied yet and the identical multi is sent again (both copies expect `V`, so at most
//! one of them can ever apply); a version past `V` means the first copy's fate is fixed (it
//! applied atomically with the bump, or it never will), and looking for the marker among the
//! children, owned by our session, decides. See docs/RECIPES.md.
//!
//! **Fencing token.** The leader's token is `epoch << 31 | sequence`: the group node's epoch
//! (its creation second, or a larger `zooid-epoch=N` in its data) and the candidate's sequence
//! number. It strictly increases from one leader to the next, also across a wipe of ZooKeeper
//! (the group node is created again, later). The epoch is read when the candidate starts to
//! lead, so a raise by [`bump_epoch`] (after restoring ZooKeeper from an older snapshot) counts
//! for every leader after it. [`Election::fenced`] runs writes as one
//! `multi` whose first op checks the leader's own candidate node, so they apply only while it
//! still exists, i.e. while this candidate still leads on a live session.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::{Result, ZooidError};
use crate::zk::{
    ConnectionState, Create, EventKind, Failure, Mode, Multi, MultiFailed, OpResult, ReadOn,
    SessionStatus, Stat, Verdict, WriteOn, Zk, ZooKeeperExt,
};

/// Whether this candidate leads, from its own point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LeaderState {
    /// We lead, our session is connected, and the quorum confirmed it within the lease.
    Active,
    /// We lead, but the session is suspended (disconnected; it may still be alive) or the lease
    /// ran out unconfirmed.
    Paused,
    /// We do not lead: waiting in line, session lost, resigned or closed.
    Inactive,
}

impl LeaderState {
    /// A lowercase name for logs and bindings (`active`, `paused`, `inactive`).
    pub fn as_str(self) -> &'static str {
        match self {
            LeaderState::Active => "active",
            LeaderState::Paused => "paused",
            LeaderState::Inactive => "inactive",
        }
    }
}

/// What a leader does when its session is suspended (the seed's "paused" state).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PausePolicy {
    /// Keep the leadership through a suspension: on reconnection with the same session the
    /// candidate is Active again with the same token (at-least-one-leader applications). It
    /// becomes Inactive only when the session layer declares the session lost.
    #[default]
    Keep,
    /// A suspension ends the leadership (at-most-one-leader applications): on reconnection the
    /// candidate reports Inactive, gives up its node and rejoins at the back of the line (a new,
    /// higher token if it leads again). While Paused, fenced writes are refused locally.
    Stop,
}

impl PausePolicy {
    /// A lowercase name (`keep`, `stop`).
    pub fn as_str(self) -> &'static str {
        match self {
            PausePolicy::Keep => "keep",
            PausePolicy::Stop => "stop",
        }
    }
}

impl std::str::FromStr for PausePolicy {
    type Err = ZooidError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "keep" => Ok(PausePolicy::Keep),
            "stop" => Ok(PausePolicy::Stop),
            other => Err(ZooidError::InvalidArgument(format!(
                "pause policy {other:?}: expected keep or stop"
            ))),
        }
    }
}

/// The longest candidate name, in bytes.
pub const MAX_NAME_BYTES: usize = 256;
/// The most candidate data, in bytes (it lives in the candidate node with the name).
pub const MAX_DATA_BYTES: usize = 64 * 1024;

/// How a candidate joins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElectionOptions {
    /// The candidate's name, shown to observers: non-empty, at most [`MAX_NAME_BYTES`], no
    /// newline or NUL.
    pub name: String,
    /// Opaque data shown to observers (e.g. an address), at most [`MAX_DATA_BYTES`].
    pub data: Vec<u8>,
    /// What a suspension of the session means for a leader.
    pub on_pause: PausePolicy,
}

impl ElectionOptions {
    /// Options with a name, no data and the [`PausePolicy::Keep`] policy.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            data: Vec::new(),
            on_pause: PausePolicy::Keep,
        }
    }
}

/// A snapshot of one candidate's view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElectionStatus {
    /// Active, Paused or Inactive.
    pub state: LeaderState,
    /// The fencing token of our leadership while Active or Paused (`epoch << 31 | sequence`);
    /// `None` while Inactive.
    pub token: Option<i64>,
    /// The session generation the candidacy belongs to (see [`crate::zk::SessionStatus`]).
    pub session_generation: u64,
    /// Our candidate node's path, while we have one.
    pub node: Option<String>,
    /// How many watch notifications (predecessor gone or changed) this candidate received since
    /// it joined: one per succession step in front of it, never one per change of the group.
    pub watch_notifications: u64,
    /// How many times this candidate became leader (each term has a new token).
    pub terms: u64,
    /// True once the candidacy ended for good (resigned, dropped or the session closed); the
    /// state is then Inactive and stays so.
    pub closed: bool,
}

impl ElectionStatus {
    fn initial(generation: u64) -> Self {
        Self {
            state: LeaderState::Inactive,
            token: None,
            session_generation: generation,
            node: None,
            watch_notifications: 0,
            terms: 0,
            closed: false,
        }
    }

    /// Whether `other` differs in what [`Election::wait_change`] reports: state, token or
    /// closedness.
    pub fn same_state(&self, other: &ElectionStatus) -> bool {
        self.state == other.state && self.token == other.token && self.closed == other.closed
    }
}

/// Who leads a group, as an observer sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderInfo {
    /// The leader's candidate name.
    pub name: String,
    /// The leader's candidate data.
    pub data: Vec<u8>,
    /// The leader's fencing token (`epoch << 31 | sequence`).
    pub token: i64,
    /// The leader's candidate node path.
    pub node: String,
}

/// State shared between the handle and the driver task.
#[derive(Debug, Default)]
struct Shared {
    /// Our leadership, when we hold one: the node and its session generation.
    leading: Option<Leading>,
    /// What the candidacy could not clean up when it closed, described (our candidate node
    /// whose delete gave up, or `GROUP/_c_<marker>-n_* (a create in doubt)`): a node of ours may
    /// still be there. A background task goes on with it and clears this once done.
    left: Option<String>,
}

#[derive(Clone, Debug)]
struct Leading {
    node: String,
    generation: u64,
}

/// A candidacy in one group's election. Dropping it leaves the group (the candidate node is
/// deleted in the background); [`Election::resign`] does so and waits.
///
/// Our candidate node is never left behind silently while the session lives: a delete that
/// fails is retried, a rejoin (after [`PausePolicy::Stop`] ended a leadership) waits until the
/// old node is gone rather than line up behind it, and a closed candidacy whose delete gave up
/// leaves the node to a background task that deletes it until it is gone or the session ends
/// ([`Election::resign`] reports it).
pub struct Election {
    group: String,
    name: String,
    policy: PausePolicy,
    zk: Zk,
    shared: Arc<Mutex<Shared>>,
    status: watch::Receiver<ElectionStatus>,
    lease: watch::Receiver<Option<tokio::time::Instant>>,
    close: watch::Sender<bool>,
    driver: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Election {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Election")
            .field("group", &self.group)
            .field("name", &self.name)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

impl Election {
    /// Joins the election of `group` (an absolute node path, created with its parents when
    /// missing) on the session `zk`. Returns once the group node exists; the candidate node is
    /// created by a background task on the session's runtime, and the state starts Inactive.
    ///
    /// Errors: `InvalidArgument` (path, empty or multi-line name, or one with a NUL), `TooLarge` (name or data),
    /// `ConnectionLost`/`Timeout` when the group node cannot be ensured, `Closed` when the session
    /// is closed. Must be called inside a tokio runtime.
    pub async fn join(zk: &Zk, group: &str, options: ElectionOptions) -> Result<Election> {
        validate_group(group)?;
        validate_options(&options)?;
        let group = group.trim_end_matches('/').to_string();
        if zk.status().state == ConnectionState::Closed {
            return Err(ZooidError::Closed {
                what: "ZooKeeper session".into(),
            });
        }
        ensure_group(zk, &group).await?;
        let generation = zk.generation();
        let (status_tx, status_rx) = watch::channel(ElectionStatus::initial(generation));
        let (close_tx, close_rx) = watch::channel(false);
        let (lease_tx, lease_rx) = watch::channel(None);
        let shared = Arc::new(Mutex::new(Shared::default()));
        let driver = Driver {
            zk: zk.clone(),
            sess_rx: zk.subscribe(),
            group: group.clone(),
            payload: encode_payload(&options.name, &options.data),
            policy: options.on_pause,
            shared: shared.clone(),
            status: status_tx,
            lease: lease_tx,
            close: close_rx,
            carried: None,
        };
        let handle = tokio::spawn(driver.run());
        Ok(Election {
            group,
            name: options.name,
            policy: options.on_pause,
            zk: zk.clone(),
            shared,
            status: status_rx,
            lease: lease_rx,
            close: close_tx,
            driver: Mutex::new(Some(handle)),
        })
    }

    /// The group node's path.
    pub fn group(&self) -> &str {
        &self.group
    }

    /// The candidate's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The pause policy the candidate joined with.
    pub fn policy(&self) -> PausePolicy {
        self.policy
    }

    /// The latest status.
    pub fn status(&self) -> ElectionStatus {
        self.status.borrow().clone()
    }

    /// The current state (shorthand for `status().state`).
    pub fn state(&self) -> LeaderState {
        self.status.borrow().state
    }

    /// The fencing token while Active or Paused, else `None`.
    pub fn token(&self) -> Option<i64> {
        self.status.borrow().token
    }

    /// Until when (local monotonic clock) the ensemble confirmed this leadership: the send time
    /// of the next-to-last `sync` the quorum answered while we led, plus half the negotiated
    /// session timeout. `None` when not leading or not confirmed twice yet. Active never
    /// outlives it: when it passes unconfirmed the state turns Paused. The servers cannot
    /// expire the session before that send time plus a whole session timeout, so a process
    /// that stops acting by the lease plus less than half a session stops before anyone else
    /// can lead; docs/RECIPES.md gives the exact window and its assumptions.
    pub fn lease(&self) -> Option<tokio::time::Instant> {
        *self.lease.borrow()
    }

    /// How long the lease ([`Election::lease`]) still runs from now; `None` when there is none
    /// or it has passed. A leader that acts only while this is `Some` acts only while the
    /// quorum's latest confirmation counts.
    pub fn lease_remaining(&self) -> Option<Duration> {
        self.lease()
            .map(|until| until.saturating_duration_since(tokio::time::Instant::now()))
            .filter(|left| !left.is_zero())
    }

    /// A receiver of every change of [`Election::lease`] (renewed about six times per session
    /// timeout while leading).
    pub fn subscribe_lease(&self) -> watch::Receiver<Option<tokio::time::Instant>> {
        self.lease.clone()
    }

    /// A receiver of every status change (a slow receiver may miss intermediate statuses, never
    /// the latest one).
    pub fn subscribe(&self) -> watch::Receiver<ElectionStatus> {
        self.status.clone()
    }

    /// Waits until the status differs from `last_seen` in state, token or closedness (see
    /// [`ElectionStatus::same_state`]) and returns the new status; returns at once when it
    /// already differs. `Timeout` when nothing changed within `timeout`; `Closed` when the
    /// candidacy has ended and `last_seen` already is its final (closed) status.
    pub async fn wait_change(
        &self,
        last_seen: &ElectionStatus,
        timeout: Duration,
    ) -> Result<ElectionStatus> {
        let mut rx = self.status.clone();
        let wait = async {
            rx.wait_for(|s| !s.same_state(last_seen))
                .await
                .map(|s| s.clone())
        };
        match tokio::time::timeout(timeout, wait).await {
            Ok(Ok(status)) => Ok(status),
            // The candidacy ended and nothing will change any more.
            Ok(Err(_)) => {
                let status = self.status();
                if status.same_state(last_seen) {
                    Err(self.closed_error())
                } else {
                    Ok(status)
                }
            }
            Err(_) => Err(ZooidError::Timeout {
                what: format!("{}: waiting for an election state change", self.group),
                after: timeout,
            }),
        }
    }

    /// Waits until this candidate is Active and returns its fencing token. `Timeout` when it
    /// is not within `timeout`; `Closed` when the candidacy ended (resigned, dropped, session
    /// closed).
    pub async fn await_leadership(&self, timeout: Duration) -> Result<i64> {
        let mut rx = self.status.clone();
        let wait = async {
            rx.wait_for(|s| s.closed || (s.state == LeaderState::Active && s.token.is_some()))
                .await
                .map(|s| s.clone())
        };
        match tokio::time::timeout(timeout, wait).await {
            Ok(Ok(status)) if !status.closed => status.token.ok_or_else(|| self.closed_error()),
            Ok(_) => Err(self.closed_error()),
            Err(_) => Err(ZooidError::Timeout {
                what: format!("{}: waiting for leadership", self.group),
                after: timeout,
            }),
        }
    }

    /// Leaves the group: stops the candidacy, deletes our candidate node and waits for that
    /// (bounded by twice the session timeout). The status ends Inactive with `closed`, also
    /// when it fails. Harmless when repeated.
    ///
    /// Errors: `Store` when the candidacy could not be cleaned up within the bound: its `path`
    /// is the candidate node (its delete gave up), or `GROUP/_c_<marker>-n_* (a create in
    /// doubt)` when the create of our node was still unresolved. A node of ours may still be
    /// there, and while it is, it heads the line (nobody else leads). A background task goes
    /// on with it until done, or its session is gone (the session layer gave it up, or the
    /// application dropped its last handle on the session); calling `resign` again returns
    /// `Ok` once that happened.
    pub async fn resign(&self) -> Result<()> {
        let _ = self.close.send(true);
        let driver = lock(&self.driver).take();
        if let Some(driver) = driver {
            let _ = driver.await;
        }
        // A concurrent call took the driver: the driver's last word is the closed status.
        let mut status = self.status.clone();
        let _ = status.wait_for(|s| s.closed).await;
        match lock(&self.shared).left.clone() {
            None => Ok(()),
            Some(path) => Err(ZooidError::Store {
                path,
                reason: "resign could not clean up the candidacy in time: a candidate node of ours may still be there and head the line; the cleanup goes on in the background until done or its session is gone".into(),
            }),
        }
    }

    fn closed_error(&self) -> ZooidError {
        ZooidError::Closed {
            what: format!("election candidacy {:?} in {}", self.name, self.group),
        }
    }
}

impl Drop for Election {
    fn drop(&mut self) {
        // The driver sees the close signal, deletes the candidate node and ends by itself.
        let _ = self.close.send(true);
    }
}

/// Locks a mutex, taking the value of a poisoned one (it is only replaced whole).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

fn validate_group(group: &str) -> Result<()> {
    let trimmed = group.trim_end_matches('/');
    if !group.starts_with('/')
        || trimmed.is_empty()
        || trimmed
            .split('/')
            .skip(1)
            .any(|part| part.is_empty() || part == "." || part == "..")
    {
        return Err(ZooidError::InvalidArgument(format!(
            "election group {group:?}: expected an absolute ZooKeeper path other than /"
        )));
    }
    crate::zk::path::check_chars("election group", group)
}

fn validate_options(options: &ElectionOptions) -> Result<()> {
    // A NUL would end the name early for a C caller of `zooid_election_leader`.
    if options.name.is_empty() || options.name.contains(['\n', '\0']) {
        return Err(ZooidError::InvalidArgument(format!(
            "candidate name {:?}: must be non-empty, on one line, and without a NUL",
            options.name
        )));
    }
    if options.name.len() > MAX_NAME_BYTES {
        return Err(ZooidError::TooLarge {
            what: "candidate name".into(),
            bytes: options.name.len(),
            limit: MAX_NAME_BYTES,
        });
    }
    if options.data.len() > MAX_DATA_BYTES {
        return Err(ZooidError::TooLarge {
            what: "candidate data".into(),
            bytes: options.data.len(),
            limit: MAX_DATA_BYTES,
        });
    }
    Ok(())
}

/// The candidate node's content: the name, a newline, then the data.
fn encode_payload(name: &str, data: &[u8]) -> Vec<u8> {
    let mut payload = Vec::with_capacity(name.len() + 1 + data.len());
    payload.extend_from_slice(name.as_bytes());
    payload.push(b'\n');
    payload.extend_from_slice(data);
    payload
}

fn decode_payload(payload: &[u8]) -> (String, Vec<u8>) {
    match payload.iter().position(|&b| b == b'\n') {
        Some(i) => (
            String::from_utf8_lossy(&payload[..i]).into_owned(),
            payload[i + 1..].to_vec(),
        ),
        None => (String::from_utf8_lossy(payload).into_owned(), Vec::new()),
    }
}

/// Creates the group node and its parents when missing (idempotent, so retried freely).
async fn ensure_group(zk: &Zk, group: &str) -> Result<()> {
    let deadline = tokio::time::Instant::now() + 2 * zk.request_limit();
    loop {
        let made = zk.create_all(zk.generation(), group, None).await;
        match made {
            Ok(())
            | Err(Failure {
                verdict: Verdict::NodeExists,
                ..
            }) => return Ok(()),
            Err(Failure {
                verdict: Verdict::Unknown | Verdict::Expired,
                message,
            }) if tokio::time::Instant::now() < deadline => {
                tracing::debug!(err = %message, group, "ensuring the group node; retrying");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(failure) => return Err(crate::zk::to_zooid(&failure, group, zk.options())),
        }
    }
}

mod driver;
mod epoch;
mod fenced;
mod lease;
mod line;
mod observe;

use driver::Driver;
pub use epoch::bump_epoch;
pub use fenced::{FencedOp, FencedResult};
pub use observe::leader;

#[cfg(test)]
mod tests;
