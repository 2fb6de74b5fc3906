//! The kinds of [`ZooidError`](super::ZooidError) in one table: each kind's stable number and
//! name, its CLI exit code and its metrics label. The C status and the Java error code of a kind
//! are its number (`zooid_status` and `io.zooid.ErrorCode` keep those numbers); the Java
//! exception class follows from the code.

/// Declares [`ErrorKind`] and its columns from one table, a row per kind.
macro_rules! kinds {
    ($(
        $(#[$doc:meta])*
        $kind:ident = $number:literal, $name:literal, exit $exit:literal, label $label:literal;
    )*) => {
        /// What kind of error a [`ZooidError`](super::ZooidError) is. Numbers and names are
        /// stable: a kind keeps them in every later version, and new kinds only add numbers.
        #[non_exhaustive]
        #[repr(u32)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ErrorKind {
            $( $(#[$doc])* $kind = $number, )*
        }

        impl ErrorKind {
            /// Every kind, in the table's order.
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$kind),*];

            /// The kind's name in lowercase, such as `exhausted` (the C constant is
            /// `ZOOID_STATUS_` and the name in uppercase).
            pub const fn name(self) -> &'static str {
                match self { $(ErrorKind::$kind => $name,)* }
            }

            /// The `zooid` CLI's exit code for the kind (README and docs/OPERATIONS.md list
            /// them); 1 for the kinds a script has no reason to tell apart.
            pub const fn exit_code(self) -> u8 {
                match self { $(ErrorKind::$kind => $exit,)* }
            }

            /// The `outcome` label of the kind in metrics and spans (`ok` is success).
            pub const fn label(self) -> &'static str {
                match self { $(ErrorKind::$kind => $label,)* }
            }
        }
    };
}

kinds! {
    /// An argument is unusable; nothing was changed.
    InvalidArgument = 1, "invalid_argument", exit 2, label "invalid_argument";
    /// The category has no free IDs left.
    Exhausted = 2, "exhausted", exit 3, label "exhausted";
    /// The category (or queue) does not exist.
    NotFound = 3, "not_found", exit 4, label "not_found";
    /// The category already exists.
    CategoryExists = 4, "category_exists", exit 5, label "exists";
    /// Pushed IDs lie outside the category's bounds.
    OutOfBounds = 5, "out_of_bounds", exit 1, label "out_of_bounds";
    /// Pushed IDs are already free (a double push).
    AlreadyFree = 6, "already_free", exit 1, label "already_free";
    /// The pool node is not a valid pool.
    CorruptPool = 7, "corrupt_pool", exit 6, label "corrupt_pool";
    /// The pool node would grow over its limit.
    PoolFull = 8, "pool_full", exit 1, label "pool_full";
    /// Version conflicts went on past the retry budget.
    Contention = 9, "contention", exit 1, label "contention";
    /// A write's reply was lost and its outcome is unknown; the IDs concerned are leaked.
    OutcomeUnknown = 10, "outcome_unknown", exit 7, label "outcome_unknown";
    /// The store could not be reached in time.
    ConnectionLost = 11, "connection_lost", exit 8, label "connection_lost";
    /// The operation ran out of time.
    Timeout = 12, "timeout", exit 8, label "timeout";
    /// The pool node's data version is about to wrap.
    VersionWrap = 13, "version_wrap", exit 1, label "version_wrap";
    /// The store refused or failed the request otherwise.
    Store = 14, "store", exit 1, label "store";
    /// A blocking call was made from an async runtime thread.
    RuntimeThread = 15, "runtime_thread", exit 1, label "runtime_thread";
    /// A fenced write was refused: this process does not lead the group.
    NotLeader = 19, "not_leader", exit 13, label "not_leader";
    /// The session holding a claim or candidacy ended.
    SessionLost = 20, "session_lost", exit 11, label "session_lost";
    /// The queue holds its maximum number of items.
    QueueFull = 21, "queue_full", exit 9, label "queue_full";
    /// A value is over its size limit.
    TooLarge = 22, "too_large", exit 10, label "too_large";
    /// The handle was closed (or the candidacy resigned).
    Closed = 23, "closed", exit 1, label "closed";
    /// The node's ACL does not grant this client's identity the permission.
    NotAuthorized = 24, "not_authorized", exit 14, label "not_authorized";
    /// The durable reservation is used up and was not raised in time.
    ReservationExhausted = 25, "reservation_exhausted", exit 15, label "reservation_exhausted";
    /// A pool or durable record went backwards.
    WentBackwards = 26, "went_backwards", exit 16, label "went_backwards";
    /// The ensemble refused the session's credentials.
    AuthFailed = 27, "auth_failed", exit 14, label "auth_failed";
    /// The call was made in a process forked from the one that started zooid's runtime.
    Forked = 28, "forked", exit 1, label "forked";
}

impl ErrorKind {
    /// The kind's stable number: also its C status (`zooid_status`) and its Java error code
    /// (`io.zooid.ErrorCode`).
    pub const fn number(self) -> u32 {
        self as u32
    }

