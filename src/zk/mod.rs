//! Everything zooid says to ZooKeeper goes through here: how to connect ([`ConnectOptions`],
//! [`TlsFiles`], [`Sasl`]), the one shared [`Session`] and its state, the one reading of a
//! failed request ([`classify`]), `multi` transactions ([`Multi`]), ACLs ([`Acl`]), the servers'
//! release ([`ServerVersion`]), and the diagnosis of a refused TLS connection and Kerberos
//! credentials behind the connect.
//!
//! `zk` depends only on `error` (and `range` through it); the stores and the recipes depend on
//! it, never the reverse.

pub mod acl;
pub mod classify;
mod connect;
pub mod fate;
#[cfg(feature = "kerberos")]
mod kerberos;
pub mod multi;
pub mod options;
pub mod path;
pub mod session;
mod tls_probe;
mod version;

pub use acl::{parse_acl_list, Acl, Perms};
pub use classify::{
    classify, describe as describe_error, fate, is_gone, not_authorized, to_zooid, Classified,
    Fate, Verdict,
};
pub use fate::{confirm_dead, Confirmed, InDoubt, Unconfirmed};
pub use multi::{Multi, MultiFailed};
pub use options::{ConnectOptions, Sasl, ServerVersion, TlsFiles};
pub use path::validate_path;
pub use session::{ConnectionState, Session, SessionStatus};
