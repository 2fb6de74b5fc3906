//! The ID set handle: the IDs of one take, used one at a time on one thread.

use std::ffi::c_char;

use super::convert::{copy_ranges, zooid_range};
use super::{arg_mut, arg_ref, copy_text, guard, guard_void, zooid_status, Failure, Out};
use crate::IdSet;

/// The IDs handed out by one take (`zooid_service_take_ids`), used one at a time with
/// `zooid_id_set_take_id`, and whatever is left pushed back with `zooid_service_push_ids`.
///
/// Ownership: the caller owns the set and frees it with `zooid_id_set_free`. A set is not
/// thread-safe: use it from one thread at a time (it may move between threads).
pub struct zooid_id_set {
    pub(crate) set: IdSet,
}

/// Takes the next unused ID of `set` into `*out_id`.
///
/// Returns `ZOOID_STATUS_EMPTY` when the set is used up (then nothing is written). Local: no
/// I/O, no allocation, no lock on success.
///
/// # Safety
/// `set` must be NULL or a live ID set not used by another thread during the call; `out_id`
/// NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_id_set_take_id(
    set: *mut zooid_id_set,
    out_id: *mut i64,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let set = unsafe { arg_mut(set, "set") }?;
        let out_id = Out::new(out_id, "out_id")?;
        let id = set.set.take_id().ok_or(Failure::Empty)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { out_id.write(id) };
        Ok(())
    })
}

/// Takes the next run of up to `max` (>= 1) consecutive unused IDs of `set` into
/// `*out_range`, for callers that hand out IDs in bulk and iterate them with a plain loop:
///
/// ```c
/// zooid_range run;
/// while (zooid_id_set_take_range(set, rows_left, &run) == ZOOID_STATUS_OK) {
///     for (int64_t id = run.start;; id++) { assign(id); if (id == run.end) break; }
///     rows_left -= run.end - run.start + 1;
/// }
/// ```
///
/// Every ID of the run counts as used, exactly as if taken with `zooid_id_set_take_id`. A run
/// never spans two of the set's ranges, so it may hold fewer than `max` IDs even when more
/// remain. Returns `ZOOID_STATUS_EMPTY` when the set is used up (then nothing is written). Local:
/// no I/O, no allocation, no lock.
///
/// # Safety
/// `set` must be NULL or a live ID set not used by another thread during the call;
/// `out_range` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_id_set_take_range(
    set: *mut zooid_id_set,
    max: u64,
    out_range: *mut zooid_range,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let set = unsafe { arg_mut(set, "set") }?;
        let out = Out::new(out_range, "out_range")?;
        if max == 0 {
            return Err(Failure::Invalid("max must be at least 1".into()));
        }
        let run = set.set.take_run(max).ok_or(Failure::Empty)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(zooid_range::from(run)) };
        Ok(())
    })
}

/// Writes to `*out_has_more` whether `set` still holds unused IDs.
///
/// # Safety
/// `set` must be NULL or a live ID set not mutated during the call; `out_has_more` NULL or
/// valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_id_set_has_more(
    set: *const zooid_id_set,
    out_has_more: *mut bool,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let set = unsafe { arg_ref(set, "set") }?;
        let out = Out::new(out_has_more, "out_has_more")?;
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(set.set.has_more_ids()) };
        Ok(())
    })
}

/// Writes to `*out_count` how many unused IDs `set` holds.
///
/// # Safety
/// `set` must be NULL or a live ID set not mutated during the call; `out_count` NULL or valid
/// for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_id_set_count(
    set: *const zooid_id_set,
    out_count: *mut u64,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let set = unsafe { arg_ref(set, "set") }?;
        let out = Out::new(out_count, "out_count")?;
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(set.set.count_ids()) };
        Ok(())
    })
}

/// Copies the unused IDs of `set`, as ascending ranges, into `buf` (an array of `cap` ranges)
/// and writes their number to `*out_count`. The first range is trimmed to what is left of it.
///
/// Pass `buf = NULL, cap = 0` to ask for the number only. When `cap` is smaller than the number,
/// the call fails with `ZOOID_STATUS_INVALID_ARGUMENT` and writes nothing.
///
/// # Safety
/// `set` must be NULL or a live ID set not mutated during the call; `buf` valid for `cap`
/// writes of `zooid_range`; `out_count` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_id_set_ranges(
    set: *const zooid_id_set,
    buf: *mut zooid_range,
    cap: usize,
    out_count: *mut usize,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let set = unsafe { arg_ref(set, "set") }?;
        let ranges: Vec<zooid_range> = set.set.ranges().into_iter().map(Into::into).collect();
        // SAFETY: forwarded from this function's contract.
        unsafe { copy_ranges(&ranges, buf, cap, out_count) }
    })
}

/// Copies the path of the category the IDs of `set` belong to into `buf`, like `snprintf`: at
/// most `len - 1` bytes and a terminating NUL; `*out_len` (if not NULL) receives the full length
/// without the NUL. Pass `buf = NULL, len = 0` to ask for the length only.
///
/// # Safety
/// `set` must be NULL or a live ID set not mutated during the call; `buf` valid for `len` bytes
/// of writes; `out_len` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_id_set_category(
    set: *const zooid_id_set,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let set = unsafe { arg_ref(set, "set") }?;
        // SAFETY: forwarded from this function's contract.
        unsafe { copy_text(set.set.category().name(), buf, len, out_len) }
    })
}

/// Frees an ID set; NULL is accepted and ignored. Unused IDs still in the set are *not* pushed
/// back (they are lost to the category): push them with `zooid_service_push_ids` first.
///
/// # Safety
/// `set` must be NULL or an ID set from `zooid_service_take_ids` not yet freed; it must not be
/// used afterwards.
#[no_mangle]
pub unsafe extern "C" fn zooid_id_set_free(set: *mut zooid_id_set) {
    guard_void(|| {
        if !set.is_null() {
            // SAFETY: from `Box::into_raw` in `zooid_service_take_ids`, freed once.
            drop(unsafe { Box::from_raw(set) });
        }
    })
}
