//! The simulated world: one ZooKeeper ensemble (its data tree, sessions and watches), the network
//! between it and each process, and the clock, all behind one lock and driven by one task that
//! runs scheduled actions in (virtual time, sequence) order. Every random choice comes from the
//! world's seeded RNG, so a seed gives one run.

pub mod client;
pub mod faults;
mod requests;
pub mod sessions;
pub mod tree;
pub mod watches;
pub mod wipe; // wipe and rollback (world/wipe.rs)

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::SeedableRng;
use tokio::sync::{oneshot, Notify};
use tokio::time::Instant;

pub use client::SimSession;
pub use faults::Faults;
pub use requests::{Fail, Req, Resp};
use sessions::{ClientState, ServerSession};
use tree::Tree;
use watches::Watches;

/// What the driver does at a scheduled time.
#[derive(Debug)]
pub enum Action {
    /// Apply request `req` on the servers.
    Apply(u64),
    /// Deliver request `req`'s reply (or its failure) to the client.
    Deliver(u64),
    /// Client `c` reattaches its connection number `conn` (if it is still down).
    Reconnect { client: usize, conn: u64 },
    /// Client `c` has been suspended for half its timeout: stop acting.
    StopActing { client: usize, conn: u64 },
    /// Client `c` has been suspended for its whole timeout: give the generation up.
    GiveUp { client: usize, conn: u64 },
    /// The servers expire session `sid` if they heard nothing of it for its timeout.
    ServerExpire(i64),
    /// Client `c` opens the session of its next generation.
    OpenNext { client: usize },
}

/// A request in flight.
pub struct Pending {
    pub client: usize,
    pub session: i64,
    pub conn: u64,
    pub req: Req,
    /// The caller, until its reply (or failure) is delivered.
    pub reply: Option<oneshot::Sender<Result<Resp, Fail>>>,
    /// The outcome once applied, waiting for delivery.
    pub outcome: Option<Result<Resp, Fail>>,
    /// The connection drops once the request applied (its reply is lost).
    pub drop_after: bool,
    /// Never arrives at the servers.
    pub cancelled: bool,
}

/// The trace: every event as one line, hashed as it goes (only the last lines are kept).
pub struct Trace {
    pub lines: VecDeque<String>,
    pub events: u64,
    pub hash: u64,
    pub keep: usize,
    /// Print every line as it happens (`ZOOID_SIM_VERBOSE`).
    pub echo: bool,
}

impl Trace {
    fn new(keep: usize, echo: bool) -> Self {
        Self {
            lines: VecDeque::new(),
            events: 0,
            hash: 0xcbf2_9ce4_8422_2325,
            keep,
            echo,
        }
    }

