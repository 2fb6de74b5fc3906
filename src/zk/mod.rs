//! Everything zooid says to ZooKeeper goes through here. The one interface, [`ZooKeeper`]
//! (held as a [`Zk`]), is what every other module uses: reads with their metadata, versioned
//! writes, sequential and ephemeral creates, children with their child version, `multi`
//! ([`Multi`]), `sync`, watches, session generations and the servers' word on a session's fate.
//! [`Session`] implements it on a real ensemble; the rest of this module is how: connecting
//! ([`ConnectOptions`], [`TlsFiles`], [`Sasl`]), the session's state, the one reading of a failed
//! request ([`classify`]), ACLs ([`Acl`]), the servers' release ([`ServerVersion`]), and the
//! diagnosis of a refused TLS connection and Kerberos credentials behind the connect.
//!
//! `zk` depends only on `error` (and `range` through it); the stores and the recipes depend on
//! it, never the reverse.

pub mod acl;
pub mod catch_up;
pub mod classify;
mod connect;
pub(crate) mod ephemeral;
pub mod fate;
pub mod interface;
#[cfg(feature = "kerberos")]
mod kerberos;
pub mod multi;
pub mod options;
pub mod path;
mod real;
pub mod session;
mod status;
mod tls_probe;
mod version;

pub use acl::{parse_acl_list, Acl, Perms};
pub use classify::{
    classify, describe as describe_error, fate, is_gone, not_authorized, to_zooid, Fate, Verdict,
};
pub use fate::{confirm_dead, Confirmed, InDoubt, Unconfirmed};
pub use interface::{
    Create, Event, EventKind, Failure, Mode, MultiFailed, Op, OpResult, Reply, Stat, TreeWatch,
    Watch, WeakZk, Zk, ZooKeeper, ZooKeeperExt,
};
pub use multi::{set_version, Multi};
pub use options::{ConnectOptions, Sasl, ServerVersion, TlsFiles};
pub use path::validate_path;
pub use session::{ConnectionState, LeaseGuard, Session, SessionStatus};
pub use status::{ReadOn, WriteOn};
