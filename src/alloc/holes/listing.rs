//! The holes of a pool in format 4, as listed: one `getChildren` of `PATH/zooid-holes`, kept
//! while a child watch says nobody changed them, so that a take on unchanged holes reads
//! nothing. Once the watch fired (this process's own writes fire it too), the parent's child
//! version tells, with one small read, whether only this process's writes (applied to the
//! listing) changed them; only otherwise are the holes listed again.
//!
//! While the holes are quiet (the last look found nobody else changed them, less than
//! [`LISTING_TRUSTED_FOR`] ago), that read is sent ahead of the write instead of before it: the write
//! does not wait for it, and its answer, in by the time the write's is, decides at the next
//! operation whether the holes are listed again. A take or push then costs one round trip, as in
//! the single-node layout. The listing only chooses: a hole another take deleted meanwhile
//! fails the claim (a race, as any), and one pushed meanwhile is seen by the next operation.
//!
//! While others keep changing the holes (the last look found their changes), the holes are
//! listed again at once, without the `exists` that would most likely say so again and without a
//! watch, and takes choose on that listing, reading nothing, for [`LISTING_TRUSTED_FOR`]: a take
//! under contention costs its write, and a listing per that time (and one after each race it
//! lost). Holes such a listing shows covering a take are listed again before they are claimed
//! ([`Seen::Trusted`]): others' takes most likely outran them. Either way a take that looks at the holes sees every hole another process pushed that
//! long before it began; a take at the end of a category looks at them as they are
//! ([`Trust::Exact`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

use super::choice::Hole;
pub(crate) use super::memory::{AheadCheck, Listing};
use crate::error::{Result, ZooidError};
use crate::format::{hole_of, holes_parent};
use crate::retry::Budget;
use crate::zk::{Failure, Verdict, Zk, ZooKeeperExt};

/// Whether a listing sets a child watch on the holes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Watch {
    /// Watched: the listing stays current until the watch fires.
    Set,
    /// Not watched, for a process whose next take lists the holes again anyway (others keep
    /// changing them): no notification per change for it to receive, nor for the server to
    /// send. The listing counts as changed at once.
    None,
}

