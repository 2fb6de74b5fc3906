//! One seed's run: a world, several processes each running the real ID service on its own
//! simulated session (takes and pushes), chaos per process (disconnections, partitions,
//! expiries, pauses, crashes and restarts), then a quiet phase, a drain of every free ID, and the
//! end checks.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use rand::Rng;
use tokio::task::JoinHandle;
use zooid::zk::Zk;
use zooid::{IdCategory, IdGeneratorService, IdSet, Layout, RetryPolicy, ServiceOptions};

use crate::oracle::{ids_of, InFlight, Oracle};
use crate::world::faults::{between, chance};
use crate::world::sessions::Life;
use crate::world::{Faults, SimSession, World};

/// What a run is asked to do.
#[derive(Clone, Debug)]
pub struct Config {
    pub processes: usize,
    pub run_for: Duration,
    pub last_id: i64,
    pub echo: bool,
    /// Which layouts: `single` (every seed single-node), `format4`, or `both` (even seeds
    /// single-node, odd ones format 4).
    pub layouts: String,
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

fn options() -> ServiceOptions {
    ServiceOptions {
        // The library's backoff and jitter, drawn from the seeded thread RNG, on the virtual
        // clock; more attempts than the default, as the simulated faults are dense.
        retry: RetryPolicy {
            max_attempts: 40,
            deadline: Duration::from_secs(600),
            ..RetryPolicy::default()
        },
        // A short operation log: lost replies are also resolved from the free list.
        op_log_len: 6,
        ..ServiceOptions::default()
    }
}

struct Shared {
    world: World,
    oracle: Mutex<Oracle>,
    category: IdCategory,
    single: bool,
    stop: AtomicBool,
    /// How many violations are in the trace already.
    traced: AtomicUsize,
}

impl Shared {
    fn oracle(&self) -> std::sync::MutexGuard<'_, Oracle> {
        self.oracle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The step check: no held ID is free (in the single node's free list, or in a hole node).
    fn check_step(&self) {
        // Wipe hook (keeper.rs): a rolled-back pool is not checked before its repair.
        if crate::keeper::in_maintenance(&self.world) {
            return;
        }
        if !self.single {
            let holes: Vec<zooid::IdRange> = {
                let state = self.world.lock();
                let parent = zooid::format::holes_parent(self.category.name());
                state.tree.get(&parent).map_or(Vec::new(), |n| {
                    n.children
                        .iter()
                        .filter_map(|name| zooid::format::hole_of(name))
                        .collect()
                })
            };
            self.oracle().check_holes(&holes);
            return;
        }
        let data = {
            let state = self.world.lock();
            state.tree.get(self.category.name()).map(|n| n.data.clone())
        };
        if let Some(data) = data {
            if let Ok(pool) = zooid::format::Pool::parse(self.category.name(), &data) {
                self.oracle().check_free(pool.free());
            }
        }
    }

    /// Writes the violations found since the last call into the trace, where they happened.
    fn trace_violations(&self, p: usize) {
        let found = {
            let oracle = self.oracle();
            let seen = self.traced.swap(oracle.violations.len(), Ordering::SeqCst);
            oracle.violations[seen.min(oracle.violations.len())..].to_vec()
        };
        for violation in found {
            self.log(format!("p{p} step: VIOLATION {violation}"));
        }
    }

    fn log(&self, line: String) {
        self.world.lock().log(line);
    }
}

/// The CAS counter every process draws from besides the IDs.
const COUNTER: &str = "/sim/counter";

/// One process: takes and pushes IDs, and draws counter values, until told to stop.
async fn process(shared: Arc<Shared>, p: usize, zk: Zk) {
    let counter = zooid::Counter::with_policy(zk.clone(), COUNTER, options().retry)
        .expect("a valid counter path");
    let service = IdGeneratorService::on_zookeeper(zk, options());
    let category = shared.category.clone();
    let mut mine: Vec<i64> = Vec::new();
    while !shared.stop.load(Ordering::SeqCst) {
        let (push, count, n, pause) = {
            let mut state = shared.world.lock();
            let push = !mine.is_empty() && state.rng.random_bool(0.4);
            (
                push,
                state.rng.random_bool(0.15),
                state.rng.random_range(1..=4u64),
                between(&mut state.rng, Duration::ZERO, Duration::from_millis(40)),
            )
        };
        if count {
            // The CAS counter on the same session: every value it returns is unique.
            let result = counter.next(n).await;
            shared.log(format!(
                "p{p} counter next {n} -> {:?}",
                result.as_ref().map_err(|e| e.kind())
            ));
            if let Ok(range) = result {
                let values: Vec<i64> = (range.start()..=range.end()).collect();
                shared.oracle().counted(p, &values);
            }
        } else if push {
            let k = mine.len().min(3);
            let ids: Vec<i64> = mine.drain(..k).collect();
            let ranges: Vec<_> = ids.iter().map(|id| zooid::IdRange::single(*id)).collect();
            let mut set = IdSet::new(category.clone(), ranges);
            shared
                .oracle()
                .in_flight
                .insert(p, InFlight::Push(ids.clone()));
            let leaked_before = service.stats().ids_leaked;
            let result = service.push_ids(&mut set).await;
            let leaked = service.stats().ids_leaked - leaked_before;
            shared.log(format!(
                "p{p} push {ids:?} -> {:?}",
                result.as_ref().map_err(|e| e.kind())
            ));
            let mut oracle = shared.oracle();
            oracle.in_flight.remove(&p);
            oracle.leaked(leaked, result.as_ref().err());
            match &result {
                Ok(()) => oracle.pushed(p, &ids),
                Err(err) => {
                    oracle.failed(p, err, &ids);
                    if !matches!(err, zooid::ZooidError::OutcomeUnknown { .. }) {
                        mine.extend(ids); // kept by the caller
                    }
                }
            }
        } else {
            shared.oracle().in_flight.insert(p, InFlight::Take(n));
            let leaked_before = service.stats().ids_leaked;
            let result = service.take_ids(&category, n).await;
            let leaked = service.stats().ids_leaked - leaked_before;
            let ids = result.as_ref().map(|set| ids_of(&set.ranges())).ok();
            shared.log(format!(
                "p{p} take {n} -> {:?}",
                result.as_ref().map(|_| &ids).map_err(|e| e.kind())
            ));
            let mut oracle = shared.oracle();
            oracle.in_flight.remove(&p);
            oracle.leaked(leaked, result.as_ref().err());
            match &result {
                Ok(_) => {
                    let ids = ids.unwrap_or_default();
                    oracle.taken(p, &ids);
                    crate::keeper::check_taken(&shared.world, &mut oracle, p, &ids); // wipe hook
                    mine.extend(ids);
                }
                Err(err) => oracle.failed(p, err, &[]),
            }
        }
        shared.check_step();
        shared.trace_violations(p);
        tokio::time::sleep(pause).await;
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
        inner: Box::pin(process(shared.clone(), p, zk)),
        gate: gate.clone(),
    });
    Proc { client, gate, task }
}

/// Runs one seed.
pub async fn run(seed: u64, config: &Config) -> Outcome {
    let single = match config.layouts.as_str() {
        "format4" => false,
        "both" => seed.is_multiple_of(2),
        _ => true,
    };
    let layout_name = if single { "single-node" } else { "format-4" };
    let world = World::new(seed, Faults::all(), config.echo);
    tokio::spawn(world.clone().drive());
    let category = IdCategory::new("/ids/sim").expect("valid");
    let shared = Arc::new(Shared {
        world: world.clone(),
        oracle: Mutex::new(Oracle {
            unit: if single { 1 } else { 4 },
            ..Oracle::default()
        }),
        category: category.clone(),
        single,
        stop: AtomicBool::new(false),
        traced: AtomicUsize::new(0),
    });
    world.lock().faults = Faults::all().none();
    let admin: Zk = SimSession::open(&world, 0, 0);
    let service = IdGeneratorService::on_zookeeper(admin.clone(), options());
    let layout = if single {
        Layout::SingleNode
    } else {
        Layout::HoleNodes { unit: 4 }
    };
    // Wipe hook (keeper.rs): with the keeper, the category starts from its durable record.
    let bounds = zooid::IdRange::new(1, config.last_id).expect("valid bounds");
    let created = if crate::keeper::enabled() {
        crate::keeper::setup(&world, &service, &category, bounds, layout).await
    } else {
        service
            .create_category(
                &category,
                &zooid::CategorySpec::new(1, config.last_id).layout(layout),
            )
            .await
            .map_err(|err| format!("setup: create failed: {err}"))
    };
    if let Err(err) = created {
        return Outcome {
            layout: layout_name,
            violations: vec![err],
            events: 0,
            hash: 0,
            trace: Vec::new(),
            summary: String::new(),
        };
    }
    let counter = zooid::Counter::new(admin.clone(), COUNTER).expect("a valid counter path");
    if let Err(err) = counter.init(0).await {
        return Outcome {
            layout: layout_name,
            violations: vec![format!("setup: counter init failed: {err}")],
            events: 0,
            hash: 0,
            trace: Vec::new(),
            summary: String::new(),
        };
    }
    world.lock().faults = Faults::all();
    world.lock().log(format!(
        "seed {seed}: {layout_name}, {} processes",
        config.processes
    ));
    let mut next_client = 1;
    let mut procs: Vec<Proc> = (1..=config.processes)
        .map(|p| {
            next_client += 1;
            spawn(&shared, p, next_client)
        })
        .collect();
    // Wipe hook (keeper.rs): the keeper, and this seed's wipe or rollback.
    let keeper_stop = Arc::new(AtomicBool::new(false));
    let keeping = crate::keeper::enabled().then(|| {
        let incident = crate::keeper::Incident::draw(&world, config.run_for);
        world.lock().log(format!("incident: {incident:?}"));
        let keeper = tokio::spawn(crate::keeper::keeper(
            world.clone(),
            category.clone(),
            config.last_id,
            options(),
            keeper_stop.clone(),
        ));
        let s = shared.clone();
        let incident: crate::keeper::Driven = Some(Box::pin(crate::keeper::incident(
            world.clone(),
            move |f: &mut dyn FnMut(&mut Oracle)| f(&mut s.oracle()),
            incident,
            category.clone(),
            bounds,
            layout,
            COUNTER,
            options(),
        )));
        (keeper, incident)
    });
    let (keeping, mut incident) = match keeping {
        Some((keeper, incident)) => (Some(keeper), incident),
        None => (None, None),
    };
    // Chaos, per tick, until the end of the run.
    let tick = world.lock().faults.tick;
    let end = tokio::time::Instant::now() + config.run_for;
    let mut crashes = 0;
    while tokio::time::Instant::now() < end {
        crate::keeper::sleep_driving(tick, &mut incident).await; // wipe hook: drives the incident
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
                let mut state = world.lock();
                if let Some(sid) = state.clients.get(&c).map(|cl| cl.session) {
                    state.end_session(sid, Life::Expired);
                }
            } else if hit(f.pause) {
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
                    }
                    state.drop_connection(c, None, "process crashed");
                }
                shared.oracle().crashed(p);
                next_client += 1;
                *proc = spawn(&shared, p, next_client);
            }
            world.poke();
        }
    }
    // Wipe hook (keeper.rs): an incident still under way ends first.
    if let Some(incident) = incident.take() {
        let _ = tokio::time::timeout(Duration::from_secs(600), incident).await;
    }
    // The quiet phase: no new fault; paused processes resume; every process ends its operation.
    world.lock().faults = Faults::all().none();
    shared.stop.store(true, Ordering::SeqCst);
    world.lock().log("quiet");
    for proc in &procs {
        let mut state = world.lock();
        state.thaw(proc.client);
        drop(state);
        proc.gate.set(false);
    }
    world.poke();
    for proc in procs {
        let finished = tokio::time::timeout(Duration::from_secs(600), proc.task).await;
        if finished.is_err() {
            shared
                .oracle()
                .violations
                .push("a process did not finish within 600 s of quiet".into());
        }
    }
    // Wipe hook (keeper.rs): the incident over, the keeper raises the ceiling to the last ID.
    if let Some(keeper) = keeping {
        keeper_stop.store(true, Ordering::SeqCst);
        if tokio::time::timeout(Duration::from_secs(600), keeper)
            .await
            .is_err()
        {
            shared
                .oracle()
                .violations
                .push("the keeper's last raise did not end within 600 s of quiet".into());
        }
    }
    // The drain: a fresh process takes every free ID. Format 4 leaves a young hole to its pusher
    // for a while: when IDs are missing after a first drain, wait that long and drain again.
    let drain: Zk = SimSession::open(&world, next_client + 1, 99);
    let drainer = IdGeneratorService::on_zookeeper(drain, options());
    for pass in 0..2 {
        if pass == 1 {
            if single || shared.oracle().missing(1, config.last_id) == 0 {
                break;
            }
            tokio::time::sleep(zooid::LEFT_TO_PUSHER_FOR + Duration::from_secs(5)).await;
        }
        for _ in 0..(config.last_id as usize) {
            match drainer.take_ids(&category, 50).await {
                Ok(set) => {
                    let ids = ids_of(&set.ranges());
                    shared.log(format!("drain -> {} IDs", ids.len()));
                    shared.oracle().taken(99, &ids);
                    // Wipe hook (keeper.rs): nothing above the durable record.
                    crate::keeper::check_taken(&shared.world, &mut shared.oracle(), 99, &ids);
                }
                Err(zooid::ZooidError::Exhausted { .. }) => break,
                Err(err) => {
                    shared
                        .oracle()
                        .violations
                        .push(format!("drain failed in the quiet phase: {err}"));
                    break;
                }
            }
        }
    }
    let mut oracle = shared.oracle();
    oracle.check_conserved(1, config.last_id);
    let mut state = world.lock();
    let summary = format!(
        "{layout_name}: {} takes, {} pushes, {} counter values in {} nexts, {} unknown, {} crashes, {} doubt, bound {}, zxid {}",
        oracle.takes,
        oracle.pushes,
        oracle.counted.len(),
        oracle.counter_nexts,
        oracle.unknown,
        crashes,
        oracle.doubt.len(),
        oracle.anonymous,
        state.tree.zxid
    );
    let _ = chance;
    Outcome {
        layout: layout_name,
        violations: std::mem::take(&mut oracle.violations),
        events: state.trace.events,
        hash: state.trace.hash,
        trace: state.trace.lines.drain(..).collect(),
        summary,
    }
}
