//! Options for opening a service: ZooKeeper session and authentication, retry budget.

use std::ffi::c_char;

use super::{arg_mut, arg_str, guard, guard_void, zooid_status, Failure, Out};
use crate::alloc::ServiceOptions;
use crate::marshal::positive_millis;
use crate::zk::{ConnectOptions, Sasl, TlsFiles};

/// Options for `zooid_service_open`, created with defaults by `zooid_options_new`: a 10 s
/// ZooKeeper session timeout, no authentication, up to 100 attempts within 30 s per operation.
///
/// Ownership: the caller owns the options and frees them with `zooid_options_free`; opening a
/// service copies them, so they may be freed or reused right after. Not thread-safe: set them
/// from one thread at a time.
pub struct zooid_options {
    pub(crate) connect: ConnectOptions,
    pub(crate) service: ServiceOptions,
}

/// Creates options with the defaults and writes them to `*out_options`.
///
/// # Safety
/// `out_options` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_options_new(out_options: *mut *mut zooid_options) -> zooid_status {
    guard(|| {
        let out = Out::new(out_options, "out_options")?;
        let options = Box::new(zooid_options {
            connect: ConnectOptions::default(),
            service: ServiceOptions::default(),
        });
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(Box::into_raw(options)) };
        Ok(())
    })
}

/// Sets the ZooKeeper session timeout, in milliseconds (> 0). A request with no reply within it
/// counts as lost. Ignored by the embedded stores.
///
/// # Safety
/// `options` must be NULL or live options not used by another thread during the call.
#[no_mangle]
pub unsafe extern "C" fn zooid_options_set_session_timeout_ms(
    options: *mut zooid_options,
    timeout_ms: u64,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let options = unsafe { arg_mut(options, "options") }?;
        options.connect.session_timeout = positive_millis(timeout_ms, "the session timeout")?;
        Ok(())
    })
}

/// Sets ZooKeeper `digest` authentication: the session authenticates as `user` with
/// `password`, and categories it creates are readable and writable by that user only. The
/// strings are copied. Ignored by the embedded stores.
///
/// # Safety
/// `options` must be NULL or live options not used by another thread during the call; `user`
/// and `password` NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn zooid_options_set_digest_auth(
    options: *mut zooid_options,
    user: *const c_char,
    password: *const c_char,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let options = unsafe { arg_mut(options, "options") }?;
        // SAFETY: forwarded from this function's contract.
        let user = unsafe { arg_str(user, "user") }?;
        // SAFETY: forwarded from this function's contract.
        let password = unsafe { arg_str(password, "password") }?;
        options.connect.digest_auth = Some((user.to_string(), password.to_string()));
        Ok(())
    })
}

/// Sets TLS to the ensemble's `secureClientPort`: `ca_file` is the PEM file of the CA that
/// signed the servers' certificates; `cert_file` and `key_file` (both NULL, or both set) are the
/// client certificate and its key for mutual TLS. The paths are copied; the files are read when
/// the service opens its session (and again for every replacement session). The connect string
/// must then name the servers' secure ports. Server hostnames (or IPs) are verified.
///
/// Errors: `ZOOID_STATUS_INVALID_ARGUMENT` when only one of `cert_file` and `key_file` is given.
/// An unreadable or invalid file fails `zooid_service_open` with
/// `ZOOID_STATUS_INVALID_ARGUMENT` naming the file; a server whose certificate the CA did not
/// sign fails it with `ZOOID_STATUS_CONNECTION_LOST`.
///
/// # Safety
/// `options` must be NULL or live options not used by another thread during the call;
/// `ca_file` NULL or a NUL-terminated string; `cert_file` and `key_file` NULL or NUL-terminated
/// strings.
#[no_mangle]
pub unsafe extern "C" fn zooid_options_set_tls(
    options: *mut zooid_options,
    ca_file: *const c_char,
    cert_file: *const c_char,
    key_file: *const c_char,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let options = unsafe { arg_mut(options, "options") }?;
        // SAFETY: forwarded from this function's contract.
        let ca = unsafe { arg_str(ca_file, "ca_file") }?;
        let mut tls = TlsFiles::ca(ca);
        match (cert_file.is_null(), key_file.is_null()) {
            (true, true) => {}
            (false, false) => {
                // SAFETY: forwarded from this function's contract.
                let cert = unsafe { arg_str(cert_file, "cert_file") }?;
                // SAFETY: forwarded from this function's contract.
                let key = unsafe { arg_str(key_file, "key_file") }?;
                tls = tls.with_identity(cert, key);
            }
            _ => {
                return Err(Failure::Invalid(
                    "cert_file and key_file go together: give both or neither".into(),
                ))
            }
        }
        options.connect.tls = Some(tls);
        Ok(())
    })
}

