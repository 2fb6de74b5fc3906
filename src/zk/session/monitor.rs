//! The session's monitor: follows the current generation's raw client states, publishes what
//! they mean, gives up a generation when it is lost, opens the next one, and has the servers
//! confirm the end of every generation given up.

#[allow(clippy::wildcard_imports)]
use super::*;

impl Inner {
    pub(super) fn read_current(&self) -> Current {
        // Written only by whole assignments, so a poisoned lock still holds a valid value.
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Publishes `state` for `generation`; `stop_acting` counts for `Connected` (the lease ran
    /// out) and `Suspended` (half a timeout without a server, or the lease), and is always
    /// `true` when `Lost` or `Closed`.
    fn publish(&self, state: ConnectionState, generation: u64, client: &Client, stop_acting: bool) {
        let stop_acting = match state {
            ConnectionState::Connected | ConnectionState::Suspended => stop_acting,
            ConnectionState::Lost | ConnectionState::Closed => true,
        };
        // The client's own count of its connections, read now: never behind the state published
        // (the client counts a connection before it reports it connected).
        let current = self.read_current();
        let connection = match current.generation == generation {
            true => current.offset + client.connection(),
            false => 0,
        };
        let mut status = SessionStatus {
            state,
            generation,
            session_id: client.session_id().0,
            timeout: client.session_timeout(),
            requested: self.options.session_timeout,
            connection,
            stop_acting,
        };
        self.status.send_if_modified(|old| {
            if !status.may_follow(old) {
                return false;
            }
            // Never backwards (a late status of a generation given up keeps the last number).
            status.connection = status.connection.max(old.connection);
            if *old == status {
                return false;
            }
            tracing::info!(
                state = state.as_str(),
                stop_acting,
                generation,
                session = %format_args!("{:#x}", status.session_id),
                "ZooKeeper session state"
            );
            *old = status;
            true
        });
    }

    /// Replaces the session of `lost_generation` by a new one, once: callers reporting an older
    /// generation find the replacement done. Returns whether a newer generation is in place.
    pub(super) async fn replace(&self, lost_generation: u64, why: &str) -> bool {
        let _one_at_a_time = self.replacing.lock().await;
        let current = self.read_current();
        if current.generation != lost_generation {
            return true;
        }
        if self.status.borrow().state != ConnectionState::Lost {
            self.losses.fetch_add(1, Ordering::Relaxed);
            metrics::counter!("zooid_session_losses_total").increment(1);
        }
        // Before anyone can see the generation given up, so `confirm_gone` finds its record.
        self.confirm_in_background(lost_generation, current.client.session());
        let (lost, client) = (current.generation, &current.client);
        self.publish(ConnectionState::Lost, lost, client, true);
        tracing::warn!(
            generation = lost_generation,
            why,
            "ZooKeeper session lost; opening a new one"
        );
        match open_client(&self.connect, &self.options, self.server_version).await {
            Ok((client, _)) => {
                let generation = lost_generation + 1;
                // Past every connection number published for the generations before.
                let offset = (current.offset + current.client.connection())
                    .max(self.status.borrow().connection);
                *self.current.write().unwrap_or_else(|p| p.into_inner()) = Current {
                    client: client.clone(),
                    generation,
                    offset,
                };
                tracing::info!(
                    old = %format_args!("{:#x}", current.client.session_id().0),
                    new = %format_args!("{:#x}", client.session_id().0),
                    generation,
                    "ZooKeeper session renewed"
                );
                // A held lease starts over in the new generation: stop acting until the
                // quorum confirmed it (src/zk/session/lease.rs).
                let stop =
                    self.lease_ended(generation, client.session_timeout(), Instant::now());
                self.publish(ConnectionState::Connected, generation, &client, stop);
                publish_timeouts(&self.status.borrow());
                metrics::gauge!("zooid_session_generation").set(generation as f64);
                true
            }
            Err(err) => {
                tracing::warn!(%err, "could not open a new ZooKeeper session yet");
                false
            }
        }
    }
}

impl Inner {
    /// Starts asking the servers to confirm that the session of `generation` (given up) can no
    /// longer apply a request, once per generation; the answer is kept for
    /// [`Session::confirm_gone`]. Retried until the servers answer or the last [`Session`]
    /// handle is dropped.
    fn confirm_in_background(&self, generation: u64, session: &SessionInfo) {
        let mut confirmations = self.confirmations.lock().unwrap_or_else(|p| p.into_inner());
        if confirmations.contains_key(&generation) {
            return;
        }
        let (tx, rx) = watch::channel(None);
        confirmations.insert(generation, rx);
        let connector = match connector_for(&self.options, self.server_version) {
            Ok(connector) => connector,
            Err(err) => {
                tx.send_replace(Some(Err(err.to_string())));
                return;
            }
        };
        let (connect, secure) = (self.connect.clone(), self.options.tls.is_some());
        let (session, mut alive) = (session.clone(), self.alive.clone());
        // The given-up session's negotiated timeout: attempts that go unanswered leave the
        // servers that long and more of silence, so they can expire it (fate.rs).
        let quiet = self.status.borrow().timeout.max(Duration::from_millis(100));
        tokio::spawn(async move {
            let started = Instant::now();
            let verdict = loop {
                let round = confirm_dead_over(
                    &connector,
                    &connect,
                    secure,
                    &session,
                    CONFIRM_ROUND,
                    Some(quiet),
                );
                let outcome = tokio::select! {
                    biased;
                    outcome = round => outcome,
                    _ = alive.changed() => return,
                };
                match outcome {
                    Ok(confirmed) => break Ok(confirmed),
                    Err(err @ Unconfirmed::Refused { .. }) => break Err(err.to_string()),
                    Err(err @ Unconfirmed::Deadline { .. }) => {
                        tracing::warn!(generation, %err, "the end of a given-up ZooKeeper session is not confirmed yet; asking again");
                    }
                }
            };
            let waited = started.elapsed();
            metrics::histogram!("zooid_session_confirm_seconds").record(waited.as_secs_f64());
            match &verdict {
                Ok(how) => {
                    tracing::info!(generation, session = %format_args!("{:#x}", session.id().0), ?how, ?waited, "the servers confirmed the given-up session can no longer write")
                }
                Err(why) => {
                    tracing::warn!(generation, %why, "the servers refused to confirm the end of a given-up session")
                }
            }
            tx.send_replace(Some(verdict));
        });
    }
}

/// Why the monitor decided a generation's session is lost.
fn lost_reason(state: SessionState) -> Option<&'static str> {
    match state {
        SessionState::Expired => Some("the servers expired the session"),
        SessionState::AuthFailed => Some("authentication failed"),
        SessionState::Closed => Some("the client was closed"),
        _ => None,
    }
}

/// Follows the current generation's raw client states, publishes what they mean, declares the
/// session lost when it expired or stayed disconnected for its whole timeout, and replaces it.
/// Ends when the last [`Session`] handle is dropped.
pub(super) async fn monitor(inner: std::sync::Weak<Inner>, mut alive: watch::Receiver<()>) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let Some(strong) = inner.upgrade() else {
            return;
        };
        let Current {
            client, generation, ..
        } = strong.read_current();
        drop(strong);
        let mut watcher = client.state_watcher();
        let mut state = watcher.peek_state();
        let mut suspended_since: Option<Instant> = None;
        let mut status_rx = match inner.upgrade() {
            Some(strong) => strong.status.subscribe(),
            None => return,
        };
        let why = loop {
            let Some(strong) = inner.upgrade() else {
                return;
            };
            if strong.read_current().generation != generation {
                break None; // Replaced by a caller that reported the loss.
            }
            if let Some(why) = lost_reason(state) {
                break Some(why);
            }
            let connected = matches!(
                state,
                SessionState::SyncConnected | SessionState::ConnectedReadOnly
            );
            // Stop acting half-way through a suspension, or at the end of a held lease
            // (src/zk/session/lease.rs), whichever comes first.
            let now = Instant::now();
            match connected {
                true => suspended_since = None,
                false => {
                    suspended_since.get_or_insert(now);
                }
            }
            let halfway = suspended_since.map(|since| since + client.session_timeout() / 2);
            let lease_ends = strong.lease_ends(generation, client.session_timeout());
            let stop_at = match (halfway, lease_ends) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let stop = stop_at.is_some_and(|at| now >= at);
            let published = match connected {
                true => ConnectionState::Connected,
                false => ConnectionState::Suspended,
            };
            strong.publish(published, generation, &client, stop);
            let renewed = Arc::clone(&strong.lease_renewed);
            drop(strong);
            let deadline = suspended_since.map(|since| since + client.session_timeout());
            // Wakes the loop once, to publish `stop_acting`, at the lease's end or half-way
            // through the suspension.
            let stop_at = stop_at.filter(|at| *at > now);
            tokio::select! {
                biased;
                changed = alive.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                // The client counts its connections itself (`Client::connection`), so a
                // disconnection and reconnection between two looks is counted all the same.
                next = watcher.changed() => state = next,
                _ = sleep_until_opt(deadline) => {
                    break Some("no server answered for the whole session timeout");
                }
                _ = sleep_until_opt(stop_at) => {}
                // A `sync` renewed the lease: publish `stop_acting` again.
                _ = renewed.notified() => {}
                // A caller may have replaced the generation: re-check it.
                _ = status_rx.changed() => {}
            }
        };
        let Some(why) = why else { continue };
        // Given up for good: never watch its client again (it may reconnect, but its
        // generation must not be published as anything but Lost); open the next one until it
        // opens.
        loop {
            let Some(strong) = inner.upgrade() else {
                return;
            };
            if strong.replace(generation, why).await {
                backoff = Duration::from_millis(100);
                break;
            }
            drop(strong);
            tokio::select! {
                biased;
                changed = alive.changed() => if changed.is_err() { return },
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
    }
}

pub(super) async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
