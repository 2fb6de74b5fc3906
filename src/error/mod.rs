//! The error type every zooid operation returns, and its [`ErrorKind`]: the one table from
//! which the C status, the Java exception, the CLI exit code and the metrics label are derived.

mod kind;

use std::time::Duration;

#[cfg(test)]
pub(crate) use kind::samples;
pub use kind::ErrorKind;

use crate::range::IdRange;

/// The write whose outcome a [`ZooidError::OutcomeUnknown`] could not determine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WriteOp {
    /// The creation of a category.
    Create,
    /// A take of IDs from a category.
    Take,
    /// A push of IDs back to a category.
    Push,
    /// A raise of a category's ceiling, or a repair.
    Ceiling,
    /// A move of a block-allocated category to a new generation.
    Blocks,
    /// A counter's `next`.
    Next,
    /// A work-queue put (no IDs: the item may or may not be in the queue).
    Put,
}

impl WriteOp {
    /// The operation's name, such as `take` (also what Java's
    /// `OutcomeUnknownException.getOperation()` returns).
    pub fn as_str(self) -> &'static str {
        match self {
            WriteOp::Create => "create",
            WriteOp::Take => "take",
            WriteOp::Push => "push",
            WriteOp::Ceiling => "ceiling",
            WriteOp::Blocks => "blocks",
            WriteOp::Next => "next",
            WriteOp::Put => "put",
        }
    }
}

impl std::fmt::Display for WriteOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// IDs an operation whose outcome is unknown may have taken without being able to name them:
/// at most `at_most` IDs, all within `within` (a claim of fresh blocks whose nodes were deleted
/// before its lost reply was resolved, or that was still in doubt). They are never handed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LeakBound {
    /// The most IDs concerned.
    pub at_most: u64,
    /// The range they lie in.
    pub within: IdRange,
}

/// What went wrong, with enough detail to act on it.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZooidError {
    /// The category has no free IDs left.
    #[error("category {category} is exhausted: no free IDs remain")]
    Exhausted { category: String },

    /// The category's pool node does not exist. Categories are created explicitly.
    #[error("category {category} does not exist (create it with create_category / `zooid init`)")]
    NotFound { category: String },

    /// The work queue was never put to (a queue is created by its first put).
    #[error("queue {queue} does not exist (a queue is created by its first put)")]
    QueueNotFound { queue: String },

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

    /// The pool node is in a format this release no longer reads (format 3, block allocation
    /// whose pushes waited in `zooid-returned`, never released); it is left untouched. Its kind
    /// is [`ErrorKind::CorruptPool`].
    #[error("pool node {path} is in format {format}, which this release no longer reads (block allocation with pushes waiting in zooid-returned, retired before any release); it was left as it is: move it to format 4 with the zooid that wrote it (`zooid migrate`), or delete and recreate the category")]
    RetiredFormat { path: String, format: u32 },

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

    /// A write's reply was lost and whether it applied could not be determined (the servers did
    /// not confirm, within the operation's deadline, that its session can no longer write, or
    /// what they hold no longer tells). A take's IDs are leaked (never handed out); a push is not
    /// repeated; a queue put ([`WriteOp::Put`], no IDs) may or may not be in the queue. `ids`
    /// names the IDs concerned; `leaked_within` bounds those a take may have got but cannot
    /// name (a claim of fresh blocks whose nodes are gone), none otherwise.
    #[error("{category}: outcome of {op} unknown after a lost reply{}{}", fmt_leaked(.ids), fmt_within(.leaked_within))]
    OutcomeUnknown {
        category: String,
        op: WriteOp,
        ids: Vec<IdRange>,
        leaked_within: Option<LeakBound>,
    },

    /// The store could not be reached before the deadline; nothing was changed.
    #[error("{category}: store unreachable: {reason}")]
    ConnectionLost { category: String, reason: String },

    /// The operation ran out of time; nothing was changed.
    #[error("{what}: timed out after {after:?}")]
    Timeout { what: String, after: Duration },

    /// The node's 32-bit data version reached its limit and the node could not be moved to a
    /// fresh one (a pool in block allocation, or a node with children or an ACL that does not
    /// let this client delete and create it).
    #[error("pool node {path} reached data version {version}: another write would wrap ZooKeeper's 32-bit version counter, and the node could not be moved to a fresh one (see the log)")]
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

    /// The call was made in a child process forked after zooid's runtime started in its parent:
    /// the runtime's threads, and the sessions they served, stayed in the parent. Nothing was
    /// sent. Open zooid in the child only after an `exec`, or before zooid is first used in the
    /// parent.
    #[error("zooid call made in process {child}, forked from process {parent} after zooid started there; zooid's threads and sessions stay in the parent (use zooid in the child only after exec); nothing was sent")]
    Forked { parent: u32, child: u32 },

    /// The ensemble refused the request because the node's ACL does not grant this client's
    /// identity the permission it needs; nothing was changed.
    #[error("not authorized on {path} as {identity}: the node's ACL does not grant this identity the permission (nothing was changed)")]
    NotAuthorized { path: String, identity: String },

    /// The ensemble refused the session's credentials (a wrong password, an unknown user or
    /// principal) when it was opened; nothing was done.
    #[error("{connect}: authentication failed as {identity} (check the user, password or keytab)")]
    AuthFailed { connect: String, identity: String },

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
    /// record or carries an older fencing token: nothing was changed. Or one take got the same
    /// IDs from two of its claims: nothing was handed out, and its IDs are leaked.
    #[error("{what} went backwards: {reason}; refused")]
    WentBackwards { what: String, reason: String },
}

