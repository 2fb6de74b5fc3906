//! The retry budget: jittered exponential backoff bounded by attempts and a deadline.

use std::time::Duration;
use tokio::time::Instant;

/// How long and how often an operation retries version conflicts and disconnects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Most write attempts one operation makes.
    pub max_attempts: u32,
    /// Time after which an operation starts no new attempt, counted from its call (a wait
    /// behind this process's other operations on the category included) through every phase
    /// of it. A request already in flight may add up to a session timeout; a write whose reply
    /// was lost gets up to one more deadline to find out whether it applied, a move to a new
    /// block generation already begun one more to end, and IDs a take claimed but does not hand
    /// out one more to go back (rather than be leaked sooner). A take at the category's ceiling
    /// waits up to `ServiceOptions::ceiling_wait` for a raise, and its attempt after the raise
    /// has a deadline of its own.
    pub deadline: Duration,
    /// First backoff ceiling; doubles per retry.
    pub base_delay: Duration,
    /// Largest backoff ceiling.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 100,
            deadline: Duration::from_secs(30),
            base_delay: Duration::from_millis(2),
            max_delay: Duration::from_millis(500),
        }
    }
}

/// One operation's use of a [`RetryPolicy`].
#[derive(Debug)]
pub(crate) struct Budget {
    policy: RetryPolicy,
    started: Instant,
    attempts: u32,
}

impl Budget {
    pub(crate) fn start(policy: RetryPolicy) -> Self {
        Self::since(policy, Instant::now())
    }

    /// A budget for an operation that started at `started`: its deadline counts from then.
    pub(crate) fn since(policy: RetryPolicy, started: Instant) -> Self {
        Self {
            policy,
            started,
            attempts: 0,
        }
    }

    /// When the operation this budget serves started.
    pub(crate) fn started(&self) -> Instant {
        self.started
    }

    /// A budget of its own, a whole deadline from now, to find out whether a write whose reply
    /// was lost applied (rather than leak its IDs sooner): see [`RetryPolicy::deadline`].
    pub(crate) fn to_resolve(&self) -> Self {
        Self::start(self.policy)
    }

    /// Counts an attempt; false when the attempts or the deadline are used up.
    pub(crate) fn try_attempt(&mut self) -> bool {
        if self.attempts >= self.policy.max_attempts || self.expired() {
            return false;
        }
        self.attempts += 1;
        true
    }

    pub(crate) fn expired(&self) -> bool {
        self.started.elapsed() >= self.policy.deadline
    }

    pub(crate) fn attempts(&self) -> u32 {
        self.attempts
    }

    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    pub(crate) fn deadline(&self) -> Duration {
        self.policy.deadline
    }

    /// Time left before the deadline.
    pub(crate) fn remaining(&self) -> Duration {
        self.policy.deadline.saturating_sub(self.started.elapsed())
    }

    /// Sleeps a random time in `[0, ceiling]`, never past the deadline.
    pub(crate) async fn sleep_up_to(&self, ceiling: Duration) {
        let nanos = u64::try_from(ceiling.min(self.remaining()).as_nanos()).unwrap_or(u64::MAX);
        if nanos > 0 {
            tokio::time::sleep(Duration::from_nanos(crate::random::random_range(0..=nanos))).await;
        }
    }

    /// Sleeps a random time up to the current backoff ceiling ("full jitter"), never past the
    /// deadline.
    pub(crate) async fn backoff(&self) {
        let exponent = self.attempts.saturating_sub(1).min(20);
        let ceiling = self
            .policy
            .base_delay
            .saturating_mul(1 << exponent)
            .min(self.policy.max_delay);
        let left = self.policy.deadline.saturating_sub(self.started.elapsed());
        let nanos = u64::try_from(ceiling.min(left).as_nanos()).unwrap_or(u64::MAX);
        if nanos > 0 {
            tokio::time::sleep(Duration::from_nanos(crate::random::random_range(0..=nanos))).await;
        }
    }
}
