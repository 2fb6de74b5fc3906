//! The line of consumers waiting for work: waiter nodes, the head watching the queue and each
//! other waiter watching only its predecessor (no herd).

use super::lock::TryClaim;
use super::*;

/// Where a waiter stands in the line.
enum Position {
    Head,
    /// Behind the named waiter, this many places behind the head (1: second in line).
    Behind(String, u32),
    Missing,
}

/// A waiter node in the line; deleted when dropped (also when the claim future is cancelled),
/// so a departed consumer never blocks the line until its session ends. A delete that fails is
/// retried in the background until the node is gone or its session is.
struct Waiter {
    queue: Arc<Inner>,
    client: Client,
    generation: u64,
    name: String,
}

impl Waiter {
    fn path(&self) -> String {
        format!("{}/waiters/{}", self.queue.path, self.name)
    }

    /// Deletes the waiter node now; if that fails, keeps trying in the background.
    async fn leave(mut self) {
        let path = self.path();
        self.name.clear();
        let once = self
            .queue
            .delete_waiter_once(&self.client, self.generation, &path);
        // Bounded, so a claim returns in time also when no server answers.
        if !within(Some(Instant::now() + CLAIM_SLACK), once)
            .await
            .unwrap_or(false)
        {
            self.queue
                .delete_waiter_in_background(self.client.clone(), self.generation, path);
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if self.name.is_empty() {
            return;
        }
        self.queue
            .delete_waiter_in_background(self.client.clone(), self.generation, self.path());
    }
}

impl Inner {
    pub(super) async fn claim(
        self: &Arc<Self>,
        timeout: Option<Duration>,
    ) -> Result<Option<Claim>> {
        let mut waiter: Option<Waiter> = None;
        let out = self.claim_in_line(timeout, &mut waiter).await;
        // Leave the line before returning, so the next waiter takes over at once (a cancelled
        // claim leaves it in the background, through the waiter's Drop).
        if let Some(w) = waiter.take() {
            w.leave().await;
        }
        out
    }

