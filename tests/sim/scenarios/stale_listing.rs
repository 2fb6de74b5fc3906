//! A migration round whose listing of the holes is older than its read of the pool (review
//! finding, 2026-11-30): the round read the pool and listed its holes at once, and on a fresh
//! connection the listing could be served first. Between the two, another migration made holes
//! for the free ranges at an older version and a take on the single node handed those IDs out;
//! the round, planning on the newer pool and the older listing, neither saw nor deleted those
//! holes, switched the pool, and a take in format 4 handed the same IDs out again.

use std::sync::Arc;

use zooid::format::holes_parent;
use zooid::range::IdRange;
use zooid::zk::{Zk, ZooKeeperExt};
use zooid::{CategorySpec, IdCategory, IdGeneratorService, IdSet, Layout, ServiceOptions};

use crate::session::{Flaky, Gate};
use crate::support::run_scenario;
use crate::world::{Faults, SimSession, World};

const HOLES: Layout = Layout::HoleNodes { unit: 10 };

#[test]
fn a_round_lists_the_holes_after_it_read_the_pool() {
    run_scenario(async {
        let world = World::new(17, Faults::all().none(), false);
        tokio::spawn(world.clone().drive());
        let admin: Zk = SimSession::open(&world, 0, 0);
        let category = IdCategory::new("/ids/stale-listing").unwrap();
        let path = category.name().to_string();
        let creator = IdGeneratorService::on_zookeeper(admin.clone(), ServiceOptions::default());
        creator
            .create_category(&category, &CategorySpec::new(1, 1_000_000).single_node())
            .await
            .expect("create");
        // 2,500 free ranges of 10 below the top one: a migration writes its holes in 3 multis.
        creator.take_ids(&category, 50_000).await.expect("take");
        let pushed: Vec<IdRange> = (0..2500)
            .map(|i| IdRange::new(i * 20 + 1, i * 20 + 10).unwrap())
            .collect();
        creator
            .push_ids(&mut IdSet::new(category.clone(), pushed))
            .await
            .expect("push");

        // A: a migration whose round's read of the pool is slow (its `sync` held), its listing
        // not (the migration's first read, of the format, goes through).
        let a_gate = Gate::after(1);
        let mut a_zk = Flaky::over(SimSession::open(&world, 1, 1));
        a_zk.delay_get = Some((path.clone(), a_gate.clone()));
        let a = IdGeneratorService::on_zookeeper(Arc::new(a_zk), ServiceOptions::default());
        let a_task = tokio::spawn({
            let category = category.clone();
            async move { a.migrate_category(&category, HOLES).await }
        });
        a_gate.entered.notified().await;
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;

        // B: another migration; its first multi of holes applies, it pauses before its second.
        let b_gate = Gate::after(1);
        let mut b_zk = Flaky::over(SimSession::open(&world, 2, 2));
        b_zk.pause_write_under = Some((holes_parent(&path), b_gate.clone()));
        let b = IdGeneratorService::on_zookeeper(Arc::new(b_zk), ServiceOptions::default());
        let b_task = tokio::spawn({
            let category = category.clone();
            async move { b.migrate_category(&category, HOLES).await }
        });
        b_gate.entered.notified().await;
        let made = admin
            .children(admin.generation(), &holes_parent(&path))
            .await
            .expect("list holes")
            .0
            .len();
        assert_eq!(made, 1000, "guard: B's first multi made its 1,000 holes");

        // A take on the single node hands out the IDs of those 1,000 holes (lowest first).
        let taken = creator.take_ids(&category, 10_000).await.expect("take");
        let first = taken.ranges();
        assert_eq!(first.first().map(|r| r.start()), Some(1), "guard: lowest first");

        // A reads the pool now, migrates it; B's paused multi then fails on the version.
        a_gate.release.notify_one();
        a_task.await.unwrap().expect("A migrates");
        b_gate.release.notify_one();
        let _ = b_task.await.unwrap();

        // Every ID a format-4 take hands out now is one no one holds.
        let after = IdGeneratorService::on_zookeeper(
            SimSession::open(&world, 3, 3),
            ServiceOptions::default(),
        );
        let mut twice = Vec::new();
        let mut handed = 0u64;
        loop {
            match after.take_ids(&category, 10_000).await {
                Ok(set) => {
                    for range in set.ranges() {
                        handed += range.len();
                        if range.start() <= 50_000 {
                            twice.extend(first.iter().filter(|t| t.overlaps(&range)).copied());
                        }
                    }
                    if handed >= 100_000 {
                        break;
                    }
                }
                Err(err) => panic!("take after the migration: {err}"),
            }
        }
        let ids: u64 = twice.iter().map(|r| r.len()).sum();
        assert!(
            twice.is_empty(),
            "{ids} IDs handed out twice: {} of the single-node take's ranges (from {:?}) came \
             back from holes the migration left",
            twice.len(),
            twice.first()
        );
    });
}
