//! Leader election from C: a candidacy handle over [`crate::blocking::Election`], joined through
//! a service's ZooKeeper session, with blocking waits (no callbacks); its fenced writes
//! ([`fenced`]) and the observer query `zooid_election_leader` ([`leader`]).

use std::ffi::c_char;
use std::time::Duration;

use super::service::zooid_service;
use super::{arg_ref, arg_str, bytes_arg, guard, guard_void, zooid_status, Failure, Out};
use crate::blocking::Election;
use crate::recipes::election::{ElectionOptions, ElectionStatus, MAX_DATA_BYTES};
use crate::recipes::election::{LeaderState, PausePolicy};

mod fenced;
mod leader;

pub use fenced::{
    zooid_election_fenced_create, zooid_election_fenced_delete, zooid_election_fenced_set_data,
};
pub use leader::{zooid_election_leader, zooid_leader_info, zooid_leader_info_free};

/// A candidate's state. The numbers are stable.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum zooid_leader_state {
    /// Not leading: waiting in line, session lost, resigned or freed.
    ZOOID_LEADER_INACTIVE = 0,
    /// Leading, with a connected session.
    ZOOID_LEADER_ACTIVE = 1,
    /// Led when the session was suspended (disconnected); the session may still be alive.
    ZOOID_LEADER_PAUSED = 2,
}

impl From<LeaderState> for zooid_leader_state {
    fn from(state: LeaderState) -> Self {
        match state {
            LeaderState::Inactive => Self::ZOOID_LEADER_INACTIVE,
            LeaderState::Active => Self::ZOOID_LEADER_ACTIVE,
            LeaderState::Paused => Self::ZOOID_LEADER_PAUSED,
        }
    }
}

/// What a leader does when its session is suspended. The numbers are stable.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum zooid_pause_policy {
    /// Keep leading through a suspension: Paused, then Active again with the same token when
    /// the same session reconnects; Inactive only once the session is lost (at least one
    /// leader).
    ZOOID_PAUSE_KEEP = 0,
    /// A suspension ends the leadership: Paused (fenced writes refused locally), then Inactive
    /// on reconnection, and the candidate rejoins at the back of the line (at most one leader).
    ZOOID_PAUSE_STOP = 1,
}

/// A snapshot of a candidate's view (`zooid_election_get_status`, `zooid_election_wait_change`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct zooid_election_status {
    /// Active, Paused or Inactive.
    pub state: zooid_leader_state,
    /// The fencing token of the leadership while Active or Paused (the group's epoch << 31 |
    /// the candidate's sequence number: positive, strictly increasing from one leader to the
    /// next, also across a wipe of ZooKeeper); 0 while Inactive.
    pub token: i64,
    /// True once the candidacy ended for good (resigned, or the session closed); the state is
    /// then Inactive and stays so.
    pub closed: bool,
    /// How many times this candidate became leader.
    pub terms: u64,
    /// Watch notifications this candidate received (one per succession step in front of it).
    pub watch_notifications: u64,
    /// The generation of the ZooKeeper session the candidacy belongs to (it grows when a lost
    /// session is replaced).
    pub session_generation: u64,
}

impl From<&ElectionStatus> for zooid_election_status {
    fn from(status: &ElectionStatus) -> Self {
        Self {
            state: status.state.into(),
            token: status.token.unwrap_or(0),
            closed: status.closed,
            terms: status.terms,
            watch_notifications: status.watch_notifications,
            session_generation: status.session_generation,
        }
    }
}

/// A candidacy in one group's election, from `zooid_election_join`.
///
/// Thread-safe: any number of threads may call it at once (for example one waiting in
/// `zooid_election_wait_change` while another resigns), except `zooid_election_free`, which
/// must be the last call. Ownership: the caller owns it and frees it with
/// `zooid_election_free`. It keeps the service's session open until freed, even after the
/// service itself is freed.
pub struct zooid_election {
    inner: Election,
}

/// The pause policy of a `zooid_pause_policy` number from C.
fn pause_policy(value: u32) -> Result<PausePolicy, Failure> {
    match value {
        v if v == zooid_pause_policy::ZOOID_PAUSE_KEEP as u32 => Ok(PausePolicy::Keep),
        v if v == zooid_pause_policy::ZOOID_PAUSE_STOP as u32 => Ok(PausePolicy::Stop),
        other => Err(Failure::Invalid(format!(
            "on_pause {other}: expected ZOOID_PAUSE_KEEP (0) or ZOOID_PAUSE_STOP (1)"
        ))),
    }
}

/// The leader state of a number from C.
fn leader_state(value: u32) -> Result<LeaderState, Failure> {
    match value {
        0 => Ok(LeaderState::Inactive),
        1 => Ok(LeaderState::Active),
        2 => Ok(LeaderState::Paused),
        other => Err(Failure::Invalid(format!(
            "leader state {other} is not a zooid_leader_state"
        ))),
    }
}

