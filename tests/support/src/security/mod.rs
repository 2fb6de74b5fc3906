//! Secured ZooKeeper fixtures: a throwaway certificate authority ([`pki`]), TLS and SASL
//! (DIGEST-MD5) servers ([`servers`]) and a Kerberos KDC on loopback ([`kdc`]).

pub mod kdc;
pub mod pki;
pub mod servers;
