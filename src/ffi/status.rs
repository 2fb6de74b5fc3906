//! The status every export returns, with stable numbers, and its mapping from [`ZooidError`].

use std::ffi::c_char;

use super::Failure;
use crate::error::{ErrorKind, ZooidError};

/// The outcome of a zooid call. `ZOOID_STATUS_OK` (0) is success; every other value is an error
/// whose message is this thread's last error (`zooid_last_error_message`).
///
/// The numbers are stable: a value keeps its meaning in every later version, and new values
/// are only ever added. Treat a value you do not know like `ZOOID_STATUS_OTHER`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum zooid_status {
    /// Success.
    ZOOID_STATUS_OK = 0,
    /// An argument is unusable: a NULL pointer, a string that is not UTF-8, a bad connect
    /// string or category path, `n == 0`, a too-small buffer. Nothing was changed.
    ZOOID_STATUS_INVALID_ARGUMENT = 1,
    /// The category has no free IDs left. Nothing was changed.
    ZOOID_STATUS_EXHAUSTED = 2,
    /// The category does not exist (categories are created explicitly with
    /// `zooid_service_create_category`).
    ZOOID_STATUS_NOT_FOUND = 3,
    /// `zooid_service_create_category` found the category already there; it was left as it is.
    ZOOID_STATUS_CATEGORY_EXISTS = 4,
    /// Pushed IDs lie outside the category's bounds. Nothing was changed.
    ZOOID_STATUS_OUT_OF_BOUNDS = 5,
    /// Pushed IDs are already free (a double push). Nothing was changed.
    ZOOID_STATUS_ALREADY_FREE = 6,
    /// The category's pool node does not hold a valid pool. It was left untouched; an operator
    /// has to repair it.
    ZOOID_STATUS_CORRUPT_POOL = 7,
    /// The push would make the pool node larger than its limit (too fragmented). Nothing was
    /// changed; the IDs were not recycled.
    ZOOID_STATUS_POOL_FULL = 8,
    /// Version conflicts with other writers went on past the retry budget. Nothing was
    /// changed; retrying later may succeed.
    ZOOID_STATUS_CONTENTION = 9,
    /// A write's reply was lost and whether it applied could not be determined. A take's IDs
    /// are leaked (never handed out to anyone); a push is not repeated. The IDs concerned are
    /// available from `zooid_last_error_ranges`; a take of fresh blocks that may have claimed
    /// a block it never learned the number of names the bound (at most N IDs within a range)
    /// only in the message, with no ranges.
    ZOOID_STATUS_OUTCOME_UNKNOWN = 10,
    /// The store could not be reached before the deadline. Nothing was changed.
    ZOOID_STATUS_CONNECTION_LOST = 11,
    /// The operation ran out of time. Nothing was changed.
    ZOOID_STATUS_TIMEOUT = 12,
    /// The pool node's 32-bit data version reached its maximum and the node could not be moved
    /// to a fresh one (a child under it, or no delete and create permission on its parent).
    /// Nothing was changed.
    ZOOID_STATUS_VERSION_WRAP = 13,
    /// The store refused or failed the request in another way (authentication, ACL, I/O).
    ZOOID_STATUS_STORE = 14,
    /// A blocking call was made from one of zooid's own runtime threads.
    ZOOID_STATUS_RUNTIME_THREAD = 15,
    /// The ID set has no unused IDs left (`zooid_id_set_take_id`). Not an error of the
    /// category: take a new set.
    ZOOID_STATUS_EMPTY = 16,
    /// zooid panicked (a bug). The panic was caught at the boundary; the handles involved
    /// may be freed but should not be used further.
    ZOOID_STATUS_PANIC = 17,
    /// An error this version of the C API does not classify further; see the message.
    ZOOID_STATUS_OTHER = 18,
    /// A leader's fenced write was refused: this process does not lead the group (any more).
    /// Nothing was written.
    ZOOID_STATUS_NOT_LEADER = 19,
    /// The ZooKeeper session that held a claim or a candidacy ended, and it with it. Nothing was
    /// done on its behalf.
    ZOOID_STATUS_SESSION_LOST = 20,
    /// The queue holds its maximum number of items. Nothing was added.
    ZOOID_STATUS_QUEUE_FULL = 21,
    /// A value (a queue item, node data) is over its size limit. Nothing was written.
    ZOOID_STATUS_TOO_LARGE = 22,
    /// The handle was closed (or the candidacy resigned) before or during the call.
    ZOOID_STATUS_CLOSED = 23,
    /// The node's ACL does not grant this client's identity the permission the call needs (the
    /// message names the node and the identity). Nothing was changed.
    ZOOID_STATUS_NOT_AUTHORIZED = 24,
    /// The category's durable reservation (the IDs at or below its ceiling) is used up and the
    /// keeper did not raise the ceiling in time. Nothing was handed out.
    ZOOID_STATUS_RESERVATION_EXHAUSTED = 25,
    /// A pool's version went backwards compared with what this process saw (ZooKeeper restored
    /// from an older state), or a durable-record write would move the record backwards.
    /// Nothing was handed out; a take whose claims overlapped (a store restored under it)
    /// leaked the IDs it claimed, which the message names.
    ZOOID_STATUS_WENT_BACKWARDS = 26,
    /// The ensemble refused the credentials (a wrong password, an unknown user or principal)
    /// when the session was opened (the message names the identity, never a password).
    /// Nothing was done.
    ZOOID_STATUS_AUTH_FAILED = 27,
    /// The call was made in a process forked (without `exec`) from the one where zooid started:
    /// zooid's threads and sessions stayed in the parent. Nothing was sent; the handles the
    /// child inherited are the parent's (freeing them in the child releases nothing). Every call
    /// but the frees and the last-error readers returns it, also those that send nothing: an ID
    /// from an inherited set or prefetching source is the parent's too.
    ZOOID_STATUS_FORKED = 28,
}

