//! The line of consumers waiting for work: waiter nodes, the head watching the queue and each
//! other waiter watching only its predecessor (no herd).

use super::lock::TryClaim;
use super::stray::Look;
use super::*;
use crate::zk::interface::spawn_background;

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
        let once = self.queue.delete_waiter_once(self.generation, &path);
        // Bounded, so a claim returns in time also when no server answers.
        if !within(Some(Instant::now() + CLAIM_SLACK), once)
            .await
            .unwrap_or(false)
        {
            self.queue
                .delete_waiter_in_background(self.generation, path);
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if self.name.is_empty() {
            return;
        }
        self.queue
            .delete_waiter_in_background(self.generation, self.path());
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
        let mut status = self.zk.subscribe();
        let mut backoff = Duration::from_millis(20);
        loop {
            // The live generation and its session's id, read together.
            let now = self.zk.status();
            let (generation, session_id) = (now.generation, now.session_id);
            if waiter.as_ref().is_some_and(|w| w.generation != generation) {
                *waiter = None;
            }
            let position = match &waiter {
                None => None,
                Some(w) => match within(bound, self.position(generation, w))
                    .await
                    .unwrap_or_else(|| Err(gave_up()))
                {
                    Ok(p) => Some(p),
                    // The queue was deleted under us: the next try creates it again.
                    Err(e) if e.verdict == Verdict::NoNode => Some(Position::Missing),
                    Err(e) if e.verdict.fate() == Fate::Refused => return Err(self.claim_error(e)),
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
                    let watched = self.call(self.zk.get_watched(generation, &path));
                    match within(bound, watched)
                        .await
                        .unwrap_or_else(|| Err(gave_up()))
                    {
                        Ok((_, _, watch)) => watches.push(watch),
                        Err(Failure {
                            verdict: Verdict::NoNode,
                            ..
                        }) => continue,
                        Err(e) if e.verdict.fate() == Fate::Refused => {
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
                        .try_claim(generation, session_id, head, &mut watches, bound)
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
                        match self.join(generation).await {
                            Ok(w) => *waiter = Some(w),
                            // The queue was deleted under us: the next try creates it again.
                            Err(e) if e.verdict == Verdict::NoNode => {}
                            Err(e) if e.verdict.fate() == Fate::Refused => {
                                return Err(self.claim_error(e))
                            }
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
                Instant::now() + self.zk.request_limit().max(Duration::from_secs(1)) * places
            });
            tokio::select! {
                biased;
                _ = watched => self.stats.event(),
                _ = sleep_until_opt(deadline) => return Ok(None),
                _ = sleep_until_opt(recheck) => {
                    match self.try_claim(generation, session_id, false, &mut Vec::new(), bound).await {
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

    pub(super) fn claim_error(&self, err: Failure) -> ZooidError {
        if err.verdict == Verdict::NoNode {
            self.not_found()
        } else {
            self.zk_error("claim", err)
        }
    }

    /// Joins the line: an EPHEMERAL_SEQUENTIAL waiter node (found again by its marker when the
    /// reply is lost).
    async fn join(self: &Arc<Self>, generation: u64) -> std::result::Result<Waiter, Failure> {
        let marker = random_marker();
        let prefix = format!("{}/waiters/w-{marker}-", self.path);
        let create = Create::new(Mode::EphemeralSequential);
        let name = match self
            .call(self.zk.create(generation, &prefix, b"", &create))
            .await
        {
            Ok((created, _)) => node_name(&created).to_string(),
            Err(e) if e.verdict.fate() == Fate::Unknown => {
                // Our create may have applied: look for its marker, after a sync so the listing
                // follows every write the servers committed before it.
                let found = self.find_waiter(generation, &marker).await;
                match found {
                    Ok(Some(name)) => name,
                    Ok(None) | Err(_) => {
                        // Not there (or unknown): it may still land (a request in flight at a
                        // connection loss can apply later). Look for it in the background and
                        // delete it if it shows up, so no untracked node heads the line.
                        self.sweep_waiter(generation, marker);
                        return Err(e);
                    }
                }
            }
            Err(e) => return Err(e),
        };
        Ok(Waiter {
            queue: self.clone(),
            generation,
            name,
        })
    }

    async fn position(
        &self,
        generation: u64,
        w: &Waiter,
    ) -> std::result::Result<Position, Failure> {
        let mut waiters: Vec<(u64, String)> = self
            .list(generation, &format!("{}/waiters", self.path))
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
        generation: u64,
        marker: &str,
    ) -> std::result::Result<Option<String>, Failure> {
        let waiters = format!("{}/waiters", self.path);
        self.call(self.zk.sync(generation, &waiters)).await?;
        let needle = format!("w-{marker}-");
        Ok(self
            .list(generation, &waiters)
            .await?
            .into_iter()
            .find(|w| w.starts_with(&needle)))
    }

    /// One delete of a waiter node: true when it is gone (deleted, already gone, or gone with
    /// its session), false when the outcome is unknown.
    async fn delete_waiter_once(&self, generation: u64, path: &str) -> bool {
        if self.zk.is_gone_generation(generation) {
            return true;
        }
        match self.call(self.zk.delete(generation, path, None)).await {
            Ok(()) => true,
            Err(e) => match e.verdict {
                Verdict::NoNode => true,
                verdict if verdict.fate() == Fate::Unknown => false,
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
    fn delete_waiter_in_background(self: &Arc<Self>, generation: u64, path: String) {
        let queue = self.clone();
        // On the session's runtime, wherever the waiter was dropped.
        spawn_background(&*self.zk, async move {
            let mut backoff = Duration::from_millis(50);
            while !queue.delete_waiter_once(generation, &path).await {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(1000));
            }
        });
    }

    /// After a waiter create whose outcome stayed unknown: look for its node in the background
    /// ([`super::stray`]) and delete it if it shows up.
    fn sweep_waiter(self: &Arc<Self>, generation: u64, marker: String) {
        let queue = self.clone();
        spawn_background(&*self.zk, async move {
            let look = || async {
                match queue.find_waiter(generation, &marker).await {
                    Ok(Some(name)) => Look::Found(name),
                    Ok(None) => Look::Absent,
                    Err(_) => Look::Failed,
                }
            };
            if let Some(name) = super::stray::search(&queue, generation, look).await {
                let path = format!("{}/waiters/{name}", queue.path);
                tracing::info!(queue = %queue.path, waiter = %name, "deleting a waiter whose create was in doubt");
                queue.delete_waiter_in_background(generation, path);
            }
        });
    }
}
