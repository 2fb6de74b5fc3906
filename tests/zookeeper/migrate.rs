//! `migrate_category` against a real server: single-node pools (formats 1 and 2, seed-style
//! nodes) moved to format 4 in place, their free ranges becoming hole nodes, the seed's worked
//! example to the ID across the move, and takes and pushes from other sessions during it without
//! an ID handed out twice or lost; a pool in the retired format 3 refused and left as it is.

use zooid::CategorySpec;
use zooid_test_support as support;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use support::{runtime, session_options, ZkServer};
use zooid::{
    ConnectOptions, IdCategory, IdGeneratorService, IdRange, IdSet, Layout, Migrated,
    ServiceOptions, Store, ZooidError,
};

fn r(start: i64, end: i64) -> IdRange {
    IdRange::new(start, end).unwrap()
}

async fn open(connect: &str) -> IdGeneratorService {
    IdGeneratorService::connect(connect, &session_options(6000), ServiceOptions::default())
        .await
        .unwrap()
}

const HOLES: Layout = Layout::HoleNodes { unit: 1000 };

/// The seed's worked example (tests/support/src/behaviour.rs) with a migration after its
/// pushes: the next take still hands out exactly the IDs the seed shows.
#[test]
fn the_seed_worked_example_survives_a_migration_to_the_id() {
    support::init_tracing();
    let zk = ZkServer::start();
    runtime().block_on(async {
        let svc = open(&zk.connect_string()).await;
        let cat = IdCategory::new("/migrate/did").unwrap();
        svc.create_category(&cat, &CategorySpec::new(1, 123456789).single_node())
            .await
            .unwrap();
        let mut sets = Vec::new();
        for _ in 0..3 {
            sets.push(svc.take_ids(&cat, 10000).await.unwrap());
        }
        for set in &mut sets {
            for _ in 0..9000 {
                set.take_id().unwrap();
            }
            svc.push_ids(set).await.unwrap();
        }
        let raw = svc.read_node(cat.name()).await.unwrap();
        assert!(
            raw.starts_with(b"#zooid 1\n"),
            "{}",
            String::from_utf8_lossy(&raw)
        );

        // Another process that remembers the single node from its last write before the move
        // (a take of one ID and its push back, which leave the free list as it was).
        let other = open(&zk.connect_string()).await;
        let mut one = other.take_ids(&cat, 1).await.unwrap();
        assert_eq!(one.ranges(), vec![r(9001, 9001)]);
        other.push_ids(&mut one).await.unwrap();
        assert_eq!(
            other.pool_info(&cat).await.unwrap().free,
            vec![r(9001, 10000), r(19001, 20000), r(29001, 123456789)]
        );

        let moved = svc.migrate_category(&cat, HOLES).await.unwrap();
        assert_eq!(
            moved,
            Migrated::Moved {
                from: 1,
                to: 4,
                base: 29001
            }
        );
        let raw = svc.read_node(cat.name()).await.unwrap();
        let text = String::from_utf8_lossy(&raw);
        assert!(
            text.starts_with("#zooid 4\n#bounds 1:123456789\n#blocks 1000 0 29001\n"),
            "{text}"
        );
        assert!(
            text.lines().all(|l| l.starts_with('#')),
            "no free list in a format-4 pool node: {text}"
        );
        assert_eq!(
            svc.list_categories("/migrate/did/zooid-holes")
                .await
                .unwrap()
                .len(),
            2,
            "the free ranges below the block region became hole nodes"
        );
        assert_eq!(
            svc.pool_info(&cat).await.unwrap().free,
            vec![r(9001, 10000), r(19001, 20000), r(29001, 123456789)],
            "nothing lost, nothing added"
        );

        assert_eq!(other.stats().version_conflicts, 0);
        let mut next = other.take_ids(&cat, 10000).await.unwrap();
        // Its plan on the single node as remembered lost to the migration's write.
        assert_eq!(other.stats().version_conflicts, 1);
        let handed: Vec<i64> = std::iter::from_fn(|| next.take_id()).collect();
        let expected: Vec<i64> = (9001..=10000)
            .chain(19001..=20000)
            .chain(29001..=30000)
            .chain(30001..=37000)
            .collect();
        assert_eq!(handed, expected);
        assert_eq!(
            svc.pool_info(&cat).await.unwrap().free,
            vec![r(37001, 123456789)]
        );
        // Pushes now become hole nodes.
        let mut back = IdSet::new(cat.clone(), vec![r(36001, 37000)]);
        other.push_ids(&mut back).await.unwrap();
        assert_eq!(
            svc.list_categories("/migrate/did/zooid-holes")
                .await
                .unwrap(),
            vec!["h-0000000000000036001-0000000000000037000".to_string()]
        );
    });
}

