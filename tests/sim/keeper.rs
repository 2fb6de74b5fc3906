//! The keeper and the operator under the simulation (tests/sim/README.md, "Wipe and
//! rollback"): the category's ceiling kept ahead of the takes with every raise made durable
//! first (the durable record lives in the world, `world::wipe::Record`), and at most one
//! incident per seed: a wipe of the ensemble or a rollback to an earlier snapshot, followed by
//! the documented recovery (`zooid restore`: the record's generation bumped durably, then
//! `IdGeneratorService::restore_category_in` with the record's ceiling and that epoch, which
//! creates a missing pool or repairs one behind the record; a rolled-back pool the record cannot
//! tell from a current one, which the docs' rollback window describes, is deleted first, as the
//! docs ask).
//!
//! The keeper here is a driver of the public calls the real keeper's raise amounts to (the
//! durable write, then the pool's ceiling through `raise_ceiling`), not `zooid::keeper::run`:
//! that one needs the election and a durable store whose directory I/O runs on tokio's blocking
//! pool, outside the simulation's one seeded thread.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use zooid::zk::Zk;
use zooid::{IdCategory, IdGeneratorService, IdRange, Layout, ServiceOptions, ZooidError};

use crate::oracle::ids::Oracle;
use crate::workload::Shared;
use crate::world::faults::between;
use crate::world::{SimSession, World};

/// The keeper's client number (the admin's is 0, processes' from 2, the drain's last).
const KEEPER_CLIENT: usize = 1;
/// Operators' clients: one per incident, from here.
const OPERATOR_CLIENTS: usize = 1000;
/// A raise adds this many IDs to the ceiling...
const STEP: i64 = 16;
/// ...when fewer than this many are left under it.
const LOW_WATER: u64 = 8;

/// Whether the keeper, the durable record and the incidents run (`ZOOID_SIM_WIPES=0`: the
/// category is created without a ceiling, as before, and nothing is wiped).
pub fn enabled() -> bool {
    std::env::var("ZOOID_SIM_WIPES").map_or(true, |v| v.trim() != "0")
}

/// Which incident a seed gets, drawn from the world's RNG: none, a wipe or a rollback, and when.
#[derive(Clone, Copy, Debug)]
pub enum Incident {
    None,
    Wipe { at: Duration },
    Rollback { snapshot_at: Duration, at: Duration },
}

impl Incident {
    pub fn draw(world: &World, run_for: Duration) -> Self {
        let mut state = world.lock();
        let roll: f64 = state.rng.random();
        let at = between(&mut state.rng, Duration::from_secs(2), run_for * 7 / 10);
        if roll < 0.45 {
            Incident::Wipe { at }
        } else if roll < 0.9 {
            let back = between(
                &mut state.rng,
                Duration::from_millis(100),
                Duration::from_secs(8),
            );
            Incident::Rollback {
                snapshot_at: at.saturating_sub(back),
                at,
            }
        } else {
            Incident::None
        }
    }
}

/// The category as a deployment started from its durable record has it: restored at
/// generation 1 with ceiling 0 (no ID handed out yet), then its first ceiling raised, durable
/// first.
pub async fn setup(
    world: &World,
    service: &IdGeneratorService,
    category: &IdCategory,
    bounds: IdRange,
    layout: Layout,
) -> Result<(), String> {
    world.lock().wipe.record = zooid_record(0, 1);
    service
        .restore_category_in(category, bounds, 0, 1, layout)
        .await
        .map_err(|e| format!("setup: restore failed: {e}"))?;
    let first = STEP.min(bounds.end());
    durable(world, first);
    service
        .raise_ceiling(category, first)
        .await
        .map_err(|e| format!("setup: first raise failed: {e}"))?;
    Ok(())
}

fn zooid_record(ceiling: i64, generation: u64) -> crate::world::wipe::Record {
    crate::world::wipe::Record {
        ceiling,
        generation,
    }
}

/// The durable write of a raise: the record's ceiling goes up to `ceiling` (never down).
fn durable(world: &World, ceiling: i64) {
    let mut state = world.lock();
    if state.wipe.record.ceiling < ceiling {
        state.wipe.record.ceiling = ceiling;
        state.log(format!("keeper: durable ceiling {ceiling}"));
    }
}

