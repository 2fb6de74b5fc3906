//! Review (format 4 and the single node, 2026-11-30): a push was refused as `AlreadyFree` on a
//! read that a server behind the leader served. Another process took the IDs and handed them
//! over outside ZooKeeper (an RPC, a queue of its own); the pusher's server had not applied that
//! take yet, so the pool it read showed them free. DESIGN promises that `AlreadyFree` is decided
//! on what the store holds; a caller trusting it drops IDs that are not free. Now a refusal
//! decided on a read is decided again after a `sync`.

use std::sync::Arc;

use zooid::zk::{Zk, ZooKeeperExt};
use zooid::{CategorySpec, IdCategory, IdGeneratorService, Layout, ServiceOptions};

use crate::session::Flaky;
use crate::support::run_scenario;
use crate::world::{Faults, SimSession, World};

/// A's server stops applying writes to the pool node after A's first take (its copy of the node
/// is frozen there); B takes `count` IDs, after `before_handover` ran, and A pushes them. The
/// push must apply: the IDs are free afterwards.
async fn push_through_a_lagging_server(
    path: &str,
    layout: Layout,
    count: u64,
    before_handover: impl AsyncFnOnce(&IdGeneratorService, &IdCategory),
) {
    let world = World::new(47, Faults::all().none(), false);
    tokio::spawn(world.clone().drive());
    let admin: Zk = SimSession::open(&world, 0, 0);
    let category = IdCategory::new(path).unwrap();
    let b = IdGeneratorService::on_zookeeper(admin.clone(), ServiceOptions::default());
    b.create_category(&category, &CategorySpec::new(1, 1_000_000).layout(layout))
        .await
        .expect("create");

    let mut a_zk = Flaky::over(SimSession::open(&world, 1, 1));
    a_zk.behind = Some((path.to_string(), std::sync::Mutex::new(None)));
    let a_zk = Arc::new(a_zk);
    let a = IdGeneratorService::on_zookeeper(a_zk.clone(), ServiceOptions::default());
    a.take_ids(&category, 10).await.expect("A take");
    let frozen = admin
        .served_get(admin.generation(), path)
        .await
        .expect("read the pool");
    if let Some((_, copy)) = &a_zk.behind {
        *copy.lock().unwrap() = Some(frozen);
    }

    before_handover(&b, &category).await;
    let mut handed = b.take_ids(&category, count).await.expect("B take");
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
}

/// A single-node pool: A's server still shows B's IDs in the free list. On the code before:
/// `Err(AlreadyFree { range: 11..=20 })`.
#[test]
fn a_push_to_a_single_node_is_not_refused_on_a_lagging_read() {
    run_scenario(async {
        push_through_a_lagging_server(
            "/ids/lagging-single",
            Layout::SingleNode,
            10,
            async |_, _| {},
        )
        .await;
    });
}

/// Hole nodes: B takes past `ROTATE_AT` blocks (the pool moves to a new block generation), then
/// takes the IDs it hands over, in the new generation; A's server still shows the old one,
/// whose final frontier lies below them. On the code before: `Err(AlreadyFree { .. })`.
#[test]
fn a_push_of_blocks_is_not_refused_on_a_lagging_read() {
    run_scenario(async {
        push_through_a_lagging_server(
            "/ids/lagging-blocks",
            Layout::HoleNodes { unit: 10 },
            10,
            async |b, category| {
                let before = b.pool_info(category).await.expect("info").blocks;
                let blocks = u64::try_from(zooid::alloc::blocks::ROTATE_AT).unwrap() + 10;
                let mut took = 0;
                while took < blocks * 10 {
                    let got = b.take_ids(category, 10_000).await.expect("B take");
                    took += got.ranges().iter().map(|r| r.len()).sum::<u64>();
                }
                let after = b.pool_info(category).await.expect("info").blocks;
                assert_ne!(
                    format!("{before:?}"),
                    format!("{after:?}"),
                    "guard: the pool moved to a new block generation"
                );
            },
        )
        .await;
    });
}