/// Sets SASL DIGEST-MD5 authentication as `user` with `password` (a user of the servers' JAAS
/// `Server` section), during the connection handshake. ACL entries `sasl:USER` then grant it
/// rights. The strings are copied; the password is never shown in messages. Ignored by the
/// embedded stores. A wrong password fails `zooid_service_open` with
/// `ZOOID_STATUS_AUTH_FAILED`.
///
/// # Safety
/// `options` must be NULL or live options not used by another thread during the call; `user`
/// and `password` NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn zooid_options_set_sasl_digest(
    options: *mut zooid_options,
    user: *const c_char,
    password: *const c_char,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let options = unsafe { arg_mut(options, "options") }?;
        // SAFETY: forwarded from this function's contract.
        let user = unsafe { arg_str(user, "user") }?;
        // SAFETY: forwarded from this function's contract.
        let password = unsafe { arg_str(password, "password") }?;
        options.connect.sasl = Some(Sasl::digest(user, password));
        Ok(())
    })
}

/// Sets SASL Kerberos (GSSAPI) authentication as `principal`, with its key from `keytab_file`,
/// to servers whose principal is `zookeeper/HOST`. The strings are copied. Needs a libzooid
/// built with the `kerberos` feature (else `zooid_service_open` fails with
/// `ZOOID_STATUS_INVALID_ARGUMENT`); the keytab is process-wide (`KRB5_CLIENT_KTNAME`).
///
/// # Safety
/// `options` must be NULL or live options not used by another thread during the call;
/// `principal` and `keytab_file` NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn zooid_options_set_sasl_kerberos(
    options: *mut zooid_options,
    principal: *const c_char,
    keytab_file: *const c_char,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let options = unsafe { arg_mut(options, "options") }?;
        // SAFETY: forwarded from this function's contract.
        let principal = unsafe { arg_str(principal, "principal") }?;
        // SAFETY: forwarded from this function's contract.
        let keytab = unsafe { arg_str(keytab_file, "keytab_file") }?;
        options.connect.sasl = Some(Sasl::kerberos(principal, keytab));
        Ok(())
    })
}

/// Sets the longest time one operation (create, take, push) may take, retries included, in
/// milliseconds (> 0). When it runs out the call fails with `ZOOID_STATUS_CONNECTION_LOST`,
/// `ZOOID_STATUS_CONTENTION` or `ZOOID_STATUS_TIMEOUT`, depending on what held it up.
///
/// # Safety
/// `options` must be NULL or live options not used by another thread during the call.
#[no_mangle]
pub unsafe extern "C" fn zooid_options_set_retry_deadline_ms(
    options: *mut zooid_options,
    deadline_ms: u64,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let options = unsafe { arg_mut(options, "options") }?;
        options.service.retry.deadline = positive_millis(deadline_ms, "the retry deadline")?;
        Ok(())
    })
}

/// Sets the most write attempts one operation makes (> 0) before it gives up on version
/// conflicts (`ZOOID_STATUS_CONTENTION`) or an unreachable store.
///
/// # Safety
/// `options` must be NULL or live options not used by another thread during the call.
#[no_mangle]
pub unsafe extern "C" fn zooid_options_set_retry_max_attempts(
    options: *mut zooid_options,
    max_attempts: u32,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let options = unsafe { arg_mut(options, "options") }?;
        if max_attempts == 0 {
            return Err(Failure::Invalid("max_attempts must be at least 1".into()));
        }
        options.service.retry.max_attempts = max_attempts;
        Ok(())
    })
}

/// Frees options; NULL is accepted and ignored.
///
/// # Safety
/// `options` must be NULL or options from `zooid_options_new` not yet freed; they must not be
/// used afterwards.
#[no_mangle]
pub unsafe extern "C" fn zooid_options_free(options: *mut zooid_options) {
    guard_void(|| {
        if !options.is_null() {
            // SAFETY: from `Box::into_raw` in `zooid_options_new`, freed once.
            drop(unsafe { Box::from_raw(options) });
        }
    })
}
