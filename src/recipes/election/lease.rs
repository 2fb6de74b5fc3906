//! The leader's lease: how often its leadership is confirmed through the quorum (a `sync`,
//! which the ensemble's leader answers) and how long a confirmation counts.

use std::time::Duration;

use tokio::time::Instant;

use crate::zk::Failure;

/// A `sync` in flight that confirms the leadership; yields its send time when answered.
pub(super) type Confirming = std::pin::Pin<
    Box<dyn std::future::Future<Output = std::result::Result<Instant, Failure>> + Send>,
>;

/// How a leader's confirmation through the quorum is paced, from the negotiated timeout.
pub(super) struct LeaseTiming {
    /// How long an answered `sync` confirms the leadership, from the send time of the one
    /// answered before it: half the session timeout.
    pub(super) lease: Duration,
    /// How often a confirmation is sent while leading: a sixth of the session timeout (also
    /// the least time between two answered ones; more than the servers' ping period,
    /// tickTime/2, when the session is longer than 3 ticks).
    pub(super) renew: Duration,
    /// The pause after a failed confirmation.
    pub(super) retry: Duration,
}

impl LeaseTiming {
    /// The pacing for a session of `session_timeout` (the negotiated one).
    pub(super) fn of(session_timeout: Duration) -> Self {
        let session_timeout = session_timeout.max(Duration::from_millis(100));
        // A mutant the simulator must find (tests/sim): a lease longer than the session, so a
        // leader the servers expired still counts itself Active inside it.
        #[cfg(zooid_mutant = "election_lease_outlives_session")]
        let lease = session_timeout * 2;
        #[cfg(not(zooid_mutant = "election_lease_outlives_session"))]
        let lease = session_timeout / 2;
        Self {
            lease,
            renew: session_timeout / 6,
            retry: (session_timeout / 30).max(Duration::from_millis(20)),
        }
    }
}

/// Sleeps until `deadline`, or forever without one.
pub(super) async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
