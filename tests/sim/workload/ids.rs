//! The ID service (`IdGeneratorService::on_zookeeper`) on both layouts: every process takes and
//! pushes IDs; at the end a fresh process drains every free ID (oracle/ids.rs).

use std::time::Duration;

use rand::Rng;
use zooid::zk::Zk;
use zooid::{IdCategory, IdGeneratorService, IdRange, IdSet, Layout};

use super::{options, pause, Shared};
use crate::oracle::ids::{ids_of, InFlight};
use crate::world::World;

/// The category of the run and its layout.
pub struct Setup {
    pub category: IdCategory,
    pub single: bool,
    /// A single-node category that the processes migrate to hole nodes (`migrate_category`)
    /// while they take and push.
    pub migrates: bool,
    pub last_id: i64,
}

impl Setup {
    /// `layouts`: `single` (every seed single-node), `format4`, `migrate` (every seed
    /// single-node, migrated), or `both` (even seeds single-node, odd ones format 4; of the
    /// single-node ones, every other one migrated).
    pub fn new(seed: u64, layouts: &str, last_id: i64) -> Self {
        let (single, migrates) = match layouts {
            "format4" => (false, false),
            "migrate" => (true, true),
            "both" => (seed.is_multiple_of(2), seed.is_multiple_of(4)),
            _ => (true, false),
        };
        Self {
            category: IdCategory::new("/ids/sim").expect("valid"),
            single,
            migrates,
            last_id,
        }
    }

    pub fn layout_name(&self) -> &'static str {
        if self.migrates {
            "single-node, migrated"
        } else if self.single {
            "single-node"
        } else {
            "format-4"
        }
    }

    /// IDs per block (1 for a single-node pool that stays one).
    pub fn unit(&self) -> u64 {
        if self.single && !self.migrates {
            1
        } else {
            4
        }
    }

    pub fn layout(&self) -> Layout {
        if self.single {
            Layout::SingleNode
        } else {
            Self::HOLES
        }
    }

    /// The layout of a format-4 category, and of a single-node one's migration.
    const HOLES: Layout = Layout::HoleNodes { unit: 4 };

    /// The category's IDs: 1 to the last.
    pub fn bounds(&self) -> IdRange {
        IdRange::new(1, self.last_id).expect("valid bounds")
    }

    /// Creates the category (before any fault); with the keepers (keeper.rs), from its
    /// durable record in `records`.
    pub async fn create(
        &self,
        world: &World,
        admin: &Zk,
        records: Option<&std::path::Path>,
    ) -> Result<(), String> {
        let service = IdGeneratorService::on_zookeeper(admin.clone(), options());
        let layout = self.layout();
        if let Some(dir) = records {
            return crate::keeper::setup(
                world,
                dir,
                &service,
                &self.category,
                self.bounds(),
                layout,
            )
            .await;
        }
        service
            .create_category(
                &self.category,
                &zooid::CategorySpec::new(1, self.last_id).layout(layout),
            )
            .await
            .map_err(|err| format!("setup: create failed: {err}"))
    }
}

/// One process's takes and pushes, until told to stop. Now and then its caller gives up on a
/// take or a push before it ends (an async caller's own timeout): the operation goes on without
/// it (src/alloc/service/to_end.rs), and what it took or was pushing must end up free or
/// counted leaked.
pub async fn process(shared: &Shared, p: usize, zk: Zk) {
    let service = IdGeneratorService::on_zookeeper(zk, super::options_for(p));
    let category = shared.ids.category.clone();
    let mut mine: Vec<i64> = Vec::new();
    // The service's `ids_leaked` already told the oracle.
    let mut accounted = 0;
    while !shared.stopping() {
        let (migrate, push, n, give_up) = {
            let mut state = shared.world.lock();
            let migrate = shared.ids.migrates && state.rng.random_bool(0.02);
            let push = !mine.is_empty() && state.rng.random_bool(0.4);
            let n = state.rng.random_range(1..=4u64);
            let give_up = state
                .rng
                .random_bool(GIVE_UP)
                .then(|| Duration::from_millis(state.rng.random_range(0..200)));
            (migrate, push, n, give_up)
        };
        if migrate {
            // Hands out nothing: the free IDs of the single node become holes and fresh blocks.
            let result = service.migrate_category(&category, Setup::HOLES).await;
            shared.log(format!(
                "p{p} migrate -> {:?}",
                result.as_ref().map_err(|e| e.kind())
            ));
        } else if push {
            let k = mine.len().min(3);
            let ids: Vec<i64> = mine.drain(..k).collect();
            let ranges: Vec<_> = ids.iter().map(|id| zooid::IdRange::single(*id)).collect();
            let mut set = IdSet::new(category.clone(), ranges);
            shared
                .ids_oracle()
                .in_flight
                .insert(p, InFlight::Push(ids.clone()));
            let result = given_up_after(give_up, service.push_ids(&mut set)).await;
            let leaked = new_leaks(&service, &mut accounted);
            let Some(result) = result else {
                gave_up(shared, p, format!("push {ids:?}"), leaked);
                continue;
            };
            shared.log(format!(
                "p{p} push {ids:?} -> {:?}",
                result.as_ref().map_err(|e| e.kind())
            ));
            let mut oracle = shared.ids_oracle();
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
            shared.ids_oracle().in_flight.insert(p, InFlight::Take(n));
            let result = given_up_after(give_up, service.take_ids(&category, n)).await;
            let leaked = new_leaks(&service, &mut accounted);
            let Some(result) = result else {
                gave_up(shared, p, format!("take {n}"), leaked);
                continue;
            };
            let ids = result.as_ref().map(|set| ids_of(&set.ranges())).ok();
            shared.log(format!(
                "p{p} take {n} -> {:?}",
                result.as_ref().map(|_| &ids).map_err(|e| e.kind())
            ));
            let mut oracle = shared.ids_oracle();
            oracle.in_flight.remove(&p);
            oracle.leaked(leaked, result.as_ref().err());
            match &result {
                Ok(_) => {
                    let ids = ids.unwrap_or_default();
                    oracle.taken(p, &ids);
                    // Nothing above the durable record (keeper.rs).
                    crate::keeper::check_taken(&shared.world, &mut oracle, p, &ids);
                    mine.extend(ids);
                }
                Err(err) => oracle.failed(p, err, &[]),
            }
        }
        shared.check_step(p);
        tokio::time::sleep(pause(shared, 40)).await;
    }
    // What operations given up by their caller still do ends in the quiet phase: their IDs
    // are free then, or counted leaked.
    if shared.ids_oracle().given_up.contains_key(&p) {
        while service.stats().abandoned_running > 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let leaked = new_leaks(&service, &mut accounted);
        shared.log(format!("p{p} settled: {leaked} more IDs counted leaked"));
        let mut oracle = shared.ids_oracle();
        oracle.leaked(leaked, None);
        oracle.given_up.remove(&p);
    }
}

