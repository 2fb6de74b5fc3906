//! The CAS counter (`zooid::Counter`) on each process's session: no value returned twice, none
//! skipped unreported (oracle/counter.rs).

use std::time::Duration;

use rand::Rng;
use zooid::zk::Zk;

use super::{options, Shared};

/// The counter's node.
pub const COUNTER: &str = "/sim/counter";

/// Creates the counter at 0 (before any fault).
pub async fn setup(admin: &Zk) -> Result<(), String> {
    let counter = zooid::Counter::new(admin.clone(), COUNTER).expect("a valid counter path");
    counter
        .init(0)
        .await
        .map_err(|err| format!("setup: counter init failed: {err}"))
}

/// One process's draws, until told to stop.
pub async fn process(shared: &Shared, p: usize, zk: Zk) {
    let counter =
        zooid::Counter::with_policy(zk, COUNTER, options().retry).expect("a valid counter path");
    while !shared.stopping() {
        let (n, pause) = {
            let mut state = shared.world.lock();
            let n = state.rng.random_range(1..=4u64);
            let pause = crate::world::faults::between(
                &mut state.rng,
                Duration::from_millis(20),
                Duration::from_millis(250),
            );
            (n, pause)
        };
        shared.counter_oracle().in_flight.insert(p, n);
        let result = counter.next(n).await;
        shared.log(format!(
            "p{p} counter next {n} -> {:?}",
            result.as_ref().map_err(|e| e.kind())
        ));
        {
            let mut oracle = shared.counter_oracle();
            oracle.in_flight.remove(&p);
            match &result {
                Ok(range) => {
                    let values: Vec<i64> = (range.start()..=range.end()).collect();
                    oracle.counted(p, &values);
                }
                Err(err) => oracle.failed(err),
            }
        }
        shared.check_step(p);
        tokio::time::sleep(pause).await;
    }
}

/// After the quiet phase: every value up to the counter's is accounted for.
pub async fn finish(shared: &Shared, drain: Zk) {
    let counter = zooid::Counter::new(drain, COUNTER).expect("a valid counter path");
    match counter.get().await {
        Ok(last) => shared.counter_oracle().check_conserved(last),
        Err(err) => shared
            .counter_oracle()
            .violations
            .push(format!("the counter could not be read in the quiet phase: {err}")),
    }
}

pub fn summary(shared: &Shared) -> String {
    let o = shared.counter_oracle();
    format!(
        "{} counter values in {} nexts, {} skipped",
        o.counted.len(),
        o.nexts,
        o.skipped.len()
    )
}
