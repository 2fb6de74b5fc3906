//! Review (allocator and counter, 2026-11-30): a create whose reply was lost, and whose retry
//! budget then ran out, failed `ConnectionLost` although the node it made was there: "a failed
//! call changed nothing" except `OutcomeUnknown`. A caller that retried its create then got
//! `CategoryExists` for its own. Now a create that may have applied, and could not be told, is
//! `OutcomeUnknown`.

use std::sync::Arc;

use zooid::zk::{Zk, ZooKeeperExt};
use zooid::{
    CategorySpec, Counter, IdCategory, IdGeneratorService, Layout, RetryPolicy, ServiceOptions,
    ZooidError,
};

use crate::session::{Flaky, Gate};
use crate::support::run_scenario;
use crate::world::{Faults, SimSession, World};

/// One attempt only: the lost reply is the last word.
fn one_attempt() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 1,
        ..RetryPolicy::default()
    }
}

/// A's create of `/ids/c` in `layout` applies and its reply is lost (held, then a connection
/// loss), with one attempt allowed. The node is there afterwards; the call must say it may be.
async fn lost_category_create(layout: Layout, faults: impl FnOnce(&mut Flaky, Arc<Gate>)) {
    let world = World::new(47, Faults::all().none(), false);
    tokio::spawn(world.clone().drive());
    let admin: Zk = SimSession::open(&world, 0, 0);
    let gate = Gate::armed();
    let mut a_zk = Flaky::over(SimSession::open(&world, 1, 1));
    faults(&mut a_zk, gate.clone());
    let options = ServiceOptions {
        retry: one_attempt(),
        ..ServiceOptions::default()
    };
    let a = IdGeneratorService::on_zookeeper(Arc::new(a_zk), options);
    let category = IdCategory::new("/ids/c").unwrap();
    let spec = CategorySpec::new(1, 100).layout(layout);
    let create = a.create_category(&category, &spec);
    tokio::pin!(create);
    tokio::select! {
        result = &mut create => panic!("guard: the create was held, yet it returned {result:?}"),
        _ = gate.entered.notified() => {}
    }
    gate.release.notify_one();
    let result = create.await;
    let admin = IdGeneratorService::on_zookeeper(admin, ServiceOptions::default());
    assert!(
        admin.pool_info(&category).await.is_ok(),
        "guard: A's create applied"
    );
    assert!(
        matches!(result, Err(ZooidError::OutcomeUnknown { .. })),
        "A's create applied and returned {result:?}"
    );
}

/// A single-node category: one `create`. On the code before: `Err(ConnectionLost { .. })`.
#[test]
fn a_single_node_create_whose_reply_is_lost_is_in_doubt() {
    run_scenario(async {
        lost_category_create(Layout::SingleNode, |flaky, gate| {
            flaky.hold_create = Some(("/ids".into(), gate));
        })
        .await;
    });
}

/// A category in hole nodes: one `multi`. On the code before: `Err(ConnectionLost { .. })`.
#[test]
fn a_block_category_create_whose_reply_is_lost_is_in_doubt() {
    run_scenario(async {
        lost_category_create(Layout::HoleNodes { unit: 10 }, |flaky, gate| {
            flaky.hold_claim = Some(("/ids".into(), gate));
        })
        .await;
    });
}

/// A counter's `init`: its create applies, its reply is lost, one attempt allowed. On the code
/// before: `Err(ConnectionLost { .. })`.
#[test]
fn a_counter_init_whose_reply_is_lost_is_in_doubt() {
    run_scenario(async {
        let world = World::new(47, Faults::all().none(), false);
        tokio::spawn(world.clone().drive());
        let admin: Zk = SimSession::open(&world, 0, 0);
        admin
            .create_all(admin.generation(), "/counters", None)
            .await
            .expect("parent");
        let gate = Gate::armed();
        let mut a_zk = Flaky::over(SimSession::open(&world, 1, 1));
        a_zk.hold_create = Some(("/counters".into(), gate.clone()));
        let a = Counter::with_policy(Arc::new(a_zk), "/counters/c", one_attempt()).unwrap();
        let init = a.init(0);
        tokio::pin!(init);
        tokio::select! {
            result = &mut init => panic!("guard: the create was held, yet it returned {result:?}"),
            _ = gate.entered.notified() => {}
        }
        gate.release.notify_one();
        let result = init.await;
        let b = Counter::new(admin, "/counters/c").unwrap();
        assert_eq!(b.get().await.expect("guard: A's create applied"), 0);
        assert!(
            matches!(result, Err(ZooidError::OutcomeUnknown { .. })),
            "A's init applied and returned {result:?}"
        );
    });
}
