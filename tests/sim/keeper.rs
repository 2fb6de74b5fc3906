//! The keeper and the operator under the simulation (tests/sim/README.md, "Wipe and
//! rollback"): the category's ceiling kept ahead of the takes by the real keeper loop
//! (`zooid::keeper::run`: its election, its tree watch, its raises made durable first and
//! written fenced, its repairs), two keeper processes with their own sessions, and at most one
//! incident per seed: a wipe of the ensemble or a rollback to an earlier snapshot, followed by
//! the documented recovery (`zooid restore`: the record's generation bumped durably, then
//! `IdGeneratorService::restore_category_in` with the record's ceiling and that epoch, which
//! creates a missing pool or repairs one behind the record; a rolled-back pool the record cannot
//! tell from a current one, which the docs' rollback window describes, is deleted first, as the
//! docs ask). The durable record is the keepers' `DurableStore::Dir`, a directory outside the
//! simulated ZooKeeper; the operator and the oracle read the record the keepers wrote there.

use std::collections::BTreeSet;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use tokio::sync::watch;
use zooid::durable::{DirRecords, DurableStore, Fence, Record};
use zooid::keeper::{KeeperOptions, Sizing};
use zooid::zk::Zk;
use zooid::{IdCategory, IdGeneratorService, IdRange, Layout, ServiceOptions, ZooidError};

use crate::oracle::ids::{InFlight, Oracle};
use crate::workload::Shared;
use crate::world::faults::between;
use crate::world::wipe::Durable;
use crate::world::{SimSession, World};

/// Operators' clients: one per incident, from here.
const OPERATOR_CLIENTS: usize = 1000;
/// The keepers' process numbers in the trace: keeper `k` is `p{PROCESS_BASE + k}`.
pub const PROCESS_BASE: usize = 90;
/// How many keepers run (each a process with its own session, in one election group).
pub const KEEPERS: usize = 2;
/// The keepers' reserve: a raise brings the headroom back to this many IDs...
const STEP: u64 = 16;
/// ...when it falls under this share of it (8 IDs).
const LOW_WATER: f64 = 0.5;
/// The root the keepers watch (the category is `/ids/sim`).
const ROOT: &str = "/ids";
/// The keepers' election group.
const GROUP: &str = "/zooid/keepers";

/// Whether the keepers, the durable record and the incidents run (`ZOOID_SIM_WIPES=0`: the
/// category is created without a ceiling, as before, and nothing is wiped).
pub fn enabled() -> bool {
    std::env::var("ZOOID_SIM_WIPES").map_or(true, |v| v.trim() != "0")
}

/// The durable record's directory of one run, removed when the run ends.
pub struct RecordDir(PathBuf);

impl RecordDir {
    /// A fresh directory under the system's temporary directory.
    pub fn new(seed: u64) -> Result<Self, String> {
        static RUNS: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "zooid-sim-{}-{seed}-{}",
            std::process::id(),
            RUNS.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Self(path))
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for RecordDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The durable record of `world` (set up by [`setup`]).
fn durable_of(world: &World) -> Option<Durable> {
    world.lock().wipe.durable.clone()
}

/// The keeper processes' common part: where their records live, their stop signal, their
/// sizing.
pub struct Keepers {
    dir: PathBuf,
    /// One stop signal per keeper process, told in the order they started: two tasks waiting
    /// on one tokio watch channel wake in an order drawn from the runtime's own RNG, which a
    /// seed does not set.
    shutdown: std::sync::Mutex<(bool, Vec<watch::Sender<bool>>)>,
    sizing: Sizing,
}

impl Keepers {
    /// The keepers of the run: a reserve of [`STEP`] IDs, raised when the headroom falls under
    /// [`LOW_WATER`] of it; the whole rest of the category may be reserved (`left_share` 1),
    /// so that the steps stay [`STEP`] up to the last ID.
    pub fn new(dir: &std::path::Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            shutdown: std::sync::Mutex::default(),
            sizing: Sizing {
                floor: STEP,
                cap: STEP,
                low_water: LOW_WATER,
                left_share: 1.0,
                ..Sizing::default()
            },
        }
    }

    /// Tells every keeper to stop (`run`'s shutdown: it resigns and returns).
    pub fn stop(&self) {
        let mut shutdown = self.shutdown.lock().unwrap_or_else(|p| p.into_inner());
        shutdown.0 = true;
        for tx in &shutdown.1 {
            tx.send_replace(true);
        }
    }

