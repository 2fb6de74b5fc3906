//! The tuning of a source ([`SourceOptions`]) and what it reports ([`SourceStats`]).

use std::time::Duration;

use crate::alloc::MAX_TAKE;
use crate::error::{Result, ZooidError};

/// How many refill sizes [`SourceStats::batches`] keeps (the most recent ones).
pub(super) const BATCH_HISTORY: usize = 256;

/// Tuning of an [`IdSource`](super::IdSource).
#[derive(Clone, Debug, PartialEq)]
pub struct SourceOptions {
    /// Size of the first batch, taken when the source opens.
    pub initial_batch: u64,
    /// Smallest batch a refill asks for.
    pub min_batch: u64,
    /// Largest batch a refill asks for.
    pub max_batch: u64,
    /// Fraction of the current batch used (0 < f <= 1) at which the next one is requested.
    pub refill_when_used: f64,
    /// How long a batch should last at the observed consumption rate.
    pub target_batch_duration: Duration,
    /// After a failed background refill, the earliest a new background refill starts (a caller
    /// that runs out starts one at once).
    pub retry_refill_after: Duration,
}

impl Default for SourceOptions {
    fn default() -> Self {
        Self {
            initial_batch: 1_000,
            min_batch: 100,
            max_batch: 1_000_000,
            refill_when_used: 0.1,
            target_batch_duration: Duration::from_secs(30),
            retry_refill_after: Duration::from_secs(1),
        }
    }
}

impl SourceOptions {
    pub(super) fn validate(&self) -> Result<()> {
        let bad = |why: String| {
            Err(ZooidError::InvalidArgument(format!(
                "source options: {why}"
            )))
        };
        if self.min_batch == 0 || self.min_batch > self.max_batch || self.max_batch > MAX_TAKE {
            return bad(format!(
                "need 1 <= min_batch ({}) <= max_batch ({}) <= {MAX_TAKE}",
                self.min_batch, self.max_batch
            ));
        }
        if !(self.min_batch..=self.max_batch).contains(&self.initial_batch) {
            return bad(format!(
                "initial_batch {} is outside min_batch..=max_batch",
                self.initial_batch
            ));
        }
        if !(self.refill_when_used > 0.0 && self.refill_when_used <= 1.0) {
            return bad(format!(
                "refill_when_used {} must be in (0, 1]",
                self.refill_when_used
            ));
        }
        if self.target_batch_duration.is_zero() {
            return bad("target_batch_duration must be positive".into());
        }
        Ok(())
    }
}

/// What a source has done so far, for monitoring and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceStats {
    /// IDs handed to callers.
    pub handed_out: u64,
    /// Batches taken from the pool, the first one included.
    pub refills: u64,
    /// Background or foreground takes that failed.
    pub refill_failures: u64,
    /// Calls that found no local ID and waited on ZooKeeper.
    pub waits: u64,
    /// Sizes of the batches taken, oldest first (the most recent 256).
    pub batches: Vec<u64>,
    /// The size the latest refill asked for; the next one doubles, keeps or halves it.
    pub next_batch: u64,
    /// IDs held locally (the current batch's rest and the prefetched batch).
    pub local: u64,
    /// Whether a refill is in flight.
    pub refilling: bool,
}
