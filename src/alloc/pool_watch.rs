//! The watch that tells a category's slot the pool it remembers was changed by another
//! process (src/alloc/state.rs: `Slot::changed`), armed by the engine when it reads a pool in
//! block allocation.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

use crate::zk::{Zk, ZooKeeperExt};

/// Watches a pool node in block allocation for changes made by others, so that the next take
/// reads it again instead of claiming on a remembered state (the claim's `check` of the pool node
/// would fail): sets `changed` when the node's version moves away from `known`, the version this
/// process last read or wrote (its own writes do not count). One watch per category at a time
/// (`armed`); it ends when it has set `changed` or the session ended.
pub(crate) fn watch_pool(
    zk: &Zk,
    path: &str,
    known: Arc<AtomicI32>,
    armed: Arc<AtomicBool>,
    changed: Arc<AtomicBool>,
) {
    if armed.swap(true, Ordering::AcqRel) {
        return;
    }
    let weak = zk.downgrade();
    let path = path.to_string();
    // The task holds no handle on the session between its requests, and ends with it: a
    // closed service must not leave its session open until the pool changes.
    let ended = zk.ended();
    tokio::spawn(async move {
        let watch = async {
            loop {
                let Some(zk) = weak.upgrade() else { break };
                let watched = zk.exists_watched(zk.generation(), &path).await;
                drop(zk);
                match watched {
                    // At or below: this process's own write (`known` is set before it is sent,
                    // so the node may still be a version behind). Above: another process wrote.
                    Ok((Some(stat), watcher)) if stat.version <= known.load(Ordering::Acquire) => {
                        watcher.changed().await;
                    }
                    _ => break,
                }
            }
        };
        tokio::select! {
            biased;
            () = watch => {}
            () = ended => {}
        }
        changed.store(true, Ordering::Release);
        armed.store(false, Ordering::Release);
    });
}
