//! The connection's security options: TLS files, SASL, the digest `--auth`, and the ACL that
//! `zooid init` puts on a new category. Secrets never come from the command line's arguments
//! (which every user of the machine can read in `ps`): passwords come from the environment or a
//! file.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use zooid::{Acl, ConnectOptions, Sasl, TlsFiles, ZooidError};

/// TLS and SASL options, shared by every command.
#[derive(Args, Debug)]
pub struct SecurityArgs {
    /// TLS to ZooKeeper's secureClientPort: the PEM file of the CA that signed the servers'
    /// certificates.
    #[arg(long, env = "ZOOID_TLS_CA", value_name = "FILE")]
    tls_ca: Option<PathBuf>,
    /// Mutual TLS: the client certificate (PEM), with --tls-key.
    #[arg(long, env = "ZOOID_TLS_CERT", value_name = "FILE", requires = "tls_ca")]
    tls_cert: Option<PathBuf>,
    /// Mutual TLS: the client certificate's private key (PEM), with --tls-cert.
    #[arg(
        long,
        env = "ZOOID_TLS_KEY",
        value_name = "FILE",
        requires = "tls_cert"
    )]
    tls_key: Option<PathBuf>,
    /// SASL authentication: `digest` (DIGEST-MD5, with --sasl-user and the password from
    /// $ZOOID_SASL_PASSWORD or --sasl-password-file) or `kerberos` (with --principal and
    /// --keytab).
    #[arg(long, env = "ZOOID_SASL", value_name = "MECHANISM")]
    sasl: Option<SaslMechanism>,
    /// The DIGEST-MD5 user.
    #[arg(long, env = "ZOOID_SASL_USER", value_name = "USER")]
    sasl_user: Option<String>,
    /// A file holding the DIGEST-MD5 password (one line). Without it the password comes from
    /// $ZOOID_SASL_PASSWORD; there is no option taking the password itself.
    #[arg(long, env = "ZOOID_SASL_PASSWORD_FILE", value_name = "FILE")]
    sasl_password_file: Option<PathBuf>,
    /// The Kerberos client principal (such as app/host@EXAMPLE.COM).
    #[arg(long, env = "ZOOID_PRINCIPAL", value_name = "PRINCIPAL")]
    principal: Option<String>,
    /// The keytab holding the principal's key.
    #[arg(long, env = "ZOOID_KEYTAB", value_name = "FILE")]
    keytab: Option<PathBuf>,
    /// The servers' Kerberos service name (the first part of their principal).
    #[arg(long, env = "ZOOID_SASL_SERVICE", default_value = "zookeeper")]
    sasl_service: String,
}

/// The SASL mechanisms `--sasl` takes.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SaslMechanism {
    /// DIGEST-MD5 against the servers' JAAS users.
    Digest,
    /// Kerberos (GSSAPI) with a keytab.
    Kerberos,
}

fn invalid(why: String) -> ZooidError {
    ZooidError::InvalidArgument(why)
}

/// Reads a one-line secret from a file; the error names the file, never its content.
fn read_secret(path: &Path, what: &str) -> zooid::Result<String> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| invalid(format!("{what} file {}: {err}", path.display())))?;
    let secret = text.trim_end_matches(['\n', '\r']).to_string();
    if secret.is_empty() {
        return Err(invalid(format!("{what} file {} is empty", path.display())));
    }
    Ok(secret)
}

impl SecurityArgs {
    /// Fills the TLS and SASL fields of `options`.
    pub fn apply(&self, options: &mut ConnectOptions) -> zooid::Result<()> {
        if let Some(ca) = &self.tls_ca {
            let mut tls = TlsFiles::ca(ca);
            match (&self.tls_cert, &self.tls_key) {
                (Some(cert), Some(key)) => tls = tls.with_identity(cert, key),
                (None, None) => {}
                _ => {
                    return Err(invalid(
                        "--tls-cert and --tls-key go together: give both or neither".into(),
                    ))
                }
            }
            options.tls = Some(tls);
        }
        options.sasl = match self.sasl {
            None => {
                if self.sasl_user.is_some() || self.principal.is_some() {
                    return Err(invalid(
                        "--sasl-user/--principal need --sasl digest or --sasl kerberos".into(),
                    ));
                }
                None
            }
            Some(SaslMechanism::Digest) => {
                let user = self
                    .sasl_user
                    .clone()
                    .ok_or_else(|| invalid("--sasl digest needs --sasl-user USER".into()))?;
                let password = match (
                    &self.sasl_password_file,
                    std::env::var("ZOOID_SASL_PASSWORD"),
                ) {
                    (Some(file), _) => read_secret(file, "SASL password")?,
                    (None, Ok(password)) if !password.is_empty() => password,
                    (None, _) => {
                        return Err(invalid(
                            "--sasl digest needs the password in $ZOOID_SASL_PASSWORD or \
                             --sasl-password-file FILE"
                                .into(),
                        ))
                    }
                };
                Some(Sasl::digest(user, password))
            }
            Some(SaslMechanism::Kerberos) => {
                let (Some(principal), Some(keytab)) = (&self.principal, &self.keytab) else {
                    return Err(invalid(
                        "--sasl kerberos needs --principal PRINCIPAL and --keytab FILE".into(),
                    ));
                };
                Some(Sasl::Kerberos {
                    principal: principal.clone(),
                    keytab: keytab.clone(),
                    service: self.sasl_service.clone(),
                })
            }
        };
        Ok(())
    }
}

/// The digest `--auth user:password` (from $ZOOID_AUTH, or the discouraged command-line form).
pub fn digest_auth(auth: Option<String>) -> zooid::Result<Option<(String, String)>> {
    let Some(auth) = auth else { return Ok(None) };
    // A malformed value is the one error reported; the warning is for a usable one.
    let (user, password) = auth
        .split_once(':')
        .ok_or_else(|| invalid("--auth needs user:password".into()))?;
    if std::env::args().any(|arg| arg == "--auth" || arg.starts_with("--auth=")) {
        eprintln!(
            "zooid: warning: --auth puts the password in the process arguments, which other \
             users can read; set ZOOID_AUTH instead"
        );
    }
    Ok(Some((user.to_string(), password.to_string())))
}

/// The ACL entries of `zooid init --acl` (each `scheme:id:perms`, comma-separated or repeated).
pub fn parse_acls(acls: &[String]) -> zooid::Result<Option<Vec<Acl>>> {
    if acls.is_empty() {
        return Ok(None);
    }
    let mut all = Vec::new();
    for text in acls {
        all.extend(zooid::zk::parse_acl_list(text)?);
    }
    Ok(Some(all))
}
