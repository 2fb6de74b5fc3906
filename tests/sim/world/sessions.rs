//! Sessions on both sides: the servers' (alive until expired or closed; their ephemeral nodes
//! go with them) and each process's client (its connection, its generations, the status it
//! publishes as zooid's `SessionStatus`), and how they move: a connection drops and reattaches,
//! a suspension turns into stop-acting and then into a given-up generation, the servers expire a
//! session they heard nothing of for its timeout, a new generation opens.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::sync::watch;
use zooid::zk::{ConnectionState, SessionStatus};

use super::faults::{between, chance};
use super::{Action, State};

/// A session as the servers know it.
#[derive(Clone, Debug)]
pub struct ServerSession {
    pub timeout: Duration,
    pub state: Life,
    /// When the servers last heard of it (nanoseconds of virtual time).
    pub last_contact: u64,
    /// A client connection is attached (heartbeats keep it alive).
    pub attached: bool,
    /// The client connection the session was last attached on: ZooKeeper refuses a request
    /// that arrives on an earlier one (the session moved: `SessionMoved`, or the server closed
    /// the stale connection), as tests/zookeeper/session_fate.rs establishes on real servers.
    pub attached_conn: u64,
    pub client: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Life {
    Alive,
    Expired,
    Closed,
}

/// One process's client side.
pub struct ClientState {
    pub process: usize,
    pub generation: u64,
    pub session: i64,
    /// Connection number (a new one per reattach).
    pub conn: u64,
    pub connected: bool,
    /// The current generation is given up (the next one is opening).
    pub lost: bool,
    pub closed: bool,
    /// Paused or crashed: no reattach until resumed.
    pub frozen: bool,
    /// Crashed: never resumed (a pause that began before the crash ends without it).
    pub crashed: bool,
    pub stop_acting: bool,
    /// The last zxid this client saw (a follower never serves it anything older).
    pub seen: i64,
    /// The session of every generation.
    pub generations: BTreeMap<u64, i64>,
    pub status: watch::Sender<SessionStatus>,
    /// A channel of its own per subscriber (`subscribe`, `wait_connected`, `report_lost`),
    /// told in the order they subscribed: tasks waiting on one tokio watch channel wake in an
    /// order drawn from the runtime's own RNG, which a seed does not set.
    pub subscribers: Vec<watch::Sender<SessionStatus>>,
    pub losses: u64,
    pub timeout: Duration,
}

impl State {
    fn open_server_session(&mut self, client: usize) -> i64 {
        let sid = self.new_session_id();
        let timeout = self.faults.session_timeout;
        let now = self.now_nanos();
        self.sessions.insert(
            sid,
            ServerSession {
                timeout,
                state: Life::Alive,
                last_contact: now,
                attached: true,
                attached_conn: 1,
                client,
            },
        );
        sid
    }

    /// Opens a client for `process`: generation 1, connected.
    pub fn open_client(&mut self, client: usize, process: usize) -> watch::Receiver<SessionStatus> {
        let sid = self.open_server_session(client);
        let timeout = self.faults.session_timeout;
        let status = SessionStatus {
            state: ConnectionState::Connected,
            generation: 1,
            session_id: sid,
            timeout,
            requested: timeout,
            connection: 1,
            stop_acting: false,
        };
        let (tx, rx) = watch::channel(status);
        self.clients.insert(
            client,
            ClientState {
                process,
                generation: 1,
                session: sid,
                conn: 1,
                connected: true,
                lost: false,
                closed: false,
                frozen: false,
                crashed: false,
                stop_acting: false,
                seen: 0,
                generations: [(1, sid)].into(),
                status: tx,
                subscribers: Vec::new(),
                losses: 0,
                timeout,
            },
        );
        self.log(format!("c{client} p{process} open g1 s{sid:x}"));
        rx
    }

    /// Publishes client `c`'s status as it stands.
    /// A frozen (paused or crashed) process learns nothing: its status stays as it was until
    /// it resumes (then [`State::thaw`] publishes it), as a stopped process's would.
    pub fn publish(&mut self, c: usize) {
        let Some(client) = self.clients.get_mut(&c) else {
            return;
        };
        if client.frozen {
            return;
        }
        let state = if client.closed {
            ConnectionState::Closed
        } else if client.lost {
            ConnectionState::Lost
        } else if client.connected {
            ConnectionState::Connected
        } else {
            ConnectionState::Suspended
        };
        let status = SessionStatus {
            state,
            generation: client.generation,
            session_id: client.session,
            timeout: client.timeout,
            requested: client.timeout,
            connection: client.conn,
            stop_acting: match state {
                ConnectionState::Connected => false,
                ConnectionState::Suspended => client.stop_acting,
                _ => true,
            },
        };
        let changed = client.status.send_if_modified(|old| {
            let changed = *old != status;
            *old = status;
            changed
        });
        if changed {
            client.subscribers.retain(|tx| !tx.is_closed());
            for tx in &client.subscribers {
                tx.send_replace(status);
            }
        }
    }