    async fn claim_in_line(
        self: &Arc<Self>,
        timeout: Option<Duration>,
        waiter: &mut Option<Waiter>,
    ) -> Result<Option<Claim>> {
        let deadline = timeout.map(|t| Instant::now() + t);
        // Requests made for this claim give up here: the claim returns within its timeout and
        // this slack also when no server answers (a request given up is as unknown as a lost
        // reply, and resolved like one).
        let bound = deadline.map(|d| d + CLAIM_SLACK);
        let mut status = self.session.subscribe();
        let mut backoff = Duration::from_millis(20);
        loop {
            let (client, generation) = self.session.client();
            if waiter.as_ref().is_some_and(|w| w.generation != generation) {
                *waiter = None;
            }
            let position = match &waiter {
                None => None,
                Some(w) => match within(bound, self.position(&client, generation, w))
                    .await
                    .unwrap_or(Err(ZkError::Timeout))
                {
                    Ok(p) => Some(p),
                    // The queue was deleted under us: the next try creates it again.
                    Err(e) if classify(&e) == Verdict::NoNode => Some(Position::Missing),
                    Err(e) if fate(&e) == Fate::Refused => return Err(self.claim_error(e)),
                    Err(_) => {
                        if !sleep_or_deadline(&mut backoff, deadline).await {
                            return Ok(None);
                        }
                        continue;
                    }
                },
            };
            let mut watches = Vec::new();
            let mut behind = None;
            match position {
                Some(Position::Missing) => {
                    *waiter = None;
                    continue;
                }
                Some(Position::Behind(pred, places)) => {
                    behind = Some(places);
                    let path = format!("{}/waiters/{pred}", self.path);
                    // getData, not exists: a getData on a node already gone leaves no watch
                    // behind (an exists watch on it would wait for ever for a creation).
                    let watched = self.call(generation, client.get_and_watch_data(&path));
                    match within(bound, watched)
                        .await
                        .unwrap_or(Err(ZkError::Timeout))
                        .classified()
                    {
                        Ok((_, _, watcher)) => watches.push(watcher),
                        Err((Verdict::NoNode, _)) => continue,
                        Err((verdict, e)) if verdict.fate() == Fate::Refused => {
                            return Err(self.claim_error(e))
                        }
                        Err(_) => {
                            if !sleep_or_deadline(&mut backoff, deadline).await {
                                return Ok(None);
                            }
                            continue;
                        }
                    }
                }
                head_or_not_in_line => {
                    let head = matches!(head_or_not_in_line, Some(Position::Head));
                    match self
                        .try_claim(&client, generation, head, &mut watches, bound)
                        .await
                    {
                        Ok(TryClaim::Claimed(claim)) => return Ok(Some(*claim)),
                        Ok(TryClaim::Nothing) => backoff = Duration::from_millis(20),
                        Ok(TryClaim::Retry) => {
                            if !sleep_or_deadline(&mut backoff, deadline).await {
                                return Ok(None);
                            }
                            continue;
                        }
                        Err(e) => return Err(e),
                    }
                    if !head {
                        if deadline.is_some_and(|d| Instant::now() >= d) {
                            return Ok(None);
                        }
                        match self.join(&client, generation).await {
                            Ok(w) => *waiter = Some(w),
                            // The queue was deleted under us: the next try creates it again.
                            Err(e) if classify(&e) == Verdict::NoNode => {}
                            Err(e) if fate(&e) == Fate::Refused => return Err(self.claim_error(e)),
                            Err(_) => {
                                if !sleep_or_deadline(&mut backoff, deadline).await {
                                    return Ok(None);
                                }
                            }
                        }
                        continue;
                    }
                }
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(None);
            }
            // Wait for a watch, the deadline, or a change of the session.
            let watched = async {
                let futures: Vec<_> = watches.into_iter().map(|w| Box::pin(w.changed())).collect();
                futures::select_all_compat(futures).await
            };
            // A waiter behind the head also looks at the queue now and then: the head may be a
            // node whose owner is not waiting (paused, or a leftover that is still being
            // deleted), and items must not sit unclaimed behind it. The further back, the
            // rarer, so an idle line costs about ln(waiters) listings per period.
            let recheck = behind.map(|places| {
                Instant::now() + self.session.request_limit().max(Duration::from_secs(1)) * places
            });
            tokio::select! {
                _ = watched => self.stats.event(),
                _ = sleep_until_opt(deadline) => return Ok(None),
                _ = sleep_until_opt(recheck) => {
                    match self.try_claim(&client, generation, false, &mut Vec::new(), bound).await {
                        Ok(TryClaim::Claimed(claim)) => return Ok(Some(*claim)),
                        Ok(_) => {}
                        Err(e) => return Err(e),
                    }
                }
                changed = status.changed() => {
                    if changed.is_err() {
                        return Err(ZooidError::Closed { what: format!("session of queue {}", self.path) });
                    }
                }
            }
        }
    }

    pub(super) fn claim_error(&self, err: ZkError) -> ZooidError {
        if classify(&err) == Verdict::NoNode {
            self.not_found()
        } else {
            self.zk_error("claim", err)
        }
    }

    /// Joins the line: an EPHEMERAL_SEQUENTIAL waiter node (found again by its marker when the
    /// reply is lost).
    async fn join(
        self: &Arc<Self>,
        client: &Client,
        generation: u64,
    ) -> std::result::Result<Waiter, ZkError> {
        let marker = random_marker();
        let prefix = format!("{}/waiters/w-{marker}-", self.path);
        let options = CreateMode::EphemeralSequential.with_acls(self.session.default_acls());
        let name = match self
            .call(generation, client.create(&prefix, b"", &options))
            .await
        {
            Ok((_, seq)) => format!("w-{marker}-{seq}"),
            Err(e) if fate(&e) == Fate::Unknown => {
                // Our create may have applied: look for its marker, after a sync so the listing
                // follows every write the servers committed before it.
                let found = self.find_waiter(client, generation, &marker).await;
                match found {
                    Ok(Some(name)) => name,
                    Ok(None) | Err(_) => {
                        // Not there (or unknown): it may still land (a request in flight at a
                        // connection loss can apply later). Look for it in the background and
                        // delete it if it shows up, so no untracked node heads the line.
                        self.sweep_waiter(client.clone(), generation, marker);
                        return Err(e);
                    }
                }
            }
            Err(e) => return Err(e),
        };
        Ok(Waiter {
            queue: self.clone(),
            client: client.clone(),
            generation,
            name,
        })
    }

