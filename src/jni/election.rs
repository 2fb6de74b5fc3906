//! The native methods behind `io.zooid.LeaderElection`: join through a service's session, read
//! the status, wait for a change or for leadership with a timeout, fenced writes, resign, free,
//! and the observer query; each a direct call of [`crate::blocking::Election`].
//!
//! A candidacy crosses to Java as a handle ([`super::handle`]). No native thread calls
//! into Java: the listener of `LeaderElection` is a Java thread looping on `election_wait_change`.
//! Statuses cross as one `long[]` (see [`status_array`]), leader info as one `byte[]` (see
//! [`election_leader`]).

use jni::objects::{JByteArray, JClass, JLongArray, JString};
use jni::sys::{jint, jlong};
use jni::{native_method, Env, NativeMethod};

use super::arrays::{long, long_array};
use super::convert::{bytes_arg, invalid, string_arg};
use super::errors::{Failure, ThrowJava, ThrowUnchecked};
use super::handle::{self, into_handle};
use super::service::service;
use crate::blocking::Election;
use crate::error::ZooidError;
use crate::marshal::millis;
use crate::recipes::election::{ElectionOptions, ElectionStatus, FencedOp, FencedResult};
use crate::recipes::election::{LeaderState, PausePolicy};

pub(super) const METHODS: &[NativeMethod] = &[
    native_method! {
        static fn election_join(
            service_handle: jlong,
            group: JString,
            name: JString,
            data: jbyte[],
            stop_on_pause: jint
        ) -> jlong,
        error_policy = ThrowJava,
    },
    native_method! {
        static fn election_status(handle: jlong) -> jlong[],
        error_policy = ThrowUnchecked,
    },
    native_method! {
        static fn election_wait_change(
            handle: jlong,
            last_state: jint,
            last_token: jlong,
            last_closed: jint,
            timeout_millis: jlong
        ) -> jlong[],
        error_policy = ThrowJava,
    },
    native_method! {
        static fn election_lease_remaining_millis(handle: jlong) -> jlong,
        error_policy = ThrowJava,
    },
    native_method! {
        static fn election_await_leadership(handle: jlong, timeout_millis: jlong) -> jlong,
        error_policy = ThrowJava,
    },
    native_method! {
        static fn election_set_data(handle: jlong, path: JString, data: jbyte[], version: jint) -> jint,
        error_policy = ThrowJava,
    },
    native_method! {
        static fn election_create(handle: jlong, path: JString, data: jbyte[]),
        error_policy = ThrowJava,
    },
    native_method! {
        static fn election_delete(handle: jlong, path: JString, version: jint),
        error_policy = ThrowJava,
    },
    native_method! {
        static fn election_resign(handle: jlong),
        error_policy = ThrowJava,
    },
    native_method! {
        static fn election_free(handle: jlong),
        error_policy = ThrowUnchecked,
    },
    native_method! {
        static fn election_leader(service_handle: jlong, group: JString) -> jbyte[],
        error_policy = ThrowJava,
    },
];

/// The state numbers shared with `io.zooid.LeaderState` (and the C API).
fn state_number(state: LeaderState) -> i64 {
    match state {
        LeaderState::Inactive => 0,
        LeaderState::Active => 1,
        LeaderState::Paused => 2,
    }
}

fn state_of(number: jint) -> Result<LeaderState, Failure> {
    match number {
        0 => Ok(LeaderState::Inactive),
        1 => Ok(LeaderState::Active),
        2 => Ok(LeaderState::Paused),
        other => Err(invalid(format!(
            "leader state {other} is not a LeaderState"
        ))),
    }
}

/// A status as read by `io.zooid.LeaderElection`: state number, token (0 while Inactive),
/// closed (0/1), terms, watch notifications, session generation.
fn status_array<'local>(
    env: &mut Env<'local>,
    status: &ElectionStatus,
) -> Result<JLongArray<'local>, Failure> {
    Ok(long_array(
        env,
        &[
            state_number(status.state),
            status.token.unwrap_or(0),
            i64::from(status.closed),
            long(status.terms),
            long(status.watch_notifications),
            long(status.session_generation),
        ],
    )?)
}

/// The candidacy behind a handle.
fn election<'a>(handle: jlong) -> Result<&'a Election, Failure> {
    handle::get(handle)
}

/// An explicit data version from Java: 0 or more (there is no "any version" here).
fn version_arg(version: jint) -> Result<Option<i32>, Failure> {
    if version < 0 {
        return Err(invalid(format!(
            "expected version {version}: give a data version of 0 or more"
        )));
    }
    Ok(Some(version))
}

fn election_join<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    service_handle: jlong,
    group: JString<'local>,
    name: JString<'local>,
    data: JByteArray<'local>,
    stop_on_pause: jint,
) -> Result<jlong, Failure> {
    let group = string_arg(env, &group, "group")?;
    let name = string_arg(env, &name, "name")?;
    let data = bytes_arg(env, &data)?;
    let options = ElectionOptions {
        name,
        data,
        on_pause: if stop_on_pause != 0 {
            PausePolicy::Stop
        } else {
            PausePolicy::Keep
        },
    };
    Ok(into_handle(
        service(service_handle)?.join_election(&group, options)?,
    ))
}

