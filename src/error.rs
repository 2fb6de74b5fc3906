//! The error type every zooid operation returns.

use std::time::Duration;

use crate::range::IdRange;

/// What went wrong, with enough detail to act on it.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZooidError {
    /// The category has no free IDs left.
    #[error("category {category} is exhausted: no free IDs remain")]
    Exhausted { category: String },

    /// The category's pool node does not exist. Categories are created explicitly.
    /// Also a work queue that was never put to: then `category` is `queue <path>`.
    #[error("{}", fmt_not_found(.category))]
    NotFound { category: String },

    /// `create_category` found the node already there.
    #[error("category {category} already exists")]
    CategoryExists { category: String },

    /// A caller-supplied value is unusable.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// Pushed IDs lie outside the category's bounds.
    #[error("cannot push {range} to {category}: outside the category's bounds {bounds}")]
    OutOfBounds {
        category: String,
        range: IdRange,
        bounds: IdRange,
    },

    /// Pushed IDs are already free in the pool (a double push); nothing was changed.
    #[error("cannot push {range} to {category}: those IDs are already free (double push)")]
    AlreadyFree { category: String, range: IdRange },

    /// The pool node's content is not a valid pool; it is left untouched.
    #[error("corrupt pool node {path}, line {line} ({content:?}): {reason}")]
    CorruptPool {
        path: String,
        line: usize,
        content: String,
        reason: String,
    },

    /// Recording the push would make the pool node larger than its limit; nothing was changed.
    #[error("cannot push to {category}: the pool would grow to {bytes} bytes, over its limit of {limit} (too fragmented); the IDs were not recycled")]
    PoolFull {
        category: String,
        bytes: usize,
        limit: usize,
    },

    /// Version conflicts went on past the retry budget.
    #[error("{category}: gave up after {attempts} attempts in {elapsed:?} of version conflicts")]
    Contention {
        category: String,
        attempts: u32,
        elapsed: Duration,
    },

    /// A write's reply was lost and whether it applied could not be determined. A take's IDs are
    /// leaked (never handed out); a push is not repeated. `ids` names the IDs concerned.
    #[error("{category}: outcome of {op} unknown after a lost reply; IDs {} were not handed out and are leaked", fmt_ranges(.ids))]
    OutcomeUnknown {
        category: String,
        op: &'static str,
        ids: Vec<IdRange>,
    },

    /// The store could not be reached before the deadline; nothing was changed.
    #[error("{category}: store unreachable: {reason}")]
    ConnectionLost { category: String, reason: String },

    /// The operation ran out of time; nothing was changed.
    #[error("{what}: timed out after {after:?}")]
    Timeout { what: String, after: Duration },

    /// The node's 32-bit data version reached its maximum; a further write would wrap it.
    #[error("pool node {path} reached data version {version}; another write would wrap the version counter (recreate the category above its last ID)")]
    VersionWrap { path: String, version: i32 },

    /// The store refused or failed the request in a way not listed above.
    #[error("store error on {path}: {reason}")]
    Store { path: String, reason: String },

    /// A leader's fenced write was refused: this process does not lead the group (any more),
    /// so nothing was written.
    #[error("{group}: not the leader ({reason}); the fenced write was not applied")]
    NotLeader { group: String, reason: String },

    /// The ZooKeeper session that held something (a claim, a candidacy) ended, and that thing
    /// with it; nothing was done on its behalf.
    #[error("{what}: lost with its ZooKeeper session ({reason})")]
    SessionLost { what: String, reason: String },

    /// The queue already holds its maximum number of items; nothing was added.
    #[error("queue {queue} is full: it holds its limit of {limit} items; nothing was added")]
    QueueFull { queue: String, limit: usize },

    /// A value is larger than its limit; nothing was written.
    #[error("{what} is {bytes} bytes, over its limit of {limit}; nothing was written")]
    TooLarge {
        what: String,
        bytes: usize,
        limit: usize,
    },

    /// The handle was closed (or the candidacy resigned) before or during the call.
    #[error("{what} is closed")]
    Closed { what: String },

    /// A blocking call was made from inside an async runtime thread.
    #[error("blocking zooid call made from an async runtime thread; use the async API there")]
    RuntimeThread,

    /// The ensemble refused the request because the node's ACL does not grant this client's
    /// identity the permission it needs; nothing was changed.
    #[error("not authorized on {path} as {identity}: the node's ACL does not grant this identity the permission (nothing was changed)")]
    NotAuthorized { path: String, identity: String },

    /// The category's free IDs at or below its ceiling (the durably reserved IDs) are used up,
    /// and the keeper did not raise the ceiling within the wait; nothing was handed out.
    #[error("category {category}: the durable reservation is exhausted (ceiling {ceiling}, free IDs remain above it); the keeper did not raise the ceiling within {waited:?}")]
    ReservationExhausted {
        category: String,
        ceiling: i64,
        waited: Duration,
    },

    /// Something moved backwards: a pool's version is older than one this process saw before
    /// (ZooKeeper restored from an older state), or a durable-record write would lower the
    /// record or carries an older fencing token. Nothing was changed.
    #[error("{what} went backwards: {reason}; refused")]
    WentBackwards { what: String, reason: String },
}

fn fmt_not_found(category: &str) -> String {
    if category.starts_with("queue ") {
        format!("{category} does not exist (a queue is created by its first put)")
    } else {
        format!(
            "category {category} does not exist (create it with create_category / `zooid init`)"
        )
    }
}

fn fmt_ranges(ids: &[IdRange]) -> String {
    let parts: Vec<String> = ids.iter().map(ToString::to_string).collect();
    format!("[{}]", parts.join(" "))
}

/// Shorthand for results of zooid operations.
pub type Result<T, E = ZooidError> = std::result::Result<T, E>;
