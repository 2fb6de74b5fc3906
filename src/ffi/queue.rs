//! The work queue handles: a queue opened on a service's ZooKeeper session, and the claims it
//! hands out (see [`crate::blocking::WorkQueue`]).

use std::ffi::c_char;

use super::service::zooid_service;
use super::{
    arg_mut, arg_ref, arg_str, bytes_arg, copy_text, guard, guard_void, zooid_status, Failure, Out,
};
use crate::blocking::{Claim, WorkQueue};
use crate::error::ZooidError;
use crate::marshal::{millis, positive_millis};
use crate::recipes::queue::QueueOptions;

/// A buffer of this many bytes always holds an item name and its terminating NUL
/// (`zooid_queue_put`, `zooid_claim_item`); names are 29 bytes today.
pub const ZOOID_QUEUE_ITEM_NAME_MAX: usize = 64;

/// Options for `zooid_queue_open`, created with the defaults by `zooid_queue_options_new`: at
/// most 10000 items, items of at most 65536 bytes, 30 s for a put, complete or release to get
/// through connection loss, and `"<hostname>:<pid>"` as the identity written into locks.
///
/// Ownership: the caller owns the options and frees them with `zooid_queue_options_free`;
/// opening a queue copies them. Not thread-safe: set them from one thread at a time.
pub struct zooid_queue_options {
    options: QueueOptions,
}

/// A work queue: items put in order, each handed to one consumer at a time (a claim) until a
/// consumer completes it. Delivery is at-least-once: a claim lost with its ZooKeeper session
/// (the process crashed or was cut off past the session timeout) is handed out again.
///
/// Ownership: `zooid_queue_open` gives a queue that the caller frees with `zooid_queue_free`.
/// Thread-safe: one queue may be used from any number of threads at once. It shares the
/// service's ZooKeeper session and keeps it open until the queue and its claims are freed too.
pub struct zooid_queue {
    inner: WorkQueue,
}

/// An item claimed from a queue: no other consumer gets it while the claim lives. Finish it with
/// `zooid_claim_complete` (the item is deleted, never handed out again) or
/// `zooid_claim_release` (it is handed out again), then free it with `zooid_claim_free`; a
/// claim freed without either is released.
///
/// Ownership: the caller owns it. Its item name and data stay readable until it is freed, also
/// after completing or releasing. Not thread-safe: use it from one thread at a time (it may move
/// between threads).
pub struct zooid_claim {
    /// `None` once completed or released.
    claim: Option<Claim>,
    queue: String,
    item: String,
    sequence: u64,
    data: Vec<u8>,
}

/// Creates queue options with the defaults and writes them to `*out_options`.
///
/// # Safety
/// `out_options` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_queue_options_new(
    out_options: *mut *mut zooid_queue_options,
) -> zooid_status {
    guard(|| {
        let out = Out::new(out_options, "out_options")?;
        let options = Box::new(zooid_queue_options {
            options: QueueOptions::default(),
        });
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(Box::into_raw(options)) };
        Ok(())
    })
}

/// Sets the most items the queue may hold (1 to 25000); a put beyond it fails with
/// `ZOOID_STATUS_QUEUE_FULL`. The limit keeps a listing of the queue within ZooKeeper's
/// `jute.maxbuffer`. Checked by `zooid_queue_open`.
///
/// # Safety
/// `options` must be NULL or live queue options not used by another thread during the call.
#[no_mangle]
pub unsafe extern "C" fn zooid_queue_options_set_max_items(
    options: *mut zooid_queue_options,
    max_items: usize,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let options = unsafe { arg_mut(options, "options") }?;
        options.options.max_items = max_items;
        Ok(())
    })
}

/// Sets the largest item, in bytes (0 to 1000000); a bigger put fails with
/// `ZOOID_STATUS_TOO_LARGE`. Checked by `zooid_queue_open`.
///
/// # Safety
/// `options` must be NULL or live queue options not used by another thread during the call.
#[no_mangle]
pub unsafe extern "C" fn zooid_queue_options_set_max_item_bytes(
    options: *mut zooid_queue_options,
    max_item_bytes: usize,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let options = unsafe { arg_mut(options, "options") }?;
        options.options.max_item_bytes = max_item_bytes;
        Ok(())
    })
}

