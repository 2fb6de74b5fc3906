//! The model: its configuration, its state, its actions, and the processes' side of the
//! protocol (take and push in both layouts, lost replies, late requests, session expiry,
//! generation moves). The keeper, wipe and restore are in `keeper`; the properties in `checks`.

use stateright::{Model, Property};

use crate::blocks::{self, Claim, Claimed, HoleTake, Push, Taken};
use crate::ids::{self, Ids};
use crate::keeper::{Keeper, Phase, Record};
use crate::pool::{Cas, Token, Zk};

/// A known defect the model can re-introduce, to show that the checker finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bug {
    /// The protocol as fixed.
    None,
    /// Issue 19, finding 1: a repair restarts fresh blocks at `R + 1`, ignoring the frontier
    /// the generation has already claimed.
    RepairIgnoresFrontier,
    /// Issue 19, finding 2: the first durable ceiling of a pool in block allocation is the high
    /// water read plus the reserve, and the fenced write at the version read still applies after
    /// claims made since (they do not change the pool's version).
    FirstCeilingLags,
    /// A repair that bases the new generation on `max(base, R + 1, F)` with the frontier `F`
    /// read *before* its pool write, without sealing the generation first: claims planned on the
    /// version it read still land in between.
    RepairUnsealedFrontier,
    /// Finding 2 "fixed" by re-reading the frontier after the durable write (and writing the
    /// record again while it moved past it) before the fenced write at the version read: the
    /// pool still has no ceiling, so claims go on handing out IDs above the record meanwhile.
    FirstCeilingRereads,
    /// The first ceiling of a pool in block allocation written without sealing its generation
    /// first: claims and takes of holes do not check the pool node, so those planned before it
    /// still hand out IDs above it.
    FirstCeilingUnsealed,
    /// A push in doubt whose holes are not all there once its fate is decided, taken as not
    /// applied and sent again: the rule of a push that wrote a receipt, wrong without one (a
    /// take may have taken the holes it created).
    PushGoneResent,
}

/// The sizes and faults of one check.
#[derive(Clone, Debug)]
pub struct Config {
    pub name: &'static str,
    /// Block allocation (format 4, hole nodes) or a single-node pool.
    pub blocks: bool,
    /// IDs `1..=last`.
    pub last: u8,
    /// The ceiling the category is created with; the durable record starts equal (`None`: no
    /// ceiling, no record).
    pub ceiling: Option<u8>,
    pub procs: u8,
    /// Takes and pushes per process.
    pub ops: u8,
    /// `#op` lines kept.
    pub log_len: u8,
    /// A claim of block number `rotate_at - 1` or above moves the generation on.
    pub rotate_at: u8,
    /// The keeper's reserve (IDs).
    pub reserve: u8,
    /// Lost replies and late requests, in all.
    pub faults: u8,
    pub wipes: u8,
    pub keeper_crashes: u8,
    /// Keeper evaluations that write something.
    pub evals: u8,
    pub bug: Bug,
}

/// The model checked: one category, its processes, its keeper.
pub struct ZooidModel {
    pub cfg: Config,
}

/// The whole system.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// ZooKeeper's data for the category (`None` after a wipe, until a restore).
    pub zk: Option<Zk>,
    /// Creations of the pool node so far (the next restore's incarnation follows).
    pub created: u8,
    /// The durable record (survives a wipe).
    pub record: Option<Record>,
    pub procs: Vec<Proc>,
    pub keeper: Keeper,
    /// Faults and keeper steps still allowed.
    pub left: Budget,
    /// What the invariants need to know beyond the system's state.
    pub ghost: Ghost,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Budget {
    pub faults: u8,
    pub wipes: u8,
    pub crashes: u8,
    pub evals: u8,
}

/// History the system itself does not keep.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ghost {
    /// IDs reported leaked (`OutcomeUnknown`, a repair's removed IDs, a restore's gap).
    pub leaked: Ids,
    /// IDs a take handed out while some process held them.
    pub duplicate: Ids,
    pub restored: bool,
    pub taken_after_restore: bool,
    pub repaired: bool,
    pub moved: bool,
    /// A lost reply was resolved as applied.
    pub resolved: bool,
    /// A request applied after its author gave up on it.
    pub late: bool,
}