/// Sessions that take batches and push back their leftovers while another session moves the
/// pool from the single node to format 4: every ID kept by one task only, and every ID kept
/// or free.
#[test]
fn takes_and_pushes_during_a_migration_get_no_id_twice() {
    support::init_tracing();
    let zk = ZkServer::start();
    const TASKS: usize = 6;
    const ROUNDS: usize = 20;
    const LAST: i64 = 1_000_000_000;
    runtime().block_on(async {
        let admin = open(&zk.connect_string()).await;
        let cat = IdCategory::new("/migrate/busy").unwrap();
        admin
            .create_category(&cat, &CategorySpec::new(1, LAST).single_node())
            .await
            .unwrap();
        let rounds = Arc::new(AtomicUsize::new(0));
        let migrated = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for task in 0..TASKS {
            let (connect, cat) = (zk.connect_string(), cat.clone());
            let (rounds, migrated) = (Arc::clone(&rounds), Arc::clone(&migrated));
            tasks.push(tokio::spawn(async move {
                let svc = open(&connect).await;
                let mut kept = Vec::new();
                // Rounds begun once the migration had returned.
                let mut after = 0;
                let mut round = 0;
                // Until three rounds on the new layout, however long the migration takes on a
                // loaded machine (its rounds lose races to these tasks' writes), within reason.
                let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
                while (round < ROUNDS || after < 3) && std::time::Instant::now() < until {
                    if migrated.load(Ordering::SeqCst) {
                        after += 1;
                    }
                    let n = 500 + 100 * ((task + round) % 6) as u64;
                    round += 1;
                    let set = svc.take_ids(&cat, n).await.expect("take");
                    let mut ids: Vec<i64> = Vec::new();
                    for range in set.ranges() {
                        ids.extend(range.start()..=range.end());
                    }
                    assert_eq!(ids.len() as u64, n, "a whole batch");
                    // The task's work on its batch.
                    tokio::time::sleep(std::time::Duration::from_millis(3)).await;
                    let (used, left) = ids.split_at(ids.len() * 9 / 10);
                    kept.extend_from_slice(used);
                    let mut back = IdSet::new(cat.clone(), runs(left));
                    svc.push_ids(&mut back).await.expect("push back");
                    rounds.fetch_add(1, Ordering::SeqCst);
                }
                svc.close().await;
                (kept, after)
            }));
        }
        // Migrate once the tasks are under way.
        while rounds.load(Ordering::SeqCst) < TASKS * 3 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        let migrator = open(&zk.connect_string()).await;
        let moved = migrator.migrate_category(&cat, HOLES).await.unwrap();
        migrated.store(true, Ordering::SeqCst);
        let at = rounds.load(Ordering::SeqCst);
        assert!(
            matches!(moved, Migrated::Moved { from: 1, to: 4, .. }),
            "{moved:?}"
        );

        let mut seen = BTreeSet::new();
        for task in tasks {
            let (kept, after) = task.await.unwrap();
            assert!(
                after >= 3,
                "a task took and pushed on the new layout ({after} rounds)"
            );
            for id in kept {
                assert!(seen.insert(id), "ID {id} handed out twice");
            }
        }
        let info = admin.pool_info(&cat).await.unwrap();
        assert!(info.blocks.is_some());
        let raw = admin.read_node(cat.name()).await.unwrap();
        assert!(
            !String::from_utf8_lossy(&raw)
                .lines()
                .any(|l| !l.starts_with('#')),
            "a format-4 pool node holds no free list: {}",
            String::from_utf8_lossy(&raw)
        );
        let free: u64 = info.free.iter().map(IdRange::len).sum();
        assert_eq!(free + seen.len() as u64, LAST as u64, "nothing lost");
        for range in &info.free {
            assert!(
                seen.range(range.start()..=range.end()).next().is_none(),
                "a free range holds a kept ID: {range}"
            );
        }
        eprintln!(
            "migrated after {at} of {} rounds: {} IDs kept, {} free ranges",
            rounds.load(Ordering::SeqCst),
            seen.len(),
            info.free.len()
        );
    });
}

