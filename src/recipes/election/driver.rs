//! The candidacy's driver task: joins the line (a lost create resolved by its marker), watches
//! only its predecessor, leads, follows the session's state and deletes its node when done.

use super::lease::{sleep_until_opt, Confirming, LeaseTiming};
use super::line::{candidates, group_epoch, parse_candidate, token, MARKER_PREFIX, SEQ_PREFIX};
use super::*;
use crate::zk::session::WeakSession;

use tokio::time::Instant;

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
pub(super) struct Driver {
    pub(super) session: Session,
    pub(super) sess_rx: watch::Receiver<SessionStatus>,
    pub(super) group: String,
    pub(super) payload: Vec<u8>,
    pub(super) policy: PausePolicy,
    pub(super) shared: Arc<Mutex<Shared>>,
    pub(super) status: watch::Sender<ElectionStatus>,
    pub(super) lease: watch::Sender<Option<std::time::Instant>>,
    pub(super) close: watch::Receiver<bool>,
}

impl Driver {
    pub(super) async fn run(mut self) {
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
                            // A rejoin waits for the old node to go, however long that takes:
                            // a new node would line up behind it, and nobody would lead.
                            let deadline = matches!(exit, Exit::Closed)
                                .then(|| Instant::now() + self.delete_bound());
                            if self
                                .delete_node(&client, generation, &node.path, deadline)
                                .await
                            {
                                exit
                            } else {
                                // Only a closed candidacy gives up on it (resign's bound).
                                self.leave_behind(generation, &node.path);
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
                let mut multi = ClientMulti::new(client);
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

    /// Reads our new node's stat (it must belong to our session), then the group node's: our
    /// node lives in it now, so it cannot be deleted and re-created under us, and its epoch with
    /// our sequence number is the token.
    async fn confirm(
        &mut self,
        client: &Client,
        generation: u64,
        path: &str,
    ) -> Result<Node, Exit> {
        loop {
            let read = async {
                let (_, stat) = self.req(generation, client.get_data(path)).await?;
                let (data, group) = self.req(generation, client.get_data(&self.group)).await?;
                Ok((stat, group_epoch(&data, group.ctime)))
            };
            match read.await.classified() {
                Ok((stat, epoch)) => return self.check_owner(client, path, &stat, epoch),
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

    fn check_owner(
        &self,
        client: &Client,
        path: &str,
        stat: &Stat,
        epoch: i64,
    ) -> Result<Node, Exit> {
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
            token: token(epoch, candidate.seq),
        })
    }

    /// The group node's epoch, read now.
    async fn current_epoch(&mut self, client: &Client, generation: u64) -> Result<i64, Exit> {
        loop {
            match self
                .req(generation, client.get_data(&self.group))
                .await
                .classified()
            {
                Ok((data, stat)) => return Ok(group_epoch(&data, stat.ctime)),
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
                // The token counts the group's epoch as it is now: a raise by `bump_epoch`
                // since we joined (after a restore from an older snapshot) counts.
                let node = match self.current_epoch(client, generation).await {
                    Ok(epoch) => Node {
                        token: token(epoch, node.seq),
                        ..node.clone()
                    },
                    Err(exit) => return exit,
                };
                return self.lead(client, generation, &node).await;
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

    /// Leads until the candidacy ends: Active while connected *and* confirmed through the
    /// quorum (a `sync` answered within the lease, renewed every sixth of the session timeout),
    /// Paused while suspended or unconfirmed. A server cut off from the quorum keeps answering
    /// our pings for `syncLimit` ticks, which may be longer than the session: only an answered
    /// `sync` (forwarded to the ensemble's leader) proves the session is still alive there.
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
        let timing = LeaseTiming::of(self.sess_rx.borrow().timeout);
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
            let connected = status.state == ConnectionState::Connected;
            let now = Instant::now();
            let confirmed = lease.is_some_and(|until| now < until);
            if connected && confirmed {
                if interrupted {
                    // Stop policy: the suspension ended this leadership; go to the back.
                    return Exit::Rejoin { delete: true };
                }
                publish(self, LeaderState::Active);
                if own.is_none() && arming.is_none() && now >= arm_at {
                    // Watch our own node, so a deletion by someone else ends the leadership.
                    let (session, client, path) =
                        (self.session.clone(), client.clone(), node.path.clone());
                    arming = Some(Box::pin(async move {
                        session
                            .run(generation, client.get_and_watch_data(&path))
                            .await
                            .map(|(_, _, watcher)| watcher)
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
                let (session, client, group) =
                    (self.session.clone(), client.clone(), self.group.clone());
                confirming = Some(Box::pin(async move {
                    session
                        .run(generation, client.sync(&group))
                        .await
                        .map(|_| sent)
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
                                let until = previous + timing.lease;
                                lease = Some(until);
                                self.lease.send_replace(Some(until.into_std()));
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
                    if event.event_type == EventType::NodeDeleted {
                        return Exit::Rejoin { delete: false };
                    }
                    // Data changed or a session event: re-arm / re-check.
                    own = None;
                }
                armed = armed => {
                    arming = None;
                    match armed.classified() {
                        Ok(watcher) => own = Some(Box::pin(watcher.changed())),
                        Err((Verdict::NoNode, _)) => return Exit::Rejoin { delete: false },
                        Err((Verdict::Expired | Verdict::Closed, _)) => return Exit::SessionGone,
                        // Connection trouble: the session state will tell, or we retry shortly.
                        Err((_, err)) => {
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

    /// How long a closed candidacy (resign, drop) tries to delete its node before it leaves it
    /// to [`clean_left_node`]: twice the request limit.
    fn delete_bound(&self) -> Duration {
        2 * self.session.request_limit()
    }

    /// Deletes our node (idempotent: its name is unique and never reused). True once it is
    /// gone: deleted, found absent, or gone with its session. Until `deadline` when there is
    /// one; without one, for as long as the session lives (a rejoin), until the candidacy is
    /// closed, which bounds it as a resign from then on. False: it may still be there.
    async fn delete_node(
        &mut self,
        client: &Client,
        generation: u64,
        path: &str,
        mut deadline: Option<Instant>,
    ) -> bool {
        let mut close = self.close.clone();
        // Between failed attempts: 50 ms, doubling to 500 ms (a refusal may last).
        let mut pause = Duration::from_millis(50);
        let mut failures: u64 = 0;
        loop {
            if deadline.is_none() && self.closed() {
                deadline = Some(Instant::now() + self.delete_bound());
            }
            let until = deadline.unwrap_or_else(far_future);
            if Instant::now() >= until {
                return false;
            }
            let attempt = self.req(generation, client.delete(path, None));
            let Ok(outcome) = tokio::time::timeout_at(until, attempt).await else {
                return false;
            };
            let err = match outcome.classified() {
                Ok(()) | Err((Verdict::NoNode, _)) => return true,
                // The node goes with its session.
                Err((Verdict::Expired | Verdict::Closed, _)) => return true,
                Err((_, err)) => err,
            };
            failures += 1;
            if failures >= 8 && failures.is_power_of_two() {
                tracing::warn!(%err, path, failures, "deleting the candidate node keeps failing; still trying (nobody else leads while it is there)");
            } else {
                tracing::debug!(%err, path, "deleting the candidate node; retrying");
            }
            // Wait until the session is usable again (a close of the candidacy sets the bound).
            let nap = pause;
            pause = (pause * 2).min(Duration::from_millis(500));
            let wait = async {
                tokio::time::sleep(nap).await;
                self.wait_same_session(generation).await
            };
            tokio::select! {
                alive = tokio::time::timeout_at(until, wait) => match alive {
                    Ok(true) => {}
                    Ok(false) => return true, // gone with its session
                    Err(_) => return false,
                },
                _ = close.changed(), if deadline.is_none() => {}
            }
        }
    }

    /// Leaves our node to a background task that deletes it (a closed candidacy's delete gave
    /// up): [`Election::resign`] reports it until it is gone.
    fn leave_behind(&self, generation: u64, path: &str) {
        tracing::warn!(
            group = %self.group,
            path,
            "could not delete the candidate node in time; it may still be there, and while it is, nobody else leads: deleting it in the background until it is gone or its session ends"
        );
        lock(&self.shared).left = Some(path.to_string());
        tokio::spawn(clean_left_node(
            self.session.downgrade(),
            generation,
            path.to_string(),
            self.shared.clone(),
        ));
    }
}

/// A deadline that never comes (about 30 years).
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86400 * 365 * 30)
}

/// Deletes a candidate node left behind by a delete that gave up, for as long as it takes:
/// until it is gone, or its session is (given up by the session layer, or closed because the
/// application dropped its last handle: the node goes with it). It holds no session handle
/// between attempts, so it never keeps the session, and the node, alive by itself.
async fn clean_left_node(
    session: WeakSession,
    generation: u64,
    path: String,
    shared: Arc<Mutex<Shared>>,
) {
    let mut pause = Duration::from_millis(100);
    let mut failures: u64 = 0;
    let how = loop {
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(500));
        let Some(session) = session.upgrade() else {
            break "the application closed the session";
        };
        if session.is_gone_generation(generation) {
            break "its session is gone";
        }
        let (client, current) = session.client();
        if current != generation {
            break "its session is gone";
        }
        if session.status().state != ConnectionState::Connected {
            continue;
        }
        match session
            .run(generation, client.delete(&path, None))
            .await
            .classified()
        {
            Ok(()) => break "deleted",
            Err((Verdict::NoNode, _)) => break "found gone",
            Err((Verdict::Expired | Verdict::Closed, _)) => break "its session is gone",
            Err((_, err)) => {
                failures += 1;
                if failures.is_power_of_two() {
                    tracing::warn!(%err, path, failures, "deleting a left-behind candidate node failed again; still trying");
                }
            }
        }
    };
    tracing::info!(path, how, "the left-behind candidate node is gone");
    let mut shared = lock(&shared);
    if shared.left.as_deref() == Some(path.as_str()) {
        shared.left = None;
    }
}

/// A pending notification of the watch on our own node.
type OwnWatch =
    std::pin::Pin<Box<dyn std::future::Future<Output = zookeeper_client::WatchedEvent> + Send>>;

/// The read that arms the watch on our own node, in flight.
type Arming = std::pin::Pin<
    Box<
        dyn std::future::Future<
                Output = std::result::Result<zookeeper_client::OneshotWatcher, ZkError>,
            > + Send,
    >,
>;

/// The fate of the candidate multis that expected one group version.
enum Resolved {
    /// The group node is still at that version: neither copy applied yet; resend the same.
    Pending,
    /// The version moved on and our marker node exists: a copy applied.
    Found(String),
    /// The version moved on without our marker node: no copy applied, and none ever will.
    Never,
}
