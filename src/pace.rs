//! Contention pacing: how long an operation on a contended category waits before it reads and
//! writes, adapted to the contention this process observes instead of a fixed schedule.
//!
//! A fixed exponential schedule is unfair under contention: a process that has just written knows
//! the node's version and writes again at once, while the ones it beat wait longer after each
//! loss and lose again (the capture effect). [`Pace`] replaces it with three rules:
//!
//! 1. **Contenders counted from the versions.** When a process reads the node after its own last
//!    write, the version tells how many writes others made in between; a smoothed count of them
//!    estimates how many others contend. Every contender sees the same writes, so all of them
//!    arrive at about the same estimate: the rule is symmetric, hence fair. (Stretching turns
//!    on each process's own conflicts was tried and dropped: the losers' turns grew, the
//!    winner's shrank, and the capture effect came back; docs/BENCHMARKS.md.)
//! 2. **Newcomers yield.** While others contend, an operation starts with a random wait of up to
//!    one turn of everyone (`contenders × round trip`) and then reads the node afresh, instead of
//!    writing at once on the version it remembers: the last winner does not write again before
//!    the others have had their turn. With no other writer seen, nothing changes: the
//!    uncontended take stays one round trip.
//! 3. **The oldest goes first.** After its `k`-th conflict an operation waits a random time of
//!    up to `2 × turn / (k + 2)`: the longer it has waited, the sooner it retries, so a loser catches
//!    up instead of falling further behind.
//!
//! Waiting before the *read* (never between read and write) keeps the time in which another
//! writer can slip in, and make a write fail, to one round trip.

use std::time::Duration;

/// The smoothing weight of a new sample.
const WEIGHT: f64 = 0.25;

/// How fast the remembered fastest round trip rises when every write is slower.
const RTT_DECAY: f64 = 1.05;

/// Below this many other writers per operation, a category counts as uncontended.
const CONTENDED: f64 = 0.5;

/// Round trips shorter than this are taken as this long: the runtime's timers have a resolution
/// of one millisecond, so shorter random waits would all end on the same tick and collide.
const MIN_RTT: Duration = Duration::from_millis(1);

/// The most contenders a turn is sized for (a wait stays below `MAX_OTHERS` round trips).
const MAX_OTHERS: f64 = 256.0;

/// One category's contention state in one process.
#[derive(Clone, Debug, Default)]
pub(crate) struct Pace {
    /// The round trip of this process's fastest recent successful writes (zero before the
    /// first): a decaying minimum, since a write that waited for a CPU would make one process's
    /// turns, and its waits, far longer than the others'.
    rtt: Duration,
    /// Smoothed count of the writes others made between two of this process's operations.
    others: f64,
}

impl Pace {
    /// Whether operations currently yield before their first attempt.
    pub(crate) fn contended(&self) -> bool {
        self.others >= CONTENDED
    }

    /// One turn of everyone: how long the others need for one write each.
    fn turn(&self) -> Duration {
        self.rtt.max(MIN_RTT).mul_f64(self.others.min(MAX_OTHERS))
    }

    /// The ceiling of the random wait before attempt `attempt` (1-based) of an operation.
    pub(crate) fn wait_ceiling(&self, attempt: u32) -> Duration {
        if !self.contended() {
            Duration::ZERO
        } else {
            // 1, 2/3, 1/2, 2/5, ... of a turn.
            self.turn().mul_f64(2.0 / (f64::from(attempt) + 1.0))
        }
    }

    /// Records a write that lost a compare-and-set: somebody else wrote.
    pub(crate) fn on_conflict(&mut self) {
        self.others = self.others.max(1.0);
    }

    /// Records a write that applied after `elapsed`.
    pub(crate) fn on_success(&mut self, elapsed: Duration) {
        self.rtt = if self.rtt.is_zero() {
            elapsed
        } else {
            elapsed.min(self.rtt.mul_f64(RTT_DECAY))
        };
    }

    /// Records what a read made after this process's last write showed: how many writes others
    /// made in between.
    pub(crate) fn on_fresh_read(&mut self, others_wrote: u32) {
        self.others = self.others * (1.0 - WEIGHT) + f64::from(others_wrote) * WEIGHT;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RTT: Duration = Duration::from_millis(2);

    #[test]
    fn uncontended_is_free() {
        let mut pace = Pace::default();
        pace.on_success(RTT);
        pace.on_fresh_read(0);
        assert!(!pace.contended());
        assert_eq!(pace.wait_ceiling(1), Duration::ZERO);
        assert_eq!(pace.wait_ceiling(2), Duration::ZERO);
    }

    #[test]
    fn others_writes_open_a_turn_sized_by_them() {
        let mut pace = Pace::default();
        pace.on_success(RTT);
        for _ in 0..30 {
            pace.on_fresh_read(8);
        }
        assert!(pace.contended());
        let turn = pace.wait_ceiling(1);
        assert!(turn > RTT * 7 && turn <= RTT * 8, "{turn:?}");
        // Once nobody else writes, the category is uncontended again.
        let mut reads = 0;
        while pace.contended() {
            pace.on_fresh_read(0);
            reads += 1;
            assert!(reads < 30, "never closed");
        }
    }

    #[test]
    fn a_conflict_means_contention() {
        let mut pace = Pace::default();
        pace.on_success(RTT);
        pace.on_conflict();
        assert!(pace.contended());
        assert_eq!(pace.wait_ceiling(1), RTT);
    }

    #[test]
    fn older_operations_wait_less() {
        let mut pace = Pace::default();
        pace.on_success(RTT);
        for _ in 0..30 {
            pace.on_fresh_read(4);
        }
        let ceilings: Vec<Duration> = (1..=5).map(|a| pace.wait_ceiling(a)).collect();
        assert!(ceilings.windows(2).all(|w| w[0] > w[1]), "{ceilings:?}");
    }
}
