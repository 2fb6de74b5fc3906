//! Review (queue, put deadline): puts through one handle take turns on the handle's put guard,
//! and a put waited for its turn without bound, its `op_timeout` counted only once it had the
//! guard. With ZooKeeper unreachable, each put ran out its whole `op_timeout` in turn, so the
//! k-th of k concurrent puts returned after about k × `op_timeout`.

use std::time::Duration;

use tokio::time::Instant;
use zooid::zk::Zk;
use zooid::{WorkQueue, ZooidError};

use crate::support::{queue_options, run_scenario};
use crate::world::{Faults, SimSession, World};

/// P puts once (its guard made), then loses its connection for a minute. Three puts started
/// together through P's one handle must each return within twice `op_timeout` (1 s: its turn,
/// then its requests) and a little: `Timeout` or `OutcomeUnknown`, never later. Before, the
/// puts returned after 1, 2 and 3 s, the k-th after k × `op_timeout`: `put 2 returned after
/// 3.0…s`.
#[test]
fn concurrent_puts_on_one_handle_each_return_within_op_timeout() {
    run_scenario(async {
        let world = World::new(47, Faults::all().none(), false);
        tokio::spawn(world.clone().drive());
        let zk: Zk = SimSession::open(&world, 1, 1);
        let op_timeout = Duration::from_secs(1);
        let options = zooid::QueueOptions {
            op_timeout,
            ..queue_options("P")
        };
        let p = WorkQueue::open(zk.clone(), "/jobs", options).expect("open");
        p.put(b"first").await.expect("put while connected");

        // Down well past the session timeout (4 s): nothing reaches the servers.
        world
            .lock()
            .drop_connection(1, Some(Duration::from_secs(60)), "scenario");
        world.poke();

        let start = Instant::now();
        let puts: Vec<_> = (0..3)
            .map(|i| {
                let p = p.clone();
                tokio::spawn(async move {
                    let out = p.put(format!("job {i}").as_bytes()).await;
                    (out, start.elapsed())
                })
            })
            .collect();
        let slack = Duration::from_millis(250);
        for (i, put) in puts.into_iter().enumerate() {
            let (out, took) = put.await.expect("put task");
            println!("put {i}: {out:?} after {took:?}");
            assert!(
                matches!(
                    out,
                    Err(ZooidError::Timeout { .. } | ZooidError::OutcomeUnknown { .. })
                ),
                "put {i} while ZooKeeper is unreachable: {out:?}"
            );
            assert!(
                took <= 2 * op_timeout + slack,
                "put {i} returned after {took:?}, beyond twice op_timeout {op_timeout:?} + {slack:?}"
            );
        }
    });
}

/// Bursts of puts through one handle on a healthy ensemble, more than one `op_timeout` of them
/// in all, with `op_timeout` from 200 to 219 ms so that the last put to get its turn does so at
/// every point of a put's requests: a put that gets its turn late still has `op_timeout` for
/// its requests, so none ends in doubt and every put either lands or is refused with nothing
/// sent. When the turn's wait and the requests shared one deadline, a late put sent with too
/// little time left to learn its fate.
#[test]
fn a_burst_of_puts_on_one_handle_ends_none_in_doubt() {
    run_scenario(async {
        let world = World::new(53, Faults::all().none(), false);
        tokio::spawn(world.clone().drive());
        let zk: Zk = SimSession::open(&world, 1, 1);
        for extra in 0..20 {
            let op_timeout = Duration::from_millis(200 + extra);
            let options = zooid::QueueOptions {
                op_timeout,
                ..queue_options("P")
            };
            let path = format!("/jobs-{extra}");
            let p = WorkQueue::open(zk.clone(), &path, options).expect("open");
            p.put(b"first").await.expect("put while connected");
            let start = Instant::now();
            let puts: Vec<_> = (0..100)
                .map(|i| {
                    let p = p.clone();
                    tokio::spawn(async move { p.put(format!("job {i}").as_bytes()).await })
                })
                .collect();
            let (mut landed, mut refused) = (0, 0);
            for (i, put) in puts.into_iter().enumerate() {
                match put.await.expect("put task") {
                    Ok(_) => landed += 1,
                    Err(ZooidError::Timeout { .. }) => refused += 1,
                    other => panic!(
                        "put {i} of a burst on a healthy ensemble, op_timeout {op_timeout:?}: {other:?}"
                    ),
                }
            }
            let took = start.elapsed();
            println!("op_timeout {op_timeout:?}: {landed} landed, {refused} refused (nothing sent) in {took:?}");
            assert!(
                took >= op_timeout && refused > 0,
                "guard: the burst outlasted one op_timeout ({took:?})"
            );
            assert!(landed > 0, "guard: puts landed");
        }
    });
}