    /// The kind numbered `number`, if there is one.
    pub fn from_number(number: u32) -> Option<ErrorKind> {
        Self::ALL.iter().copied().find(|k| k.number() == number)
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One error of every variant, for the tables' tests here and in the bindings.
#[cfg(test)]
pub(crate) fn samples() -> Vec<super::ZooidError> {
    use super::{WriteOp, ZooidError as E};
    use crate::range::IdRange;
    use std::time::Duration;
    let s = || "/c".to_string();
    let range = IdRange::single(1);
    vec![
        E::Exhausted { category: s() },
        E::NotFound { category: s() },
        E::QueueNotFound { queue: s() },
        E::CategoryExists { category: s() },
        E::InvalidArgument(s()),
        E::OutOfBounds {
            category: s(),
            range,
            bounds: range,
        },
        E::AlreadyFree {
            category: s(),
            range,
        },
        E::CorruptPool {
            path: s(),
            line: 1,
            content: s(),
            reason: s(),
        },
        E::PoolFull {
            category: s(),
            bytes: 2,
            limit: 1,
        },
        E::Contention {
            category: s(),
            attempts: 1,
            elapsed: Duration::ZERO,
        },
        E::OutcomeUnknown {
            category: s(),
            op: WriteOp::Take,
            ids: vec![range],
            leaked_within: Some(super::LeakBound {
                at_most: 1,
                within: range,
            }),
        },
        E::ConnectionLost {
            category: s(),
            reason: s(),
        },
        E::Timeout {
            what: s(),
            after: Duration::ZERO,
        },
        E::VersionWrap {
            path: s(),
            version: i32::MAX,
        },
        E::Store {
            path: s(),
            reason: s(),
        },
        E::RuntimeThread,
        E::Forked {
            parent: 1,
            child: 2,
        },
        E::NotLeader {
            group: s(),
            reason: s(),
        },
        E::SessionLost {
            what: s(),
            reason: s(),
        },
        E::QueueFull {
            queue: s(),
            limit: 1,
        },
        E::TooLarge {
            what: s(),
            bytes: 2,
            limit: 1,
        },
        E::Closed { what: s() },
        E::NotAuthorized {
            path: s(),
            identity: s(),
        },
        E::AuthFailed {
            connect: s(),
            identity: s(),
        },
        E::ReservationExhausted {
            category: s(),
            ceiling: 1,
            waited: Duration::ZERO,
        },
        E::WentBackwards {
            what: s(),
            reason: s(),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet, HashSet};

    #[test]
    fn every_variant_has_a_kind_and_every_kind_a_variant() {
        let reached: HashSet<ErrorKind> = samples().iter().map(|e| e.kind()).collect();
        let all: HashSet<ErrorKind> = ErrorKind::ALL.iter().copied().collect();
        assert_eq!(reached, all);
        assert_eq!(all.len(), ErrorKind::ALL.len(), "a kind is listed twice");
    }

    #[test]
    fn numbers_names_and_labels_are_unique_and_stable() {
        let numbers: BTreeSet<u32> = ErrorKind::ALL.iter().map(|k| k.number()).collect();
        let names: BTreeSet<&str> = ErrorKind::ALL.iter().map(|k| k.name()).collect();
        let labels: BTreeSet<&str> = ErrorKind::ALL.iter().map(|k| k.label()).collect();
        for set_len in [numbers.len(), names.len(), labels.len()] {
            assert_eq!(set_len, ErrorKind::ALL.len());
        }
        assert!(!labels.contains("ok") && !labels.contains("error"));
        // 0 is success; 16, 17 and 18 are the C binding's own (empty ID set, panic, other).
        for reserved in [0, 16, 17, 18] {
            assert!(!numbers.contains(&reserved), "{reserved}");
        }
        for kind in ErrorKind::ALL {
            assert_eq!(ErrorKind::from_number(kind.number()), Some(*kind));
            let lower = |c: char| c.is_ascii_lowercase() || c == '_';
            assert!(kind.name().chars().all(lower), "{kind:?}");
            assert!(kind.label().chars().all(lower), "{kind:?}");
        }
        // Numbers published in the C header and the Java enum.
        assert_eq!(ErrorKind::Exhausted.number(), 2);
        assert_eq!(ErrorKind::OutcomeUnknown.number(), 10);
        assert_eq!(ErrorKind::NotAuthorized.number(), 24);
        assert_eq!(ErrorKind::WentBackwards.number(), 26);
    }

    /// Exit codes are documented (README, docs/OPERATIONS.md): 0 is success and 12 `zooid
    /// leader`'s "no leader"; only 1 (other), 8 (unreachable or timeout) and 14 (refused
    /// access) stand for more than one kind.
    #[test]
    fn exit_codes_are_distinct_but_for_the_documented_groups() {
        let mut by_code: BTreeMap<u8, Vec<ErrorKind>> = BTreeMap::new();
        for kind in ErrorKind::ALL {
            by_code.entry(kind.exit_code()).or_default().push(*kind);
        }
        assert!(!by_code.contains_key(&0) && !by_code.contains_key(&12));
        for (code, kinds) in &by_code {
            match code {
                1 => {}
                8 => assert_eq!(kinds, &[ErrorKind::ConnectionLost, ErrorKind::Timeout]),
                14 => assert_eq!(kinds, &[ErrorKind::NotAuthorized, ErrorKind::AuthFailed]),
                _ => assert_eq!(kinds.len(), 1, "exit {code}: {kinds:?}"),
            }
        }
        let codes: Vec<u8> = by_code.keys().copied().collect();
        assert_eq!(codes, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16]);
    }

    /// The Java enum `io.zooid.ErrorCode` declares every kind, with its number.
    #[test]
    fn the_java_error_codes_are_the_kinds() {
        let java = include_str!("../../java/zooid/src/main/java/io/zooid/ErrorCode.java");
        for kind in ErrorKind::ALL {
            if *kind == ErrorKind::InvalidArgument {
                // Thrown as IllegalArgumentException, not an IDGeneratorException.
                continue;
            }
            let constant = format!("{}({}),", kind.name().to_uppercase(), kind.number());
            let last = format!("{}({});", kind.name().to_uppercase(), kind.number());
            assert!(
                java.contains(&constant) || java.contains(&last),
                "ErrorCode.java lacks {constant}"
            );
        }
    }
}
