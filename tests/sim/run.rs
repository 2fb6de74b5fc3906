//! One seed's run: a world, several processes each running every chosen workload (workload/)
//! on its own simulated session, chaos per process (disconnections, partitions, expiries,
//! pauses, crashes and restarts), then a quiet phase, each workload's drain and its end checks.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use rand::Rng;
use tokio::task::JoinHandle;
use zooid::zk::Zk;

use crate::workload::{self, ids, Shared, Workloads};
use crate::world::faults::between;
use crate::world::sessions::Life;
use crate::world::{Faults, SimSession, World};

/// What a run is asked to do.
#[derive(Clone, Debug)]
pub struct Config {
    /// Worker processes (the ID service, the counter, the queue).
    pub processes: usize,
    /// Election candidates, each a process of its own.
    pub candidates: usize,
    pub run_for: Duration,
    pub last_id: i64,
    pub echo: bool,
    /// Which layouts: `single`, `format4`, or `both` (even seeds single-node, odd format 4).
    pub layouts: String,
    pub workloads: Workloads,
}

/// What a run found.
pub struct Outcome {
    pub layout: &'static str,
    pub violations: Vec<String>,
    pub events: u64,
    pub hash: u64,
    pub trace: Vec<String>,
    pub summary: String,
}

/// A process's gate: while paused, its task is not polled (its clock stops), the world's runs.
#[derive(Default)]
struct Gate {
    paused: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Gate {
    fn set(&self, paused: bool) {
        self.paused.store(paused, Ordering::SeqCst);
        if !paused {
            if let Some(waker) = self.waker.lock().unwrap_or_else(|p| p.into_inner()).take() {
                waker.wake();
            }
        }
    }
}

struct Pausable<F> {
    inner: Pin<Box<F>>,
    gate: Arc<Gate>,
}

impl<F: Future> Future for Pausable<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        if self.gate.paused.load(Ordering::SeqCst) {
            *self.gate.waker.lock().unwrap_or_else(|p| p.into_inner()) = Some(cx.waker().clone());
            return Poll::Pending;
        }
        self.inner.as_mut().poll(cx)
    }
}

struct Proc {
    client: usize,
    gate: Arc<Gate>,
    task: JoinHandle<()>,
}

fn spawn(shared: &Arc<Shared>, p: usize, client: usize) -> Proc {
    let zk: Zk = SimSession::open(&shared.world, client, p);
    let gate = Arc::new(Gate::default());
    let task = tokio::spawn(Pausable {
        inner: Box::pin(workload::process(shared.clone(), p, zk)),
        gate: gate.clone(),
    });
    Proc { client, gate, task }
}

fn failed_setup(layout: &'static str, why: String) -> Outcome {
    Outcome {
        layout,
        violations: vec![why],
        events: 0,
        hash: 0,
        trace: Vec::new(),
        summary: String::new(),
    }
}

/// Runs one seed.
pub async fn run(seed: u64, config: &Config) -> Outcome {
    let setup = ids::Setup::new(seed, &config.layouts, config.last_id);
    let layout_name = setup.layout_name();
    let world = World::new(seed, Faults::all(), config.echo);
    tokio::spawn(world.clone().drive());
    let w = config.workloads.clone();
    let workers = if w.ids || w.counter || w.queue {
        config.processes
    } else {
        0
    };
    let candidates = if w.election { config.candidates } else { 0 };
    let shared = Arc::new(Shared::new(world.clone(), w.clone(), workers, setup));
    world.lock().faults = Faults::all().none();
    let admin: Zk = SimSession::open(&world, 0, 0);
    if w.ids {
        if let Err(why) = shared.ids.create(&admin).await {
            return failed_setup(layout_name, why);
        }
    }
    if w.counter {
        if let Err(why) = workload::counter::setup(&admin).await {
            return failed_setup(layout_name, why);
        }
    }
    world.lock().faults = Faults::all();
    world.lock().log(format!(
        "seed {seed}: {layout_name}, {workers} workers, {candidates} candidates, {w:?}"
    ));
    if w.election {
        tokio::spawn(workload::election::watch(shared.clone()));
    }
    let mut next_client = 1;
    let mut procs: Vec<Proc> = (1..=workers + candidates)
        .map(|p| {
            next_client += 1;
            spawn(&shared, p, next_client)
        })
        .collect();
    let crashes = chaos(&shared, &mut procs, &mut next_client, config.run_for).await;
    // The quiet phase: no new fault; paused processes resume; every process ends its operation.
    world.lock().faults = Faults::all().none();
    shared.stop.store(true, Ordering::SeqCst);
    world.lock().log("quiet");
    for proc in &procs {
        world.lock().thaw(proc.client);
        proc.gate.set(false);
    }
    world.poke();
    let clients: Vec<usize> = procs.iter().map(|proc| proc.client).collect();
    for proc in procs {
        let finished = tokio::time::timeout(Duration::from_secs(600), proc.task).await;
        if finished.is_err() {
            shared
                .ids_oracle()
                .violations
                .push("a process did not finish within 600 s of quiet".into());
        }
    }
    // The processes exit: their sessions end, and with them what they still hold (the lock of
    // a claim whose release ended in doubt).
    {
        let mut state = world.lock();
        for c in clients {
            if let Some(cl) = state.clients.get_mut(&c) {
                cl.frozen = true;
                let sid = cl.session;
                state.end_session(sid, Life::Closed);
            }
        }
    }
    world.poke();
    // Each workload's drain, on a fresh process, and its end checks.
    let drain: Zk = SimSession::open(&world, next_client + 1, 99);
    if w.ids {
        ids::finish(&shared, drain.clone()).await;
    }
    if w.queue {
        workload::queue::finish(&shared, drain.clone()).await;
    }
    let mut parts = vec![format!("{layout_name}: {crashes} crashes")];
    if w.ids {
        parts.push(ids::summary(&shared));
    }
    if w.counter {
        parts.push(workload::counter::summary(&shared));
    }
    if w.queue {
        parts.push(workload::queue::summary(&shared));
    }
    if w.election {
        parts.push(workload::election::summary(&shared));
    }
    shared.trace_violations(0);
    let violations = shared.violations();
    let mut state = world.lock();
    parts.push(format!("zxid {}", state.tree.zxid));
    Outcome {
        layout: layout_name,
        violations,
        events: state.trace.events,
        hash: state.trace.hash,
        trace: state.trace.lines.drain(..).collect(),
        summary: parts.join("; "),
    }
}