/// How often a caller gives up on its take or push.
const GIVE_UP: f64 = 0.08;

/// Process `p`'s caller gave up on `what`; `leaked`: what its service counted leaked since.
fn gave_up(shared: &Shared, p: usize, what: String, leaked: u64) {
    shared.log(format!("p{p} {what} -> given up by its caller"));
    {
        let mut oracle = shared.ids_oracle();
        oracle.gave_up(p);
        oracle.leaked(leaked, None);
    }
    shared.check_step(p);
}

/// `operation`, given up after `after` when set (the caller's own timeout): `None` then.
async fn given_up_after<T>(
    after: Option<Duration>,
    operation: impl std::future::Future<Output = T>,
) -> Option<T> {
    match after {
        Some(after) => tokio::time::timeout(after, operation).await.ok(),
        None => Some(operation.await),
    }
}

/// The IDs `service` counted leaked since `accounted` (which moves on).
fn new_leaks(service: &IdGeneratorService, accounted: &mut u64) -> u64 {
    let now = service.stats().ids_leaked;
    let new = now - *accounted;
    *accounted = now;
    new
}

/// The step check: no held ID is free (in the single node's free list, or in a hole node).
pub fn check_step(shared: &Shared) {
    // A rolled-back pool is not checked before its repair (keeper.rs).
    if crate::keeper::in_maintenance(&shared.world) {
        return;
    }
    let category = &shared.ids.category;
    if in_holes(shared) {
        let holes: Vec<zooid::IdRange> = {
            let state = shared.world.lock();
            let parent = zooid::format::holes_parent(category.name());
            state.tree.get(&parent).map_or(Vec::new(), |n| {
                n.children
                    .iter()
                    .filter_map(|name| zooid::format::hole_of(name))
                    .collect()
            })
        };
        shared.ids_oracle().check_holes(&holes);
        return;
    }
    if let Some(pool) = pool_now(shared) {
        shared.ids_oracle().check_free(pool.free());
    }
}

/// The category's pool node as the world holds it now (`None`: none, or not a pool).
fn pool_now(shared: &Shared) -> Option<zooid::format::Pool> {
    let path = shared.ids.category.name();
    let data = shared.world.lock().tree.get(path).map(|n| n.data.clone())?;
    zooid::format::Pool::parse(path, &data).ok()
}

/// Whether the category's pool node is in format 4 (hole nodes) now: from the start, or
/// migrated.
fn in_holes(shared: &Shared) -> bool {
    pool_now(shared).is_some_and(|pool| pool.blocks().is_some())
}

/// After the quiet phase: a fresh process (its session `drain`) takes every free ID. Format 4
/// leaves a young hole to its pusher for a while: when IDs are missing after a first drain,
/// wait that long and drain again. Then every ID must be accounted for.
pub async fn finish(shared: &Shared, drain: Zk) {
    let setup = &shared.ids;
    let drainer = IdGeneratorService::on_zookeeper(drain, options());
    for pass in 0..2 {
        if pass == 1 {
            if !in_holes(shared) || shared.ids_oracle().missing(1, setup.last_id) == 0 {
                break;
            }
            tokio::time::sleep(zooid::LEFT_TO_PUSHER_FOR + Duration::from_secs(5)).await;
        }
        for _ in 0..(setup.last_id as usize) {
            match drainer.take_ids(&setup.category, 50).await {
                Ok(set) => {
                    let ids = ids_of(&set.ranges());
                    shared.log(format!("drain -> {} IDs", ids.len()));
                    let mut oracle = shared.ids_oracle();
                    oracle.taken(99, &ids);
                    // Nothing above the durable record (keeper.rs).
                    crate::keeper::check_taken(&shared.world, &mut oracle, 99, &ids);
                }
                Err(zooid::ZooidError::Exhausted { .. }) => break,
                Err(err) => {
                    shared
                        .ids_oracle()
                        .violations
                        .push(format!("drain failed in the quiet phase: {err}"));
                    break;
                }
            }
        }
    }
    shared.ids_oracle().check_conserved(1, setup.last_id);
}

pub fn summary(shared: &Shared) -> String {
    let o = shared.ids_oracle();
    format!(
        "{} takes, {} pushes, {} unknown, {} timeouts, {} given up, {} doubt, bound {}",
        o.takes,
        o.pushes,
        o.unknown,
        o.timeouts,
        o.abandoned,
        o.doubt.len(),
        o.anonymous
    )
}
