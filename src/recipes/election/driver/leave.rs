//! Leaving the line: our node is deleted (idempotent, retried while the session lives); a
//! closed candidacy whose delete gave up, or whose create is still in doubt, leaves the rest to a
//! background task.

use super::super::line::candidates;
use super::*;
use crate::zk::WeakZk;

impl Driver {
    /// How long a closed candidacy (resign, drop) tries to delete its node before it leaves it
    /// to [`clean_left`]: twice the request limit.
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

    /// Leaves what a closed candidacy could not clean up in time to a background task
    /// ([`clean_left`]): [`Election::resign`] reports it until it is done.
    pub(super) fn leave_behind(&self, generation: u64, left: Left) {
        let what = left.to_string();
        tracing::warn!(
            group = %self.group,
            left = %what,
            "could not clean up the candidacy in time; a candidate node may still be there, and while it is, nobody else leads: cleaning up in the background until done or its session ends"
        );
        lock(&self.shared).left = Some(what);
        tokio::spawn(clean_left(
            self.zk.downgrade(),
            generation,
            left,
            self.shared.clone(),
        ));
    }
}

/// A deadline that never comes (about 30 years).
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86400 * 365 * 30)
}

/// Cleans up what a closed candidacy left behind ([`Left`]), for as long as it takes: deletes
/// the node, or settles the copies in doubt and deletes the node one made, until done or the
/// session is gone (given up by the session layer, or closed because the application dropped
/// its last handle: its nodes go with it). It holds no session handle between attempts, so it
/// never keeps the session, and the node, alive by itself.
async fn clean_left(
    session: WeakZk,
    generation: u64,
    mut left: Left,
    shared: Arc<Mutex<Shared>>,
) {
    let what = left.to_string();
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
        let attempt = match &left {
            Left::Node(path) => zk.delete(generation, path, None).await.map(|()| None),
            Left::InDoubt { group, marker } => {
                settle_once(&zk, generation, group, marker).await
            }
        };
        match attempt {
            Ok(None) => break "done",
            // A copy applied: its node is the one to delete now.
            Ok(Some(path)) => left = Left::Node(path),
            // The node gone; or, for copies in doubt, the group node (they set its data at a
            // version, so none can apply).
            Err(Failure {
                verdict: Verdict::NoNode,
                ..
            }) => break "found gone",
            Err(failure) if says_gone(&failure) => break "its session is gone",
            Err(err) => {
                failures += 1;
                if failures.is_power_of_two() {
                    tracing::warn!(%err, left = %left, failures, "cleaning up after a closed candidacy failed again; still trying");
                }
            }
        }
    };
    tracing::info!(left = %what, how, "cleaned up after a closed candidacy");
    let mut shared = lock(&shared);
    if shared.left.as_deref() == Some(what.as_str()) {
        shared.left = None;
    }
}

/// One attempt to settle the copies of a candidate create in doubt, made with `marker`: our node
/// if one applied (`Some`), else `None` once the group node's version has moved past every
/// copy's (a `setData` of its data unchanged at the version read), so that none ever applies.
pub(super) async fn settle_once(
    zk: &Zk,
    generation: u64,
    group: &str,
    marker: &str,
) -> std::result::Result<Option<String>, Failure> {
    let (data, stat) = zk.get(generation, group).await?;
    if let Some(path) = marker_node(zk, generation, group, marker).await? {
        return Ok(Some(path));
    }
    let mut fence = Multi::new();
    fence.set(group, &data, Some(stat.version));
    match fence.commit(&**zk, generation).await {
        Ok(_) => Ok(None),
        // Moved since the read: a copy may have applied.
        Err(failed) if failed.index.is_some() && failed.verdict() == Verdict::BadVersion => {
            match marker_node(zk, generation, group, marker).await? {
                Some(path) => Ok(Some(path)),
                None => Err(failed.failure),
            }
        }
        Err(failed) => Err(failed.failure),
    }
}

/// The candidate node of `group` made with `marker`, if one exists (after a `sync`).
pub(super) async fn marker_node(
    zk: &Zk,
    generation: u64,
    group: &str,
    marker: &str,
) -> std::result::Result<Option<String>, Failure> {
    zk.sync(generation, group).await?;
    let (children, _) = zk.children(generation, group).await?;
    Ok(candidates(&children)
        .into_iter()
        .find(|c| c.marker == marker)
        .map(|c| format!("{group}/{}", c.name)))
}
