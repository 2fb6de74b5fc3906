//! The native methods behind `io.zooid.Counter` (the CAS counter, [`crate::blocking::Counter`]):
//! open from a service handle, init, next, get, close.
//!
//! A counter crosses to Java as a `long` handle (a leaked `Box`); the Java class guarantees that
//! a handle is used only while open and closed exactly once. `next` returns its range as a
//! `long[2]` (first, last).

use jni::objects::{JClass, JLongArray, JString};
use jni::sys::jlong;
use jni::{native_method, Env, NativeMethod};

use super::errors::{Failure, ThrowJava};
use super::service::long_array;
use super::string_arg;
use crate::blocking::{Counter, IdGeneratorService};
use crate::ZooidError;

/// Registered on `io.zooid.Counter`.
pub(super) const METHODS: &[NativeMethod] = &[
    native_method! {
        static fn native_open(service: jlong, path: JString) -> jlong,
        error_policy = ThrowJava,
    },
    native_method! {
        static fn native_close(handle: jlong),
        error_policy = ThrowJava,
    },
    native_method! {
        static fn native_init(handle: jlong, value: jlong),
        error_policy = ThrowJava,
    },
    native_method! {
        static fn native_next(handle: jlong, n: jlong) -> jlong[],
        error_policy = ThrowJava,
    },
    native_method! {
        static fn native_get(handle: jlong) -> jlong,
        error_policy = ThrowJava,
    },
];

fn native_open<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    service: jlong,
    path: JString<'local>,
) -> Result<jlong, Failure> {
    let path = string_arg(env, &path, "path")?;
    let ptr = service as *const IdGeneratorService;
    if ptr.is_null() {
        return Err(Failure::IllegalState(
            "the IDGeneratorService is closed".into(),
        ));
    }
    // SAFETY: a live service handle: io.zooid.Counter opens only while holding the service's
    // read lock, so the service cannot be closed during this call.
    let service = unsafe { &*ptr };
    let counter = Counter::with_policy(
        service.session()?,
        &path,
        service.as_async().options().retry,
    )?;
    Ok(Box::into_raw(Box::new(counter)) as jlong)
}

/// The counter behind a handle (live: the Java class holds its read lock during calls and
/// closes it once, under the write lock).
fn counter<'a>(handle: jlong) -> Result<&'a Counter, Failure> {
    let ptr = handle as *const Counter;
    if ptr.is_null() {
        return Err(Failure::IllegalState("the Counter is closed".into()));
    }
    // SAFETY: see above: `handle` came from `Box::into_raw` in `native_open`, not yet freed.
    Ok(unsafe { &*ptr })
}

fn native_close<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<(), Failure> {
    let ptr = handle as *mut Counter;
    if !ptr.is_null() {
        // SAFETY: from `Box::into_raw` in `native_open`; Java closes it exactly once, when no
        // call is using it.
        drop(unsafe { Box::from_raw(ptr) });
    }
    Ok(())
}

fn native_init<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    value: jlong,
) -> Result<(), Failure> {
    Ok(counter(handle)?.init(value)?)
}

fn native_next<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    n: jlong,
) -> Result<JLongArray<'local>, Failure> {
    let n = u64::try_from(n)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| ZooidError::InvalidArgument(format!("next({n}): ask for at least 1")))?;
    let range = counter(handle)?.next(n)?;
    Ok(long_array(env, &[range.start(), range.end()])?)
}

fn native_get<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<jlong, Failure> {
    Ok(counter(handle)?.get()?)
}
