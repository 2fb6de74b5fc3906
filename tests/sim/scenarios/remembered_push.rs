//! Review (format 4, 2026-11-30): a push checked against the pool as this process remembered it
//! was refused as `AlreadyFree` when the pool had moved to a new block generation that the
//! process had not heard of yet (src/alloc/blocks/push.rs): IDs claimed in the new generation
//! lie at or above the old one's final frontier. DESIGN promises that `AlreadyFree` is never
//! decided on a remembered state; a caller trusting it drops IDs that are not free. Now the
//! push reads the pool again and decides on what the store holds.

use zooid::zk::Zk;
use zooid::{CategorySpec, IdCategory, IdGeneratorService, IdRange, Layout, ServiceOptions};

use crate::session::Flaky;
use crate::support::run_scenario;
use crate::world::{Faults, SimSession, World};

/// A takes 10 IDs and remembers the pool in generation G; its watch of the pool never fires. B
/// takes past `ROTATE_AT` blocks (the pool moves to G + 1), then 10 more IDs, and hands them to
/// A, which pushes them. The push must apply: the IDs are free afterwards. On the code before:
/// `AlreadyFree` for IDs B held.
#[test]
fn a_push_is_not_refused_on_a_remembered_block_generation() {
    run_scenario(async {
        let world = World::new(47, Faults::all().none(), false);
        tokio::spawn(world.clone().drive());
        let admin: Zk = SimSession::open(&world, 0, 0);
        let category = IdCategory::new("/ids/remembered-push").unwrap();
        let b = IdGeneratorService::on_zookeeper(admin, ServiceOptions::default());
        b.create_category(
            &category,
            &CategorySpec::new(1, 1_000_000).layout(Layout::HoleNodes { unit: 10 }),
        )
        .await
        .expect("create");

        let mut a_zk = Flaky::over(SimSession::open(&world, 1, 1));
        a_zk.deaf_to = Some(category.name().to_string());
        let a = IdGeneratorService::on_zookeeper(a_zk.into_zk(), ServiceOptions::default());
        let first = a.take_ids(&category, 10).await.expect("A take");
        assert_eq!(first.ranges(), vec![IdRange::new(1, 10).unwrap()], "guard");
        let before = b.pool_info(&category).await.expect("info").blocks;

        let blocks = u64::try_from(zooid::alloc::blocks::ROTATE_AT).unwrap() + 10;
        let mut took = 0;
        while took < blocks * 10 {
            let got = b.take_ids(&category, 10_000).await.expect("B take");
            took += got.ranges().iter().map(|r| r.len()).sum::<u64>();
        }
        let mut handed = b
            .take_ids(&category, 10)
            .await
            .expect("B take to hand over");
        let after = b.pool_info(&category).await.expect("info").blocks;
        assert_ne!(
            format!("{before:?}"),
            format!("{after:?}"),
            "guard: the pool moved to a new block generation"
        );
        let range = handed.ranges()[0];

        let pushed = a.push_ids(&mut handed).await;
        assert!(
            pushed.is_ok(),
            "A's push of {range:?}, which B held: {pushed:?}"
        );
        let free = b.pool_info(&category).await.expect("info").free;
        assert!(
            free.iter().any(|f| f.covers(&range)),
            "the pushed IDs {range:?} are free again: {free:?}"
        );
    });
}
