//! A migration paused after it read the single-node pool (review finding, 2026-11-29): when it
//! resumed, it created `zooid-blocks-0` whatever had happened meanwhile. Another migration had
//! switched the pool, takes had moved it past generation 0, and generation 0 was retired: the
//! recreated, empty sequence parent then resolved a claim of generation 0 whose reply was lost
//! as not applied (no child, none deleted), and the blocks it claimed were neither handed out,
//! free, nor reported leaked.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use zooid::format::sequence_parent;
use zooid::zk::Zk;
use zooid::{CategorySpec, IdCategory, IdGeneratorService, Layout, ServiceOptions, ZooidError};

use crate::session::{Flaky, Gate};
use crate::support::{drain, exists, run_scenario};
use crate::world::{Faults, SimSession, World};

/// Enough IDs (in blocks of 1) for the takes to move the pool to generation 2: a generation
/// numbers `ROTATE_AT` (20,000) blocks.
const LAST: i64 = 45_000;

#[test]
fn a_paused_migration_does_not_bring_back_a_retired_generation() {
    run_scenario(async {
        let world = World::new(13, Faults::all().none(), false);
        tokio::spawn(world.clone().drive());
        let admin: Zk = SimSession::open(&world, 0, 0);
        let category = IdCategory::new("/ids/migrated").unwrap();
        let path = category.name().to_string();
        let (gen0, gen2) = (sequence_parent(&path, 0), sequence_parent(&path, 2));
        let creator = IdGeneratorService::on_zookeeper(admin.clone(), ServiceOptions::default());
        creator
            .create_category(&category, &CategorySpec::new(1, LAST).single_node())
            .await
            .expect("create");

        // M2: a `zooid migrate` that read the single node, paused before it went on.
        let m2_gate = Gate::armed();
        let mut m2_zk = Flaky::over(SimSession::open(&world, 1, 1));
        m2_zk.pause_acl = Some((path.clone(), m2_gate.clone()));
        let m2 = IdGeneratorService::on_zookeeper(Arc::new(m2_zk), ServiceOptions::default());
        let m2_task = tokio::spawn({
            let category = category.clone();
            async move {
                m2.migrate_category(&category, Layout::HoleNodes { unit: 1 })
                    .await
            }
        });
        m2_gate.entered.notified().await;

        // M1 migrates the pool.
        let migrated = creator
            .migrate_category(&category, Layout::HoleNodes { unit: 1 })
            .await
            .expect("migrate");
        println!("M1: {migrated:?}");

        // P claims 5 blocks of generation 0: the claim applies, its reply is held, then lost.
        let p_gate = Gate::armed();
        let mut p_zk = Flaky::over(SimSession::open(&world, 2, 2));
        p_zk.hold_claim = Some((gen0.clone(), p_gate.clone()));
        let p = Arc::new(IdGeneratorService::on_zookeeper(
            Arc::new(p_zk),
            ServiceOptions::default(),
        ));
        let p_task = tokio::spawn({
            let (p, category) = (p.clone(), category.clone());
            async move { p.take_ids(&category, 5).await }
        });
        p_gate.entered.notified().await;
        let started = Instant::now();

        // Q takes until the pool moved to generation 2 and generation 0 is retired.
        let q = IdGeneratorService::on_zookeeper(
            SimSession::open(&world, 3, 3),
            ServiceOptions::default(),
        );
        let mut handed = 0u64;
        while !exists(&admin, &gen2).await {
            let set = q.take_ids(&category, 1000).await.expect("Q take");
            handed += set.ranges().iter().map(|r| r.len()).sum::<u64>();
            assert!(handed < LAST as u64, "guard: generation 2 reached");
        }
        while exists(&admin, &gen0).await {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        println!(
            "Q took {handed}; generation 0 retired after {:?}",
            started.elapsed()
        );

        // M2 resumes: the pool is in format 4 already.
        m2_gate.release.notify_one();
        let m2_result = m2_task.await.unwrap();
        println!("M2: {m2_result:?}");
        assert!(
            !exists(&admin, &gen0).await,
            "the paused migration brought back generation 0's sequence parent"
        );

        // P's lost reply is resolved now.
        p_gate.release.notify_one();
        let p_result = p_task.await.unwrap();
        println!("P: {:?}", p_result.as_ref().map(|s| s.ranges().to_vec()));
        let mut reported = 0u64;
        match &p_result {
            Ok(set) => handed += set.ranges().iter().map(|r| r.len()).sum::<u64>(),
            Err(ZooidError::OutcomeUnknown {
                ids, leaked_within, ..
            }) => {
                reported += ids.iter().map(|r| r.len()).sum::<u64>()
                    + leaked_within.as_ref().map_or(0, |b| b.at_most)
            }
            Err(err) => panic!("P: {err}"),
        }

        let drained = drain(&creator, &category, 1000).await;
        let leaked = p.stats().ids_leaked + q.stats().ids_leaked + creator.stats().ids_leaked;
        println!("handed {handed}, drained {drained}, leaked {leaked}, reported {reported}");
        assert!(
            handed + drained + leaked + reported >= LAST as u64,
            "IDs neither handed out, free, nor reported leaked: {}",
            LAST as u64 - handed - drained - leaked - reported
        );
    });
}