fn election_status<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<JLongArray<'local>, Failure> {
    let status = election(handle)?.status();
    status_array(env, &status)
}

/// The new status, or null when nothing changed within the timeout (the listener thread's
/// common case, so no exception for it). With a closed `last`, nothing can change: `Closed`.
fn election_wait_change<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    last_state: jint,
    last_token: jlong,
    last_closed: jint,
    timeout_millis: jlong,
) -> Result<JLongArray<'local>, Failure> {
    let election = election(handle)?;
    let last = ElectionStatus {
        state: state_of(last_state)?,
        token: (last_token != 0).then_some(last_token),
        session_generation: 0,
        node: None,
        watch_notifications: 0,
        terms: 0,
        closed: last_closed != 0,
    };
    if last.closed {
        return Err(ZooidError::Closed {
            what: format!(
                "election candidacy {:?} in {}",
                election.name(),
                election.group()
            ),
        }
        .into());
    }
    match election.wait_change(&last, millis(timeout_millis).unwrap_or_default()) {
        Ok(status) => status_array(env, &status),
        Err(ZooidError::Timeout { .. }) => Ok(JLongArray::default()),
        Err(err) => Err(err.into()),
    }
}

/// Milliseconds the lease still runs, 0 when none (see `zooid_election_lease_remaining`).
fn election_lease_remaining_millis<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<jlong, Failure> {
    let left = election(handle)?.lease_remaining().unwrap_or_default();
    Ok(i64::try_from(left.as_millis()).unwrap_or(i64::MAX))
}

fn election_await_leadership<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    timeout_millis: jlong,
) -> Result<jlong, Failure> {
    Ok(election(handle)?.await_leadership(millis(timeout_millis).unwrap_or_default())?)
}

/// Runs one fenced op.
fn fenced_one(handle: jlong, op: FencedOp) -> Result<FencedResult, Failure> {
    let mut results = election(handle)?.fenced(std::slice::from_ref(&op))?;
    results.pop().ok_or_else(|| {
        Failure::Zooid(ZooidError::Store {
            path: op.path().to_string(),
            reason: "ZooKeeper returned no result for the fenced op".into(),
        })
    })
}

fn election_set_data<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    path: JString<'local>,
    data: JByteArray<'local>,
    version: jint,
) -> Result<jint, Failure> {
    let path = string_arg(env, &path, "path")?;
    let data = bytes_arg(env, &data)?;
    let version = version_arg(version)?;
    match fenced_one(
        handle,
        FencedOp::SetData {
            path: path.clone(),
            data,
            version,
        },
    )? {
        FencedResult::Set { version } => Ok(version),
        other => Err(Failure::Zooid(ZooidError::Store {
            path,
            reason: format!("unexpected result of a fenced setData: {other:?}"),
        })),
    }
}

fn election_create<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    path: JString<'local>,
    data: JByteArray<'local>,
) -> Result<(), Failure> {
    let path = string_arg(env, &path, "path")?;
    let data = bytes_arg(env, &data)?;
    fenced_one(handle, FencedOp::Create { path, data })?;
    Ok(())
}

fn election_delete<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    path: JString<'local>,
    version: jint,
) -> Result<(), Failure> {
    let path = string_arg(env, &path, "path")?;
    let version = version_arg(version)?;
    fenced_one(handle, FencedOp::Delete { path, version })?;
    Ok(())
}

fn election_resign<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<(), Failure> {
    Ok(election(handle)?.resign()?)
}

fn election_free<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<(), Failure> {
    handle::free::<Election>(handle);
    Ok(())
}

/// Who leads `group`: null when nobody does, else one `byte[]` read by `io.zooid.LeaderInfo`:
/// token (8 bytes, big-endian), name length (4 bytes BE) and UTF-8 name, node path length and
/// UTF-8 path, then the data to the end.
fn election_leader<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    service_handle: jlong,
    group: JString<'local>,
) -> Result<JByteArray<'local>, Failure> {
    let group = string_arg(env, &group, "group")?;
    let Some(info) = service(service_handle)?.leader(&group)? else {
        return Ok(JByteArray::default());
    };
    let mut bytes = Vec::with_capacity(16 + info.name.len() + info.node.len() + info.data.len());
    bytes.extend_from_slice(&info.token.to_be_bytes());
    for text in [&info.name, &info.node] {
        let len = u32::try_from(text.len()).map_err(|_| invalid("leader text too long".into()))?;
        bytes.extend_from_slice(&len.to_be_bytes());
        bytes.extend_from_slice(text.as_bytes());
    }
    bytes.extend_from_slice(&info.data);
    Ok(env.byte_array_from_slice(&bytes)?)
}