fn fmt_leaked(ids: &[IdRange]) -> String {
    if ids.is_empty() {
        return String::new();
    }
    format!(
        "; IDs {} were not handed out and are leaked",
        fmt_ranges(ids)
    )
}

fn fmt_within(bound: &Option<LeakBound>) -> String {
    match bound {
        Some(bound) => format!(
            "; up to {} IDs within {} may have been claimed; they are not handed out and are leaked",
            bound.at_most, bound.within
        ),
        None => String::new(),
    }
}

fn fmt_ranges(ids: &[IdRange]) -> String {
    let parts: Vec<String> = ids.iter().map(ToString::to_string).collect();
    format!("[{}]", parts.join(" "))
}

impl ZooidError {
    /// The kind of error: its stable number and name, and what each binding makes of it.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ZooidError::Exhausted { .. } => ErrorKind::Exhausted,
            ZooidError::NotFound { .. } | ZooidError::QueueNotFound { .. } => ErrorKind::NotFound,
            ZooidError::CategoryExists { .. } => ErrorKind::CategoryExists,
            ZooidError::InvalidArgument(_) => ErrorKind::InvalidArgument,
            ZooidError::OutOfBounds { .. } => ErrorKind::OutOfBounds,
            ZooidError::AlreadyFree { .. } => ErrorKind::AlreadyFree,
            ZooidError::CorruptPool { .. } | ZooidError::RetiredFormat { .. } => {
                ErrorKind::CorruptPool
            }
            ZooidError::PoolFull { .. } => ErrorKind::PoolFull,
            ZooidError::Contention { .. } => ErrorKind::Contention,
            ZooidError::OutcomeUnknown { .. } => ErrorKind::OutcomeUnknown,
            ZooidError::ConnectionLost { .. } => ErrorKind::ConnectionLost,
            ZooidError::Timeout { .. } => ErrorKind::Timeout,
            ZooidError::VersionWrap { .. } => ErrorKind::VersionWrap,
            ZooidError::Store { .. } => ErrorKind::Store,
            ZooidError::NotLeader { .. } => ErrorKind::NotLeader,
            ZooidError::SessionLost { .. } => ErrorKind::SessionLost,
            ZooidError::QueueFull { .. } => ErrorKind::QueueFull,
            ZooidError::TooLarge { .. } => ErrorKind::TooLarge,
            ZooidError::Closed { .. } => ErrorKind::Closed,
            ZooidError::RuntimeThread => ErrorKind::RuntimeThread,
            ZooidError::Forked { .. } => ErrorKind::Forked,
            ZooidError::NotAuthorized { .. } => ErrorKind::NotAuthorized,
            ZooidError::AuthFailed { .. } => ErrorKind::AuthFailed,
            ZooidError::ReservationExhausted { .. } => ErrorKind::ReservationExhausted,
            ZooidError::WentBackwards { .. } => ErrorKind::WentBackwards,
        }
    }

    /// What the error is about: the category, node, queue, group or connect string it names;
    /// `None` when it names nothing (or an empty name).
    pub fn subject(&self) -> Option<&str> {
        let subject = match self {
            ZooidError::Exhausted { category }
            | ZooidError::NotFound { category }
            | ZooidError::CategoryExists { category }
            | ZooidError::OutOfBounds { category, .. }
            | ZooidError::AlreadyFree { category, .. }
            | ZooidError::PoolFull { category, .. }
            | ZooidError::Contention { category, .. }
            | ZooidError::OutcomeUnknown { category, .. }
            | ZooidError::ConnectionLost { category, .. }
            | ZooidError::ReservationExhausted { category, .. } => category,
            ZooidError::CorruptPool { path, .. }
            | ZooidError::RetiredFormat { path, .. }
            | ZooidError::VersionWrap { path, .. }
            | ZooidError::Store { path, .. }
            | ZooidError::NotAuthorized { path, .. } => path,
            ZooidError::Timeout { what, .. }
            | ZooidError::SessionLost { what, .. }
            | ZooidError::TooLarge { what, .. }
            | ZooidError::Closed { what }
            | ZooidError::WentBackwards { what, .. } => what,
            ZooidError::QueueNotFound { queue } | ZooidError::QueueFull { queue, .. } => queue,
            ZooidError::NotLeader { group, .. } => group,
            ZooidError::AuthFailed { connect, .. } => connect,
            ZooidError::InvalidArgument(_)
            | ZooidError::RuntimeThread
            | ZooidError::Forked { .. } => return None,
        };
        Some(subject.as_str()).filter(|s| !s.is_empty())
    }
}

/// Shorthand for results of zooid operations.
pub type Result<T, E = ZooidError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_take_names_its_bound() {
        let r = |a, b| IdRange::new(a, b).unwrap();
        let err = ZooidError::OutcomeUnknown {
            category: "/c".into(),
            op: WriteOp::Take,
            ids: vec![r(201, 300)],
            leaked_within: Some(LeakBound {
                at_most: 100,
                within: r(101, 300),
            }),
        };
        assert_eq!(
            err.to_string(),
            "/c: outcome of take unknown after a lost reply; IDs [201:300] were not handed out \
             and are leaked; up to 100 IDs within 101:300 may have been claimed; they are not \
             handed out and are leaked"
        );
    }
}
