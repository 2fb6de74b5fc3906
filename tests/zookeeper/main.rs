//! The ID service and its layers against a real ZooKeeper server (started on loopback by
//! zooid-test-support; the server's jars are fetched by scripts/fetch-zookeeper.sh from
//! tests/zookeeper/pom.xml): the service, block allocation (and its lost claims), the session layer, deadlines,
//! metrics, TLS and SASL, and the test harness itself.

mod blocks;
mod bound;
mod claims;
mod close;
mod deadline;
mod give_up;
mod harness;
mod holes;
mod incarnation;
mod metrics;
mod migrate;
mod review;
mod security;
mod service;
mod session;
mod session_fate;
mod session_lease;
mod session_leader;
mod version_move;
