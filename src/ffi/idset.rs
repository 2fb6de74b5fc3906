//! The ID set handle: the IDs of one take, used one at a time, pushed back at most once.

use std::ffi::c_char;
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::convert::{copy_ranges, zooid_range};
use super::{arg_ref, copy_text, guard, guard_void, zooid_status, Failure, Out};
use crate::blocking::IdGeneratorService;
use crate::error::ZooidError;
use crate::idset::IdSet;

/// The IDs handed out by one take (`zooid_service_take_ids`), used one at a time with
/// `zooid_id_set_take_id`, and whatever is left pushed back with `zooid_service_push_ids`.
///
/// Ownership: the caller owns the set and frees it with `zooid_id_set_free`. Threads may share a
/// set: its calls are serialized (a push holds the set until it returns), so no ID is both used
/// and pushed back. A push consumes the set: pushing it again fails with `ZOOID_STATUS_CLOSED`.
pub struct zooid_id_set {
    state: Mutex<SetState>,
}

/// A set and whether it was pushed back.
struct SetState {
    set: IdSet,
    /// A push applied (or its outcome is unknown): the set is consumed.
    pushed: bool,
}

impl zooid_id_set {
    /// The handle of a new set.
    pub(crate) fn new(set: IdSet) -> Self {
        Self {
            state: Mutex::new(SetState { set, pushed: false }),
        }
    }

    /// The set, held until the guard drops. A panic while it was held left it consistent: every
    /// change of a set is one step (a take; a push empties it before it sends anything, so a
    /// push that panicked leaves nothing to push again).
    fn lock(&self) -> MutexGuard<'_, SetState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Pushes the unused IDs back through `service`, holding the set meanwhile; a push that
    /// applied (or whose outcome is unknown) consumes the set, so a second one fails with
    /// `Closed` instead of pushing the same IDs again.
    pub(crate) fn push(&self, service: &IdGeneratorService) -> Result<(), Failure> {
        let mut state = self.lock();
        if state.pushed {
            return Err(Failure::Zooid(ZooidError::Closed {
                what: format!(
                    "the ID set of {} (already pushed back: a push consumes its set)",
                    state.set.category()
                ),
            }));
        }
        // Consumed before the push: one that panics (and may have been sent) leaves the set
        // pushed, so a second push fails with `Closed` rather than reporting success.
        state.pushed = true;
        let pushed = service.push_ids(&mut state.set);
        state.pushed = matches!(pushed, Ok(()) | Err(ZooidError::OutcomeUnknown { .. }));
        Ok(pushed?)
    }
}

/// Takes the next unused ID of `set` into `*out_id`.
///
/// Returns `ZOOID_STATUS_EMPTY` when the set is used up (then nothing is written). Local: no
/// I/O, no allocation; the set's lock, uncontended unless threads share it, is the only
/// synchronization.
///
/// # Safety
/// `set` must be NULL or a live ID set; `out_id` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_id_set_take_id(
    set: *mut zooid_id_set,
    out_id: *mut i64,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let set = unsafe { arg_ref(set, "set") }?;
        let out_id = Out::new(out_id, "out_id")?;
        let id = set.lock().set.take_id().ok_or(Failure::Empty)?;
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
/// no I/O, no allocation; only the set's lock.
///
/// # Safety
/// `set` must be NULL or a live ID set; `out_range` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_id_set_take_range(
    set: *mut zooid_id_set,
    max: u64,
    out_range: *mut zooid_range,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let set = unsafe { arg_ref(set, "set") }?;
        let out = Out::new(out_range, "out_range")?;
        if max == 0 {
            return Err(Failure::Invalid("max must be at least 1".into()));
        }
        let run = set.lock().set.take_run(max).ok_or(Failure::Empty)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(zooid_range::from(run)) };
        Ok(())
    })
}

/// Writes to `*out_has_more` whether `set` still holds unused IDs.
///
/// # Safety
/// `set` must be NULL or a live ID set; `out_has_more` NULL or valid for a write.
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
        unsafe { out.write(set.lock().set.has_more_ids()) };
        Ok(())
    })
}

/// Writes to `*out_count` how many unused IDs `set` holds.
///
/// # Safety
/// `set` must be NULL or a live ID set; `out_count` NULL or valid for a write.
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
        unsafe { out.write(set.lock().set.count_ids()) };
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
/// `set` must be NULL or a live ID set; `buf` valid for `cap` writes of `zooid_range`;
/// `out_count` NULL or valid for a write.
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
        let ranges: Vec<zooid_range> = set
            .lock()
            .set
            .ranges()
            .into_iter()
            .map(Into::into)
            .collect();
        // SAFETY: forwarded from this function's contract.
        unsafe { copy_ranges(&ranges, buf, cap, out_count) }
    })
}

/// Copies the path of the category the IDs of `set` belong to into `buf`, like `snprintf`: at
/// most `len - 1` bytes and a terminating NUL; `*out_len` (if not NULL) receives the full length
/// without the NUL. Pass `buf = NULL, len = 0` to ask for the length only.
///
/// # Safety
/// `set` must be NULL or a live ID set; `buf` valid for `len` bytes of writes; `out_len`
/// NULL or valid for a write.
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
        unsafe { copy_text(set.lock().set.category().name(), buf, len, out_len) }
    })
}

/// Frees an ID set; NULL is accepted and ignored. Unused IDs still in the set are *not* pushed
/// back (they are lost to the category): push them with `zooid_service_push_ids` first.
///
/// # Safety
/// `set` must be NULL or an ID set from `zooid_service_take_ids` not yet freed, not in use by a
/// call on another thread (sets may be shared between threads, their frees may not); it must
/// not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn zooid_id_set_free(set: *mut zooid_id_set) {
    guard_void(|| {
        if !set.is_null() {
            // SAFETY: from `Box::into_raw` in `zooid_service_take_ids`, freed once.
            drop(unsafe { Box::from_raw(set) });
        }
    })
}
