//! A claimed item: its data, complete or release (one `multi` that first checks the item's
//! version, which names this claim's incarnation of the lock), and what is left to the
//! background: the release of a claim dropped unfinished, and a complete or release whose
//! outcome was still unknown when the caller's time ran out, each resent until done.

use std::sync::atomic::AtomicBool;

use super::*;

impl Claim {
    pub(super) fn new(held: Held, data: Vec<u8>) -> Claim {
        Claim {
            held,
            data,
            done: false,
            lost: AtomicBool::new(false),
        }
    }

    /// The item's node name (unique for the queue's lifetime).
    pub fn item(&self) -> &str {
        &self.held.name
    }

    /// The item's sequence number: its put order.
    pub fn sequence(&self) -> u64 {
        self.held.sequence
    }

    /// The item's bytes.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The ZooKeeper session that owns the claim's lock.
    pub fn session_id(&self) -> i64 {
        self.held.session_id
    }

    /// Whether the claim is known to be lost: its session was replaced or declared lost. Once
    /// true it stays true. A `false` is no promise (a paused process cannot know yet); only
    /// `complete` can tell.
    pub fn is_lost(&self) -> bool {
        if self.lost.load(Ordering::Acquire) {
            return true;
        }
        let gone = self.held.is_gone();
        if gone {
            self.lost.store(true, Ordering::Release);
        }
        gone
    }

    /// Deletes the item and its lock in one `multi` that first checks the item is still at the
    /// version this claim read (no release since our lock was made) and deletes the lock with
    /// it. Afterwards the item is never delivered again.
    ///
    /// Errors: [`ZooidError::SessionLost`] when the claim was lost with its session (the item
    /// is, or will be, handed out again; nothing was done); [`ZooidError::Timeout`] when no
    /// server answered for `op_timeout` (outcome unknown to the caller): while the claim's
    /// session lives the complete goes on in the background until it is done, so the item is
    /// completed, or handed out again once the session ends. A complete sent when the session
    /// was given up with its reply lost waits for the servers' word that the session can no
    /// longer write, then reads the item: gone, the complete is done (`Ok`); still there,
    /// `SessionLost`; no word before `op_timeout`, `Timeout`. A `complete` future dropped
    /// before it finished releases the claim in the background, as a dropped claim does.
    pub async fn complete(self) -> Result<()> {
        self.finish(Finish::Complete).await
    }

    /// Deletes the lock only: the item is handed out again (to the oldest waiting consumer).
    /// Errors as for [`complete`](Self::complete); a release in doubt goes on in the background
    /// the same way.
    pub async fn release(self) -> Result<()> {
        self.finish(Finish::Release).await
    }

    /// Completes or releases within `op_timeout`. The claim counts as finished (its drop does
    /// nothing more) only once this returns: a future dropped on the way leaves the release to
    /// [`Drop`], and an outcome unknown on a live session is handed to a background task that
    /// resends until done, so the lock never outlives the claim on a session that lives on.
    async fn finish(mut self, how: Finish) -> Result<()> {
        if self.is_lost() {
            // The lock went with its session.
            self.done = true;
            return Err(self.held.lost("the session that made it was lost"));
        }
        let deadline = Instant::now() + self.held.queue.options.op_timeout;
        let out = self.held.finish(how, &self.data, Some(deadline)).await;
        self.done = true;
        if matches!(out, Err(ZooidError::Timeout { .. })) && !self.held.is_gone() {
            self.held
                .clone()
                .finish_in_background(how, std::mem::take(&mut self.data));
        }
        out
    }
}

/// What a finished claim does with its item.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Finish {
    /// Delete the item and the lock.
    Complete,
    /// Delete the lock and rewrite the item's bytes unchanged, which moves its version: the
    /// next claim's incarnation of the lock is then told apart from ours.
    Release,
}

