//! Scenarios on the simulated ZooKeeper of tests/sim (its `world`, included as is), each one
//! interleaving or fault forced exactly, where the seeds of the simulation would meet it only by
//! chance: one module per scenario, [`session::Flaky`] forcing the faults. Run:
//! `cargo test --release --test sim_scenarios`.

#[allow(dead_code, unused_imports)]
#[path = "../world/mod.rs"]
mod world;

mod session;
mod support;

mod cancelled_claim;
mod cancelled_next;
mod cancelled_take;
mod closes;
mod deadline;
mod first_ceiling;
mod lagging_push;
mod lagging_read;
mod late_candidate;
mod lost_create;
mod lost_switch;
mod migration;
mod push_in_doubt;
mod queued_puts;
mod read_on_review;
mod remembered_push;
mod resurrected_generation;
mod stale_listing;
mod stray_lock;
mod stuck_resign;
mod take_listing;
mod wiped_counter;
mod wiped_engine;
mod wiped_keeper;
mod wiped_migration;
mod wiped_move;
mod write_loops;
