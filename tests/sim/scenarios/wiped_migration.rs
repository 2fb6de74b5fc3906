//! A migration paused across a wipe and a restore (review, 2026-11-29): planned on the wiped
//! pool, its switch must not apply to the restored one, which may sit at the same version.

use std::sync::Arc;
use std::time::Duration;

use zooid::range::IdRange;
use zooid::zk::{Zk, ZooKeeperExt};
use zooid::{CategorySpec, IdCategory, IdGeneratorService, Layout, ServiceOptions};

use crate::session::{Flaky, Gate};
use crate::support::{reopen, run_scenario, wipe};
use crate::world::{Faults, SimSession, World};

/// A migration reads the single node at version 2 and lists the holes, then its process pauses.
/// ZooKeeper is wiped; the operator restores the category from its durable record (ceiling 20,
/// a new epoch) and raises the ceiling; a take gets 21..=30, leaving the restored pool at
/// version 2 too. The migration resumes on its new session: its switch (a `setData` at version
/// 2, planned on the old pool) applies to the restored one, and its fresh blocks start at 21.
#[test]
fn a_migration_paused_across_a_wipe_and_restore_does_not_switch_the_restored_pool() {
    run_scenario(async {
        let world = World::new(23, Faults::all().none(), false);
        tokio::spawn(world.clone().drive());
        let admin: Zk = SimSession::open(&world, 0, 0);
        let category = IdCategory::new("/ids/wiped").unwrap();
        let path = category.name().to_string();
        let creator = IdGeneratorService::on_zookeeper(admin.clone(), ServiceOptions::default());
        creator
            .create_category(
                &category,
                &CategorySpec::new(1, 1000).single_node().ceiling(20),
            )
            .await
            .expect("create");
        let mut before = Vec::new();
        for _ in 0..2 {
            let set = creator.take_ids(&category, 10).await.expect("take");
            before.extend(set.ranges().to_vec());
        }
        println!("before the wipe: {before:?}");

        // M: read the single node at version 2, listed the holes, paused.
        let gate = Gate::armed();
        let mut m_zk = Flaky::over(SimSession::open(&world, 1, 1));
        m_zk.pause_listing = Some((zooid::format::holes_parent(&path), gate.clone()));
        let m_zk: Zk = Arc::new(m_zk);
        let m = IdGeneratorService::on_zookeeper(m_zk.clone(), ServiceOptions::default());
        let m_task = tokio::spawn({
            let category = category.clone();
            async move {
                m.migrate_category(&category, Layout::HoleNodes { unit: 10 })
                    .await
            }
        });
        gate.entered.notified().await;
        let m_generation = m_zk.generation();

        // The wipe, and the operator's restore in the maintenance window.
        let op_zk = wipe(&world);
        let op = IdGeneratorService::on_zookeeper(op_zk, ServiceOptions::default());
        let bounds = IdRange::new(1, 1000).unwrap();
        let restored = op.restore_category(&category, bounds, 20, 1).await;
        println!("restore: {restored:?}");
        restored.expect("restore");
        op.raise_ceiling(&category, 100).await.expect("raise");
        reopen(&world);

        // Q takes from the restored pool.
        let q = IdGeneratorService::on_zookeeper(
            SimSession::open(&world, 3, 3),
            ServiceOptions::default(),
        );
        let q_set = q.take_ids(&category, 10).await.expect("Q take");
        println!("Q (restored pool): {:?}", q_set.ranges());
        let version = op.pool_info(&category).await.expect("info").version;
        println!("restored pool at version {version}");

        // M's client has moved to a new session meanwhile; M resumes.
        tokio::time::sleep(Duration::from_secs(30)).await;
        println!(
            "M's session generation {m_generation} -> {}",
            m_zk.generation()
        );
        gate.release.notify_one();
        let m_result = m_task.await.unwrap();
        println!("M: {m_result:?}");
        let info = op.pool_info(&category).await;
        println!("pool after M: {info:?}");

        // R (a fresh process) raises the ceiling again and takes from the pool as it is now.
        let r = IdGeneratorService::on_zookeeper(
            SimSession::open(&world, 4, 4),
            ServiceOptions::default(),
        );
        println!("R raise: {:?}", r.raise_ceiling(&category, 100).await);
        let r_set = r.take_ids(&category, 10).await;
        println!("R: {:?}", r_set.as_ref().map(|s| s.ranges().to_vec()));
        if let Ok(r_set) = r_set {
            for a in q_set.ranges() {
                for b in r_set.ranges() {
                    assert!(
                        a.end() < b.start() || b.end() < a.start(),
                        "handed out twice: {a} (Q, restored pool) and {b} (R, after M's switch)"
                    );
                }
            }
        }
        // M may migrate the restored pool, planned on it: its epoch and ceiling kept.
        let info = info.expect("info");
        assert!(
            info.epoch >= 1 && info.ceiling.is_some_and(|c| c >= 100),
            "the migration planned on the wiped pool switched the restored one ({m_result:?}): epoch {}, ceiling {:?}",
            info.epoch,
            info.ceiling
        );
    });
}
