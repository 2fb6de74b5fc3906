//! zooid: unique integer IDs for distributed workers through Apache ZooKeeper.
//!
//! Workers take batches of IDs from a *category* (a pool node holding the free ranges as text),
//! use them one by one locally, and push back what they did not use; pushed IDs are handed out
//! again, lowest first. No ID is ever handed out twice: every change is a versioned
//! compare-and-set, and a write whose reply was lost is resolved from the operation log kept in
//! the node (docs/DESIGN.md).
//!
//! ```
//! # fn main() -> zooid::Result<()> {
//! use zooid::{blocking::IdGeneratorService, CategorySpec, ConnectOptions, IdCategory, ServiceOptions};
//!
//! let service = IdGeneratorService::connect("mem:", &ConnectOptions::default(), ServiceOptions::default())?;
//! let category = IdCategory::new("/eventpublish/idgen/did")?;
//! service.create_category(&category, &CategorySpec::new(1, 123456789))?;
//! let mut ids = service.take_ids(&category, 10000)?;
//! assert_eq!(ids.take_id(), Some(1));
//! service.push_ids(&mut ids)?; // the 9999 unused IDs go back to the pool
//! # Ok(()) }
//! ```

/// The examples of README.md and of the Rust guide (docs/guides/rust.md), run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
#[doc = include_str!("../docs/guides/rust.md")]
pub struct DocExamples;

pub mod alloc;
pub mod blocking;
pub mod durable;
pub mod error;
pub mod ffi;
pub mod format;
pub mod idset;
pub mod jni;
pub mod keeper;
mod marshal;
mod pace;
pub mod random;
pub mod range;
pub mod recipes;
pub mod retry;
mod runtime;
pub mod stats;
pub mod store;
pub mod zk;

// The recipes' modules keep their paths at the crate root (`zooid::queue::QueueOptions`, ...).
pub use recipes::{counter, election, prefetch, queue};

pub use alloc::{
    CategorySpec, IdGeneratorService, Layout, Migrated, PoolInfo, ServiceOptions,
    DEFAULT_BLOCK_SIZE, LEFT_TO_PUSHER_FOR, LISTING_TRUSTED_FOR,
};
pub use error::{ErrorKind, LeakBound, Result, WriteOp, ZooidError};
pub use idset::{IdCategory, IdSet};
pub use range::{IdRange, RangeSet};
pub use recipes::counter::Counter;
pub use recipes::election::{
    Election, ElectionOptions, ElectionStatus, FencedOp, FencedResult, LeaderInfo, LeaderState,
    PausePolicy,
};
pub use recipes::queue::{Claim, QueueOptions, WorkQueue};
pub use retry::RetryPolicy;
pub use stats::{CategoryStats, LatencyHistogram, ServiceStats};
pub use store::{AnyStore, Store};
pub use zk::{
    Acl, ConnectOptions, ConnectionState, Perms, Sasl, ServerVersion, Session, SessionStatus,
    TlsFiles,
};
