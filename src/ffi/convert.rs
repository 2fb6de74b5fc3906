//! Ranges across the C boundary: [`zooid_range`] and the copy of a range list into a caller's
//! array (ID sets, the last error's leaked IDs).

use super::{Failure, Out};
use crate::range::IdRange;

/// An inclusive range of IDs, `start` to `end` (`start <= end`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct zooid_range {
    /// The first ID of the range.
    pub start: i64,
    /// The last ID of the range (inclusive).
    pub end: i64,
}

impl From<IdRange> for zooid_range {
    fn from(range: IdRange) -> Self {
        Self {
            start: range.start(),
            end: range.end(),
        }
    }
}

/// Copies `ranges` into a caller's array of `cap` ranges and writes their number; `buf = NULL,
/// cap = 0` asks for the number only. Fails, writing nothing, when `cap` is too small.
///
/// # Safety
/// `buf` must be valid for `cap` writes of `zooid_range`; `out_count` NULL or valid for a write.
pub(crate) unsafe fn copy_ranges(
    ranges: &[zooid_range],
    buf: *mut zooid_range,
    cap: usize,
    out_count: *mut usize,
) -> Result<(), Failure> {
    let out_count = Out::new(out_count, "out_count")?;
    if buf.is_null() && cap > 0 {
        return Err(Failure::Null("buf"));
    }
    if !buf.is_null() || cap > 0 {
        if cap < ranges.len() {
            return Err(Failure::Invalid(format!(
                "the buffer holds {cap} ranges, {} are needed",
                ranges.len()
            )));
        }
        // SAFETY: `buf` holds `cap >= ranges.len()` ranges by the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(ranges.as_ptr(), buf, ranges.len()) };
    }
    // SAFETY: checked non-NULL; writable by the caller's contract.
    unsafe { out_count.write(ranges.len()) };
    Ok(())
}