/// Joins the election of `group` (an absolute node path, created with its parents when
/// missing) on `service`'s ZooKeeper session, as candidate `name` (non-empty UTF-8, at most
/// 256 bytes, no newline) with `data_len` bytes of `data` shown to observers (at most 64 KiB;
/// `data` may be NULL when `data_len` is 0), with the pause policy `on_pause` (a
/// `zooid_pause_policy` value), and writes the new candidacy to `*out_election`;
/// the caller owns it and frees it with `zooid_election_free`.
///
/// It returns once the group node exists; the candidate node is created in the background and
/// the state starts `ZOOID_LEADER_INACTIVE`. Wait for leadership with
/// `zooid_election_await_leadership`, or for any change with `zooid_election_wait_change`.
///
/// Errors: `ZOOID_STATUS_INVALID_ARGUMENT` (bad group or name, or a service on an embedded
/// store, which has no session), `ZOOID_STATUS_TOO_LARGE`, `ZOOID_STATUS_CONNECTION_LOST` /
/// `ZOOID_STATUS_TIMEOUT` (the group node could not be ensured), `ZOOID_STATUS_CLOSED`.
///
/// # Safety
/// `service` must be NULL or a live service reference; `group` and `name` NULL or
/// NUL-terminated strings; `data` NULL or valid for `data_len` bytes; `out_election` NULL or
/// valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_election_join(
    service: *const zooid_service,
    group: *const c_char,
    name: *const c_char,
    data: *const u8,
    data_len: usize,
    on_pause: u32,
    out_election: *mut *mut zooid_election,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let service = unsafe { arg_ref(service, "service") }?;
        // SAFETY: forwarded from this function's contract.
        let group = unsafe { arg_str(group, "group") }?;
        // SAFETY: forwarded from this function's contract.
        let name = unsafe { arg_str(name, "name") }?;
        // SAFETY: forwarded from this function's contract.
        let data = unsafe { bytes_arg(data, data_len, "data", "candidate data", MAX_DATA_BYTES) }?;
        let out = Out::new(out_election, "out_election")?;
        let options = ElectionOptions {
            name: name.to_string(),
            data: data.to_vec(),
            on_pause: pause_policy(on_pause)?,
        };
        let inner = service.inner.join_election(group, options)?;
        let handle = Box::new(zooid_election { inner });
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(Box::into_raw(handle)) };
        Ok(())
    })
}

/// Writes the candidate's current state to `*out_state` and its fencing token to `*out_token`
/// (0 while Inactive). `out_token` may be NULL. No I/O.
///
/// # Safety
/// `election` must be NULL or a live candidacy; `out_state` NULL or valid for a write;
/// `out_token` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_election_state(
    election: *const zooid_election,
    out_state: *mut zooid_leader_state,
    out_token: *mut i64,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let election = unsafe { arg_ref(election, "election") }?;
        let out = Out::new(out_state, "out_state")?;
        let status = election.inner.status();
        // SAFETY: forwarded from this function's contract.
        unsafe {
            out.write(status.state.into());
            if !out_token.is_null() {
                out_token.write(status.token.unwrap_or(0));
            }
        }
        Ok(())
    })
}

/// Writes how many milliseconds the leadership's lease still runs to `*out_millis`: the quorum
/// confirmed this leadership that recently (see `Election::lease` in the Rust docs); 0 when not
/// leading, not confirmed yet, or the lease has passed. A leader that acts only while this is
/// positive acts only within the quorum's latest confirmation. No I/O.
///
/// # Safety
/// `election` must be NULL or a live candidacy; `out_millis` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_election_lease_remaining(
    election: *const zooid_election,
    out_millis: *mut i64,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let election = unsafe { arg_ref(election, "election") }?;
        let out = Out::new(out_millis, "out_millis")?;
        let left = election.inner.lease_remaining().unwrap_or_default();
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(i64::try_from(left.as_millis()).unwrap_or(i64::MAX)) };
        Ok(())
    })
}

/// Writes a snapshot of the candidate's view to `*out_status`. No I/O.
///
/// # Safety
/// `election` must be NULL or a live candidacy; `out_status` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_election_get_status(
    election: *const zooid_election,
    out_status: *mut zooid_election_status,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let election = unsafe { arg_ref(election, "election") }?;
        let out = Out::new(out_status, "out_status")?;
        let status = zooid_election_status::from(&election.inner.status());
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(status) };
        Ok(())
    })
}

/// The error for a wait on a candidacy that has ended.
fn closed_error(election: &zooid_election) -> crate::error::ZooidError {
    crate::error::ZooidError::Closed {
        what: format!(
            "election candidacy {:?} in {}",
            election.inner.name(),
            election.inner.group()
        ),
    }
}

