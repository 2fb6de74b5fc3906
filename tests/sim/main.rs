//! The deterministic simulation of ZooKeeper under the real zooid code (tests/sim/README.md).
//!
//! `cargo test --release --test sim` runs seeds (`ZOOID_SIM_SEEDS`, default: as many as fit in
//! `ZOOID_SIM_SECONDS`, 60; from `ZOOID_SIM_FIRST_SEED`, default 0), prints a failing seed with
//! its trace, and ends with one line: `sim: N seeds, V violations, E events, T s`.

mod chaos;
mod keeper; // the keeper, the durable record, wipe and rollback (keeper.rs)
mod oracle;
mod run;
mod shrink;
mod workload;
mod world;

use std::time::{Duration, Instant};

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// Runs one seed on a fresh single-threaded runtime with a paused (virtual) clock.
fn run_seed(seed: u64, config: &run::Config) -> run::Outcome {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    // The library's own draws (tokens, jitter, the choice of holes) come from the seed too.
    zooid::random::seed_thread(seed ^ 0x5eed_2007_1d00_0000);
    let outcome = runtime.block_on(run::run(seed, config));
    zooid::random::unseed_thread();
    outcome
}

/// Shrinks failing seed `seed` (tests/sim/shrink.rs) and prints the smallest run that still fails.
fn report_shrunk(seed: u64, config: &run::Config, outcome: &run::Outcome) {
    match shrink::shrink(seed, config, run_seed) {
        Some((small, shrunk)) => {
            println!(
                "sim: seed {seed} shrunk to {} process(es), {} s: {} events (from {}), {} violation(s), the first: {}",
                small.processes,
                small.run_for.as_secs(),
                shrunk.events,
                outcome.events,
                shrunk.violations.len(),
                shrunk.violations[0]
            );
            println!(
                "sim: replay the shrunk run with ZOOID_SIM_FIRST_SEED={seed} ZOOID_SIM_SEEDS=1 ZOOID_SIM_PROCESSES={} ZOOID_SIM_RUN_SECONDS={}",
                small.processes,
                small.run_for.as_secs()
            );
        }
        None => println!("sim: seed {seed}: no smaller run of it fails"),
    }
}

fn main() {
    // The library's own log lines, for debugging a seed (`ZOOID_SIM_LOG=warn`, `info`, ...).
    if let Some(level) = std::env::var("ZOOID_SIM_LOG")
        .ok()
        .and_then(|l| l.parse::<tracing::Level>().ok())
    {
        tracing_subscriber::fmt()
            .with_max_level(level)
            .with_writer(std::io::stdout)
            .without_time()
            .init();
    }
    let first = env_u64("ZOOID_SIM_FIRST_SEED").unwrap_or(0);
    let count = env_u64("ZOOID_SIM_SEEDS");
    let budget = Duration::from_secs(env_u64("ZOOID_SIM_SECONDS").unwrap_or(60));
    let config = run::Config {
        processes: env_u64("ZOOID_SIM_PROCESSES").unwrap_or(4) as usize,
        candidates: env_u64("ZOOID_SIM_CANDIDATES").unwrap_or(3) as usize,
        run_for: Duration::from_secs(env_u64("ZOOID_SIM_RUN_SECONDS").unwrap_or(40)),
        last_id: 160,
        echo: std::env::var_os("ZOOID_SIM_VERBOSE").is_some(),
        layouts: std::env::var("ZOOID_SIM_LAYOUTS").unwrap_or_else(|_| "both".into()),
        workloads: workload::Workloads::parse(
            &std::env::var("ZOOID_SIM_WORKLOADS").unwrap_or_default(),
        ),
    };
    let started = Instant::now();
    let (mut seeds, mut violations, mut events) = (0u64, 0u64, 0u64);
    let mut failing = Vec::new();
    let mut replay_differs = false;
    let mut seed = first;
    loop {
        match count {
            Some(n) if seeds >= n => break,
            None if started.elapsed() >= budget => break,
            _ => {}
        }
        let outcome = run_seed(seed, &config);
        if seeds == 0 && std::env::var_os("ZOOID_SIM_NO_REPLAY_CHECK").is_none() {
            // The same seed again must give the same run (same trace, event for event).
            let again = run_seed(seed, &config);
            let same = again.hash == outcome.hash && again.events == outcome.events;
            println!(
                "sim: replay of seed {seed}: {} ({} / {} events)",
                if same { "identical" } else { "DIFFERS" },
                outcome.events,
                again.events
            );
            replay_differs |= !same;
        }
        seeds += 1;
        events += outcome.events;
        if !outcome.violations.is_empty() {
            violations += outcome.violations.len() as u64;
            println!(
                "sim: seed {seed} ({}) FAILED: {}",
                outcome.layout, outcome.summary
            );
            for line in &outcome.trace {
                println!("  | {line}");
            }
            for v in &outcome.violations {
                println!("sim: seed {seed} violation: {v}");
            }
            println!("sim: replay with ZOOID_SIM_FIRST_SEED={seed} ZOOID_SIM_SEEDS=1 (ZOOID_SIM_VERBOSE=1 for the whole trace)");
            if std::env::var_os("ZOOID_SIM_NO_SHRINK").is_none() {
                report_shrunk(seed, &config, &outcome);
            }
            failing.push(seed);
        } else if std::env::var_os("ZOOID_SIM_SUMMARY").is_some() || count == Some(1) {
            println!(
                "sim: seed {seed} ok: {} ({} events)",
                outcome.summary, outcome.events
            );
        }
        seed += 1;
    }
    if !failing.is_empty() {
        println!("sim: failing seeds: {failing:?}");
    }
    println!(
        "sim: {seeds} seeds, {violations} violations, {events} events, {:.1} s",
        started.elapsed().as_secs_f64()
    );
    if replay_differs {
        println!("sim: a seed did not replay event for event: the run is not deterministic");
    }
    if violations > 0 || replay_differs {
        std::process::exit(1);
    }
}