/// Chaos, per process and tick, until `run_for` has passed; returns how many crashes.
async fn chaos(
    shared: &Arc<Shared>,
    procs: &mut [Proc],
    next_client: &mut usize,
    run_for: Duration,
) -> u64 {
    let world = &shared.world;
    let tick = world.lock().faults.tick;
    let end = tokio::time::Instant::now() + run_for;
    let mut crashes = 0;
    while tokio::time::Instant::now() < end {
        tokio::time::sleep(tick).await;
        for (i, proc) in procs.iter_mut().enumerate() {
            let p = i + 1;
            let (f, roll, timeout) = {
                let mut state = world.lock();
                (
                    state.faults.clone(),
                    state.rng.random::<f64>(),
                    state.faults.session_timeout,
                )
            };
            let mut bound = 0.0;
            let mut hit = |q: f64| {
                bound += q;
                roll < bound
            };
            let c = proc.client;
            if hit(f.disconnect) {
                let mut state = world.lock();
                let down = between(&mut state.rng, Duration::from_millis(10), timeout / 3);
                state.drop_connection(c, Some(down), "chaos: disconnect");
            } else if hit(f.partition) {
                let mut state = world.lock();
                let down = between(&mut state.rng, timeout, timeout * 3);
                state.drop_connection(c, Some(down), "chaos: partition");
            } else if hit(f.expire) {
                // Before the session's timeout: outside what the election's lease assumes.
                shared.election_oracle().expired_early(p);
                let mut state = world.lock();
                if let Some(sid) = state.clients.get(&c).map(|cl| cl.session) {
                    state.end_session(sid, Life::Expired);
                }
            } else if hit(f.pause) {
                if proc.gate.paused.load(Ordering::SeqCst) {
                    continue; // already paused
                }
                let pause = {
                    let mut state = world.lock();
                    let pause = between(&mut state.rng, Duration::from_millis(100), timeout * 2);
                    state.log(format!("p{p} paused for {pause:?}"));
                    if let Some(cl) = state.clients.get_mut(&c) {
                        cl.frozen = true;
                    }
                    state.drop_connection(c, None, "process paused");
                    pause
                };
                proc.gate.set(true);
                let (world2, gate) = (world.clone(), proc.gate.clone());
                tokio::spawn(async move {
                    tokio::time::sleep(pause).await;
                    world2.lock().thaw(c);
                    world2.poke();
                    gate.set(false);
                });
            } else if hit(f.crash) {
                crashes += 1;
                proc.task.abort();
                {
                    let mut state = world.lock();
                    state.log(format!("p{p} crashed"));
                    if let Some(cl) = state.clients.get_mut(&c) {
                        cl.frozen = true;
                        cl.crashed = true;
                    }
                    state.drop_connection(c, None, "process crashed");
                }
                shared.crashed(p);
                *next_client += 1;
                *proc = spawn(shared, p, *next_client);
            }
            world.poke();
        }
    }
    crashes
}
