//! Audit (2026-11-29, the class of the wiped-migration finding): the engine keeps the pool state
//! it planned on across a `Sent::Unreachable` and a backoff (src/alloc/engine.rs, `send`:
//! `Err(StoreError::Unavailable) => slot.cached = Some(current)`), and the next attempt takes
//! it from the slot without `forget_stale`: a session or connection change in between is not
//! seen. A move of a single-node pool (`ZkStore::replace`: `sync`, `get_acl`, then
//! `multi[delete(P, V), create(P, next)]`, each on the generation current at the time) is the
//! write that can come back `Unavailable` from one of its reads.

use std::sync::Arc;
use std::time::Duration;

use zooid::range::IdRange;
use zooid::retry::RetryPolicy;
use zooid::zk::{Zk, ZooKeeperExt};
use zooid::{CategorySpec, IdCategory, IdGeneratorService, ServiceOptions};

use crate::session::{Flaky, Gate};
use crate::support::{reopen, run_scenario, wipe};
use crate::world::{Faults, SimSession, World};

/// M reads the single node at version 2 and plans a take that moves it to a fresh node (a
/// lowered move threshold); the move's `get_acl` is paused. ZooKeeper is wiped; the operator
/// restores the category (ceiling 20, epoch 1), raises the ceiling, and Q takes 21..=30, leaving
/// the restored pool at version 2. M resumes: its `get_acl` on the old session fails
/// (`Unavailable`), the engine keeps the old state, backs off, and sends the move planned on the
/// wiped pool on the new session: `delete(P, 2)` applies to the restored pool.
#[test]
fn a_move_paused_across_a_wipe_and_restore_does_not_replace_the_restored_pool() {
    run_scenario(async {
        let world = World::new(29, Faults::all().none(), false);
        tokio::spawn(world.clone().drive());
        let admin: Zk = SimSession::open(&world, 0, 0);
        let category = IdCategory::new("/ids/moved").unwrap();
        let path = category.name().to_string();
        let creator = IdGeneratorService::on_zookeeper(admin.clone(), ServiceOptions::default());
        creator
            .create_category(
                &category,
                &CategorySpec::new(1, 1000).single_node().ceiling(100),
            )
            .await
            .expect("create");
        for _ in 0..2 {
            let set = creator.take_ids(&category, 10).await.expect("take");
            println!("before the wipe: {:?}", set.ranges());
        }

        // M: moves the pool at its next write (threshold 2); paused at the move's `get_acl`.
        let gate = Gate::armed();
        let mut m_zk = Flaky::over(SimSession::open(&world, 1, 1));
        m_zk.pause_acl = Some((path.clone(), gate.clone()));
        let m_zk: Zk = Arc::new(m_zk);
        let options = ServiceOptions {
            move_at_version: 2,
            retry: RetryPolicy {
                deadline: Duration::from_secs(600),
                ..RetryPolicy::default()
            },
            ..ServiceOptions::default()
        };
        let m = IdGeneratorService::on_zookeeper(m_zk.clone(), options);
        let m_task = tokio::spawn({
            let category = category.clone();
            async move { m.take_ids(&category, 10).await }
        });
        gate.entered.notified().await;
        let m_generation = m_zk.generation();

        // The wipe, and the operator's restore in the maintenance window.
        let op_zk = wipe(&world);
        let op = IdGeneratorService::on_zookeeper(op_zk, ServiceOptions::default());
        let bounds = IdRange::new(1, 1000).unwrap();
        op.restore_category(&category, bounds, 20, 1)
            .await
            .expect("restore");
        op.raise_ceiling(&category, 100).await.expect("raise");
        reopen(&world);

        let q = IdGeneratorService::on_zookeeper(
            SimSession::open(&world, 3, 3),
            ServiceOptions::default(),
        );
        let q_set = q.take_ids(&category, 10).await.expect("Q take");
        println!("Q (restored pool): {:?}", q_set.ranges());
        let before = op.pool_info(&category).await.expect("info");
        println!("restored pool: {before:?}");

        // M's client moves to a new session; M resumes.
        for _ in 0..600 {
            if m_zk.generation() != m_generation {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        println!(
            "M's session generation {m_generation} -> {}",
            m_zk.generation()
        );
        gate.release.notify_one();
        let m_result = m_task.await.unwrap();
        println!("M: {:?}", m_result.as_ref().map(|s| s.ranges().to_vec()));
        let after = op.pool_info(&category).await;
        println!("pool after M: {after:?}");
        if let Ok(m_set) = &m_result {
            for a in q_set.ranges() {
                for b in m_set.ranges() {
                    assert!(
                        a.end() < b.start() || b.end() < a.start(),
                        "handed out twice: {a} (Q, restored pool) and {b} (M, planned on the wiped pool)"
                    );
                }
            }
        }
        let after = after.expect("info");
        assert!(
            after.epoch >= 1,
            "the move planned on the wiped pool replaced the restored one: {after:?}"
        );
    });
}
