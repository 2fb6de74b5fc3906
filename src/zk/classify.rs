//! The one reading of a failed ZooKeeper request: what its error says happened, and the public
//! error it becomes when the caller has no more specific reading.
//!
//! Every part that talks to ZooKeeper (the store, the parts and block writes, the recipes)
//! starts from [`classify`]; none matches `zookeeper_client::Error` variants by itself to decide
//! whether a request applied.

use zookeeper_client::Error as ZkError;

use super::options::ConnectOptions;
use crate::error::ZooidError;

/// What a failed request's error says, one case per way a caller reacts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The node does not exist; nothing was done.
    NoNode,
    /// The node already exists; nothing was done.
    NodeExists,
    /// The node is at another version than expected; nothing was done.
    BadVersion,
    /// The node's ACL does not grant this client's identity the permission; nothing was done.
    NotAuthorized,
    /// Any other answer of the servers that proves nothing was done (a node with children, a
    /// bad ACL or argument, over the quota, a failed authentication).
    Refused,
    /// The session expired: the request did not apply. The client reports it only for a
    /// request never written, or one the servers answered with the session's end (their replies
    /// come in order, so the requests written after it did not apply either); a request written
    /// on a connection that broke gets [`Verdict::Unknown`] first. A caller may send it again on
    /// a new session.
    Expired,
    /// The client was closed under the request, or the request names a session generation
    /// given up: it was never written (a closing client waits for the replies to everything it
    /// wrote), so it did not apply.
    Closed,
    /// No answer (connection loss, no reply in time, I/O): it may or may not have applied.
    Unknown,
    /// The write was bound to the connection of the read it was planned on
    /// ([`WriteOn`](super::WriteOn)) and the session has reconnected since: it was not sent, so
    /// nothing was done (plan again on a new read).
    NotSent,
}

/// A failed request: what the error says happened ([`Verdict`]) and the servers' or the
/// client's words, for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// What the error says about the request (applied or not, and why).
    pub verdict: Verdict,
    /// The error as text (for messages and logs only; never matched on).
    pub message: String,
}