/// A second migration finds the pool there already; a seed-style node's free ranges become hole
/// nodes; a format-2 pool keeps its ceiling; no way back; the embedded stores refuse.
#[test]
fn migrations_are_idempotent_and_keep_holes_and_ceilings() {
    support::init_tracing();
    let zk = ZkServer::start();
    runtime().block_on(async {
        let svc = open(&zk.connect_string()).await;
        let cat = IdCategory::new("/migrate/twice").unwrap();
        svc.create_category(&cat, &CategorySpec::new(1, 5000).single_node())
            .await
            .unwrap();
        let first = svc.migrate_category(&cat, HOLES).await.unwrap();
        assert_eq!(
            first,
            Migrated::Moved {
                from: 1,
                to: 4,
                base: 1
            }
        );
        assert_eq!(
            svc.migrate_category(&cat, HOLES).await.unwrap(),
            Migrated::Already { format: 4 }
        );
        assert!(matches!(
            svc.migrate_category(&cat, Layout::SingleNode).await,
            Err(ZooidError::InvalidArgument(_))
        ));

        // A seed-style node: its bounds end at its highest free ID.
        let seed = IdCategory::new("/migrate/seed").unwrap();
        svc.store()
            .create(seed.name(), b"9001:10000\n19001:20000\n29001:123456789\n")
            .await
            .unwrap();
        let moved = svc.migrate_category(&seed, HOLES).await.unwrap();
        assert_eq!(
            moved,
            Migrated::Moved {
                from: 1,
                to: 4,
                base: 29001
            }
        );
        let info = svc.pool_info(&seed).await.unwrap();
        assert_eq!((info.legacy, info.bounds), (false, r(1, 123456789)));
        assert_eq!(
            info.free,
            vec![r(9001, 10000), r(19001, 20000), r(29001, 123456789)]
        );
        let mut holes = svc
            .list_categories("/migrate/seed/zooid-holes")
            .await
            .unwrap();
        holes.sort();
        assert_eq!(
            holes,
            vec![
                "h-0000000000000009001-0000000000000010000".to_string(),
                "h-0000000000000019001-0000000000000020000".to_string(),
            ],
            "the free ranges below the block region are hole nodes"
        );
        let raw = svc.read_node(seed.name()).await.unwrap();
        assert_eq!(
            String::from_utf8_lossy(&raw)
                .lines()
                .filter(|l| !l.starts_with('#'))
                .count(),
            0,
            "no free list left in the pool node: {}",
            String::from_utf8_lossy(&raw)
        );

        // A format-2 pool keeps its ceiling: no take passes it.
        let capped = IdCategory::new("/migrate/capped").unwrap();
        svc.create_category(
            &capped,
            &CategorySpec::new(1, 1_000_000).single_node().ceiling(2500),
        )
        .await
        .unwrap();
        svc.take_ids(&capped, 10).await.unwrap();
        let moved = svc.migrate_category(&capped, HOLES).await.unwrap();
        assert_eq!(
            moved,
            Migrated::Moved {
                from: 2,
                to: 4,
                base: 11
            }
        );
        let info = svc.pool_info(&capped).await.unwrap();
        assert_eq!((info.ceiling, info.headroom), (Some(2500), 2490));
        assert_eq!(
            svc.take_ids(&capped, 1000).await.unwrap().ranges(),
            vec![r(11, 1010)]
        );
        assert_eq!(
            svc.take_ids(&capped, 1000).await.unwrap().ranges(),
            vec![r(1011, 2010)]
        );
        // At the ceiling: the rest below it, then nothing.
        assert_eq!(
            svc.take_ids(&capped, 1000).await.unwrap().ranges(),
            vec![r(2011, 2500)]
        );

        // The embedded stores have no block layouts.
        let mem = IdGeneratorService::connect(
            "mem:",
            &ConnectOptions::default(),
            ServiceOptions::default(),
        )
        .await
        .unwrap();
        let local = IdCategory::new("/migrate/mem").unwrap();
        mem.create_category(&local, &CategorySpec::new(1, 100))
            .await
            .unwrap();
        assert!(matches!(
            mem.migrate_category(&local, HOLES).await,
            Err(ZooidError::InvalidArgument(_))
        ));
    });
}

/// The ascending IDs `ids` as ranges of consecutive IDs.
fn runs(ids: &[i64]) -> Vec<IdRange> {
    let mut out: Vec<IdRange> = Vec::new();
    for &id in ids {
        match out.last_mut() {
            Some(last) if last.end() + 1 == id => *last = r(last.start(), id),
            _ => out.push(r(id, id)),
        }
    }
    out
}

