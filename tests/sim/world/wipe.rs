//! The ensemble losing its state: a *wipe* (every data directory emptied: a fresh tree, no
//! session known) and a *rollback* (the ensemble restarted from a snapshot older than its latest
//! state: that snapshot's tree, zxid and versions, and the sessions it knew), then the
//! operator's maintenance window, in which only the operator's clients reach the servers until
//! the categories are restored from the durable record (tests/sim/README.md, "Wipe and
//! rollback").
//!
//! What is assumed of real ZooKeeper:
//! - A restart drops every client connection. A session the restored servers do not know is
//!   expired: a reattach is refused as expired and a request on it fails with `Expired` (nothing
//!   applies). A session the snapshot knew comes back alive with a fresh timeout (ZooKeeper
//!   serialises its session table into the snapshot and restarts every session's expiry on
//!   load), and expires if no client reattaches within its timeout. By default the operator
//!   keeps every client off until those sessions have expired (they end at the restart);
//!   `ZOOID_SIM_ROLLBACK_KEEPS_SESSIONS=1` lets their clients reattach once the servers' zxid
//!   has caught up with what the client saw.
//! - A client that saw a zxid above the restored servers' last one is refused at reattach
//!   (ZooKeeper: "Refusing session request ... as it has seen zxid"); it keeps trying, and gives
//!   its session up after the timeout.
//! - Requests sent before the restart and not yet applied were in connections the restart
//!   closed: they never arrive. A claim in flight crosses the incident only as its client
//!   makes it cross: resolved on a later session, planned again or (the mutant) sent again.
//!   `ZOOID_SIM_HELD_ACROSS_RESTART=1` keeps them in the network instead (an adversary beyond
//!   TCP): each then lands after the maintenance window if and only if its session is known
//!   and alive on the servers then and has not moved to a later connection since the snapshot.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::faults::between;
use super::sessions::{Life, ServerSession};
use super::tree::Tree;
use super::{Action, State};

/// What a restart may come back from: a tree and the session table it was saved with.
#[derive(Clone)]
pub struct Snapshot {
    pub tree: Tree,
    pub sessions: BTreeMap<i64, ServerSession>,
}

/// The durable record of the simulated category, outside ZooKeeper: the directory the real
/// keeper's `DurableStore::Dir` writes (tests/sim/keeper.rs), read here as the operator's
/// `zooid restore` and the oracle read it.
#[derive(Clone, Debug)]
pub struct Durable {
    pub dir: zooid::durable::DirRecords,
    pub category: String,
}

impl Durable {
    /// The category's record as the store has it now (`None`: none yet, or unreadable).
    pub fn read(&self) -> Option<zooid::durable::Record> {
        self.dir.read(&self.category).ok().flatten()
    }

    /// The record's ceiling (0 without a record).
    pub fn ceiling(&self) -> i64 {
        self.read().map_or(0, |r| r.ceiling)
    }
}

/// The world's state around wipes and rollbacks.
#[derive(Default)]
pub struct WipeState {
    /// The servers are closed to every client but the operators' (the maintenance window).
    pub closed: bool,
    /// The operator's clients (reach the servers during the maintenance window).
    pub operators: BTreeSet<usize>,
    /// The durable record (with the keeper; `None` with `ZOOID_SIM_WIPES=0`).
    pub durable: Option<Durable>,
    /// Wipes and rollbacks so far.
    pub incidents: u64,
}

/// How long a gated action waits before it looks again.
const GATE_RETRY: Duration = Duration::from_millis(100);

