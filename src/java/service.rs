//! The native methods behind `io.zooid.IDGeneratorService`: open, close, create a category, take,
//! push and inspect, each a direct call of [`IdGeneratorService`].
//!
//! A service crosses to Java as a `long` handle (a leaked `Box`); the Java class guarantees that a
//! handle is used only while it is open and closed exactly once. Ranges cross as one `long[]` of
//! start/end pairs.

use std::time::Duration;

use jni::objects::{JClass, JLongArray, JString};
use jni::sys::{jint, jlong};
use jni::{native_method, Env, NativeMethod};

use super::errors::{Failure, ThrowJava};
use super::{optional_string_arg, string_arg};
use crate::blocking::IdGeneratorService;
use crate::{
    ConnectOptions, IdCategory, IdRange, IdSet, RetryPolicy, Sasl, ServiceOptions, TlsFiles,
    ZooidError,
};

pub(super) const METHODS: &[NativeMethod] = &[
    native_method! {
        static fn open(
            connect: JString,
            session_timeout_millis: jlong,
            digest_user: JString,
            digest_password: JString,
            operation_timeout_millis: jlong,
            max_attempts: jint,
            max_pool_bytes: jlong,
            tls_ca: JString,
            tls_cert: JString,
            tls_key: JString,
            sasl_mechanism: JString,
            sasl_user: JString,
            sasl_password: JString,
            sasl_keytab: JString
        ) -> jlong,
        error_policy = ThrowJava,
    },
    native_method! {
        static fn close(handle: jlong),
        error_policy = ThrowJava,
    },
    native_method! {
        static fn create_category(handle: jlong, category: JString, first: jlong, last: jlong),
        error_policy = ThrowJava,
    },
    native_method! {
        static fn create_category_blocks(
            handle: jlong,
            category: JString,
            first: jlong,
            last: jlong,
            block_size: jlong
        ),
        error_policy = ThrowJava,
    },
    native_method! {
        static fn create_category_with_acl(
            handle: jlong,
            category: JString,
            first: jlong,
            last: jlong,
            acl: JString
        ),
        error_policy = ThrowJava,
    },
    native_method! {
        static fn take_ids(handle: jlong, category: JString, count: jint) -> jlong[],
        error_policy = ThrowJava,
    },
    native_method! {
        static fn push_ids(handle: jlong, category: JString, ranges: jlong[]),
        error_policy = ThrowJava,
    },
    native_method! {
        static fn pool_info(handle: jlong, category: JString) -> jlong[],
        error_policy = ThrowJava,
    },
];

/// `Some(d)` for a positive number of milliseconds, `None` (the default) otherwise.
fn millis(value: jlong) -> Option<Duration> {
    u64::try_from(value)
        .ok()
        .filter(|&ms| ms > 0)
        .map(Duration::from_millis)
}