/// Sets how long a put, complete or release may retry through connection loss, in milliseconds
/// (> 0); past it the call fails with `ZOOID_STATUS_TIMEOUT`, or for a put whose request may
/// have reached the servers `ZOOID_STATUS_OUTCOME_UNKNOWN`.
///
/// # Safety
/// `options` must be NULL or live queue options not used by another thread during the call.
#[no_mangle]
pub unsafe extern "C" fn zooid_queue_options_set_op_timeout_ms(
    options: *mut zooid_queue_options,
    timeout_ms: u64,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let options = unsafe { arg_mut(options, "options") }?;
        options.options.op_timeout = positive_millis(timeout_ms, "the operation timeout")?;
        Ok(())
    })
}

/// Sets the identity written into this process's locks, which `zooid queue show` prints (at
/// most 256 bytes; copied).
///
/// # Safety
/// `options` must be NULL or live queue options not used by another thread during the call;
/// `identity` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zooid_queue_options_set_identity(
    options: *mut zooid_queue_options,
    identity: *const c_char,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let options = unsafe { arg_mut(options, "options") }?;
        // SAFETY: forwarded from this function's contract.
        let identity = unsafe { arg_str(identity, "identity") }?;
        options.options.identity = Some(identity.to_string());
        Ok(())
    })
}

/// Frees queue options; NULL is accepted and ignored.
///
/// # Safety
/// `options` must be NULL or options from `zooid_queue_options_new` not yet freed; they must not
/// be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn zooid_queue_options_free(options: *mut zooid_queue_options) {
    guard_void(|| {
        if !options.is_null() {
            // SAFETY: from `Box::into_raw` in `zooid_queue_options_new`, freed once.
            drop(unsafe { Box::from_raw(options) });
        }
    })
}

/// Opens the work queue at `path` (an absolute ZooKeeper path) on the service's ZooKeeper
/// session and writes it to `*out_queue`. Touches nothing on the servers: the first put creates
/// the queue. `options` may be NULL for the defaults; it is copied.
///
/// Errors: `ZOOID_STATUS_INVALID_ARGUMENT` for a bad path or options, and for a service on an
/// embedded store (`mem:`, `file:`), which has no ZooKeeper session.
///
/// # Safety
/// `service` must be NULL or a live service reference; `path` NULL or a NUL-terminated string;
/// `options` NULL or live queue options; `out_queue` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_queue_open(
    service: *const zooid_service,
    path: *const c_char,
    options: *const zooid_queue_options,
    out_queue: *mut *mut zooid_queue,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let service = unsafe { arg_ref(service, "service") }?;
        // SAFETY: forwarded from this function's contract.
        let path = unsafe { arg_str(path, "path") }?;
        let out = Out::new(out_queue, "out_queue")?;
        // SAFETY: NULL or live options, by this function's contract.
        let options = unsafe { options.as_ref() }
            .map(|o| o.options.clone())
            .unwrap_or_default();
        let queue = Box::new(zooid_queue {
            inner: service.inner.open_queue(path, options)?,
        });
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(Box::into_raw(queue)) };
        Ok(())
    })
}

/// Adds an item holding the `len` bytes at `data` (`data` may be NULL when `len` is 0) to the
/// end of the queue, creating the queue if needed. Exactly once: a put whose reply was lost is
/// resolved, never repeated. The item's name is copied into `name_buf` like `snprintf` (at most
/// `name_len - 1` bytes and a NUL; `ZOOID_QUEUE_ITEM_NAME_MAX` bytes always suffice);
/// `*out_name_len` (if not NULL) gets its full length. Pass `name_buf = NULL, name_len = 0` when
/// the name is not wanted.
///
/// Errors: `ZOOID_STATUS_TOO_LARGE` for an item over the queue's item size limit and
/// `ZOOID_STATUS_QUEUE_FULL` when the queue holds its maximum number of items (nothing was
/// added); `ZOOID_STATUS_OUTCOME_UNKNOWN` when a request of the put may have reached the servers
/// and they did not confirm its fate within the operation timeout (the item may or may not have
/// been added; no IDs are named); `ZOOID_STATUS_TIMEOUT` when nothing was sent within it, or
/// the put's turn among concurrent puts on the handle did not come within it, and nothing was
/// added (a put returns within twice the operation timeout: its turn, then its requests); `ZOOID_STATUS_STORE`, `ZOOID_STATUS_CONNECTION_LOST`.
///
/// # Safety
/// `queue` must be NULL or a live queue; `data` valid for `len` bytes of reads; `name_buf` valid
/// for `name_len` bytes of writes; `out_name_len` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_queue_put(
    queue: *const zooid_queue,
    data: *const u8,
    len: usize,
    name_buf: *mut c_char,
    name_len: usize,
    out_name_len: *mut usize,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let queue = unsafe { arg_ref(queue, "queue") }?;
        let limit = queue.inner.options().max_item_bytes;
        // SAFETY: forwarded from this function's contract.
        let data = unsafe { bytes_arg(data, len, "data", "queue item", limit) }?;
        if name_buf.is_null() && name_len > 0 {
            return Err(Failure::Null("name_buf"));
        }
        let name = queue.inner.put(data)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { copy_text(&name, name_buf, name_len, out_name_len) }
    })
}

