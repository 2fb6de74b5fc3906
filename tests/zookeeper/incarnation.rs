//! No plan crosses a session or an incarnation: a write planned on one incarnation of a pool
//! (before ZooKeeper lost its data) must fail against the next one (after a restore from the
//! durable record), even when the restored pool reaches the same data version and the same
//! generation number as the one planned on.

use zooid::CategorySpec;
use zooid_test_support as support;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::{runtime, session_options, FaultProxy, RequestMatch, ZkServer};
use zooid::alloc::Restored;
use zooid::{
    IdCategory, IdGeneratorService, IdRange, IdSet, Layout, ServiceOptions, Store, ZooidError,
};

fn r(start: i64, end: i64) -> IdRange {
    IdRange::new(start, end).unwrap()
}

fn ids_of(set: &IdSet) -> Vec<i64> {
    set.ranges()
        .iter()
        .flat_map(|r| r.start()..=r.end())
        .collect()
}

/// The `#blocks UNIT GENERATION BASE` line of a pool node.
fn blocks_line(data: &[u8]) -> String {
    String::from_utf8_lossy(data)
        .lines()
        .find(|l| l.starts_with("#blocks "))
        .unwrap_or("")
        .to_string()
}

/// A claim of fresh blocks whose reply is lost just before ZooKeeper loses its data: the
/// category is restored from its durable record (a new incarnation at the same generation
/// number and, after the keeper's raise, the same data version as planned on), and the
/// claimer's lookup on its new session finds no trace of the claim. Resending the claim as
/// planned would number blocks in the restored generation and map them through the old
/// incarnation's base: IDs handed out before the wipe, again.
#[test]
fn a_claim_in_doubt_across_a_wipe_and_restore_is_not_resent() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    runtime().block_on(async {
        let options = support::service_options_with_deadline(Duration::from_secs(40));
        let a =
            IdGeneratorService::connect(&proxy.connect_string(), &session_options(15000), options)
                .await
                .unwrap();
        let cat = IdCategory::new("/incarnation/claim").unwrap();
        let bounds = r(1, 1_000_000);
        // A category restored once already (epoch 1: its blocks at generation 1, as after the
        // keeper's first ceiling), its ceiling raised: data version 1.
        a.restore_category_in(&cat, bounds, 0, 1, Layout::HoleNodes { unit: 100 })
            .await
            .unwrap();
        a.raise_ceiling(&cat, 10_000).await.unwrap();
        let before = a.read_node(cat.name()).await.unwrap();
        let planned_on = blocks_line(&before);
        assert!(
            planned_on.starts_with("#blocks 100 ") && planned_on.ends_with(" 1"),
            "guard: fresh blocks from ID 1: {planned_on}"
        );
        let mut seen = BTreeSet::new();
        let first = a.take_ids(&cat, 100).await.unwrap();
        assert_eq!(first.ranges(), vec![r(1, 100)]);
        seen.extend(ids_of(&first));

        // The next claim applies, its reply is lost, and the claimer cannot look (its session
        // cannot reattach) until the wipe has ended it.
        proxy.drop_reply(RequestMatch::Op {
            opcode: support::op::MULTI,
            path_contains: "zooid-blocks".to_string(),
        });
        proxy.refuse_reattach(true);
        let a = Arc::new(a);
        let taker = {
            let (a, cat) = (Arc::clone(&a), cat.clone());
            tokio::spawn(async move { a.take_ids(&cat, 100).await })
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while proxy.dropped_replies() == 0 {
            assert!(
                Instant::now() < deadline,
                "the claim's reply was not dropped"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }

        // The wipe; the restore from the durable record (ceiling 10,000, epoch 2) and the
        // keeper's raise bring the pool back at generation 1, data version 1.
        zk.stop();
        std::fs::remove_dir_all(zk.data_dir().join("version-2")).unwrap();
        zk.restart();
        let b = IdGeneratorService::connect(
            &zk.connect_string(),
            &session_options(3000),
            ServiceOptions::default(),
        )
        .await
        .unwrap();
        b.restore_category_in(&cat, bounds, 10_000, 2, Layout::HoleNodes { unit: 100 })
            .await
            .unwrap();
        b.raise_ceiling(&cat, 20_000).await.unwrap();
        let restored = b.store().get(cat.name()).await.unwrap();
        assert_eq!(
            restored.version, 1,
            "guard: the restored pool at the version planned on"
        );
        assert!(!taker.is_finished(), "the take ended before the restore");
        proxy.refuse_reattach(false);

        let took = taker.await.unwrap();
        eprintln!(
            "the claim in doubt ended {took:?}; planned on {planned_on}, restored pool {}",
            blocks_line(&restored.data)
        );
        match &took {
            Ok(set) => {
                let again: Vec<i64> = ids_of(set)
                    .into_iter()
                    .filter(|id| seen.contains(id))
                    .collect();
                assert!(
                    again.is_empty(),
                    "IDs handed out before the wipe handed out again: {} of them, {:?}..",
                    again.len(),
                    &again[..again.len().min(5)]
                );
                assert!(
                    ids_of(set).iter().all(|&id| id > 10_000),
                    "the take handed out IDs at or below the restored record: {:?}",
                    set.ranges()
                );
            }
            Err(ZooidError::OutcomeUnknown { .. }) => {}
            Err(other) => panic!("unexpected failure: {other}"),
        }
        // Whatever the claim did, takes on the restored pool go on above the record.
        let next = b.take_ids(&cat, 100).await.unwrap();
        assert!(ids_of(&next)
            .iter()
            .all(|&id| id > 10_000 && !seen.contains(&id)));
    });
}

/// A process that sealed its generation to move the blocks on and then paused, while others
/// moved the pool three generations further (retiring the generation after its own), must not
/// create that retired generation's sequence parent again when it resumes: a claim in the
/// retired generation whose reply was lost would then find it empty and be judged not applied.
#[test]
fn a_paused_rotation_never_brings_back_a_retired_generation() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    runtime().block_on(async {
        let a = IdGeneratorService::connect(
            &proxy.connect_string(),
            &session_options(30_000),
            ServiceOptions::default(),
        )
        .await
        .unwrap();
        let cat = IdCategory::new("/incarnation/rotation").unwrap();
        // Blocks of one ID: a take of 1,000 claims 1,000 blocks, and a generation moves on
        // after 20,000.
        a.create_category(&cat, &CategorySpec::new(1, 100_000_000).blocks(1))
            .await
            .unwrap();
        for _ in 0..20 {
            a.take_ids(&cat, 1000).await.unwrap();
        }
        let parents = |list: Vec<String>| -> Vec<String> {
            list.into_iter()
                .filter(|c| c.starts_with("zooid-blocks-"))
                .collect()
        };
        assert_eq!(
            parents(a.list_categories(cat.name()).await.unwrap()),
            vec!["zooid-blocks-0".to_string()]
        );

        // A's next take moves the blocks on: it seals generation 0, then writes the pool. Its
        // pool write waits while another process moves the pool to generation 3 (generation 1
        // retired) with takes of its own.
        let connect = zk.connect_string();
        let (cat_b, fired) = (cat.clone(), Arc::new(AtomicUsize::new(0)));
        let once = Arc::clone(&fired);
        let path = format!("{}\0", cat.name());
        proxy.drop_reply(RequestMatch::Custom(support::MatchFn(Arc::new(
            move |opcode, frame: &[u8]| {
                let pool_write = opcode == support::op::SET_DATA
                    && frame
                        .windows(path.len() - 1)
                        .any(|w| w == &path.as_bytes()[..path.len() - 1])
                    && !frame.windows(13).any(|w| w == b"zooid-blocks-");
                if pool_write && once.fetch_add(1, Ordering::SeqCst) == 0 {
                    let (connect, cat) = (connect.clone(), cat_b.clone());
                    std::thread::spawn(move || {
                        runtime().block_on(async move {
                            let b = IdGeneratorService::connect(
                                &connect,
                                &session_options(6000),
                                ServiceOptions::default(),
                            )
                            .await
                            .unwrap();
                            for _ in 0..61 {
                                b.take_ids(&cat, 1000).await.unwrap();
                            }
                            // Generation 1 retired (in the background) once the pool is at 3.
                            let deadline = Instant::now() + Duration::from_secs(20);
                            loop {
                                let children = b.list_categories(cat.name()).await.unwrap();
                                if !children.iter().any(|c| c == "zooid-blocks-1") {
                                    eprintln!("while a paused: {children:?}");
                                    break;
                                }
                                assert!(Instant::now() < deadline, "generation 1 not retired");
                                tokio::time::sleep(Duration::from_millis(50)).await;
                            }
                        })
                    })
                    .join()
                    .unwrap();
                }
                false
            },
        ))));
        a.take_ids(&cat, 1000).await.unwrap();
        proxy.clear_faults();
        assert_eq!(
            fired.load(Ordering::SeqCst),
            1,
            "guard: a's pool write waited"
        );
        // Retiring is in the background: give a recreated parent time to show.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = parents(a.list_categories(cat.name()).await.unwrap());
        eprintln!("after a resumed: {now:?}");
        assert!(
            !now.contains(&"zooid-blocks-1".to_string()),
            "a retired generation's sequence parent was created again: {now:?}"
        );
    });
}

