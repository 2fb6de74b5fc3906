//! Putting an item: `multi[setData(guard, V), create(item)]` through the handle's put guard, so
//! a lost reply is resolved by the guard's version (see [`WorkQueue::put`]).
//!
//! On the guard's own session the guard tells: still at V, no earlier attempt applied (resend:
//! at most one copy can apply); at V + 1, one did. Once that session is given up, the guard (an
//! ephemeral node) says nothing until the servers confirmed the session can no longer write: a
//! copy still in the network applies while they hold it. So the put first asks
//! [`crate::zk::ZooKeeper::confirm_gone`], then looks for its marker among the items; without
//! the confirmation before its deadline it fails with [`ZooidError::OutcomeUnknown`]
//! ([`crate::error::WriteOp::Put`]), never guessing.
//!
//! Nothing the handle remembers survives a put in doubt. Every put passes through
//! [`Inner::put`], which takes the guard (its path and the version V the next put expects) out
//! of the handle before anything is sent ([`PutGuard`]) and puts it back only when the put ends
//! with no attempt in doubt: the version is then one the servers confirmed (the reply to the
//! multi, or a re-read on the guard's live session at V + 1, after which no copy expecting V can
//! apply). A put that ends with an attempt in doubt (`OutcomeUnknown`, its deadline, an error
//! after a lost reply), or whose future is dropped, leaves the handle without a guard: that
//! guard node is deleted in the background (a copy still in flight then fails on it), and the
//! next put creates a new one. So the guard's version moves only by the current put's own
//! attempts, and a guard at V + 1 means that put's item was added.

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
        // The wait for the handle's guard is bounded by `op_timeout` from the call, so k puts
        // through one handle do not end after k of them; a put that never had the guard sent
        // nothing.
        let turn = Instant::now() + self.options.op_timeout;
        let Ok(mut slot) = tokio::time::timeout_at(turn, self.guard.lock()).await else {
            return Err(self.put_timeout());
        };
        // With the guard, the put's requests get `op_timeout` of their own: one that got its
        // turn late would otherwise send with too little time left to learn its fate, and end
        // in doubt on a healthy ensemble.
        let deadline = Instant::now() + self.options.op_timeout;
        // Out of the handle for the whole put: dropped with the put's future, it is retired.
        let mut held = PutGuard {
            queue: self,
            guard: slot.take(),
        };
        // An earlier attempt of this put that may still apply.
        let mut in_doubt: Option<InDoubt> = None;
        let outcome = self
            .put_until_decided(data, &mut held.guard, &mut in_doubt, deadline)
            .await;
        // A mutant the simulator must find (tests/sim): the guard goes back after a put in
        // doubt too, its version one a copy still in flight may yet move, so the next put can
        // take that copy's move for its own and report done an item that never landed.
        #[cfg(zooid_mutant = "queue_put_doubt_is_done")]
        {
            *slot = held.guard.take();
        }
        if in_doubt.is_none() {
            // No attempt in doubt: the guard's version is the one the servers confirmed.
            *slot = held.guard.take();
        }
        outcome
    }

    /// Retries put attempts until the put is decided or `deadline` (the put's call plus
    /// `op_timeout`) passes. `guard` is the guard the put writes through (taken out of the
    /// handle); `in_doubt` is `Some` while an attempt's outcome is unknown.
    async fn put_until_decided(
        &self,
        data: &[u8],
        guard: &mut Option<Guard>,
        in_doubt: &mut Option<InDoubt>,
        deadline: Instant,
    ) -> Result<String> {
        let marker = random_marker();
        let item_prefix = format!("{}/items/i-{marker}-", self.path);
        let mut backoff = Duration::from_millis(20);
        loop {
            if Instant::now() >= deadline {
                if in_doubt.is_some() {
                    return Err(self.put_in_doubt());
                }
                return Err(self.put_timeout());
            }
            // The live generation and its session's id, read together.
            let status = self.zk.status();
            // Bounded by the deadline: an attempt cut short leaves `in_doubt` set from before
            // its multi was sent, so it is never taken for one that sent nothing.
            let attempt = self.put_attempt(
                status.generation,
                status.session_id,
                data,
                &marker,
                &item_prefix,
                guard,
                in_doubt,
                deadline,
            );
            let Ok(step) = tokio::time::timeout_at(deadline, attempt).await else {
                continue;
            };
            match step {
                Ok(Some(name)) => return Ok(name),
                Ok(None) => backoff = Duration::from_millis(20),
                Err(PutStop::Fail(err)) => return Err(err),
                // Never past the deadline: the loop's check above then ends the put.
                Err(PutStop::Transient) => {
                    sleep_or_deadline(&mut backoff, Some(deadline)).await;
                }
            }
        }
    }

    /// A put that ran out of time with nothing sent (or nothing in doubt).
    fn put_timeout(&self) -> ZooidError {
        ZooidError::Timeout {
            what: format!("put to queue {}", self.path),
            after: self.options.op_timeout,
        }
    }

    /// One step of a put: `Some(name)` when the item is known to be in the queue, `None` to try
    /// again at once.
    #[allow(clippy::too_many_arguments)]
    async fn put_attempt(
        &self,
        generation: u64,
        session_id: i64,
        data: &[u8],
        marker: &str,
        item_prefix: &str,
        guard: &mut Option<Guard>,
        in_doubt: &mut Option<InDoubt>,
        deadline: Instant,
    ) -> std::result::Result<Option<String>, PutStop> {
        let transient = |_e: Failure| PutStop::Transient;
        // An earlier attempt may have applied and the guard moved (or vanished): look for
        // the marker before anything else.
        if let Some(doubt) = *in_doubt {
            // The version every attempt of this put expected.
            let expected = guard.as_ref().map_or(-1, |g| g.version);
            // The guard's version read on its live session; `None` when the guard is gone
            // (its session given up, or the node deleted).
            let seen = match guard.as_ref() {
                Some(g) if g.generation == generation => {
                    self.call(self.zk.sync(generation, &g.path))
                        .await
                        .map_err(transient)?;
                    match self.call(self.zk.exists(generation, &g.path)).await {
                        Ok(stat) => stat.map(|s| s.version),
                        Err(e) => return Err(transient(e)),
                    }
                }
                _ => None,
            };
            let needle = format!("i-{marker}-");
            match seen {
                // Still at V: no attempt applied; resend.
                Some(version) if version == expected => {}
                // At V + 1 on its live session: an attempt of this put applied for certain
                // (only this put's attempts write the guard, all expecting V), and no copy
                // still in flight can apply any more.
                Some(version) if Some(version) == expected.checked_add(1) => {
                    let found = self.find_marker(generation, &needle).await?;
                    let confirmed = match found {
                        Some(name) => Some(name),
                        None => {
                            // Added and already completed by a consumer: then the items'
                            // child version moved at least twice since just before the first
                            // attempt (our create, the completion's delete). Anything less
                            // contradicts the guard: in doubt, never guessed done.
                            let moved = match self
                                .call(self.zk.exists(generation, &self.items_path()))
                                .await
                            {
                                Ok(Some(stat)) => {
                                    stat.cversion.wrapping_sub(doubt.items_cversion) >= 2
                                }
                                Ok(None) => false,
                                Err(e) => return Err(transient(e)),
                            };
                            if !moved {
                                tracing::warn!(queue = %self.path, item = %needle, "put outcome in doubt: its guard moved but the item is absent and the queue shows no completion");
                                return Err(PutStop::Fail(self.put_in_doubt()));
                            }
                            // Its sequence number is unknown, so the name returned is the
                            // marker's prefix.
                            tracing::info!(queue = %self.path, item = %needle, "put applied; the item was already completed");
                            Some(needle)
                        }
                    };
                    if let Some(g) = guard.as_mut() {
                        g.version = version;
                    }
                    *in_doubt = None;
                    return Ok(confirmed);
                }
                // Moved by something other than this put: nothing can be concluded.
                Some(version) => {
                    tracing::warn!(queue = %self.path, item = %needle, expected, version, "put outcome in doubt: its guard was written by someone else");
                    return Err(PutStop::Fail(self.put_in_doubt()));
                }
                None => {
                    // Its session given up: only once the servers confirm it can no longer
                    // write.
                    if self.zk.is_gone_generation(doubt.generation) {
                        if let Err(why) = self.zk.confirm_gone(doubt.generation, deadline).await {
                            tracing::warn!(queue = %self.path, %why, "put outcome in doubt");
                            return Err(PutStop::Fail(self.put_in_doubt()));
                        }
                    }
                    // The guard says nothing any more: the next attempt takes a new one.
                    self.retire_guard(guard.take());
                    if let Some(found) = self.find_marker(generation, &needle).await? {
                        *in_doubt = None;
                        return Ok(Some(found));
                    }
                    // An absent item was never added, or was added and already completed by a
                    // consumer. The items node's child version tells when it did not move since
                    // just before the attempt: then no item was created or deleted, so ours was
                    // never added, and the put starts afresh. Otherwise a second put could add
                    // it twice: in doubt.
                    let moved = match self
                        .call(self.zk.exists(generation, &self.items_path()))
                        .await
                    {
                        Ok(Some(stat)) => stat.cversion != doubt.items_cversion,
                        Ok(None) => true,
                        Err(e) => return Err(transient(e)),
                    };
                    if moved {
                        tracing::warn!(queue = %self.path, item = %needle, "put outcome in doubt: the item is absent, its guard gone, and the queue changed meanwhile");
                        return Err(PutStop::Fail(self.put_in_doubt()));
                    }
                    *in_doubt = None;
                }
            }
        }
        // The bound, from the count read just before the put.
        let mut items_cversion = 0;
        let count = match self
            .call(self.zk.exists(generation, &self.items_path()))
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
                self.create_nodes(generation)
                    .await
                    .map_err(|e| match e.verdict.fate() {
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
        let fresh_guard = match guard.as_ref() {
            Some(g) => g.generation != generation,
            None => true,
        };
        if fresh_guard {
            self.retire_guard(guard.take());
            let path = format!(
                "{}/guards/g-{session_id:016x}-{}",
                self.path,
                random_marker()
            );
            let create = Create::new(Mode::Ephemeral);
            let version = match self
                .call(self.zk.create(generation, &path, b"", &create))
                .await
            {
                // A node is created at data version 0 (the servers' Stat says so where they
                // send one, 3.5 and later).
                Ok((_, stat)) => stat.map_or(0, |stat| stat.version),
                Err(Failure {
                    verdict: Verdict::NoNode,
                    ..
                }) => {
                    self.create_nodes(generation)
                        .await
                        .map_err(|_| PutStop::Transient)?;
                    return Ok(None);
                }
                Err(e) if e.verdict.fate() == Fate::Refused && e.verdict != Verdict::NodeExists => {
                    return Err(PutStop::Fail(self.zk_error("creating the put guard", e)))
                }
                // A lost reply: the name is unique, so whether it landed is found on the next try.
                Err(_) => match self.call(self.zk.exists(generation, &path)).await {
                    Ok(Some(stat)) if stat.ephemeral_owner == session_id => stat.version,
                    _ => return Err(PutStop::Transient),
                },
            };
            *guard = Some(Guard {
                path,
                version,
                generation,
            });
        }
        let Some(g) = guard.as_mut() else {
            return Ok(None);
        };
        if g.version == i32::MAX {
            // Never wrap the counter: take a new guard.
            self.retire_guard(guard.take());
            return Ok(None);
        }
        let mut multi = Multi::new();
        multi.set(&g.path, b"", Some(g.version)).create(
            item_prefix,
            data,
            &Create::new(Mode::PersistentSequential),
        );
        // In doubt from before it is sent until its outcome is known: an attempt cut short
        // (the deadline, a dropped future) is in doubt. An earlier attempt in doubt keeps its
        // own record: this copy expects the same guard version, so at most one of them can
        // apply.
        let first = in_doubt.is_none();
        if first {
            *in_doubt = Some(InDoubt {
                generation,
                items_cversion,
            });
        }
        // This copy was refused: with no earlier copy in doubt, nothing can apply.
        let refused = |in_doubt: &mut Option<InDoubt>| {
            if first {
                *in_doubt = None;
            }
        };
        self.stats.request();
        match multi.commit(&*self.zk, generation).await {
            Ok(results) => {
                // This copy applied: every other copy expected the same version, none can.
                *in_doubt = None;
                let mut name = None;
                for result in results {
                    match result {
                        OpResult::Set { stat } => g.version = stat.version,
                        OpResult::Create { path, .. } => name = Some(node_name(&path).to_string()),
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
                // Lost: resolved by the guard on the next step.
                (_, verdict) if verdict.fate() != Fate::Refused => Err(PutStop::Transient),
                // The guard moved (an earlier attempt of ours applied) or vanished: the next
                // step reads it.
                (Some(0), Verdict::BadVersion | Verdict::NoNode) => {
                    refused(in_doubt);
                    if first {
                        // No attempt of this put in doubt, yet the guard is not at the
                        // version remembered: take a new one.
                        self.retire_guard(guard.take());
                    }
                    Ok(None)
                }
                (Some(1), Verdict::NoNode) => {
                    refused(in_doubt);
                    self.create_nodes(generation)
                        .await
                        .map_err(|_| PutStop::Transient)?;
                    Ok(None)
                }
                _ => {
                    refused(in_doubt);
                    Err(PutStop::Fail(self.zk_error("put", failed.failure)))
                }
            },
        }
    }

    /// The name of the item carrying `needle` (`i-<marker>-`), read after a `sync`; counts a
    /// resolved put.
    async fn find_marker(
        &self,
        generation: u64,
        needle: &str,
    ) -> std::result::Result<Option<String>, PutStop> {
        self.call(self.zk.sync(generation, &self.items_path()))
            .await
            .map_err(|_| PutStop::Transient)?;
        let items = self
            .list(generation, &self.items_path())
            .await
            .map_err(|_| PutStop::Transient)?;
        self.stats.puts_resolved.fetch_add(1, Ordering::Relaxed);
        Ok(items.into_iter().find(|n| n.starts_with(needle)))
    }

    /// Gives up a guard whose version is no longer known (or that the handle no longer uses):
    /// its node is deleted in the background.
    fn retire_guard(&self, guard: Option<Guard>) {
        if let Some(guard) = guard {
            delete_guard_in_background(&self.zk, guard);
        }
    }

    /// The put's outcome is unknown: the item may or may not be in the queue.
    fn put_in_doubt(&self) -> ZooidError {
        ZooidError::OutcomeUnknown {
            category: self.path.clone(),
            op: crate::error::WriteOp::Put,
            ids: Vec::new(),
            leaked_within: None,
        }
    }
}

/// The guard a put has taken out of the handle. Whatever it still holds when it is dropped (the
/// put ended in doubt, or its future was dropped) is retired, never put back.
struct PutGuard<'a> {
    queue: &'a Inner,
    guard: Option<Guard>,
}

impl Drop for PutGuard<'_> {
    fn drop(&mut self) {
        self.queue.retire_guard(self.guard.take());
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