    async fn position(
        &self,
        client: &Client,
        generation: u64,
        w: &Waiter,
    ) -> std::result::Result<Position, ZkError> {
        let mut waiters: Vec<(u64, String)> = self
            .list(client, generation, &format!("{}/waiters", self.path))
            .await?
            .into_iter()
            .filter_map(|n| sequence_of(&n).map(|s| (s, n)))
            .collect();
        waiters.sort();
        let Some(at) = waiters.iter().position(|(_, n)| *n == w.name) else {
            return Ok(Position::Missing);
        };
        Ok(if at == 0 {
            Position::Head
        } else {
            Position::Behind(waiters[at - 1].1.clone(), at as u32)
        })
    }
}

impl Inner {
    /// The waiter node with `marker`, after a `sync` of the line.
    async fn find_waiter(
        &self,
        client: &Client,
        generation: u64,
        marker: &str,
    ) -> std::result::Result<Option<String>, ZkError> {
        let waiters = format!("{}/waiters", self.path);
        self.call(generation, client.sync(&waiters)).await?;
        let needle = format!("w-{marker}-");
        Ok(self
            .list(client, generation, &waiters)
            .await?
            .into_iter()
            .find(|w| w.starts_with(&needle)))
    }

    /// One delete of a waiter node: true when it is gone (deleted, already gone, or gone with
    /// its session), false when the outcome is unknown.
    async fn delete_waiter_once(&self, client: &Client, generation: u64, path: &str) -> bool {
        if self.session.is_gone_generation(generation) {
            return true;
        }
        match self.call(generation, client.delete(path, None)).await {
            Ok(()) => true,
            Err(e) => match classify(&e) {
                Verdict::NoNode => true,
                _ if fate(&e) == Fate::Unknown => false,
                _ => {
                    // Refused otherwise (not authorized...): nothing a retry changes; the node
                    // goes with the session, and waiters behind it look at the queue anyway.
                    tracing::warn!(queue = %self.path, path, "cannot delete a waiter node: {e}");
                    true
                }
            },
        }
    }

    /// Deletes a waiter node in the background, retrying until it is gone or its session is.
    fn delete_waiter_in_background(
        self: &Arc<Self>,
        client: Client,
        generation: u64,
        path: String,
    ) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            // Without a runtime the node stays until the session ends; the line does not wait
            // for it (waiters behind look at the queue now and then).
            return;
        };
        let queue = self.clone();
        handle.spawn(async move {
            let mut backoff = Duration::from_millis(50);
            while !queue.delete_waiter_once(&client, generation, &path).await {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(1000));
            }
        });
    }

    /// After a waiter create whose outcome stayed unknown: for a while, look for its node and
    /// delete it if it shows up.
    fn sweep_waiter(self: &Arc<Self>, client: Client, generation: u64, marker: String) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let queue = self.clone();
        handle.spawn(async move {
            let until = Instant::now()
                + queue.session.request_limit().max(Duration::from_secs(1)) * super::lock::STRAY_WATCH;
            while Instant::now() < until && !queue.session.is_gone_generation(generation) {
                if let Ok(Some(name)) = queue.find_waiter(&client, generation, &marker).await {
                    let path = format!("{}/waiters/{name}", queue.path);
                    tracing::info!(queue = %queue.path, waiter = %name, "deleting a waiter whose create was in doubt");
                    queue.delete_waiter_in_background(client, generation, path);
                    return;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        });
    }
}
