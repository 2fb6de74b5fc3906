//! What the ID service did, for operators: counters kept in the service (read back with
//! [`crate::alloc::IdGeneratorService::stats`]) and the same figures emitted through the `metrics`
//! facade, so an application plugs in the exporter it uses (Prometheus, StatsD, ...).
//!
//! The facade cannot be read back, so the service keeps its own atomics as well; both are
//! updated at the same points. docs/OPERATIONS.md lists the metric names and their meaning.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds (inclusive, in microseconds) of the latency histogram's buckets; a last,
/// unbounded bucket counts the slower operations.
pub const LATENCY_BUCKETS_US: [u64; 15] = [
    250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000,
    2_500_000, 5_000_000, 10_000_000,
];

/// How a write whose reply was lost turned out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LostOutcome {
    /// The write had applied: its result was returned.
    Applied,
    /// The write had not applied: the operation went on.
    NotApplied,
    /// It could not be told: the operation failed with `OutcomeUnknown`.
    Unknown,
}

impl LostOutcome {
    fn as_str(self) -> &'static str {
        match self {
            LostOutcome::Applied => "applied",
            LostOutcome::NotApplied => "not_applied",
            LostOutcome::Unknown => "unknown",
        }
    }
}

/// A category's pool as the service last read or wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CategoryStats {
    /// The category's path.
    pub category: String,
    /// Free IDs.
    pub free_ids: u64,
    /// Free ranges: the pool's fragmentation (1 for an untouched pool).
    pub ranges: u64,
    /// The pool node's size in bytes.
    pub node_bytes: u64,
    /// The size a push may grow the node to ([`crate::alloc::ServiceOptions::max_pool_bytes`]).
    pub node_bytes_limit: u64,
    /// The node's data version.
    pub version: i32,
    /// How many free IDs a take may still hand out at or below the category's durable ceiling;
    /// `None` (and no `zooid_pool_ceiling_headroom` gauge) without one.
    pub ceiling_headroom: Option<u64>,
}

/// Operation latency: counts per bucket of [`LATENCY_BUCKETS_US`] plus one for slower ones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LatencyHistogram {
    /// `counts[i]` operations took at most `LATENCY_BUCKETS_US[i]` µs (and more than the bucket
    /// before); the last entry counts those slower than every bound. Not cumulative.
    pub counts: Vec<u64>,
    /// Operations measured.
    pub count: u64,
    /// Their total duration in microseconds.
    pub sum_us: u64,
    /// The slowest one, in microseconds.
    pub max_us: u64,
}

/// A snapshot of what an [`crate::alloc::IdGeneratorService`] did since it was opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceStats {
    /// Takes that returned IDs.
    pub takes: u64,
    /// Pushes that returned IDs to their pool.
    pub pushes: u64,
    /// IDs handed out by those takes.
    pub ids_taken: u64,
    /// IDs returned by those pushes.
    pub ids_pushed: u64,
    /// Operations (take, push, create, show) that failed, whatever the reason.
    pub failed_ops: u64,
    /// Writes refused because another client changed the pool first.
    pub version_conflicts: u64,
    /// Listings of a format-4 pool's holes (`getChildren` of `zooid-holes`): when another
    /// process changed them, or on a new session. A process alone lists them once.
    pub hole_listings: u64,
    /// Attempts beyond each operation's first (after conflicts or disconnects).
    pub retries: u64,
    /// Writes whose reply was lost.
    pub lost_replies: u64,
    /// ... found applied.
    pub lost_applied: u64,
    /// ... found not applied (the operation went on).
    pub lost_not_applied: u64,
    /// ... whose outcome stayed unknown (the operation failed with `OutcomeUnknown`).
    pub lost_unknown: u64,
    /// IDs leaked by those unknown outcomes (takes: never handed out; pushes: not recycled), and
    /// by block give-backs that failed or whose outcome is unknown (never handed out).
    pub ids_leaked: u64,
    /// Takes and pushes whose caller gave up (dropped the future) and that still run to their
    /// end: their IDs go back, or are counted in `ids_leaked`, when they end.
    pub abandoned_running: u64,
    /// Latency of takes and pushes.
    pub latency: LatencyHistogram,
    /// ZooKeeper sessions lost (expired, or unreachable for a whole session timeout) and
    /// replaced; 0 on the embedded stores.
    pub session_losses: u64,
    /// The current session's generation (1 for the first one); 0 on the embedded stores.
    pub session_generation: u64,
    /// Each category touched, as last read or written, by path.
    pub categories: Vec<CategoryStats>,
}

