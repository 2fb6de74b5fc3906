//! The native methods behind `io.zooid.WorkQueue` and `WorkQueue.Claim`: open a queue on a
//! service's session, put, claim, and finish a claim, each a direct call of
//! [`crate::blocking::WorkQueue`] / [`crate::blocking::Claim`].
//!
//! A queue and a claim cross to Java as `long` handles (leaked `Box`es). The Java classes
//! guarantee that a queue handle is used only while open and closed exactly once, and that a
//! claim handle is finished (completed, released or freed) exactly once and not used after.

use std::time::Duration;

use jni::objects::{JByteArray, JClass, JString};
use jni::sys::{jboolean, jint, jlong};
use jni::{native_method, Env, NativeMethod};

use super::errors::{Failure, ThrowJava};
use super::optional_string_arg;
use super::service::service;
use super::string_arg;
use crate::blocking::{Claim, WorkQueue};
use crate::queue::QueueOptions;
use crate::runtime::runtime;

pub(super) const METHODS: &[NativeMethod] = &[
    native_method! {
        static fn queue_open(
            service: jlong,
            path: JString,
            max_items: jint,
            max_item_bytes: jint,
            op_timeout_millis: jlong,
            identity: JString
        ) -> jlong,
        error_policy = ThrowJava,
    },
    native_method! {
        static fn queue_close(handle: jlong),
        error_policy = ThrowJava,
    },
    native_method! {
        static fn queue_put(handle: jlong, data: jbyte[]) -> JString,
        error_policy = ThrowJava,
    },
    native_method! {
        static fn queue_claim(handle: jlong, timeout_millis: jlong) -> jlong,
        error_policy = ThrowJava,
    },
    native_method! {
        static fn claim_item(claim: jlong) -> JString,
        error_policy = ThrowJava,
    },
    native_method! {
        static fn claim_data(claim: jlong) -> jbyte[],
        error_policy = ThrowJava,
    },
    native_method! {
        static fn claim_sequence(claim: jlong) -> jlong,
        error_policy = ThrowJava,
    },
    native_method! {
        static fn claim_is_lost(claim: jlong) -> jboolean,
        error_policy = ThrowJava,
    },
    native_method! {
        static fn claim_complete(claim: jlong),
        error_policy = ThrowJava,
    },
    native_method! {
        static fn claim_release(claim: jlong),
        error_policy = ThrowJava,
    },
    native_method! {
        static fn claim_free(claim: jlong),
        error_policy = ThrowJava,
    },
];

/// Drops `value` inside zooid's runtime: queues and claims hold a ZooKeeper client, which
/// spawns tasks when dropped.
fn drop_in_runtime<T>(value: T) {
    match runtime() {
        Ok(rt) => {
            let _guard = rt.enter();
            drop(value);
        }
        Err(_) => drop(value),
    }
}

/// Opens a queue on the session of the service `service`; non-positive numbers (negative for
/// `max_item_bytes`, where 0 is a limit) and a null identity mean the default.
#[allow(clippy::too_many_arguments)] // mirrors the Java signature
fn queue_open<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    service_handle: jlong,
    path: JString<'local>,
    max_items: jint,
    max_item_bytes: jint,
    op_timeout_millis: jlong,
    identity: JString<'local>,
) -> Result<jlong, Failure> {
    let path = string_arg(env, &path, "path")?;
    let mut options = QueueOptions::default();
    if let Ok(n) = usize::try_from(max_items) {
        if n > 0 {
            options.max_items = n;
        }
    }
    if let Ok(n) = usize::try_from(max_item_bytes) {
        options.max_item_bytes = n;
    }
    if let Ok(ms) = u64::try_from(op_timeout_millis) {
        if ms > 0 {
            options.op_timeout = Duration::from_millis(ms);
        }
    }
    options.identity = optional_string_arg(env, &identity)?;
    let session = service(service_handle)?.session()?;
    let opened = WorkQueue::open(&session, &path, options);
    drop_in_runtime(session);
    Ok(Box::into_raw(Box::new(opened?)) as jlong)
}

