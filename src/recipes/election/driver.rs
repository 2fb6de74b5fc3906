//! The candidacy's driver task: joins the line (a lost create resolved by its marker,
//! [`join`]), watches only its predecessor, leads ([`lead`]), follows the session's state and
//! deletes its node when done ([`leave`]).

use super::line::{candidates, token, MARKER_PREFIX, SEQ_PREFIX};
use super::*;

use tokio::time::Instant;

mod join;
mod lead;
mod leave;

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

/// What a closed candidacy left behind.
pub(super) enum Left {
    /// Our node, whose delete gave up.
    Node(String),
    /// Copies of our create, made with `marker`, that may still apply (or have): settled by
    /// [`leave::settle_once`].
    InDoubt { group: String, marker: String },
}

impl std::fmt::Display for Left {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Left::Node(path) => f.write_str(path),
            Left::InDoubt { group, marker } => {
                write!(f, "{group}/{MARKER_PREFIX}{marker}{SEQ_PREFIX}* (a create in doubt)")
            }
        }
    }
}

/// The background task that runs one candidacy after another until closed.
pub(super) struct Driver {
    pub(super) zk: Zk,
    pub(super) sess_rx: watch::Receiver<SessionStatus>,
    pub(super) group: String,
    pub(super) payload: Vec<u8>,
    pub(super) policy: PausePolicy,
    pub(super) shared: Arc<Mutex<Shared>>,
    pub(super) status: watch::Sender<ElectionStatus>,
    pub(super) lease: watch::Sender<Option<tokio::time::Instant>>,
    pub(super) close: watch::Receiver<bool>,
    /// The marker of a candidacy that ended with a copy of its create unresolved, and the
    /// session generation it was sent on: the next candidacy on that session goes on with it
    /// ([`join`]).
    pub(super) carried: Option<(u64, String)>,
}

impl Driver {
    pub(super) async fn run(mut self) {
        let mut backoff = Duration::from_millis(100);
        loop {
            if self.closed() && self.carried.is_none() {
                break;
            }
            // Closed with a marker carried: its candidacy settles it first (join).
            let Some(connected) = self.wait_connected().await else {
                if let Some((generation, marker)) = self.carried.take() {
                    // Closed while disconnected: settled in the background once connected
                    // again (a copy that applied would head the line), or gone with the session.
                    let group = self.group.clone();
                    self.leave_behind(generation, Left::InDoubt { group, marker });
                }
                break;
            };
            let generation = self.zk.generation();
            if generation != connected.generation {
                continue;
            }
            self.update(|s| {
                s.session_generation = generation;
                s.node = None;
            });
            let exit = match self.candidacy(generation).await {
                Ok(node) => {
                    self.update(|s| s.node = Some(node.path.clone()));
                    let exit = self.hold(generation, &node).await;
                    self.step_down();
                    match exit {
                        Exit::Closed | Exit::Rejoin { delete: true } => {
                            // A rejoin waits for the old node to go, however long that takes:
                            // a new node would line up behind it, and nobody would lead.
                            let deadline = matches!(exit, Exit::Closed)
                                .then(|| Instant::now() + self.delete_bound());
                            if self.delete_node(generation, &node.path, deadline).await {
                                exit
                            } else {
                                // Only a closed candidacy gives up on it (resign's bound).
                                self.leave_behind(generation, Left::Node(node.path.clone()));
                                Exit::Closed
                            }
                        }
                        _ => exit,
                    }
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
                        biased;
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
        self.lease.send_replace(None);
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
                biased;
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

    /// [`Self::wait_same_session`] that a close ends too: `Err(Exit::Closed)` once closed (a
    /// retry loop must not keep a resigned candidacy, and its node, waiting on a session that
    /// does not come back, or on a request that keeps failing), `Err(Exit::SessionGone)` when
    /// the session is gone.
    async fn wait_usable(&mut self, generation: u64) -> Result<(), Exit> {
        loop {
            if self.closed() {
                return Err(Exit::Closed);
            }
            let status = *self.sess_rx.borrow_and_update();
            if status.generation != generation
                || matches!(
                    status.state,
                    ConnectionState::Lost | ConnectionState::Closed
                )
            {
                return Err(Exit::SessionGone);
            }
            if status.state == ConnectionState::Connected {
                return Ok(());
            }
            tokio::select! {
                biased;
                changed = self.sess_rx.changed() => if changed.is_err() {
                    return Err(Exit::SessionGone);
                },
                _ = self.close.changed() => {}
            }
        }
    }

    /// After an error that is not "session gone": pauses briefly (so a persistent refusal does
    /// not spin) and waits for the session to be usable again, as [`Self::wait_usable`]: every
    /// retry loop of the driver passes here, so each one ends on a close.
    async fn recover(&mut self, generation: u64) -> Result<(), Exit> {
        tokio::select! {
            biased;
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            _ = self.close.changed() => {}
        }
        self.wait_usable(generation).await
    }

    /// Waits in line (watching only the predecessor), then leads, until the candidacy ends.
    async fn hold(&mut self, generation: u64, node: &Node) -> Exit {
        loop {
            if self.closed() {
                return Exit::Closed;
            }
            if self.session_gone(generation) {
                return Exit::SessionGone;
            }
            if let Err(exit) = self.wait_usable(generation).await {
                return exit;
            }
            let children = match self.zk.children(generation, &self.group).await {
                Ok((children, _)) => children,
                Err(Failure {
                    verdict: Verdict::NoNode,
                    ..
                }) => return Exit::Rejoin { delete: false },
                Err(failure) if says_gone(&failure) => return Exit::SessionGone,
                Err(_) => {
                    if let Err(exit) = self.recover(generation).await {
                        return exit;
                    }
                    continue;
                }
            };
            let line = candidates(&children);
            let Some(pos) = line.iter().position(|c| c.seq == node.seq) else {
                return Exit::Rejoin { delete: false };
            };
            if pos == 0 {
                // The token counts the group's epoch as it is now: a raise by `bump_epoch`
                // since we joined (after a restore from an older snapshot) counts.
                let node = match self.current_epoch(generation).await {
                    Ok(epoch) => Node {
                        token: token(epoch, node.seq),
                        ..node.clone()
                    },
                    Err(exit) => return exit,
                };
                return self.lead(generation, &node).await;
            }
            let predecessor = format!("{}/{}", self.group, line[pos - 1].name);
            let watch = match self.zk.get_watched(generation, &predecessor).await {
                Ok((_, _, watch)) => watch,
                Err(Failure {
                    verdict: Verdict::NoNode,
                    ..
                }) => continue,
                Err(failure) if says_gone(&failure) => return Exit::SessionGone,
                Err(_) => {
                    if let Err(exit) = self.recover(generation).await {
                        return exit;
                    }
                    continue;
                }
            };
            let mut changed = std::pin::pin!(watch.changed());
            loop {
                tokio::select! {
                    biased;
                    event = &mut changed => {
                        if event.kind != EventKind::Session {
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
}

/// Whether a request's failure says its session is gone (expired, or closed: also a request of
/// a given-up generation, which is not sent).
fn says_gone(failure: &Failure) -> bool {
    matches!(failure.verdict, Verdict::Expired | Verdict::Closed)
}