/// The service's live counters.
pub(crate) struct Recorder {
    takes: AtomicU64,
    pushes: AtomicU64,
    ids_taken: AtomicU64,
    ids_pushed: AtomicU64,
    failed_ops: AtomicU64,
    version_conflicts: AtomicU64,
    hole_listings: AtomicU64,
    retries: AtomicU64,
    lost: [AtomicU64; 3],
    ids_leaked: AtomicU64,
    abandoned_running: AtomicU64,
    latency: [AtomicU64; LATENCY_BUCKETS_US.len() + 1],
    latency_count: AtomicU64,
    latency_sum_us: AtomicU64,
    latency_max_us: AtomicU64,
    categories: Mutex<BTreeMap<String, CategoryStats>>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self {
            takes: AtomicU64::new(0),
            pushes: AtomicU64::new(0),
            ids_taken: AtomicU64::new(0),
            ids_pushed: AtomicU64::new(0),
            failed_ops: AtomicU64::new(0),
            version_conflicts: AtomicU64::new(0),
            hole_listings: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            lost: Default::default(),
            ids_leaked: AtomicU64::new(0),
            abandoned_running: AtomicU64::new(0),
            latency: Default::default(),
            latency_count: AtomicU64::new(0),
            latency_sum_us: AtomicU64::new(0),
            latency_max_us: AtomicU64::new(0),
            categories: Mutex::new(BTreeMap::new()),
        }
    }
}

fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

