//! The workloads every process runs at once on its one session, each the real zooid code:
//! the ID service (`ids`), the CAS counter (`counter`), the work queue (`queue`) and the leader
//! election with its lease (`election`). `ZOOID_SIM_WORKLOADS` picks some (comma-separated;
//! default all). Each has its oracle (oracle/), checked after every step of any process.

pub mod counter;
pub mod election;
pub mod ids;
pub mod queue;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use zooid::zk::Zk;
use zooid::{RetryPolicy, ServiceOptions};

use crate::oracle;
use crate::world::World;

/// Which workloads run.
#[derive(Clone, Debug)]
pub struct Workloads {
    pub ids: bool,
    pub counter: bool,
    pub queue: bool,
    pub election: bool,
}

impl Workloads {
    /// From a comma-separated list (`all` or empty: every workload).
    pub fn parse(list: &str) -> Self {
        let all = list.trim().is_empty() || list.trim() == "all";
        let has = |name: &str| all || list.split(',').any(|w| w.trim() == name);
        Self {
            ids: has("ids"),
            counter: has("counter"),
            queue: has("queue"),
            election: has("election"),
        }
    }
}

/// The service options of every ID service and counter of the run.
pub fn options() -> ServiceOptions {
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

/// [`options`] for ID process `p`: the even ones with a deadline shorter than the session
/// timeout, so that seeds explore operations whose deadline passes between their phases (a
/// listing, then the claim: `Timeout`, or a take served short) as well as those that outlast
/// every fault.
pub fn options_for(p: usize) -> ServiceOptions {
    let mut options = options();
    if p.is_multiple_of(2) {
        options.retry.deadline = SHORT_DEADLINE;
    }
    options
}

/// The deadline of the even ID processes.
pub const SHORT_DEADLINE: Duration = Duration::from_secs(3);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What every process and the run share: the world, the oracles, the stop signal.
pub struct Shared {
    pub world: World,
    pub workloads: Workloads,
    /// Processes 1..=workers are workers, the rest election candidates.
    pub workers: usize,
    pub ids: ids::Setup,
    ids_oracle: Mutex<oracle::ids::Oracle>,
    counter_oracle: Mutex<oracle::counter::Oracle>,
    queue_oracle: Mutex<oracle::queue::Oracle>,
    election_oracle: Mutex<oracle::election::Oracle>,
    pub stop: AtomicBool,
    /// How many violations of each oracle are in the trace already.
    traced: Mutex<[usize; 4]>,
}

impl Shared {
    pub fn new(world: World, workloads: Workloads, workers: usize, ids: ids::Setup) -> Self {
        Self {
            world,
            workloads,
            workers,
            ids_oracle: Mutex::new(oracle::ids::Oracle {
                unit: ids.unit(),
                ..Default::default()
            }),
            ids,
            counter_oracle: Mutex::default(),
            queue_oracle: Mutex::default(),
            election_oracle: Mutex::default(),
            stop: AtomicBool::new(false),
            traced: Mutex::new([0; 4]),
        }
    }

    pub fn ids_oracle(&self) -> MutexGuard<'_, oracle::ids::Oracle> {
        lock(&self.ids_oracle)
    }
    pub fn counter_oracle(&self) -> MutexGuard<'_, oracle::counter::Oracle> {
        lock(&self.counter_oracle)
    }
    pub fn queue_oracle(&self) -> MutexGuard<'_, oracle::queue::Oracle> {
        lock(&self.queue_oracle)
    }
    pub fn election_oracle(&self) -> MutexGuard<'_, oracle::election::Oracle> {
        lock(&self.election_oracle)
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    pub fn log(&self, line: String) {
        self.world.lock().log(line);
    }

    /// The step checks of every workload, then the violations found into the trace.
    pub fn check_step(&self, p: usize) {
        if self.workloads.ids {
            ids::check_step(self);
        }
        if self.workloads.election {
            self.election_oracle().check(tokio::time::Instant::now());
        }
        self.trace_violations(p);
    }

    /// Every violation so far, the ID service's first.
    pub fn violations(&self) -> Vec<String> {
        let mut all = self.ids_oracle().violations.clone();
        all.extend(self.counter_oracle().violations.iter().cloned());
        all.extend(self.queue_oracle().violations.iter().cloned());
        all.extend(self.election_oracle().violations.iter().cloned());
        all
    }

    /// Writes the violations found since the last call into the trace, where they happened.
    pub fn trace_violations(&self, p: usize) {
        let lists = [
            self.ids_oracle().violations.clone(),
            self.counter_oracle().violations.clone(),
            self.queue_oracle().violations.clone(),
            self.election_oracle().violations.clone(),
        ];
        let mut found = Vec::new();
        {
            let mut traced = lock(&self.traced);
            for (i, list) in lists.iter().enumerate() {
                found.extend(list[traced[i].min(list.len())..].iter().cloned());
                traced[i] = list.len();
            }
        }
        for violation in found {
            self.log(format!("p{p} step: VIOLATION {violation}"));
        }
    }

    /// Process `p` crashed with whatever it had in flight.
    pub fn crashed(&self, p: usize) {
        self.ids_oracle().crashed(p);
        self.counter_oracle().crashed(p);
        self.queue_oracle().crashed(p);
        self.election_oracle().unregister(p);
    }
}

/// One process until told to stop: a worker (`p` up to `workers`) runs the ID service, the
/// counter and the queue at once on the session `zk`; every other process is an election
/// candidate alone on its session, as `zooid elect` runs.
pub async fn process(shared: std::sync::Arc<Shared>, p: usize, zk: Zk) {
    let mut w = shared.workloads.clone();
    if p <= shared.workers {
        w.election = false;
    } else {
        (w.ids, w.counter, w.queue) = (false, false, false);
    }
    let ids = async {
        if w.ids {
            ids::process(&shared, p, zk.clone()).await;
        }
    };
    let counter = async {
        if w.counter {
            counter::process(&shared, p, zk.clone()).await;
        }
    };
    let queue = async {
        if w.queue {
            queue::process(&shared, p, zk.clone()).await;
        }
    };
    let election = async {
        if w.election {
            election::process(&shared, p, zk.clone()).await;
        }
    };
    tokio::join!(ids, counter, queue, election);
}

/// A pause between two steps of a workload, drawn from the world's RNG.
pub fn pause(shared: &Shared, max_ms: u64) -> Duration {
    let mut state = shared.world.lock();
    crate::world::faults::between(
        &mut state.rng,
        Duration::ZERO,
        Duration::from_millis(max_ms),
    )
}