/// Claims the oldest unclaimed item of the queue and writes the claim to `*out_claim`; the
/// caller owns it. Waits up to `timeout_ms` milliseconds for an item: 0 tries once without
/// waiting, a negative value waits for ever. Idle consumers wait in line: only the first one
/// watches the queue, so a put wakes one consumer, not all.
///
/// Errors: `ZOOID_STATUS_TIMEOUT` when no item came within the timeout (nothing is claimed);
/// a queue that does not exist yet is created and waited on like an empty one (workers may
/// start before producers); `ZOOID_STATUS_CLOSED` when the
/// session was closed while waiting; `ZOOID_STATUS_STORE`, `ZOOID_STATUS_CONNECTION_LOST`.
///
/// # Safety
/// `queue` must be NULL or a live queue; `out_claim` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_queue_claim(
    queue: *const zooid_queue,
    timeout_ms: i64,
    out_claim: *mut *mut zooid_claim,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let queue = unsafe { arg_ref(queue, "queue") }?;
        let out = Out::new(out_claim, "out_claim")?;
        let timeout = millis(timeout_ms);
        let Some(claim) = queue.inner.claim(timeout)? else {
            return Err(ZooidError::Timeout {
                what: format!("claim from queue {}", queue.inner.path()),
                after: timeout.unwrap_or_default(),
            }
            .into());
        };
        let handle = Box::new(zooid_claim {
            queue: queue.inner.path().to_string(),
            item: claim.item().to_string(),
            sequence: claim.sequence(),
            data: claim.data().to_vec(),
            claim: Some(claim),
        });
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(Box::into_raw(handle)) };
        Ok(())
    })
}

/// Frees a queue; NULL is accepted and ignored. Claims from it stay valid (and must still be
/// freed).
///
/// # Safety
/// `queue` must be NULL or a queue from `zooid_queue_open` not yet freed, not in use by a call
/// on another thread; it must not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn zooid_queue_free(queue: *mut zooid_queue) {
    guard_void(|| {
        if !queue.is_null() {
            // SAFETY: from `Box::into_raw` in `zooid_queue_open`, freed once. The blocking
            // queue drops its client inside zooid's runtime itself.
            drop(unsafe { Box::from_raw(queue) });
        }
    })
}

/// Writes a pointer to the claimed item's bytes to `*out_data` and their number to `*out_len`.
/// The bytes are owned by `claim` and stay valid until it is freed.
///
/// # Safety
/// `claim` must be NULL or a live claim; `out_data` and `out_len` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_claim_data(
    claim: *const zooid_claim,
    out_data: *mut *const u8,
    out_len: *mut usize,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let claim = unsafe { arg_ref(claim, "claim") }?;
        let out_data = Out::new(out_data, "out_data")?;
        let out_len = Out::new(out_len, "out_len")?;
        // SAFETY: forwarded from this function's contract.
        unsafe {
            out_data.write(claim.data.as_ptr());
            out_len.write(claim.data.len());
        }
        Ok(())
    })
}

/// Copies the claimed item's name (such as `"i-3f2a...-0000000007"`) into `buf` like
/// `snprintf`: at most `len - 1` bytes and a terminating NUL; `*out_len` (if not NULL) receives
/// the full length. Pass `buf = NULL, len = 0` to ask for the length only.
///
/// # Safety
/// `claim` must be NULL or a live claim; `buf` valid for `len` bytes of writes; `out_len` NULL or
/// valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_claim_item(
    claim: *const zooid_claim,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let claim = unsafe { arg_ref(claim, "claim") }?;
        // SAFETY: forwarded from this function's contract.
        unsafe { copy_text(&claim.item, buf, len, out_len) }
    })
}

