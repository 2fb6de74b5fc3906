//! Shrinking a failing seed: the same seed run again with fewer processes and fewer virtual
//! seconds of chaos, smallest first, until one run still breaks an invariant. Another process
//! count or length draws another scenario from the seed, so the shrunk run is a smaller
//! reproduction of a violation, not the same trace cut short; it is replayed with the
//! environment the report names.

use std::time::Duration;

use crate::run::{Config, Outcome};

/// At most this many runs are spent on shrinking one seed.
const MAX_TRIES: usize = 16;

/// The smallest configuration found under `config` in which `seed` still fails, with its
/// outcome; `None` when none smaller fails within [`MAX_TRIES`] runs.
pub fn shrink(
    seed: u64,
    config: &Config,
    run_seed: impl Fn(u64, &Config) -> Outcome,
) -> Option<(Config, Outcome)> {
    let mut candidates = Vec::new();
    for processes in 1..=config.processes {
        let mut seconds = 5;
        while seconds <= config.run_for.as_secs() {
            let smaller = processes < config.processes || seconds < config.run_for.as_secs();
            if smaller {
                candidates.push((processes, seconds));
            }
            seconds *= 2;
        }
    }
    // Smallest first: fewest process-seconds, then fewest processes.
    candidates.sort_by_key(|&(processes, seconds)| (processes as u64 * seconds, processes));
    candidates
        .into_iter()
        .take(MAX_TRIES)
        .find_map(|(processes, seconds)| {
            let smaller = Config {
                processes,
                run_for: Duration::from_secs(seconds),
                echo: false,
                ..config.clone()
            };
            let outcome = run_seed(seed, &smaller);
            (!outcome.violations.is_empty()).then_some((smaller, outcome))
        })
}