/// One client process (one service, one session), doing one operation at a time.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Proc {
    /// Operations it may still start.
    pub ops: u8,
    /// IDs handed out to it (its caller uses them).
    pub held: Ids,
    /// IDs its current operation's writes moved (a take's, before it returns; a push's).
    pub busy: Ids,
    pub op: Op,
    /// Its request still on the way to the servers (may land late); `abandoned`: its
    /// operation already gave up on it.
    pub net: Option<(Request, bool)>,
    /// Its session expired since the operation started (ephemeral markers gone).
    pub expired: bool,
}

/// What a process is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Idle,
    /// A take of one ID, to be planned (again).
    Take,
    /// A push of these IDs, to be written (again).
    Push(Ids),
    /// Returning the IDs of a claimed block above the ceiling.
    GiveBack(Ids),
    /// Seal the generation (a claim reached the limit), then move it on.
    Seal {
        generation: u8,
        retake: bool,
    },
    /// Move the pool to the next generation (it is sealed); `retake`: then take again.
    Move {
        generation: u8,
        retake: bool,
    },
    /// The reply to this request was lost: resolve its outcome.
    Lost(Request),
}

/// A write sent to ZooKeeper.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Request {
    Cas(Cas),
    Claim(Claim),
    Push(Push),
    HoleTake(HoleTake),
}

/// How a request fares on the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Net {
    /// Applied (or refused) and answered.
    Reply,
    /// Applied (or refused), the reply lost.
    ReplyLost,
    /// Not yet delivered when the connection broke: it may land later, or die with the
    /// session.
    Delayed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Process `p` starts a take, or plans its take again.
    Take(u8, Net),
    /// Process `p` starts a push of its lowest held ID, or writes its push (or give-back)
    /// again.
    Push(u8, Net),
    /// Process `p` resolves its lost reply (its request has landed or died).
    Resolve(u8),
    /// Process `p`'s deadline passes while its request may still land: `OutcomeUnknown`.
    GiveUp(u8),
    /// Process `p`'s delayed request reaches the servers.
    Land(u8),
    /// Process `p`'s session expires: its request in flight dies, its marker goes.
    Expire(u8),
    Seal(u8),
    Move(u8),
    KeeperEval,
    KeeperSeal,
    KeeperDurable,
    KeeperReread,
    KeeperPool,
    KeeperCrash,
    Wipe,
    Restore,
}

/// How a request came out, as its author learns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// Applied; for a claim, the block it got.
    Applied(Option<(u8, bool)>),
    /// Not applied: plan again.
    Again,
    /// The claim's generation is sealed.
    Sealed,
    /// The node is gone.
    Gone,
    /// Cannot be told: its IDs are reported leaked.
    Unknown,
}

/// What a process's next take would send.
enum Planned {
    Send(Request),
    Move(u8),
    Fail,
}

impl ZooidModel {
    fn token(&self, p: usize, ops: u8) -> Token {
        1 + p as u8 * 8 + ops
    }

    /// The request a take of process `p` would send now; `None`: it waits (nothing at or
    /// below the ceiling).
    fn plan_take(&self, st: &State, p: usize, token: Token) -> Option<Planned> {
        let last = self.cfg.last;
        let Some(zk) = st.zk.as_ref() else {
            return Some(Planned::Fail);
        };
        let cas = |id: u8| {
            Planned::Send(Request::Cas(Cas {
                incarnation: zk.incarnation,
                version: zk.version,
                token,
                push: false,
                ids: ids::one(id),
            }))
        };
        let Some(b) = zk.blocks.as_ref() else {
            return ids::lowest(zk.free & ids::span(1, zk.top(last))).map(cas);
        };
        if b.current().sealed {
            return Some(Planned::Move(b.generation));
        }
        if let Some(id) = ids::lowest(blocks::holes(zk, last)) {
            return Some(Planned::Send(Request::HoleTake(HoleTake {
                incarnation: zk.incarnation,
                version: zk.version,
                generation: b.generation,
                token,
                process: p as u8,
                ids: ids::one(id),
            })));
        }
        if b.frontier() > last {
            return Some(Planned::Fail);
        }
        // Claimed even when the next block lies above the ceiling: a process that has not seen
        // the frontier (every new one starts at block 0) does; the block then goes back.
        Some(Planned::Send(Request::Claim(Claim {
            incarnation: zk.incarnation,
            version: zk.version,
            generation: b.generation,
            token,
            top: zk.top(last),
        })))
    }

