//! The leader election with its lease (`zooid::Election`): every process is a candidate of one
//! group (odd processes with the keep pause policy, even ones with stop), follows its status,
//! and now and then resigns and joins again (oracle/election.rs). The oracle is also checked
//! on a timer ([`watch`]), so a double leader between two steps is seen.

use std::time::Duration;

use rand::Rng;
use zooid::zk::Zk;
use zooid::{Election, ElectionOptions, PausePolicy, ZooidError};

use super::Shared;
use crate::oracle::election::View;

/// The group node.
pub const GROUP: &str = "/sim/election";

/// How often the election's oracle is checked besides the steps.
const EVERY: Duration = Duration::from_millis(10);

/// One process's candidacies, until told to stop.
pub async fn process(shared: &Shared, p: usize, zk: Zk) {
    let policy = if p % 2 == 1 {
        PausePolicy::Keep
    } else {
        PausePolicy::Stop
    };
    while !shared.stopping() {
        let options = ElectionOptions {
            on_pause: policy,
            ..ElectionOptions::new(format!("p{p}"))
        };
        let election = match Election::join(&zk, GROUP, options).await {
            Ok(election) => election,
            Err(err) => {
                shared.log(format!("p{p} join -> {:?}", err.kind()));
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        shared.election_oracle().register(
            p,
            View {
                status: election.subscribe(),
                lease: election.subscribe_lease(),
            },
        );
        shared.log(format!("p{p} joined {GROUP} ({})", policy.as_str()));
        let stay = {
            let mut state = shared.world.lock();
            Duration::from_millis(state.rng.random_range(1_000..8_000))
        };
        let until = tokio::time::Instant::now() + stay;
        let mut last = election.status();
        while !shared.stopping() && tokio::time::Instant::now() < until {
            match election
                .wait_change(&last, Duration::from_millis(250))
                .await
            {
                Ok(status) => {
                    shared.log(format!(
                        "p{p} election {} token {:?} g{}",
                        status.state.as_str(),
                        status.token,
                        status.session_generation
                    ));
                    last = status;
                }
                Err(ZooidError::Timeout { .. }) => {}
                Err(err) => {
                    shared.log(format!("p{p} election ended: {:?}", err.kind()));
                    break;
                }
            }
            shared.check_step(p);
        }
        let resigned = election.resign().await;
        shared.election_oracle().resigns += 1;
        shared.log(format!(
            "p{p} resigned -> {:?}",
            resigned.as_ref().map_err(|e| e.kind())
        ));
        shared.election_oracle().unregister(p);
        shared.check_step(p);
    }
}

/// Checks the election's oracle every few milliseconds until the run stops.
pub async fn watch(shared: std::sync::Arc<Shared>) {
    while !shared.stopping() {
        tokio::time::sleep(EVERY).await;
        shared.election_oracle().check(tokio::time::Instant::now());
        shared.trace_violations(0);
    }
}

pub fn summary(shared: &Shared) -> String {
    let o = shared.election_oracle();
    format!(
        "{} joins, {} terms, {} resigns, {} exempt checks",
        o.joins,
        o.terms.len(),
        o.resigns,
        o.exempted
    )
}