    pub fn push(&mut self, line: String) {
        for byte in line.bytes().chain([b'\n']) {
            self.hash = (self.hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        self.events += 1;
        if self.echo {
            println!("{line}");
        }
        self.lines.push_back(line);
        if self.lines.len() > self.keep {
            self.lines.pop_front();
        }
    }
}

/// Everything the world knows, behind the one lock.
pub struct State {
    pub rng: StdRng,
    pub faults: Faults,
    pub tree: Tree,
    /// Recent trees, for the reads of a follower behind the leader.
    pub history: VecDeque<Arc<Tree>>,
    pub watches: Watches,
    pub sessions: BTreeMap<i64, ServerSession>,
    pub clients: BTreeMap<usize, ClientState>,
    pub pending: BTreeMap<u64, Pending>,
    queue: BTreeMap<(u64, u64), Action>,
    /// Per (session, connection): the time of its last apply and last delivery (FIFO).
    pub conn_clock: BTreeMap<(i64, u64), (u64, u64)>,
    seq: u64,
    next_req: u64,
    next_session: i64,
    start: Instant,
    pub trace: Trace,
    /// Wipes, rollbacks, the maintenance window and the durable record (world/wipe.rs).
    pub wipe: wipe::WipeState,
}

/// The world, shared by the driver and every simulated session.
#[derive(Clone)]
pub struct World {
    state: Arc<Mutex<State>>,
    wake: Arc<Notify>,
}

impl World {
    pub fn new(seed: u64, faults: Faults, echo: bool) -> Self {
        let state = State {
            rng: StdRng::seed_from_u64(seed),
            faults,
            tree: Tree::new(),
            history: VecDeque::new(),
            watches: Watches::default(),
            sessions: BTreeMap::new(),
            clients: BTreeMap::new(),
            pending: BTreeMap::new(),
            queue: BTreeMap::new(),
            conn_clock: BTreeMap::new(),
            seq: 0,
            next_req: 1,
            next_session: 0x1000,
            start: Instant::now(),
            trace: Trace::new(400, echo),
            wipe: wipe::WipeState::default(),
        };
        World {
            state: Arc::new(Mutex::new(state)),
            wake: Arc::new(Notify::new()),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        // The world never panics while holding the lock; a poisoned one is still consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes the driver after something was scheduled.
    pub fn poke(&self) {
        self.wake.notify_one();
    }

    /// Runs the scheduled actions for ever (spawned once per run).
    pub async fn drive(self) {
        loop {
            let next = {
                let mut state = self.lock();
                let now = state.now_nanos();
                match state.queue.first_key_value().map(|(k, _)| *k) {
                    Some(key) if key.0 <= now => {
                        let action = state.queue.remove(&key).expect("just seen");
                        state.run(action);
                        continue;
                    }
                    Some((at, _)) => Some(state.start + Duration::from_nanos(at)),
                    None => None,
                }
            };
            match next {
                Some(at) => {
                    // `biased`: no random branch order (determinism).
                    tokio::select! {
                        biased;
                        _ = self.wake.notified() => {}
                        _ = tokio::time::sleep_until(at) => {}
                    }
                }
                None => self.wake.notified().await,
            }
        }
    }
}

impl State {
    pub fn now_nanos(&self) -> u64 {
        Instant::now().duration_since(self.start).as_nanos() as u64
    }

    pub fn now_ms(&self) -> i64 {
        (self.now_nanos() / 1_000_000) as i64
    }

    /// Schedules `action` `after` from now.
    pub fn schedule(&mut self, after: Duration, action: Action) {
        let at = self.now_nanos() + after.as_nanos() as u64;
        self.schedule_at(at, action);
    }

    pub fn schedule_at(&mut self, at: u64, action: Action) {
        self.seq += 1;
        self.queue.insert((at, self.seq), action);
    }

    /// Writes one trace line, stamped with the virtual time.
    pub fn log(&mut self, line: impl AsRef<str>) {
        let now = self.now_nanos();
        let line = format!(
            "{:>6}.{:03} {}",
            now / 1_000_000,
            (now / 1_000) % 1_000,
            line.as_ref()
        );
        self.trace.push(line);
    }

    fn new_request_id(&mut self) -> u64 {
        self.next_req += 1;
        self.next_req
    }

    fn new_session_id(&mut self) -> i64 {
        self.next_session += 1;
        self.next_session
    }

    /// Records the tree after a transaction, for lagging reads.
    pub fn committed(&mut self) {
        self.history.push_back(Arc::new(self.tree.clone()));
        if self.history.len() > 40 {
            self.history.pop_front();
        }
    }

    /// Whether no request or reply is in flight (the world is quiet).
    #[allow(dead_code)]
    pub fn quiet(&self) -> bool {
        self.pending.is_empty()
    }

    fn run(&mut self, action: Action) {
        match action {
            Action::Apply(req) => self.apply(req),
            Action::Deliver(req) => self.deliver(req),
            Action::Reconnect { client, conn } => self.reconnect(client, conn),
            Action::StopActing { client, conn } => self.stop_acting(client, conn),
            Action::GiveUp { client, conn } => {
                let suspended = self
                    .clients
                    .get(&client)
                    .is_some_and(|c| c.conn == conn && !c.connected && !c.lost);
                if suspended {
                    self.give_up(client, "no server answered for the whole session timeout");
                }
            }
            Action::ServerExpire(sid) => self.server_expire_check(sid),
            Action::OpenNext { client } => self.open_next(client),
        }
    }
}
