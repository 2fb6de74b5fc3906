//! Requests through the simulated network: sent when called, each one's fate drawn from the
//! seeded RNG (delayed, lost before or after it applied, held and applied late, answered after
//! the client stopped waiting, read from a follower behind the leader), applied and answered in
//! order per connection, as ZooKeeper answers a session's requests.

use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use zooid::zk::{Acl, Create, Event, EventKind, Failure, Op, OpResult, Stat, Verdict};

use super::faults::{between, chance};
use super::sessions::Life;
use super::watches::{Kind, Watches};
use super::{Action, Pending, State};

/// A request, as sent.
#[derive(Clone, Debug)]
pub enum Req {
    Get(String, bool),
    Exists(String, bool),
    Children(String, bool),
    GetAcl(String),
    WatchTree(String),
    Sync(String),
    Create(String, Vec<u8>, Create),
    CreateAll(String, Option<Vec<Acl>>),
    Set(String, Vec<u8>, Option<i32>),
    Delete(String, Option<i32>),
    Multi(Vec<Op>),
}

impl Req {
    fn is_write(&self) -> bool {
        matches!(
            self,
            Req::Create(..) | Req::CreateAll(..) | Req::Set(..) | Req::Delete(..) | Req::Multi(_)
        )
    }

    /// A short description for the trace (no data: tokens in it are the library's own).
    fn describe(&self) -> String {
        match self {
            Req::Get(p, w) => format!("get{} {p}", if *w { "w" } else { "" }),
            Req::Exists(p, w) => format!("exists{} {p}", if *w { "w" } else { "" }),
            Req::Children(p, w) => format!("children{} {p}", if *w { "w" } else { "" }),
            Req::GetAcl(p) => format!("getacl {p}"),
            Req::WatchTree(p) => format!("watchtree {p}"),
            Req::Sync(p) => format!("sync {p}"),
            Req::Create(p, d, c) => format!("create {p} {:?} {}B", c.mode, d.len()),
            Req::CreateAll(p, _) => format!("create_all {p}"),
            Req::Set(p, d, v) => format!("set {p} v{v:?} {}B", d.len()),
            Req::Delete(p, v) => format!("delete {p} v{v:?}"),
            Req::Multi(ops) => {
                let ops: Vec<String> = ops
                    .iter()
                    .map(|op| match op {
                        Op::Check { path, version } => format!("check {path} v{version}"),
                        Op::Create { path, create, .. } => {
                            format!("create {path} {:?}", create.mode)
                        }
                        Op::Set { path, expected, .. } => format!("set {path} v{expected:?}"),
                        Op::Delete { path, expected } => format!("delete {path} v{expected:?}"),
                    })
                    .collect();
                format!("multi [{}]", ops.join("; "))
            }
        }
    }
}

/// A reply.
pub enum Resp {
    Data(Vec<u8>, Stat, Option<oneshot::Receiver<Event>>),
    Exists(Option<Stat>, Option<oneshot::Receiver<Event>>),
    Children(Vec<String>, Stat, Option<oneshot::Receiver<Event>>),
    Acl(Vec<Acl>),
    Tree(mpsc::UnboundedReceiver<Event>),
    Unit,
    Created(String, Option<Stat>),
    Stat(Stat),
    Multi(Vec<OpResult>),
}

/// A failure: of the request as a whole, or of op `index` of a multi.
#[derive(Clone, Debug)]
pub struct Fail {
    pub index: Option<usize>,
    pub failure: Failure,
}

impl Fail {
    pub fn whole(verdict: Verdict, message: &str) -> Self {
        Self {
            index: None,
            failure: Failure::new(verdict, message),
        }
    }
}

