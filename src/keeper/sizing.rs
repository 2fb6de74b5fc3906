//! Reserve sizing: how far ahead of demand a ceiling is kept, from the observed take rate.

use std::time::Duration;

use tokio::time::Instant;

/// How the keeper sizes reserves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sizing {
    /// The reserve covers this much demand at the observed take rate.
    pub cover: Duration,
    /// The smallest reserve.
    pub floor: u64,
    /// The largest reserve.
    pub cap: u64,
    /// A raise happens when the headroom falls under this fraction of the reserve.
    pub low_water: f64,
    /// Weight of the newest rate sample in the moving average (0 < alpha <= 1).
    pub alpha: f64,
    /// The largest share of the IDs not yet handed out that a reserve may take (0 < share
    /// <= 1): IDs reserved are lost when ZooKeeper is wiped and restored from the record, so a
    /// wipe costs at most this share of what is left.
    pub left_share: f64,
}

impl Default for Sizing {
    fn default() -> Self {
        Self {
            cover: Duration::from_secs(10 * 60),
            floor: 10_000,
            cap: 100_000_000,
            low_water: 0.5,
            alpha: 0.3,
            left_share: 0.1,
        }
    }
}

impl Sizing {
    /// The reserve for a take rate of `rate` IDs per second.
    pub fn reserve(&self, rate: f64) -> u64 {
        let want = (rate.max(0.0) * self.cover.as_secs_f64()).ceil();
        let want = if want.is_finite() && want < u64::MAX as f64 {
            want as u64
        } else {
            u64::MAX
        };
        want.clamp(self.floor, self.cap.max(self.floor))
    }

    /// `reserve`, capped at [`left_share`](Self::left_share) of the `left` IDs not yet handed
    /// out (at least one while any is left).
    pub fn within_left(&self, reserve: u64, left: u64) -> u64 {
        let share = if self.left_share.is_finite() {
            self.left_share.clamp(0.0, 1.0)
        } else {
            1.0
        };
        let most = ((left as f64) * share).floor() as u64;
        reserve.min(most.max(1))
    }

    /// The headroom under which the keeper raises the ceiling.
    pub fn low_water_mark(&self, reserve: u64) -> u64 {
        ((reserve as f64) * self.low_water.clamp(0.0, 1.0)) as u64
    }
}

/// The take rate of one category, from successive counts of IDs in use (not free).
#[derive(Clone, Debug, Default)]
pub struct TakeRate {
    last: Option<(Instant, u64)>,
    rate: f64,
}

impl TakeRate {
    /// Records that `used` IDs were in use at `now`; returns the smoothed rate in IDs/second.
    /// Pushes (fewer in use) count as no demand, not negative demand.
    pub fn observe(&mut self, now: Instant, used: u64, alpha: f64) -> f64 {
        match self.last {
            Some((then, before)) => {
                let dt = now.saturating_duration_since(then).as_secs_f64();
                if dt >= 0.2 {
                    let sample = used.saturating_sub(before) as f64 / dt;
                    self.rate = alpha * sample + (1.0 - alpha) * self.rate;
                    self.last = Some((now, used));
                } else if used < before {
                    self.last = Some((then, used));
                }
            }
            None => self.last = Some((now, used)),
        }
        self.rate
    }

    /// Forgets the last count (after IDs left the free list without being taken), keeping the
    /// estimate.
    pub fn reset(&mut self) {
        self.last = None;
    }

    /// The current estimate, in IDs per second.
    pub fn rate(&self) -> f64 {
        self.rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_covers_demand_within_floor_and_cap() {
        let s = Sizing {
            cover: Duration::from_secs(60),
            floor: 100,
            cap: 10_000,
            low_water: 0.5,
            alpha: 1.0,
            left_share: 0.1,
        };
        assert_eq!(s.reserve(0.0), 100);
        assert_eq!(s.reserve(10.0), 600);
        assert_eq!(s.reserve(1e9), 10_000);
        assert_eq!(s.reserve(f64::NAN), 100);
        assert_eq!(s.low_water_mark(600), 300);
    }

    #[test]
    fn the_reserve_takes_at_most_a_share_of_what_is_left() {
        let s = Sizing::default();
        // The case of the report: a high take rate asked for the whole rest of the category.
        assert_eq!(s.reserve(1e9), 100_000_000);
        assert_eq!(s.within_left(100_000_000, 100_000_000), 10_000_000);
        assert_eq!(s.within_left(10_000, 100_000_000), 10_000);
        assert_eq!(s.within_left(10_000, 5), 1);
        assert_eq!(s.within_left(10_000, 0), 1);
        let all = Sizing {
            left_share: 1.0,
            ..Sizing::default()
        };
        assert_eq!(all.within_left(500, 300), 300);
    }

    #[test]
    fn the_rate_follows_the_ids_in_use() {
        let mut r = TakeRate::default();
        let t = Instant::now();
        assert_eq!(r.observe(t, 1000, 1.0), 0.0);
        assert_eq!(r.observe(t + Duration::from_secs(2), 1200, 1.0), 100.0);
        // Pushes are not negative demand.
        assert_eq!(r.observe(t + Duration::from_secs(3), 1100, 1.0), 0.0);
        let mut smooth = TakeRate::default();
        smooth.observe(t, 0, 0.5);
        assert_eq!(smooth.observe(t + Duration::from_secs(1), 100, 0.5), 50.0);
    }
}