impl Failure {
    /// A failure with `verdict` described by `message`.
    pub fn new(verdict: Verdict, message: impl Into<String>) -> Self {
        Self {
            verdict,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// What a failed request's error says about whether it applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// The request may or may not have applied (connection loss, no reply in time, I/O).
    Unknown,
    /// The session is gone (expired, closed); the request did not apply on a live session.
    Expired,
    /// The server answered with this error: the request did not apply.
    Refused,
}

/// Classifies a failed request: an answer of the servers proves it did not apply; anything else
/// may hide an applied request.
pub fn classify(err: &ZkError) -> Verdict {
    match err {
        ZkError::NoNode => Verdict::NoNode,
        ZkError::NodeExists => Verdict::NodeExists,
        ZkError::BadVersion => Verdict::BadVersion,
        ZkError::NoAuth => Verdict::NotAuthorized,
        ZkError::NotEmpty
        | ZkError::AuthFailed
        | ZkError::InvalidAcl
        | ZkError::NoChildrenForEphemerals
        | ZkError::BadArguments(_)
        | ZkError::QuotaExceeded
        | ZkError::Unimplemented
        | ZkError::NotReadOnly => Verdict::Refused,
        ZkError::SessionExpired => Verdict::Expired,
        ZkError::ClientClosed => Verdict::Closed,
        ZkError::ConnectionEnded => Verdict::NotSent,
        // The server's answer to an exception anywhere in its pipeline, including after it
        // applied the transaction (building the reply: ZooKeeper's `FinalRequestProcessor`
        // applies first, and maps any exception after to this code): no proof of anything.
        ZkError::MarshallingError => Verdict::Unknown,
        _ => Verdict::Unknown,
    }
}

impl Verdict {
    /// Whether the request applied, as far as the error tells.
    pub fn fate(self) -> Fate {
        match self {
            Verdict::Expired | Verdict::Closed => Fate::Expired,
            Verdict::Unknown => Fate::Unknown,
            Verdict::NoNode
            | Verdict::NodeExists
            | Verdict::BadVersion
            | Verdict::NotAuthorized
            | Verdict::Refused
            | Verdict::NotSent => Fate::Refused,
        }
    }
}

/// [`classify`], reduced to whether the request applied.
pub fn fate(err: &ZkError) -> Fate {
    classify(err).fate()
}

/// Whether a request's error says its session itself is gone.
pub fn is_gone(err: &ZkError) -> bool {
    fate(err) == Fate::Expired
}

/// The error's text for a message; a marshalling error and an unimplemented request name the
/// likely cause.
pub fn describe(err: &ZkError) -> String {
    match err {
        ZkError::MarshallingError => format!("{err} (node over the server's jute.maxbuffer?)"),
        ZkError::Unimplemented => format!(
            "{err} (the ZooKeeper server is older than the request: `create2` needs 3.5, \
             persistent watches 3.6; a 3.4 server in a newer ensemble needs \
             ConnectOptions::server_version = V3_4)"
        ),
        other => other.to_string(),
    }
}

/// The public error for a request on `path` that failed with `err`, for callers with no more
/// specific reading: a refusal by the node's ACL is [`ZooidError::NotAuthorized`] naming the
/// session's identity; no answer, a lost session or a write not sent because the connection of
/// its plan ended is [`ZooidError::ConnectionLost`]; a closed client [`ZooidError::Closed`]; any
/// other answer [`ZooidError::Store`].
pub fn to_zooid(failure: &Failure, path: &str, options: &ConnectOptions) -> ZooidError {
    match failure.verdict {
        Verdict::NotAuthorized => not_authorized(path, options),
        Verdict::Unknown | Verdict::Expired | Verdict::NotSent => ZooidError::ConnectionLost {
            category: path.to_string(),
            reason: failure.message.clone(),
        },
        Verdict::Closed => ZooidError::Closed {
            what: "ZooKeeper session".into(),
        },
        Verdict::NoNode | Verdict::NodeExists | Verdict::BadVersion | Verdict::Refused => {
            ZooidError::Store {
                path: path.to_string(),
                reason: failure.message.clone(),
            }
        }
    }
}

/// A ZooKeeper `NoAuth` refusal on `path` as the typed error, naming the session's identity.
pub fn not_authorized(path: &str, options: &ConnectOptions) -> ZooidError {
    ZooidError::NotAuthorized {
        path: path.to_string(),
        identity: options.identity(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn answers_prove_nothing_applied_and_silence_proves_nothing() {
        let refused = [
            ZkError::NoNode,
            ZkError::NodeExists,
            ZkError::BadVersion,
            ZkError::NoAuth,
            ZkError::NotEmpty,
            ZkError::AuthFailed,
            ZkError::InvalidAcl,
            ZkError::QuotaExceeded,
        ];
        for err in &refused {
            assert_eq!(fate(err), Fate::Refused, "{err}");
        }
        // A marshalling error is also the servers' answer to a failure after they applied the
        // write (while making its reply).
        for err in [
            ZkError::ConnectionLoss,
            ZkError::Timeout,
            ZkError::Throttled,
            ZkError::MarshallingError,
        ] {
            assert_eq!(fate(&err), Fate::Unknown, "{err}");
            assert!(!is_gone(&err));
        }
        for err in [ZkError::SessionExpired, ZkError::ClientClosed] {
            assert!(is_gone(&err), "{err}");
        }
        // A write bound to an ended connection was not sent.
        assert_eq!(classify(&ZkError::ConnectionEnded), Verdict::NotSent);
        assert_eq!(fate(&ZkError::ConnectionEnded), Fate::Refused);
        assert!(!is_gone(&ZkError::ConnectionEnded));
    }

    #[test]
    fn public_errors_name_the_path_and_the_identity() {
        let options = ConnectOptions {
            digest_auth: Some(("alice".into(), "s3cret-pw".into())),
            ..ConnectOptions::default()
        };
        let kind = |err: ZkError| to_zooid(&Failure::from(&err), "/g", &options).kind();
        assert_eq!(kind(ZkError::NoAuth), ErrorKind::NotAuthorized);
        assert_eq!(kind(ZkError::ConnectionLoss), ErrorKind::ConnectionLost);
        assert_eq!(kind(ZkError::SessionExpired), ErrorKind::ConnectionLost);
        assert_eq!(kind(ZkError::ClientClosed), ErrorKind::Closed);
        assert_eq!(kind(ZkError::NotEmpty), ErrorKind::Store);
        let text = to_zooid(&Failure::from(&ZkError::NoAuth), "/g", &options).to_string();
        assert!(
            text.contains("/g") && text.contains("digest:alice"),
            "{text}"
        );
        assert!(!text.contains("s3cret"), "{text}");
        let big = to_zooid(&Failure::from(&ZkError::MarshallingError), "/g", &options).to_string();
        assert!(big.contains("jute.maxbuffer"), "{big}");
    }
}
