//! Putting an item: `multi[setData(guard, V), create(item)]` through the handle's put guard, so
//! a lost reply is resolved by the guard's version (see [`WorkQueue::put`]).
//!
//! On the guard's own session the guard tells: still at V, no earlier attempt applied (resend:
//! at most one copy can apply); moved, one did. Once that session is given up, the guard (an
//! ephemeral node) says nothing until the servers confirmed the session can no longer write: a
//! copy still in the network applies while they hold it. So the put first asks
//! [`crate::zk::Session::confirm_gone`], then looks for its marker among the items; without
//! the confirmation before its deadline it fails with [`ZooidError::OutcomeUnknown`]
//! ([`crate::WriteOp::Put`]), never guessing.

use super::*;

impl Inner {
    pub(super) async fn put(&self, data: &[u8]) -> Result<String> {
        if data.len() > self.options.max_item_bytes {
            return Err(ZooidError::TooLarge {
                what: format!("item for queue {}", self.path),
                bytes: data.len(),
                limit: self.options.max_item_bytes,
            });
        }
        let marker = random_marker();
        let item_prefix = format!("{}/items/i-{marker}-", self.path);
        let deadline = Instant::now() + self.options.op_timeout;
        let mut guard_slot = self.guard.lock().await;
        // An earlier attempt with this marker that may still apply.
        let mut in_doubt: Option<InDoubt> = None;
        let mut backoff = Duration::from_millis(20);
        loop {
            if Instant::now() >= deadline {
                if in_doubt.is_some() {
                    return Err(self.put_in_doubt());
                }
                return Err(ZooidError::Timeout {
                    what: format!("put to queue {}", self.path),
                    after: self.options.op_timeout,
                });
            }
            let (client, generation) = self.session.client();
            let step = self
                .put_attempt(
                    &client,
                    generation,
                    data,
                    &marker,
                    &item_prefix,
                    &mut guard_slot,
                    &mut in_doubt,
                    deadline,
                )
                .await;
            match step {
                Ok(Some(name)) => return Ok(name),
                Ok(None) => backoff = Duration::from_millis(20),
                Err(PutStop::Fail(err)) => return Err(err),
                Err(PutStop::Transient) => {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_millis(500));
                }
            }
        }
    }

    /// One step of a put: `Some(name)` when the item is known to be in the queue, `None` to try
    /// again at once.
    #[allow(clippy::too_many_arguments)]
    async fn put_attempt(
        &self,
        client: &Client,
        generation: u64,
        data: &[u8],
        marker: &str,
        item_prefix: &str,
        guard_slot: &mut Option<Guard>,
        in_doubt: &mut Option<InDoubt>,
        deadline: Instant,
    ) -> std::result::Result<Option<String>, PutStop> {
        let transient = |_e: ZkError| PutStop::Transient;
        // An earlier attempt may have applied and the guard moved (or vanished): look for
        // the marker before anything else.
        if let Some(InDoubt {
            generation: doubt,
            items_cversion,
        }) = *in_doubt
        {
            // Whether the guard moved past V on its live session: then an earlier attempt
            // applied for certain (only this handle's puts move it, one at a time).
            let mut applied = false;
            let stale = match guard_slot.as_ref() {
                None => true,
                Some(g) => {
                    if g.generation != generation {
                        true
                    } else {
                        self.call(generation, client.sync(&g.path))
                            .await
                            .map_err(transient)?;
                        match self.call(generation, client.check_stat(&g.path)).await {
                            Ok(Some(stat)) => {
                                applied = stat.version != g.version;
                                applied
                            }
                            Ok(None) => true,
                            Err(e) => return Err(transient(e)),
                        }
                    }
                }
            };
            if stale {
                // The guard moved on its live session: no earlier attempt can land any more.
                // Its session given up: only once the servers confirm it can no longer write.
                if self.session.is_gone_generation(doubt) {
                    if let Err(why) = self.session.confirm_gone(doubt, deadline).await {
                        tracing::warn!(queue = %self.path, %why, "put outcome in doubt");
                        return Err(PutStop::Fail(self.put_in_doubt()));
                    }
                }
                self.call(generation, client.sync(&self.items_path()))
                    .await
                    .map_err(transient)?;
                let items = match self.list(client, generation, &self.items_path()).await {
                    Ok(items) => items,
                    Err(e) => return Err(transient(e)),
                };
                self.stats.puts_resolved.fetch_add(1, Ordering::Relaxed);
                let needle = format!("i-{marker}-");
                if let Some(found) = items.into_iter().find(|n| n.starts_with(&needle)) {
                    return Ok(Some(found));
                }
                if applied {
                    // It applied and a consumer already completed it: done. Its sequence
                    // number is unknown, so the name returned is the marker's prefix.
                    tracing::info!(queue = %self.path, item = %needle, "put applied; the item was already completed");
                    return Ok(Some(needle));
                }
                // Stale without a move seen: the guard is gone (with its session, or deleted).
                // An absent item was never added, or was added and already completed by a
                // consumer. The items node's child version tells when it did not move since
                // just before the attempt: then no item was created or deleted, so ours was
                // never added, and the put starts afresh. Otherwise a second put could add it
                // twice: in doubt.
                let moved = match self
                    .call(generation, client.check_stat(&self.items_path()))
                    .await
                {
                    Ok(Some(stat)) => stat.cversion != items_cversion,
                    Ok(None) => true,
                    Err(e) => return Err(transient(e)),
                };
                if moved {
                    tracing::warn!(queue = %self.path, item = %needle, "put outcome in doubt: the item is absent, its guard gone, and the queue changed meanwhile");
                    return Err(PutStop::Fail(self.put_in_doubt()));
                }
                *in_doubt = None;
                *guard_slot = None;
            }
            // Not stale: the guard is still at V, so no earlier attempt applied; resend.
        }
        // The bound, from the count read just before the put.
        let mut items_cversion = 0;
        let count = match self
            .call(generation, client.check_stat(&self.items_path()))
            .await
        {
            Ok(Some(stat)) => {
                items_cversion = stat.cversion;
                Some(stat.num_children as usize)
            }
            Ok(None) => None,
            Err(e) => return Err(transient(e)),
        };
        match count {
            None => {
                self.create_nodes(client, generation)
                    .await
                    .map_err(|e| match fate(&e) {
                        Fate::Refused => PutStop::Fail(self.zk_error("creating the queue", e)),
                        _ => PutStop::Transient,
                    })?;
                return Ok(None);
            }
            Some(n) if n >= self.options.max_items => {
                return Err(PutStop::Fail(ZooidError::QueueFull {
                    queue: self.path.clone(),
                    limit: self.options.max_items,
                }))
            }
            Some(_) => {}
        }
        // This handle's guard on this session.
        let fresh_guard = match guard_slot.as_ref() {
            Some(g) => g.generation != generation,
            None => true,
        };
        if fresh_guard {
            let path = format!(
                "{}/guards/g-{:016x}-{}",
                self.path,
                client.session_id().0,
                random_marker()
            );
            let options = CreateMode::Ephemeral.with_acls(self.session.default_acls());
            match self
                .call(generation, client.create(&path, b"", &options))
                .await
                .classified()
            {
                Ok(_) => {}
                Err((Verdict::NoNode, _)) => {
                    self.create_nodes(client, generation)
                        .await
                        .map_err(|_| PutStop::Transient)?;
                    return Ok(None);
                }
                Err((verdict, e))
                    if verdict.fate() == Fate::Refused && verdict != Verdict::NodeExists =>
                {
                    return Err(PutStop::Fail(self.zk_error("creating the put guard", e)))
                }
                // A lost reply: the name is unique, so whether it landed is found on the next try.
                Err(_) => match self.call(generation, client.check_stat(&path)).await {
                    Ok(Some(stat)) if stat.ephemeral_owner == client.session_id().0 => {}
                    _ => return Err(PutStop::Transient),
                },
            }
            *guard_slot = Some(Guard {
                path,
                version: 0,
                generation,
            });
        }
        let Some(guard) = guard_slot.as_mut() else {
            return Ok(None);
        };
        if guard.version == i32::MAX {
            // Never wrap the counter: take a new guard.
            *guard_slot = None;
            return Ok(None);
        }
        let options = CreateMode::PersistentSequential.with_acls(self.session.default_acls());
        let mut multi = Multi::new(client);
        multi
            .set(&guard.path, b"", Some(guard.version))
            .create(item_prefix, data, &options);
        self.stats.request();
        match multi.commit(&self.session, generation).await {
            Ok(results) => {
                let mut name = None;
                for result in results {
                    match result {
                        MultiWriteResult::SetData { stat } => guard.version = stat.version,
                        MultiWriteResult::Create { path, .. } => {
                            name = path.rsplit('/').next().map(str::to_string)
                        }
                        _ => {}
                    }
                }
                match name {
                    Some(name) => Ok(Some(name)),
                    None => Err(PutStop::Fail(ZooidError::Store {
                        path: self.path.clone(),
                        reason: "put: the server's reply lacks the created item".into(),
                    })),
                }
            }
            // A gone session was told to the session layer by the commit.
            Err(failed) => match (failed.index, failed.verdict()) {
                (_, verdict) if verdict.fate() != Fate::Refused => {
                    // An earlier attempt in doubt keeps its own record: this copy expected
                    // the same guard version, so at most one of them can apply.
                    if in_doubt.is_none() {
                        *in_doubt = Some(InDoubt {
                            generation,
                            items_cversion,
                        });
                    }
                    Err(PutStop::Transient)
                }
                // The guard moved (an earlier attempt of ours applied) or vanished.
                (Some(0), Verdict::BadVersion | Verdict::NoNode) => {
                    if in_doubt.is_none() {
                        // Nobody else writes the guard: re-read it.
                        *guard_slot = None;
                    }
                    Ok(None)
                }
                (Some(1), Verdict::NoNode) => {
                    self.create_nodes(client, generation)
                        .await
                        .map_err(|_| PutStop::Transient)?;
                    Ok(None)
                }
                _ => Err(PutStop::Fail(self.zk_error("put", failed.error))),
            },
        }
    }
}

impl Inner {
    /// The put's outcome is unknown: the item may or may not be in the queue.
    fn put_in_doubt(&self) -> ZooidError {
        ZooidError::OutcomeUnknown {
            category: self.path.clone(),
            op: crate::WriteOp::Put,
            ids: Vec::new(),
            leaked_within: None,
        }
    }
}

/// A put attempt whose outcome is unknown.
#[derive(Clone, Copy)]
pub(super) struct InDoubt {
    /// The session generation it was sent on.
    generation: u64,
    /// The items node's child version read just before it was sent.
    items_cversion: i32,
}

/// Why a put attempt stopped.
pub(super) enum PutStop {
    Fail(ZooidError),
    Transient,
}