/// A pool node in the retired format 3, as zooid wrote it before (golden bytes, with its
/// children: a free-list part and a push waiting in `zooid-returned`), is refused by take,
/// push, pool_info and migrate with the error that names the format, and left byte for byte
/// as it was, children included.
#[test]
fn a_format_3_pool_is_refused_by_every_operation_and_left_as_it_is() {
    support::init_tracing();
    let zk = ZkServer::start();
    runtime().block_on(async {
        let svc = open(&zk.connect_string()).await;
        let path = "/migrate/retired";
        let node: &[u8] = b"#zooid 3\n#bounds 1:4611686018427387903\n#blocks 1000 2 20001\n#ceiling 60000\n#op 9 push 127c51b24da4fc9c 250\n#op 10 blocks 3f0e9a1c77d2b460 10011000\n#chunk 4001 3 1280\n2751:3000\n";
        let children: [(&str, &[u8]); 5] = [
            ("/zooid-blocks-2", b""),
            ("/zooid-free-4001", b"#zooid-chunk 4001\n4001:5280\n"),
            ("/zooid-returned", b""),
            ("/zooid-returned/r-00000000deadbeef", b"#zooid-returned\n2001:2100\n"),
            ("/zooid-holes", b""),
        ];
        svc.store().create(path, node).await.unwrap();
        for (child, data) in children {
            svc.store()
                .create(&format!("{path}{child}"), data)
                .await
                .unwrap();
        }
        let before = snapshot(&svc, path, &children).await;
        let cat = IdCategory::new(path).unwrap();
        let refused = |what: &str, result: Result<(), ZooidError>| match result {
            Err(err @ ZooidError::RetiredFormat { format: 3, .. }) => {
                assert_eq!(err.kind(), zooid::ErrorKind::CorruptPool);
                let message = err.to_string();
                assert!(
                    message.starts_with(
                        "pool node /migrate/retired is in format 3, which this release no longer reads"
                    ),
                    "{what}: {message}"
                );
            }
            other => panic!("{what}: expected RetiredFormat, got {other:?}"),
        };
        refused("take", svc.take_ids(&cat, 10).await.map(drop));
        let mut pushed = IdSet::new(cat.clone(), vec![r(2201, 2300)]);
        refused("push", svc.push_ids(&mut pushed).await.map(drop));
        refused("pool_info", svc.pool_info(&cat).await.map(drop));
        refused("migrate", svc.migrate_category(&cat, HOLES).await.map(drop));
        // Another process, with nothing remembered.
        let other = open(&zk.connect_string()).await;
        refused("take", other.take_ids(&cat, 1000).await.map(drop));
        refused(
            "migrate",
            other.migrate_category(&cat, Layout::for_scale()).await.map(drop),
        );
        assert_eq!(
            snapshot(&svc, path, &children).await,
            before,
            "the format-3 pool was changed"
        );
    });
}

/// Every node of the format-3 pool `path` and its `children`: data, version, children names.
async fn snapshot(
    svc: &IdGeneratorService,
    path: &str,
    children: &[(&str, &[u8])],
) -> Vec<(String, Vec<u8>, i32)> {
    let mut nodes = Vec::new();
    for name in std::iter::once("").chain(children.iter().map(|(c, _)| *c)) {
        let node = svc.store().get(&format!("{path}{name}")).await.unwrap();
        nodes.push((name.to_string(), node.data, node.version));
    }
    for parent in ["", "/zooid-blocks-2", "/zooid-returned", "/zooid-holes"] {
        let mut kids = svc
            .store()
            .children(&format!("{path}{parent}"))
            .await
            .unwrap();
        kids.sort();
        nodes.push((
            format!("children of {parent}"),
            kids.join(",").into_bytes(),
            0,
        ));
    }
    nodes
}

/// A single node with more free ranges than one `multi` of hole creates carries (2,500): the
/// holes are made in several writes, each checked against the pool version read, and the pool
/// moves only once they all match; every free ID stays free once, none is added.
#[test]
fn a_fragmented_single_node_moves_in_several_writes() {
    support::init_tracing();
    let zk = ZkServer::start();
    runtime().block_on(async {
        let svc = open(&zk.connect_string()).await;
        let cat = IdCategory::new("/migrate/fragmented").unwrap();
        svc.create_category(&cat, &CategorySpec::new(1, 1_000_000).single_node())
            .await
            .unwrap();
        let held = svc.take_ids(&cat, 50_000).await.unwrap();
        assert_eq!(held.ranges(), vec![r(1, 50_000)]);
        let holes: Vec<IdRange> = (0..2500).map(|i| r(i * 20 + 1, i * 20 + 10)).collect();
        svc.push_ids(&mut IdSet::new(cat.clone(), holes.clone()))
            .await
            .unwrap();
        let before = svc.pool_info(&cat).await.unwrap().free;
        assert_eq!(before.len(), 2501);
        let moved = svc.migrate_category(&cat, HOLES).await.unwrap();
        assert_eq!(
            moved,
            Migrated::Moved {
                from: 1,
                to: 4,
                base: 50_001
            }
        );
        let listed = svc
            .list_categories("/migrate/fragmented/zooid-holes")
            .await
            .unwrap();
        assert_eq!(listed.len(), 2500);
        let other = open(&zk.connect_string()).await;
        assert_eq!(other.pool_info(&cat).await.unwrap().free, before);
    });
}
