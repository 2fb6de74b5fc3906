//! The CAS counter's invariant: no value returned twice (across processes and crashes).

use std::collections::BTreeMap;

#[derive(Default)]
pub struct Oracle {
    /// Every counter value handed out so far, with the process it went to.
    pub counted: BTreeMap<i64, usize>,
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
}
