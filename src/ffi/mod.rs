//! The C ABI: opaque handles over the blocking facade ([`crate::blocking::IdGeneratorService`]),
//! a status code from every call, and a thread-local last error. `include/zooid.h` is generated
//! from this module by cbindgen (see `build.rs`); every doc comment here ends up in the header.
//!
//! Conventions every export follows:
//! - its body runs inside one panic guard (`guard`, a `catch_unwind`), so no panic crosses the
//!   boundary: a panic becomes [`zooid_status::ZOOID_STATUS_PANIC`];
//! - pointer arguments are checked (NULL, bad UTF-8) and give
//!   [`zooid_status::ZOOID_STATUS_INVALID_ARGUMENT`] rather than a crash;
//! - out-parameters are checked before any work is done and written only on success;
//! - on failure, the message (and, for a lost reply, the leaked IDs) is kept as this thread's
//!   last error ([`error`]).
//!
//! The binding has no logic of its own: each function maps to one call of the facade.

// The C names are the ABI: `zooid_service`, `zooid_status`, ...
#![allow(non_camel_case_types)]

pub mod convert;
pub mod counter;
pub mod election;
pub mod error;
pub mod idset;
pub mod layout;
pub mod options;
pub mod pool_info;
pub mod prefetch;
pub mod queue;
pub mod service;
pub mod spec;
pub mod stats;
pub mod status;

use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::ZooidError;
pub use status::zooid_status;

/// Why an export failed, before it is turned into a status and a last-error message.
#[derive(Debug)]
pub(crate) enum Failure {
    /// A required pointer argument was NULL.
    Null(&'static str),
    /// An argument was unusable for a reason the binding itself found.
    Invalid(String),
    /// The ID set has no unused IDs left.
    Empty,
    /// The library reported an error.
    Zooid(ZooidError),
    /// A panic was caught at the boundary.
    Panic(String),
}

impl From<ZooidError> for Failure {
    fn from(err: ZooidError) -> Self {
        Failure::Zooid(err)
    }
}

/// Runs an export's body, turning its error or panic into a status and this thread's last
/// error. On success it touches nothing but the body's own out-parameters, so the fast paths
/// (taking an ID) stay free of allocation and locks. In a process forked from the one that
/// started zooid, every export it guards is `ZOOID_STATUS_FORKED` before its body runs: what
/// the child inherited (a set's IDs, a source's prefetched batch) is the parent's too.
#[inline(always)]
pub(crate) fn guard(body: impl FnOnce() -> Result<(), Failure>) -> zooid_status {
    if let Err(forked) = crate::runtime::refuse_in_forked_child() {
        return error::record(Failure::Zooid(forked));
    }
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => zooid_status::ZOOID_STATUS_OK,
        Ok(Err(failure)) => error::record(failure),
        Err(payload) => error::record(Failure::Panic(panic_message(payload.as_ref()))),
    }
}

/// [`guard`] for the `_free` functions, which return nothing: a panic while dropping is kept as
/// the last error and otherwise swallowed, since it must not cross the boundary.
#[inline]
pub(crate) fn guard_void(body: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(body)) {
        error::record(Failure::Panic(panic_message(payload.as_ref())));
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a non-string panic payload");
    format!("zooid panicked (a bug; please report it): {what}")
}

/// A shared reference from a pointer argument that must not be NULL.
///
/// # Safety
/// A non-NULL `ptr` must point to a live `T` not mutated for `'a`.
#[inline(always)]
pub(crate) unsafe fn arg_ref<'a, T>(ptr: *const T, name: &'static str) -> Result<&'a T, Failure> {
    // SAFETY: non-NULL and valid by the caller's contract.
    unsafe { ptr.as_ref() }.ok_or(Failure::Null(name))
}

/// An exclusive reference from a pointer argument that must not be NULL.
///
/// # Safety
/// A non-NULL `ptr` must point to a live `T` not otherwise accessed for `'a`.
#[inline(always)]
pub(crate) unsafe fn arg_mut<'a, T>(ptr: *mut T, name: &'static str) -> Result<&'a mut T, Failure> {
    // SAFETY: non-NULL, valid and unaliased by the caller's contract.
    unsafe { ptr.as_mut() }.ok_or(Failure::Null(name))
}

/// A string argument: non-NULL, NUL-terminated, UTF-8.
///
/// # Safety
/// A non-NULL `ptr` must point to a NUL-terminated string that lives for `'a`.
pub(crate) unsafe fn arg_str<'a>(
    ptr: *const c_char,
    name: &'static str,
) -> Result<&'a str, Failure> {
    if ptr.is_null() {
        return Err(Failure::Null(name));
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    let bytes = unsafe { CStr::from_ptr(ptr) };
    bytes
        .to_str()
        .map_err(|e| Failure::Invalid(format!("{name} is not valid UTF-8: {e}")))
}

