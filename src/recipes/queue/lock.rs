//! Taking an item: its lock node (`multi[check(item), create(lock)]`), a lost reply resolved by
//! the lock's owner, orphan locks cleaned up; the listing of items with their holders.

use super::stray::Look;
use super::*;
use crate::zk::interface::spawn_background;

pub(super) enum TryClaim {
    Claimed(Box<Claim>),
    Nothing,
    /// A transient failure (connection loss, session replaced): try again.
    Retry,
}

impl Inner {
    /// Lists the items and locks (with watches when `watch`, as the head of the line does) and
    /// tries to lock the oldest unclaimed items in order.
    /// `session_id` is the id of the session of `generation` (the owner of the locks made).
    pub(super) async fn try_claim(
        self: &Arc<Self>,
        generation: u64,
        session_id: i64,
        watch: bool,
        watches: &mut Vec<Watch>,
        deadline: Option<Instant>,
    ) -> Result<TryClaim> {
        let items_path = self.items_path();
        let locks_path = format!("{}/locks", self.path);
        let listing = async {
            if watch {
                match self.list_watch(generation, &items_path).await {
                    Ok((items, w1)) => match self.list_watch(generation, &locks_path).await {
                        Ok((locks, w2)) => {
                            watches.push(w1);
                            watches.push(w2);
                            Ok((items, locks))
                        }
                        Err(e) => Err(e),
                    },
                    Err(e) => Err(e),
                }
            } else {
                match self.list(generation, &items_path).await {
                    Ok(items) => self
                        .list(generation, &locks_path)
                        .await
                        .map(|locks| (items, locks)),
                    Err(e) => Err(e),
                }
            }
        };
        let listed = within(deadline, listing)
            .await
            .unwrap_or_else(|| Err(gave_up()));
        let (items, locks) = match listed {
            Ok(lists) => lists,
            // Workers start before producers: a claim on a queue never put to creates it (as
            // the first put would) and waits for items.
            Err(Failure {
                verdict: Verdict::NoNode,
                ..
            }) => return self.create_for_claim(generation).await,
            Err(e) if e.verdict.fate() == Fate::Refused => return Err(self.zk_error("claim", e)),
            Err(_) => return Ok(TryClaim::Retry),
        };
        let locked: std::collections::HashSet<&str> = locks.iter().map(String::as_str).collect();
        let mut free: Vec<(u64, &str)> = items
            .iter()
            .filter(|n| !locked.contains(n.as_str()))
            .filter_map(|n| sequence_of(n).map(|s| (s, n.as_str())))
            .collect();
        free.sort();
        // Locks whose item is gone (cannot happen through this API; clean up after others).
        let item_set: std::collections::HashSet<&str> = items.iter().map(String::as_str).collect();
        for lock in locks
            .iter()
            .filter(|l| !item_set.contains(l.as_str()))
            .take(16)
        {
            self.clean_orphan_lock(generation, lock).await;
        }
        // Oldest first. Losing the race for an item means other consumers work from the same
        // listing and would lose the next ones too, one after another: after each loss, jump
        // ahead by a random step within the next few items; the skipped ones move to the end
        // (no free item is left untried).
        let mut order: Vec<usize> = (0..free.len()).collect();
        let mut at = 0;
        while at < order.len() {
            let (sequence, name) = free[order[at]];
            if let Some(claim) = self
                .lock_item(generation, session_id, name, sequence, deadline)
                .await?
            {
                return Ok(TryClaim::Claimed(Box::new(claim)));
            }
            at += 1;
            if order.len() - at > 1 {
                let window = (order.len() - at).min(COLLISION_SPREAD);
                let skip = crate::random::random_range(0..window);
                order[at..].rotate_left(skip);
            }
        }
        Ok(TryClaim::Nothing)
    }

