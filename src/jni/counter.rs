//! The native methods behind `io.zooid.Counter` (the CAS counter, [`crate::blocking::Counter`]):
//! open on a service's session, init, next, get, close.
//!
//! A counter crosses to Java as a handle ([`super::handle`]); `next` returns its range as a
//! `long[2]` (first, last).

use jni::objects::{JClass, JLongArray, JString};
use jni::sys::jlong;
use jni::{native_method, Env, NativeMethod};

use super::arrays::long_array;
use super::convert::{invalid, string_arg};
use super::errors::{Failure, ThrowJava, ThrowUnchecked};
use super::handle::{self, into_handle};
use super::service::service;
use super::undelivered;
use crate::blocking::Counter;

pub(super) const METHODS: &[NativeMethod] = &[
    native_method! {
        static fn counter_open(service: jlong, path: JString) -> jlong,
        error_policy = ThrowJava,
    },
    native_method! {
        static fn counter_close(handle: jlong),
        error_policy = ThrowUnchecked,
    },
    native_method! {
        static fn counter_init(handle: jlong, value: jlong),
        error_policy = ThrowJava,
    },
    native_method! {
        static fn counter_next(handle: jlong, n: jlong) -> jlong[],
        error_policy = ThrowJava,
    },
    native_method! {
        static fn counter_get(handle: jlong) -> jlong,
        error_policy = ThrowJava,
    },
];

fn counter_open<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    service_handle: jlong,
    path: JString<'local>,
) -> Result<jlong, Failure> {
    let path = string_arg(env, &path, "path")?;
    Ok(into_handle(service(service_handle)?.open_counter(&path)?))
}

fn counter_close<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<(), Failure> {
    handle::free::<Counter>(handle);
    Ok(())
}

fn counter_init<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    value: jlong,
) -> Result<(), Failure> {
    Ok(handle::get::<Counter>(handle)?.init(value)?)
}

fn counter_next<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    n: jlong,
) -> Result<JLongArray<'local>, Failure> {
    let n = u64::try_from(n)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| invalid(format!("next({n}): ask for at least 1")))?;
    let counter = handle::get::<Counter>(handle)?;
    let range = counter.next(n)?;
    long_array(env, &[range.start(), range.end()])
        .map_err(|err| Failure::Undelivered(Box::new(undelivered::skip(env, counter, range, err))))
}

fn counter_get<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<jlong, Failure> {
    Ok(handle::get::<Counter>(handle)?.get()?)
}
