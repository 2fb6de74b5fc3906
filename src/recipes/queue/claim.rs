//! A claimed item: its data, complete or release (one `multi` that first checks the lock is
//! still ours), and the release of a dropped claim.

use super::*;

impl Claim {
    /// The item's node name (unique for the queue's lifetime).
    pub fn item(&self) -> &str {
        &self.name
    }

    /// The item's sequence number: its put order.
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// The item's bytes.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The ZooKeeper session that owns the claim's lock.
    pub fn session_id(&self) -> i64 {
        self.session_id
    }

    /// Whether the claim is known to be lost: its session was replaced or declared lost. A
    /// `false` is no promise (a paused process cannot know yet); only `complete` can tell.
    pub fn is_lost(&self) -> bool {
        let status = self.queue.session.status();
        status.generation != self.generation || status.state == ConnectionState::Lost
    }

    /// Deletes the item and its lock in one `multi` that first checks the lock is still this
    /// claim's (same session, same version). Afterwards the item is never delivered again.
    ///
    /// Errors: [`ZooidError::SessionLost`] when the claim was lost with its session (the item
    /// is, or will be, handed out again; nothing was done); [`ZooidError::Timeout`] when no
    /// server answered for `op_timeout` (outcome unknown: the item is completed, or it will be
    /// handed out again).
    pub async fn complete(mut self) -> Result<()> {
        self.done = true;
        self.finish(true).await
    }

    /// Deletes the lock only: the item is handed out again (to the oldest waiting consumer).
    /// Errors as for [`complete`](Self::complete).
    pub async fn release(mut self) -> Result<()> {
        self.done = true;
        self.finish(false).await
    }

    fn lost(&self, reason: &str) -> ZooidError {
        ZooidError::SessionLost {
            what: format!("claim of {}/items/{}", self.queue.path, self.name),
            reason: reason.to_string(),
        }
    }

    async fn finish(&self, complete: bool) -> Result<()> {
        let q = &self.queue;
        let lock = format!("{}/locks/{}", q.path, self.name);
        let item = format!("{}/items/{}", q.path, self.name);
        let deadline = Instant::now() + q.options.op_timeout;
        let mut in_doubt = false;
        loop {
            if self.is_lost() {
                return Err(self.lost("the session that made it was lost"));
            }
            q.stats.request();
            let mut multi = Multi::new(&self.client);
            multi
                .check(&lock, self.lock_version)
                .delete(&lock, Some(self.lock_version));
            if complete {
                multi.delete(&item, None);
            }
            let failed = match multi.commit(&q.session, self.generation).await {
                Ok(_) => return Ok(()),
                Err(failed) => failed,
            };
            match failed.verdict().fate() {
                // The commit told the session layer.
                Fate::Expired => {
                    return Err(self.lost(if in_doubt {
                        "the session ended while the outcome of a request was unknown"
                    } else {
                        "the session expired"
                    }));
                }
                Fate::Unknown => {
                    in_doubt = true;
                    if Instant::now() >= deadline {
                        return Err(ZooidError::Timeout {
                            what: format!(
                                "{} {}/items/{} (outcome unknown)",
                                if complete { "complete" } else { "release" },
                                q.path,
                                self.name
                            ),
                            after: q.options.op_timeout,
                        });
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Fate::Refused => {
                    // The lock is gone or changed. On our own session, only our own earlier
                    // attempt can have deleted it (an expired session gets SessionExpired, and
                    // the orphan cleanup deletes only locks whose item is gone).
                    if in_doubt && failed.at(0) == Some(Verdict::NoNode) {
                        return Ok(());
                    }
                    let err = failed.error;
                    return Err(self.lost(&format!("its lock is gone or not ours: {err}")));
                }
            }
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let lock = format!("{}/locks/{}", self.queue.path, self.name);
        let client = self.client.clone();
        let version = self.lock_version;
        let stats = self.queue.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                stats.stats.request();
                let _ = tokio::time::timeout(
                    stats.session.request_limit(),
                    client.delete(&lock, Some(version)),
                )
                .await;
            });
        }
        // Without a runtime the lock stays until the session ends, which releases it too.
    }
}
