//! A migration whose switch applied and whose reply was lost resolves it by its token
//! (`Moved`); it created no sequence parent (review, 2026-11-29), and the takes after it
//! failed with `NotFound`. Now it creates it; and a pool without its current generation's
//! sequence parent (a move that stopped before creating it) is answered as any pool:
//! `Exhausted` when no ID is left, the holes when some are.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use zooid::format::sequence_parent;
use zooid::range::IdRange;
use zooid::zk::{Zk, ZooKeeperExt};
use zooid::{CategorySpec, IdCategory, IdGeneratorService, Layout, ServiceOptions, ZooidError};

use crate::session::Flaky;
use crate::support::{exists, options, run_scenario};
use crate::world::{Faults, SimSession, World};

fn count(set: &zooid::IdSet) -> u64 {
    set.ranges().iter().map(|r| r.len()).sum()
}

/// A single-node category of IDs 1..=`last`, 1..=100 handed out but `pushed` (given back), migrated
/// to blocks of 10 by a process whose switch applied and its reply was lost: the migration
/// resolves it by its token (`Moved`) and creates generation 0's sequence parent, which is then
/// deleted (the state a move that stopped before creating it leaves). Returns the world, the
/// category and the admin session.
async fn migrated_with_lost_switch(
    seed: u64,
    pushed: Option<(i64, i64)>,
    last: i64,
) -> (World, IdCategory, Zk) {
    let world = World::new(seed, Faults::all().none(), false);
    tokio::spawn(world.clone().drive());
    let admin: Zk = SimSession::open(&world, 0, 0);
    let category = IdCategory::new("/ids/lost-switch").unwrap();
    let path = category.name().to_string();
    let creator = IdGeneratorService::on_zookeeper(admin.clone(), ServiceOptions::default());
    creator
        .create_category(&category, &CategorySpec::new(1, last).single_node())
        .await
        .expect("create");
    match pushed {
        None => {
            let all = creator.take_ids(&category, 100).await.expect("take all");
            assert_eq!(count(&all), 100);
        }
        Some((from, to)) => {
            let below = creator
                .take_ids(&category, (from - 1) as u64)
                .await
                .unwrap();
            let mut back = creator
                .take_ids(&category, (to - from + 1) as u64)
                .await
                .unwrap();
            let above = creator
                .take_ids(&category, (100 - to) as u64)
                .await
                .unwrap();
            assert_eq!(count(&below) + count(&back) + count(&above), 100);
            creator.push_ids(&mut back).await.expect("push back");
        }
    }
    let lose = Arc::new(AtomicBool::new(true));
    let mut m_zk = Flaky::over(SimSession::open(&world, 1, 1));
    m_zk.lose_set = Some((path.clone(), lose.clone()));
    let m = IdGeneratorService::on_zookeeper(Arc::new(m_zk), ServiceOptions::default());
    let migrated = m
        .migrate_category(&category, Layout::HoleNodes { unit: 10 })
        .await;
    println!("migrate (switch reply lost): {migrated:?}");
    assert!(
        !lose.load(Ordering::SeqCst),
        "guard: the switch's reply was lost"
    );
    assert!(
        matches!(migrated, Ok(zooid::Migrated::Moved { .. })),
        "the lost switch is resolved as this migration's: {migrated:?}"
    );
    let parent = sequence_parent(&path, 0);
    assert!(
        exists(&admin, &parent).await,
        "the migration whose switch's reply was lost created generation 0's sequence parent"
    );
    // As a migration or a generation move that stopped before creating it leaves the pool.
    admin
        .delete(admin.generation(), &parent, None)
        .await
        .expect("delete the sequence parent");
    (world, category, admin)
}

/// Every ID handed out before the migration: the first take after it must say `Exhausted`.
#[test]
fn an_exhausted_pool_migrated_without_its_sequence_parent_says_exhausted() {
    run_scenario(async {
        let (world, category, _admin) = migrated_with_lost_switch(21, None, 100).await;
        let p = IdGeneratorService::on_zookeeper(
            SimSession::open(&world, 2, 2),
            ServiceOptions::default(),
        );
        let taken = p.take_ids(&category, 10).await;
        println!("take after the migration: {taken:?}");
        assert!(
            matches!(taken, Err(ZooidError::Exhausted { .. })),
            "a take of an exhausted, migrated pool: {taken:?}"
        );
    });
}

/// A push of IDs no block claimed yet (at or above the base) into a pool whose sequence parent
/// is missing is refused as `AlreadyFree` (they are free), not `NotFound`, and nothing is left
/// behind; IDs below the base go back as holes.
#[test]
fn a_push_above_the_base_without_the_sequence_parent_says_already_free() {
    run_scenario(async {
        let (world, category, admin) = migrated_with_lost_switch(23, None, 200).await;
        let creator_zk = admin.clone();
        let creator = IdGeneratorService::on_zookeeper(admin, ServiceOptions::default());
        let before = creator.pool_info(&category).await.expect("info");
        let base = before.blocks.as_ref().expect("block allocation").base;
        let last = before.bounds.end();
        println!(
            "after the migration: base {base}, bounds {:?}",
            before.bounds
        );
        assert!(base <= last, "guard: IDs at or above the base exist");
        let p = IdGeneratorService::on_zookeeper(
            SimSession::open(&world, 2, 2),
            ServiceOptions::default(),
        );
        let fresh = IdRange::new(base, (base + 9).min(last)).unwrap();
        let mut set = zooid::IdSet::new(category.clone(), vec![fresh]);
        let pushed = p.push_ids(&mut set).await;
        println!("push of {fresh}: {pushed:?}");
        assert!(
            matches!(pushed, Err(ZooidError::AlreadyFree { .. })),
            "a push of IDs no block claimed: {pushed:?}"
        );
        let mut held = zooid::IdSet::new(category.clone(), vec![IdRange::new(41, 50).unwrap()]);
        p.push_ids(&mut held)
            .await
            .expect("IDs below the base go back");
        let after = p.pool_info(&category).await.expect("info");
        println!("free after the pushes: {:?}", after.free);
        assert!(
            after.free.contains(&IdRange::new(41, 50).unwrap()),
            "41..=50 are free again: {:?}",
            after.free
        );
        let (holes, _) = creator_zk
            .children(
                creator_zk.generation(),
                &zooid::format::holes_parent(category.name()),
            )
            .await
            .expect("list the holes");
        println!("holes: {holes:?}");
        assert!(
            !holes.iter().any(|h| h.contains(&format!("{base:019}"))),
            "the refused push left a hole: {holes:?}"
        );
    });
}

/// IDs 41..=50 free (a hole), no fresh block left: a take of whole blocks that leaves the holes
/// to others first (as after lost races) must still get them.
#[test]
fn a_take_of_whole_blocks_after_a_migration_without_its_sequence_parent_gets_the_holes() {
    run_scenario(async {
        let (world, category, _admin) = migrated_with_lost_switch(22, Some((41, 50)), 100).await;
        let p = IdGeneratorService::on_zookeeper(SimSession::open(&world, 2, 2), options(1));
        let taken = p.take_ids(&category, 10).await;
        println!("take after the migration: {taken:?}");
        let got = taken.expect("10 IDs are free (41..=50)");
        assert_eq!(got.ranges(), &[IdRange::new(41, 50).unwrap()]);
    });
}
