//! The session's lease through the quorum: while connected, a `sync` (which only the ensemble's
//! leader answers) every sixth of the negotiated timeout; [`SessionStatus::stop_acting`] turns
//! true once no `sync` sent in the last half timeout has been answered.
//!
//! A connection alone proves nothing: a follower cut off from the quorum keeps its clients
//! connected and answers their pings for `syncLimit` ticks (which may be longer than the
//! session), while the ensemble's leader, no longer touched on the session's behalf, expires it
//! one timeout after the last touch. The last touch is no earlier than the send time of the last
//! answered `sync`, so half a timeout after that send time, half a timeout of the session is
//! still left on the servers: work on its behalf (a worker's command on a claimed item) stops
//! then. The election's lease (src/recipes/election/lease.rs) is the same rule for a leader.

#[allow(clippy::wildcard_imports)]
use super::*;

/// The latest confirmation of a generation: the send time of the last request the quorum
/// answered for it (its `createSession` or a `sync`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Lease {
    pub(super) generation: u64,
    pub(super) confirmed: Instant,
}

impl Lease {
    /// How long a confirmation counts: half the negotiated session timeout.
    pub(super) fn length(timeout: Duration) -> Duration {
        timeout.max(MIN_TIMEOUT) / 2
    }

    /// When the lease of `generation` ends, if this is its lease.
    pub(super) fn ends(&self, generation: u64, timeout: Duration) -> Option<Instant> {
        (self.generation == generation).then(|| self.confirmed + Self::length(timeout))
    }
}

/// The shortest timeout the pacing assumes.
const MIN_TIMEOUT: Duration = Duration::from_millis(100);

impl Inner {
    /// The lease of the current generation ends later: the quorum answered a request of
    /// `generation` sent at `sent`.
    pub(super) fn confirm(&self, generation: u64, sent: Instant) {
        let mut lease = self.lease.lock().unwrap_or_else(|p| p.into_inner());
        let newer = lease.generation < generation
            || (lease.generation == generation && lease.confirmed < sent);
        if newer {
            *lease = Lease {
                generation,
                confirmed: sent,
            };
            drop(lease);
            // A stored permit: the monitor looks again even if it was not waiting yet.
            self.lease_renewed.notify_one();
        }
    }

    pub(super) fn lease(&self) -> Lease {
        *self.lease.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Renews the lease of the current generation while it is connected: a `sync` every sixth of
/// the timeout, again after a twentieth when one fails or goes unanswered for half of it. Ends
/// when the last [`Session`] handle is dropped.
pub(super) async fn renew(inner: std::sync::Weak<Inner>, mut alive: watch::Receiver<()>) {
    loop {
        let Some(strong) = inner.upgrade() else {
            return;
        };
        let Current {
            client, generation, ..
        } = strong.read_current();
        let mut status = strong.status.subscribe();
        let now = *status.borrow_and_update();
        drop(strong);
        let timeout = now.timeout.max(MIN_TIMEOUT);
        let pause = if now.generation == generation && now.state == ConnectionState::Connected {
            let sent = Instant::now();
            match tokio::time::timeout(Lease::length(timeout), client.sync("/")).await {
                Ok(Ok(())) => {
                    let Some(strong) = inner.upgrade() else {
                        return;
                    };
                    strong.confirm(generation, sent);
                    Some(timeout / 6)
                }
                Ok(Err(err)) => {
                    tracing::debug!(%err, generation, "the session's lease sync failed");
                    Some(timeout / 20)
                }
                Err(_) => Some(timeout / 20),
            }
        } else {
            None
        };
        tokio::select! {
            biased;
            changed = alive.changed() => if changed.is_err() { return },
            // Not connected: wait for the next status (a reconnection, a new generation).
            changed = status.changed(), if pause.is_none() => if changed.is_err() { return },
            _ = super::monitor::sleep_until_opt(pause.map(|p| Instant::now() + p)) => {}
        }
    }
}
