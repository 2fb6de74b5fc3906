//! ZooKeeper ACLs for the nodes zooid creates (a category's pool node, a recipe's nodes).
//!
//! An [`Acl`] is one entry `scheme:id:perms`, written as ZooKeeper's own CLI writes it
//! (`world:anyone:r`, `sasl:app@EXAMPLE.COM:cdrwa`, `digest:alice:<base64 sha1>:rw`,
//! `auth::cdrwa` for "whoever creates the node"). A node's ACL is a list of entries; zooid
//! passes it unchanged to ZooKeeper, which enforces it.

use std::fmt;
use std::str::FromStr;

use crate::error::{Result, ZooidError};

/// What an ACL entry allows, ZooKeeper's permission bits (`r` read, `w` write, `c` create
/// children, `d` delete children, `a` admin).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Perms(u8);

impl Perms {
    /// Read data and list children.
    pub const READ: Perms = Perms(1);
    /// Set data.
    pub const WRITE: Perms = Perms(2);
    /// Create children.
    pub const CREATE: Perms = Perms(4);
    /// Delete children.
    pub const DELETE: Perms = Perms(8);
    /// Change the ACL.
    pub const ADMIN: Perms = Perms(16);
    /// Everything.
    pub const ALL: Perms = Perms(31);

    /// The union of two permission sets.
    pub const fn and(self, other: Perms) -> Perms {
        Perms(self.0 | other.0)
    }

    /// Whether every permission of `other` is in `self`.
    pub const fn has(self, other: Perms) -> bool {
        self.0 & other.0 == other.0
    }

    /// ZooKeeper's integer form.
    pub const fn bits(self) -> i32 {
        self.0 as i32
    }
}

impl FromStr for Perms {
    type Err = ZooidError;

    /// Parses ZooKeeper's letters, such as `cdrwa` or `r`.
    fn from_str(s: &str) -> Result<Self> {
        let mut perms = 0u8;
        for c in s.chars() {
            perms |= match c {
                'r' => Perms::READ.0,
                'w' => Perms::WRITE.0,
                'c' => Perms::CREATE.0,
                'd' => Perms::DELETE.0,
                'a' => Perms::ADMIN.0,
                other => {
                    return Err(ZooidError::InvalidArgument(format!(
                        "ACL permissions {s:?}: unknown letter {other:?} (use r, w, c, d, a)"
                    )))
                }
            };
        }
        if perms == 0 {
            return Err(ZooidError::InvalidArgument(
                "ACL permissions are empty (use some of r, w, c, d, a)".into(),
            ));
        }
        Ok(Perms(perms))
    }
}

impl fmt::Display for Perms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (bit, letter) in [
            (Perms::CREATE, 'c'),
            (Perms::DELETE, 'd'),
            (Perms::READ, 'r'),
            (Perms::WRITE, 'w'),
            (Perms::ADMIN, 'a'),
        ] {
            if self.has(bit) {
                write!(f, "{letter}")?;
            }
        }
        Ok(())
    }
}

/// One ACL entry: `perms` granted to the identity `id` of authentication scheme `scheme`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Acl {
    /// The scheme: `world`, `auth`, `digest`, `sasl`, `x509`, `ip`.
    pub scheme: String,
    /// The identity within the scheme (`anyone` for `world`, empty for `auth`).
    pub id: String,
    /// What the identity may do.
    pub perms: Perms,
}

impl Acl {
    /// Any scheme and identity.
    pub fn new(scheme: impl Into<String>, id: impl Into<String>, perms: Perms) -> Self {
        Self {
            scheme: scheme.into(),
            id: id.into(),
            perms,
        }
    }

    /// `world:anyone`: everyone, authenticated or not.
    pub fn world(perms: Perms) -> Self {
        Self::new("world", "anyone", perms)
    }

    /// `world:anyone:r`: everyone may read, nobody else is granted anything by this entry.
    pub fn world_read() -> Self {
        Self::world(Perms::READ)
    }

    /// `auth:`: every identity the creating session authenticated as (SASL, digest, x509).
    pub fn creator(perms: Perms) -> Self {
        Self::new("auth", "", perms)
    }

    /// `sasl:PRINCIPAL`: a SASL user (DIGEST-MD5 user name or Kerberos principal; which part
    /// of a Kerberos principal counts depends on the server's `kerberos.removeHostFromPrincipal`
    /// and `kerberos.removeRealmFromPrincipal`).
    pub fn sasl(principal: impl Into<String>, perms: Perms) -> Self {
        Self::new("sasl", principal, perms)
    }

    /// `digest:USER:HASH` for a user of ZooKeeper's `digest` scheme (`addauth digest
    /// user:password`); the password is hashed here and not kept.
    pub fn digest(user: &str, password: &str, perms: Perms) -> Self {
        Self::new("digest", digest_id(user, password), perms)
    }

    /// The entry as ZooKeeper's CLI writes it, `scheme:id:perms`. Never holds a password (a
    /// digest entry holds the hash).
    pub fn to_text(&self) -> String {
        self.to_string()
    }

    /// The entry of the client's form `acl`.
    pub(crate) fn from_zk(acl: &zookeeper_client::Acl) -> Self {
        let mut perms = Perms(0);
        for (ours, theirs) in [
            (Perms::READ, zookeeper_client::Permission::READ),
            (Perms::WRITE, zookeeper_client::Permission::WRITE),
            (Perms::CREATE, zookeeper_client::Permission::CREATE),
            (Perms::DELETE, zookeeper_client::Permission::DELETE),
            (Perms::ADMIN, zookeeper_client::Permission::ADMIN),
        ] {
            if acl.permission().has(theirs) {
                perms = perms.and(ours);
            }
        }
        Self::new(acl.scheme(), acl.id(), perms)
    }