/// The queue behind a handle.
///
/// The Java side passes only handles returned by `queue_open` and not yet closed (it holds a
/// read lock for the whole call, and `close` takes the write lock), so the pointer is live.
fn queue<'a>(handle: jlong) -> Result<&'a WorkQueue, Failure> {
    let ptr = handle as *const WorkQueue;
    if ptr.is_null() {
        return Err(Failure::IllegalState("the WorkQueue is closed".into()));
    }
    // SAFETY: see above: `handle` came from `Box::into_raw` in `queue_open` and is not yet freed.
    Ok(unsafe { &*ptr })
}

fn queue_close<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<(), Failure> {
    let ptr = handle as *mut WorkQueue;
    if !ptr.is_null() {
        // SAFETY: `handle` came from `Box::into_raw` in `queue_open`; Java closes it exactly
        // once, when no call is using it.
        drop_in_runtime(unsafe { Box::from_raw(ptr) });
    }
    Ok(())
}

fn queue_put<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    data: JByteArray<'local>,
) -> Result<JString<'local>, Failure> {
    if data.is_null() {
        return Err(Failure::NullArgument("data".into()));
    }
    let data = env.convert_byte_array(&data)?;
    let name = queue(handle)?.put(&data)?;
    Ok(JString::from_str(env, &name)?)
}

/// Claims an item, waiting up to `timeout_millis` (negative: for ever); 0 when none came.
fn queue_claim<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    timeout_millis: jlong,
) -> Result<jlong, Failure> {
    let timeout = u64::try_from(timeout_millis)
        .ok()
        .map(Duration::from_millis);
    Ok(match queue(handle)?.claim(timeout)? {
        Some(claim) => Box::into_raw(Box::new(claim)) as jlong,
        None => 0,
    })
}

/// The claim behind a handle.
///
/// The Java side passes only handles returned by `queue_claim` and not yet finished (it
/// serializes the calls of one claim and finishes it once), so the pointer is live.
fn claim<'a>(handle: jlong) -> Result<&'a Claim, Failure> {
    let ptr = handle as *const Claim;
    if ptr.is_null() {
        return Err(Failure::IllegalState("the claim is finished".into()));
    }
    // SAFETY: see above: `handle` came from `Box::into_raw` in `queue_claim`, not yet freed.
    Ok(unsafe { &*ptr })
}

/// Takes back ownership of the claim behind a handle, which Java never uses again.
fn take_claim(handle: jlong) -> Result<Box<Claim>, Failure> {
    let ptr = handle as *mut Claim;
    if ptr.is_null() {
        return Err(Failure::IllegalState("the claim is finished".into()));
    }
    // SAFETY: from `Box::into_raw` in `queue_claim`; Java finishes a claim exactly once.
    Ok(unsafe { Box::from_raw(ptr) })
}

fn claim_item<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<JString<'local>, Failure> {
    let item = claim(handle)?.item();
    Ok(JString::from_str(env, item)?)
}

fn claim_data<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<JByteArray<'local>, Failure> {
    let data = claim(handle)?.data();
    Ok(env.byte_array_from_slice(data)?)
}

fn claim_sequence<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<jlong, Failure> {
    Ok(i64::try_from(claim(handle)?.sequence()).unwrap_or(i64::MAX))
}

fn claim_is_lost<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<jboolean, Failure> {
    Ok(claim(handle)?.is_lost())
}

fn claim_complete<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<(), Failure> {
    Ok(take_claim(handle)?.complete()?)
}

fn claim_release<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<(), Failure> {
    Ok(take_claim(handle)?.release()?)
}

/// Frees a claim; one neither completed nor released is released in the background.
fn claim_free<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<(), Failure> {
    if handle != 0 {
        // blocking::Claim drops itself inside the runtime.
        drop(take_claim(handle)?);
    }
    Ok(())
}