impl zooid_status {
    /// Every status, in numeric order.
    pub(crate) const ALL: [zooid_status; 29] = [
        Self::ZOOID_STATUS_OK,
        Self::ZOOID_STATUS_INVALID_ARGUMENT,
        Self::ZOOID_STATUS_EXHAUSTED,
        Self::ZOOID_STATUS_NOT_FOUND,
        Self::ZOOID_STATUS_CATEGORY_EXISTS,
        Self::ZOOID_STATUS_OUT_OF_BOUNDS,
        Self::ZOOID_STATUS_ALREADY_FREE,
        Self::ZOOID_STATUS_CORRUPT_POOL,
        Self::ZOOID_STATUS_POOL_FULL,
        Self::ZOOID_STATUS_CONTENTION,
        Self::ZOOID_STATUS_OUTCOME_UNKNOWN,
        Self::ZOOID_STATUS_CONNECTION_LOST,
        Self::ZOOID_STATUS_TIMEOUT,
        Self::ZOOID_STATUS_VERSION_WRAP,
        Self::ZOOID_STATUS_STORE,
        Self::ZOOID_STATUS_RUNTIME_THREAD,
        Self::ZOOID_STATUS_EMPTY,
        Self::ZOOID_STATUS_PANIC,
        Self::ZOOID_STATUS_OTHER,
        Self::ZOOID_STATUS_NOT_LEADER,
        Self::ZOOID_STATUS_SESSION_LOST,
        Self::ZOOID_STATUS_QUEUE_FULL,
        Self::ZOOID_STATUS_TOO_LARGE,
        Self::ZOOID_STATUS_CLOSED,
        Self::ZOOID_STATUS_NOT_AUTHORIZED,
        Self::ZOOID_STATUS_RESERVATION_EXHAUSTED,
        Self::ZOOID_STATUS_WENT_BACKWARDS,
        Self::ZOOID_STATUS_AUTH_FAILED,
        Self::ZOOID_STATUS_FORKED,
    ];

    /// The status for an error of the library: its kind's number.
    pub fn of(err: &ZooidError) -> Self {
        Self::of_kind(err.kind())
    }

    /// The status numbered like `kind` (every kind's number is a status; see the tests).
    pub(crate) fn of_kind(kind: ErrorKind) -> Self {
        Self::ALL
            .get(kind.number() as usize)
            .copied()
            .unwrap_or(Self::ZOOID_STATUS_OTHER)
    }

    /// The status for a failure at the boundary.
    pub(crate) fn of_failure(failure: &Failure) -> Self {
        match failure {
            Failure::Null(_) | Failure::Invalid(_) => Self::ZOOID_STATUS_INVALID_ARGUMENT,
            Failure::Empty => Self::ZOOID_STATUS_EMPTY,
            Failure::Zooid(err) => Self::of(err),
            Failure::Panic(_) => Self::ZOOID_STATUS_PANIC,
        }
    }

