//! The coordination recipes built on a ZooKeeper [`Session`](crate::zk::Session) or on the ID
//! service: the CAS counter, leader election, the work queue and the prefetching ID source.
//!
//! Every recipe is async and opened one way: [`Counter`](counter::Counter),
//! [`WorkQueue`](queue::WorkQueue) and [`Election`](election::Election) from a session, the
//! [`IdSource`](prefetch::IdSource) from a service (it takes IDs). The blocking facades
//! ([`crate::blocking`]) open each of them from a blocking service with one call
//! (`open_counter`, `open_queue`, `join_election`, `leader`, `open_source`), which is what the C
//! and JNI bindings call. The recipes depend on the session layer, the retry policy and (the
//! source) the service; nothing below them depends on a recipe.

pub mod counter;
pub mod election;
pub mod prefetch;
pub mod queue;
