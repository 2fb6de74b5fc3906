//! Leaving the line: our node is deleted (idempotent, retried while the session lives), and a
//! closed candidacy whose delete gave up leaves it to a background task.

use super::*;
use crate::zk::WeakZk;

impl Driver {
    /// How long a closed candidacy (resign, drop) tries to delete its node before it leaves it
    /// to [`clean_left_node`]: twice the request limit.
    pub(super) fn delete_bound(&self) -> Duration {
        2 * self.zk.request_limit()
    }

    /// Deletes our node (idempotent: its name is unique and never reused). True once it is
    /// gone: deleted, found absent, or gone with its session. Until `deadline` when there is
    /// one; without one, for as long as the session lives (a rejoin), until the candidacy is
    /// closed, which bounds it as a resign from then on. False: it may still be there.
    pub(super) async fn delete_node(
        &mut self,
        generation: u64,
        path: &str,
        mut deadline: Option<Instant>,
    ) -> bool {
        let mut close = self.close.clone();
        // Between failed attempts: 50 ms, doubling to 500 ms (a refusal may last).
        let mut pause = Duration::from_millis(50);
        let mut failures: u64 = 0;
        loop {
            if deadline.is_none() && self.closed() {
                deadline = Some(Instant::now() + self.delete_bound());
            }
            let until = deadline.unwrap_or_else(far_future);
            if Instant::now() >= until {
                return false;
            }
            let attempt = self.zk.delete(generation, path, None);
            let Ok(outcome) = tokio::time::timeout_at(until, attempt).await else {
                return false;
            };
            let err = match outcome {
                Ok(())
                | Err(Failure {
                    verdict: Verdict::NoNode,
                    ..
                }) => return true,
                // The node goes with its session (a request of a given-up generation is not
                // sent: that session is gone too).
                Err(failure) if says_gone(&failure) => return true,
                Err(failure) => failure,
            };
            failures += 1;
            if failures >= 8 && failures.is_power_of_two() {
                tracing::warn!(%err, path, failures, "deleting the candidate node keeps failing; still trying (nobody else leads while it is there)");
            } else {
                tracing::debug!(%err, path, "deleting the candidate node; retrying");
            }
            // Wait until the session is usable again (a close of the candidacy sets the bound).
            let nap = pause;
            pause = (pause * 2).min(Duration::from_millis(500));
            let wait = async {
                tokio::time::sleep(nap).await;
                self.wait_same_session(generation).await
            };
            tokio::select! {
                biased;
                alive = tokio::time::timeout_at(until, wait) => match alive {
                    Ok(true) => {}
                    Ok(false) => return true, // gone with its session
                    Err(_) => return false,
                },
                _ = close.changed(), if deadline.is_none() => {}
            }
        }
    }

    /// Leaves our node to a background task that deletes it (a closed candidacy's delete gave
    /// up): [`Election::resign`] reports it until it is gone.
    pub(super) fn leave_behind(&self, generation: u64, path: &str) {
        tracing::warn!(
            group = %self.group,
            path,
            "could not delete the candidate node in time; it may still be there, and while it is, nobody else leads: deleting it in the background until it is gone or its session ends"
        );
        lock(&self.shared).left = Some(path.to_string());
        tokio::spawn(clean_left_node(
            self.zk.downgrade(),
            generation,
            path.to_string(),
            self.shared.clone(),
        ));
    }
}

/// A deadline that never comes (about 30 years).
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86400 * 365 * 30)
}

/// Deletes a candidate node left behind by a delete that gave up, for as long as it takes:
/// until it is gone, or its session is (given up by the session layer, or closed because the
/// application dropped its last handle: the node goes with it). It holds no session handle
/// between attempts, so it never keeps the session, and the node, alive by itself.
async fn clean_left_node(
    session: WeakZk,
    generation: u64,
    path: String,
    shared: Arc<Mutex<Shared>>,
) {
    let mut pause = Duration::from_millis(100);
    let mut failures: u64 = 0;
    let how = loop {
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(500));
        let Some(zk) = session.upgrade() else {
            break "the application closed the session";
        };
        if zk.is_gone_generation(generation) {
            break "its session is gone";
        }
        if zk.status().state != ConnectionState::Connected {
            continue;
        }
        // A request of a given-up generation is not sent: `Closed`, its session is gone.
        match zk.delete(generation, &path, None).await {
            Ok(()) => break "deleted",
            Err(Failure {
                verdict: Verdict::NoNode,
                ..
            }) => break "found gone",
            Err(failure) if says_gone(&failure) => break "its session is gone",
            Err(err) => {
                failures += 1;
                if failures.is_power_of_two() {
                    tracing::warn!(%err, path, failures, "deleting a left-behind candidate node failed again; still trying");
                }
            }
        }
    };
    tracing::info!(path, how, "the left-behind candidate node is gone");
    let mut shared = lock(&shared);
    if shared.left.as_deref() == Some(path.as_str()) {
        shared.left = None;
    }
}
