//! The background search for a node of ours whose create was left in doubt (a claim's lock, a
//! waiter): a create in flight at a connection loss may still apply. The node is looked for
//! until it is found, until the session is given up (the node went with it), or, once
//! [`STRAY_WATCH`] request limits have passed, until a look after a `sync` did not find it
//! (the session has moved on from the create's connection by then, and a copy left on an older
//! connection never applies: docs/RECIPES.md). A look that fails is never taken for the node
//! being absent, however long they fail.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use super::Inner;

/// How long (in request limits, at least a second each) a create given up in doubt is looked
/// for at least.
pub(super) const STRAY_WATCH: u32 = 4;

/// How often the search looks.
const LOOK_EVERY: Duration = Duration::from_millis(250);

/// What one look found.
pub(super) enum Look<T> {
    /// The node, ours.
    Found(T),
    /// Not there (or another's), as the servers answered after a `sync`.
    Absent,
    /// No answer: says nothing.
    Failed,
}

/// Looks with `look` until it finds the node (returned) or the search ends as the module says
/// (`None`); `generation` is the session generation of the create.
pub(super) async fn search<T, F, Fut>(queue: &Inner, generation: u64, mut look: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Look<T>>,
{
    let window =
        Instant::now() + queue.zk.request_limit().max(Duration::from_secs(1)) * STRAY_WATCH;
    loop {
        if queue.zk.is_gone_generation(generation) {
            return None;
        }
        match look().await {
            Look::Found(found) => return Some(found),
            Look::Absent if Instant::now() >= window => return None,
            Look::Absent | Look::Failed => {}
        }
        tokio::time::sleep(LOOK_EVERY).await;
    }
}