    /// A receiver of client `c`'s status on a channel of its own (see
    /// [`ClientState::subscribers`]).
    pub fn subscribe(&mut self, c: usize) -> Option<watch::Receiver<SessionStatus>> {
        let client = self.clients.get_mut(&c)?;
        let (tx, rx) = watch::channel(*client.status.borrow());
        client.subscribers.push(tx);
        Some(rx)
    }

    /// Client `c`'s connection drops: every reply it waits for is lost; requests still in the
    /// network may arrive later (or never). It reattaches after `down` unless frozen.
    pub fn drop_connection(&mut self, c: usize, down: Option<Duration>, why: &str) {
        let Some(client) = self.clients.get_mut(&c) else {
            return;
        };
        if !client.connected || client.lost || client.closed {
            return;
        }
        client.connected = false;
        client.stop_acting = false;
        let (conn, sid, timeout) = (client.conn, client.session, client.timeout);
        client.conn += 1;
        if let Some(session) = self.sessions.get_mut(&sid) {
            session.attached = false;
        }
        self.log(format!("c{c} s{sid:x} connection {conn} dropped ({why})"));
        let waiting: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.client == c && p.conn == conn)
            .map(|(id, _)| *id)
            .collect();
        for id in waiting {
            let drop_it = chance(&mut self.rng, self.faults.drop_in_flight);
            let pending = self.pending.get_mut(&id).expect("listed");
            if let Some(reply) = pending.reply.take() {
                let _ = reply.send(Err(super::Fail::whole(
                    zooid::zk::Verdict::Unknown,
                    "connection loss",
                )));
            }
            if pending.outcome.is_some() || pending.cancelled {
                self.pending.remove(&id);
            } else if drop_it {
                pending.cancelled = true;
                self.log(format!("  r{id} lost in the network"));
            }
        }
        self.publish(c);
        let new_conn = conn + 1;
        self.schedule(
            timeout / 2,
            Action::StopActing {
                client: c,
                conn: new_conn,
            },
        );
        self.schedule(
            timeout,
            Action::GiveUp {
                client: c,
                conn: new_conn,
            },
        );
        let last = self.sessions.get(&sid).map_or(0, |s| s.last_contact);
        let at = last + timeout.as_nanos() as u64;
        self.schedule_at(at, Action::ServerExpire(sid));
        if let Some(down) = down {
            self.schedule(
                down,
                Action::Reconnect {
                    client: c,
                    conn: new_conn,
                },
            );
        }
    }

    pub(super) fn reconnect(&mut self, c: usize, conn: u64) {
        let Some(client) = self.clients.get(&c) else {
            return;
        };
        if client.conn != conn || client.connected || client.lost || client.closed || client.frozen
        {
            return;
        }
        // Wipe hook (world/wipe.rs): the servers are closed to this client for now.
        if self.gated(c) {
            self.retry_gated(Action::Reconnect { client: c, conn });
            return;
        }
        let sid = client.session;
        let alive = self
            .sessions
            .get(&sid)
            .is_some_and(|s| s.state == super::sessions::Life::Alive);
        // Wipe hook (world/wipe.rs): refused while the servers are behind what the client saw.
        if alive && self.refused_as_ahead(c, conn) {
            return;
        }
        if alive {
            let now = self.now_nanos();
            if let Some(session) = self.sessions.get_mut(&sid) {
                session.attached = true;
                session.attached_conn = conn;
                session.last_contact = now;
            }
            let client = self.clients.get_mut(&c).expect("seen");
            client.connected = true;
            self.log(format!("c{c} s{sid:x} reattached (connection {conn})"));
            self.publish(c);
        } else {
            self.log(format!("c{c} s{sid:x} reattach refused: session expired"));
            self.give_up(c, "the servers expired the session");
        }
    }

    pub(super) fn stop_acting(&mut self, c: usize, conn: u64) {
        if let Some(client) = self.clients.get_mut(&c) {
            if client.conn == conn && !client.connected && !client.lost {
                client.stop_acting = true;
                self.publish(c);
            }
        }
    }