/// A byte-buffer argument: the `len` bytes at `ptr`, which may be NULL only when `len` is 0.
/// A `len` over `limit` (what the call accepts of `what`) is refused as `TooLarge` before any
/// byte is read: a length past the caller's buffer is never turned into a slice.
///
/// # Safety
/// A non-NULL `ptr` must be valid for `len` bytes of reads for `'a` when `len <= limit`.
pub(crate) unsafe fn bytes_arg<'a>(
    ptr: *const u8,
    len: usize,
    name: &'static str,
    what: &str,
    limit: usize,
) -> Result<&'a [u8], Failure> {
    // No slice may be longer than isize::MAX bytes.
    let limit = limit.min(isize::MAX as usize);
    if len > limit {
        return Err(Failure::Zooid(ZooidError::TooLarge {
            what: format!("{what} ({name})"),
            bytes: len,
            limit,
        }));
    }
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Failure::Null(name));
    }
    // SAFETY: non-NULL, at most isize::MAX bytes, and readable for `len` bytes by the
    // caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// An out-parameter, checked up front so that it can be written once the work succeeded.
pub(crate) struct Out<T>(*mut T);

impl<T> Out<T> {
    /// Checks that `ptr` is not NULL.
    #[inline(always)]
    pub(crate) fn new(ptr: *mut T, name: &'static str) -> Result<Self, Failure> {
        if ptr.is_null() {
            Err(Failure::Null(name))
        } else {
            Ok(Out(ptr))
        }
    }

    /// Writes the result.
    ///
    /// # Safety
    /// The pointer given to [`Out::new`] must be valid for a write of `T`.
    #[inline(always)]
    pub(crate) unsafe fn write(self, value: T) {
        // SAFETY: non-NULL (checked in `new`) and writable by the caller's contract.
        unsafe { self.0.write(value) }
    }
}

/// Copies `text` into a caller's buffer the way `snprintf` does: at most `len - 1` bytes (cut at
/// a character boundary) and a terminating NUL; `*out_len` (if not NULL) gets the full length.
/// `buf` may be NULL only when `len` is 0, to ask for the length.
///
/// # Safety
/// `buf` must be valid for `len` bytes of writes; `out_len` NULL or valid for a write.
pub(crate) unsafe fn copy_text(
    text: &str,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> Result<(), Failure> {
    if buf.is_null() && len > 0 {
        return Err(Failure::Null("buf"));
    }
    if len > 0 {
        let mut n = text.len().min(len - 1);
        while !text.is_char_boundary(n) {
            n -= 1;
        }
        // SAFETY: `buf` holds `len > n` bytes by the caller's contract; the regions are distinct.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
            buf.add(n).write(0);
        }
    }
    if !out_len.is_null() {
        // SAFETY: non-NULL and writable by the caller's contract.
        unsafe { out_len.write(text.len()) };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_in_an_export_becomes_a_status_and_a_message() {
        let status = guard(|| panic!("boom {}", 42));
        assert_eq!(status, zooid_status::ZOOID_STATUS_PANIC);
        let message = error::last_message().expect("a last error");
        assert!(message.contains("boom 42"), "{message}");

        let status = guard(|| std::panic::panic_any(7_u8));
        assert_eq!(status, zooid_status::ZOOID_STATUS_PANIC);
        assert!(error::last_message().unwrap().contains("non-string"));

        guard_void(|| panic!("in free"));
        assert!(error::last_message().unwrap().contains("in free"));
    }

    #[test]
    fn copy_text_truncates_at_a_character_boundary_like_snprintf() {
        let mut buf = [0x55 as c_char; 8];
        let mut full = 0usize;
        // "zé" is 3 bytes; a 3-byte buffer holds 2 bytes + NUL, which would split 'é'.
        unsafe { copy_text("zé!", buf.as_mut_ptr(), 3, &mut full) }.unwrap();
        assert_eq!(full, 4);
        assert_eq!(&buf[..2], &[b'z' as c_char, 0]);
        unsafe { copy_text("abc", buf.as_mut_ptr(), 8, std::ptr::null_mut()) }.unwrap();
        assert_eq!(&buf[..4], &[97, 98, 99, 0]);
        // Length query.
        unsafe { copy_text("abcdef", std::ptr::null_mut(), 0, &mut full) }.unwrap();
        assert_eq!(full, 6);
        assert!(matches!(
            unsafe { copy_text("a", std::ptr::null_mut(), 1, &mut full) },
            Err(Failure::Null("buf"))
        ));
    }
}
