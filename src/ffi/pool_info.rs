//! A snapshot of a category's pool node, for operators and tests.

use super::convert::zooid_range;
use super::{arg_ref, guard, guard_void, zooid_status, Out};
use crate::alloc::PoolInfo;

/// What a category's pool node held when `zooid_service_pool_info` read it.
///
/// Ownership: the caller owns it and frees it with `zooid_pool_info_free`. It is immutable, so
/// it may be read from several threads at once.
pub struct zooid_pool_info {
    bounds: zooid_range,
    free: Vec<zooid_range>,
    free_count: u64,
    version: i32,
    bytes: usize,
}

impl From<PoolInfo> for zooid_pool_info {
    fn from(info: PoolInfo) -> Self {
        Self {
            bounds: info.bounds.into(),
            free: info.free.into_iter().map(Into::into).collect(),
            free_count: info.free_count,
            version: info.version,
            bytes: info.bytes,
        }
    }
}

/// Writes the category's bounds (every ID it can ever hand out) to `*out_bounds`.
///
/// # Safety
/// `info` must be NULL or live pool info; `out_bounds` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_pool_info_bounds(
    info: *const zooid_pool_info,
    out_bounds: *mut zooid_range,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let info = unsafe { arg_ref(info, "info") }?;
        let out = Out::new(out_bounds, "out_bounds")?;
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(info.bounds) };
        Ok(())
    })
}

/// Writes the free IDs as ascending, disjoint ranges: `*out_ranges` points to `*out_count`
/// ranges owned by `info`, valid until `info` is freed.
///
/// # Safety
/// `info` must be NULL or live pool info; `out_ranges` and `out_count` NULL or valid for a
/// write.
#[no_mangle]
pub unsafe extern "C" fn zooid_pool_info_free_ranges(
    info: *const zooid_pool_info,
    out_ranges: *mut *const zooid_range,
    out_count: *mut usize,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let info = unsafe { arg_ref(info, "info") }?;
        let out_ranges = Out::new(out_ranges, "out_ranges")?;
        let out_count = Out::new(out_count, "out_count")?;
        // SAFETY: forwarded from this function's contract.
        unsafe {
            out_ranges.write(info.free.as_ptr());
            out_count.write(info.free.len());
        }
        Ok(())
    })
}

/// Writes how many IDs are free to `*out_count`.
///
/// # Safety
/// `info` must be NULL or live pool info; `out_count` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_pool_info_free_count(
    info: *const zooid_pool_info,
    out_count: *mut u64,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let info = unsafe { arg_ref(info, "info") }?;
        let out = Out::new(out_count, "out_count")?;
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(info.free_count) };
        Ok(())
    })
}

/// Writes the pool node's data version (ZooKeeper's 32-bit counter, +1 per write) to
/// `*out_version` and its size in bytes to `*out_bytes`.
///
/// # Safety
/// `info` must be NULL or live pool info; `out_version` and `out_bytes` NULL or valid for a
/// write.
#[no_mangle]
pub unsafe extern "C" fn zooid_pool_info_node(
    info: *const zooid_pool_info,
    out_version: *mut i32,
    out_bytes: *mut usize,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let info = unsafe { arg_ref(info, "info") }?;
        let out_version = Out::new(out_version, "out_version")?;
        let out_bytes = Out::new(out_bytes, "out_bytes")?;
        // SAFETY: forwarded from this function's contract.
        unsafe {
            out_version.write(info.version);
            out_bytes.write(info.bytes);
        }
        Ok(())
    })
}

/// Frees pool info; NULL is accepted and ignored. Ranges from `zooid_pool_info_free_ranges`
/// become invalid.
///
/// # Safety
/// `info` must be NULL or pool info from `zooid_service_pool_info` not yet freed; it must not
/// be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn zooid_pool_info_free(info: *mut zooid_pool_info) {
    guard_void(|| {
        if !info.is_null() {
            // SAFETY: from `Box::into_raw` in `zooid_service_pool_info`, freed once.
            drop(unsafe { Box::from_raw(info) });
        }
    })
}
