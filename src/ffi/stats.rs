//! The service's statistics as a C struct: `zooid_service_stats`.

use super::service::zooid_service;
use super::{arg_ref, guard, zooid_status, Failure};
use crate::error::ZooidError;
use crate::stats::{ServiceStats, LATENCY_BUCKETS_US};

/// The layout version `zooid_service_stats` writes into `zooid_stats.version`.
pub const ZOOID_STATS_VERSION: u32 = 1;

/// Buckets of `zooid_stats.latency_buckets`: operations that took at most 250 µs, 500 µs, 1 ms,
/// 2.5 ms, 5 ms, 10 ms, 25 ms, 50 ms, 100 ms, 250 ms, 500 ms, 1 s, 2.5 s, 5 s, 10 s, and slower.
pub const ZOOID_STATS_LATENCY_BUCKETS: usize = 16;

const _: () = assert!(ZOOID_STATS_LATENCY_BUCKETS == LATENCY_BUCKETS_US.len() + 1);

/// What a service did since it was opened (Rust: `ServiceStats`; docs/OPERATIONS.md explains
/// every figure).
///
/// ABI growth: the caller sets `struct_size` to `sizeof(zooid_stats)` as its header declares
/// it; the library fills only that many bytes, and later versions only append fields, so a
/// program built against an older header keeps working with a newer library (and the other way
/// round, the fields the library does not know staying as the caller left them).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct zooid_stats {
    /// Set by the caller: `sizeof(zooid_stats)`.
    pub struct_size: u32,
    /// Written by the library: the `ZOOID_STATS_VERSION` of the layout it filled.
    pub version: u32,
    /// Takes that returned IDs.
    pub takes: u64,
    /// Pushes that returned IDs to their pool.
    pub pushes: u64,
    /// IDs handed out by those takes.
    pub ids_taken: u64,
    /// IDs returned by those pushes.
    pub ids_pushed: u64,
    /// Operations that failed, whatever the reason.
    pub failed_ops: u64,
    /// Writes refused because another client changed the pool first.
    pub version_conflicts: u64,
    /// Attempts beyond each operation's first.
    pub retries: u64,
    /// Writes whose reply was lost ...
    pub lost_replies: u64,
    /// ... found applied,
    pub lost_applied: u64,
    /// ... found not applied,
    pub lost_not_applied: u64,
    /// ... or whose outcome stayed unknown (the call failed with `ZOOID_STATUS_OUTCOME_UNKNOWN`).
    pub lost_unknown: u64,
    /// IDs leaked by the unknown outcomes.
    pub ids_leaked: u64,
    /// ZooKeeper sessions lost and replaced (0 on the embedded stores).
    pub session_losses: u64,
    /// The current ZooKeeper session's generation, 1 for the first (0 on the embedded stores).
    pub session_generation: u64,
    /// Takes and pushes timed.
    pub latency_count: u64,
    /// Their total duration, in microseconds.
    pub latency_sum_us: u64,
    /// The slowest one, in microseconds.
    pub latency_max_us: u64,
    /// Per bucket (see `ZOOID_STATS_LATENCY_BUCKETS`), not cumulative.
    pub latency_buckets: [u64; ZOOID_STATS_LATENCY_BUCKETS],
}

impl From<&ServiceStats> for zooid_stats {
    fn from(s: &ServiceStats) -> Self {
        let mut buckets = [0; ZOOID_STATS_LATENCY_BUCKETS];
        for (slot, count) in buckets.iter_mut().zip(&s.latency.counts) {
            *slot = *count;
        }
        zooid_stats {
            struct_size: std::mem::size_of::<zooid_stats>() as u32,
            version: ZOOID_STATS_VERSION,
            takes: s.takes,
            pushes: s.pushes,
            ids_taken: s.ids_taken,
            ids_pushed: s.ids_pushed,
            failed_ops: s.failed_ops,
            version_conflicts: s.version_conflicts,
            retries: s.retries,
            lost_replies: s.lost_replies,
            lost_applied: s.lost_applied,
            lost_not_applied: s.lost_not_applied,
            lost_unknown: s.lost_unknown,
            ids_leaked: s.ids_leaked,
            session_losses: s.session_losses,
            session_generation: s.session_generation,
            latency_count: s.latency.count,
            latency_sum_us: s.latency.sum_us,
            latency_max_us: s.latency.max_us,
            latency_buckets: buckets,
        }
    }
}

/// Writes the service's statistics to `*out`, whose `struct_size` the caller set to
/// `sizeof(zooid_stats)`: at most that many bytes are written, `struct_size` is left as it was.
/// Per-category figures: `zooid_service_pool_info`.
///
/// Errors: `ZOOID_STATUS_INVALID_ARGUMENT` for a NULL argument or a `struct_size` smaller than
/// the two header fields (nothing is written then).
///
/// # Safety
/// `service` must be NULL or a live service; `out` NULL or valid for reads and writes of
/// `out->struct_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn zooid_service_stats(
    service: *const zooid_service,
    out: *mut zooid_stats,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let service = unsafe { arg_ref(service, "service") }?;
        if out.is_null() {
            return Err(Failure::Null("out"));
        }
        // SAFETY: `out` is valid for at least its first field, by this function's contract.
        let size = unsafe { std::ptr::addr_of!((*out).struct_size).read_unaligned() } as usize;
        if size < 8 {
            return Err(ZooidError::InvalidArgument(format!(
                "zooid_stats.struct_size is {size}: set it to sizeof(zooid_stats)"
            ))
            .into());
        }
        let mut filled = zooid_stats::from(&service.inner.stats());
        filled.struct_size = size as u32;
        let len = size.min(std::mem::size_of::<zooid_stats>());
        // SAFETY: `out` is valid for `size` >= `len` bytes by this function's contract, and
        // `filled` is a plain-old-data struct of at least `len` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (&filled as *const zooid_stats).cast::<u8>(),
                out.cast::<u8>(),
                len,
            );
        }
        Ok(())
    })
}