    /// The constant's name, NUL-terminated.
    fn name(self) -> &'static str {
        match self {
            Self::ZOOID_STATUS_OK => "ZOOID_STATUS_OK\0",
            Self::ZOOID_STATUS_INVALID_ARGUMENT => "ZOOID_STATUS_INVALID_ARGUMENT\0",
            Self::ZOOID_STATUS_EXHAUSTED => "ZOOID_STATUS_EXHAUSTED\0",
            Self::ZOOID_STATUS_NOT_FOUND => "ZOOID_STATUS_NOT_FOUND\0",
            Self::ZOOID_STATUS_CATEGORY_EXISTS => "ZOOID_STATUS_CATEGORY_EXISTS\0",
            Self::ZOOID_STATUS_OUT_OF_BOUNDS => "ZOOID_STATUS_OUT_OF_BOUNDS\0",
            Self::ZOOID_STATUS_ALREADY_FREE => "ZOOID_STATUS_ALREADY_FREE\0",
            Self::ZOOID_STATUS_CORRUPT_POOL => "ZOOID_STATUS_CORRUPT_POOL\0",
            Self::ZOOID_STATUS_POOL_FULL => "ZOOID_STATUS_POOL_FULL\0",
            Self::ZOOID_STATUS_CONTENTION => "ZOOID_STATUS_CONTENTION\0",
            Self::ZOOID_STATUS_OUTCOME_UNKNOWN => "ZOOID_STATUS_OUTCOME_UNKNOWN\0",
            Self::ZOOID_STATUS_CONNECTION_LOST => "ZOOID_STATUS_CONNECTION_LOST\0",
            Self::ZOOID_STATUS_TIMEOUT => "ZOOID_STATUS_TIMEOUT\0",
            Self::ZOOID_STATUS_VERSION_WRAP => "ZOOID_STATUS_VERSION_WRAP\0",
            Self::ZOOID_STATUS_STORE => "ZOOID_STATUS_STORE\0",
            Self::ZOOID_STATUS_RUNTIME_THREAD => "ZOOID_STATUS_RUNTIME_THREAD\0",
            Self::ZOOID_STATUS_EMPTY => "ZOOID_STATUS_EMPTY\0",
            Self::ZOOID_STATUS_PANIC => "ZOOID_STATUS_PANIC\0",
            Self::ZOOID_STATUS_OTHER => "ZOOID_STATUS_OTHER\0",
            Self::ZOOID_STATUS_NOT_LEADER => "ZOOID_STATUS_NOT_LEADER\0",
            Self::ZOOID_STATUS_SESSION_LOST => "ZOOID_STATUS_SESSION_LOST\0",
            Self::ZOOID_STATUS_QUEUE_FULL => "ZOOID_STATUS_QUEUE_FULL\0",
            Self::ZOOID_STATUS_TOO_LARGE => "ZOOID_STATUS_TOO_LARGE\0",
            Self::ZOOID_STATUS_CLOSED => "ZOOID_STATUS_CLOSED\0",
            Self::ZOOID_STATUS_NOT_AUTHORIZED => "ZOOID_STATUS_NOT_AUTHORIZED\0",
            Self::ZOOID_STATUS_RESERVATION_EXHAUSTED => "ZOOID_STATUS_RESERVATION_EXHAUSTED\0",
            Self::ZOOID_STATUS_WENT_BACKWARDS => "ZOOID_STATUS_WENT_BACKWARDS\0",
            Self::ZOOID_STATUS_AUTH_FAILED => "ZOOID_STATUS_AUTH_FAILED\0",
            Self::ZOOID_STATUS_FORKED => "ZOOID_STATUS_FORKED\0",
        }
    }
}

/// The name of a status constant, such as `"ZOOID_STATUS_EXHAUSTED"`, as a static
/// NUL-terminated string (never NULL, never to be freed); `"ZOOID_STATUS_UNKNOWN"` for a number
/// this version does not know. Takes the number rather than the enum so that any value is safe.
#[no_mangle]
pub extern "C" fn zooid_status_name(status: u32) -> *const c_char {
    let name = zooid_status::ALL
        .get(status as usize)
        .map_or("ZOOID_STATUS_UNKNOWN\0", |s| s.name());
    name.as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn numbers_are_stable_and_names_match() {
        for (n, status) in zooid_status::ALL.iter().enumerate() {
            assert_eq!(*status as u32, n as u32);
            let name = unsafe { CStr::from_ptr(zooid_status_name(n as u32)) };
            assert_eq!(name.to_str().unwrap(), format!("{status:?}"));
        }
        let unknown = unsafe { CStr::from_ptr(zooid_status_name(1000)) };
        assert_eq!(unknown.to_str().unwrap(), "ZOOID_STATUS_UNKNOWN");
    }

    /// Each kind's status has the kind's number and name, and no two kinds share a status.
    #[test]
    fn every_error_kind_has_its_own_status() {
        let mut seen = std::collections::BTreeSet::new();
        for kind in ErrorKind::ALL {
            let status = zooid_status::of_kind(*kind);
            assert_eq!(status as u32, kind.number(), "{kind:?}");
            assert_eq!(
                format!("{status:?}"),
                format!("ZOOID_STATUS_{}", kind.name().to_uppercase())
            );
            assert!(seen.insert(status as u32), "two kinds share {status:?}");
        }
        for err in crate::error::samples() {
            assert_eq!(zooid_status::of(&err) as u32, err.kind().number(), "{err}");
        }
        // The statuses no kind has are the boundary's own.
        let own: Vec<u32> = zooid_status::ALL
            .iter()
            .map(|s| *s as u32)
            .filter(|n| !seen.contains(n))
            .collect();
        assert_eq!(own, [0, 16, 17, 18]);
    }
}
