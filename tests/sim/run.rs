//! One seed's run: a world, the worker and candidate processes each on its own simulated
//! session (workload/), chaos per process (chaos.rs), then a quiet phase, each workload's drain
//! and its end checks.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use zooid::zk::Zk;

use crate::chaos::{chaos, spawn, spawn_keeper, Proc};
use crate::workload::{self, ids, options, Shared, Workloads};
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
    /// Which layouts: `single`, `format4`, `migrate`, or `both` (see `ids::Setup::new`).
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
    // With the ID service: the keepers' durable record, in a directory of this run.
    let records = if w.ids && crate::keeper::enabled() {
        match crate::keeper::RecordDir::new(seed) {
            Ok(dir) => Some(dir),
            Err(why) => return failed_setup(layout_name, why),
        }
    } else {
        None
    };
    if w.ids {
        let dir = records.as_ref().map(|r| r.path());
        if let Err(why) = shared.ids.create(&world, &admin, dir).await {
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
    // With the ID service: the keepers (keeper.rs), processes of their own, and this seed's
    // wipe or rollback when only the ID service and the counter run (the queue and the
    // election keep no durable record to restore from, and their oracles do not model a lost
    // tree).
    let mut incident: crate::keeper::Driven = None;
    let keepers = records
        .as_ref()
        .map(|dir| crate::keeper::Keepers::new(dir.path()));
    if let Some(keepers) = &keepers {
        if !w.queue && !w.election {
            let drawn = crate::keeper::Incident::draw(&world, config.run_for);
            world.lock().log(format!("incident: {drawn:?}"));
            incident = Some(Box::pin(crate::keeper::incident(
                shared.clone(),
                drawn,
                shared.ids.bounds(),
                shared.ids.layout(),
                w.counter.then_some(workload::counter::COUNTER),
                options(),
            )));
        }
        for k in 1..=crate::keeper::KEEPERS {
            next_client += 1;
            procs.push(spawn_keeper(&shared, keepers, k, next_client));
        }
    }
    let crashes = chaos(
        &shared,
        &mut procs,
        keepers.as_ref(),
        &mut next_client,
        config.run_for,
        &mut incident,
    )
    .await;
    // An incident still under way ends first.
    if let Some(incident) = incident.take() {
        let _ = tokio::time::timeout(Duration::from_secs(600), incident).await;
    }
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
    let (keeper_procs, procs): (Vec<Proc>, Vec<Proc>) =
        procs.into_iter().partition(|proc| proc.keeper.is_some());
    for proc in procs {
        let finished = tokio::time::timeout(Duration::from_secs(600), proc.task).await;
        if finished.is_err() {
            shared
                .ids_oracle()
                .violations
                .push("a process did not finish within 600 s of quiet".into());
        }
    }
    // The keepers stop (they resign), then every process exits: their sessions end, and with
    // them what they still hold (the lock of a claim whose release ended in doubt).
    if let Some(keepers) = &keepers {
        keepers.stop();
    }
    for proc in keeper_procs {
        let finished = tokio::time::timeout(Duration::from_secs(600), proc.task).await;
        if finished.is_err() {
            shared
                .ids_oracle()
                .violations
                .push("a keeper did not stop within 600 s of quiet".into());
        }
    }
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
    // The incident over and the keepers stopped, the operator raises the ceiling to the last
    // ID, durable first (keeper.rs).
    if records.is_some() {
        next_client += 1;
        crate::keeper::raise_to_last(&shared, next_client, &shared.ids.category, config.last_id)
            .await;
    }
    // Each workload's drain, on a fresh process, and its end checks.
    let drain: Zk = SimSession::open(&world, next_client + 1, 99);
    if w.ids {
        ids::finish(&shared, drain.clone()).await;
    }
    if w.queue {
        workload::queue::finish(&shared, drain.clone()).await;
    }
    if w.counter {
        workload::counter::finish(&shared, drain.clone()).await;
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