    /// Creates the queue's nodes for a claim that found them missing; `Retry` once they exist.
    pub(super) async fn create_for_claim(&self, generation: u64) -> Result<TryClaim> {
        match self.create_nodes(generation).await {
            Ok(()) => {
                tracing::info!(queue = %self.path, "created the queue for a claim");
                Ok(TryClaim::Retry)
            }
            Err(e) if e.verdict.fate() == Fate::Refused => {
                Err(self.zk_error("creating the queue", e))
            }
            Err(_) => Ok(TryClaim::Retry),
        }
    }

    /// A lock whose item does not exist: the lock was created while its item existed (the claim
    /// `multi` checks it), and item names are never reused, so the item is gone for good.
    async fn clean_orphan_lock(&self, generation: u64, lock: &str) {
        let item = format!("{}/items/{lock}", self.path);
        if let Ok(None) = self.call(self.zk.exists(generation, &item)).await {
            let path = format!("{}/locks/{lock}", self.path);
            let _ = self.call(self.zk.delete(generation, &path, None)).await;
            tracing::info!(queue = %self.path, lock, "deleted a lock whose item is gone");
        }
    }

    /// Locks one item: `multi[check(item exists), create(lock, EPHEMERAL, token + identity)]`,
    /// then reads it (its bytes and version). A lost reply is resolved by the lock's token, so
    /// two claims on one session (threads sharing a handle) never both take one lock.
    ///
    /// From the moment its create is sent until a [`Claim`] holds it, the lock is held by an
    /// [`UnheldLock`]: however this ends without a `Claim` (the deadline with the create in
    /// doubt, an error after it applied, or the caller dropping the claim's future while a
    /// request was under way), a lock of ours that applied or may still land is looked for in
    /// the background and released, never left on a session that lives on. Only a reply that
    /// proves no create of this claim applied, with none in doubt, lets it go unwatched.
    async fn lock_item(
        self: &Arc<Self>,
        generation: u64,
        session_id: i64,
        name: &str,
        sequence: u64,
        deadline: Option<Instant>,
    ) -> Result<Option<Claim>> {
        let item = format!("{}/items/{name}", self.path);
        let lock = format!("{}/locks/{name}", self.path);
        let token = random_marker();
        let data = lock_data(&token, &self.identity);
        let create = Create::new(Mode::Ephemeral);
        let mut unheld = UnheldLock {
            queue: self.clone(),
            generation,
            session_id,
            name: name.to_string(),
            token: token.clone(),
            armed: false,
        };
        let mut in_doubt = false;
        loop {
            if in_doubt && deadline.is_some_and(|d| Instant::now() >= d) {
                // Watched for in the background (`unheld`).
                return Ok(None);
            }
            if in_doubt {
                // Our own earlier create, or someone else's lock? Our token says.
                let read = self.call(self.zk.get(generation, &lock));
                match within(deadline, read)
                    .await
                    .unwrap_or_else(|| Err(gave_up()))
                {
                    Ok((found, _)) if lock_token(&found) == Some(token.as_str()) => break,
                    // Someone else's lock; a copy of ours still in flight may land once it is
                    // gone (watched for in the background).
                    Ok(_) => return Ok(None),
                    Err(Failure {
                        verdict: Verdict::NoNode,
                        ..
                    }) => {}
                    Err(Failure {
                        verdict: Verdict::Unknown,
                        ..
                    }) => {
                        if self.zk.is_gone_generation(generation) {
                            return Ok(None);
                        }
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                    Err(_) => return Ok(None),
                }
            }
            let mut multi = Multi::new();
            multi.check(&item, -1).create(&lock, &data, &create);
            self.stats.request();
            // A lock of ours may exist from here on.
            unheld.armed = true;
            let Some(committed) = within(deadline, multi.commit(&*self.zk, generation)).await
            else {
                in_doubt = true;
                continue;
            };
            match committed {
                Ok(_) => break,
                Err(failed) => match (failed.verdict().fate(), failed.index, failed.verdict()) {
                    // Refused: this copy did not apply; none is left in doubt unless an
                    // earlier one was.
                    (Fate::Refused, Some(0), Verdict::NoNode) => {
                        unheld.armed = in_doubt;
                        return Ok(None);
                    }
                    (Fate::Refused, Some(1), Verdict::NodeExists) if !in_doubt => {
                        unheld.armed = false;
                        return Ok(None);
                    }
                    // Resolved by the token at the top of the loop.
                    (Fate::Refused, Some(1), Verdict::NodeExists) => {}
                    (Fate::Refused, _, _) => {
                        unheld.armed = in_doubt;
                        return Err(self.zk_error("claim", failed.failure));
                    }
                    // The commit told the session layer (or the generation was already given
                    // up); the lock went with the session.
                    (Fate::Expired, _, _) => return Ok(None),
                    (Fate::Unknown, _, _) => in_doubt = true,
                },
            }
        }
        // The lock is ours: read the item's bytes and version under it.
        loop {
            let read = self.call(self.zk.get(generation, &item));
            let Some(read) = within(deadline, read).await else {
                // Out of time: the lock is handed back in the background (`unheld`).
                return Ok(None);
            };
            match read {
                Ok((data, stat)) => {
                    let held = Held {
                        queue: self.clone(),
                        name: name.to_string(),
                        sequence,
                        item_version: stat.version,
                        generation,
                        session_id,
                    };
                    // The claim holds the lock now (released when it is dropped unfinished).
                    unheld.armed = false;
                    return Ok(Some(Claim::new(held, data)));
                }
                // Deleted under our lock (by hand): the lock is an orphan, drop it, move on.
                Err(Failure {
                    verdict: Verdict::NoNode,
                    ..
                }) => {
                    unheld.armed = false;
                    let _ = self.call(self.zk.delete(generation, &lock, None)).await;
                    return Ok(None);
                }
                Err(Failure {
                    verdict: Verdict::Unknown,
                    ..
                }) if !self.zk.is_gone_generation(generation) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                // The lock goes with the session; otherwise it is released in the background
                // if the item can be read there (`unheld`).
                Err(_) => return Ok(None),
            }
        }
    }

    /// A lock of ours that no claim holds (its create applied, or may still land: a request in
    /// flight at a connection loss can apply later): look for it in the background
    /// ([`super::stray`]), and release it if it shows up with our token.
    fn resolve_stray_lock(
        self: &Arc<Self>,
        generation: u64,
        session_id: i64,
        name: String,
        token: String,
    ) {
        let queue = self.clone();
        spawn_background(&*self.zk, async move {
            let lock = format!("{}/locks/{name}", queue.path);
            let item = format!("{}/items/{name}", queue.path);
            let look = || async {
                if queue.call(queue.zk.sync(generation, &lock)).await.is_err() {
                    return Look::Failed;
                }
                match queue.call(queue.zk.get(generation, &lock)).await {
                    // Ours: read the item's version under it, to release it like a claim.
                    Ok((found, _)) if lock_token(&found) == Some(token.as_str()) => {
                        match queue.call(queue.zk.get(generation, &item)).await {
                            Ok(read) => Look::Found(read),
                            Err(_) => Look::Failed,
                        }
                    }
                    // Another's lock: ours did not apply, and cannot while that one stands.
                    Ok(_) => Look::Absent,
                    Err(Failure {
                        verdict: Verdict::NoNode,
                        ..
                    }) => Look::Absent,
                    Err(_) => Look::Failed,
                }
            };
            if let Some((data, stat)) = super::stray::search(&queue, generation, look).await {
                let held = Held {
                    queue: queue.clone(),
                    name: name.clone(),
                    sequence: sequence_of(&name).unwrap_or(0),
                    item_version: stat.version,
                    generation,
                    session_id,
                };
                tracing::info!(queue = %queue.path, item = %name, "releasing a lock whose create was in doubt");
                held.finish_in_background(super::claim::Finish::Release, data);
            }
        });
    }

    pub(super) async fn items(&self) -> Result<Vec<ItemInfo>> {
        let generation = self.zk.status().generation;
        let items_path = self.items_path();
        let locks_path = format!("{}/locks", self.path);
        let items = self
            .list(generation, &items_path)
            .await
            .map_err(|e| self.claim_error(e))?;
        let locks = self
            .list(generation, &locks_path)
            .await
            .map_err(|e| self.claim_error(e))?;
        let locked: std::collections::HashSet<&str> = locks.iter().map(String::as_str).collect();
        let item_set: std::collections::HashSet<&str> = items.iter().map(String::as_str).collect();
        for lock in locks.iter().filter(|l| !item_set.contains(l.as_str())) {
            self.clean_orphan_lock(generation, lock).await;
        }
        let mut out = Vec::with_capacity(items.len());
        for name in &items {
            let Some(sequence) = sequence_of(name) else {
                continue;
            };
            let item = format!("{items_path}/{name}");
            let bytes = match self.call(self.zk.exists(generation, &item)).await {
                Ok(Some(stat)) => stat.data_length.max(0) as usize,
                Ok(None) => continue, // completed meanwhile
                Err(e) => return Err(self.zk_error("listing items", e)),
            };
            let claimed_by = if locked.contains(name.as_str()) {
                let lock = format!("{locks_path}/{name}");
                match self.call(self.zk.get(generation, &lock)).await {
                    Ok((data, stat)) => Some(ClaimHolder {
                        identity: lock_identity(&data),
                        session_id: stat.ephemeral_owner,
                    }),
                    Err(Failure {
                        verdict: Verdict::NoNode,
                        ..
                    }) => None,
                    Err(e) => return Err(self.zk_error("listing items", e)),
                }
            } else {
                None
            };
            out.push(ItemInfo {
                name: name.clone(),
                sequence,
                bytes,
                claimed_by,
            });
        }
        out.sort_by_key(|i| i.sequence);
        Ok(out)
    }
}

/// A lock this claim created, or may yet create (its create sent with the outcome unknown),
/// that no [`Claim`] holds yet. Dropped armed (the claim gave up, failed, or its future was
/// dropped), it has the lock looked for in the background and released if it carries the
/// claim's token ([`Inner::resolve_stray_lock`]); a lock on a given-up session goes with it.
struct UnheldLock {
    queue: Arc<Inner>,
    generation: u64,
    session_id: i64,
    name: String,
    token: String,
    /// A lock of ours may exist and no `Claim` holds it.
    armed: bool,
}

impl Drop for UnheldLock {
    fn drop(&mut self) {
        if !self.armed || self.queue.zk.is_gone_generation(self.generation) {
            return;
        }
        self.queue.resolve_stray_lock(
            self.generation,
            self.session_id,
            std::mem::take(&mut self.name),
            std::mem::take(&mut self.token),
        );
    }
}

/// A lock's data: `claim <token>` on the first line, the claimer's identity after it.
fn lock_data(token: &str, identity: &str) -> Vec<u8> {
    format!("claim {token}\n{identity}").into_bytes()
}

/// The token in a lock's data (`None` for a lock of an older zooid: identity only).
fn lock_token(data: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(data).ok()?;
    let (first, _) = text.split_once('\n')?;
    first.strip_prefix("claim ")
}

/// The claimer's identity in a lock's data.
fn lock_identity(data: &[u8]) -> String {
    let text = String::from_utf8_lossy(data);
    match text.split_once('\n') {
        Some((first, identity)) if first.starts_with("claim ") => identity.to_string(),
        _ => text.into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_data_carries_token_and_identity() {
        let data = lock_data("0123456789abcdef", "host:42");
        assert_eq!(lock_token(&data), Some("0123456789abcdef"));
        assert_eq!(lock_identity(&data), "host:42");
        // A lock of an older zooid: identity only, no token (never taken as ours).
        assert_eq!(lock_token(b"host:42"), None);
        assert_eq!(lock_identity(b"host:42"), "host:42");
    }
}
