//! The Java options objects as the core's options: `IDGeneratorOptions` (connection and retry),
//! `WorkQueueOptions` and `IDSourceOptions`, read by field name (see [`Fields`]). The Java
//! setters validate; an unset field (0, null, or -1 for `maxItemBytes`) keeps the core's default.

use std::time::Duration;

use jni::objects::JObject;
use jni::Env;

use super::convert::Fields;
use super::errors::Failure;
use crate::alloc::ServiceOptions;
use crate::error::ZooidError;
use crate::marshal::millis;
use crate::recipes::prefetch::SourceOptions;
use crate::recipes::queue::QueueOptions;
use crate::zk::{ConnectOptions, Sasl, TlsFiles};

/// A positive number of milliseconds, or `None` for an unset (0) one.
fn set_millis(ms: i64) -> Option<Duration> {
    millis(ms).filter(|d| !d.is_zero())
}

/// A positive number, or `None` for an unset (0) one.
fn set_count<T: TryFrom<i64>>(value: i64) -> Option<T> {
    if value > 0 {
        T::try_from(value).ok()
    } else {
        None
    }
}

/// Two fields that are set together or not at all.
fn pair(
    first: Option<String>,
    second: Option<String>,
    what: &str,
) -> Result<Option<(String, String)>, Failure> {
    match (first, second) {
        (Some(a), Some(b)) => Ok(Some((a, b))),
        (None, None) => Ok(None),
        _ => Err(ZooidError::InvalidArgument(format!("{what} go together")).into()),
    }
}

/// The connection and service options of an `io.zooid.IDGeneratorOptions`.
pub(super) fn service_options(
    env: &mut Env<'_>,
    object: &JObject<'_>,
) -> Result<(ConnectOptions, ServiceOptions), Failure> {
    let fields = Fields::of(object, "options")?;
    let mut connect = ConnectOptions::default();
    if let Some(timeout) = set_millis(fields.long(env, "sessionTimeoutMillis")?) {
        connect.session_timeout = timeout;
    }
    connect.digest_auth = pair(
        fields.string(env, "digestUser")?,
        fields.string(env, "digestPassword")?,
        "the digest auth user and password",
    )?;
    if let Some(ca) = fields.string(env, "tlsCa")? {
        let identity = pair(
            fields.string(env, "tlsCert")?,
            fields.string(env, "tlsKey")?,
            "the TLS client certificate and key",
        )?;
        connect.tls = Some(match identity {
            Some((cert, key)) => TlsFiles::ca(ca).with_identity(cert, key),
            None => TlsFiles::ca(ca),
        });
    }
    let digest = pair(
        fields.string(env, "saslDigestUser")?,
        fields.string(env, "saslDigestPassword")?,
        "the SASL user and password",
    )?;
    let kerberos = pair(
        fields.string(env, "kerberosPrincipal")?,
        fields.string(env, "kerberosKeytab")?,
        "the Kerberos principal and keytab",
    )?;
    connect.sasl = match (digest, kerberos) {
        (Some((user, password)), None) => Some(Sasl::digest(user, password)),
        (None, Some((principal, keytab))) => Some(Sasl::kerberos(principal, keytab)),
        (None, None) => None,
        (Some(_), Some(_)) => {
            return Err(ZooidError::InvalidArgument(
                "SASL digest and Kerberos are exclusive".into(),
            )
            .into())
        }
    };
    let mut service = ServiceOptions::default();
    if let Some(deadline) = set_millis(fields.long(env, "operationTimeoutMillis")?) {
        service.retry.deadline = deadline;
    }
    if let Some(attempts) = set_count(i64::from(fields.int(env, "maxAttempts")?)) {
        service.retry.max_attempts = attempts;
    }
    if let Some(bytes) = set_count(fields.long(env, "maxPoolBytes")?) {
        service.max_pool_bytes = bytes;
    }
    Ok((connect, service))
}

/// The options of an `io.zooid.WorkQueueOptions`.
pub(super) fn queue_options(
    env: &mut Env<'_>,
    object: &JObject<'_>,
) -> Result<QueueOptions, Failure> {
    let fields = Fields::of(object, "options")?;
    let mut options = QueueOptions::default();
    if let Some(n) = set_count(i64::from(fields.int(env, "maxItems")?)) {
        options.max_items = n;
    }
    // 0 is a limit here: only a negative number is unset.
    if let Ok(n) = usize::try_from(fields.int(env, "maxItemBytes")?) {
        options.max_item_bytes = n;
    }
    if let Some(timeout) = set_millis(fields.long(env, "operationTimeoutMillis")?) {
        options.op_timeout = timeout;
    }
    options.identity = fields.string(env, "identity")?;
    Ok(options)
}

/// The options of an `io.zooid.IDSourceOptions` (its `chunk` stays on the Java side).
pub(super) fn source_options(
    env: &mut Env<'_>,
    object: &JObject<'_>,
) -> Result<SourceOptions, Failure> {
    let fields = Fields::of(object, "options")?;
    let count = |value: i64, what: &str| {
        u64::try_from(value).map_err(|_| {
            Failure::from(ZooidError::InvalidArgument(format!(
                "{what} {value} must not be negative"
            )))
        })
    };
    Ok(SourceOptions {
        initial_batch: count(fields.long(env, "initialBatch")?, "initial batch")?,
        min_batch: count(fields.long(env, "minBatch")?, "min batch")?,
        max_batch: count(fields.long(env, "maxBatch")?, "max batch")?,
        refill_when_used: fields.double(env, "refillWhenUsed")?,
        target_batch_duration: Duration::from_millis(count(
            fields.long(env, "targetBatchMillis")?,
            "target batch duration",
        )?),
        ..SourceOptions::default()
    })
}