    fn plan_push(
        &self,
        st: &State,
        p: usize,
        token: Token,
        ids: Ids,
        give_back: bool,
    ) -> Option<Request> {
        let zk = st.zk.as_ref()?;
        Some(match zk.blocks {
            // A give-back goes where the pool node says (`give_back`): never into a pool
            // restored as a single node; its IDs are reported leaked.
            None if give_back => return None,
            None => Request::Cas(Cas {
                incarnation: zk.incarnation,
                version: zk.version,
                token,
                push: true,
                ids,
            }),
            Some(_) => Request::Push(Push {
                incarnation: zk.incarnation,
                token,
                process: p as u8,
                ids,
                give_back,
            }),
        })
    }

    fn take(&self, st: &mut State, p: usize, net: Net) -> bool {
        let proc = &st.procs[p];
        let starting = proc.op == Op::Idle;
        let ops = proc.ops - u8::from(starting);
        let token = self.token(p, ops);
        let Some(planned) = self.plan_take(st, p, token) else {
            return false;
        };
        let proc = &mut st.procs[p];
        if starting {
            proc.ops = ops;
            proc.expired = false;
        }
        match planned {
            Planned::Fail => proc.op = Op::Idle,
            Planned::Move(generation) => {
                proc.op = Op::Move {
                    generation,
                    retake: true,
                }
            }
            Planned::Send(request) => self.send(st, p, request, net),
        }
        true
    }

    fn push(&self, st: &mut State, p: usize, net: Net) {
        let proc = &mut st.procs[p];
        let (ids, give_back) = match proc.op {
            Op::Idle => {
                let id = ids::lowest(proc.held).expect("push enabled only when holding");
                proc.ops -= 1;
                proc.expired = false;
                proc.held &= !ids::one(id);
                proc.busy |= ids::one(id);
                (ids::one(id), false)
            }
            Op::Push(ids) => (ids, false),
            Op::GiveBack(ids) => (ids, true),
            _ => unreachable!("push enabled only when idle or pushing"),
        };
        let token = self.token(p, st.procs[p].ops);
        match self.plan_push(st, p, token, ids, give_back) {
            Some(request) => self.send(st, p, request, net),
            None => self.conclude_push(st, p, ids, give_back, Outcome::Gone),
        }
    }

    fn send(&self, st: &mut State, p: usize, request: Request, net: Net) {
        match net {
            Net::Reply => {
                let outcome = self.land(st, p, request, false);
                self.conclude(st, p, request, outcome);
            }
            Net::ReplyLost => {
                self.land(st, p, request, false);
                st.procs[p].op = Op::Lost(request);
                st.left.faults -= 1;
            }
            Net::Delayed => {
                st.procs[p].net = Some((request, false));
                st.procs[p].op = Op::Lost(request);
                st.left.faults -= 1;
            }
        }
    }

    /// The servers apply (or refuse) `request` of process `p`. What a write moves is, from that
    /// instant, the operation's (or, if it gave up already, reported leaked).
    fn land(&self, st: &mut State, p: usize, request: Request, abandoned: bool) -> Outcome {
        let cfg = &self.cfg;
        let mut moved = 0;
        let outcome = match request {
            Request::Cas(cas) => match st.zk.as_mut().map(|zk| cas.apply(zk, cfg.log_len)) {
                None => Outcome::Gone,
                Some(true) => {
                    if !cas.push {
                        moved = cas.ids;
                    }
                    Outcome::Applied(None)
                }
                Some(false) => Outcome::Again,
            },
            Request::Claim(claim) => {
                match st.zk.as_mut().map(|zk| claim.apply(zk, cfg.rotate_at)) {
                    None | Some(Claimed::Missing) => Outcome::Gone,
                    Some(Claimed::Changed) => Outcome::Again,
                    Some(Claimed::Sealed) => Outcome::Sealed,
                    Some(Claimed::Granted { id, rotate }) => {
                        moved = ids::one(id);
                        Outcome::Applied(Some((id, rotate)))
                    }
                }
            }
            Request::Push(push) => match push.apply(st.zk.as_mut()) {
                true => Outcome::Applied(None),
                false => Outcome::Gone,
            },
            Request::HoleTake(take) => match st.zk.as_mut().map(|zk| take.apply(zk)) {
                None | Some(Taken::Missing) => Outcome::Gone,
                Some(Taken::Changed) => Outcome::Again,
                Some(Taken::Sealed) => Outcome::Sealed,
                Some(Taken::Applied) => {
                    moved = take.ids;
                    Outcome::Applied(None)
                }
            },
        };
        if abandoned {
            st.ghost.leaked |= moved;
            st.ghost.late |= matches!(outcome, Outcome::Applied(_));
        } else {
            st.procs[p].busy |= moved;
        }
        outcome
    }

