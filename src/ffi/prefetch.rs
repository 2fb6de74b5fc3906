//! The prefetching ID source handle: IDs one at a time from a local batch that is refilled in the
//! background (see [`crate::recipes::prefetch`]).

use std::ffi::c_char;

use super::service::{category, zooid_service};
use super::{arg_mut, arg_ref, guard, guard_void, zooid_status, Failure, Out};
use crate::blocking::IdSource;
use crate::marshal::positive_millis;
use crate::recipes::prefetch::SourceOptions;

/// Options for `zooid_id_source_open`, created with defaults by `zooid_source_options_new`: a
/// first batch of 1,000 IDs, refills of 100 to 1,000,000 IDs sized so that a batch lasts about
/// 30 s, the next batch requested once 10% of the current one is used.
///
/// Ownership: the caller owns the options and frees them with `zooid_source_options_free`;
/// opening a source copies them. Not thread-safe: set them from one thread at a time.
pub struct zooid_source_options {
    options: SourceOptions,
}

/// Creates source options with the defaults and writes them to `*out_options`.
///
/// # Safety
/// `out_options` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_source_options_new(
    out_options: *mut *mut zooid_source_options,
) -> zooid_status {
    guard(|| {
        let out = Out::new(out_options, "out_options")?;
        let options = Box::new(zooid_source_options {
            options: SourceOptions::default(),
        });
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(Box::into_raw(options)) };
        Ok(())
    })
}

/// Sets the batch sizes: the first batch `initial`, and refills between `min` and `max`
/// (1 <= min <= initial <= max <= 2^31 - 1; checked when the source opens).
///
/// # Safety
/// `options` must be NULL or live options not used by another thread during the call.
#[no_mangle]
pub unsafe extern "C" fn zooid_source_options_set_batch(
    options: *mut zooid_source_options,
    initial: u64,
    min: u64,
    max: u64,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let options = unsafe { arg_mut(options, "options") }?;
        options.options.initial_batch = initial;
        options.options.min_batch = min;
        options.options.max_batch = max;
        Ok(())
    })
}

/// Sets when the next batch is requested: once `percent` (1 to 100) percent of the current
/// batch is used.
///
/// # Safety
/// `options` must be NULL or live options not used by another thread during the call.
#[no_mangle]
pub unsafe extern "C" fn zooid_source_options_set_refill_when_used_percent(
    options: *mut zooid_source_options,
    percent: u32,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let options = unsafe { arg_mut(options, "options") }?;
        if !(1..=100).contains(&percent) {
            return Err(Failure::Invalid(format!(
                "refill percent {percent} must be 1 to 100"
            )));
        }
        options.options.refill_when_used = f64::from(percent) / 100.0;
        Ok(())
    })
}

/// Sets how long a batch should last at the observed consumption rate, in milliseconds (> 0):
/// each refill doubles or halves the batch towards it.
///
/// # Safety
/// `options` must be NULL or live options not used by another thread during the call.
#[no_mangle]
pub unsafe extern "C" fn zooid_source_options_set_target_batch_ms(
    options: *mut zooid_source_options,
    target_ms: u64,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let options = unsafe { arg_mut(options, "options") }?;
        options.options.target_batch_duration =
            positive_millis(target_ms, "the target batch duration")?;
        Ok(())
    })
}

/// Frees source options; NULL is accepted and ignored.
///
/// # Safety
/// `options` must be NULL or options from `zooid_source_options_new` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn zooid_source_options_free(options: *mut zooid_source_options) {
    guard_void(|| {
        if !options.is_null() {
            // SAFETY: from `Box::into_raw` in `zooid_source_options_new`, freed once.
            drop(unsafe { Box::from_raw(options) });
        }
    })
}

/// A prefetching source of IDs of one category: `zooid_id_source_next` hands out IDs one at a
/// time from a local batch while the next batch is taken in the background, so a call blocks on
/// ZooKeeper only when both are used up.
///
/// Ownership: the caller owns the source and frees it with `zooid_id_source_free`, after
/// `zooid_id_source_close`. Thread-safe: any number of threads may call
/// `zooid_id_source_next` on one source at once. The source keeps the service's session open
/// until it is freed, so the service reference may be released first.
pub struct zooid_id_source {
    inner: IdSource,
}

/// What a source has done so far (`zooid_id_source_stats`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct zooid_source_stats {
    /// IDs handed out.
    pub handed_out: u64,
    /// Batches taken from the pool, the first one included.
    pub refills: u64,
    /// Takes of a batch that failed.
    pub refill_failures: u64,
    /// Calls that found no local ID and waited on ZooKeeper.
    pub waits: u64,
    /// Size of the last batch taken.
    pub last_batch: u64,
    /// IDs held locally (the current batch's rest and the prefetched batch).
    pub local: u64,
}

