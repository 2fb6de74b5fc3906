//! Load on a real ZooKeeper server: many processes and sessions at once. Kept apart from the
//! other groups so that its timings only compete with each other.

mod contention;
mod stress;