    /// Process `p` learns how `request` came out and goes on.
    fn conclude(&self, st: &mut State, p: usize, request: Request, outcome: Outcome) {
        if outcome == Outcome::Unknown {
            let proc = &mut st.procs[p];
            let named = match request {
                Request::Cas(c) => c.ids,
                Request::Push(push) => push.ids,
                Request::HoleTake(take) => take.ids,
                Request::Claim(_) => 0,
            };
            st.ghost.leaked |= proc.busy | named;
            proc.busy = 0;
            proc.op = Op::Idle;
            return;
        }
        match request {
            Request::Cas(cas) if cas.push => self.conclude_push(st, p, cas.ids, false, outcome),
            Request::Push(push) => self.conclude_push(st, p, push.ids, push.give_back, outcome),
            Request::Cas(cas) => {
                let next = match outcome {
                    Outcome::Applied(_) => {
                        st.procs[p].busy &= !cas.ids;
                        self.hand_out(st, p, cas.ids);
                        Op::Idle
                    }
                    Outcome::Again => Op::Take,
                    _ => Op::Idle,
                };
                st.procs[p].op = next;
            }
            Request::HoleTake(take) => {
                let next = match outcome {
                    Outcome::Applied(_) => {
                        st.procs[p].busy &= !take.ids;
                        self.hand_out(st, p, take.ids);
                        Op::Idle
                    }
                    Outcome::Again => Op::Take,
                    Outcome::Sealed => Op::Move {
                        generation: take.generation,
                        retake: true,
                    },
                    _ => Op::Idle,
                };
                st.procs[p].op = next;
            }
            Request::Claim(claim) => {
                let next = match outcome {
                    Outcome::Applied(Some((id, rotate))) => {
                        if id <= claim.top {
                            st.procs[p].busy &= !ids::one(id);
                            self.hand_out(st, p, ids::one(id));
                            if rotate {
                                Op::Seal {
                                    generation: claim.generation,
                                    retake: false,
                                }
                            } else {
                                Op::Idle
                            }
                        } else {
                            Op::GiveBack(ids::one(id))
                        }
                    }
                    Outcome::Again => Op::Take,
                    Outcome::Sealed => Op::Move {
                        generation: claim.generation,
                        retake: true,
                    },
                    _ => Op::Idle,
                };
                st.procs[p].op = next;
            }
        }
    }

    fn conclude_push(&self, st: &mut State, p: usize, ids: Ids, give_back: bool, outcome: Outcome) {
        let proc = &mut st.procs[p];
        proc.op = Op::Idle;
        match outcome {
            Outcome::Applied(_) => proc.busy &= !ids,
            Outcome::Again if give_back => proc.op = Op::GiveBack(ids),
            Outcome::Again => proc.op = Op::Push(ids),
            // Nothing changed: a push keeps its IDs with its caller; a give-back's stay unused
            // and are logged with their IDs.
            _ if give_back => {
                proc.busy &= !ids;
                st.ghost.leaked |= ids;
            }
            _ => {
                proc.busy &= !ids;
                proc.held |= ids;
            }
        }
    }

    /// Hands `ids` to process `p`'s caller.
    fn hand_out(&self, st: &mut State, p: usize, ids: Ids) {
        let held = st.procs.iter().fold(0, |s, q| s | q.held);
        st.ghost.duplicate |= held & ids;
        st.procs[p].held |= ids;
        if st.ghost.restored {
            st.ghost.taken_after_restore = true;
        }
    }

