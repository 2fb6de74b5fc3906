//! `next(n)`: an anchor under the node if the handle has no marker on this session, then a read
//! of the counter, then one write `multi` (the versioned `setData`, this write's marker, the
//! delete of the handle's previous marker or anchor) on the session generation of the read.

use std::sync::{Arc, Mutex, MutexGuard};

use super::anchor::{new_marker, Anchor};
use super::format::plan;
use super::resolve::Resolution;
use super::write::{Write, WriteError};
use super::{decode, encode, retryable, Counter, CounterStats};
use crate::error::{Result, ZooidError};
use crate::range::IdRange;
use crate::retry::Budget;
use crate::zk::{Failure, Verdict, ZooKeeperExt};

/// Locks `mutex`, taking the value of a poisoned one (it is only replaced whole).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl Counter {
    /// Reserves the `n` values after the counter's current value and returns them
    /// (`last + 1 ..= last + n`). Values are handed out only when this call knows its write
    /// applied.
    ///
    /// Errors (nothing reserved unless stated): `InvalidArgument` for `n = 0` or a range past
    /// `i64::MAX`, `Exhausted` at `i64::MAX`, `NotFound`, `CorruptPool` (not 8 bytes; the node
    /// is never overwritten), `VersionWrap`, `Contention` when version conflicts outlast the
    /// retry policy, `ConnectionLost`/`Timeout`, and `OutcomeUnknown` when a lost write's fate
    /// could not be told: its values (in `ids`) are skipped, not handed out by this call (if the
    /// write in fact never applied, a later call may hand them out; docs/RECIPES.md, "Limit").
    ///
    /// The call runs to its end even if this future is dropped (an async caller's timeout or
    /// `select!`): a write sent is always resolved, and values reserved for a caller that gave
    /// up are counted as skipped ([`CounterStats::skipped`]) and logged, never handed out. If
    /// the call's task ends unfinished (its runtime shut down) with a write unresolved, the
    /// caller gets `OutcomeUnknown` with that write's values; with none, `Closed`.
    pub async fn next(&self, n: u64) -> Result<IdRange> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let this = self.clone();
        let in_flight = Arc::new(Mutex::new(None));
        let sent = in_flight.clone();
        tokio::spawn(async move {
            let result = this.reserve(n, &sent).await;
            if let Err(Ok(range)) = tx.send(result) {
                let mut state = this.state.lock().await;
                state.stats.skipped = state.stats.skipped.saturating_add(range.len());
                tracing::warn!(counter = %this.path, %range, "counter values reserved for a caller that gave up; skipped");
            }
        });
        match rx.await {
            Ok(result) => result,
            // The task ended without a word: its runtime shut down (or it panicked). A write it
            // sent and had not settled may have applied: its values are skipped.
            Err(_) => Err(match *lock(&in_flight) {
                Some(range) => {
                    tracing::error!(counter = %self.path, %range, "the counter's task ended with its write unresolved; values skipped");
                    ZooidError::OutcomeUnknown {
                        category: self.path.clone(),
                        op: crate::error::WriteOp::Next,
                        ids: vec![range],
                        leaked_within: None,
                    }
                }
                None => ZooidError::Closed {
                    what: format!("the runtime of counter {}", self.path),
                },
            }),
        }
    }

    /// [`Counter::next`], run by its own task; `in_flight` holds the range of a write sent and
    /// not yet settled, for a caller whose task ends unfinished.
    async fn reserve(&self, n: u64, in_flight: &Mutex<Option<IdRange>>) -> Result<IdRange> {
        if n == 0 {
            return Err(ZooidError::InvalidArgument(
                "a counter reserves at least one value (n = 0)".into(),
            ));
        }
        let mut budget = Budget::start(self.policy);
        let Ok(mut state) = tokio::time::timeout(budget.remaining(), self.state.lock()).await
        else {
            return Err(ZooidError::Timeout {
                what: self.path.clone(),
                after: budget.elapsed(),
            });
        };
        let mut conflicted = false;
        let mut last_failure = String::new();
        while budget.try_attempt() {
            // The last attempt's write, if any, is settled: not applied.
            *lock(in_flight) = None;
            let generation = self.zk.generation();
            // The handle's marker on the node, made before the read: the write deletes it, so
            // it applies only to the node read, not to one made again since (a wipe and a
            // restore start a node over at version 0).
            let previous = match &state.marker {
                Some((marker, made_in)) if *made_in == generation => marker.clone(),
                _ => match self.anchor(generation).await {
                    Anchor::Made(anchor) => {
                        state.marker = Some((anchor.clone(), generation));
                        anchor
                    }
                    Anchor::NoNode => return Err(self.not_found()),
                    Anchor::Refused(failure) => return Err(self.store_error(&failure)),
                    Anchor::Lost(anchor, failure) => {
                        // Not used: a create whose reply was lost may still land, later, under
                        // a node made again after our read, where it would tie our write to
                        // the wrong node. Deleted (best effort) and replaced by a new one.
                        crate::zk::ephemeral::delete_in_background(&self.zk, generation, anchor);
                        last_failure = failure.message;
                        budget.backoff().await;
                        continue;
                    }
                },
            };
            // Read the current value and version.
            let (data, stat) = match self.zk.get(generation, &self.path).await {
                Ok(read) => read,
                Err(Failure {
                    verdict: Verdict::NoNode,
                    ..
                }) => return Err(self.not_found()),
                Err(failure) => {
                    if retryable(&failure) {
                        last_failure = failure.message;
                        budget.backoff().await;
                        continue;
                    }
                    return Err(self.store_error(&failure));
                }
            };
            let last = match decode(&self.path, &data) {
                Ok(last) => last,
                Err(corrupt) => {
                    // Not a counter: the node keeps no child of ours either.
                    if let Some((marker, made_in)) = state.marker.take() {
                        crate::zk::ephemeral::delete_in_background(&self.zk, made_in, marker);
                    }
                    return Err(corrupt);
                }
            };
            let range = plan(&self.path, last, n)?;
            let version = stat.version;
            if version < 0 || version == i32::MAX {
                // -1 would mean "any version" (a blind write); MAX would wrap.
                return Err(ZooidError::VersionWrap {
                    path: self.path.clone(),
                    version,
                });
            }
            let marker = new_marker(&self.path);
            let write = Write {
                value: encode(range.end()),
                version,
                marker: &marker,
                previous: &previous,
                marker_data: range.to_string(),
            };
            *lock(in_flight) = Some(range);
            let outcome = match self.send(generation, &write).await {
                Ok(()) => Resolution::Applied,
                Err(WriteError::Conflict) => {
                    conflicted = true;
                    budget.backoff().await;
                    continue;
                }
                Err(WriteError::NoNode) => return Err(self.not_found()),
                Err(WriteError::StaleMarker) => {
                    state.marker = None;
                    continue;
                }
                Err(WriteError::Refused(failure)) => return Err(self.store_error(&failure)),
                Err(WriteError::Lost(why)) => {
                    tracing::warn!(counter = %self.path, %why, range = %range, "counter write reply lost; resolving");
                    state.stats.lost_replies += 1;
                    let outcome = self.resolve(generation, &write, &mut state.stats).await;
                    count(&outcome, &mut state.stats);
                    outcome
                }
            };
            match outcome {
                Resolution::Applied => {
                    state.marker = Some((marker, generation));
                    return Ok(range);
                }
                Resolution::NotApplied => {
                    conflicted = true;
                    continue;
                }
                Resolution::Unknown(why) => {
                    // Whichever of the two markers is there (the write's, if it applied; else
                    // the previous one) would stay until the session ends: delete both.
                    state.marker = None;
                    for stale in [marker, previous] {
                        crate::zk::ephemeral::delete_in_background(&self.zk, generation, stale);
                    }
                    state.stats.skipped = state.stats.skipped.saturating_add(range.len());
                    tracing::error!(counter = %self.path, %why, range = %range, "counter write outcome unknown; values skipped");
                    return Err(ZooidError::OutcomeUnknown {
                        category: self.path.clone(),
                        op: crate::error::WriteOp::Next,
                        ids: vec![range],
                        leaked_within: None,
                    });
                }
            }
        }
        if conflicted {
            Err(ZooidError::Contention {
                category: self.path.clone(),
                attempts: budget.attempts(),
                elapsed: budget.elapsed(),
            })
        } else {
            Err(self.unreachable(&budget, &last_failure))
        }
    }
}

/// Counts how a lost write was resolved.
fn count(outcome: &Resolution, stats: &mut CounterStats) {
    match outcome {
        Resolution::Applied => stats.resolved_applied += 1,
        Resolution::NotApplied => stats.resolved_not_applied += 1,
        Resolution::Unknown(_) => {}
    }
}
