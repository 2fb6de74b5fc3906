//! The line of consumers waiting for work: waiter nodes, the head watching the queue and each
//! other waiter watching only its predecessor (no herd).

use super::lock::TryClaim;
use super::*;

/// Where a waiter stands in the line.
enum Position {
    Head,
    Behind(String),
    Missing,
}

/// A waiter node in the line; deleted when dropped (also when the claim future is cancelled),
/// so a departed consumer never blocks the line until its session ends.
struct Waiter {
    queue: Arc<Inner>,
    client: Client,
    generation: u64,
    name: String,
}

impl Waiter {
    /// Deletes the waiter node now.
    async fn leave(mut self) {
        let path = format!("{}/waiters/{}", self.queue.path, self.name);
        self.name.clear();
        let _ = self
            .queue
            .call(self.generation, self.client.delete(&path, None))
            .await;
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if self.name.is_empty() {
            return;
        }
        let path = format!("{}/waiters/{}", self.queue.path, self.name);
        let client = self.client.clone();
        let queue = self.queue.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                queue.stats.request();
                let _ =
                    tokio::time::timeout(queue.session.request_limit(), client.delete(&path, None))
                        .await;
            });
        }
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
        let mut status = self.session.subscribe();
        let mut backoff = Duration::from_millis(20);
        loop {
            let (client, generation) = self.session.client();
            if waiter.as_ref().is_some_and(|w| w.generation != generation) {
                *waiter = None;
            }
            let position = match &waiter {
                None => None,
                Some(w) => match self.position(&client, generation, w).await {
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
            match position {
                Some(Position::Missing) => {
                    *waiter = None;
                    continue;
                }
                Some(Position::Behind(pred)) => {
                    let path = format!("{}/waiters/{pred}", self.path);
                    // getData, not exists: a getData on a node already gone leaves no watch
                    // behind (an exists watch on it would wait for ever for a creation).
                    match self
                        .call(generation, client.get_and_watch_data(&path))
                        .await
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
                        .try_claim(&client, generation, head, &mut watches, deadline)
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
            tokio::select! {
                _ = watched => self.stats.event(),
                _ = sleep_until_opt(deadline) => return Ok(None),
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
                let waiters = self
                    .list(client, generation, &format!("{}/waiters", self.path))
                    .await?;
                let needle = format!("w-{marker}-");
                match waiters.into_iter().find(|w| w.starts_with(&needle)) {
                    Some(name) => name,
                    None => return Err(e),
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
            Position::Behind(waiters[at - 1].1.clone())
        })
    }
}
