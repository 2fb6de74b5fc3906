//! The allocator's public types: its tuning, what a pool holds for operators, what a restore did.

use std::time::Duration;

use crate::format::{Blocks, DEFAULT_OP_LOG_LEN};
use crate::range::IdRange;
use crate::retry::RetryPolicy;

/// Default ceiling on a pool node's size: half of ZooKeeper's default 1 MiB `jute.maxbuffer`.
pub const DEFAULT_MAX_POOL_BYTES: usize = 512 * 1024;

/// Default wait of a take at the ceiling.
pub const DEFAULT_CEILING_WAIT: Duration = Duration::from_secs(10);

/// Tuning for an [`IdGeneratorService`](super::IdGeneratorService).
#[derive(Clone, Debug)]
pub struct ServiceOptions {
    /// Retry budget of each operation.
    pub retry: RetryPolicy,
    /// Largest pool node a push may write; a push that would exceed it fails with `PoolFull`.
    pub max_pool_bytes: usize,
    /// How many recent writes a pool node remembers, to resolve lost replies.
    pub op_log_len: usize,
    /// How long a take at a category's ceiling waits for the keeper to raise it before failing
    /// with `ReservationExhausted`.
    pub ceiling_wait: Duration,

    /// Share a contended category fairly between processes (src/pace.rs): operations wait their
    /// turn and read afresh instead of writing at once on the version they remember, and the
    /// oldest operation retries first. Off by default: it costs throughput and, with many
    /// contenders on a fast network, more failed writes; it learns the contention from a
    /// process's earlier operations, so it does not help processes that take once (a burst of
    /// one-shot tasks). docs/BENCHMARKS.md has the figures.
    pub fair_pacing: bool,

    /// The data version at which a single-node pool's next write moves it to a fresh node
    /// (deleted and created again in one transaction, its operation log continued), before
    /// ZooKeeper's 32-bit data version runs out ([`DEFAULT_MOVE_AT_VERSION`]). Lowered only by
    /// tests, to exercise the move.
    #[doc(hidden)]
    pub move_at_version: i32,

    /// Tests only: a format-4 category's first takes of whole blocks in this process leave the
    /// holes to others this many times, as just after lost races for them (`HoleRaces`,
    /// src/alloc/state.rs), to exercise what such a take does at a ceiling or the end. 0 (the
    /// default): only lost races do.
    #[doc(hidden)]
    pub hole_backoff_from_start: u32,
}

/// The data version at which a single-node pool moves to a fresh node: 65,536 writes short of
/// ZooKeeper's limit, so that the keeper's ceiling writes, which do not move the node, still
/// have room.
pub const DEFAULT_MOVE_AT_VERSION: i32 = i32::MAX - 65_536;

impl Default for ServiceOptions {
    fn default() -> Self {
        Self {
            retry: RetryPolicy::default(),
            max_pool_bytes: DEFAULT_MAX_POOL_BYTES,
            op_log_len: DEFAULT_OP_LOG_LEN,
            ceiling_wait: DEFAULT_CEILING_WAIT,
            fair_pacing: false,
            move_at_version: DEFAULT_MOVE_AT_VERSION,
            hole_backoff_from_start: 0,
        }
    }
}

/// What a pool node holds, for operators.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolInfo {
    /// The category's bounds.
    pub bounds: IdRange,
    /// The free ranges, ascending.
    pub free: Vec<IdRange>,
    /// How many IDs are free.
    pub free_count: u64,
    /// The node's data version.
    pub version: i32,
    /// The pool version of the node's data version 0 (`#offset`): how many writes came before
    /// this node, in nodes the pool was moved from (0 for a pool never moved). The pool version
    /// is `offset + version`.
    pub offset: i64,
    /// The node's size in bytes.
    pub bytes: usize,
    /// Whether the node is a headerless, seed-style list.
    pub legacy: bool,
    /// The ceiling of the durable reservation, if the category has one.
    pub ceiling: Option<i64>,
    /// The pool's epoch (restarts of its history by a restore).
    pub epoch: u64,
    /// How many free IDs a take may hand out now (at or below the ceiling).
    pub headroom: u64,
    /// The highest ID that is not free.
    pub high_water: i64,
    /// How fresh IDs are handed out, for a category in block allocation.
    pub blocks: Option<Blocks>,
}

/// What [`IdGeneratorService::restore_category`](super::IdGeneratorService::restore_category)
/// did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restored {
    /// The pool was missing and was created from the record.
    Created,
    /// The pool's ceiling was at or above the record's; it was left alone.
    Kept,
    /// The pool was behind the record; `removed` free IDs at or below the recorded ceiling were
    /// removed and the ceiling raised (by this repair, or by another writer while it gave up
    /// hole nodes).
    Repaired {
        /// How many free IDs were removed.
        removed: u64,
    },
}

/// The block size of [`Layout::for_scale`]: the batch a Hadoop task
/// typically takes (a take of `n` claims `ceil(n / unit)` blocks and leaves the rest as holes).
pub const DEFAULT_BLOCK_SIZE: u64 = 1_000;

/// How a category keeps its IDs (docs/DESIGN.md, docs/FORMAT.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One node holds the free list (formats 1 and 2, readable by the seed's tools); every take
    /// and push is a compare-and-set on it; takes are exactly lowest first. The only layout of
    /// the embedded stores (`mem:`, `file:`).
    SingleNode,
    /// Block allocation (format 4): fresh IDs claimed in blocks of `unit` by sequential
    /// creates; pushed ranges stay nodes of their own, taken by deleting them. Neither takes
    /// nor pushes compare-and-set the pool node, so thousands of tasks that take a batch and
    /// push back their leftovers do not conflict. The default on ZooKeeper; needs it.
    HoleNodes {
        /// IDs per block.
        unit: u64,
    },
}

impl Layout {
    /// The layout for thousands of contending tasks on ZooKeeper: hole nodes in blocks of
    /// [`DEFAULT_BLOCK_SIZE`].
    pub const fn for_scale() -> Self {
        Layout::HoleNodes {
            unit: DEFAULT_BLOCK_SIZE,
        }
    }
}
