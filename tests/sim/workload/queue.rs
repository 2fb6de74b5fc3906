//! The work queue (`zooid::WorkQueue`): every process puts items and claims them (completing
//! most, releasing some); at the end a fresh consumer drains the queue (oracle/queue.rs).

use std::time::Duration;

use rand::Rng;
use zooid::zk::Zk;
use zooid::{QueueOptions, WorkQueue};

use super::{pause, Shared};
use crate::oracle::queue::data_of;
use crate::world::sessions::Life;

/// The queue's node.
pub const QUEUE: &str = "/sim/queue";

/// A short op timeout (the default is 30 s), so that puts and completes end in doubt within a
/// run's faults.
fn queue_options(p: usize) -> QueueOptions {
    QueueOptions {
        identity: Some(format!("p{p}")),
        op_timeout: Duration::from_secs(3),
        ..QueueOptions::default()
    }
}

fn alive(shared: &Shared) -> impl Fn(i64) -> bool + '_ {
    move |sid| {
        shared
            .world
            .lock()
            .sessions
            .get(&sid)
            .is_some_and(|s| s.state == Life::Alive)
    }
}

/// One process's puts and claims, until told to stop.
pub async fn process(shared: &Shared, p: usize, zk: Zk) {
    let queue = WorkQueue::open(zk, QUEUE, queue_options(p)).expect("valid queue options");
    while !shared.stopping() {
        let (put, wait, work, complete) = {
            let mut state = shared.world.lock();
            (
                state.rng.random_bool(0.5),
                Duration::from_millis(state.rng.random_range(0..300)),
                Duration::from_millis(state.rng.random_range(0..100)),
                state.rng.random_bool(0.8),
            )
        };
        if put {
            let k = shared.queue_oracle().put_started(p);
            let result = queue.put(&data_of(k)).await;
            shared.log(format!(
                "p{p} put item-{k} -> {:?}",
                result.as_ref().map_err(|e| e.kind())
            ));
            shared.queue_oracle().put_ended(p, k, &result);
        } else {
            let started = tokio::time::Instant::now();
            match queue.claim(Some(wait)).await {
                Ok(Some(claim)) => {
                    let k = shared.queue_oracle().claimed(
                        p,
                        claim.data(),
                        claim.item(),
                        claim.session_id(),
                        started,
                        alive(shared),
                    );
                    shared.log(format!(
                        "p{p} claim -> {} ({}) s{:x}",
                        claim.item(),
                        String::from_utf8_lossy(claim.data()),
                        claim.session_id()
                    ));
                    shared.check_step(p);
                    tokio::time::sleep(work).await;
                    if let Some(k) = k {
                        shared.queue_oracle().finishing(p, k, complete);
                    }
                    let result = if complete {
                        claim.complete().await
                    } else {
                        claim.release().await
                    };
                    shared.log(format!(
                        "p{p} {} item-{} -> {:?}",
                        if complete { "complete" } else { "release" },
                        k.map_or("?".into(), |k| k.to_string()),
                        result.as_ref().map_err(|e| e.kind())
                    ));
                    if let Some(k) = k {
                        shared.queue_oracle().finished(p, k, complete, &result);
                    }
                }
                Ok(None) => {}
                Err(err) => shared.log(format!("p{p} claim -> {:?}", err.kind())),
            }
        }
        shared.check_step(p);
        tokio::time::sleep(pause(shared, 60)).await;
    }
}

/// After the quiet phase: a fresh consumer (process 98, on `drain`) claims and completes every
/// item left, waiting for the locks of ended sessions to go; then every put reported done must
/// have been completed.
pub async fn finish(shared: &Shared, drain: Zk) {
    let queue = WorkQueue::open(drain, QUEUE, queue_options(98)).expect("valid queue options");
    let limit = shared.ids.last_id as usize * 20;
    for _ in 0..limit {
        let started = tokio::time::Instant::now();
        match queue.claim(Some(Duration::from_secs(10))).await {
            Ok(Some(claim)) => {
                let k = shared.queue_oracle().claimed(
                    98,
                    claim.data(),
                    claim.item(),
                    claim.session_id(),
                    started,
                    alive(shared),
                );
                if let Some(k) = k {
                    shared.queue_oracle().finishing(98, k, true);
                }
                let result = claim.complete().await;
                if let Err(err) = &result {
                    shared
                        .queue_oracle()
                        .violations
                        .push(format!("drain: complete failed in the quiet phase: {err}"));
                }
                if let Some(k) = k {
                    let mut oracle = shared.queue_oracle();
                    oracle.drained += 1;
                    oracle.finished(98, k, true, &result);
                }
            }
            Ok(None) => break,
            Err(err) => {
                shared
                    .queue_oracle()
                    .violations
                    .push(format!("drain: claim failed in the quiet phase: {err}"));
                break;
            }
        }
    }
    shared.log(format!(
        "queue drained: {} items",
        shared.queue_oracle().drained
    ));
    shared.queue_oracle().check_end();
}

pub fn summary(shared: &Shared) -> String {
    let o = shared.queue_oracle();
    let (doubt, landed) = o.doubt();
    let done = o
        .puts
        .values()
        .filter(|f| matches!(f, crate::oracle::queue::PutFate::Done(_)))
        .count();
    format!(
        "{} puts ({done} done, {doubt} in doubt of which {landed} landed), {} claims, {} completed, {} released, {} drained",
        o.puts.len(),
        o.claims,
        o.completes.len(),
        o.releases,
        o.drained
    )
}