    fn resolve(&self, st: &mut State, p: usize) {
        let Op::Lost(request) = st.procs[p].op else {
            return;
        };
        let cfg = &self.cfg;
        let zk = st.zk.as_ref();
        let outcome = match request {
            Request::Cas(cas) => match cas.resolve(zk) {
                Some(true) => Outcome::Applied(None),
                Some(false) => Outcome::Again,
                None => Outcome::Unknown,
            },
            Request::Claim(claim) => match claim.resolve(zk, cfg.rotate_at) {
                Some(Claimed::Granted { id, rotate }) => Outcome::Applied(Some((id, rotate))),
                Some(_) => Outcome::Again,
                None => Outcome::Unknown,
            },
            Request::Push(push) => match push.resolve(zk) {
                Some(true) => Outcome::Applied(None),
                Some(false) => Outcome::Again,
                None if cfg.bug == Bug::PushGoneResent => Outcome::Again,
                None => Outcome::Unknown,
            },
            Request::HoleTake(take) => match take.resolve(zk, st.procs[p].expired) {
                Some(true) => Outcome::Applied(None),
                Some(false) => Outcome::Again,
                None => Outcome::Unknown,
            },
        };
        if let Outcome::Applied(_) = outcome {
            st.ghost.resolved = true;
        }
        self.conclude(st, p, request, outcome);
    }

    fn seal(&self, st: &mut State, p: usize) {
        let Op::Seal { generation, retake } = st.procs[p].op else {
            return;
        };
        st.procs[p].op = Op::Idle;
        if let Some(b) = st.zk.as_mut().and_then(|zk| zk.blocks.as_mut()) {
            if let Some(g) = b.generations.get_mut(usize::from(generation)) {
                g.sealed = true;
                st.procs[p].op = Op::Move { generation, retake };
            }
        }
    }

    /// Finishes a generation move (src/alloc/blocks/take.rs `rotate`): reads the sealed
    /// generation's final count and moves the pool past it with a compare-and-set (one atomic
    /// step here: the count cannot change once sealed, and a conflict re-plans the same move).
    fn move_on(&self, st: &mut State, p: usize) {
        let Op::Move { generation, retake } = st.procs[p].op else {
            return;
        };
        st.procs[p].op = if retake { Op::Take } else { Op::Idle };
        let token = self.token(p, st.procs[p].ops);
        let log_len = self.cfg.log_len;
        let Some(zk) = st.zk.as_mut() else {
            st.procs[p].op = Op::Idle;
            return;
        };
        let Some(b) = zk.blocks.as_mut().filter(|b| b.generation == generation) else {
            return;
        };
        let base = b.frontier();
        b.move_to(base);
        zk.write(token, log_len);
        st.ghost.moved = true;
    }

    fn expire(&self, st: &mut State, p: usize) {
        let proc = &mut st.procs[p];
        proc.net = None;
        proc.expired = true;
        if let Some(b) = st.zk.as_mut().and_then(|zk| zk.blocks.as_mut()) {
            b.markers[p] = 0;
        }
    }

    fn nets(&self, st: &State, p: usize) -> &'static [Net] {
        match (st.left.faults > 0, st.procs[p].net.is_none()) {
            (false, _) => &[Net::Reply],
            (true, true) => &[Net::Reply, Net::ReplyLost, Net::Delayed],
            (true, false) => &[Net::Reply, Net::ReplyLost],
        }
    }
}

