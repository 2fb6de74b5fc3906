//! Kerberos credentials for GSSAPI SASL: where the client's key comes from.
//!
//! zookeeper-client's GSSAPI mechanism takes its credentials from the process's Kerberos
//! environment (it has no per-connection keytab option). MIT Kerberos acquires a client's
//! initial ticket from the *client keytab* named by `KRB5_CLIENT_KTNAME`, so zooid points that
//! variable at the configured keytab and, unless the application chose a credential cache
//! (`KRB5CCNAME`), keeps the tickets in a process-private in-memory cache. Both are
//! process-wide: one keytab per process.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Result, ZooidError};

static CONFIGURED: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Makes GSSAPI take `principal`'s key from `keytab` (the first entry of the keytab is the
/// principal MIT Kerberos uses; zooid checks the file is readable, not its entries).
pub(crate) fn use_keytab(principal: &str, keytab: &Path) -> Result<()> {
    if let Err(err) = std::fs::File::open(keytab) {
        return Err(ZooidError::InvalidArgument(format!(
            "Kerberos keytab {} for {principal}: {err}",
            keytab.display()
        )));
    }
    let mut configured = CONFIGURED.lock().unwrap_or_else(|e| e.into_inner());
    match configured.as_deref() {
        Some(already) if already == keytab => return Ok(()),
        Some(already) => {
            return Err(ZooidError::InvalidArgument(format!(
                "this process already uses the Kerberos keytab {}; one keytab per process \
                 (asked for {} for {principal})",
                already.display(),
                keytab.display()
            )))
        }
        None => {}
    }
    // Process-wide environment: set once, under the lock, before the first GSSAPI call reads it.
    std::env::set_var("KRB5_CLIENT_KTNAME", keytab);
    if std::env::var_os("KRB5CCNAME").is_none() {
        std::env::set_var("KRB5CCNAME", format!("MEMORY:zooid-{}", std::process::id()));
    }
    *configured = Some(keytab.to_path_buf());
    Ok(())
}
