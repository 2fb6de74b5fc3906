//! Leading: Active while connected and confirmed through the quorum within the lease, Paused
//! otherwise; the watch on our own node ends the leadership when someone deletes it.

use super::super::lease::{sleep_until_opt, Confirming, LeaseTiming};
use super::*;
use crate::zk::{Event, Watch};

/// A pending notification of the watch on our own node.
type OwnWatch = std::pin::Pin<Box<dyn std::future::Future<Output = Event> + Send>>;

/// The read that arms the watch on our own node, in flight.
type Arming = std::pin::Pin<
    Box<dyn std::future::Future<Output = std::result::Result<Watch, Failure>> + Send>,
>;

impl Driver {
    /// Leads until the candidacy ends: Active while connected *and* confirmed through the
    /// quorum (a `sync` answered within the lease, renewed every sixth of the session timeout),
    /// Paused while suspended or unconfirmed. A server cut off from the quorum keeps answering
    /// our pings for `syncLimit` ticks, which may be longer than the session: only an answered
    /// `sync` (forwarded to the ensemble's leader) proves the session is still alive there.
    pub(super) async fn lead(&mut self, generation: u64, node: &Node) -> Exit {
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
        // The session timeout the lease counts: the smallest the servers negotiated during the
        // term (a reconnection to a server with a lower maximum renegotiates it lower, and the
        // ensemble expires the session by the new one).
        let mut counted = self.sess_rx.borrow().timeout;
        let mut timing = LeaseTiming::of(counted);
        // The send time the current lease counts from.
        let mut lease_from: Option<Instant> = None;
        // Until when the quorum confirmed us; `None` before the second confirmation.
        let mut lease: Option<Instant> = None;
        // The send time of the last answered confirmation.
        let mut last_sent: Option<Instant> = None;
        let mut confirming: Option<Confirming> = None;
        let mut next_confirm = Instant::now();
        let mut interrupted = false;
        // The watch on our own node, kept across session state changes.
        let mut own: Option<OwnWatch> = None;
        // The read that arms it, in flight: awaited in the loop's `select!` with the lease's
        // end, never inline, so Active never outlives the lease while it is pending.
        let mut arming: Option<Arming> = None;
        // When the next arming may start (after a failed one).
        let mut arm_at = Instant::now();
        loop {
            if self.closed() {
                return Exit::Closed;
            }
            let status = *self.sess_rx.borrow_and_update();
            if self.session_gone(generation) {
                return Exit::SessionGone;
            }
            if status.timeout < counted {
                // Renegotiated lower: the lease already granted shrinks with it.
                counted = status.timeout;
                timing = LeaseTiming::of(counted);
                if let (Some(from), Some(_)) = (lease_from, lease) {
                    let until = from + timing.lease;
                    lease = Some(until);
                    self.lease.send_replace(Some(until));
                }
            }
            let connected = status.state == ConnectionState::Connected;
            let now = Instant::now();
            #[cfg(not(zooid_mutant = "election_active_past_lease"))]
            let confirmed = lease.is_some_and(|until| now < until);
            // A mutant the simulator must find (tests/sim): once confirmed, Active while
            // connected, past the lease.
            #[cfg(zooid_mutant = "election_active_past_lease")]
            let confirmed = lease.is_some();
            if connected && confirmed {
                if interrupted {
                    // Stop policy: the suspension ended this leadership; go to the back.
                    return Exit::Rejoin { delete: true };
                }
                publish(self, LeaderState::Active);
                if own.is_none() && arming.is_none() && now >= arm_at {
                    // Watch our own node, so a deletion by someone else ends the leadership.
                    let (zk, path) = (self.zk.clone(), node.path.clone());
                    arming = Some(Box::pin(async move {
                        zk.get_watched(generation, &path)
                            .await
                            .map(|(_, _, watch)| watch)
                    }));
                }
            } else if lease.is_some() || !connected {
                // Led before (or suspended before the first confirmation): the leadership is
                // not confirmed any more.
                if lease.is_some() {
                    publish(self, LeaderState::Paused);
                }
                if self.policy == PausePolicy::Stop {
                    interrupted = true;
                }
            }
            if confirming.is_none() && connected && now >= next_confirm {
                let sent = Instant::now();
                let (zk, group) = (self.zk.clone(), self.group.clone());
                confirming = Some(Box::pin(async move {
                    zk.sync(generation, &group).await.map(|_| sent)
                }));
            }
            // Wake when the lease runs out or the next confirmation is due.
            let mut wake = lease.filter(|until| now < *until);
            if confirming.is_none() && connected {
                wake = Some(wake.map_or(next_confirm, |w| w.min(next_confirm)));
            }
            let confirm_done = async {
                match confirming.as_mut() {
                    Some(pending) => pending.as_mut().await,
                    None => std::future::pending().await,
                }
            };
            if own.is_none() && arming.is_none() && connected && confirmed {
                // Not armed while Active: the last arming failed; try again at `arm_at`.
                wake = Some(wake.map_or(arm_at, |w| w.min(arm_at)));
            }
            let own_changed = async {
                match own.as_mut() {
                    Some(watch) => watch.as_mut().await,
                    None => std::future::pending().await,
                }
            };
            let armed = async {
                match arming.as_mut() {
                    Some(pending) => pending.as_mut().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                done = confirm_done => {
                    confirming = None;
                    match done {
                        Ok(sent) => {
                            // The answer proves the session alive on the ensemble's leader,
                            // which has heard (through its follower's ping replies, every
                            // tickTime/2) of our touches up to the previous confirmation, sent
                            // at least `renew` earlier: the servers cannot expire the session
                            // before that send time plus a whole session timeout. The lease
                            // counts from there.
                            if let Some(previous) = last_sent.replace(sent) {
                                lease_from = Some(previous);
                                let until = previous + timing.lease;
                                lease = Some(until);
                                self.lease.send_replace(Some(until));
                            }
                            next_confirm = sent + timing.renew;
                        }
                        Err(err) => {
                            tracing::debug!(group = %self.group, %err, "confirming the leadership through the quorum failed");
                            next_confirm = Instant::now() + timing.retry;
                        }
                    }
                }
                event = own_changed => {
                    if event.kind == EventKind::Deleted {
                        return Exit::Rejoin { delete: false };
                    }
                    // Data changed or a session event: re-arm / re-check.
                    own = None;
                }
                armed = armed => {
                    arming = None;
                    match armed {
                        Ok(watch) => own = Some(Box::pin(watch.changed())),
                        Err(Failure { verdict: Verdict::NoNode, .. }) => {
                            return Exit::Rejoin { delete: false }
                        }
                        Err(failure) if says_gone(&failure) => return Exit::SessionGone,
                        // Connection trouble: the session state will tell, or we retry shortly.
                        Err(err) => {
                            tracing::debug!(group = %self.group, %err, "watching our own candidate node failed; retrying");
                            arm_at = Instant::now() + Duration::from_millis(500);
                        }
                    }
                }
                _ = sleep_until_opt(wake) => {}
                _ = self.sess_rx.changed() => {}
                _ = self.close.changed() => {}
            }
        }
    }
}