impl State {
    /// Sends `req` on client `c`'s current connection; the receiver gets its reply. The
    /// caller has checked the generation.
    pub fn submit(&mut self, c: usize, req: Req) -> oneshot::Receiver<Result<Resp, Fail>> {
        let (tx, rx) = oneshot::channel();
        let id = self.new_request_id();
        let client = self.clients.get(&c).expect("client exists");
        let (sid, conn, generation, connected) = (
            client.session,
            client.conn,
            client.generation,
            client.connected,
        );
        let what = req.describe();
        if !connected {
            // A client without a connection fails the request without sending it.
            self.log(format!(
                "c{c} g{generation} r{id} {what} -> not sent (disconnected)"
            ));
            self.pending.insert(
                id,
                Pending {
                    client: c,
                    session: sid,
                    conn,
                    req,
                    reply: Some(tx),
                    outcome: Some(Err(Fail::whole(Verdict::Unknown, "connection loss"))),
                    drop_after: false,
                    cancelled: true,
                },
            );
            let after = between(
                &mut self.rng,
                Duration::from_millis(1),
                Duration::from_millis(20),
            );
            self.schedule(after, Action::Deliver(id));
            return rx;
        }
        let f = self.faults.clone();
        let write = req.is_write();
        let roll: f64 = rand::Rng::random(&mut self.rng);
        let mut fate = "";
        let delay = between(
            &mut self.rng,
            Duration::from_millis(0),
            Duration::from_millis(4),
        );
        let mut apply_at = self.now_nanos() + delay.as_nanos() as u64;
        let mut drop_now = false;
        let mut drop_after = false;
        let mut cancelled = false;
        let mut thresholds = [f.lost_before, f.lost_after, f.held].into_iter();
        let mut bound = 0.0;
        let mut next = |p: f64| {
            bound += p;
            roll < bound
        };
        if next(thresholds.next().unwrap_or(0.0)) {
            fate = " [lost before applying]";
            cancelled = true;
            drop_now = true;
        } else if next(thresholds.next().unwrap_or(0.0)) {
            fate = " [reply will be lost]";
            drop_after = true;
        } else if write && next(thresholds.next().unwrap_or(0.0)) {
            fate = " [held in the network]";
            let late = between(
                &mut self.rng,
                Duration::from_millis(50),
                f.session_timeout * 2,
            );
            apply_at += late.as_nanos() as u64;
            drop_now = true;
        }
        let clock = self.conn_clock.entry((sid, conn)).or_insert((0, 0));
        if !drop_now {
            apply_at = apply_at.max(clock.0);
            clock.0 = apply_at;
        }
        self.log(format!("c{c} g{generation} s{sid:x} r{id} {what}{fate}"));
        self.pending.insert(
            id,
            Pending {
                client: c,
                session: sid,
                conn,
                req,
                reply: Some(tx),
                outcome: None,
                drop_after,
                cancelled,
            },
        );
        if !cancelled {
            self.schedule_at(apply_at, Action::Apply(id));
        }
        if drop_now {
            let down = between(
                &mut self.rng,
                Duration::from_millis(10),
                f.session_timeout / 3,
            );
            self.drop_connection(c, Some(down), "network");
        }
        rx
    }

    pub(super) fn apply(&mut self, id: u64) {
        let Some(pending) = self.pending.get(&id) else {
            return;
        };
        if pending.cancelled {
            self.pending.remove(&id);
            return;
        }
        // Wipe hook (world/wipe.rs): held in the network until the servers open again.
        if self.gated(pending.client) {
            self.retry_gated(Action::Apply(id));
            return;
        }
        let (c, sid, conn, drop_after) = (
            pending.client,
            pending.session,
            pending.conn,
            pending.drop_after,
        );
        let req = pending.req.clone();
        let alive = self
            .sessions
            .get(&sid)
            .is_some_and(|s| s.state == Life::Alive);
        let moved = self
            .sessions
            .get(&sid)
            .is_some_and(|s| s.attached_conn > conn);
        let outcome = if moved {
            Err(Fail::whole(
                Verdict::Unknown,
                "arrived on a connection the session has since left: refused",
            ))
        } else if alive {
            let now = self.now_nanos();
            if let Some(session) = self.sessions.get_mut(&sid) {
                session.last_contact = now;
            }
            self.execute(c, sid, &req)
        } else {
            Err(Fail::whole(Verdict::Expired, "session expired"))
        };
        let said = match &outcome {
            Ok(_) => "ok".to_string(),
            Err(fail) => format!("{:?} at {:?}", fail.failure.verdict, fail.index),
        };
        self.log(format!("  r{id} applied: {said}"));
        if self.trace.echo && outcome.is_ok() {
            // Verbose runs show what a write left (not traced: the data holds the library's
            // random tokens).
            if let Req::Set(path, data, _) = &req {
                println!("           {path} = {:?}", String::from_utf8_lossy(data));
            }
        }
        let pending = self.pending.get_mut(&id).expect("seen");
        pending.outcome = Some(outcome);
        if pending.reply.is_none() {
            // Nobody waits any more (the connection dropped, the client gave up).
            self.pending.remove(&id);
        } else if drop_after {
            let down = between(
                &mut self.rng,
                Duration::from_millis(10),
                self.faults.session_timeout / 3,
            );
            self.drop_connection(c, Some(down), "reply lost");
        } else {
            let slow = chance(&mut self.rng, self.faults.slow_reply);
            let mut after = between(
                &mut self.rng,
                Duration::from_millis(0),
                Duration::from_millis(4),
            );
            if slow {
                after += self.faults.session_timeout * 2;
                self.log(format!("  r{id} reply delayed past the request limit"));
            }
            let mut at = self.now_nanos() + after.as_nanos() as u64;
            let clock = self.conn_clock.entry((sid, conn)).or_insert((0, 0));
            at = at.max(clock.1);
            clock.1 = at;
            self.schedule_at(at, Action::Deliver(id));
        }
    }

