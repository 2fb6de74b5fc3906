//! One seed's run: a world, the worker and candidate processes each on its own simulated
//! session (workload/), chaos per process (chaos.rs), then a quiet phase, each workload's drain
//! and its end checks.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zooid::zk::Zk;

use crate::chaos::{chaos, spawn, Proc};
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
        if let Err(why) = shared.ids.create(&world, &admin).await {
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
    // With the ID service: the keeper (keeper.rs), and this seed's wipe or rollback when only
    // the ID service and the counter run (the queue and the election keep no durable record
    // to restore from, and their oracles do not model a lost tree).
    let keeper_stop = Arc::new(AtomicBool::new(false));
    let mut incident: crate::keeper::Driven = None;
    let keeper = (w.ids && crate::keeper::enabled()).then(|| {
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
        tokio::spawn(crate::keeper::keeper(
            world.clone(),
            shared.ids.category.clone(),
            config.last_id,
            options(),
            keeper_stop.clone(),
        ))
    });
    let crashes = chaos(
        &shared,
        &mut procs,
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
    // The incident over, the keeper raises the ceiling to the last ID (keeper.rs).
    if let Some(keeper) = keeper {
        keeper_stop.store(true, Ordering::SeqCst);
        if tokio::time::timeout(Duration::from_secs(600), keeper)
            .await
            .is_err()
        {
            shared
                .ids_oracle()
                .violations
                .push("the keeper's last raise did not end within 600 s of quiet".into());
        }
    }
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
