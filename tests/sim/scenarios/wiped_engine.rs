//! Review (incarnation class): the compare-and-set engine re-reads the pool inside an attempt
//! (`Core::attempts` -> `read_state` after a conflict) and sends the write planned on that read
//! with no check that the read's session generation and connection are still current:
//! `forget_stale` runs only at the top of an attempt, `read_state` records the generation but
//! nothing compares it before `send`, and `ZkStore::set` names the generation current *at the
//! send* (`self.gen()`). A process paused between the read's answer and the write (a GC or VM
//! pause, here the `pause_get` gate) plans on the wiped pool and writes on the new session.

use std::sync::Arc;
use std::time::Duration;

use zooid::range::IdRange;
use zooid::retry::RetryPolicy;
use zooid::zk::{Zk, ZooKeeperExt};
use zooid::{CategorySpec, IdCategory, IdGeneratorService, ServiceOptions};

use crate::session::{Flaky, Gate};
use crate::support::{reopen, run_scenario, wipe};
use crate::world::{Faults, SimSession, World};

/// M takes 1..=10 (pool at version 1, remembered). C takes 11..=20 (version 2). M's next take
/// plans on version 1, conflicts, and reads again inside the attempt: version 2 (free from 21);
/// M pauses after that read's answer. C takes 21..=30 (version 3, the old pool's last state:
/// the durable record's ceiling 100 covers it). ZooKeeper is wiped; the operator restores the
/// category from the record (ceiling 100, epoch 1, version 0), raises it (version 1), and Q
/// takes 101..=110 (version 2). M's session is given up and replaced. M resumes: its set at
/// version 2, planned on the wiped pool, goes on the new session and applies to the restored
/// pool: M gets 21..=30, which C got before the wipe.
#[test]
fn a_take_paused_after_its_read_across_a_wipe_does_not_write_the_restored_pool() {
    run_scenario(async {
        let world = World::new(31, Faults::all().none(), false);
        tokio::spawn(world.clone().drive());
        let admin: Zk = SimSession::open(&world, 0, 0);
        let category = IdCategory::new("/ids/engine").unwrap();
        let path = category.name().to_string();
        let c = IdGeneratorService::on_zookeeper(admin.clone(), ServiceOptions::default());
        c.create_category(
            &category,
            &CategorySpec::new(1, 1000).single_node().ceiling(100),
        )
        .await
        .expect("create");

        // M: its second `get` of the pool (the re-read after a conflict) is paused after its
        // answer.
        let gate = Gate::after(1);
        let mut m_zk = Flaky::over(SimSession::open(&world, 1, 1));
        m_zk.pause_get = Some((path.clone(), gate.clone()));
        let m_zk: Zk = Arc::new(m_zk);
        let options = ServiceOptions {
            retry: RetryPolicy {
                deadline: Duration::from_secs(600),
                ..RetryPolicy::default()
            },
            ..ServiceOptions::default()
        };
        let m = Arc::new(IdGeneratorService::on_zookeeper(m_zk.clone(), options));
        let first = m.take_ids(&category, 10).await.expect("M's first take");
        assert_eq!(first.ranges(), &[IdRange::new(1, 10).unwrap()]);
        let c1 = c.take_ids(&category, 10).await.expect("C take");
        assert_eq!(c1.ranges(), &[IdRange::new(11, 20).unwrap()]);

        let m_task = tokio::spawn({
            let (m, category) = (m.clone(), category.clone());
            async move { m.take_ids(&category, 10).await }
        });
        gate.entered.notified().await;
        let m_generation = m_zk.generation();
        let m_connection = m_zk.status().connection;
        println!(
            "M paused after its re-read (generation {m_generation}, connection {m_connection})"
        );

        // C takes what M planned to take, on the old pool.
        let c2 = c
            .take_ids(&category, 10)
            .await
            .expect("C take before the wipe");
        println!("C before the wipe: {:?}", c2.ranges());
        assert_eq!(c2.ranges(), &[IdRange::new(21, 30).unwrap()], "guard");

        // The wipe, and the operator's restore from the record (ceiling 100) in the window.
        let op_zk = wipe(&world);
        let op = IdGeneratorService::on_zookeeper(op_zk, ServiceOptions::default());
        let bounds = IdRange::new(1, 1000).unwrap();
        op.restore_category(&category, bounds, 100, 1)
            .await
            .expect("restore");
        op.raise_ceiling(&category, 200).await.expect("raise");
        reopen(&world);
        let q = IdGeneratorService::on_zookeeper(
            SimSession::open(&world, 3, 3),
            ServiceOptions::default(),
        );
        let q_set = q.take_ids(&category, 10).await.expect("Q take");
        println!("Q (restored pool): {:?}", q_set.ranges());
        let restored = op.pool_info(&category).await.expect("info");
        println!("restored pool: {restored:?}");

        for _ in 0..600 {
            if m_zk.generation() != m_generation {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_ne!(
            m_zk.generation(),
            m_generation,
            "guard: M's session was replaced after the wipe"
        );
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
            for a in c2.ranges() {
                for b in m_set.ranges() {
                    assert!(
                        a.end() < b.start() || b.end() < a.start(),
                        "handed out twice: {a} (C, before the wipe) and {b} (M, planned on the \
                         wiped pool, written on the restored one)"
                    );
                }
            }
        }
        let after = after.expect("info");
        assert!(
            after.epoch >= 1,
            "the take planned on the wiped pool overwrote the restored one: {after:?}"
        );
    });
}
