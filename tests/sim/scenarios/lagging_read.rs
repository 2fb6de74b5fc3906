//! Soak seed 1795957083388 (2026-11-29): after a rollback and the operator's restore, a process
//! on a new session read the single-node pool from a follower still at the snapshot (the old
//! incarnation, at the data version the restored pool had reached), and its compare-and-set at
//! that version applied to the restored pool: IDs handed out twice. The rule that closes it is in
//! the one interface: the first read of each connection is caught up with a `sync`
//! (src/zk/catch_up.rs).

use std::sync::Arc;

use zooid::range::IdRange;
use zooid::zk::{Zk, ZooKeeperExt};
use zooid::{CategorySpec, IdCategory, IdGeneratorService, ServiceOptions};

use crate::session::Flaky;
use crate::support::{reopen, run_scenario, wipe};
use crate::world::{Faults, SimSession, World};

/// The pool is at version 2 (IDs 1..=20 taken); a copy of it is kept as a lagging server would
/// answer it. ZooKeeper is wiped; the operator restores the category (ceiling 20, epoch 1) and
/// raises it, and Q takes 21..=30, leaving the restored pool at version 2 too. P, a fresh
/// process whose server answers from the copy until a `sync`, takes 10.
#[test]
fn a_new_session_does_not_plan_on_a_server_behind_a_restore() {
    run_scenario(async {
        let world = World::new(31, Faults::all().none(), false);
        tokio::spawn(world.clone().drive());
        let admin: Zk = SimSession::open(&world, 0, 0);
        let category = IdCategory::new("/ids/lagging").unwrap();
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
            creator.take_ids(&category, 10).await.expect("take");
        }
        let old = admin
            .served_get(admin.generation(), &path)
            .await
            .expect("read the old pool");

        // The wipe, and the operator's restore in the maintenance window.
        let op_zk = wipe(&world);
        let op = IdGeneratorService::on_zookeeper(op_zk.clone(), ServiceOptions::default());
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
        let (restored, stat) = op_zk
            .get(op_zk.generation(), &path)
            .await
            .expect("read the restored pool");
        // Guards: the copy is of another incarnation at the restored pool's data version.
        assert_eq!(old.1.version, stat.version, "guard: the same data version");
        assert_ne!(old.0, restored, "guard: other contents");

        let mut p_zk = Flaky::over(SimSession::open(&world, 4, 4));
        p_zk.behind = Some((path.clone(), std::sync::Mutex::new(Some(old))));
        let p_zk = Arc::new(p_zk);
        let p = IdGeneratorService::on_zookeeper(p_zk.clone(), ServiceOptions::default());
        let p_result = p.take_ids(&category, 10).await;
        println!("P: {:?}", p_result.as_ref().map(|s| s.ranges().to_vec()));
        let after = op.pool_info(&category).await.expect("info");
        println!("pool after P: {after:?}");
        if let Ok(p_set) = &p_result {
            for a in q_set.ranges() {
                for b in p_set.ranges() {
                    assert!(
                        a.end() < b.start() || b.end() < a.start(),
                        "handed out twice: {a} (Q, restored pool) and {b} (P, planned on the old pool)"
                    );
                }
            }
        }
        assert!(
            after.epoch >= 1,
            "a take planned on the old pool wrote it over the restored one: {after:?}"
        );
        p_result.expect("P's take");
    });
}