    pub(super) fn deliver(&mut self, id: u64) {
        let Some(mut pending) = self.pending.remove(&id) else {
            return;
        };
        let (Some(reply), Some(outcome)) = (pending.reply.take(), pending.outcome.take()) else {
            return;
        };
        if let Err(fail) = &outcome {
            if matches!(fail.failure.verdict, Verdict::Expired) {
                let c = pending.client;
                if self
                    .clients
                    .get(&c)
                    .is_some_and(|cl| cl.session == pending.session)
                {
                    self.give_up(c, "a request found the session expired");
                }
            }
        }
        let _ = reply.send(outcome);
    }

    /// Reads served by this client's server: the leader's tree, or a follower's older one.
    fn served_tree(&mut self, c: usize) -> std::sync::Arc<super::tree::Tree> {
        let seen = self.clients.get(&c).map_or(0, |cl| cl.seen);
        if chance(&mut self.rng, self.faults.lag) {
            let candidates: Vec<_> = self
                .history
                .iter()
                .filter(|t| t.zxid >= seen)
                .cloned()
                .collect();
            if !candidates.is_empty() {
                let pick = rand::Rng::random_range(&mut self.rng, 0..candidates.len());
                return candidates[pick].clone();
            }
        }
        std::sync::Arc::new(self.tree.clone())
    }

    /// The event a `kind` watch set on a server that answered `read` (the node's stat there,
    /// `None`: no node) would fire first as that server catches up with the leader; `None` when
    /// the leader's node is the one read.
    fn next_change(&self, path: &str, read: Option<Stat>, kind: Kind) -> Option<EventKind> {
        let now = self.tree.get(path).map(|n| n.stat);
        match (read, now) {
            (None, None) => None,
            (None, Some(_)) => Some(EventKind::Created),
            (Some(_), None) => Some(EventKind::Deleted),
            (Some(r), Some(n)) if r.czxid != n.czxid => Some(EventKind::Deleted),
            (Some(r), Some(n)) => match kind {
                Kind::Child if r.cversion != n.cversion => Some(EventKind::ChildrenChanged),
                Kind::Data | Kind::Exist if r.mzxid != n.mzxid => Some(EventKind::DataChanged),
                _ => None,
            },
        }
    }

    fn saw(&mut self, c: usize, zxid: i64) {
        if let Some(client) = self.clients.get_mut(&c) {
            client.seen = client.seen.max(zxid);
        }
    }

