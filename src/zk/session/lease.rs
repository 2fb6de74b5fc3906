//! The session's lease through the quorum, held on demand ([`Session::hold_lease`]): while a
//! [`LeaseGuard`] is held and the session connected, a `sync` (which only the ensemble's leader
//! answers) every sixth of the negotiated timeout; [`SessionStatus::stop_acting`] turns true
//! once the lease has run out.
//!
//! A connection alone proves nothing: a follower cut off from the quorum keeps its clients
//! connected and answers their pings for `syncLimit` ticks (which may be longer than the
//! session), while the ensemble's leader, no longer touched on the session's behalf, expires it
//! one timeout after the last touch it heard of. An answered `sync` proves the session alive on
//! the leader, which by then has heard (through the follower's ping replies, every tickTime/2)
//! of the session's touches up to the *previous* answered `sync`, sent a renewal period (more
//! than tickTime/2 when the session is longer than 3 ticks) earlier: the servers cannot expire
//! the session before that send time plus a whole timeout. The lease counts half a timeout from
//! there, so half a timeout is left on the servers when work on the session's behalf stops: the
//! election's rule (src/recipes/election/driver/lead.rs), for any holder.
//!
//! Held by no one, the session sends no `sync` (a process that only takes IDs costs the
//! servers nothing more), and `stop_acting` follows the connection alone.

#[allow(clippy::wildcard_imports)]
use super::*;

pub use super::super::status::LeaseGuard;

/// The confirmations of a generation so far: the send times of the last two answered `sync`s.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Lease {
    pub(super) generation: u64,
    /// The send time of the answered `sync` before the last one: the lease counts from it.
    previous: Option<Instant>,
    last: Option<Instant>,
}

impl Lease {
    /// No confirmation yet in `generation`.
    pub(super) fn of(generation: u64) -> Self {
        Self {
            generation,
            ..Self::default()
        }
    }

    /// How long a confirmation counts: half the negotiated session timeout.
    pub(super) fn length(timeout: Duration) -> Duration {
        timeout.max(MIN_TIMEOUT) / 2
    }

    /// How often a held lease is renewed: a sixth of the negotiated session timeout.
    pub(super) fn renewal(timeout: Duration) -> Duration {
        timeout.max(MIN_TIMEOUT) / 6
    }

    /// When the lease of `generation` ends: `None` without two confirmations in it (ended).
    pub(super) fn ends(&self, generation: u64, timeout: Duration) -> Option<Instant> {
        let from = self.previous.filter(|_| self.generation == generation)?;
        Some(from + Self::length(timeout))
    }
}

/// The shortest timeout the pacing assumes.
const MIN_TIMEOUT: Duration = Duration::from_millis(100);

impl Inner {
    /// The quorum answered a `sync` of `generation` sent at `sent`.
    pub(super) fn confirm(&self, generation: u64, sent: Instant) {
        let mut lease = self.lease.lock().unwrap_or_else(|p| p.into_inner());
        if lease.generation > generation {
            return;
        }
        if lease.generation < generation {
            *lease = Lease::of(generation);
        }
        if lease.last.is_some_and(|last| last >= sent) {
            return;
        }
        lease.previous = lease.last.replace(sent);
        drop(lease);
        // A stored permit: the monitor looks again even if it was not waiting yet.
        self.lease_renewed.notify_one();
    }

    /// Whether a held lease has run out for `generation` (`false` when no one holds it).
    pub(super) fn lease_ended(&self, generation: u64, timeout: Duration, now: Instant) -> bool {
        self.lease_ends(generation, timeout).is_some_and(|end| now >= end)
    }

    /// When a held lease of `generation` ends (`None` when no one holds it).
    pub(super) fn lease_ends(&self, generation: u64, timeout: Duration) -> Option<Instant> {
        if self.lease_holders.load(Ordering::SeqCst) == 0 {
            return None;
        }
        let lease = *self.lease.lock().unwrap_or_else(|p| p.into_inner());
        Some(lease.ends(generation, timeout).unwrap_or_else(Instant::now))
    }
}

