//! This thread's last error: the message and leaked IDs of the most recent call on the calling
//! thread that failed.

use std::cell::RefCell;
use std::ffi::c_char;

use super::convert::{copy_ranges, zooid_range};
use super::{copy_text, guard_void, zooid_status, Failure};
use crate::error::ZooidError;

struct LastError {
    message: String,
    ranges: Vec<zooid_range>,
}

thread_local! {
    static LAST: RefCell<Option<LastError>> = const { RefCell::new(None) };
}

/// Keeps `failure` as this thread's last error and returns its status.
#[cold]
pub(crate) fn record(failure: Failure) -> zooid_status {
    let status = zooid_status::of_failure(&failure);
    let (message, ranges) = match failure {
        Failure::Null(name) => (format!("invalid argument: {name} is NULL"), Vec::new()),
        Failure::Invalid(why) => (format!("invalid argument: {why}"), Vec::new()),
        Failure::Empty => ("the ID set has no unused IDs left".to_string(), Vec::new()),
        Failure::Panic(message) => (message, Vec::new()),
        Failure::Zooid(err) => {
            let ranges = match &err {
                ZooidError::OutcomeUnknown { ids, .. } => {
                    ids.iter().copied().map(zooid_range::from).collect()
                }
                _ => Vec::new(),
            };
            (err.to_string(), ranges)
        }
    };
    // During thread teardown the slot may be gone; the status alone must do then.
    let _ = LAST.try_with(|last| {
        if let Ok(mut last) = last.try_borrow_mut() {
            *last = Some(LastError { message, ranges });
        }
    });
    status
}

/// The last error's message, for the binding's own tests.
#[cfg(test)]
pub(crate) fn last_message() -> Option<String> {
    LAST.with(|last| last.borrow().as_ref().map(|e| e.message.clone()))
}

/// Copies the message of the last call on this thread that failed into `buf`, like `snprintf`:
/// at most `len - 1` bytes (cut at a UTF-8 character boundary) and a terminating NUL. If
/// `out_len` is not NULL it receives the message's full length in bytes (without the NUL), so
/// `*out_len >= len` means the copy was cut short. Pass `buf = NULL, len = 0` to ask for the
/// length only. With no error so far on this thread, the message is empty.
///
/// Successful calls do not clear the last error: read it right after the call that failed.
/// This function does not change the last error, even when it fails itself
/// (`ZOOID_STATUS_INVALID_ARGUMENT` for `buf == NULL` with `len > 0`).
///
/// # Safety
/// `buf` must be valid for `len` bytes of writes; `out_len` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_last_error_message(
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> zooid_status {
    let mut status = zooid_status::ZOOID_STATUS_PANIC;
    guard_void(|| {
        status = LAST.with(|last| {
            let last = last.borrow();
            let message = last.as_ref().map_or("", |e| e.message.as_str());
            // SAFETY: forwarded from this function's contract.
            match unsafe { copy_text(message, buf, len, out_len) } {
                Ok(()) => zooid_status::ZOOID_STATUS_OK,
                Err(failure) => zooid_status::of_failure(&failure),
            }
        })
    });
    status
}

/// Copies the IDs named by the last error on this thread into `buf`: for
/// `ZOOID_STATUS_OUTCOME_UNKNOWN`, the leaked IDs of the take (or the IDs of the push) whose
/// outcome is unknown; for any other error, none. `*out_count` receives the number of ranges.
///
/// Pass `buf = NULL, cap = 0` to ask for the number only. When `cap` is smaller than the number,
/// the call fails with `ZOOID_STATUS_INVALID_ARGUMENT` and writes nothing. This function does not
/// change the last error.
///
/// # Safety
/// `buf` must be valid for `cap` writes of `zooid_range`; `out_count` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_last_error_ranges(
    buf: *mut zooid_range,
    cap: usize,
    out_count: *mut usize,
) -> zooid_status {
    let mut status = zooid_status::ZOOID_STATUS_PANIC;
    guard_void(|| {
        status = LAST.with(|last| {
            let last = last.borrow();
            let ranges = last.as_ref().map_or(&[][..], |e| e.ranges.as_slice());
            // SAFETY: forwarded from this function's contract.
            match unsafe { copy_ranges(ranges, buf, cap, out_count) } {
                Ok(()) => zooid_status::ZOOID_STATUS_OK,
                Err(failure) => zooid_status::of_failure(&failure),
            }
        })
    });
    status
}
