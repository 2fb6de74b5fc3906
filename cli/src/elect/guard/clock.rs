//! The guard's clock: `CLOCK_BOOTTIME`, which counts a suspend of the host, and the conversion
//! of the election's lease (on `CLOCK_MONOTONIC`) to it, never later than the true instant.

use std::collections::VecDeque;
use std::time::Duration;

/// The clock `clock` in nanoseconds.
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// `CLOCK_MONOTONIC` in nanoseconds (the clock of `std::time::Instant` on Linux): it stops while
/// the host is suspended.
fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// `CLOCK_BOOTTIME` in nanoseconds: the same clock in every process of the host, and it counts
/// the time the host is suspended (the servers' clocks run on meanwhile): the guard's clock.
pub(in crate::elect) fn boottime_ns() -> u64 {
    clock_ns(libc::CLOCK_BOOTTIME)
}

/// `instant` on the host's `CLOCK_MONOTONIC`, never later than it: the clock is read before
/// `Instant::now()`, so a pause between the two reads moves the result earlier.
fn monotonic_ns_of(instant: std::time::Instant) -> u64 {
    let base = monotonic_ns();
    let now = std::time::Instant::now();
    match instant.checked_duration_since(now) {
        Some(ahead) => base + ahead.as_nanos() as u64,
        None => base.saturating_sub(now.duration_since(instant).as_nanos() as u64),
    }
}

/// Converts the election's lease (a `std::time::Instant`, on `CLOCK_MONOTONIC`) to
/// `CLOCK_BOOTTIME`, never later than the true instant.
///
/// The two clocks differ by the time the host spent suspended, an offset that only grows. The
/// lease is "the send time of a confirmation plus half a session" on the monotonic clock; if the
/// host was suspended after that send time, the true end (on a clock that ran on, as the
/// servers' did) is earlier than the monotonic figure says, by the suspend. So the offset is
/// taken as it was *before the send time*: from samples of the offset (taken at start and at
/// every conversion, one kept per value), the last one taken no later than `lease - base_before`,
/// where `base_before` is at least how long before its end the lease was based.
pub(in crate::elect) struct BootClock {
    /// `(CLOCK_MONOTONIC ns when first seen, offset ns)`, offsets growing.
    offsets: VecDeque<(u64, u64)>,
}

/// Offsets closer than this to the last sample are the same (read jitter, not a suspend).
const OFFSET_SLACK_NS: u64 = 1_000_000;
/// Samples kept (one per suspend seen).
const OFFSET_SAMPLES: usize = 64;

impl BootClock {
    pub(in crate::elect) fn new() -> BootClock {
        let mut clock = BootClock {
            offsets: VecDeque::new(),
        };
        clock.sample();
        clock
    }

    /// Records the current offset. `CLOCK_BOOTTIME` is read first, so the offset read is never
    /// more than the true one.
    fn sample(&mut self) {
        let boot = boottime_ns();
        let mono = monotonic_ns();
        let offset = boot.saturating_sub(mono);
        if self
            .offsets
            .back()
            .is_some_and(|&(_, last)| offset <= last.saturating_add(OFFSET_SLACK_NS))
        {
            return;
        }
        if self.offsets.len() == OFFSET_SAMPLES {
            self.offsets.pop_front();
        }
        self.offsets.push_back((mono, offset));
    }

    /// `lease` on `CLOCK_BOOTTIME`: see the type.
    pub(in crate::elect) fn boottime_of(
        &mut self,
        lease: std::time::Instant,
        base_before: Duration,
    ) -> u64 {
        self.sample();
        let mono = monotonic_ns_of(lease);
        let base = mono.saturating_sub(u64::try_from(base_before.as_nanos()).unwrap_or(u64::MAX));
        let offset = self
            .offsets
            .iter()
            .rev()
            .find(|(at, _)| *at <= base)
            .or(self.offsets.front())
            .map_or(0, |&(_, offset)| offset);
        mono.saturating_add(offset)
    }
}