impl Finish {
    /// The word for messages.
    fn verb(self) -> &'static str {
        match self {
            Finish::Complete => "complete",
            Finish::Release => "release",
        }
    }
}

impl Held {
    fn is_gone(&self) -> bool {
        self.queue.zk.is_gone_generation(self.generation)
    }

    fn lost(&self, reason: &str) -> ZooidError {
        ZooidError::SessionLost {
            what: format!("claim of {}/items/{}", self.queue.path, self.name),
            reason: reason.to_string(),
        }
    }

    /// Completes or releases; resends after a lost reply until `deadline` (`None`: until the
    /// session is gone).
    ///
    /// Complete = `multi[check(item, V), delete(lock, 0), delete(item, V)]`, release =
    /// `multi[check(item, V), delete(lock, 0), setData(item, same bytes, V)]`, V the item's
    /// version read under our lock. Only a release moves V, and only the lock's holder
    /// releases, so while the item is at V the lock is this claim's incarnation; once our
    /// release applied, V is gone for good and a resend (or a late copy of the first attempt)
    /// fails at index 0 whoever holds the item next.
    pub(super) async fn finish(
        &self,
        how: Finish,
        data: &[u8],
        deadline: Option<Instant>,
    ) -> Result<()> {
        let q = &self.queue;
        let lock = format!("{}/locks/{}", q.path, self.name);
        let item = format!("{}/items/{}", q.path, self.name);
        let mut in_doubt = false;
        let mut backoff = Duration::from_millis(50);
        loop {
            if self.is_gone() {
                if in_doubt {
                    return self.resolve_after_loss(how, deadline).await;
                }
                return Err(self.lost("the session that made it was lost"));
            }
            q.stats.request();
            let mut multi = Multi::new();
            multi.check(&item, self.item_version).delete(&lock, Some(0));
            match how {
                Finish::Complete => multi.delete(&item, Some(self.item_version)),
                Finish::Release => multi.set(&item, data, Some(self.item_version)),
            };
            // Named with the lock's generation: once that is given up, the request is not sent
            // and fails with `Closed`, read below as the session gone.
            let failed = match multi.commit(&*q.zk, self.generation).await {
                Ok(_) => return Ok(()),
                Err(failed) => failed,
            };
            match failed.verdict().fate() {
                // The commit told the session layer (or the generation was already given up).
                Fate::Expired => {
                    if in_doubt {
                        return self.resolve_after_loss(how, deadline).await;
                    }
                    return Err(self.lost("the session expired"));
                }
                Fate::Unknown => {
                    in_doubt = true;
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Err(self.unknown(how));
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_millis(500));
                }
                Fate::Refused => {
                    let at0 = failed.at(0);
                    // The item gone (completed) or past V (released): only our own earlier
                    // attempt can have done either while we held the lock, and after a release
                    // of ours the item may have been claimed and completed by others.
                    let applied = in_doubt
                        && match how {
                            Finish::Complete => at0 == Some(Verdict::NoNode),
                            Finish::Release => {
                                matches!(at0, Some(Verdict::NoNode | Verdict::BadVersion))
                            }
                        };
                    if applied {
                        return Ok(());
                    }
                    return Err(match (failed.index, failed.verdict()) {
                        // The item gone or moved past V, or no lock of ours at version 0.
                        (Some(0), _) | (Some(1), Verdict::NoNode | Verdict::BadVersion) => {
                            let err = failed.failure;
                            self.lost(&format!("its lock is gone or not ours: {err}"))
                        }
                        // The item refused our write (its ACL, a child made by hand) while the
                        // lock is ours: hand the item back, and say what refused.
                        (Some(2), _) => {
                            self.hand_back(&item, &lock).await;
                            q.zk_error_on(&item, how.verb(), failed.failure)
                        }
                        // The lock itself refused (its parent's ACL): it stays with the session.
                        _ => q.zk_error_on(&lock, how.verb(), failed.failure),
                    });
                }
            }
        }
    }

    /// Deletes our lock alone, the item left as it is (its write was refused): sent once, as
    /// a resend after a lost reply could delete the lock of whoever claims the item next (it is
    /// still at V). Not done, the lock stays until the session ends.
    async fn hand_back(&self, item: &str, lock: &str) {
        let q = &self.queue;
        q.stats.request();
        let mut multi = Multi::new();
        multi.check(item, self.item_version).delete(lock, Some(0));
        match multi.commit(&*q.zk, self.generation).await {
            Ok(_) => {
                tracing::warn!(queue = %q.path, item = %self.name, "the item refused a complete or release; its lock was released, the item is handed out again")
            }
            Err(err) => {
                tracing::error!(queue = %q.path, item = %self.name, %err, "the item refused a complete or release, and its lock could not be released: it stays until the session ends")
            }
        }
    }

    /// A complete or release with a request in doubt whose session was given up: `SessionLost`
    /// would claim nothing was done, yet the request may have applied before the session
    /// ended. Once the servers confirm the session can no longer write
    /// ([`crate::zk::ZooKeeper::confirm_gone`], until `deadline`), the item tells: a complete finding the
    /// item gone is done (ours or a later claimer's, it is never delivered again), finding it
    /// there it never applied (`SessionLost`, nothing was done); a release is done either way
    /// (the lock went with the session, the item is handed out again). Without the
    /// confirmation the outcome is unknown ([`ZooidError::Timeout`]).
    async fn resolve_after_loss(&self, how: Finish, deadline: Option<Instant>) -> Result<()> {
        let q = &self.queue;
        let deadline = deadline.unwrap_or_else(|| Instant::now() + q.zk.request_limit());
        if let Err(why) = q.zk.confirm_gone(self.generation, deadline).await {
            tracing::warn!(queue = %q.path, item = %self.name, %why, "complete or release in doubt");
            return Err(self.unknown(how));
        }
        if how == Finish::Release {
            return Ok(());
        }
        let item = format!("{}/items/{}", q.path, self.name);
        let mut backoff = Duration::from_millis(50);
        loop {
            let generation = q.zk.status().generation;
            let read = async {
                q.call(q.zk.sync(generation, &item)).await?;
                q.call(q.zk.exists(generation, &item)).await
            };
            match tokio::time::timeout_at(deadline, read).await {
                Ok(Ok(None)) => return Ok(()),
                Ok(Ok(Some(_))) => {
                    return Err(self.lost("the session ended before the complete applied"))
                }
                Ok(Err(e)) if e.verdict.fate() == Fate::Refused => {
                    return Err(q.zk_error("reading the item after a lost session", e))
                }
                Ok(Err(_)) => {}
                Err(_) => return Err(self.unknown(how)),
            }
            if !sleep_or_deadline(&mut backoff, Some(deadline)).await {
                return Err(self.unknown(how));
            }
        }
    }

    /// The outcome of a complete or release is unknown.
    fn unknown(&self, how: Finish) -> ZooidError {
        ZooidError::Timeout {
            what: format!(
                "{} {}/items/{} (outcome unknown)",
                how.verb(),
                self.queue.path,
                self.name
            ),
            after: self.queue.options.op_timeout,
        }
    }

    /// Completes or releases in the background, resending until done or the session is gone
    /// (which releases the lock too). Runs on the session's runtime, wherever the claim was
    /// dropped (a plain thread, a runtime of the caller's that shuts down first).
    pub(super) fn finish_in_background(self, how: Finish, data: Vec<u8>) {
        let zk = self.queue.zk.clone();
        crate::zk::interface::spawn_background(&*zk, async move {
            if let Err(e) = self.finish(how, &data, None).await {
                tracing::debug!(queue = %self.queue.path, item = %self.name, ?how, "background {how:?}: {e}");
            }
        });
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        self.held
            .clone()
            .finish_in_background(Finish::Release, std::mem::take(&mut self.data));
    }
}
