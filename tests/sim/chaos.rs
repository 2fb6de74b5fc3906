//! The processes and the chaos: each process's task behind a gate (a paused process is not
//! polled while the world's clock runs), and per process and tick a disconnection, a partition
//! longer than the session timeout, an expiry by the servers, a pause, or a crash and restart.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use rand::Rng;
use tokio::task::JoinHandle;
use zooid::zk::Zk;

use crate::workload::{self, Shared};
use crate::world::faults::between;
use crate::world::sessions::Life;
use crate::world::SimSession;

/// A process's gate: while paused, its task is not polled (its clock stops), the world's runs.
#[derive(Default)]
pub struct Gate {
    paused: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Gate {
    pub fn set(&self, paused: bool) {
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

pub struct Proc {
    pub client: usize,
    pub gate: Arc<Gate>,
    pub task: JoinHandle<()>,
    /// `Some(k)`: keeper `k` (keeper.rs), not a workload process.
    pub keeper: Option<usize>,
}

impl Proc {
    /// How the trace names it.
    pub fn name(&self, p: usize) -> String {
        match self.keeper {
            Some(k) => format!("k{k}"),
            None => format!("p{p}"),
        }
    }
}

fn pausable(inner: impl Future<Output = ()> + Send + 'static) -> (Arc<Gate>, JoinHandle<()>) {
    let gate = Arc::new(Gate::default());
    let task = tokio::spawn(Pausable {
        inner: Box::pin(inner),
        gate: gate.clone(),
    });
    (gate, task)
}

pub fn spawn(shared: &Arc<Shared>, p: usize, client: usize) -> Proc {
    let zk: Zk = SimSession::open(&shared.world, client, p);
    let (gate, task) = pausable(workload::process(shared.clone(), p, zk));
    Proc {
        client,
        gate,
        task,
        keeper: None,
    }
}

/// Keeper `k` (`zooid::keeper::run`, keeper.rs) as a process of its own on client `client`.
pub fn spawn_keeper(
    shared: &Arc<Shared>,
    keepers: &crate::keeper::Keepers,
    k: usize,
    client: usize,
) -> Proc {
    let zk: Zk = SimSession::open(&shared.world, client, crate::keeper::PROCESS_BASE + k);
    let (gate, task) = pausable(keepers.process(shared.clone(), k, zk));
    Proc {
        client,
        gate,
        task,
        keeper: Some(k),
    }
}

/// Chaos, per process and tick, until `run_for` has passed, driving the seed's wipe or
/// rollback (`incident`, keeper.rs) between ticks; returns how many crashes. The keepers'
/// processes (`keepers`) meet the same faults as the others.
pub async fn chaos(
    shared: &Arc<Shared>,
    procs: &mut [Proc],
    keepers: Option<&crate::keeper::Keepers>,
    next_client: &mut usize,
    run_for: Duration,
    incident: &mut crate::keeper::Driven,
) -> u64 {
    let world = &shared.world;
    let tick = world.lock().faults.tick;
    let end = tokio::time::Instant::now() + run_for;
    let mut crashes = 0;
    while tokio::time::Instant::now() < end {
        crate::keeper::sleep_driving(tick, incident).await;
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
            let name = proc.name(p);
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
                if proc.keeper.is_none() {
                    shared.election_oracle().expired_early(p);
                }
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
                    state.log(format!("{name} paused for {pause:?}"));
                    state.freeze(c, false);
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
                    state.log(format!("{name} crashed"));
                    state.freeze(c, true);
                    state.drop_connection(c, None, "process crashed");
                }
                *next_client += 1;
                *proc = match (proc.keeper, keepers) {
                    (Some(k), Some(keepers)) => spawn_keeper(shared, keepers, k, *next_client),
                    _ => {
                        shared.crashed(p);
                        spawn(shared, p, *next_client)
                    }
                };
            }
            world.poke();
        }
    }
    crashes
}
