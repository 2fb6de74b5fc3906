//! An executable model of zooid's allocation protocol, checked exhaustively at small sizes with
//! `stateright` (issue 19, "A model of the protocol"; docs/DESIGN.md "The protocol model").
//!
//! A few processes take and push IDs in both layouts (a single-node pool: compare-and-set on a
//! versioned node with a free list and an operation log; block allocation: sequential claims per
//! generation, pushes waiting in their own nodes, generation moves), with lost replies, requests
//! landing late (also after their author gave up), session expiry, the keeper's raise and repair
//! with a crash between any two of its steps, a wipe of ZooKeeper's data and `zooid restore`.
//! Every reachable state is checked against the invariants in `checks`.
//!
//! The tests check the protocol as fixed (no invariant fails, and the model reaches what it is
//! for), and that the checker finds each known defect when it is put back (`Bug`), printing the
//! shortest path to it. `cargo test --test model -- --nocapture` shows the figures and traces.

mod blocks;
mod checks;
mod ids;
mod keeper;
mod model;
mod pool;

use std::collections::BTreeSet;

use stateright::HasDiscoveries;

use checks::{
    check, Run, BELOW_RECORD, INVARIANTS, LATE, LEAKED, MOVED, NO_DUPLICATE, REPAIRED, RESOLVED,
    TAKE_AFTER_RESTORE,
};
use model::{Bug, Config};

/// A single-node pool created without a ceiling: takes and pushes with lost replies and late
/// requests (a one-line op log, so the free list and `OutcomeUnknown` are reached), the keeper's
/// first ceiling and raises with a crash, a wipe and a restore.
fn single_node() -> Config {
    Config {
        name: "single-node",
        blocks: false,
        last: 8,
        ceiling: None,
        procs: 2,
        ops: 2,
        log_len: 1,
        rotate_at: 8,
        reserve: 2,
        faults: 2,
        wipes: 1,
        keeper_crashes: 1,
        evals: 3,
        bug: Bug::None,
    }
}

/// Block allocation created without a ceiling (finding 2's ground): claims race the keeper's
/// first ceiling; generations move; a lost reply; a wipe and a restore.
fn blocks_first_ceiling() -> Config {
    Config {
        name: "blocks-first-ceiling",
        blocks: true,
        last: 8,
        ceiling: None,
        procs: 2,
        ops: 2,
        log_len: 1,
        rotate_at: 3,
        reserve: 1,
        faults: 1,
        wipes: 1,
        keeper_crashes: 0,
        evals: 3,
        bug: Bug::None,
    }
}

/// Block allocation created with ceiling 0 (`zooid init --ceiling 0`, the record says 0):
/// claims pass the ceiling and give their blocks back, the keeper crashes between its durable
/// write and its pool write, and the next evaluation repairs (finding 1's ground).
fn blocks_repair() -> Config {
    Config {
        name: "blocks-repair",
        blocks: true,
        last: 8,
        ceiling: Some(0),
        procs: 2,
        ops: 3,
        log_len: 1,
        rotate_at: 4,
        reserve: 1,
        faults: 1,
        wipes: 0,
        keeper_crashes: 1,
        evals: 2,
        bug: Bug::None,
    }
}

