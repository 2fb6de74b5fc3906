//! The native methods behind `io.zooid.WorkQueue` and `WorkQueue.Claim`: open a queue on a
//! service's session, put, claim, and finish a claim, each a direct call of
//! [`crate::blocking::WorkQueue`] / [`crate::blocking::Claim`].
//!
//! A queue and a claim cross to Java as handles ([`super::handle`]); a claim's handle is
//! consumed by completing or releasing it, or freed.

use jni::objects::{JByteArray, JClass, JObject, JString};
use jni::sys::{jboolean, jlong};
use jni::{native_method, Env, NativeMethod};

use super::convert::string_arg;
use super::errors::{Failure, ThrowJava, ThrowUnchecked};
use super::handle::{self, into_handle};
use super::options::queue_options;
use super::service::service;
use crate::blocking::{Claim, WorkQueue};
use crate::marshal::millis;

pub(super) const METHODS: &[NativeMethod] = &[
    native_method! {
        static fn queue_open(service: jlong, path: JString, options: io.zooid.WorkQueueOptions) -> jlong,
        error_policy = ThrowJava,
    },
    native_method! {
        static fn queue_close(handle: jlong),
        error_policy = ThrowUnchecked,
    },
    native_method! {
        static fn queue_stop_claims(handle: jlong),
        error_policy = ThrowUnchecked,
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
        error_policy = ThrowUnchecked,
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
        error_policy = ThrowUnchecked,
    },
];

/// Opens a queue on the session of the service `service`.
fn queue_open<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    service_handle: jlong,
    path: JString<'local>,
    options: JObject<'local>,
) -> Result<jlong, Failure> {
    let path = string_arg(env, &path, "path")?;
    let options = queue_options(env, &options)?;
    Ok(into_handle(
        service(service_handle)?.open_queue(&path, options)?,
    ))
}

fn queue_close<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<(), Failure> {
    handle::free::<WorkQueue>(handle);
    Ok(())
}

/// Ends the claims waiting on the queue (its close, before the free waits for them).
fn queue_stop_claims<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<(), Failure> {
    handle::get::<WorkQueue>(handle)?.stop_claims();
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
    let name = handle::get::<WorkQueue>(handle)?.put(&data)?;
    Ok(JString::from_str(env, &name)?)
}

/// Claims an item, waiting up to `timeout_millis` (negative: for ever); 0 when none came.
fn queue_claim<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    timeout_millis: jlong,
) -> Result<jlong, Failure> {
    Ok(
        match handle::get::<WorkQueue>(handle)?.claim(millis(timeout_millis))? {
            Some(claim) => into_handle(claim),
            None => 0,
        },
    )
}

fn claim_item<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<JString<'local>, Failure> {
    let item = handle::get::<Claim>(handle)?.item();
    Ok(JString::from_str(env, item)?)
}

fn claim_data<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<JByteArray<'local>, Failure> {
    let data = handle::get::<Claim>(handle)?.data();
    Ok(env.byte_array_from_slice(data)?)
}

fn claim_sequence<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<jlong, Failure> {
    Ok(i64::try_from(handle::get::<Claim>(handle)?.sequence()).unwrap_or(i64::MAX))
}

fn claim_is_lost<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<jboolean, Failure> {
    Ok(handle::get::<Claim>(handle)?.is_lost())
}

fn claim_complete<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<(), Failure> {
    Ok(handle::take::<Claim>(handle)?.complete()?)
}

fn claim_release<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<(), Failure> {
    Ok(handle::take::<Claim>(handle)?.release()?)
}

/// Frees a claim; one neither completed nor released is released in the background.
fn claim_free<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<(), Failure> {
    handle::free::<Claim>(handle);
    Ok(())
}