/// Lists the holes of pool `path`, watching them as `watch` says (creating their parent if
/// missing), again while ZooKeeper is unreachable, within `budget`. Names that are not holes are
/// skipped (logged once per listing).
pub(crate) async fn list(
    zk: &Zk,
    path: &str,
    watch: Watch,
    budget: &mut Budget,
) -> Result<Listing> {
    let parent = holes_parent(path);
    loop {
        let sent = Instant::now();
        let generation = zk.generation();
        let listed = match watch {
            Watch::Set => zk
                .children_watched(generation, &parent)
                .await
                .map(|(children, stat, watcher)| (children, stat, Some(watcher))),
            Watch::None => zk
                .children(generation, &parent)
                .await
                .map(|(children, stat)| (children, stat, None)),
        };
        let (children, stat, watcher) = match listed {
            Ok(got) => got,
            Err(Failure {
                verdict: Verdict::NoNode,
                ..
            }) => {
                crate::alloc::blocks::ensure_node(zk, path, &parent).await?;
                continue;
            }
            Err(
                err @ Failure {
                    verdict: verdict @ Verdict::NotAuthorized,
                    ..
                },
            ) => return Err(crate::alloc::blocks::refused(zk, path, verdict, &err)),
            // Unreachable (a read changes nothing): again within the operation's budget.
            Err(err) => {
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
        let stale = Arc::new(AtomicBool::new(watcher.is_none()));
        if let Some(watcher) = watcher {
            let flag = stale.clone();
            let ended = zk.ended();
            tokio::spawn(async move {
                tokio::select! {
                    biased;
                    _ = watcher.changed() => {}
                    () = ended => {}
                }
                flag.store(true, Ordering::Release);
            });
        }
        return Ok(Listing {
            holes,
            stale,
            generation,
            cversion: stat.cversion,
            created: stat.czxid,
            trusted_until: None,
            ahead: None,
            busy: false,
            own_since: std::collections::HashSet::new(),
            looked_at: sent,
            young: Default::default(),
        });
    }
}

/// How long a listing may be used without showing it exact: after a look found nobody else
/// changed the holes, while its next check is on its way; after a listing made while others
/// keep changing them, with no read at all. Counted from when the look or the listing was sent,
/// so a take that looks at the holes sees every push of another process that completed this
/// long before it began.
pub const LISTING_TRUSTED_FOR: Duration = Duration::from_millis(250);

/// Makes `kept` show the holes of pool `path` as they are: kept when known to be as listed (its
/// watch has not fired, or the holes' parent is still at the child version the listing, with
/// this process's own writes, expects), else, or without a listing of this session, listed
/// again (counted in `stats`). While the holes are quiet, the check of the child version is sent
/// ahead of the caller's write instead of awaited (see the module's doc). The caller reads them
/// in place: a listing of 20,000 holes is not copied per take (while some holes are young, a
/// take of whole blocks chooses on a copy of the others: src/alloc/holes/young.rs).
pub(crate) async fn refresh(
    zk: &Zk,
    path: &str,
    kept: &mut Option<Listing>,
    trust: Trust,
    budget: &mut Budget,
    stats: &crate::stats::Recorder,
) -> Result<Seen> {
    let generation = zk.generation();
    let mut busy = false;
    let mut expected = None;
    if let Some(listing) = kept.as_mut().filter(|l| l.generation == generation) {
        let looked_at = Instant::now();
        match look(zk, path, listing, trust).await {
            Look::Exact => {
                listing.looked_at = looked_at;
                return Ok(Seen::Exact);
            }
            Look::Trusted => {
                listing.looked_at = looked_at;
                return Ok(Seen::Trusted);
            }
            Look::ChangedByOthers => busy = true,
            Look::Busy => expected = Some((listing.cversion, listing.created)),
        }
    }
    // A process that lists because others changed the holes will most likely list them again
    // at its next take: no watch for it.
    let watch = if busy || expected.is_some() {
        Watch::None
    } else {
        Watch::Set
    };
    // Trusted from before it was sent: it shows at least every push completed by then.
    let sent = Instant::now();
    let mut listing = list(zk, path, watch, budget).await?;
    stats.hole_listing(path);
    // Busy while the holes keep changing under others' writes; a listing found as the last
    // one expected them ends it.
    listing.busy = busy || expected.is_some_and(|e| e != (listing.cversion, listing.created));
    if listing.busy {
        listing.trusted_until = Some(sent + LISTING_TRUSTED_FOR);
    }
    listing.follow(kept.as_ref().filter(|l| l.generation == generation));
    *kept = Some(listing);
    Ok(Seen::Exact)
}

/// How the holes a refreshed listing shows were seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Seen {
    /// As they are, or as a check sent along with the caller's write will confirm.
    Exact,
    /// As a listing made while others kept changing them showed them, within
    /// [`LISTING_TRUSTED_FOR`]: holes it shows may be gone since.
    Trusted,
}

/// Makes sure `kept` holds a listing of the holes of pool `path` made on the current session
/// generation, listing them only when it does not: the holes this process knows, kept true to
/// its own writes, without a read. What a push checks its ranges against: the holes it pushed
/// itself are in it (a push of the same IDs twice is refused), and no listing sees a push of the
/// same IDs by another process that is still on its way.
pub(crate) async fn known(
    zk: &Zk,
    path: &str,
    kept: &mut Option<Listing>,
    budget: &mut Budget,
    stats: &crate::stats::Recorder,
) -> Result<()> {
    let generation = zk.generation();
    if kept.as_ref().is_some_and(|l| l.generation == generation) {
        return Ok(());
    }
    let listing = list(zk, path, Watch::Set, budget).await?;
    stats.hole_listing(path);
    *kept = Some(listing);
    Ok(())
}

/// Whether a look may use a listing it cannot show to be exact, within [`LISTING_TRUSTED_FOR`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Trust {
    /// Yes: a take that chooses among holes (a hole gone fails its claim; one pushed within
    /// that time waits for the next take).
    Allowed,
    /// No: the holes as they are now (one `exists`, or a listing), for a take at the end of a
    /// category, where holes not seen would make it fail as exhausted.
    Exact,
}

/// What a look at a listing found.
enum Look {
    /// Others changed the holes when it was made, less than [`LISTING_TRUSTED_FOR`] ago: used
    /// as it is, without a read.
    Trusted,
    /// It shows the holes as they are (or, while they are quiet, its check goes ahead of the
    /// caller's write).
    Exact,
    /// Others changed the holes since: list them again.
    ChangedByOthers,
    /// Others changed the holes at the last look: list them again without checking first,
    /// since a check would most likely say so again.
    Busy,
}