    /// Keeper `k`'s process on `zk`: `zooid::keeper::run` until stopped; when it returns an
    /// error, it is run again a second later (a supervisor restarting the keeper).
    pub fn process(
        &self,
        shared: Arc<Shared>,
        k: usize,
        zk: Zk,
    ) -> impl Future<Output = ()> + Send + 'static {
        let dir = self.dir.clone();
        let shutdown = {
            let mut shutdown = self.shutdown.lock().unwrap_or_else(|p| p.into_inner());
            let (tx, rx) = watch::channel(shutdown.0);
            shutdown.1.push(tx);
            rx
        };
        let sizing = self.sizing;
        let name = format!("k{k}");
        async move {
            loop {
                if *shutdown.borrow() {
                    return;
                }
                // The keepers' directory I/O on the runtime's one thread (`DirRecords::inline`):
                // on tokio's blocking pool it would end at a wall-clock instant, and the seed
                // would not replay.
                let durable = match DirRecords::open(&dir) {
                    Ok(d) => DurableStore::Dir(d.inline()),
                    Err(err) => {
                        shared.log(format!("{name}: durable store: {err}"));
                        shared.ids_oracle().violations.push(format!(
                            "keeper {name} cannot open its durable store: {err}"
                        ));
                        return;
                    }
                };
                let mut options = KeeperOptions::new(ROOT, &name);
                options.group = GROUP.to_string();
                options.sizing = sizing;
                options.tick = Duration::from_secs(1);
                options.rescan = Duration::from_secs(10);
                let (reporter, label) = (shared.clone(), name.clone());
                options.report = Arc::new(move |line| report(&reporter, &label, line));
                let result =
                    zooid::keeper::run(zk.clone(), durable, options, shutdown.clone()).await;
                shared.log(format!(
                    "{name}: keeper returned {:?}",
                    result.as_ref().map_err(|e| e.to_string())
                ));
                if *shutdown.borrow() {
                    return;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// A keeper's report line, into the trace. A repair removes the free IDs at or below the
/// record's ceiling from the pool (documented: a wipe's or a crash's IDs are leaked, never
/// reissued): those no process holds are leaked, as the operator's restore leaks them.
fn report(shared: &Shared, name: &str, line: &str) {
    shared.log(format!("{name}: {line}"));
    // A repair names the IDs its write removes before sending it (it may apply whatever
    // follows: its reply lost, the keeper crashed): they count as leaked from then on.
    if !line.starts_with("REPAIR ") && !line.starts_with("repair pending ") {
        return;
    }
    let recorded = line
        .split_once("free IDs at or below ")
        .and_then(|(_, rest)| rest.split(',').next())
        .and_then(|n| n.trim().parse::<i64>().ok());
    let mut oracle = shared.ids_oracle();
    match recorded {
        Some(ceiling) => leak_unheld(&mut oracle, shared.ids.bounds(), ceiling),
        None => oracle.violations.push(format!(
            "a repair report the simulation cannot read: {line}"
        )),
    }
}

/// IDs at or below `ceiling` that no process holds are leaked (they may still come back as
/// free: a process holding one may push it back; a doubt never hides a duplicate), and so are
/// those of a push still in flight: it may have applied before the repair removed them.
fn leak_unheld(oracle: &mut Oracle, bounds: IdRange, ceiling: i64) {
    let pushing: BTreeSet<i64> = oracle
        .in_flight
        .values()
        .filter_map(|op| match op {
            InFlight::Push(ids) => Some(ids.iter().copied()),
            InFlight::Take(_) => None,
        })
        .flatten()
        .collect();
    for id in bounds.start()..=ceiling.min(bounds.end()) {
        let unheld = !oracle.held.contains_key(&id) && !oracle.retired.contains(&id);
        if unheld || pushing.contains(&id) {
            oracle.doubt.insert(id);
        }
    }
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

/// The category as a deployment started from its durable record has it: the record written
/// (ceiling 0, generation 1) in `dir`, the category restored from it at generation 1 with
/// ceiling 0 (no ID handed out yet), then its first ceiling raised, durable first (the keepers
/// keep it ahead from there).
pub async fn setup(
    world: &World,
    dir: &std::path::Path,
    service: &IdGeneratorService,
    category: &IdCategory,
    bounds: IdRange,
    layout: Layout,
) -> Result<(), String> {
    let records = DirRecords::open(dir).map_err(|e| format!("setup: durable store: {e}"))?;
    let fence = Fence {
        generation: 1,
        token: 0,
    };
    let record = |ceiling| Record::new(category.name(), bounds, ceiling, fence).with_layout(layout);
    records
        .write(&record(0))
        .map_err(|e| format!("setup: durable record: {e}"))?;
    world.lock().wipe.durable = Some(Durable {
        dir: records.clone(),
        category: category.name().to_string(),
    });
    service
        .restore_category_in(category, bounds, 0, 1, layout)
        .await
        .map_err(|e| format!("setup: restore failed: {e}"))?;
    let first = (STEP as i64).min(bounds.end());
    records
        .write(&record(first))
        .map_err(|e| format!("setup: durable record: {e}"))?;
    world
        .lock()
        .log(format!("setup: durable ceiling {first}, then the pool"));
    service
        .raise_ceiling(category, first)
        .await
        .map_err(|e| format!("setup: first raise failed: {e}"))?;
    Ok(())
}

/// The quiet phase, the keepers stopped: the operator raises the ceiling to the last ID, the
/// durable record first (with the record's own fence), then the pool (`raise_ceiling`, the
/// operator's way). The keepers cannot be asked for it: a reserve is at most what is left
/// above the high-water mark, and the headroom may cover that already.
pub async fn raise_to_last(shared: &Arc<Shared>, client: usize, category: &IdCategory, last: i64) {
    let world = &shared.world;
    let Some(durable) = durable_of(world) else {
        return;
    };
    let zk: Zk = SimSession::open(world, client, PROCESS_BASE);
    let service = IdGeneratorService::on_zookeeper(zk.clone(), crate::workload::options());
    let mut raised = false;
    for _ in 0..600 {
        let Some(record) = durable.read() else {
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        };
        if record.ceiling < last {
            let new = Record::new(&record.category, record.bounds, last, record.fence)
                .with_layout(record.layout());
            if let Err(err) = durable.dir.write(&new) {
                world
                    .lock()
                    .log(format!("operator: durable record: {}", err.kind()));
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            world
                .lock()
                .log(format!("operator: durable ceiling {last}"));
        }
        let done = service.raise_ceiling(category, last).await;
        world.lock().log(format!(
            "operator: raise to {last}: {:?}",
            done.as_ref().map_err(|e| e.kind())
        ));
        if done.is_ok_and(|c| c >= last) {
            raised = true;
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    drop(service);
    zk.close().await;
    if !raised {
        shared
            .ids_oracle()
            .violations
            .push("the operator could not raise the ceiling to the last ID within 600 s".into());
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
    {
        let mut oracle = shared.counter_oracle();
        oracle.counted.clear();
        oracle.reset = true;
    }
    let zk: Zk = SimSession::open(world, client, 0);
    let service = IdGeneratorService::on_zookeeper(zk.clone(), options.clone());
    let mut restored = false;
    let Some(durable) = durable_of(world) else {
        shared
            .ids_oracle()
            .violations
            .push("an incident without a durable record".into());
        return;
    };
    let mut ceiling = 0;
    for _ in 0..40 {
        let Some(record) = durable.read() else {
            world
                .lock()
                .log("operator: the durable record cannot be read");
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        match service.pool_info(category).await {
            Ok(info)
                if info.ceiling.is_some_and(|c| c >= record.ceiling)
                    && info.epoch >= record.fence.generation =>
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
        // `zooid restore`: the record's generation bumped durably first (refused if a keeper
        // wrote a later record meanwhile: read it again), then the pool.
        let bumped = record.for_new_history();
        let generation = bumped.fence.generation;
        if let Err(err) = durable.dir.write(&bumped) {
            world
                .lock()
                .log(format!("operator: durable record: {}", err.kind()));
            continue;
        }
        world.lock().log(format!(
            "operator: durable record: ceiling {} generation {generation}",
            record.ceiling
        ));
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
            ceiling = record.ceiling;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The keepers' first raise of the restored pool (it starts with no headroom): the operator
    // lets the keepers in first and waits (up to 30 s) for it, then opens the servers to every
    // client, whose takes would otherwise wait for that raise.
    if restored {
        keepers_first(world, category, ceiling).await;
    }
    if let Some(Ok(counter)) = counter.map(|path| zooid::Counter::new(zk.clone(), path)) {
        let _ = counter.init(0).await;
    }
    {
        let mut oracle = shared.ids_oracle();
        if !restored {
            oracle
                .violations
                .push("the operator could not restore the category".into());
        }
        // IDs at or below the record that no process holds are gone with the old state:
        // leaked, never reissued (a process still holding some may push them back).
        leak_unheld(&mut oracle, bounds, ceiling);
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

/// Lets the keepers' clients through the maintenance window until the pool's ceiling is above
/// `restored` (or 30 s passed).
async fn keepers_first(world: &World, category: &IdCategory, restored: i64) {
    let keepers = PROCESS_BASE + 1..=PROCESS_BASE + KEEPERS;
    let admitted: Vec<usize> = {
        let mut state = world.lock();
        let clients: Vec<usize> = state
            .clients
            .iter()
            .filter(|(_, cl)| keepers.contains(&cl.process))
            .map(|(c, _)| *c)
            .collect();
        state.wipe.operators.extend(clients.iter().copied());
        state.log(format!(
            "operator: the keepers' clients {clients:?} let in first"
        ));
        clients
    };
    world.poke();
    for _ in 0..300 {
        let ceiling = {
            let state = world.lock();
            state
                .tree
                .get(category.name())
                .and_then(|n| zooid::format::Pool::parse(category.name(), &n.data).ok())
                .and_then(|pool| pool.ceiling())
        };
        if ceiling.is_some_and(|c| c > restored) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut state = world.lock();
    for c in admitted {
        state.wipe.operators.remove(&c);
    }
}

/// The step check of the durable record: no ID handed out above the record's ceiling.
pub fn check_taken(world: &World, oracle: &mut Oracle, p: usize, ids: &[i64]) {
    if !enabled() {
        return;
    }
    let Some(durable) = durable_of(world) else {
        return;
    };
    let ceiling = durable.ceiling();
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
