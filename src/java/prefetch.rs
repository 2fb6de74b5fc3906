//! The native methods behind `io.zooid.IDSource`: open a prefetching [`IdSource`] on a service,
//! hand out a run of IDs, close (pushing back what Java did not use), stats, free.
//!
//! The refill runs in Rust: the source's background task keeps the next batch ready, and Java
//! pulls runs of consecutive IDs (up to its chunk size) with one JNI call each, written into a
//! caller-owned `long[2]` so that the call allocates nothing; `IDSource.next()` then counts
//! through the run in Java. A source crosses to Java as a `long` handle (a leaked `Box`); the
//! Java class uses it only while open and frees it exactly once.

use std::time::Duration;

use jni::objects::{JClass, JLongArray, JString};
use jni::sys::{jdouble, jlong};
use jni::{native_method, Env, NativeMethod};

use super::errors::{Failure, ThrowJava};
use super::service::{long_array, ranges_from_java, service};
use super::string_arg;
use crate::blocking::IdSource;
use crate::prefetch::SourceOptions;
use crate::{IdCategory, ZooidError};

pub(super) const METHODS: &[NativeMethod] = &[
    native_method! {
        static fn source_open(
            service: jlong,
            category: JString,
            initial_batch: jlong,
            min_batch: jlong,
            max_batch: jlong,
            refill_when_used: jdouble,
            target_batch_millis: jlong
        ) -> jlong,
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
        error_policy = ThrowJava,
    },
];

fn count(value: jlong, what: &str) -> Result<u64, Failure> {
    u64::try_from(value).map_err(|_| {
        Failure::Zooid(ZooidError::InvalidArgument(format!(
            "{what} {value} must not be negative"
        )))
    })
}

#[allow(clippy::too_many_arguments)] // mirrors the Java signature
fn source_open<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    service_handle: jlong,
    category: JString<'local>,
    initial_batch: jlong,
    min_batch: jlong,
    max_batch: jlong,
    refill_when_used: jdouble,
    target_batch_millis: jlong,
) -> Result<jlong, Failure> {
    let category = IdCategory::new(string_arg(env, &category, "category")?)?;
    let options = SourceOptions {
        initial_batch: count(initial_batch, "initial batch")?,
        min_batch: count(min_batch, "min batch")?,
        max_batch: count(max_batch, "max batch")?,
        refill_when_used,
        target_batch_duration: Duration::from_millis(count(
            target_batch_millis,
            "target batch duration",
        )?),
        ..SourceOptions::default()
    };
    let source = IdSource::open(service(service_handle)?, &category, options)?;
    Ok(Box::into_raw(Box::new(source)) as jlong)
}

/// The source behind a handle.
///
/// `IDSource` passes only handles from `source_open` not yet freed, and frees a handle only while
/// no other call uses it (all calls hold its monitor), so the pointer is live for `'a`.
fn source<'a>(handle: jlong) -> Result<&'a IdSource, Failure> {
    let ptr = handle as *const IdSource;
    if ptr.is_null() {
        return Err(Failure::IllegalState("the IDSource is closed".into()));
    }
    // SAFETY: see above.
    Ok(unsafe { &*ptr })
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
    .map(|v| i64::try_from(v).unwrap_or(i64::MAX));
    Ok(long_array(env, &values)?)
}

fn source_free<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<(), Failure> {
    let ptr = handle as *mut IdSource;
    if !ptr.is_null() {
        // SAFETY: from `Box::into_raw` in `source_open`; Java frees it exactly once, when no call
        // is using it.
        drop(unsafe { Box::from_raw(ptr) });
    }
    Ok(())
}
