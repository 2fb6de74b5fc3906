//! The native methods behind `io.zooid.IDSource`: open a prefetching [`IdSource`] on a service,
//! hand out a run of IDs, close (pushing back what Java did not use), stats, free.
//!
//! The refill runs in Rust: the source's background task keeps the next batch ready, and Java
//! pulls runs of consecutive IDs (up to its chunk size) with one JNI call each, written into a
//! caller-owned `long[2]` so that the call allocates nothing; `IDSource.next()` then counts
//! through the run in Java. A source crosses to Java as a handle ([`super::handle`]).

use jni::objects::{JClass, JLongArray, JObject, JString};
use jni::sys::jlong;
use jni::{native_method, Env, NativeMethod};

use super::arrays::{long, long_array};
use super::convert::{invalid, ranges_from_java, string_arg};
use super::errors::{Failure, ThrowJava, ThrowUnchecked};
use super::handle::{self, into_handle};
use super::options::source_options;
use super::service::service;
use crate::blocking::IdSource;
use crate::idset::IdCategory;

pub(super) const METHODS: &[NativeMethod] = &[
    native_method! {
        static fn source_open(service: jlong, category: JString, options: io.zooid.IDSourceOptions) -> jlong,
        error_policy = ThrowJava,
    },
    native_method! {
        static fn source_next_run(handle: jlong, max: jlong, out: jlong[]),
        error_policy = ThrowJava,
    },
    native_method! {
        static fn source_close(handle: jlong, unused: jlong[]),
        error_policy = ThrowJava,
    },
    native_method! {
        static fn source_stats(handle: jlong) -> jlong[],
        error_policy = ThrowJava,
    },
    native_method! {
        static fn source_free(handle: jlong),
        error_policy = ThrowUnchecked,
    },
];

fn count(value: jlong, what: &str) -> Result<u64, Failure> {
    u64::try_from(value).map_err(|_| invalid(format!("{what} {value} must not be negative")))
}

fn source_open<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    service_handle: jlong,
    category: JString<'local>,
    options: JObject<'local>,
) -> Result<jlong, Failure> {
    let category = IdCategory::new(string_arg(env, &category, "category")?)?;
    let options = source_options(env, &options)?;
    Ok(into_handle(
        service(service_handle)?.open_source(&category, options)?,
    ))
}

/// The source behind a handle.
fn source<'a>(handle: jlong) -> Result<&'a IdSource, Failure> {
    handle::get(handle)
}

/// Writes the next run of at most `max` IDs to `out[0]` (first) and `out[1]` (last); blocks only
/// when the source holds no ID.
fn source_next_run<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    max: jlong,
    out: JLongArray<'local>,
) -> Result<(), Failure> {
    if out.is_null() {
        return Err(Failure::NullArgument("out".into()));
    }
    // Checked before the run leaves the source: a run that cannot be written back is lost.
    let len = out.len(env)?;
    if len < 2 {
        return Err(invalid(format!("out: an array of {len} longs; a run needs 2")));
    }
    let run = source(handle)?.next_run(count(max, "run length")?)?;
    out.set_region(env, 0, &[run.start(), run.end()])?;
    Ok(())
}

fn source_close<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    unused: JLongArray<'local>,
) -> Result<(), Failure> {
    let unused = ranges_from_java(env, &unused)?;
    Ok(source(handle)?.close_returning(&unused)?)
}

/// `[handed out, refills, refill failures, waits, last batch, held locally]`.
fn source_stats<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<JLongArray<'local>, Failure> {
    let stats = source(handle)?.stats();
    let values = [
        stats.handed_out,
        stats.refills,
        stats.refill_failures,
        stats.waits,
        stats.batches.last().copied().unwrap_or(0),
        stats.local,
    ]
    .map(long);
    Ok(long_array(env, &values)?)
}

fn source_free<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<(), Failure> {
    handle::free::<IdSource>(handle);
    Ok(())
}
