//! Watches as the servers keep them: one-shot data, exists and child watches per path and
//! session, and persistent recursive watches on a subtree; fired by the changes a transaction
//! made, or with a `Session` event when their session ends.

use std::collections::{BTreeMap, BTreeSet};

use tokio::sync::{mpsc, oneshot};
use zooid::zk::{Event, EventKind};

use super::tree::Change;

/// Which one-shot watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Set by a read of the node's data (or an exists that found it): data change, deletion.
    Data,
    /// Set by an exists that found no node: creation.
    Exist,
    /// Set by a children read: a child created or deleted, the node deleted.
    Child,
}

/// The one-shot watches set on a node, by session.
type Waiting = Vec<(i64, oneshot::Sender<Event>)>;

/// A notification held for a frozen session.
enum Held {
    One(oneshot::Sender<Event>, Event),
    Tree(mpsc::UnboundedSender<Event>, Event),
}

#[derive(Default)]
pub struct Watches {
    one_shot: BTreeMap<(String, Kind), Waiting>,
    tree: Vec<(i64, String, mpsc::UnboundedSender<Event>)>,
    /// Sessions of a paused or crashed process: their notifications wait for it to resume
    /// (a stopped process hears nothing), and those of a crashed one never arrive.
    frozen: BTreeSet<i64>,
    held: Vec<(i64, Held)>,
}

fn under(path: &str, root: &str) -> bool {
    root == "/" || path == root || path.starts_with(&format!("{root}/"))
}

impl Watches {
    pub fn add(&mut self, session: i64, path: &str, kind: Kind) -> oneshot::Receiver<Event> {
        let (tx, rx) = oneshot::channel();
        self.one_shot
            .entry((path.to_string(), kind))
            .or_default()
            .push((session, tx));
        rx
    }

    /// A one-shot watch that has fired already with `event` (set on a server behind the change).
    pub fn fired(path: &str, event: EventKind) -> oneshot::Receiver<Event> {
        let (tx, rx) = oneshot::channel();
        let _ = tx.send(Event {
            kind: event,
            path: path.to_string(),
        });
        rx
    }

    pub fn add_tree(&mut self, session: i64, root: &str) -> mpsc::UnboundedReceiver<Event> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.tree.push((session, root.to_string(), tx));
        rx
    }

    fn fire(&mut self, path: &str, kinds: &[Kind], event: EventKind) -> usize {
        let mut fired = 0;
        for kind in kinds {
            for (owner, tx) in self
                .one_shot
                .remove(&(path.to_string(), *kind))
                .unwrap_or_default()
            {
                let event = Event {
                    kind: event,
                    path: path.to_string(),
                };
                if self.frozen.contains(&owner) {
                    self.held.push((owner, Held::One(tx, event)));
                    fired += 1;
                } else {
                    fired += usize::from(tx.send(event).is_ok());
                }
            }
        }
        fired
    }

    /// Fires the watches `changes` trigger; returns how many notifications went out.
    pub fn changed(&mut self, changes: &[Change]) -> usize {
        let mut fired = 0;
        for change in changes {
            let path = change.path.as_str();
            fired += match change.kind {
                EventKind::Created => {
                    self.fire(path, &[Kind::Data, Kind::Exist], EventKind::Created)
                }
                EventKind::DataChanged => {
                    self.fire(path, &[Kind::Data, Kind::Exist], EventKind::DataChanged)
                }
                EventKind::Deleted => self.fire(
                    path,
                    &[Kind::Data, Kind::Exist, Kind::Child],
                    EventKind::Deleted,
                ),
                EventKind::ChildrenChanged => {
                    self.fire(path, &[Kind::Child], EventKind::ChildrenChanged)
                }
                EventKind::Session => 0,
            };
            // Persistent recursive watches see no child events, only the nodes themselves.
            if change.kind != EventKind::ChildrenChanged {
                let (frozen, held) = (&self.frozen, &mut self.held);
                self.tree.retain(|(owner, root, tx)| {
                    if under(path, root) {
                        fired += 1;
                        let event = Event {
                            kind: change.kind,
                            path: path.to_string(),
                        };
                        if frozen.contains(owner) {
                            held.push((*owner, Held::Tree(tx.clone(), event)));
                            true
                        } else {
                            tx.send(event).is_ok()
                        }
                    } else {
                        !tx.is_closed()
                    }
                });
            }
        }
        fired
    }

    /// Ends every watch of `session` with a `Session` event.
    pub fn session_ended(&mut self, session: i64) {
        let session_event = || Event {
            kind: EventKind::Session,
            path: String::new(),
        };
        for list in self.one_shot.values_mut() {
            let mut kept = Vec::new();
            for (owner, tx) in list.drain(..) {
                if owner == session && self.frozen.contains(&owner) {
                    self.held.push((owner, Held::One(tx, session_event())));
                } else if owner == session {
                    let _ = tx.send(session_event());
                } else {
                    kept.push((owner, tx));
                }
            }
            *list = kept;
        }
        self.one_shot.retain(|_, list| !list.is_empty());
        let (frozen, held) = (&self.frozen, &mut self.held);
        self.tree.retain(|(owner, _, tx)| {
            if *owner == session && frozen.contains(owner) {
                held.push((*owner, Held::Tree(tx.clone(), session_event())));
                false
            } else if *owner == session {
                let _ = tx.send(session_event());
                false
            } else {
                true
            }
        });
    }

    /// The process of these sessions stops: their notifications are held.
    pub fn freeze(&mut self, sessions: impl IntoIterator<Item = i64>) {
        self.frozen.extend(sessions);
    }

    /// The process of these sessions resumes: what was held for them arrives now, in order.
    pub fn thaw(&mut self, sessions: &[i64]) {
        for sid in sessions {
            self.frozen.remove(sid);
        }
        let held = std::mem::take(&mut self.held);
        for (owner, note) in held {
            if !sessions.contains(&owner) {
                self.held.push((owner, note));
                continue;
            }
            match note {
                Held::One(tx, event) => {
                    let _ = tx.send(event);
                }
                Held::Tree(tx, event) => {
                    let _ = tx.send(event);
                }
            }
        }
    }
}