/// Opens a prefetching source over `category` of `service`, taking its first batch now, and
/// writes it to `*out_source`. `options` may be NULL for the defaults; it is copied.
///
/// Errors: as `zooid_service_take_ids` (`ZOOID_STATUS_NOT_FOUND`, `ZOOID_STATUS_EXHAUSTED`,
/// the store errors), `ZOOID_STATUS_INVALID_ARGUMENT` for inconsistent options.
///
/// # Safety
/// `service` must be NULL or a live service reference; `category` NULL or a NUL-terminated
/// string; `options` NULL or live options; `out_source` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_id_source_open(
    service: *const zooid_service,
    category: *const c_char,
    options: *const zooid_source_options,
    out_source: *mut *mut zooid_id_source,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let service = unsafe { arg_ref(service, "service") }?;
        // SAFETY: forwarded from this function's contract.
        let category = unsafe { self::category(category) }?;
        let out = Out::new(out_source, "out_source")?;
        // SAFETY: NULL or live options, by this function's contract.
        let options =
            unsafe { options.as_ref() }.map_or_else(SourceOptions::default, |o| o.options.clone());
        let inner = service.inner.open_source(&category, options)?;
        let handle = Box::new(zooid_id_source { inner });
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(Box::into_raw(handle)) };
        Ok(())
    })
}

/// Writes the next ID to `*out_id`. From the local batch when one is held: no I/O, no
/// allocation, one short lock. Blocks on ZooKeeper only when no ID is held locally.
///
/// Errors: a background refill's failure is reported only here, once the local IDs are used up
/// (`ZOOID_STATUS_EXHAUSTED`, `ZOOID_STATUS_CONNECTION_LOST`, `ZOOID_STATUS_OUTCOME_UNKNOWN`
/// naming leaked IDs, ...); the next call tries again. `ZOOID_STATUS_CLOSED` after
/// `zooid_id_source_close`.
///
/// # Safety
/// `source` must be NULL or a live source; `out_id` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_id_source_next(
    source: *const zooid_id_source,
    out_id: *mut i64,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let source = unsafe { arg_ref(source, "source") }?;
        let out_id = Out::new(out_id, "out_id")?;
        let id = source.inner.next()?;
        // SAFETY: forwarded from this function's contract.
        unsafe { out_id.write(id) };
        Ok(())
    })
}

/// Like `zooid_id_source_next` but never blocks: `ZOOID_STATUS_EMPTY` (nothing written) when no
/// ID is held locally and a refill is on its way.
///
/// # Safety
/// `source` must be NULL or a live source; `out_id` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_id_source_try_next(
    source: *const zooid_id_source,
    out_id: *mut i64,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let source = unsafe { arg_ref(source, "source") }?;
        let out_id = Out::new(out_id, "out_id")?;
        let id = source.inner.try_next()?.ok_or(Failure::Empty)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { out_id.write(id) };
        Ok(())
    })
}

/// Stops the source and pushes back every ID it holds, the prefetched batch included (waiting
/// for a refill in flight). Later `zooid_id_source_next` calls fail with `ZOOID_STATUS_CLOSED`.
/// If the push fails (store errors), the IDs stay with the source and close may be called again
/// (freeing the source then pushes them back in the background). A close while another thread's
/// close pushes waits for it; `ZOOID_STATUS_OK` means every ID is back. After a refill whose
/// take ended in doubt, every close returns `ZOOID_STATUS_OUTCOME_UNKNOWN` once it pushed the
/// rest back: the IDs that take may have claimed are leaked (`zooid_last_error_ranges` names
/// them), never handed out.
///
/// # Safety
/// `source` must be NULL or a live source.
#[no_mangle]
pub unsafe extern "C" fn zooid_id_source_close(source: *const zooid_id_source) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let source = unsafe { arg_ref(source, "source") }?;
        source.inner.close()?;
        Ok(())
    })
}

/// Writes what the source has done so far to `*out_stats`.
///
/// # Safety
/// `source` must be NULL or a live source; `out_stats` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_id_source_stats(
    source: *const zooid_id_source,
    out_stats: *mut zooid_source_stats,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let source = unsafe { arg_ref(source, "source") }?;
        let out = Out::new(out_stats, "out_stats")?;
        let stats = source.inner.stats();
        let c = zooid_source_stats {
            handed_out: stats.handed_out,
            refills: stats.refills,
            refill_failures: stats.refill_failures,
            waits: stats.waits,
            last_batch: stats.batches.last().copied().unwrap_or(0),
            local: stats.local,
        };
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(c) };
        Ok(())
    })
}

/// Frees a source; NULL is accepted and ignored. A source not closed first, or whose close
/// failed, pushes its IDs back in the background, best effort (call `zooid_id_source_close` to
/// know the outcome).
///
/// # Safety
/// `source` must be NULL or a source from `zooid_id_source_open` not yet freed, not in use by
/// another thread; it must not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn zooid_id_source_free(source: *mut zooid_id_source) {
    guard_void(|| {
        if !source.is_null() {
            // SAFETY: from `Box::into_raw` in `zooid_id_source_open`, freed once.
            drop(unsafe { Box::from_raw(source) });
        }
    })
}

// The documented sharing rules, checked by the compiler.
const _: () = {
    const fn shared<T: Send + Sync>() {}
    const fn movable<T: Send>() {}
    shared::<zooid_id_source>();
    movable::<zooid_source_options>();
};