    pub(crate) fn to_zk(&self) -> zookeeper_client::Acl {
        let mut perm = zookeeper_client::Permission::NONE;
        for (ours, theirs) in [
            (Perms::READ, zookeeper_client::Permission::READ),
            (Perms::WRITE, zookeeper_client::Permission::WRITE),
            (Perms::CREATE, zookeeper_client::Permission::CREATE),
            (Perms::DELETE, zookeeper_client::Permission::DELETE),
            (Perms::ADMIN, zookeeper_client::Permission::ADMIN),
        ] {
            if self.perms.has(ours) {
                perm = perm | theirs;
            }
        }
        zookeeper_client::Acl::new(perm, zookeeper_client::AuthId::new(&self.scheme, &self.id))
    }
}

impl fmt::Display for Acl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.scheme, self.id, self.perms)
    }
}

impl FromStr for Acl {
    type Err = ZooidError;

    /// Parses `scheme:id:perms`; the id may itself contain colons (`digest:user:hash:rw`).
    fn from_str(s: &str) -> Result<Self> {
        let bad = |why: &str| {
            ZooidError::InvalidArgument(format!(
                "ACL {s:?}: {why} (write scheme:id:perms, such as world:anyone:r, \
                 sasl:app:cdrwa, digest:user:HASH:cdrwa, auth::cdrwa)"
            ))
        };
        let (scheme, rest) = s.split_once(':').ok_or_else(|| bad("no ':'"))?;
        let (id, perms) = rest.rsplit_once(':').ok_or_else(|| bad("no permissions"))?;
        let perms: Perms = perms.parse()?;
        match scheme {
            "world" if id != "anyone" => return Err(bad("the world scheme's only id is anyone")),
            "auth" if !id.is_empty() => return Err(bad("the auth scheme takes an empty id")),
            "digest" if !id.contains(':') => {
                return Err(bad("a digest id is user:base64(sha1(user:password))"))
            }
            "world" | "auth" | "digest" | "sasl" | "x509" | "ip" | "host" | "super" => {}
            "" => return Err(bad("empty scheme")),
            _ => {} // A server may have custom authentication providers.
        }
        if scheme != "auth" && scheme != "world" && id.is_empty() {
            return Err(bad("empty id"));
        }
        Ok(Acl::new(scheme, id, perms))
    }
}

/// Parses a comma-separated list of ACL entries (`world:anyone:r,sasl:app:cdrwa`).
pub fn parse_acl_list(s: &str) -> Result<Vec<Acl>> {
    s.split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(str::parse)
        .collect()
}

/// ZooKeeper's digest identity: `user:base64(sha1("user:password"))`.
pub fn digest_id(user: &str, password: &str) -> String {
    use base64::Engine as _;
    use sha1::Digest as _;
    let hash = sha1::Sha1::digest(format!("{user}:{password}").as_bytes());
    format!(
        "{user}:{}",
        base64::engine::general_purpose::STANDARD.encode(hash)
    )
}

/// The ACL of nodes created without an explicit one: only the creator's identities when the
/// session authenticates (SASL or digest), else open to all. The ID service and the recipes
/// share it.
pub(crate) fn default_zk_acls(
    options: &super::options::ConnectOptions,
) -> zookeeper_client::Acls<'static> {
    if options.authenticated() {
        zookeeper_client::Acls::creator_all()
    } else {
        zookeeper_client::Acls::anyone_all()
    }
}

/// Checks that an ACL list can be used to create a node.
pub(crate) fn check_acl_list(acl: &[Acl]) -> Result<()> {
    if acl.is_empty() {
        return Err(ZooidError::InvalidArgument(
            "an empty ACL would make the node unusable; give at least one entry".into(),
        ));
    }
    if !acl.iter().any(|a| a.perms.has(Perms::ADMIN)) {
        tracing::warn!(acl = ?acl, "no ACL entry grants admin: nobody (but a super user) can ever change this node's ACL");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_zookeeper_cli_syntax() {
        for text in [
            "world:anyone:r",
            "auth::cdrwa",
            "sasl:app@EXAMPLE.COM:cdrwa",
            "digest:alice:ZUbOqeqW4Xe+U2W4ArbaDuV2Rqc=:rw",
            "ip:10.0.0.0/8:r",
        ] {
            let acl: Acl = text.parse().unwrap();
            assert_eq!(acl.to_string(), text);
        }
        let list = parse_acl_list("world:anyone:r, sasl:app:cdrwa").unwrap();
        assert_eq!(list, vec![Acl::world_read(), Acl::sasl("app", Perms::ALL)]);
        for bad in [
            "world:anyone",
            "world:someone:r",
            "sasl:app:rx",
            "digest:alice:rw",
            "x:",
        ] {
            assert!(bad.parse::<Acl>().is_err(), "{bad}");
        }
    }

    #[test]
    fn digest_id_matches_zookeepers_generate_digest() {
        // DigestAuthenticationProvider.generateDigest("super:test") in ZooKeeper's own docs.
        assert_eq!(
            digest_id("super", "test"),
            "super:D/InIHSb7yEEbrWz8b9l71RjZJU="
        );
        let acl = Acl::digest("super", "test", Perms::ALL);
        assert!(!acl.to_string().contains("test:"), "{acl}");
    }
}
