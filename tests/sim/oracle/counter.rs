//! The CAS counter's invariants: no value returned twice (across processes and crashes), and at
//! the end every value up to the counter's is returned, or reported skipped (named by an
//! `OutcomeUnknown`), or within the bound of a `next` a crash cut short.

use std::collections::{BTreeMap, BTreeSet};

use zooid::ZooidError;

#[derive(Default)]
pub struct Oracle {
    /// Every counter value handed out so far, with the process it went to.
    pub counted: BTreeMap<i64, usize>,
    /// Values named by an `OutcomeUnknown`: skipped, reported.
    pub skipped: BTreeSet<i64>,
    /// How many values `next`s cut short by a crash may have reserved.
    pub anonymous: u64,
    /// The `n` of each process's `next` in flight.
    pub in_flight: BTreeMap<usize, u64>,
    /// A wipe or rollback reset the counter (it keeps no durable record): the end check of what
    /// came before is off.
    pub reset: bool,
    pub nexts: u64,
    pub violations: Vec<String>,
}

impl Oracle {
    /// Process `p`'s counter `next` returned `values`: none may have been returned before.
    pub fn counted(&mut self, p: usize, values: &[i64]) {
        self.nexts += 1;
        for &value in values {
            if let Some(earlier) = self.counted.insert(value, p) {
                self.violations.push(format!(
                    "counter value {value} returned twice: to p{earlier} and to p{p}"
                ));
            }
        }
    }

    /// Process `p`'s `next` failed with `err`: an `OutcomeUnknown` names the values it skipped.
    pub fn failed(&mut self, err: &ZooidError) {
        if let ZooidError::OutcomeUnknown { ids, .. } = err {
            self.skipped
                .extend(ids.iter().flat_map(|r| r.start()..=r.end()));
        }
    }

    /// Process `p` crashed: its `next` in flight may have reserved its values.
    pub fn crashed(&mut self, p: usize) {
        self.anonymous += self.in_flight.remove(&p).unwrap_or(0);
    }

    /// At the end, the counter at `last`: every value up to it is accounted for.
    pub fn check_conserved(&mut self, last: i64) {
        if self.reset {
            return;
        }
        let missing: Vec<i64> = (1..=last)
            .filter(|v| !self.counted.contains_key(v) && !self.skipped.contains(v))
            .collect();
        if missing.len() as u64 > self.anonymous {
            let shown: Vec<_> = missing.iter().take(10).collect();
            self.violations.push(format!(
                "{} counter values neither returned nor reported skipped (bound {}): {shown:?}",
                missing.len(),
                self.anonymous
            ));
        }
    }
}
