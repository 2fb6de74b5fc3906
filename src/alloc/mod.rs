//! The allocator: hands out unique IDs from categories kept in a store, with versioned
//! compare-and-set, and resolves writes whose reply was lost (docs/DESIGN.md explains the
//! protocol).
//!
//! - [`service`]: the [`IdGeneratorService`] facade, its constructors and public operations.
//! - `dispatch`: take and push, each served by the strategy of the pool's layout: `single` (the
//!   free list in the pool node, formats 1 and 2) or hole nodes (format 4, the default on
//!   ZooKeeper): pushed ranges kept as nodes of their own, taken by deleting them (`holes`),
//!   and fresh blocks claimed by sequential creates ([`blocks`]: claims, generations, repair).
//! - `engine`: the compare-and-set loop every write of the pool node goes through; `lost`: the
//!   resolution of a lost reply.
//! - `state`: what this process knows of each category (the pool as last seen, the holes
//!   listed, the newest version seen, the next block, its receipt).
//! - `admin`: create, restore, repair, raise; `migrate`: a pool moved to a block layout in
//!   place; `info`: what a pool holds, for operators.
//!
//! The requests the allocator sends itself read their errors with [`crate::zk::classify`] and
//! send their transactions as [`crate::zk::Multi`].

mod admin;
pub mod blocks;
mod core;
mod dispatch;
mod engine;
pub(crate) mod fenced;
mod holes;
mod info;
mod lost;
mod migrate;
mod options;
mod pool_watch;
mod service;
mod single;
mod spec;
mod state;

pub use crate::format::MAX_TAKE;
pub use holes::listing::LISTING_TRUSTED_FOR;
pub use holes::young::LEFT_TO_PUSHER_FOR;
pub use migrate::Migrated;
pub use options::{
    Layout, PoolInfo, Restored, ServiceOptions, DEFAULT_BLOCK_SIZE, DEFAULT_CEILING_WAIT,
    DEFAULT_MAX_POOL_BYTES,
};
pub(crate) use service::GivenBack;
pub use service::IdGeneratorService;
pub use spec::CategorySpec;
