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
/// together through P's one handle must each return within `op_timeout` (1 s) and a little:
/// `Timeout` or `OutcomeUnknown`, never later. On the code before this commit the puts return
/// after 1, 2 and 3 s: `put 1 returned after 2.0…s, beyond op_timeout 1s + 250ms`.
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
                took <= op_timeout + slack,
                "put {i} returned after {took:?}, beyond op_timeout {op_timeout:?} + {slack:?}"
            );
        }
    });
}
