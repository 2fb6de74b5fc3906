//! Confirmed death of a ZooKeeper session: the servers' word that no request of that session can
//! apply any more (docs/DESIGN.md, "When a write's fate is decided").
//!
//! A client's own view ("disconnected for longer than the session timeout", or
//! `zookeeper_client`'s `SessionState::Expired`, which it also reports after a local timer) is a
//! guess: the servers may still hold the session, and a request of it still in flight can apply.
//! [`confirm_dead`] asks the servers instead. It reattaches to the session with its id and
//! password: either a server refuses (`SessionExpired`: the session is gone), or the reattach
//! succeeds and the session is closed at once, and the close's reply (a committed `closeSession`
//! transaction) is awaited. After either, every request of the session either applied before
//! (a `sync` and read on any session sees it) or can never apply.
//!
//! The session layer runs it on every generation it gives up (src/zk/session.rs) and answers
//! [`crate::zk::Session::confirm_gone`] from it; tests/zookeeper/session_fate.rs establishes what
//! it guarantees against real servers.

use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client::{Connector, Error as ZkError, SessionInfo, SessionState};

/// How the servers confirmed that a session can no longer apply a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Confirmed {
    /// A reattach was refused: the servers had already expired or closed the session.
    Expired,
    /// The session was reattached with its id and password and closed; the servers committed
    /// the close.
    Closed,
}

/// Why a session's death could not be confirmed.
#[derive(Debug, thiserror::Error)]
pub enum Unconfirmed {
    /// No server answered in time: the session may still be alive.
    #[error(
        "no server confirmed the end of session {session:#x} within {waited:?} (last: {last})"
    )]
    Deadline {
        session: i64,
        waited: Duration,
        last: String,
    },
    /// A server refused the reattach for another reason than expiry (authentication).
    #[error("the servers refused to reattach session {session:#x}: {err}")]
    Refused { session: i64, err: ZkError },
}

/// Why the servers' word on a session generation is not (yet) in: the fate of its writes whose
/// reply was lost stays in doubt.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InDoubt {
    /// The generation is the live one: it was not given up, so nothing was asked. Its requests
    /// are ordered on it: a `sync` and a read on it tell.
    #[error("session generation {generation} is still live")]
    Live { generation: u64 },
    /// The servers did not confirm the end of the generation's session in time (unreachable),
    /// or refused to say (authentication).
    #[error(
        "the end of session generation {generation} is not confirmed by the servers: {reason}"
    )]
    Unconfirmed { generation: u64, reason: String },
}

/// Pause between two reattach attempts after a transient failure.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// Confirms with the servers that `session` can no longer apply a request, within `within`.
///
/// `connector` carries the connection options of the session layer (timeouts, TLS, SASL or
/// digest auth; it must not be detached, so that dropping the reattached client closes the
/// session); `connect` is the ensemble's connect string. Reattaching touches the session on the
/// servers, so it never expires it by waiting: it either finds it gone or closes it itself.
///
/// Only the client's `Closed` state, reached when the reply to its `closeSession` arrived, is
/// taken as the close; its `Expired` state may be the client's own timer, so the reattach is
/// tried again, until a server refuses it or a close is confirmed.
pub async fn confirm_dead(
    connector: &Connector,
    connect: &str,
    session: &SessionInfo,
    within: Duration,
) -> Result<Confirmed, Unconfirmed> {
    confirm_dead_over(connector, connect, false, session, within, None).await
}

/// [`confirm_dead`], over TLS when `secure` (the connector then carries the TLS options).
///
/// With `quiet` (the session's negotiated timeout), an attempt lasts at most `quiet`, and after
/// one that no server answered the next waits `quiet * 3 / 2` (also past `within`): a server
/// that hears the reattach but whose answers are lost (fact E) touches the session with every
/// attempt, so without that silence the confirmation itself would keep the given-up session,
/// and its ephemeral nodes, alive for as long as the replies are lost.
pub(crate) async fn confirm_dead_over(
    connector: &Connector,
    connect: &str,
    secure: bool,
    session: &SessionInfo,
    within: Duration,
    quiet: Option<Duration>,
) -> Result<Confirmed, Unconfirmed> {
    let started = Instant::now();
    let end = started + within;
    let id = session.id().0;
    let mut last = String::from("no attempt");
    loop {
        let remaining = end.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(Unconfirmed::Deadline {
                session: id,
                waited: started.elapsed(),
                last,
            });
        }
        let reattach = connector.clone().with_session(session.clone());
        let reattach = async move {
            if secure {
                reattach.secure_connect(connect).await
            } else {
                reattach.connect(connect).await
            }
        };
        let attempt = quiet.map_or(remaining, |quiet| remaining.min(quiet));
        let client = match tokio::time::timeout(attempt, reattach).await {
            Err(_) => {
                last = "reattach timed out".into();
                if let Some(quiet) = quiet {
                    tokio::time::sleep(quiet * 3 / 2).await;
                }
                continue;
            }
            Ok(Err(ZkError::SessionExpired)) => return Ok(Confirmed::Expired),
            Ok(Err(err @ ZkError::AuthFailed)) => {
                return Err(Unconfirmed::Refused { session: id, err })
            }
            Ok(Err(err)) => {
                last = err.to_string();
                match quiet {
                    // No answer in the crate's own time: the servers may have heard it.
                    Some(quiet) if matches!(err, ZkError::Timeout) => {
                        tokio::time::sleep(quiet * 3 / 2).await
                    }
                    _ => tokio::time::sleep(RETRY_PAUSE.min(remaining)).await,
                }
                continue;
            }
            Ok(Ok(client)) => client,
        };
        let mut watcher = client.state_watcher();
        // The last handle: the client sends closeSession and ends once its reply arrived.
        drop(client);
        let mut state = watcher.peek_state();
        loop {
            match state {
                SessionState::Closed => return Ok(Confirmed::Closed),
                SessionState::AuthFailed => {
                    return Err(Unconfirmed::Refused {
                        session: id,
                        err: ZkError::AuthFailed,
                    })
                }
                // The servers' word or the client's timer: ask again.
                SessionState::Expired => {
                    last = "the reattached client reported Expired".into();
                    break;
                }
                _ => {}
            }
            let remaining = end.saturating_duration_since(Instant::now());
            match tokio::time::timeout(remaining, watcher.changed()).await {
                Ok(next) => state = next,
                Err(_) => {
                    last = format!("closing the reattached session: still {state}");
                    break;
                }
            }
        }
    }
}