impl State {
    /// The ensemble's state as a snapshot would save it now.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            tree: self.tree.clone(),
            sessions: self.sessions.clone(),
        }
    }

    /// Whether a claim of fresh blocks (a `multi` creating sequential nodes under a
    /// `zooid-blocks-` parent) waits for its reply.
    pub fn claim_in_flight(&self) -> bool {
        self.pending.values().any(|p| {
            let claim = match &p.req {
                super::Req::Multi(ops) => ops.iter().any(|op| {
                    matches!(op, zooid::zk::Op::Create { path, create, .. }
                        if create.mode.is_sequential() && path.contains("/zooid-blocks-"))
                }),
                _ => false,
            };
            claim && p.reply.is_some() && !p.cancelled
        })
    }

    /// Whether client `c` is kept off the servers (the maintenance window).
    pub fn gated(&self, c: usize) -> bool {
        self.wipe.closed && !self.wipe.operators.contains(&c)
    }

    /// Re-runs `action` a little later (a gated client waits for the window to end).
    pub fn retry_gated(&mut self, action: Action) {
        self.schedule(GATE_RETRY, action);
    }

    /// A reattach the restored servers refuse because the client saw a later zxid than they
    /// have: `true` when refused (the client tries again later).
    pub fn refused_as_ahead(&mut self, c: usize, conn: u64) -> bool {
        let seen = self.clients.get(&c).map_or(0, |cl| cl.seen);
        if seen <= self.tree.zxid {
            return false;
        }
        let zxid = self.tree.zxid;
        self.log(format!(
            "c{c} reattach refused: the client has seen zxid {seen}, the servers' last is {zxid}"
        ));
        self.schedule(
            Duration::from_millis(500),
            Action::Reconnect { client: c, conn },
        );
        true
    }

    /// The ensemble loses its state: every data directory emptied (`None`), or restarted from
    /// `snapshot`. Every connection drops; the servers stay closed to every client but the
    /// operators' until [`Self::reopen`].
    pub fn restart(&mut self, snapshot: Option<Snapshot>) {
        self.wipe.incidents += 1;
        self.wipe.closed = true;
        let what = match &snapshot {
            None => "WIPE: every data directory emptied".to_string(),
            Some(s) => format!(
                "ROLLBACK: restarted from a snapshot at zxid {} (latest {})",
                s.tree.zxid, self.tree.zxid
            ),
        };
        self.log(what);
        let clients: Vec<usize> = self.clients.keys().copied().collect();
        for c in clients {
            let down = between(
                &mut self.rng,
                Duration::from_millis(10),
                Duration::from_millis(500),
            );
            self.drop_connection(c, Some(down), "servers restarted");
        }
        // Requests not applied yet were in connections the restart closed: they never arrive
        // (`ZOOID_SIM_HELD_ACROSS_RESTART=1`: they stay in the network, an adversary beyond
        // TCP, and land later if their session is known and alive then).
        if std::env::var_os("ZOOID_SIM_HELD_ACROSS_RESTART").is_none() {
            let mut lost = Vec::new();
            for (id, pending) in self.pending.iter_mut() {
                if pending.outcome.is_none() && !pending.cancelled {
                    pending.cancelled = true;
                    lost.push(format!("r{id}"));
                }
            }
            if !lost.is_empty() {
                self.log(format!("  lost with the restart: {}", lost.join(" ")));
            }
        }
        // Every watch ends: the servers that held them are gone.
        let known: Vec<i64> = self.sessions.keys().copied().collect();
        for sid in known {
            self.watches.session_ended(sid);
        }
        let (tree, sessions) = match snapshot {
            None => (Tree::new(), BTreeMap::new()),
            Some(s) => (s.tree, s.sessions),
        };
        let now = self.now_nanos();
        let mut restored = BTreeMap::new();
        for (sid, mut session) in sessions {
            if session.state == Life::Alive {
                session.last_contact = now;
                session.attached = false;
                let due = now + session.timeout.as_nanos() as u64;
                self.schedule_at(due, Action::ServerExpire(sid));
            }
            restored.insert(sid, session);
        }
        let forgotten: Vec<i64> = self
            .sessions
            .keys()
            .filter(|sid| !restored.contains_key(sid))
            .copied()
            .collect();
        self.log(format!(
            "  servers know {} sessions; forgotten: {}",
            restored.len(),
            forgotten
                .iter()
                .map(|s| format!("s{s:x}"))
                .collect::<Vec<_>>()
                .join(" ")
        ));
        self.sessions = restored;
        self.tree = tree;
        self.history.clear();
        self.committed();
        // The operator keeps the clients off until every session the snapshot brought back
        // has expired (`ZOOID_SIM_ROLLBACK_KEEPS_SESSIONS=1`: the servers open while they live,
        // and their clients reattach; tests/sim/README.md says what that finds).
        if std::env::var_os("ZOOID_SIM_ROLLBACK_KEEPS_SESSIONS").is_none() {
            let alive: Vec<i64> = self
                .sessions
                .iter()
                .filter(|(_, s)| s.state == Life::Alive)
                .map(|(sid, _)| *sid)
                .collect();
            for sid in alive {
                self.end_session(sid, Life::Expired);
            }
        }
    }

    /// The maintenance window ends: every client may reach the servers again.
    pub fn reopen(&mut self) {
        self.wipe.closed = false;
        self.log("servers open to every client again");
    }

    /// Deletes `path` and everything below it (an operator's `deleteall`), in one transaction.
    pub fn delete_all(&mut self, path: &str) {
        let mut doomed: Vec<String> = self
            .tree
            .nodes
            .keys()
            .filter(|p| p.as_str() == path || p.starts_with(&format!("{path}/")))
            .cloned()
            .collect();
        if doomed.is_empty() {
            return;
        }
        doomed.sort_by_key(|p| std::cmp::Reverse(p.len()));
        let zxid = self.tree.zxid + 1;
        let mut changes = Vec::new();
        for p in &doomed {
            let _ = self.tree.delete(zxid, p, None, &mut changes);
        }
        self.tree.zxid = zxid;
        self.committed();
        self.watches.changed(&changes);
        self.log(format!("operator: deleted {path} ({} nodes)", doomed.len()));
    }
}
