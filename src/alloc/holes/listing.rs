//! The holes of a pool in format 4, as listed: one `getChildren` of `PATH/zooid-holes`, kept
//! while a child watch says nobody changed them, so that a take on unchanged holes reads
//! nothing. Once the watch fired (this process's own writes fire it too), the parent's child
//! version tells, with one small read, whether only this process's writes (applied to the
//! listing) changed them; only otherwise are the holes listed again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::choice::Hole;
pub(crate) use crate::alloc::state::Listing;
use crate::error::{Result, ZooidError};
use crate::format::{hole_of, holes_parent};
use crate::retry::Budget;
use crate::zk::{Classified, Session, Verdict};

/// Lists the holes of pool `path` and watches them (creating their parent if missing), again
/// while ZooKeeper is unreachable, within `budget`. Names that are not holes are skipped
/// (logged once per listing).
pub(crate) async fn list(session: &Session, path: &str, budget: &mut Budget) -> Result<Listing> {
    let parent = holes_parent(path);
    loop {
        let (client, generation) = session.client();
        let listed = session
            .run(generation, client.get_and_watch_children(&parent))
            .await;
        let (children, stat, watcher) = match listed.classified() {
            Ok(got) => got,
            Err((Verdict::NoNode, _)) => {
                crate::alloc::blocks::returns::ensure_node(session, path, &parent).await?;
                continue;
            }
            Err((verdict @ Verdict::NotAuthorized, err)) => {
                return Err(crate::alloc::blocks::refused(session, path, verdict, &err))
            }
            // Unreachable (a read changes nothing): again within the operation's budget.
            Err((_, err)) => {
                if !budget.try_attempt() {
                    return Err(ZooidError::ConnectionLost {
                        category: path.to_string(),
                        reason: format!("listing {parent}: {err}"),
                    });
                }
                budget.backoff().await;
                continue;
            }
        };
        let total = children.len();
        let mut holes: Vec<Hole> = children
            .into_iter()
            .filter_map(|name| hole_of(&name).map(|range| (name, range)))
            .collect();
        // In ID order, as the choice walks them (src/alloc/holes/choice.rs).
        holes.sort_by_key(|(_, range)| (range.start(), range.end()));
        if holes.len() != total {
            tracing::warn!(
                category = path,
                skipped = total - holes.len(),
                "nodes under zooid-holes that are not holes"
            );
        }
        let stale = Arc::new(AtomicBool::new(false));
        let flag = stale.clone();
        let ended = session.ended();
        tokio::spawn(async move {
            tokio::select! {
                _ = watcher.changed() => {}
                () = ended => {}
            }
            flag.store(true, Ordering::Release);
        });
        return Ok(Listing {
            holes,
            stale,
            generation,
            cversion: stat.cversion,
            created: stat.czxid,
        });
    }
}

/// Makes `kept` show the holes of pool `path` as they are: kept when known to be as listed (its
/// watch has not fired, or the holes' parent is still at the child version the listing, with
/// this process's own writes, expects), else, or without a listing of this session, listed
/// again (counted in `stats`). The caller reads them in place: a listing of 20,000 holes is not
/// copied per take.
pub(crate) async fn refresh(
    session: &Session,
    path: &str,
    kept: &mut Option<Listing>,
    budget: &mut Budget,
    stats: &crate::stats::Recorder,
) -> Result<()> {
    let generation = session.client().1;
    if let Some(listing) = kept.as_ref() {
        if listing.is_current(generation)
            || (listing.generation == generation
                && unchanged_by_others(session, path, listing).await)
        {
            return Ok(());
        }
    }
    let listing = list(session, path, budget).await?;
    stats.hole_listing(path);
    *kept = Some(listing);
    Ok(())
}

/// The holes `kept` shows (none without a listing).
pub(crate) fn holes_of(kept: &Option<Listing>) -> &[Hole] {
    kept.as_ref()
        .map_or(&[], |listing| listing.holes.as_slice())
}

/// Whether the holes' parent of pool `path` is the incarnation `listing` was made on, at the
/// child version it expects (one `exists`; any failure reads as "changed": the caller lists them
/// again).
async fn unchanged_by_others(session: &Session, path: &str, listing: &Listing) -> bool {
    let parent = holes_parent(path);
    let (client, generation) = session.client();
    matches!(
        session.run(generation, client.check_stat(&parent)).await,
        Ok(Some(stat)) if stat.cversion == listing.cversion && stat.czxid == listing.created
    )
}

/// A `sync` of the holes' parent of pool `path` (the next read sees every write before it),
/// again while ZooKeeper is unreachable, within `budget`.
pub(crate) async fn sync(session: &Session, path: &str, budget: &mut Budget) -> Result<()> {
    let parent = holes_parent(path);
    loop {
        let (client, generation) = session.client();
        match session
            .run(generation, client.sync(&parent))
            .await
            .classified()
        {
            Ok(()) | Err((Verdict::NoNode, _)) => return Ok(()),
            Err((_, err)) => {
                if !budget.try_attempt() {
                    return Err(ZooidError::ConnectionLost {
                        category: path.to_string(),
                        reason: format!("syncing {parent}: {err}"),
                    });
                }
                budget.backoff().await;
            }
        }
    }
}