/// The keeper: every second, raises the ceiling by [`STEP`] (durable first) when the headroom
/// is low; once `stop` is set, raises it to the category's last ID (durable first) and returns.
pub async fn keeper(
    world: World,
    category: IdCategory,
    last: i64,
    options: ServiceOptions,
    stop: Arc<AtomicBool>,
) {
    let zk: Zk = SimSession::open(&world, KEEPER_CLIENT, 0);
    let service = IdGeneratorService::on_zookeeper(zk, options);
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        if !stopping {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        let info = match service.pool_info(&category).await {
            Ok(info) => info,
            Err(err) => {
                world.lock().log(format!("keeper: read: {}", err.kind()));
                if stopping {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                continue;
            }
        };
        let Some(ceiling) = info.ceiling else {
            continue;
        };
        if ceiling >= last {
            if stopping {
                return;
            }
            continue;
        }
        if !stopping && info.headroom >= LOW_WATER {
            continue;
        }
        let target = if stopping {
            last
        } else {
            (ceiling + STEP).min(last)
        };
        durable(&world, target);
        let raised = service.raise_ceiling(&category, target).await;
        world.lock().log(format!(
            "keeper: raise {ceiling} -> {target}: {:?}",
            raised.as_ref().map_err(|e| e.kind())
        ));
        if stopping && raised.is_err() {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

/// Runs `incident`, and in half the seeds that have one a second of the same kind 1 to 4 s
/// after the servers opened again (a pool restored shortly before: low versions, as in
/// tests/zookeeper/incarnation.rs).
#[allow(clippy::too_many_arguments)]
pub async fn incident(
    shared: Arc<Shared>,
    incident: Incident,
    bounds: IdRange,
    layout: Layout,
    counter: Option<&'static str>,
    options: ServiceOptions,
) {
    let world = shared.world.clone();
    let category = shared.ids.category.clone();
    let run = |incident| {
        one_incident(
            &shared,
            incident,
            &category,
            bounds,
            layout,
            counter,
            options.clone(),
        )
    };
    if matches!(incident, Incident::None) {
        return;
    }
    run(incident).await;
    let again = {
        let mut state = world.lock();
        let again = state.rng.random_bool(0.5);
        let at = between(
            &mut state.rng,
            Duration::from_secs(1),
            Duration::from_secs(4),
        );
        let back = between(&mut state.rng, Duration::from_millis(100), at);
        match (again, incident) {
            (false, _) | (_, Incident::None) => Incident::None,
            (true, Incident::Wipe { .. }) => Incident::Wipe { at },
            (true, Incident::Rollback { .. }) => Incident::Rollback {
                snapshot_at: at.saturating_sub(back),
                at,
            },
        }
    };
    if !matches!(again, Incident::None) {
        world.lock().log(format!("incident again: {again:?}"));
        run(again).await;
    }
}

/// Runs `incident`: the wipe or the rollback, then the recovery from the durable record as
/// `zooid restore` does it, while the servers are closed to every other client; then opens them.
#[allow(clippy::too_many_arguments)]
async fn one_incident(
    shared: &Shared,
    incident: Incident,
    category: &IdCategory,
    bounds: IdRange,
    layout: Layout,
    counter: Option<&'static str>,
    options: ServiceOptions,
) {
    let world = &shared.world;
    let start = tokio::time::Instant::now();
    let snapshot = match incident {
        Incident::None => return,
        Incident::Wipe { at } => {
            tokio::time::sleep_until(start + at).await;
            None
        }
        Incident::Rollback { snapshot_at, at } => {
            tokio::time::sleep_until(start + snapshot_at).await;
            let snapshot = world.lock().snapshot();
            world
                .lock()
                .log(format!("snapshot saved at zxid {}", snapshot.tree.zxid));
            tokio::time::sleep_until(start + at).await;
            Some(snapshot)
        }
    };
    // Half the incidents strike while a claim of fresh blocks is in doubt (sent and not
    // answered yet), if one comes within 3 s: the case the review found.
    let strike: bool = world.lock().rng.random_bool(0.5);
    if strike {
        for _ in 0..3000 {
            if world.lock().claim_in_flight() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    let client = {
        let mut state = world.lock();
        state.restart(snapshot);
        let client = OPERATOR_CLIENTS + state.wipe.incidents as usize;
        state.wipe.operators.insert(client);
        client
    };
    world.poke();
    // The counter keeps no durable record: its values may come back after a wipe or rollback.
    shared.counter_oracle().counted.clear();
    let zk: Zk = SimSession::open(world, client, 0);
    let service = IdGeneratorService::on_zookeeper(zk.clone(), options.clone());
    let mut restored = false;
    for _ in 0..40 {
        let record = world.lock().wipe.record;
        match service.pool_info(category).await {
            Ok(info)
                if info.ceiling.is_some_and(|c| c >= record.ceiling)
                    && info.epoch >= record.generation =>
            {
                // Not behind the record, yet maybe rolled back (the docs' rollback window):
                // the operator deletes the pool and restores it above the record.
                world.lock().delete_all(category.name());
                continue;
            }
            Ok(_) | Err(ZooidError::NotFound { .. }) => {}
            Err(err) => {
                world.lock().log(format!("operator: read: {}", err.kind()));
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        }
        // `zooid restore`: the record's generation bumped durably first, then the pool.
        let generation = record.generation + 1;
        world.lock().wipe.record.generation = generation;
        let done = service
            .restore_category_in(category, bounds, record.ceiling, generation, layout)
            .await;
        world.lock().log(format!(
            "operator: restore ceiling {} epoch {generation}: {:?}",
            record.ceiling,
            done.as_ref().map_err(|e| e.kind())
        ));
        if done.is_ok() {
            restored = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    if restored {
        // The keeper's first raise of the restored pool (it starts with no headroom), before
        // the servers open again: durable first.
        let ceiling = world.lock().wipe.record.ceiling;
        let target = (ceiling + STEP).min(bounds.end());
        durable(world, target);
        let raised = service.raise_ceiling(category, target).await;
        world.lock().log(format!(
            "operator: raise {ceiling} -> {target}: {:?}",
            raised.as_ref().map_err(|e| e.kind())
        ));
    }
    if let Some(Ok(counter)) = counter.map(|path| zooid::Counter::new(zk.clone(), path)) {
        let _ = counter.init(0).await;
    }
    {
        let ceiling = world.lock().wipe.record.ceiling;
        {
            let mut oracle = shared.ids_oracle();
            if !restored {
                oracle
                    .violations
                    .push("the operator could not restore the category".into());
            }
            // IDs at or below the record that no process holds are gone with the old state:
            // leaked, never reissued (a process still holding some may push them back).
            for id in bounds.start()..=ceiling.min(bounds.end()) {
                if !oracle.held.contains_key(&id) && !oracle.retired.contains(&id) {
                    oracle.doubt.insert(id);
                }
            }
        }
    }
    {
        let mut state = world.lock();
        state.wipe.operators.remove(&client);
        state.reopen();
    }
    world.poke();
    drop(service);
    zk.close().await;
}

/// The step check of the durable record: no ID handed out above the record's ceiling.
pub fn check_taken(world: &World, oracle: &mut Oracle, p: usize, ids: &[i64]) {
    if !enabled() {
        return;
    }
    let ceiling = world.lock().wipe.record.ceiling;
    let above: Vec<i64> = ids.iter().filter(|id| **id > ceiling).copied().collect();
    if !above.is_empty() {
        oracle.violations.push(format!(
            "p{p} was handed IDs above the durable record's ceiling {ceiling}: {above:?}"
        ));
    }
}

/// Whether the step checks of the pool should wait (a rolled-back pool not yet repaired may
/// list IDs processes hold as free; nobody takes from it meanwhile).
pub fn in_maintenance(world: &World) -> bool {
    world.lock().wipe.closed
}

/// The incident, driven by the run's own task: the restore's future is not `Send` (the library
/// runs it on the caller's task), so it is not spawned.
pub type Driven = Option<Pin<Box<dyn Future<Output = ()>>>>;

/// Sleeps `d` while driving `incident` (the chaos loop's tick).
pub async fn sleep_driving(d: Duration, incident: &mut Driven) {
    let until = tokio::time::Instant::now() + d;
    if let Some(f) = incident.as_mut() {
        tokio::select! {
            biased;
            _ = f.as_mut() => *incident = None,
            _ = tokio::time::sleep_until(until) => {}
        }
    }
    tokio::time::sleep_until(until).await;
}