    fn execute(&mut self, c: usize, sid: i64, req: &Req) -> Result<Resp, Fail> {
        let refused = |(verdict, message): (Verdict, &'static str)| Fail::whole(verdict, message);
        let default_acl = vec![Acl::world(zooid::zk::Perms::ALL)];
        match req {
            Req::Get(path, false)
            | Req::Exists(path, false)
            | Req::Children(path, false)
            | Req::GetAcl(path) => {
                let tree = self.served_tree(c);
                let lagging = tree.zxid < self.tree.zxid;
                if lagging {
                    self.log(format!(
                        "  read from a follower at zxid {} (leader {})",
                        tree.zxid, self.tree.zxid
                    ));
                }
                self.saw(c, tree.zxid);
                let node = tree.get(path);
                match (req, node) {
                    (Req::Exists(..), node) => Ok(Resp::Exists(node.map(|n| n.stat), None)),
                    (_, None) => Err(Fail::whole(Verdict::NoNode, "no node")),
                    (Req::Get(..), Some(n)) => Ok(Resp::Data(n.data.clone(), n.stat, None)),
                    (Req::Children(..), Some(n)) => Ok(Resp::Children(
                        n.children.iter().cloned().collect(),
                        n.stat,
                        None,
                    )),
                    (_, Some(n)) => Ok(Resp::Acl(n.acl.clone())),
                }
            }
            // Watched reads lag as the others do; a watch set on a lagging server fires when it
            // applies the next change of its node, here at once when the leader's node differs.
            Req::Get(path, true) => {
                let tree = self.served_tree(c);
                self.saw(c, tree.zxid);
                let node = tree.get(path).map(|n| (n.data.clone(), n.stat));
                let (data, stat) = node.ok_or_else(|| Fail::whole(Verdict::NoNode, "no node"))?;
                let watch = match self.next_change(path, Some(stat), Kind::Data) {
                    Some(event) => Watches::fired(path, event),
                    None => self.watches.add(sid, path, Kind::Data),
                };
                Ok(Resp::Data(data, stat, Some(watch)))
            }
            Req::Exists(path, true) => {
                let tree = self.served_tree(c);
                self.saw(c, tree.zxid);
                let stat = tree.get(path).map(|n| n.stat);
                let kind = if stat.is_some() {
                    Kind::Data
                } else {
                    Kind::Exist
                };
                let watch = match self.next_change(path, stat, kind) {
                    Some(event) => Watches::fired(path, event),
                    None => self.watches.add(sid, path, kind),
                };
                Ok(Resp::Exists(stat, Some(watch)))
            }
            Req::Children(path, true) => {
                let tree = self.served_tree(c);
                self.saw(c, tree.zxid);
                let node = tree
                    .get(path)
                    .map(|n| (n.children.iter().cloned().collect(), n.stat));
                let (names, stat) = node.ok_or_else(|| Fail::whole(Verdict::NoNode, "no node"))?;
                let watch = match self.next_change(path, Some(stat), Kind::Child) {
                    Some(event) => Watches::fired(path, event),
                    None => self.watches.add(sid, path, Kind::Child),
                };
                Ok(Resp::Children(names, stat, Some(watch)))
            }
            Req::WatchTree(path) => Ok(Resp::Tree(self.watches.add_tree(sid, path))),
            Req::Sync(_) => {
                let zxid = self.tree.zxid;
                self.saw(c, zxid);
                Ok(Resp::Unit)
            }
            Req::Create(path, data, create) => {
                let acl = create.acl.clone().unwrap_or(default_acl);
                let op = Op::Create {
                    path: path.clone(),
                    data: data.clone(),
                    create: Create {
                        mode: create.mode,
                        acl: Some(acl),
                    },
                };
                self.transact(c, sid, &[op], &[])
                    .map_err(|(_, r)| refused(r))
                    .map(|mut results| match results.pop() {
                        Some(OpResult::Create { path, stat }) => Resp::Created(path, stat),
                        _ => Resp::Unit,
                    })
            }
            Req::CreateAll(path, acl) => {
                let acl = acl.clone().unwrap_or(default_acl);
                let mut at = String::new();
                for part in path.split('/').filter(|p| !p.is_empty()) {
                    at = format!("{at}/{part}");
                    if self.tree.get(&at).is_some() {
                        continue;
                    }
                    let op = Op::Create {
                        path: at.clone(),
                        data: Vec::new(),
                        create: Create::persistent().with_acl(acl.clone()),
                    };
                    match self.transact(c, sid, &[op], &[]) {
                        Ok(_) | Err((_, (Verdict::NodeExists, _))) => {}
                        Err((_, r)) => return Err(refused(r)),
                    }
                }
                Ok(Resp::Unit)
            }
            Req::Set(path, data, expected) => {
                let op = Op::Set {
                    path: path.clone(),
                    data: data.clone(),
                    expected: *expected,
                };
                self.transact(c, sid, &[op], &[])
                    .map_err(|(_, r)| refused(r))
                    .map(|results| match results.first() {
                        Some(OpResult::Set { stat }) => Resp::Stat(*stat),
                        _ => Resp::Unit,
                    })
            }
            Req::Delete(path, expected) => {
                let op = Op::Delete {
                    path: path.clone(),
                    expected: *expected,
                };
                self.transact(c, sid, &[op], &[])
                    .map_err(|(_, r)| refused(r))
                    .map(|_| Resp::Unit)
            }
            Req::Multi(ops) => self
                .transact(c, sid, ops, &default_acl)
                .map(Resp::Multi)
                .map_err(|(index, (verdict, message))| Fail {
                    index: Some(index),
                    failure: Failure::new(verdict, message),
                }),
        }
    }

    /// One transaction on the leader's tree: a new zxid if it applies, its watches fired.
    fn transact(
        &mut self,
        c: usize,
        sid: i64,
        ops: &[Op],
        default_acl: &[Acl],
    ) -> Result<Vec<OpResult>, (usize, (Verdict, &'static str))> {
        let zxid = self.tree.zxid + 1;
        let now = self.now_ms();
        let mut changes = Vec::new();
        let results = self
            .tree
            .multi(zxid, now, sid, ops, default_acl, &mut changes)?;
        self.saw(c, zxid);
        self.committed();
        let fired = self.watches.changed(&changes);
        if fired > 0 {
            self.log(format!("  zxid {zxid}: {fired} watch events"));
        }
        Ok(results)
    }
}
