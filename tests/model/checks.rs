//! The properties checked, the exhaustive run, and how a discovered path is printed.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Instant;

use stateright::{Checker, Expectation, HasDiscoveries, Model, Property};

use crate::ids::{self, Ids};
use crate::keeper::Phase;
use crate::model::{Action, Config, Net, Op, State, ZooidModel};

/// No take hands out an ID some process holds.
pub const NO_DUPLICATE: &str = "no ID handed out twice";
/// No ID a process holds is free in ZooKeeper (it would be handed out again).
pub const HELD_NOT_FREE: &str = "no handed-out ID is free";
/// Conservation: nothing vanishes silently.
pub const ACCOUNTED: &str = "every ID is handed out, free, or reported leaked";
/// The durable reservation's guarantee.
pub const BELOW_RECORD: &str = "every handed-out ID is at or below the durable record";
/// Sanity: the model reaches what it is for.
pub const TAKE_AFTER_RESTORE: &str = "a take completes after a wipe and a restore";
pub const REPAIRED: &str = "a keeper repair completes";
pub const MOVED: &str = "a generation moves on";
pub const RESOLVED: &str = "a lost reply is resolved as applied";
pub const LEAKED: &str = "IDs are reported leaked";
pub const LATE: &str = "a request applies after its author gave up";

/// The invariants (`always`), then the reachability checks (`sometimes`).
pub fn properties() -> Vec<Property<ZooidModel>> {
    vec![
        Property::always(NO_DUPLICATE, |_, st: &State| st.ghost.duplicate == 0),
        Property::always(HELD_NOT_FREE, |m: &ZooidModel, st: &State| {
            st.zk
                .as_ref()
                .is_none_or(|zk| held(st) & zk.free_ids(m.cfg.last) == 0)
        }),
        Property::always(ACCOUNTED, |m: &ZooidModel, st: &State| {
            st.zk.as_ref().is_none_or(|zk| {
                let known = zk.free_ids(m.cfg.last) | held(st) | busy(st) | st.ghost.leaked;
                ids::span(1, m.cfg.last) & !known == 0
            })
        }),
        Property::always(BELOW_RECORD, |_, st: &State| {
            st.record
                .is_none_or(|r| held(st) & !ids::span(1, r.ceiling) == 0)
        }),
        Property::sometimes(TAKE_AFTER_RESTORE, |_, st: &State| {
            st.ghost.taken_after_restore
        }),
        Property::sometimes(REPAIRED, |_, st: &State| st.ghost.repaired),
        Property::sometimes(MOVED, |_, st: &State| st.ghost.moved),
        Property::sometimes(RESOLVED, |_, st: &State| st.ghost.resolved),
        Property::sometimes(LEAKED, |_, st: &State| st.ghost.leaked != 0),
        Property::sometimes(LATE, |_, st: &State| st.ghost.late),
    ]
}

/// The invariants, for the tests that expect none of them to fail.
pub const INVARIANTS: [&str; 4] = [NO_DUPLICATE, HELD_NOT_FREE, ACCOUNTED, BELOW_RECORD];

/// Every ID some process holds.
pub fn held(st: &State) -> Ids {
    st.procs.iter().fold(0, |s, p| s | p.held)
}

fn busy(st: &State) -> Ids {
    st.procs.iter().fold(0, |s, p| s | p.busy)
}

/// What one exhaustive run found.
pub struct Run {
    pub name: &'static str,
    /// States generated (with repeats) and distinct states.
    pub states: usize,
    pub unique: usize,
    pub depth: usize,
    pub seconds: f64,
    /// A path to each property's discovery (a counterexample for an invariant, an example for
    /// a `sometimes`), ending at the first state on it that is one: each step is the state it
    /// starts from and the action taken.
    pub found: BTreeMap<&'static str, Vec<(State, Option<Action>)>>,
}

/// Checks `cfg` breadth first on `threads` threads, until `finish` holds or every reachable
/// state was seen; prints the figures. On one thread the paths found are the shortest.
pub fn check(cfg: Config, finish: HasDiscoveries, threads: usize) -> Run {
    let name = cfg.name;
    let started = Instant::now();
    let model = ZooidModel { cfg: cfg.clone() };
    let checker = ZooidModel { cfg }
        .checker()
        .threads(threads)
        .finish_when(finish)
        .spawn_bfs()
        .join();
    let run = Run {
        name,
        states: checker.state_count(),
        unique: checker.unique_state_count(),
        depth: checker.max_depth(),
        seconds: started.elapsed().as_secs_f64(),
        found: checker
            .discoveries()
            .into_iter()
            .map(|(name, path)| (name, first_discovery(&model, name, path.into_vec())))
            .collect(),
    };
    println!(
        "model {name}: {} distinct states ({} generated), depth {}, {:.1} s; discovered: {:?}",
        run.unique,
        run.states,
        run.depth,
        run.seconds,
        run.found.keys().collect::<Vec<_>>()
    );
    run
}

