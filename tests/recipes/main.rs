//! The recipes against a real ZooKeeper server: the CAS counter, leader election, the work
//! queue and the prefetching ID source.

mod counter;
mod election;
mod prefetch;
mod queue;