fn get(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

impl Recorder {
    /// An operation ended: `ids` moved on success, `elapsed` since its call.
    pub(crate) fn op_done(
        &self,
        category: &str,
        op: &'static str,
        outcome: &'static str,
        ids: u64,
        elapsed: Duration,
    ) {
        let ok = outcome == "ok";
        match (op, ok) {
            ("take", true) => {
                add(&self.takes, 1);
                add(&self.ids_taken, ids);
                metrics::counter!("zooid_ids_taken_total", "category" => category.to_string())
                    .increment(ids);
            }
            ("push", true) => {
                add(&self.pushes, 1);
                add(&self.ids_pushed, ids);
                metrics::counter!("zooid_ids_pushed_total", "category" => category.to_string())
                    .increment(ids);
            }
            (_, false) => add(&self.failed_ops, 1),
            _ => {}
        }
        metrics::counter!("zooid_ops_total", "category" => category.to_string(), "op" => op, "outcome" => outcome)
            .increment(1);
        if op == "take" || op == "push" {
            let us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
            let bucket = LATENCY_BUCKETS_US
                .iter()
                .position(|&bound| us <= bound)
                .unwrap_or(LATENCY_BUCKETS_US.len());
            add(&self.latency[bucket], 1);
            add(&self.latency_count, 1);
            add(&self.latency_sum_us, us);
            self.latency_max_us.fetch_max(us, Ordering::Relaxed);
            metrics::histogram!("zooid_op_duration_seconds", "op" => op)
                .record(elapsed.as_secs_f64());
        }
    }

    pub(crate) fn conflict(&self, category: &str) {
        add(&self.version_conflicts, 1);
        metrics::counter!("zooid_version_conflicts_total", "category" => category.to_string())
            .increment(1);
    }

    pub(crate) fn hole_listing(&self, category: &str) {
        add(&self.hole_listings, 1);
        metrics::counter!("zooid_hole_listings_total", "category" => category.to_string())
            .increment(1);
    }

    pub(crate) fn retries(&self, category: &str, n: u64) {
        if n > 0 {
            add(&self.retries, n);
            metrics::counter!("zooid_retries_total", "category" => category.to_string())
                .increment(n);
        }
    }

    /// A lost reply resolved as `outcome`; `leaked` IDs when it stayed unknown.
    pub(crate) fn lost_reply(&self, category: &str, outcome: LostOutcome, leaked: u64) {
        let index = match outcome {
            LostOutcome::Applied => 0,
            LostOutcome::NotApplied => 1,
            LostOutcome::Unknown => 2,
        };
        add(&self.lost[index], 1);
        metrics::counter!("zooid_lost_replies_total", "category" => category.to_string(), "resolution" => outcome.as_str())
            .increment(1);
        self.leaked(category, leaked);
    }

    /// `n` IDs leaked: never handed out and not free (an unknown outcome, a give-back that
    /// failed).
    pub(crate) fn leaked(&self, category: &str, n: u64) {
        if n > 0 {
            add(&self.ids_leaked, n);
            metrics::counter!("zooid_ids_leaked_total", "category" => category.to_string())
                .increment(n);
        }
    }

    /// A category's pool as just read or written (its figures, taken by the allocator).
    /// `change` (1 or -1) operations whose caller gave up are running to their end.
    pub(crate) fn abandoned(&self, change: i64) {
        let running = if change >= 0 {
            self.abandoned_running
                .fetch_add(change.unsigned_abs(), Ordering::Relaxed)
                + change.unsigned_abs()
        } else {
            self.abandoned_running
                .fetch_sub(change.unsigned_abs(), Ordering::Relaxed)
                .saturating_sub(change.unsigned_abs())
        };
        metrics::gauge!("zooid_abandoned_operations_running").set(running as f64);
    }

    pub(crate) fn pool_seen(&self, stats: CategoryStats) {
        let category = stats.category.clone();
        metrics::gauge!("zooid_pool_free_ids", "category" => category.to_string())
            .set(stats.free_ids as f64);
        metrics::gauge!("zooid_pool_ranges", "category" => category.to_string())
            .set(stats.ranges as f64);
        metrics::gauge!("zooid_pool_node_bytes", "category" => category.to_string())
            .set(stats.node_bytes as f64);
        metrics::gauge!("zooid_pool_node_bytes_limit", "category" => category.to_string())
            .set(stats.node_bytes_limit as f64);
        if let Some(headroom) = stats.ceiling_headroom {
            metrics::gauge!("zooid_pool_ceiling_headroom", "category" => category.to_string())
                .set(headroom as f64);
        }
        // Only ever inserted into, so a poisoned map is still consistent.
        self.categories
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(category, stats);
    }

    /// A snapshot; the session figures are filled in by the service.
    pub(crate) fn snapshot(&self) -> ServiceStats {
        ServiceStats {
            takes: get(&self.takes),
            pushes: get(&self.pushes),
            ids_taken: get(&self.ids_taken),
            ids_pushed: get(&self.ids_pushed),
            failed_ops: get(&self.failed_ops),
            version_conflicts: get(&self.version_conflicts),
            hole_listings: get(&self.hole_listings),
            retries: get(&self.retries),
            lost_replies: self.lost.iter().map(get).sum(),
            lost_applied: get(&self.lost[0]),
            lost_not_applied: get(&self.lost[1]),
            lost_unknown: get(&self.lost[2]),
            ids_leaked: get(&self.ids_leaked),
            abandoned_running: get(&self.abandoned_running),
            latency: LatencyHistogram {
                counts: self.latency.iter().map(get).collect(),
                count: get(&self.latency_count),
                sum_us: get(&self.latency_sum_us),
                max_us: get(&self.latency_max_us),
            },
            session_losses: 0,
            session_generation: 0,
            categories: self
                .categories
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .values()
                .cloned()
                .collect(),
        }
    }
}

/// The outcome field of an operation's span and metrics: `ok`, or the error's kind's label.
pub(crate) fn outcome_of(err: Option<&crate::error::ZooidError>) -> &'static str {
    err.map_or("ok", |err| err.kind().label())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_lands_in_its_bucket_and_counts_add_up() {
        let recorder = Recorder::default();
        recorder.op_done("/c", "take", "ok", 10, Duration::from_micros(200));
        recorder.op_done("/c", "take", "ok", 5, Duration::from_micros(3_000));
        recorder.op_done("/c", "push", "exhausted", 0, Duration::from_secs(60));
        let stats = recorder.snapshot();
        assert_eq!((stats.takes, stats.ids_taken, stats.failed_ops), (2, 15, 1));
        assert_eq!(stats.latency.counts[0], 1);
        assert_eq!(stats.latency.counts[4], 1, "3 ms is in the <=5 ms bucket");
        assert_eq!(*stats.latency.counts.last().unwrap(), 1);
        assert_eq!(stats.latency.count, 3);
        assert_eq!(stats.latency.max_us, 60_000_000);
    }

    #[test]
    fn pool_figures_follow_the_last_state_seen() {
        let recorder = Recorder::default();
        let figures = |free_ids, ranges, node_bytes, version| CategoryStats {
            category: "/c".into(),
            free_ids,
            ranges,
            node_bytes,
            node_bytes_limit: 1000,
            version,
            ceiling_headroom: None,
        };
        recorder.pool_seen(figures(100, 1, 40, 0));
        recorder.pool_seen(figures(92, 2, 60, 2));
        let stats = recorder.snapshot();
        assert_eq!(stats.categories.len(), 1);
        let c = &stats.categories[0];
        assert_eq!(
            (c.free_ids, c.ranges, c.node_bytes, c.version),
            (92, 2, 60, 2)
        );
        assert_eq!(c.ceiling_headroom, None);
    }
}