/// Runs `cfg` to completion and asserts that no invariant fails and every `sometimes` in
/// `reached` is reached.
fn holds(cfg: Config, reached: &[&'static str]) -> Run {
    let run = check(cfg, HasDiscoveries::All, 2);
    for invariant in INVARIANTS {
        if let Some(path) = run.found.get(invariant) {
            panic!(
                "{}: `{invariant}` fails:\n{}",
                run.name,
                checks::trace(path)
            );
        }
    }
    for goal in reached {
        assert!(
            run.found.contains_key(goal),
            "{}: never reached `{goal}` (the model would be vacuous)",
            run.name
        );
    }
    if let Some(path) = run.found.get(TAKE_AFTER_RESTORE) {
        println!(
            "{}: a take after a wipe and a restore:\n{}",
            run.name,
            checks::trace(path)
        );
    }
    run
}

/// Runs `cfg` with `bug` on one thread (so the paths are shortest) until every property in
/// `expected` fails, and asserts they did; prints the counterexample to each.
fn finds(cfg: Config, bug: Bug, expected: &[&'static str]) -> Run {
    let cfg = Config { bug, ..cfg };
    let wanted: BTreeSet<&'static str> = expected.iter().copied().collect();
    let run = check(cfg, HasDiscoveries::AllOf(wanted), 1);
    for property in expected {
        let path = run.found.get(property).unwrap_or_else(|| {
            panic!(
                "{} with {bug:?}: the checker found no counterexample to `{property}`",
                run.name
            )
        });
        println!(
            "{} with {bug:?}: `{property}` fails after {} steps:\n{}",
            run.name,
            path.len() - 1,
            checks::trace(path)
        );
    }
    run
}

#[test]
fn single_node_pool_keeps_every_invariant() {
    holds(single_node(), &[TAKE_AFTER_RESTORE, RESOLVED, LEAKED, LATE]);
}

#[test]
fn block_allocation_first_ceiling_keeps_every_invariant() {
    holds(
        blocks_first_ceiling(),
        &[TAKE_AFTER_RESTORE, MOVED, RESOLVED],
    );
}

#[test]
fn block_allocation_repair_keeps_every_invariant() {
    holds(blocks_repair(), &[REPAIRED, MOVED, RESOLVED, LEAKED, LATE]);
}

/// Issue 19, finding 1: a repair that restarts fresh blocks at `R + 1` hands out again the
/// holes the generation claimed above `R`.
#[test]
fn finding_1_repair_below_the_frontier_is_found() {
    finds(blocks_repair(), Bug::RepairIgnoresFrontier, &[NO_DUPLICATE]);
}

/// Issue 19, finding 2: claims between the keeper's read and its fenced write hand out IDs
/// above the first durable ceiling; a wipe and a restore then hand them out again.
#[test]
fn finding_2_first_ceiling_lag_is_found() {
    finds(
        blocks_first_ceiling(),
        Bug::FirstCeilingLags,
        &[BELOW_RECORD, NO_DUPLICATE],
    );
}

/// Claims and takes of holes do not check the pool node: a first ceiling written without
/// sealing the generation lets those planned before it hand out IDs above it.
#[test]
fn first_ceiling_without_a_seal_is_found() {
    finds(
        blocks_first_ceiling(),
        Bug::FirstCeilingUnsealed,
        &[BELOW_RECORD, NO_DUPLICATE],
    );
}

/// Re-reading the frontier after the first durable write does not fix finding 2: the pool has no
/// ceiling until the fenced write, so claims pass the record in between.
#[test]
fn first_ceiling_rereading_the_frontier_is_found() {
    finds(
        blocks_first_ceiling(),
        Bug::FirstCeilingRereads,
        &[BELOW_RECORD, NO_DUPLICATE],
    );
}

/// Reading the frontier for a repair without sealing the generation is not enough: claims
/// planned on the version read land between the read and the pool write.
/// A push carries no receipt: one in doubt whose holes are gone may have applied and been taken,
/// so sending it again frees IDs a take holds.
#[test]
fn a_push_in_doubt_sent_again_is_found() {
    finds(blocks_repair(), Bug::PushGoneResent, &[NO_DUPLICATE]);
}

#[test]
fn repair_with_an_unsealed_frontier_is_found() {
    finds(
        blocks_repair(),
        Bug::RepairUnsealedFrontier,
        &[NO_DUPLICATE],
    );
}

/// Checks one configuration at other sizes, from the environment (not run by default):
/// `CFG=single|first|repair LAST= PROCS= OPS= FAULTS= WIPES= CRASHES= EVALS= ROTATE= LOG=
/// cargo test --test model -- --ignored --nocapture larger_sizes`.
#[test]
#[ignore]
fn larger_sizes() {
    let env = |k: &str, d: u8| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let base = match std::env::var("CFG").as_deref() {
        Ok("single") => single_node(),
        Ok("first") => blocks_first_ceiling(),
        _ => blocks_repair(),
    };
    let cfg = Config {
        last: env("LAST", base.last),
        procs: env("PROCS", base.procs),
        ops: env("OPS", base.ops),
        faults: env("FAULTS", base.faults),
        wipes: env("WIPES", base.wipes),
        keeper_crashes: env("CRASHES", base.keeper_crashes),
        evals: env("EVALS", base.evals),
        rotate_at: env("ROTATE", base.rotate_at),
        log_len: env("LOG", base.log_len),
        ..base
    };
    println!("{cfg:?}");
    holds(cfg, &[]);
}