    /// Client `c` gives its current generation up and opens the next one shortly.
    pub fn give_up(&mut self, c: usize, why: &str) {
        let Some(client) = self.clients.get_mut(&c) else {
            return;
        };
        if client.lost || client.closed {
            return;
        }
        client.lost = true;
        client.connected = false;
        client.losses += 1;
        client.conn += 1;
        let (generation, sid) = (client.generation, client.session);
        if let Some(session) = self.sessions.get_mut(&sid) {
            session.attached = false;
        }
        self.log(format!("c{c} g{generation} s{sid:x} lost: {why}"));
        // Replies still awaited on the given-up generation are lost.
        let waiting: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.client == c && p.session == sid && p.reply.is_some())
            .map(|(id, _)| *id)
            .collect();
        for id in waiting {
            let pending = self.pending.get_mut(&id).expect("listed");
            if let Some(reply) = pending.reply.take() {
                let _ = reply.send(Err(super::Fail::whole(
                    zooid::zk::Verdict::Unknown,
                    "connection loss (session given up)",
                )));
            }
            if pending.outcome.is_some() {
                self.pending.remove(&id);
            }
        }
        self.publish(c);
        let last = self.sessions.get(&sid).map_or(0, |s| s.last_contact);
        let timeout = self.faults.session_timeout;
        self.schedule_at(last + timeout.as_nanos() as u64, Action::ServerExpire(sid));
        let opening = between(
            &mut self.rng,
            Duration::from_millis(5),
            Duration::from_millis(200),
        );
        self.schedule(opening, Action::OpenNext { client: c });
    }

    pub(super) fn open_next(&mut self, c: usize) {
        // Frozen, closed, or its next generation already opened (a resume and the give-up
        // both schedule the opening: the second would replace a live generation silently).
        let skip = self
            .clients
            .get(&c)
            .is_none_or(|cl| cl.frozen || cl.closed || !cl.lost);
        if skip {
            return;
        }
        // Wipe hook (world/wipe.rs): the servers are closed to this client for now.
        if self.gated(c) {
            self.retry_gated(Action::OpenNext { client: c });
            return;
        }
        let sid = self.open_server_session(c);
        let client = self.clients.get_mut(&c).expect("checked");
        client.generation += 1;
        client.session = sid;
        client.lost = false;
        client.connected = true;
        client.stop_acting = false;
        client.conn += 1;
        client.seen = 0;
        let generation = client.generation;
        client.generations.insert(generation, sid);
        self.log(format!("c{c} open g{generation} s{sid:x}"));
        self.publish(c);
    }

    pub(super) fn server_expire_check(&mut self, sid: i64) {
        let Some(session) = self.sessions.get(&sid) else {
            return;
        };
        if session.state != Life::Alive || session.attached {
            return;
        }
        let due = session.last_contact + session.timeout.as_nanos() as u64;
        if self.now_nanos() >= due {
            self.end_session(sid, Life::Expired);
        } else {
            self.schedule_at(due, Action::ServerExpire(sid));
        }
    }

    /// The servers end session `sid` (expired or closed): one transaction deletes its ephemeral
    /// nodes; its watches end. A client still attached to it learns it at once.
    pub fn end_session(&mut self, sid: i64, how: Life) {
        let Some(session) = self.sessions.get_mut(&sid) else {
            return;
        };
        if session.state != Life::Alive {
            return;
        }
        session.state = how;
        let (attached, c) = (session.attached, session.client);
        let owned = self.tree.owned_by(sid);
        let mut changes = Vec::new();
        if !owned.is_empty() {
            let zxid = self.tree.zxid + 1;
            for path in &owned {
                let _ = self.tree.delete(zxid, path, None, &mut changes);
            }
            self.tree.zxid = zxid;
            self.committed();
        }
        self.log(format!(
            "s{sid:x} {how:?} by the servers; ephemerals {owned:?}"
        ));
        self.watches.changed(&changes);
        self.watches.session_ended(sid);
        if attached && self.clients.get(&c).is_some_and(|cl| cl.session == sid) {
            self.give_up(c, "the servers expired the session");
        }
    }
}

impl State {
    /// Process client `c` stops (paused, or crashed for good): it learns nothing, neither its
    /// session's status nor its watches' notifications, until it resumes.
    pub fn freeze(&mut self, c: usize, crashed: bool) {
        let Some(client) = self.clients.get_mut(&c) else {
            return;
        };
        client.frozen = true;
        client.crashed |= crashed;
        let sessions: Vec<i64> = client.generations.values().copied().collect();
        self.watches.freeze(sessions);
    }

    /// A paused process resumes: its client reattaches (or, if its generation was given up
    /// meanwhile, opens the next one).
    pub fn thaw(&mut self, c: usize) {
        let Some(client) = self.clients.get_mut(&c) else {
            return;
        };
        if !client.frozen || client.crashed {
            return;
        }
        client.frozen = false;
        let (lost, connected, conn) = (client.lost, client.connected, client.conn);
        self.log(format!("c{c} resumed"));
        // What happened while it was stopped, at once.
        let sessions: Vec<i64> = self
            .clients
            .get(&c)
            .map(|cl| cl.generations.values().copied().collect())
            .unwrap_or_default();
        self.publish(c);
        self.watches.thaw(&sessions);
        if lost {
            self.schedule(Duration::from_millis(1), Action::OpenNext { client: c });
        } else if !connected {
            self.schedule(
                Duration::from_millis(1),
                Action::Reconnect { client: c, conn },
            );
        }
    }
}