#[allow(clippy::too_many_arguments)] // mirrors the Java signature
fn open<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    connect: JString<'local>,
    session_timeout_millis: jlong,
    digest_user: JString<'local>,
    digest_password: JString<'local>,
    operation_timeout_millis: jlong,
    max_attempts: jint,
    max_pool_bytes: jlong,
    tls_ca: JString<'local>,
    tls_cert: JString<'local>,
    tls_key: JString<'local>,
    sasl_mechanism: JString<'local>,
    sasl_user: JString<'local>,
    sasl_password: JString<'local>,
    sasl_keytab: JString<'local>,
) -> Result<jlong, Failure> {
    let connect = string_arg(env, &connect, "connect")?;
    let mut connect_options = ConnectOptions::default();
    if let Some(timeout) = millis(session_timeout_millis) {
        connect_options.session_timeout = timeout;
    }
    let user = optional_string_arg(env, &digest_user)?;
    let password = optional_string_arg(env, &digest_password)?;
    connect_options.digest_auth = match (user, password) {
        (Some(user), Some(password)) => Some((user, password)),
        (None, None) => None,
        _ => {
            return Err(ZooidError::InvalidArgument(
                "digest auth needs both a user and a password".into(),
            )
            .into())
        }
    };
    if let Some(ca) = optional_string_arg(env, &tls_ca)? {
        let mut tls = TlsFiles::ca(ca);
        match (
            optional_string_arg(env, &tls_cert)?,
            optional_string_arg(env, &tls_key)?,
        ) {
            (Some(cert), Some(key)) => tls = tls.with_identity(cert, key),
            (None, None) => {}
            _ => {
                return Err(ZooidError::InvalidArgument(
                    "TLS client certificate and key go together".into(),
                )
                .into())
            }
        }
        connect_options.tls = Some(tls);
    }
    let user = optional_string_arg(env, &sasl_user)?;
    connect_options.sasl = match optional_string_arg(env, &sasl_mechanism)?.as_deref() {
        None => None,
        Some("digest") => Some(Sasl::digest(
            user.ok_or(Failure::NullArgument("SASL user".into()))?,
            optional_string_arg(env, &sasl_password)?
                .ok_or(Failure::NullArgument("SASL password".into()))?,
        )),
        Some("kerberos") => Some(Sasl::kerberos(
            user.ok_or(Failure::NullArgument("Kerberos principal".into()))?,
            optional_string_arg(env, &sasl_keytab)?
                .ok_or(Failure::NullArgument("Kerberos keytab".into()))?,
        )),
        Some(other) => {
            return Err(ZooidError::InvalidArgument(format!(
                "unknown SASL mechanism {other:?} (digest or kerberos)"
            ))
            .into())
        }
    };
    let mut options = ServiceOptions::default();
    let mut retry = RetryPolicy::default();
    if let Some(deadline) = millis(operation_timeout_millis) {
        retry.deadline = deadline;
    }
    if let Ok(attempts) = u32::try_from(max_attempts) {
        if attempts > 0 {
            retry.max_attempts = attempts;
        }
    }
    options.retry = retry;
    if let Ok(bytes) = usize::try_from(max_pool_bytes) {
        if bytes > 0 {
            options.max_pool_bytes = bytes;
        }
    }
    let service = IdGeneratorService::connect(&connect, &connect_options, options)?;
    Ok(Box::into_raw(Box::new(service)) as jlong)
}

/// The service behind a handle.
///
/// The Java side passes only handles returned by `open` and not yet closed (it holds a read lock
/// for the whole call, and `close` takes the write lock), so the pointer is live for `'a`.
pub(super) fn service<'a>(handle: jlong) -> Result<&'a IdGeneratorService, Failure> {
    let ptr = handle as *const IdGeneratorService;
    if ptr.is_null() {
        return Err(Failure::IllegalState(
            "the IDGeneratorService is closed".into(),
        ));
    }
    // SAFETY: see above: `handle` came from `Box::into_raw` in `open` and is not yet freed.
    Ok(unsafe { &*ptr })
}

fn close<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<(), Failure> {
    let ptr = handle as *mut IdGeneratorService;
    if !ptr.is_null() {
        // SAFETY: `handle` came from `Box::into_raw` in `open`; Java closes it exactly once, when
        // no call is using it.
        drop(unsafe { Box::from_raw(ptr) });
    }
    Ok(())
}

fn category_arg(env: &Env<'_>, category: &JString<'_>) -> Result<IdCategory, Failure> {
    Ok(IdCategory::new(string_arg(env, category, "category")?)?)
}

fn create_category<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    category: JString<'local>,
    first: jlong,
    last: jlong,
) -> Result<(), Failure> {
    let category = category_arg(env, &category)?;
    Ok(service(handle)?.create_category(&category, first, last)?)
}

fn create_category_blocks<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    category: JString<'local>,
    first: jlong,
    last: jlong,
    block_size: jlong,
) -> Result<(), Failure> {
    let category = category_arg(env, &category)?;
    let unit = u64::try_from(block_size).map_err(|_| {
        crate::ZooidError::InvalidArgument(format!("block size {block_size}: need 1..=2147483647"))
    })?;
    Ok(service(handle)?.create_category_blocks(&category, first, last, unit)?)
}