/// Blocks until the candidate's state, token or closedness differs from `*last_seen` (a
/// status from `zooid_election_get_status` or from the previous wait; only those three fields are
/// compared), for at most `timeout_ms` milliseconds, and writes the new status to
/// `*out_status` (which may be the same pointer as `last_seen`). Returns at once when it
/// already differs, so no change between two calls is missed; a change that is undone before
/// the wait looks may go unseen (only the latest status is kept).
///
/// After the candidacy closed (resigned, or the session closed) it returns the closed status at
/// once if `last_seen` was not closed yet; with a closed `last_seen` nothing can change any more
/// and it returns `ZOOID_STATUS_CLOSED` at once, so a loop over this call ends.
///
/// Errors: `ZOOID_STATUS_TIMEOUT` when nothing changed in time (`*out_status` untouched),
/// `ZOOID_STATUS_CLOSED` (see above), `ZOOID_STATUS_RUNTIME_THREAD`.
///
/// # Safety
/// `election` must be NULL or a live candidacy; `last_seen` NULL or a valid status;
/// `out_status` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_election_wait_change(
    election: *const zooid_election,
    last_seen: *const zooid_election_status,
    timeout_ms: u64,
    out_status: *mut zooid_election_status,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let election = unsafe { arg_ref(election, "election") }?;
        if last_seen.is_null() {
            return Err(Failure::Null("last_seen"));
        }
        // Read field by field through the raw pointer: the state is the number C wrote, checked
        // before it becomes a Rust enum (no reference to a possibly invalid enum is made).
        // SAFETY: non-NULL, and a valid status by this function's contract.
        let (state, token, closed) = unsafe {
            (
                std::ptr::addr_of!((*last_seen).state).cast::<u32>().read(),
                std::ptr::addr_of!((*last_seen).token).read(),
                std::ptr::addr_of!((*last_seen).closed).cast::<u8>().read() != 0,
            )
        };
        let out = Out::new(out_status, "out_status")?;
        if closed {
            return Err(closed_error(election).into());
        }
        // `same_state` compares state, token and closed only; the rest is filler.
        let last = ElectionStatus {
            state: leader_state(state)?,
            token: (token != 0).then_some(token),
            session_generation: 0,
            node: None,
            watch_notifications: 0,
            terms: 0,
            closed,
        };
        let status = election
            .inner
            .wait_change(&last, Duration::from_millis(timeout_ms))?;
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(zooid_election_status::from(&status)) };
        Ok(())
    })
}

/// Blocks until the candidate is Active, for at most `timeout_ms` milliseconds, and writes its
/// fencing token to `*out_token`.
///
/// Errors: `ZOOID_STATUS_TIMEOUT`, `ZOOID_STATUS_CLOSED` (the candidacy ended: resigned or the
/// session closed), `ZOOID_STATUS_RUNTIME_THREAD`.
///
/// # Safety
/// `election` must be NULL or a live candidacy; `out_token` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_election_await_leadership(
    election: *const zooid_election,
    timeout_ms: u64,
    out_token: *mut i64,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let election = unsafe { arg_ref(election, "election") }?;
        let out = Out::new(out_token, "out_token")?;
        let token = election
            .inner
            .await_leadership(Duration::from_millis(timeout_ms))?;
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(token) };
        Ok(())
    })
}

/// Leaves the group: ends the candidacy, deletes the candidate node and waits for that
/// (bounded by twice the session timeout). The status ends Inactive and closed (also on
/// `ZOOID_STATUS_STORE`); a waiter in `zooid_election_wait_change` wakes with it,
/// `zooid_election_await_leadership` returns `ZOOID_STATUS_CLOSED`. Repeating it is harmless.
/// The handle must still be freed.
///
/// Errors: `ZOOID_STATUS_RUNTIME_THREAD`; `ZOOID_STATUS_STORE` when the candidate node could
/// not be deleted in time (the message names it): it may still be there, heading the line, and
/// is deleted in the background until it is gone or the session is; calling this again returns
/// `ZOOID_STATUS_OK` once it is gone.
///
/// # Safety
/// `election` must be NULL or a live candidacy.
#[no_mangle]
pub unsafe extern "C" fn zooid_election_resign(election: *const zooid_election) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let election = unsafe { arg_ref(election, "election") }?;
        election.inner.resign()?;
        Ok(())
    })
}

/// Frees a candidacy; NULL is accepted and ignored. If it did not resign, it leaves the group
/// in the background (its candidate node is deleted shortly after; use
/// `zooid_election_resign` first to wait for that).
///
/// # Safety
/// `election` must be NULL or a candidacy from `zooid_election_join` not yet freed and not in
/// use by a call on another thread; it must not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn zooid_election_free(election: *mut zooid_election) {
    guard_void(|| {
        if !election.is_null() {
            // SAFETY: from `Box::into_raw`, freed once; `Election`'s drop enters the runtime.
            drop(unsafe { Box::from_raw(election) });
        }
    })
}

/// The name of a leader state (`"inactive"`, `"active"`, `"paused"`), a static string; `"?"`
/// for a value that is not a state.
#[no_mangle]
pub extern "C" fn zooid_leader_state_name(state: u32) -> *const c_char {
    let name: &'static [u8] = match state {
        0 => b"inactive\0",
        1 => b"active\0",
        2 => b"paused\0",
        _ => b"?\0",
    };
    name.as_ptr().cast()
}

// The documented sharing rules, checked by the compiler.
const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<zooid_election>();
    shared::<zooid_leader_info>();
};