/// A repair starts its epoch's numbering (generation `2^32`): the generations of the epoch
/// before are retired too, not only the one before the sealed one. They were left forever, each
/// a sequence parent with up to 20,000 children.
#[test]
fn generations_of_an_epoch_before_a_repair_are_retired() {
    let zk = ZkServer::start();
    runtime().block_on(async {
        let svc = IdGeneratorService::connect(
            &zk.connect_string(),
            &session_options(30_000),
            ServiceOptions::default(),
        )
        .await
        .unwrap();
        let cat = IdCategory::new("/incarnation/old-epoch").unwrap();
        // Blocks of one ID: a take of 1,000 claims 1,000 blocks, and a generation moves on
        // after 20,000.
        svc.create_category(
            &cat,
            &CategorySpec::new(1, 100_000_000).blocks(1).ceiling(50_000),
        )
        .await
        .unwrap();
        let parents = || async {
            let mut generations: Vec<u64> = svc
                .list_categories(cat.name())
                .await
                .unwrap()
                .iter()
                .filter_map(|name| zooid::format::generation_of(name))
                .collect();
            generations.sort_unstable();
            generations
        };
        // Retiring is in the background: the generations once it is done.
        let settled = |expected: Vec<u64>| async move {
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                let now = parents().await;
                if now == expected || Instant::now() > deadline {
                    return now;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        for _ in 0..21 {
            svc.take_ids(&cat, 1000).await.unwrap();
        }
        assert_eq!(settled(vec![0, 1]).await, vec![0, 1], "guard: one move");
        // The durable record is ahead (a rollback): the repair seals generation 1 and starts
        // epoch 1's numbering.
        let repaired = svc.repair(&cat, 60_000, 1).await.unwrap();
        assert!(
            matches!(repaired, Restored::Repaired { .. }),
            "{repaired:?}"
        );
        let first = 1u64 << 32;
        assert_eq!(settled(vec![1, first]).await, vec![1, first]);
        svc.raise_ceiling(&cat, 200_000).await.unwrap();
        for _ in 0..21 {
            svc.take_ids(&cat, 1000).await.unwrap();
        }
        assert_eq!(
            settled(vec![first, first + 1]).await,
            vec![first, first + 1],
            "the epoch before the repair left behind"
        );
    });
}