/// Writes the claimed item's put order (ZooKeeper's sequence number; lower was put earlier) to
/// `*out_sequence`.
///
/// # Safety
/// `claim` must be NULL or a live claim; `out_sequence` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_claim_sequence(
    claim: *const zooid_claim,
    out_sequence: *mut u64,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let claim = unsafe { arg_ref(claim, "claim") }?;
        let out = Out::new(out_sequence, "out_sequence")?;
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(claim.sequence) };
        Ok(())
    })
}

/// Writes to `*out_lost` whether the claim is known to be lost (its ZooKeeper session ended):
/// `true` means another consumer may get the item, `false` is no promise. Also `true` once the
/// claim was completed or released.
///
/// # Safety
/// `claim` must be NULL or a live claim; `out_lost` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_claim_is_lost(
    claim: *const zooid_claim,
    out_lost: *mut bool,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let claim = unsafe { arg_ref(claim, "claim") }?;
        let out = Out::new(out_lost, "out_lost")?;
        let lost = claim.claim.as_ref().is_none_or(Claim::is_lost);
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(lost) };
        Ok(())
    })
}

/// Takes the live claim out of `claim`, or fails with `ZOOID_STATUS_CLOSED`.
fn take_claim(claim: &mut zooid_claim) -> Result<Claim, Failure> {
    claim.claim.take().ok_or_else(|| {
        Failure::Zooid(ZooidError::Closed {
            what: format!(
                "the claim of item {} of queue {} (already completed or released)",
                claim.item, claim.queue
            ),
        })
    })
}

/// Completes the claimed item: deletes it and its lock in one transaction that first checks the
/// lock is still this claim's. The item is never handed out again. The claim is finished either
/// way (only `zooid_claim_free` remains).
///
/// Errors: `ZOOID_STATUS_SESSION_LOST` when the claim was lost with its session (nothing was
/// done; the item is or will be handed out again); `ZOOID_STATUS_TIMEOUT` when no server
/// answered within the operation timeout (outcome unknown); `ZOOID_STATUS_CLOSED` for a claim
/// already completed or released.
///
/// # Safety
/// `claim` must be NULL or a live claim not used by another thread during the call.
#[no_mangle]
pub unsafe extern "C" fn zooid_claim_complete(claim: *mut zooid_claim) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let claim = unsafe { arg_mut(claim, "claim") }?;
        Ok(take_claim(claim)?.complete()?)
    })
}

/// Releases the claimed item: deletes its lock, so that it is handed out again (it keeps its
/// place in the queue). The claim is finished either way (only `zooid_claim_free` remains).
///
/// Errors: `ZOOID_STATUS_SESSION_LOST` when the claim was lost with its session (the lock is gone
/// already); `ZOOID_STATUS_TIMEOUT` when no server answered within the operation timeout (the
/// lock goes with the session at the latest); `ZOOID_STATUS_CLOSED` for a claim already
/// completed or released.
///
/// # Safety
/// `claim` must be NULL or a live claim not used by another thread during the call.
#[no_mangle]
pub unsafe extern "C" fn zooid_claim_release(claim: *mut zooid_claim) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let claim = unsafe { arg_mut(claim, "claim") }?;
        Ok(take_claim(claim)?.release()?)
    })
}

/// Frees a claim; NULL is accepted and ignored. A claim neither completed nor released is
/// released in the background: this returns at once, and the item is handed out again once
/// ZooKeeper deleted the lock (or, should that fail, when the session ends).
///
/// # Safety
/// `claim` must be NULL or a claim from `zooid_queue_claim` not yet freed, not in use by another
/// thread; it must not be used afterwards (nor its data).
#[no_mangle]
pub unsafe extern "C" fn zooid_claim_free(claim: *mut zooid_claim) {
    guard_void(|| {
        if !claim.is_null() {
            // SAFETY: from `Box::into_raw` in `zooid_queue_claim`, freed once. The blocking claim
            // releases itself inside zooid's runtime.
            drop(unsafe { Box::from_raw(claim) });
        }
    })
}

// The documented sharing rules, checked by the compiler.
const _: () = {
    const fn shared<T: Send + Sync>() {}
    const fn movable<T: Send>() {}
    shared::<zooid_queue>();
    movable::<zooid_claim>();
    movable::<zooid_queue_options>();
};
