//! How a write whose reply was lost turned out: looked up on the write's own session while it
//! lives, else settled by the servers' word that the session can no longer write (see the
//! module documentation of [`super`]).

use super::write::{Write, WriteError};
use super::{retryable, Counter, CounterStats};
use crate::retry::Budget;
use crate::zk::{Failure, Fate, Verdict, ZooKeeperExt};

/// How a lost write turned out.
pub(super) enum Resolution {
    Applied,
    NotApplied,
    Unknown(String),
}

impl Counter {
    /// Finds out whether `write`, sent on the session of `generation`, applied; see the module
    /// documentation. Bounded by the retry policy's deadline.
    pub(super) async fn resolve(
        &self,
        generation: u64,
        write: &Write<'_>,
        stats: &mut CounterStats,
    ) -> Resolution {
        // A mutant the simulator must find (tests/sim): a lost write taken as applied.
        #[cfg(zooid_mutant = "counter_lost_write_applied")]
        return Resolution::Applied;
        // Another: a lost write taken as not applied (its values skipped unreported).
        #[cfg(zooid_mutant = "counter_lost_write_not_applied")]
        return Resolution::NotApplied;
        #[allow(unreachable_code)]
        let mut budget = Budget::start(self.policy);
        loop {
            if budget.expired() {
                return Resolution::Unknown(format!(
                    "ZooKeeper unreachable for {:?}",
                    budget.deadline()
                ));
            }
            budget.try_attempt();
            if self.zk.is_gone_generation(generation) {
                return self.resolve_given_up(generation, write, &mut budget).await;
            }
            // Every request names the write's generation: if that session is given up
            // meanwhile, the lookup fails (it is not sent) rather than find "no marker".
            let lookup = async {
                self.zk.sync(generation, &self.path).await?;
                let (data, stat) = self.zk.get(generation, &self.path).await?;
                // The seed's trap: the version after ours holds exactly our bytes.
                let lookalike = stat.version == write.version + 1 && data == write.value;
                if stat.version == write.version {
                    return Ok((stat.version, false, lookalike));
                }
                let marker = self.zk.exists(generation, write.marker).await?;
                Ok::<_, Failure>((stat.version, marker.is_some(), lookalike))
            };
            match lookup.await {
                Ok((version, _, _)) if version == write.version => {
                    stats.resends += 1;
                    match self.send(generation, write).await {
                        Ok(()) => return Resolution::Applied,
                        // Moved meanwhile (maybe by our first copy): look again.
                        Err(WriteError::Conflict) => continue,
                        Err(WriteError::NoNode) => {
                            return Resolution::Unknown("the counter node was deleted".into())
                        }
                        Err(WriteError::StaleMarker) => {
                            // This copy did not apply (a multi applies whole or not at all). The
                            // first did not either, or it applied to a node since deleted and
                            // made again (which took our previous marker with it): its values
                            // are on no node now. Retried from a fresh read either way.
                            return Resolution::NotApplied;
                        }
                        Err(WriteError::Lost(_)) => budget.backoff().await,
                        Err(WriteError::Refused(failure)) => {
                            return Resolution::Unknown(failure.message)
                        }
                    }
                }
                Ok((version, found, lookalike)) => {
                    if version < write.version {
                        return Resolution::Unknown(format!(
                            "the counter's version went back to {version} (node recreated?)"
                        ));
                    }
                    if found {
                        return Resolution::Applied;
                    }
                    // The lookup ran on the write's own session and succeeded, so that session
                    // was alive and its ephemeral marker would still be there. Check once more
                    // that the session layer did not give it up meanwhile.
                    if self.zk.is_gone_generation(generation) {
                        return self.resolve_given_up(generation, write, &mut budget).await;
                    }
                    if lookalike {
                        stats.lookalikes += 1;
                    }
                    return Resolution::NotApplied;
                }
                Err(Failure {
                    verdict: Verdict::NoNode,
                    ..
                }) => return Resolution::Unknown("the counter node was deleted".into()),
                Err(failure) => {
                    // A session found gone was reported lost by the request itself; one of a
                    // generation already given up was not sent (`Closed`).
                    if failure.verdict.fate() == Fate::Expired {
                        return self.resolve_given_up(generation, write, &mut budget).await;
                    }
                    if !retryable(&failure) {
                        return Resolution::Unknown(failure.message);
                    }
                    budget.backoff().await;
                }
            }
        }
    }

    /// Resolves `write`, sent on the given-up session of `generation`: once the servers
    /// confirmed that session can no longer write, a node still at the write's version proves it
    /// never applied; anything else (moved on: the marker went with the session; or no
    /// confirmation within `budget`) is unknown.
    async fn resolve_given_up(
        &self,
        generation: u64,
        write: &Write<'_>,
        budget: &mut Budget,
    ) -> Resolution {
        let deadline = tokio::time::Instant::now() + budget.remaining();
        if let Err(why) = self.zk.confirm_gone(generation, deadline).await {
            return Resolution::Unknown(why.to_string());
        }
        while !budget.expired() {
            budget.try_attempt();
            // The current session: any session's sync and read see whether the write applied.
            let current = self.zk.generation();
            let read = async {
                self.zk.sync(current, &self.path).await?;
                self.zk.exists(current, &self.path).await
            };
            match read.await {
                Ok(Some(stat)) if stat.version == write.version => return Resolution::NotApplied,
                Ok(Some(stat)) => {
                    return Resolution::Unknown(format!(
                        "the ZooKeeper session was lost and the counter moved on to version {} \
                         (the write expected {})",
                        stat.version, write.version
                    ))
                }
                Ok(None) => return Resolution::Unknown("the counter node was deleted".into()),
                Err(_) => budget.backoff().await,
            }
        }
        Resolution::Unknown(format!("ZooKeeper unreachable for {:?}", budget.deadline()))
    }
}
