//! Ephemeral nodes a handle made and no longer needs: deleted in the background, so that they do
//! not pile up on a long session (a queue's put guard, a counter's last marker).

use std::time::Duration;

use super::{Fate, Zk};

/// Deletes the ephemeral node `path`, made on the session of `generation`, in the background
/// (best effort, up to 20 tries), on the runtime the session lives on (wherever the handle was
/// dropped): a node of a given-up session goes with it, and a session naming no runtime, called
/// outside one, gets nothing done (the node stays until its session ends).
///
/// The task never holds the session (a [`WeakZk`](super::WeakZk), upgraded only to send each
/// delete, whose reply it then awaits without a handle): closing the session right after the
/// handle closes it, and the node goes with it.
pub(crate) fn delete_in_background(zk: &Zk, generation: u64, path: String) {
    if zk.is_gone_generation(generation) {
        return; // it goes with its session
    }
    let ended = zk.ended();
    let weak = zk.downgrade();
    super::interface::spawn_background(&**zk, async move {
        let delete = async {
            let mut backoff = Duration::from_millis(50);
            for _ in 0..20 {
                let Some(zk) = weak.upgrade() else {
                    return; // the session ended: the node went with it
                };
                // Bounded by the request limit; refused unsent once the generation is given up.
                let reply = zk.delete_now(generation, &path, None);
                drop(zk);
                match reply.await {
                    Ok(()) => return,
                    // Gone, or not ours to delete, or its session given up.
                    Err(e) if e.verdict.fate() != Fate::Unknown => return,
                    Err(_) => {
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(1));
                    }
                }
            }
        };
        tokio::select! {
            biased;
            () = delete => {}
            () = ended => {}
        }
    });
}
