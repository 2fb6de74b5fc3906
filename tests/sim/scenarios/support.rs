//! What the scenarios share: a world with a category, the service's options, the runtime, the
//! drain that counts what is left.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use zooid::zk::{Zk, ZooKeeperExt};
use zooid::{IdCategory, IdGeneratorService, Layout, RetryPolicy, ServiceOptions, ZooidError};

use crate::session::Flaky;
use crate::world::{Faults, SimSession, World};

pub fn options(hole_backoff_from_start: u32) -> ServiceOptions {
    ServiceOptions {
        retry: RetryPolicy {
            max_attempts: 3,
            deadline: Duration::from_secs(2),
            ..RetryPolicy::default()
        },
        hole_backoff_from_start,
        ..ServiceOptions::default()
    }
}

/// A queue consumer's or producer's options: `who` in its locks, 3-second operations.
pub fn queue_options(who: &str) -> zooid::QueueOptions {
    zooid::QueueOptions {
        identity: Some(who.into()),
        op_timeout: Duration::from_secs(3),
        ..zooid::QueueOptions::default()
    }
}

/// A simulated world without random faults, a category of IDs `1..=last` in hole nodes of
/// `unit` created through an admin session (`creator`), and a session of process 1 wrapped in
/// [`Flaky`], its faults off: `fail` fails its reads of the holes' parent, `refuse_writes`
/// refuses its `multi`s and `create`s, `orphan_holes` and `orphan_receipts` fail its writes under the holes'
/// parent and under the receipts' parent (`zooid-returned`) as if the parent were gone.
pub struct Setup {
    pub category: IdCategory,
    pub creator: IdGeneratorService,
    pub flaky: Zk,
    pub fail: Arc<AtomicBool>,
    pub refuse_writes: Arc<AtomicBool>,
    pub orphan_holes: Arc<AtomicBool>,
    pub orphan_receipts: Arc<AtomicBool>,
}

pub async fn setup(seed: u64, path: &str, last: i64, unit: u64) -> Setup {
    let world = World::new(seed, Faults::all().none(), false);
    tokio::spawn(world.clone().drive());
    let admin: Zk = SimSession::open(&world, 0, 0);
    let category = IdCategory::new(path).unwrap();
    let creator = IdGeneratorService::on_zookeeper(admin, options(0));
    creator
        .create_category(
            &category,
            &zooid::CategorySpec::new(1, last).layout(Layout::HoleNodes { unit }),
        )
        .await
        .expect("create");
    let fail = Arc::new(AtomicBool::new(false));
    let mut flaky = Flaky::over(SimSession::open(&world, 1, 1));
    flaky.fail_reads = Some((zooid::format::holes_parent(category.name()), fail.clone()));
    let refuse_writes = flaky.refuse_writes.clone();
    let (orphan_holes, orphan_receipts) = (Arc::default(), Arc::default());
    flaky.orphan_under = vec![
        (
            zooid::format::holes_parent(category.name()),
            Arc::clone(&orphan_holes),
        ),
        (
            zooid::format::returned_parent(category.name()),
            Arc::clone(&orphan_receipts),
        ),
    ];
    // A push of one range is a plain `create`.
    flaky.orphan_creates_under = vec![(
        zooid::format::holes_parent(category.name()),
        Arc::clone(&orphan_holes),
    )];
    let flaky: Zk = Arc::new(flaky);
    Setup {
        category,
        creator,
        flaky,
        fail,
        refuse_writes,
        orphan_holes,
        orphan_receipts,
    }
}

/// Runs `scenario` on a one-thread runtime in paused time, with zooid's random numbers seeded.
pub fn run_scenario(scenario: impl std::future::Future<Output = ()>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    zooid::random::seed_thread(7);
    runtime.block_on(scenario);
}

/// Drains `category` through `service` in takes of `batch` until it is exhausted; returns how
/// many IDs it got.
pub async fn drain(service: &IdGeneratorService, category: &IdCategory, batch: u64) -> u64 {
    let mut drained = 0;
    loop {
        match service.take_ids(category, batch).await {
            Ok(set) => drained += set.ranges().iter().map(|r| r.len()).sum::<u64>(),
            Err(ZooidError::Exhausted { .. }) => return drained,
            Err(err) => panic!("drain: {err}"),
        }
    }
}

/// Whether `node` exists, as session `admin` sees it.
pub async fn exists(admin: &Zk, node: &str) -> bool {
    let found = admin.exists(admin.generation(), node).await;
    found.expect("exists").is_some()
}

/// The operator's client, the one that reaches the servers in the maintenance window.
pub const OPERATOR: usize = 50;

/// Wipes ZooKeeper (every data directory emptied, every session ended) and opens the maintenance
/// window: only the operator's session, returned, reaches the servers until [`reopen`].
pub fn wipe(world: &World) -> Zk {
    {
        let mut state = world.lock();
        state.restart(None);
        state.wipe.operators.insert(OPERATOR);
    }
    world.poke();
    SimSession::open(world, OPERATOR, OPERATOR)
}

/// Ends the maintenance window: the servers are open to every client again.
pub fn reopen(world: &World) {
    {
        let mut state = world.lock();
        state.wipe.operators.remove(&OPERATOR);
        state.reopen();
    }
    world.poke();
}