fn create_category_with_acl<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    category: JString<'local>,
    first: jlong,
    last: jlong,
    acl: JString<'local>,
) -> Result<(), Failure> {
    let category = category_arg(env, &category)?;
    let acl = crate::acl::parse_acl_list(&string_arg(env, &acl, "acl")?)?;
    Ok(service(handle)?.create_category_with_acl(&category, first, last, Some(&acl))?)
}

fn take_ids<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    category: JString<'local>,
    count: jint,
) -> Result<JLongArray<'local>, Failure> {
    let category = category_arg(env, &category)?;
    let count = u64::try_from(count)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            ZooidError::InvalidArgument(format!("take of {count} IDs: ask for at least 1"))
        })?;
    let ids = service(handle)?.take_ids(&category, count)?;
    Ok(ranges_to_java(env, &ids.ranges())?)
}

fn push_ids<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    category: JString<'local>,
    ranges: JLongArray<'local>,
) -> Result<(), Failure> {
    let category = category_arg(env, &category)?;
    let ranges = ranges_from_java(env, &ranges)?;
    let mut ids = IdSet::new(category, ranges);
    Ok(service(handle)?.push_ids(&mut ids)?)
}

fn pool_info<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    category: JString<'local>,
) -> Result<JLongArray<'local>, Failure> {
    let category = category_arg(env, &category)?;
    let info = service(handle)?.pool_info(&category)?;
    // Layout read by io.zooid.PoolInfo: bounds start, bounds end, version, bytes, legacy (0/1),
    // free count, then the free ranges as start/end pairs.
    let mut values = vec![
        info.bounds.start(),
        info.bounds.end(),
        i64::from(info.version),
        i64::try_from(info.bytes).unwrap_or(i64::MAX),
        i64::from(info.legacy),
        i64::try_from(info.free_count).unwrap_or(i64::MAX),
    ];
    values.extend(info.free.iter().flat_map(|r| [r.start(), r.end()]));
    Ok(long_array(env, &values)?)
}

/// A new `long[]` holding `values`.
pub(super) fn long_array<'local>(
    env: &mut Env<'local>,
    values: &[i64],
) -> Result<JLongArray<'local>, jni::errors::Error> {
    let array = JLongArray::new(env, values.len())?;
    array.set_region(env, 0, values)?;
    Ok(array)
}

/// Ranges as a `long[]` of start/end pairs.
pub(super) fn ranges_to_java<'local>(
    env: &mut Env<'local>,
    ranges: &[IdRange],
) -> Result<JLongArray<'local>, jni::errors::Error> {
    let values: Vec<i64> = ranges.iter().flat_map(|r| [r.start(), r.end()]).collect();
    long_array(env, &values)
}

/// Ranges from a `long[]` of start/end pairs, which must be ascending and disjoint.
pub(super) fn ranges_from_java(
    env: &Env<'_>,
    array: &JLongArray<'_>,
) -> Result<Vec<IdRange>, Failure> {
    if array.is_null() {
        return Err(Failure::NullArgument("ranges".into()));
    }
    let len = array.len(env)?;
    if len % 2 != 0 {
        return Err(invalid(format!(
            "ranges must be start/end pairs, got {len} values"
        )));
    }
    let mut values = vec![0i64; len];
    array.get_region(env, 0, &mut values)?;
    let mut ranges: Vec<IdRange> = Vec::with_capacity(len / 2);
    for pair in values.chunks_exact(2) {
        let range = IdRange::new(pair[0], pair[1]).ok_or_else(|| {
            invalid(format!(
                "range {}:{} ends before it starts",
                pair[0], pair[1]
            ))
        })?;
        if let Some(previous) = ranges.last() {
            if previous.end() >= range.start() {
                return Err(invalid(format!(
                    "ranges must be ascending and disjoint: {previous} then {range}"
                )));
            }
        }
        ranges.push(range);
    }
    Ok(ranges)
}

fn invalid(message: String) -> Failure {
    Failure::Zooid(ZooidError::InvalidArgument(message))
}