/// `steps` cut after the first state that is a discovery of property `name` (stateright 0.31
/// keeps the *last* discovered path of a property, which may run past the first).
fn first_discovery(
    model: &ZooidModel,
    name: &str,
    mut steps: Vec<(State, Option<Action>)>,
) -> Vec<(State, Option<Action>)> {
    let properties = model.properties();
    let Some(property) = properties.iter().find(|p| p.name == name) else {
        return steps;
    };
    let discovered = |st: &State| match property.expectation {
        Expectation::Always => !(property.condition)(model, st),
        _ => (property.condition)(model, st),
    };
    if let Some(first) = steps.iter().position(|(st, _)| discovered(st)) {
        steps.truncate(first + 1);
        steps[first].1 = None;
    }
    steps
}

/// A discovered path, one line per step with the state it led to.
pub fn trace(steps: &[(State, Option<Action>)]) -> String {
    let mut out = String::new();
    if let Some((first, _)) = steps.first() {
        let _ = writeln!(out, "   start: {}", summary(first));
    }
    for (i, pair) in steps.windows(2).enumerate() {
        let (_, Some(action)) = &pair[0] else {
            continue;
        };
        let _ = writeln!(
            out,
            "{:>3}. {:<34} => {}",
            i + 1,
            describe(*action),
            summary(&pair[1].0)
        );
    }
    out
}

fn describe(action: Action) -> String {
    let net = |n: Net| match n {
        Net::Reply => "",
        Net::ReplyLost => " (reply lost)",
        Net::Delayed => " (request delayed)",
    };
    match action {
        Action::Take(p, n) => format!("p{p} take{}", net(n)),
        Action::Push(p, n) => format!("p{p} push{}", net(n)),
        Action::Resolve(p) => format!("p{p} resolves its lost reply"),
        Action::GiveUp(p) => format!("p{p} gives up (OutcomeUnknown)"),
        Action::Land(p) => format!("p{p}'s late request lands"),
        Action::Expire(p) => format!("p{p}'s session expires"),
        Action::Seal(p) => format!("p{p} seals the generation"),
        Action::Move(p) => format!("p{p} moves the generation on"),
        Action::KeeperEval => "keeper reads the pool".into(),
        Action::KeeperSeal => "keeper seals, reads the frontier".into(),
        Action::KeeperDurable => "keeper writes the durable record".into(),
        Action::KeeperReread => "keeper reads the frontier again".into(),
        Action::KeeperPool => "keeper writes the pool (fenced)".into(),
        Action::KeeperCrash => "keeper crashes".into(),
        Action::Wipe => "ZooKeeper loses all its data".into(),
        Action::Restore => "zooid restore".into(),
    }
}

/// One line: the pool, the record, the keeper, the processes.
pub fn summary(st: &State) -> String {
    let mut s = match &st.zk {
        None => "pool gone".to_string(),
        Some(zk) => {
            let mut s = format!(
                "pool v{} e{} ceiling {} free {}",
                zk.version,
                zk.epoch,
                zk.ceiling.map_or("-".into(), |c| c.to_string()),
                ids::show(zk.free)
            );
            if let Some(b) = &zk.blocks {
                let _ = write!(
                    s,
                    " holes {} gen {} base {} frontier {}{}",
                    ids::show(b.holes),
                    b.generation,
                    b.base,
                    b.frontier(),
                    if b.current().sealed { " sealed" } else { "" }
                );
            }
            s
        }
    };
    match st.record {
        Some(r) => {
            let _ = write!(s, " | record {} g{}", r.ceiling, r.generation);
        }
        None => s.push_str(" | no record"),
    }
    let keeper = match st.keeper.phase {
        Phase::Idle => None,
        Phase::Seal(p) => Some(format!("to seal, v{}", p.version)),
        Phase::Durable(p) => Some(format!("to record {}, v{}", p.ceiling, p.version)),
        Phase::Reread(p) => Some(format!("to re-read, v{}", p.version)),
        Phase::Pool(p) => Some(format!("to write ceiling {} at v{}", p.ceiling, p.version)),
    };
    if let Some(k) = keeper {
        let _ = write!(s, " | keeper {k}");
    }
    for (p, proc) in st.procs.iter().enumerate() {
        let _ = write!(s, " | p{p} holds {}", ids::show(proc.held));
        match proc.op {
            Op::Idle => {}
            Op::Lost(_) => s.push_str(" (resolving)"),
            op => {
                let _ = write!(s, " ({})", op_name(op));
            }
        }
    }
    if st.ghost.duplicate != 0 {
        let _ = write!(s, " | HANDED OUT TWICE {}", ids::show(st.ghost.duplicate));
    }
    if st.ghost.leaked != 0 {
        let _ = write!(s, " | leaked {}", ids::show(st.ghost.leaked));
    }
    s
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Idle => "idle",
        Op::Take => "taking",
        Op::Push(_) => "pushing",
        Op::GiveBack(_) => "giving back",
        Op::Seal { .. } => "to seal",
        Op::Move { .. } => "to move",
        Op::Lost(_) => "resolving",
    }
}
