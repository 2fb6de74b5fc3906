//! The `zooid` binary end to end (`CARGO_BIN_EXE_zooid`), on the embedded stores and on real
//! ZooKeeper servers.

mod basics;
mod blocks;
mod counter;
mod draw;
mod elect;
mod elect_faults;
mod errors;
mod metrics;
mod migrate;
mod ops;
mod queue;
mod security;
mod status;
