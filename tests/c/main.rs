//! The C ABI from C: programs under tests/c/ compiled against the committed header, linked to
//! the shared and the static library, run against real ZooKeeper servers (and under valgrind).

mod abi;
mod close;
mod counter;
mod election;
mod fork;
mod guide;
mod in_doubt;
mod layouts;
mod prefetch;
mod queue;
mod security;
mod static_link;
mod stats;
mod zk_paths;
