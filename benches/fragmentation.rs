//! `cargo bench --bench fragmentation`: what a take and a push cost on a pool with many free
//! ranges against one with few, for each layout, on a real ZooKeeper server started on loopback,
//! interleaved in one run (absolute times on shared machines are noise; ratios are not).
//!
//! For each layout (`create_category`'s default, format 4, whose free ranges are hole nodes of
//! their own; the single node of formats 1/2, `Layout::SingleNode`; block allocation, whose free
//! list is split over part nodes, src/alloc/blocks) and each fragmentation (10 and 20,000 free ranges, made by one push
//! of every other run of 5 IDs), the median of `--rounds` (default 200) operations of each kind:
//!
//! - take: `take_ids(category, 1)` (the lowest free ID);
//! - push: `push_ids` of one held ID from the middle of the fragmented span (a new range).
//!
//! Printed: the medians, and the ratio of the 20,000-range figure to the 10-range one (the
//! target: at most 2).
//!
//! ```text
//! cargo bench --bench fragmentation [-- --rounds 200 --ranges 20000]
//! ```

use zooid::CategorySpec;
use zooid_test_support as support;

use std::time::Instant;

use zooid::{ConnectOptions, IdCategory, IdGeneratorService, IdRange, IdSet, ServiceOptions};

/// Runs of this many IDs alternate between free and held.
const RUN: i64 = 5;

struct Args {
    rounds: usize,
    ranges: i64,
}

fn parse_args() -> Args {
    let mut args = Args {
        rounds: 200,
        ranges: 20_000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--rounds" => args.rounds = value().parse().expect("--rounds: a number"),
            "--ranges" => args.ranges = value().parse().expect("--ranges: a number"),
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    args
}

/// A category in `layout` (`default`: `create_category`; `single`: `Layout::SingleNode`;
/// `blocks`: block allocation) whose free list has `holes` ranges of `RUN` IDs below the rest,
/// and the held IDs in between (one set per held run).
async fn fragmented(
    svc: &IdGeneratorService,
    path: &str,
    layout: &str,
    holes: i64,
) -> (IdCategory, Vec<IdSet>) {
    let cat = IdCategory::new(path).expect("category");
    let span = holes * 2 * RUN;
    match layout {
        "blocks" => {
            let unit = u64::try_from(span).expect("span");
            svc.create_category(&cat, &CategorySpec::new(1, i64::MAX / 2).blocks(unit))
                .await
                .expect("create")
        }
        "single" => svc
            .create_category(&cat, &CategorySpec::new(1, i64::MAX / 2).single_node())
            .await
            .expect("create"),
        _ => svc
            .create_category(&cat, &CategorySpec::new(1, i64::MAX / 2))
            .await
            .expect("create"),
    }
    let all = svc
        .take_ids(&cat, u64::try_from(span).expect("span"))
        .await
        .expect("take the span");
    assert_eq!(all.ranges(), vec![IdRange::new(1, span).expect("range")]);
    let free: Vec<IdRange> = (0..holes)
        .map(|i| IdRange::new(i * 2 * RUN + 1, i * 2 * RUN + RUN).expect("range"))
        .collect();
    let held: Vec<IdSet> = (0..holes)
        .map(|i| {
            let start = i * 2 * RUN + RUN + 1;
            IdSet::new(
                cat.clone(),
                vec![IdRange::new(start, start + RUN - 1).expect("range")],
            )
        })
        .collect();
    let mut back = IdSet::new(cat.clone(), free);
    svc.push_ids(&mut back).await.expect("fragmenting push");
    let info = svc.pool_info(&cat).await.expect("info");
    assert!(
        info.free.len() as i64 >= holes,
        "{} ranges",
        info.free.len()
    );
    (cat, held)
}

fn median(mut v: Vec<u128>) -> f64 {
    v.sort_unstable();
    v[v.len() / 2] as f64 / 1000.0
}

fn main() {
    let args = parse_args();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let zk = support::ZkServer::start();
    println!(
        "fragmentation: take_ids(1) and push_ids of one ID, {} rounds each, interleaved; pools \
         with 10 and {} free ranges\n",
        args.rounds, args.ranges
    );
    println!("| layout | op | 10 ranges (median us) | {} ranges (median us) | ratio | pool node bytes (10 / {}) |", args.ranges, args.ranges);
    println!("|---|---|---|---|---|---|");
    rt.block_on(async {
        let svc = IdGeneratorService::connect(
            &zk.connect_string(),
            &ConnectOptions::default(),
            ServiceOptions::default(),
        )
        .await
        .expect("connect");
        for (layout, tag) in [
            ("default (format 4)", "default"),
            ("single node (formats 1/2)", "single"),
        ] {
            let (small, mut small_held) =
                fragmented(&svc, &format!("/frag/{tag}/small"), tag, 10).await;
            let (large, mut large_held) =
                fragmented(&svc, &format!("/frag/{tag}/large"), tag, args.ranges).await;
            let bytes = |info: zooid::PoolInfo| info.bytes;
            let small_bytes = bytes(svc.pool_info(&small).await.expect("info"));
            let large_bytes = bytes(svc.pool_info(&large).await.expect("info"));
            // Warm up both.
            for cat in [&small, &large] {
                for _ in 0..10 {
                    svc.take_ids(cat, 1).await.expect("take");
                }
            }
            let (mut take_small, mut take_large) = (Vec::new(), Vec::new());
            let (mut push_small, mut push_large) = (Vec::new(), Vec::new());
            for round in 0..args.rounds {
                for (cat, times) in [(&small, &mut take_small), (&large, &mut take_large)] {
                    let t = Instant::now();
                    let got = svc.take_ids(cat, 1).await.expect("take");
                    times.push(t.elapsed().as_nanos());
                    assert_eq!(got.count_ids(), 1);
                }
                // Push one ID of a held run from the middle (a new free range each time).
                for (held, times) in [
                    (&mut small_held, &mut push_small),
                    (&mut large_held, &mut push_large),
                ] {
                    let index = (held.len() / 2 + round * 7) % held.len();
                    let set = &mut held[index];
                    let Some(id) = set.take_id() else { continue };
                    let mut one = IdSet::new(
                        set.category().clone(),
                        vec![IdRange::new(id, id).expect("range")],
                    );
                    let t = Instant::now();
                    svc.push_ids(&mut one).await.expect("push");
                    times.push(t.elapsed().as_nanos());
                }
            }
            for (op, small_times, large_times) in [
                ("take_ids(1)", take_small, take_large),
                ("push_ids(1 ID)", push_small, push_large),
            ] {
                let (s, l) = (median(small_times), median(large_times));
                println!(
                    "| {layout} | {op} | {s:.0} | {l:.0} | {:.2} | {small_bytes} / {large_bytes} |",
                    l / s
                );
            }
        }
    });
}
