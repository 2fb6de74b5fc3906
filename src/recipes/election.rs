//! Leader election on a group node, with Active / Paused / Inactive states and fencing tokens.
//!
//! Candidates are `EPHEMERAL_SEQUENTIAL` children of the group node, named
//! `_c_<32 hex marker>-n_<sequence>`; the lowest sequence leads, and each other candidate watches
//! only its immediate predecessor (a `getData` watch), so a leader change wakes one candidate.
//!
//! - [`LeaderState::Active`]: this candidate's node is the lowest and the session is connected.
//! - [`LeaderState::Paused`]: it is the lowest, but the session is suspended (disconnected; it may
//!   still be alive on the servers). [`PausePolicy`] says what happens on reconnection.
//! - [`LeaderState::Inactive`]: anything else (waiting in line, session lost, resigned, closed).
//!
//! The session layer ([`crate::zk::session`]) is the only interpreter of the connection: a session
//! it declares `Lost` (expired, or unreachable for its whole negotiated timeout) makes the
//! candidate Inactive, and the candidate rejoins on the next session by itself unless it
//! resigned or was dropped.
//!
//! **Joining without a lost-reply race.** The candidate node is created by one `multi`:
//! `[setData(group, its data unchanged, expected version V), create(candidate)]`. When the reply
//! is lost the candidate syncs and re-reads the group node's version: still `V` means neither
//! copy has applied yet and the identical multi is sent again (both copies expect `V`, so at most
//! one of them can ever apply); a version past `V` means the first copy's fate is fixed (it
//! applied atomically with the bump, or it never will), and looking for the marker among the
//! children, owned by our session, decides. See docs/RECIPES.md.
//!
//! **Fencing token.** The leader's token is its candidate node's creation zxid (`czxid`), which
//! strictly increases from one leader to the next. [`Election::fenced`] runs writes as one
//! `multi` whose first op checks the leader's own candidate node, so they apply only while it
//! still exists, i.e. while this candidate still leads on a live session.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use zookeeper_client::{Client, CreateMode, Error as ZkError, EventType, MultiWriteResult, Stat};

use crate::error::{Result, ZooidError};
use crate::zk::{Classified, ConnectionState, Multi, MultiFailed, Session, SessionStatus, Verdict};

/// Whether this candidate leads, from its own point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LeaderState {
    /// We lead and our session is connected.
    Active,
    /// We led when the session was suspended (disconnected); the session may still be alive.
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
    /// newline.
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
    /// The fencing token of our leadership while Active or Paused (our candidate node's czxid);
    /// `None` while Inactive.
    pub token: Option<i64>,
    /// The session generation the candidacy belongs to (see [`crate::SessionStatus`]).
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
    /// The leader's fencing token (its candidate node's czxid).
    pub token: i64,
    /// The leader's candidate node path.
    pub node: String,
}

/// One write of a fenced `multi` (see [`Election::fenced`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FencedOp {
    /// Create a persistent node (its parent must exist).
    Create { path: String, data: Vec<u8> },
    /// Set a node's data, at an expected version (`None`: any version).
    SetData {
        path: String,
        data: Vec<u8>,
        version: Option<i32>,
    },
    /// Delete a node, at an expected version (`None`: any version).
    Delete { path: String, version: Option<i32> },
    /// Require a node to be at this data version.
    Check { path: String, version: i32 },
}

/// The result of one [`FencedOp`], in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FencedResult {
    /// The node was created at this path.
    Created { path: String },
    /// The data was set; the node's new data version.
    Set { version: i32 },
    /// The node was deleted.
    Deleted,
    /// The check passed.
    Checked,
}

/// State shared between the handle and the driver task.
#[derive(Debug, Default)]
struct Shared {
    /// Our leadership, when we hold one: the node and its session generation.
    leading: Option<Leading>,
}

#[derive(Clone, Debug)]
struct Leading {
    node: String,
    generation: u64,
}