impl Session {
    /// Holds the session's lease through the quorum until the guard is dropped: while held,
    /// [`SessionStatus::stop_acting`] also turns true when the quorum has not confirmed the
    /// session for half its timeout (a server cut off from the quorum keeps its clients
    /// connected while the ensemble expires their sessions; see src/zk/session/lease.rs).
    /// Returns once the lease is confirmed (two `sync`s a sixth of the timeout apart);
    /// `ConnectionLost` when the quorum does not answer within the timeout.
    pub async fn hold_lease(&self) -> Result<LeaseGuard> {
        let inner = &self.inner;
        let (client, generation) = self.client();
        let timeout = self.status().timeout;
        for round in 0..2 {
            if round == 1 {
                tokio::time::sleep(Lease::renewal(timeout)).await;
            }
            let sent = Instant::now();
            match tokio::time::timeout(Lease::length(timeout), client.sync("/")).await {
                Ok(Ok(())) => inner.confirm(generation, sent),
                Ok(Err(err)) => {
                    return Err(ZooidError::ConnectionLost {
                        category: inner.connect.clone(),
                        reason: format!("confirming the session through the quorum: {err}"),
                    })
                }
                Err(_) => {
                    return Err(ZooidError::ConnectionLost {
                        category: inner.connect.clone(),
                        reason: format!(
                            "the quorum did not confirm the session within {:?}",
                            Lease::length(timeout)
                        ),
                    })
                }
            }
        }
        inner.lease_holders.fetch_add(1, Ordering::SeqCst);
        inner.renew_wake.notify_one();
        inner.lease_renewed.notify_one();
        let held = Arc::clone(inner);
        Ok(LeaseGuard::new(move || {
            held.lease_holders.fetch_sub(1, Ordering::SeqCst);
            held.lease_renewed.notify_one();
        }))
    }
}

/// Renews the lease of the current generation while it is held and the session connected: a
/// `sync` every sixth of the timeout, again after a twentieth when one fails or goes unanswered
/// for half of it. Ends when the last [`Session`] handle is dropped.
pub(super) async fn renew(inner: std::sync::Weak<Inner>, mut alive: watch::Receiver<()>) {
    loop {
        let Some(strong) = inner.upgrade() else {
            return;
        };
        // The status first: a generation replaced in between shows as a change below.
        let mut status = strong.status.subscribe();
        let now = *status.borrow_and_update();
        let Current {
            client, generation, ..
        } = strong.read_current();
        let held = strong.lease_holders.load(Ordering::SeqCst) > 0;
        let wake = Arc::clone(&strong.renew_wake);
        drop(strong);
        let timeout = now.timeout.max(MIN_TIMEOUT);
        let connected = now.generation == generation && now.state == ConnectionState::Connected;
        let pause = match held && connected {
            true => {
                let sent = Instant::now();
                let answered = tokio::select! {
                    biased;
                    changed = alive.changed() => if changed.is_err() { return } else { continue },
                    answered = tokio::time::timeout(Lease::length(timeout), client.sync("/")) => answered,
                };
                drop(client);
                match answered {
                    Ok(Ok(())) => {
                        let Some(strong) = inner.upgrade() else {
                            return;
                        };
                        strong.confirm(generation, sent);
                        Some(Lease::renewal(timeout))
                    }
                    Ok(Err(err)) => {
                        tracing::debug!(%err, generation, "the session's lease sync failed");
                        Some(timeout / 20)
                    }
                    Err(_) => Some(timeout / 20),
                }
            }
            false => None,
        };
        tokio::select! {
            biased;
            changed = alive.changed() => if changed.is_err() { return },
            // A reconnection, a new generation, or the first holder: look again.
            changed = status.changed() => if changed.is_err() { return },
            _ = wake.notified() => {}
            _ = super::monitor::sleep_until_opt(pause.map(|p| Instant::now() + p)) => {}
        }
    }
}