impl Model for ZooidModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let cfg = &self.cfg;
        // Tokens (1 + process * 8 + operations left) stay below 32; IDs fit an `Ids`.
        assert!(cfg.procs <= 3 && cfg.ops <= 7 && cfg.last < ids::MAX_ID);
        let proc = Proc {
            ops: cfg.ops,
            held: 0,
            busy: 0,
            op: Op::Idle,
            net: None,
            expired: false,
        };
        vec![State {
            zk: Some(self.created()),
            created: 0,
            record: cfg.ceiling.map(|ceiling| Record {
                ceiling,
                generation: 0,
            }),
            procs: vec![proc; usize::from(cfg.procs)],
            keeper: Keeper::default(),
            left: Budget {
                faults: cfg.faults,
                wipes: cfg.wipes,
                crashes: cfg.keeper_crashes,
                evals: cfg.evals,
            },
            ghost: Ghost::default(),
        }]
    }

    fn actions(&self, st: &State, actions: &mut Vec<Action>) {
        for (p, proc) in st.procs.iter().enumerate() {
            let i = p as u8;
            match proc.op {
                Op::Idle if proc.ops > 0 => {
                    if self.plan_take(st, p, 0).is_some() {
                        actions.extend(self.nets(st, p).iter().map(|&n| Action::Take(i, n)));
                    }
                    if proc.held != 0 {
                        actions.extend(self.nets(st, p).iter().map(|&n| Action::Push(i, n)));
                    }
                }
                Op::Idle => {}
                Op::Take => {
                    if self.plan_take(st, p, 0).is_some() {
                        actions.extend(self.nets(st, p).iter().map(|&n| Action::Take(i, n)));
                    }
                }
                Op::Push(_) | Op::GiveBack(_) => {
                    actions.extend(self.nets(st, p).iter().map(|&n| Action::Push(i, n)))
                }
                Op::Seal { .. } => actions.push(Action::Seal(i)),
                Op::Move { .. } => actions.push(Action::Move(i)),
                Op::Lost(request) => match proc.net {
                    None => {
                        actions.push(Action::Resolve(i));
                        if let Request::Push(_) | Request::HoleTake(_) = request {
                            if !proc.expired {
                                actions.push(Action::Expire(i));
                            }
                        }
                    }
                    Some(_) => actions.push(Action::GiveUp(i)),
                },
            }
            if proc.net.is_some() {
                actions.push(Action::Land(i));
                actions.push(Action::Expire(i));
            }
        }
        match st.keeper.phase {
            Phase::Idle => {
                if st.left.evals > 0 && self.evaluation(st).is_some() {
                    actions.push(Action::KeeperEval);
                }
            }
            Phase::Seal(_) => actions.push(Action::KeeperSeal),
            Phase::Durable(_) => actions.push(Action::KeeperDurable),
            Phase::Reread(_) => actions.push(Action::KeeperReread),
            Phase::Pool(_) => actions.push(Action::KeeperPool),
        }
        if st.keeper.phase != Phase::Idle && st.left.crashes > 0 {
            actions.push(Action::KeeperCrash);
        }
        if st.zk.is_some() && st.left.wipes > 0 {
            actions.push(Action::Wipe);
        }
        if st.zk.is_none() && st.record.is_some() {
            actions.push(Action::Restore);
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut st = last.clone();
        match action {
            Action::Take(p, net) => {
                if !self.take(&mut st, usize::from(p), net) {
                    return None;
                }
            }
            Action::Push(p, net) => self.push(&mut st, usize::from(p), net),
            Action::Resolve(p) => self.resolve(&mut st, usize::from(p)),
            Action::GiveUp(p) => {
                let p = usize::from(p);
                let Op::Lost(request) = st.procs[p].op else {
                    return None;
                };
                if let Some((_, abandoned)) = st.procs[p].net.as_mut() {
                    *abandoned = true;
                }
                self.conclude(&mut st, p, request, Outcome::Unknown);
            }
            Action::Land(p) => {
                let p = usize::from(p);
                let (request, abandoned) = st.procs[p].net.take()?;
                self.land(&mut st, p, request, abandoned);
            }
            Action::Expire(p) => self.expire(&mut st, usize::from(p)),
            Action::Seal(p) => self.seal(&mut st, usize::from(p)),
            Action::Move(p) => self.move_on(&mut st, usize::from(p)),
            Action::KeeperEval => self.keeper_eval(&mut st),
            Action::KeeperSeal => self.keeper_seal(&mut st),
            Action::KeeperDurable => self.keeper_durable(&mut st),
            Action::KeeperReread => self.keeper_reread(&mut st),
            Action::KeeperPool => self.keeper_pool(&mut st),
            Action::KeeperCrash => self.keeper_crash(&mut st),
            Action::Wipe => self.wipe(&mut st),
            Action::Restore => self.restore(&mut st),
        }
        Some(st)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        crate::checks::properties()
    }
}