/// A candidacy in one group's election. Dropping it leaves the group (the candidate node is
/// deleted in the background); [`Election::resign`] does so and waits.
pub struct Election {
    group: String,
    name: String,
    policy: PausePolicy,
    session: Session,
    shared: Arc<Mutex<Shared>>,
    status: watch::Receiver<ElectionStatus>,
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
    /// missing) on `session`. Returns once the group node exists; the candidate node is created
    /// by a background task on the session's runtime, and the state starts Inactive.
    ///
    /// Errors: `InvalidArgument` (path, empty or multi-line name), `TooLarge` (name or data),
    /// `ConnectionLost`/`Timeout` when the group node cannot be ensured, `Closed` when the session
    /// is closed. Must be called inside a tokio runtime.
    pub async fn join(
        session: &Session,
        group: &str,
        options: ElectionOptions,
    ) -> Result<Election> {
        validate_group(group)?;
        validate_options(&options)?;
        let group = group.trim_end_matches('/').to_string();
        if session.status().state == ConnectionState::Closed {
            return Err(ZooidError::Closed {
                what: "ZooKeeper session".into(),
            });
        }
        ensure_group(session, &group).await?;
        let generation = session.status().generation;
        let (status_tx, status_rx) = watch::channel(ElectionStatus::initial(generation));
        let (close_tx, close_rx) = watch::channel(false);
        let shared = Arc::new(Mutex::new(Shared::default()));
        let driver = Driver {
            session: session.clone(),
            sess_rx: session.subscribe(),
            group: group.clone(),
            payload: encode_payload(&options.name, &options.data),
            policy: options.on_pause,
            shared: shared.clone(),
            status: status_tx,
            close: close_rx,
        };
        let handle = tokio::spawn(driver.run());
        Ok(Election {
            group,
            name: options.name,
            policy: options.on_pause,
            session: session.clone(),
            shared,
            status: status_rx,
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

    /// Runs `ops` as one ZooKeeper `multi` whose first op checks our own candidate node (version
    /// 0), so they apply only while we still lead on a live session. Returns one result per op.
    ///
    /// Errors: `NotLeader` when we do not lead (refused locally when we are Inactive, or Paused
    /// under [`PausePolicy::Stop`]; refused by ZooKeeper when our node is gone or our session
    /// expired): nothing was written. `Store` when one of `ops` failed (nothing was written), or
    /// when the reply was lost (the reason says the outcome is unknown). `Closed` after resign.
    pub async fn fenced(&self, ops: &[FencedOp]) -> Result<Vec<FencedResult>> {
        if *self.close.borrow() {
            return Err(self.closed_error());
        }
        let status = self.status();
        let leading = lock(&self.shared).leading.clone();
        let not_leader = |reason: &str| ZooidError::NotLeader {
            group: self.group.clone(),
            reason: reason.to_string(),
        };
        let Some(leading) = leading else {
            return Err(not_leader("this candidate does not lead"));
        };
        if self.policy == PausePolicy::Stop && status.state != LeaderState::Active {
            return Err(not_leader(
                "paused, and the stop policy ends a paused leadership",
            ));
        }
        let (client, generation) = self.session.client();
        if generation != leading.generation {
            return Err(not_leader("the session of the leadership was lost"));
        }
        let create = CreateMode::Persistent.with_acls(self.session.default_acls());
        let mut multi = Multi::new(&client);
        multi.check(&leading.node, 0);
        for op in ops {
            match op {
                FencedOp::Create { path, data } => multi.create(path, data, &create),
                FencedOp::SetData {
                    path,
                    data,
                    version,
                } => multi.set(path, data, *version),
                FencedOp::Delete { path, version } => multi.delete(path, *version),
                FencedOp::Check { path, version } => multi.check(path, *version),
            };
        }
        if let Some(refused) = multi.refused() {
            let e = &refused.error;
            return Err(ZooidError::InvalidArgument(format!("fenced op: {e}")));
        }
        match multi.commit(&self.session, generation).await {
            Ok(results) => Ok(fenced_results(results)),
            Err(failed) => Err(self.fenced_error(ops, failed)),
        }
    }

    /// The error of a fenced write that failed (see [`Election::fenced`]).
    fn fenced_error(&self, ops: &[FencedOp], failed: MultiFailed) -> ZooidError {
        let not_leader = |reason: String| ZooidError::NotLeader {
            group: self.group.clone(),
            reason,
        };
        let source = &failed.error;
        match (failed.index, failed.verdict()) {
            (Some(0), _) => not_leader(format!(
                "ZooKeeper refused the write: our candidate node is gone ({source})"
            )),
            (Some(index), verdict) => {
                let path = ops
                    .get(index - 1)
                    .map(|op| op.path().to_string())
                    .unwrap_or_default();
                if verdict == Verdict::NotAuthorized {
                    return crate::zk::not_authorized(&path, self.session.options());
                }
                ZooidError::Store {
                    path,
                    reason: format!(
                        "fenced op {} failed: {source}; nothing was written",
                        index - 1
                    ),
                }
            }
            // The commit told the session layer.
            (None, Verdict::Expired | Verdict::Closed) => {
                not_leader(format!("ZooKeeper refused the write: {source}"))
            }
            (None, Verdict::NotAuthorized) => {
                crate::zk::not_authorized(&self.group, self.session.options())
            }
            (None, Verdict::Unknown) => ZooidError::Store {
                path: self.group.clone(),
                reason: format!("fenced write: {source}; outcome unknown"),
            },
            (None, _) => ZooidError::Store {
                path: self.group.clone(),
                reason: format!("fenced write refused: {source}; nothing was written"),
            },
        }
    }

    /// Leaves the group: stops the candidacy, deletes our candidate node and waits for that
    /// (bounded by the session timeout). The status ends Inactive with `closed`. Harmless when
    /// repeated.
    pub async fn resign(&self) -> Result<()> {
        let _ = self.close.send(true);
        let driver = lock(&self.driver).take();
        if let Some(driver) = driver {
            let _ = driver.await;
        }
        Ok(())
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

/// One result per fenced op: the committed `multi`'s results without the leadership check's.
fn fenced_results(mut results: Vec<MultiWriteResult>) -> Vec<FencedResult> {
    if !results.is_empty() {
        results.remove(0);
    }
    results
        .into_iter()
        .map(|r| match r {
            MultiWriteResult::Create { path, .. } => FencedResult::Created { path },
            MultiWriteResult::SetData { stat } => FencedResult::Set {
                version: stat.version,
            },
            MultiWriteResult::Delete => FencedResult::Deleted,
            _ => FencedResult::Checked,
        })
        .collect()
}

/// Who leads `group`, without joining: the lowest candidate node's name, data and token;
/// `None` when the group has no candidate (or no group node).
pub async fn leader(session: &Session, group: &str) -> Result<Option<LeaderInfo>> {
    validate_group(group)?;
    let group = group.trim_end_matches('/');
    for _ in 0..16 {
        let (client, generation) = session.client();
        let children = match session
            .run(generation, client.list_children(group))
            .await
            .classified()
        {
            Ok(children) => children,
            Err((Verdict::NoNode, _)) => return Ok(None),
            Err((_, err)) => return Err(crate::zk::to_zooid(&err, group, session.options())),
        };
        let Some(lowest) = candidates(&children).into_iter().next() else {
            return Ok(None);
        };
        let path = format!("{group}/{}", lowest.name);
        match session
            .run(generation, client.get_data(&path))
            .await
            .classified()
        {
            Ok((data, stat)) => {
                let (name, data) = decode_payload(&data);
                return Ok(Some(LeaderInfo {
                    name,
                    data,
                    token: stat.czxid,
                    node: path,
                }));
            }
            // It left between the two reads: look again.
            Err((Verdict::NoNode, _)) => continue,
            Err((_, err)) => return Err(crate::zk::to_zooid(&err, group, session.options())),
        }
    }
    Err(ZooidError::Store {
        path: group.to_string(),
        reason: "the lowest candidate kept vanishing between two reads".into(),
    })
}

impl FencedOp {
    /// The node the op is about.
    pub fn path(&self) -> &str {
        match self {
            FencedOp::Create { path, .. }
            | FencedOp::SetData { path, .. }
            | FencedOp::Delete { path, .. }
            | FencedOp::Check { path, .. } => path,
        }
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
    Ok(())
}

fn validate_options(options: &ElectionOptions) -> Result<()> {
    if options.name.is_empty() || options.name.contains('\n') {
        return Err(ZooidError::InvalidArgument(format!(
            "candidate name {:?}: must be non-empty and on one line",
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
async fn ensure_group(session: &Session, group: &str) -> Result<()> {
    let deadline = tokio::time::Instant::now() + 2 * session.request_limit();
    let options = CreateMode::Persistent.with_acls(session.default_acls());
    loop {
        let (client, generation) = session.client();
        let made = session.run(generation, client.mkdir(group, &options)).await;
        match made.classified() {
            Ok(()) | Err((Verdict::NodeExists, _)) => return Ok(()),
            Err((Verdict::Unknown | Verdict::Expired, err))
                if tokio::time::Instant::now() < deadline =>
            {
                tracing::debug!(%err, group, "ensuring the group node; retrying");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err((_, err)) => return Err(crate::zk::to_zooid(&err, group, session.options())),
        }
    }
}

/// A candidate node's name, split.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Candidate {
    name: String,
    marker: String,
    seq: i64,
}

const MARKER_PREFIX: &str = "_c_";
const SEQ_PREFIX: &str = "-n_";

fn parse_candidate(name: &str) -> Option<Candidate> {
    let rest = name.strip_prefix(MARKER_PREFIX)?;
    let (marker, seq) = rest.split_once(SEQ_PREFIX)?;
    if marker.len() != 32 || !marker.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    if seq.is_empty() || !seq.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(Candidate {
        name: name.to_string(),
        marker: marker.to_string(),
        seq: seq.parse().ok()?,
    })
}

/// The candidate nodes among a group's children, in line order (lowest sequence first).
fn candidates(children: &[String]) -> Vec<Candidate> {
    let mut list: Vec<Candidate> = children.iter().filter_map(|c| parse_candidate(c)).collect();
    list.sort_by_key(|c| c.seq);
    list
}

/// Our candidate node.
#[derive(Clone, Debug)]
struct Node {
    path: String,
    seq: i64,
    token: i64,
}

/// Why a phase of the driver ended.
#[derive(Debug)]
enum Exit {
    /// Resigned or dropped: leave the group.
    Closed,
    /// The session of this candidacy is gone; so is its node.
    SessionGone,
    /// Our node is gone (deleted by someone) or must be given up: join again.
    Rejoin { delete: bool },
    /// Something refused us; try again after a pause.
    Retry(String),
}

/// The background task that runs one candidacy after another until closed.
struct Driver {
    session: Session,
    sess_rx: watch::Receiver<SessionStatus>,
    group: String,
    payload: Vec<u8>,
    policy: PausePolicy,
    shared: Arc<Mutex<Shared>>,
    status: watch::Sender<ElectionStatus>,
    close: watch::Receiver<bool>,
}

impl Driver {
    async fn run(mut self) {
        let mut backoff = Duration::from_millis(100);
        loop {
            if self.closed() {
                break;
            }
            let Some(connected) = self.wait_connected().await else {
                break;
            };
            let (client, generation) = self.session.client();
            if generation != connected.generation {
                continue;
            }
            self.update(|s| {
                s.session_generation = generation;
                s.node = None;
            });
            let exit = match self.candidacy(&client, generation).await {
                Ok(node) => {
                    self.update(|s| s.node = Some(node.path.clone()));
                    let exit = self.hold(&client, generation, &node).await;
                    self.step_down();
                    match exit {
                        Exit::Closed | Exit::Rejoin { delete: true } => {
                            self.delete_node(&client, generation, &node.path).await;
                        }
                        _ => {}
                    }
                    exit
                }
                Err(exit) => exit,
            };
            self.update(|s| s.node = None);
            match exit {
                Exit::Closed => break,
                Exit::SessionGone | Exit::Rejoin { .. } => backoff = Duration::from_millis(100),
                Exit::Retry(why) => {
                    tracing::warn!(group = %self.group, why, "election candidacy failed; retrying");
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = self.close.changed() => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
            }
        }
        self.step_down();
        self.update(|s| {
            s.node = None;
            s.closed = true;
        });
    }

    fn closed(&self) -> bool {
        *self.close.borrow() || self.close.has_changed().is_err()
    }

    fn update(&self, change: impl FnOnce(&mut ElectionStatus)) {
        self.status.send_if_modified(|status| {
            let before = status.clone();
            change(status);
            if before.state != status.state || before.token != status.token {
                tracing::info!(
                    group = %self.group,
                    state = status.state.as_str(),
                    token = ?status.token,
                    "election state"
                );
            }
            *status != before
        });
    }

    fn step_down(&self) {
        lock(&self.shared).leading = None;
        self.update(|s| {
            s.state = LeaderState::Inactive;
            s.token = None;
        });
    }

    /// Waits for a connected session; `None` when closed (by us or the application).
    async fn wait_connected(&mut self) -> Option<SessionStatus> {
        loop {
            let status = *self.sess_rx.borrow_and_update();
            match status.state {
                ConnectionState::Closed => return None,
                ConnectionState::Connected => return Some(status),
                _ => {}
            }
            tokio::select! {
                changed = self.sess_rx.changed() => if changed.is_err() { return None },
                _ = self.close.changed() => {}
            }
            if self.closed() {
                return None;
            }
        }
    }

    /// Waits until the session of `generation` is connected again (true) or gone (false).
    async fn wait_same_session(&mut self, generation: u64) -> bool {
        loop {
            let status = *self.sess_rx.borrow_and_update();
            if status.generation != generation
                || matches!(
                    status.state,
                    ConnectionState::Lost | ConnectionState::Closed
                )
            {
                return false;
            }
            if status.state == ConnectionState::Connected {
                return true;
            }
            if self.sess_rx.changed().await.is_err() {
                return false;
            }
        }
    }

    /// Whether the session of `generation` is gone (lost, replaced or closed).
    fn session_gone(&self, generation: u64) -> bool {
        let status = *self.sess_rx.borrow();
        status.generation != generation
            || matches!(
                status.state,
                ConnectionState::Lost | ConnectionState::Closed
            )
    }

    async fn req<T>(
        &self,
        generation: u64,
        request: impl std::future::Future<Output = std::result::Result<T, ZkError>>,
    ) -> std::result::Result<T, ZkError> {
        self.session.run(generation, request).await
    }

    /// After an error that is not "session gone": waits for the session to be usable again and
    /// pauses briefly (so a persistent refusal does not spin). False when the session is gone.
    async fn recover(&mut self, generation: u64) -> bool {
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.wait_same_session(generation).await
    }

    /// Creates our candidate node, exactly once even when replies are lost (see the module
    /// docs): `multi[setData(group, unchanged, V), create(marker node)]`, and after an unknown
    /// outcome, the group node's version and the marker decide.
    async fn candidacy(&mut self, client: &Client, generation: u64) -> Result<Node, Exit> {
        let marker = format!("{:032x}", rand::random::<u128>());
        let prefix = format!("{}/{MARKER_PREFIX}{marker}{SEQ_PREFIX}", self.group);
        let create = CreateMode::EphemeralSequential.with_acls(self.session.default_acls());
        'fresh: loop {
            if self.closed() {
                // Nothing of this candidacy is unresolved here: every earlier copy of the multi
                // expected a version the group node has left behind, and none made our node.
                return Err(Exit::Closed);
            }
            let (data, stat) = match self
                .req(generation, client.get_data(&self.group))
                .await
                .classified()
            {
                Ok(read) => read,
                Err((Verdict::NoNode, _)) => {
                    if let Err(err) = ensure_group(&self.session, &self.group).await {
                        return Err(Exit::Retry(err.to_string()));
                    }
                    continue;
                }
                Err((Verdict::Expired | Verdict::Closed, _)) => return Err(Exit::SessionGone),
                Err(_) => {
                    if !self.recover(generation).await {
                        return Err(Exit::SessionGone);
                    }
                    continue;
                }
            };
            let expected = stat.version;
            if expected < 0 || expected == i32::MAX {
                return Err(Exit::Retry(format!(
                    "group node {} is at data version {expected}; recreate the group node",
                    self.group
                )));
            }
            loop {
                let mut multi = Multi::new(client);
                multi.set(&self.group, &data, Some(expected)).create(
                    &prefix,
                    &self.payload,
                    &create,
                );
                if let Some(refused) = multi.refused() {
                    return Err(Exit::Retry(refused.error.to_string()));
                }
                let failed = match multi.commit(&self.session, generation).await {
                    Ok(results) => {
                        let path = results.into_iter().find_map(|r| match r {
                            MultiWriteResult::Create { path, .. } => Some(path),
                            _ => None,
                        });
                        return match path {
                            Some(path) => self.confirm(client, generation, &path).await,
                            None => Err(Exit::Retry("multi returned no created path".into())),
                        };
                    }
                    Err(failed) => failed,
                };
                let source = &failed.error;
                match (failed.index, failed.verdict()) {
                    (Some(_), Verdict::NoNode) => continue 'fresh,
                    (Some(0), Verdict::BadVersion) => {
                        // This copy did not apply; the version moved past `expected`, so any
                        // earlier copy's fate is fixed: the marker decides.
                    }
                    (Some(_), _) => {
                        return Err(Exit::Retry(format!(
                            "creating the candidate node: {source}"
                        )))
                    }
                    // The commit told the session layer.
                    (None, Verdict::Expired | Verdict::Closed) => return Err(Exit::SessionGone),
                    (None, _) => {
                        tracing::info!(group = %self.group, %source, "candidate create: outcome unknown; resolving");
                    }
                }
                // Resolve: sync, then the group node's version says whether the copies expecting
                // `expected` can still apply.
                loop {
                    if !self.wait_same_session(generation).await {
                        return Err(Exit::SessionGone);
                    }
                    match self.resolve(client, generation, &marker, expected).await {
                        Ok(Resolved::Pending) => break, // resend the identical multi
                        Ok(Resolved::Found(path)) => {
                            return self.confirm(client, generation, &path).await
                        }
                        Ok(Resolved::Never) => continue 'fresh,
                        Err(err) if crate::zk::is_gone(&err) => return Err(Exit::SessionGone),
                        Err(_) => {
                            if !self.recover(generation).await {
                                return Err(Exit::SessionGone);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Decides the fate of the multis that expected group version `expected`.
    async fn resolve(
        &self,
        client: &Client,
        generation: u64,
        marker: &str,
        expected: i32,
    ) -> std::result::Result<Resolved, ZkError> {
        self.req(generation, client.sync(&self.group)).await?;
        let (_, stat) = self.req(generation, client.get_data(&self.group)).await?;
        if stat.version == expected {
            return Ok(Resolved::Pending);
        }
        let children = self
            .req(generation, client.list_children(&self.group))
            .await?;
        Ok(candidates(&children)
            .into_iter()
            .find(|c| c.marker == marker)
            .map(|c| Resolved::Found(format!("{}/{}", self.group, c.name)))
            .unwrap_or(Resolved::Never))
    }

    /// Reads our new node's stat: its czxid is the token, and it must belong to our session.
    async fn confirm(
        &mut self,
        client: &Client,
        generation: u64,
        path: &str,
    ) -> Result<Node, Exit> {
        loop {
            match self
                .req(generation, client.get_data(path))
                .await
                .classified()
            {
                Ok((_, stat)) => return self.check_owner(client, path, &stat),
                Err((Verdict::NoNode, _)) => return Err(Exit::Rejoin { delete: false }),
                Err((Verdict::Expired | Verdict::Closed, _)) => return Err(Exit::SessionGone),
                Err(_) => {
                    if !self.recover(generation).await {
                        return Err(Exit::SessionGone);
                    }
                }
            }
        }
    }

    fn check_owner(&self, client: &Client, path: &str, stat: &Stat) -> Result<Node, Exit> {
        let session_id = client.session_id().0;
        if stat.ephemeral_owner != session_id {
            return Err(Exit::Retry(format!(
                "candidate node {path} belongs to session {:#x}, not ours ({session_id:#x})",
                stat.ephemeral_owner
            )));
        }
        let name = path.rsplit('/').next().unwrap_or(path);
        let Some(candidate) = parse_candidate(name) else {
            return Err(Exit::Retry(format!(
                "unexpected candidate node name {path}"
            )));
        };
        Ok(Node {
            path: path.to_string(),
            seq: candidate.seq,
            token: stat.czxid,
        })
    }

    /// Waits in line (watching only the predecessor), then leads, until the candidacy ends.
    async fn hold(&mut self, client: &Client, generation: u64, node: &Node) -> Exit {
        loop {
            if self.closed() {
                return Exit::Closed;
            }
            if self.session_gone(generation) {
                return Exit::SessionGone;
            }
            if !self.wait_same_session(generation).await {
                return Exit::SessionGone;
            }
            let children = match self
                .req(generation, client.list_children(&self.group))
                .await
                .classified()
            {
                Ok(children) => children,
                Err((Verdict::NoNode, _)) => return Exit::Rejoin { delete: false },
                Err((Verdict::Expired | Verdict::Closed, _)) => return Exit::SessionGone,
                Err(_) => {
                    if !self.recover(generation).await {
                        return Exit::SessionGone;
                    }
                    continue;
                }
            };
            let line = candidates(&children);
            let Some(pos) = line.iter().position(|c| c.seq == node.seq) else {
                return Exit::Rejoin { delete: false };
            };
            if pos == 0 {
                return self.lead(client, generation, node).await;
            }
            let predecessor = format!("{}/{}", self.group, line[pos - 1].name);
            let watcher = match self
                .req(generation, client.get_and_watch_data(&predecessor))
                .await
                .classified()
            {
                Ok((_, _, watcher)) => watcher,
                Err((Verdict::NoNode, _)) => continue,
                Err((Verdict::Expired | Verdict::Closed, _)) => return Exit::SessionGone,
                Err(_) => {
                    if !self.recover(generation).await {
                        return Exit::SessionGone;
                    }
                    continue;
                }
            };
            let mut changed = std::pin::pin!(watcher.changed());
            loop {
                tokio::select! {
                    event = &mut changed => {
                        if event.event_type != EventType::Session {
                            self.update(|s| s.watch_notifications += 1);
                        }
                        break;
                    }
                    changed = self.sess_rx.changed() => {
                        if changed.is_err() || self.session_gone(generation) {
                            return Exit::SessionGone;
                        }
                    }
                    _ = self.close.changed() => {
                        if self.closed() {
                            return Exit::Closed;
                        }
                    }
                }
            }
        }
    }

    /// Leads until the candidacy ends: Active while connected, Paused while suspended.
    async fn lead(&mut self, client: &Client, generation: u64, node: &Node) -> Exit {
        lock(&self.shared).leading = Some(Leading {
            node: node.path.clone(),
            generation,
        });
        // The token and the state change together (never Inactive with a token); the term is
        // counted with its first publication.
        let mut first = true;
        let mut publish = |driver: &Self, state: LeaderState| {
            let new_term = std::mem::take(&mut first);
            driver.update(|s| {
                s.state = state;
                s.token = Some(node.token);
                if new_term {
                    s.terms += 1;
                }
            });
        };
        let mut interrupted = false;
        // The watch on our own node, kept across session state changes.
        let mut own: Option<OwnWatch> = None;
        loop {
            if self.closed() {
                return Exit::Closed;
            }
            let status = *self.sess_rx.borrow_and_update();
            if self.session_gone(generation) {
                return Exit::SessionGone;
            }
            if status.state == ConnectionState::Connected {
                if interrupted {
                    // Stop policy: the suspension ended this leadership; go to the back.
                    return Exit::Rejoin { delete: true };
                }
                publish(self, LeaderState::Active);
                if own.is_none() {
                    // Watch our own node, so a deletion by someone else ends the leadership.
                    match self
                        .req(generation, client.get_and_watch_data(&node.path))
                        .await
                        .classified()
                    {
                        Ok((_, _, watcher)) => {
                            own = Some(Box::pin(watcher.changed()));
                            continue;
                        }
                        Err((Verdict::NoNode, _)) => return Exit::Rejoin { delete: false },
                        Err((Verdict::Expired | Verdict::Closed, _)) => return Exit::SessionGone,
                        // Connection trouble: the session state will tell, or we retry below.
                        Err(_) => {}
                    }
                }
            } else {
                publish(self, LeaderState::Paused);
                if self.policy == PausePolicy::Stop {
                    interrupted = true;
                }
            }
            let connected = status.state == ConnectionState::Connected;
            let own_changed = async {
                match own.as_mut() {
                    Some(watch) => Some(watch.as_mut().await),
                    // Not armed while connected: a request failed; try again shortly.
                    None if connected => {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        None
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                event = own_changed => {
                    if let Some(event) = event {
                        if event.event_type == EventType::NodeDeleted {
                            return Exit::Rejoin { delete: false };
                        }
                        // Data changed or a session event: re-arm / re-check.
                        own = None;
                    }
                }
                _ = self.sess_rx.changed() => {}
                _ = self.close.changed() => {}
            }
        }
    }

    /// Deletes our node (idempotent: its name is unique and never reused), bounded in time.
    async fn delete_node(&mut self, client: &Client, generation: u64, path: &str) {
        let deadline = tokio::time::Instant::now() + 2 * self.session.request_limit();
        while tokio::time::Instant::now() < deadline {
            match self
                .req(generation, client.delete(path, None))
                .await
                .classified()
            {
                Ok(()) | Err((Verdict::NoNode, _)) => return,
                Err((Verdict::Expired | Verdict::Closed, _)) => return,
                Err((_, err)) => {
                    tracing::debug!(%err, path, "deleting the candidate node; retrying");
                    let wait = self.recover(generation);
                    match tokio::time::timeout_at(deadline, wait).await {
                        Ok(true) => {}
                        _ => return,
                    }
                }
            }
        }
        tracing::warn!(
            path,
            "could not delete the candidate node in time; it goes with the session"
        );
    }
}

/// A pending notification of the watch on our own node.
type OwnWatch =
    std::pin::Pin<Box<dyn std::future::Future<Output = zookeeper_client::WatchedEvent> + Send>>;

/// The fate of the candidate multis that expected one group version.
enum Resolved {
    /// The group node is still at that version: neither copy applied yet; resend the same.
    Pending,
    /// The version moved on and our marker node exists: a copy applied.
    Found(String),
    /// The version moved on without our marker node: no copy applied, and none ever will.
    Never,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidate_names_parse_and_sort_by_sequence() {
        let a = format!("_c_{}-n_0000000012", "a".repeat(32));
        let b = format!("_c_{}-n_0000000003", "b".repeat(32));
        let list = candidates(&[a.clone(), "other".into(), b.clone(), "_c_xyz-n_1".into()]);
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].name, b);
        assert_eq!(list[0].seq, 3);
        assert_eq!(list[1].marker, "a".repeat(32));
    }

    #[test]
    fn payload_round_trips() {
        let p = encode_payload("node-1", b"host:1\nmore");
        assert_eq!(
            decode_payload(&p),
            ("node-1".to_string(), b"host:1\nmore".to_vec())
        );
        assert_eq!(decode_payload(b"plain"), ("plain".to_string(), Vec::new()));
    }

    #[test]
    fn options_and_groups_are_validated() {
        assert!(validate_group("/a/b").is_ok());
        assert!(validate_group("/a/b/").is_ok());
        for bad in ["", "/", "a/b", "/a//b", "/a/./b"] {
            assert!(validate_group(bad).is_err(), "{bad}");
        }
        assert!(validate_options(&ElectionOptions::new("x")).is_ok());
        assert!(validate_options(&ElectionOptions::new("")).is_err());
        assert!(validate_options(&ElectionOptions::new("a\nb")).is_err());
        let mut big = ElectionOptions::new("x");
        big.data = vec![0; MAX_DATA_BYTES + 1];
        assert!(matches!(
            validate_options(&big),
            Err(ZooidError::TooLarge { .. })
        ));
    }
}
