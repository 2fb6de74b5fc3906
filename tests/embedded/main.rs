//! The service on the embedded stores (in memory, a local directory): no server needed.

mod behaviour;
mod blocking;
mod origin;
mod panics;
