//! The invariants, one module per workload, each checked after every step of any process (and
//! the election's also on a timer): a violation is recorded with what broke it. See
//! tests/sim/README.md for the list.

pub mod counter;
pub mod election;
pub mod ids;
pub mod queue;
