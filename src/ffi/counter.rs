//! The CAS counter handle (seed 000): a counter node holding an 8-byte big-endian long, opened
//! through a service handle so that it shares the service's ZooKeeper session.

use std::ffi::c_char;

use super::service::zooid_service;
use super::{arg_ref, arg_str, guard, guard_void, zooid_status, Out};
use crate::blocking::Counter;

/// A CAS counter: a ZooKeeper node holding the last value handed out as an 8-byte big-endian
/// signed long (the format of existing deployments), advanced by versioned compare-and-set.
///
/// Opened from a service with `zooid_counter_open`, freed with `zooid_counter_free`. Thread-safe:
/// calls through one counter are serialized; open one counter per thread for parallel calls. A
/// counter keeps the service's session open until it is freed.
pub struct zooid_counter {
    inner: Counter,
}

/// Opens a counter at node `path` (absolute, not `/`) on the ZooKeeper session of `service`,
/// following the service's retry policy, and writes it to `*out_counter`; the caller owns it.
/// The node need not exist yet (see `zooid_counter_init`).
///
/// Errors: `ZOOID_STATUS_INVALID_ARGUMENT` for a bad path or a service on an embedded store
/// (`mem:`, `file:`), which has no ZooKeeper session.
///
/// # Safety
/// `service` must be NULL or a live service reference; `path` NULL or a NUL-terminated string;
/// `out_counter` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_counter_open(
    service: *const zooid_service,
    path: *const c_char,
    out_counter: *mut *mut zooid_counter,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let service = unsafe { arg_ref(service, "service") }?;
        // SAFETY: forwarded from this function's contract.
        let path = unsafe { arg_str(path, "path") }?;
        let out = Out::new(out_counter, "out_counter")?;
        let inner = service.inner.open_counter(path)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(Box::into_raw(Box::new(zooid_counter { inner }))) };
        Ok(())
    })
}

/// Creates the counter node (and missing parents) holding `value`, the last value handed out:
/// the first `zooid_counter_next` with n = 1 gets `value + 1`.
///
/// Errors: `ZOOID_STATUS_CATEGORY_EXISTS` when the node is already there (it is left
/// untouched), the store errors.
///
/// # Safety
/// `counter` must be NULL or a live counter.
#[no_mangle]
pub unsafe extern "C" fn zooid_counter_init(
    counter: *const zooid_counter,
    value: i64,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let counter = unsafe { arg_ref(counter, "counter") }?;
        counter.inner.init(value)?;
        Ok(())
    })
}

/// Reserves the `n` values after the counter's value and writes the first and the last of them
/// to `*out_first` and `*out_last` (`last - first + 1 == n`). Values are handed out only when
/// the write is known to have applied.
///
/// Errors (nothing reserved): `ZOOID_STATUS_INVALID_ARGUMENT` for n = 0 or a range past
/// INT64_MAX, `ZOOID_STATUS_EXHAUSTED` at INT64_MAX, `ZOOID_STATUS_NOT_FOUND`,
/// `ZOOID_STATUS_CORRUPT_POOL` (the node is not 8 bytes; it is never overwritten),
/// `ZOOID_STATUS_CONTENTION`, `ZOOID_STATUS_CONNECTION_LOST`, `ZOOID_STATUS_TIMEOUT`.
/// `ZOOID_STATUS_OUTCOME_UNKNOWN`: a lost reply could not be resolved; the values named by
/// `zooid_last_error_ranges` are skipped (not handed out by this call).
///
/// # Safety
/// `counter` must be NULL or a live counter; `out_first` and `out_last` NULL or valid for a
/// write.
#[no_mangle]
pub unsafe extern "C" fn zooid_counter_next(
    counter: *const zooid_counter,
    n: u64,
    out_first: *mut i64,
    out_last: *mut i64,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let counter = unsafe { arg_ref(counter, "counter") }?;
        let first = Out::new(out_first, "out_first")?;
        let last = Out::new(out_last, "out_last")?;
        let range = counter.inner.next(n)?;
        // SAFETY: forwarded from this function's contract.
        unsafe {
            first.write(range.start());
            last.write(range.end());
        }
        Ok(())
    })
}

/// Reads the counter's value (the last value handed out) into `*out_value`.
///
/// Errors: `ZOOID_STATUS_NOT_FOUND`, `ZOOID_STATUS_CORRUPT_POOL`, the store errors.
///
/// # Safety
/// `counter` must be NULL or a live counter; `out_value` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_counter_get(
    counter: *const zooid_counter,
    out_value: *mut i64,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let counter = unsafe { arg_ref(counter, "counter") }?;
        let out = Out::new(out_value, "out_value")?;
        let value = counter.inner.get()?;
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(value) };
        Ok(())
    })
}

/// Frees a counter; NULL is accepted and ignored.
///
/// # Safety
/// `counter` must be NULL or a counter from `zooid_counter_open` not yet freed and not in use
/// by another thread; it must not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn zooid_counter_free(counter: *mut zooid_counter) {
    guard_void(|| {
        if !counter.is_null() {
            // SAFETY: from `Box::into_raw` in `zooid_counter_open`, freed once.
            drop(unsafe { Box::from_raw(counter) });
        }
    })
}

const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<zooid_counter>();
};