/// Looks at `listing`, made on the current session generation: the answer of a check sent ahead
/// of the last write first; then unchanged since listed (its watch has not fired); busy; quiet
/// (a check goes ahead of the caller's write); or the child version it expects, found by one
/// `exists` now.
async fn look(zk: &Zk, path: &str, listing: &mut Listing, trust: Trust) -> Look {
    if let Some(ahead) = listing.ahead.take() {
        if !matches!(ahead.answer.await, Ok(true)) {
            return Look::ChangedByOthers;
        }
        listing.trusted_until = Some(ahead.sent + LISTING_TRUSTED_FOR);
    }
    if listing.is_current(listing.generation) {
        return Look::Exact;
    }
    let now = Instant::now();
    let trusted = trust == Trust::Allowed && listing.trusted_until.is_some_and(|until| now < until);
    if listing.busy {
        return if trusted { Look::Trusted } else { Look::Busy };
    }
    if trusted {
        listing.ahead = Some(check_ahead(zk, path, listing));
        return Look::Exact;
    }
    if unchanged_by_others(zk, path, listing).await {
        listing.trusted_until = Some(now + LISTING_TRUSTED_FOR);
        return Look::Exact;
    }
    Look::ChangedByOthers
}

/// The child versions at which the holes' parent still tells whether its children changed:
/// ZooKeeper keeps a child version from moving past 2^31 - 1 (a create or delete that would wrap
/// it leaves it where it is), so from this far below the limit on, a listing is never trusted
/// on its child version: the holes are listed again at each look (correct, only slower, after
/// some two billion pushes and takes of holes).
pub(crate) const CVERSION_TRUSTED_BELOW: i32 = i32::MAX - (1 << 20);

/// Whether a listing made at child version `listed` still shows the holes when their parent is
/// at `now` (and was created at `created`, the listing's incarnation `listing_created`).
pub(crate) fn shows_children_at(listed: i32, listing_created: i64, now: i32, created: i64) -> bool {
    listed < CVERSION_TRUSTED_BELOW && now == listed && created == listing_created
}

/// Sends the check of [`unchanged_by_others`] now, before the caller's write, and answers it
/// on a task: the write does not wait for it. Any failure answers "changed".
fn check_ahead(zk: &Zk, path: &str, listing: &Listing) -> AheadCheck {
    let (cversion, created) = (listing.cversion, listing.created);
    // Sent here, in call order, so it is answered before the write that follows.
    let stat = zk.exists_now(zk.generation(), &holes_parent(path));
    AheadCheck {
        sent: Instant::now(),
        answer: tokio::spawn(async move {
            matches!(
                stat.await,
                Ok(Some(stat)) if shows_children_at(cversion, created, stat.cversion, stat.czxid)
            )
        }),
    }
}

/// The holes `kept` shows (none without a listing).
pub(crate) fn holes_of(kept: &Option<Listing>) -> &[Hole] {
    kept.as_ref()
        .map_or(&[], |listing| listing.holes.as_slice())
}

/// Whether the holes' parent of pool `path` is the incarnation `listing` was made on, at the
/// child version it expects (one `exists`; any failure reads as "changed": the caller lists them
/// again).
async fn unchanged_by_others(zk: &Zk, path: &str, listing: &Listing) -> bool {
    let parent = holes_parent(path);
    let generation = zk.generation();
    matches!(
        zk.exists(generation, &parent).await,
        Ok(Some(stat)) if shows_children_at(listing.cversion, listing.created, stat.cversion, stat.czxid)
    )
}

/// A `sync` of the holes' parent of pool `path` (the next read sees every write before it),
/// again while ZooKeeper is unreachable, within `budget`.
pub(crate) async fn sync(zk: &Zk, path: &str, budget: &mut Budget) -> Result<()> {
    let parent = holes_parent(path);
    loop {
        let generation = zk.generation();
        match zk.sync(generation, &parent).await {
            Ok(())
            | Err(Failure {
                verdict: Verdict::NoNode,
                ..
            }) => return Ok(()),
            Err(err) => {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// ZooKeeper's child version stops at 2^31 - 1 rather than wrap: near it, an equal child
    /// version no longer means "no child changed", and no listing is trusted on it.
    #[test]
    fn a_child_version_near_its_limit_never_vouches_for_a_listing() {
        assert!(shows_children_at(41, 7, 41, 7));
        assert!(!shows_children_at(41, 7, 42, 7), "children changed");
        assert!(!shows_children_at(41, 7, 41, 8), "another incarnation");
        assert!(
            !shows_children_at(i32::MAX, 7, i32::MAX, 7),
            "stuck at the limit"
        );
        assert!(!shows_children_at(
            CVERSION_TRUSTED_BELOW,
            7,
            CVERSION_TRUSTED_BELOW,
            7
        ));
        assert!(shows_children_at(
            CVERSION_TRUSTED_BELOW - 1,
            7,
            CVERSION_TRUSTED_BELOW - 1,
            7
        ));
    }
}
