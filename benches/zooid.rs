//! `cargo bench --bench zooid`: prints a table of zooid's costs, each next to a baseline measured
//! in the same run (absolute times on shared machines are noise; ratios are not).
//!
//! - taking an ID from a local `IdSet` vs iterating a plain `i64` range;
//! - `take_ids` / `push_ids` round trips vs a raw compare-and-set `set_data` round trip of the
//!   same size, interleaved, on the same real ZooKeeper server (started on loopback for the run,
//!   as ZooKeeper ships: [`Tuning::AsShipped`](support::Tuning)), and likewise on the embedded
//!   file and memory stores.

use zooid::CategorySpec;
use zooid_test_support as support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use zooid::{
    ConnectOptions, IdCategory, IdGeneratorService, IdRange, IdSet, ServiceOptions, Store,
};

/// Counts allocations, to show that taking IDs from a local set allocates nothing.
struct CountingAlloc;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Median of `rounds` timings of `f`, in nanoseconds.
/// Round trips of each kind before the measured ones.
const WARM_UP: usize = 2_000;

fn median_ns(rounds: usize, mut f: impl FnMut()) -> f64 {
    let mut samples: Vec<u128> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_nanos()
        })
        .collect();
    samples.sort_unstable();
    samples[rounds / 2] as f64
}

fn row(name: &str, value: f64, unit: &str, baseline: &str, ratio: f64) {
    println!("| {name:<44} | {value:>12.1} {unit:<6} | {baseline:<34} | {ratio:>8.2}x |");
}

fn local_take_id() {
    const IDS: i64 = 4_000_000;
    let category = IdCategory::new("/bench").expect("category");
    let ranges: Vec<IdRange> = (0..4)
        .map(|i| IdRange::new(i * 2 * IDS + 1, i * 2 * IDS + IDS / 4).expect("range"))
        .collect();
    let per_set = ranges.iter().map(IdRange::len).sum::<u64>() as f64;
    let idset = median_ns(15, || {
        let mut set = IdSet::new(category.clone(), ranges.clone());
        let mut sum = 0i64;
        while let Some(id) = set.take_id() {
            sum = sum.wrapping_add(black_box(id));
        }
        black_box(sum);
    }) / per_set;
    let plain = median_ns(15, || {
        let mut sum = 0i64;
        for r in &ranges {
            for id in black_box(r.start())..=black_box(r.end()) {
                sum = sum.wrapping_add(black_box(id));
            }
        }
        black_box(sum);
    }) / per_set;
    row(
        "IdSet::take_id (local, per ID)",
        idset,
        "ns",
        "plain i64 range loop",
        idset / plain,
    );
    let mut set = IdSet::new(category.clone(), ranges.clone());
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    let mut taken = 0u64;
    while let Some(id) = set.take_id() {
        black_box(id);
        taken += 1;
    }
    let allocations = ALLOCATIONS.load(Ordering::SeqCst) - before;
    println!(
        "|   (memory: IdSet {} bytes + 16 per range; {allocations} allocations while taking {taken} IDs)",
        std::mem::size_of::<IdSet>()
    );
}

/// Interleaves zooid's take and push round trips with raw compare-and-set writes of the same
/// size to another node of the same store, so both see the same conditions.
fn round_trips(
    rt: &tokio::runtime::Runtime,
    connect: &str,
    label: &str,
    layout: Option<zooid::Layout>,
) {
    rt.block_on(async {
        let options = ConnectOptions {
            session_timeout: Duration::from_secs(10),
            digest_auth: None,
            ..ConnectOptions::default()
        };
        let svc = IdGeneratorService::connect(connect, &options, ServiceOptions::default())
            .await
            .expect("connect");
        let cat = IdCategory::new("/bench/pool").expect("category");
        let layout = layout.unwrap_or_else(|| svc.default_layout());
        svc.create_category(&cat, &CategorySpec::new(1, i64::MAX).layout(layout))
            .await
            .expect("create");
        let store = svc.store();
        // Fill the pool's operation log first, so that the raw write below has the size of the
        // take's write.
        for _ in 0..100 {
            svc.take_ids(&cat, 1000).await.expect("warm-up take");
        }
        let raw_data = svc.read_node(cat.name()).await.expect("read");
        store
            .create("/bench/raw", &raw_data)
            .await
            .expect("create raw");
        let mut version = 0;
        let mut raw_write = || {
            let v = version;
            version += 1;
            let data = raw_data.clone();
            async move {
                store
                    .set("/bench/raw", &data, v, planned_now(store))
                    .await
                    .expect("raw set")
            }
        };
        // On ZooKeeper, the server's cost of a fresh claim's operations apart from zooid's.
        let claims = match svc.zookeeper() {
            Some(zk) if layout == zooid::Layout::HoleNodes { unit: 1000 } => {
                Some(RawClaim::prepare(zk).await)
            }
            _ => None,
        };
        let (mut raw, mut take, mut push) = (Vec::new(), Vec::new(), Vec::new());
        let mut claimed = Vec::new();
        let mut sets = Vec::new();
        for i in 0..WARM_UP + 300 {
            let t = Instant::now();
            raw_write().await;
            let raw_ns = t.elapsed().as_nanos();
            let t = Instant::now();
            let set = svc.take_ids(&cat, 1000).await.expect("take");
            let take_ns = t.elapsed().as_nanos();
            if let Some(claims) = &claims {
                let t = Instant::now();
                claims.claim().await;
                if i >= WARM_UP {
                    claimed.push(t.elapsed().as_nanos());
                }
            }
            // The first WARM_UP warm the server's JIT for every path (a server as shipped runs
            // both tiers).
            if i >= WARM_UP {
                raw.push(raw_ns);
                take.push(take_ns);
                sets.push(set);
            }
        }
        for set in sets.iter_mut().step_by(2) {
            set.take_id();
            let t = Instant::now();
            svc.push_ids(set).await.expect("push");
            push.push(t.elapsed().as_nanos());
            let t = Instant::now();
            raw_write().await;
            raw.push(t.elapsed().as_nanos());
        }
        let median = |mut v: Vec<u128>| {
            v.sort_unstable();
            v[v.len() / 2] as f64 / 1000.0
        };
        let (raw, take, push) = (median(raw), median(take), median(push));
        let baseline = format!("raw set_data, {label}");
        row(
            &format!("raw set_data round trip, {label}"),
            raw,
            "us",
            "itself",
            1.0,
        );
        row(
            &format!("take_ids(1000) round trip, {label}"),
            take,
            "us",
            &baseline,
            take / raw,
        );
        if !claimed.is_empty() {
            let claimed = median(claimed);
            row(
                "  raw multi: a fresh claim's 3 operations",
                claimed,
                "us",
                &baseline,
                claimed / raw,
            );
        }
        row(
            &format!("push_ids round trip, {label}"),
            push,
            "us",
            &baseline,
            push / raw,
        );
        let info = svc.pool_info(&cat).await.expect("info");
        println!(
            "|   (pool node after 150 fragmenting pushes: {} bytes, {} ranges)",
            info.bytes,
            info.free.len()
        );
        if svc.zookeeper().is_some() && layout == zooid::Layout::SingleNode {
            block_takes(&svc, store).await;
        }
    })
}

/// A format-4 take's fresh claim as raw operations on nodes of its own:
/// `multi[check(pool), check(generation), create(generation/<token>-, sequential)]`.
struct RawClaim {
    zk: zooid::zk::Zk,
    pool: String,
    generation: String,
    name: String,
}

impl RawClaim {
    async fn prepare(zk: &zooid::zk::Zk) -> RawClaim {
        use zooid::zk::ZooKeeperExt;
        let pool = "/bench/raw-pool".to_string();
        let generation = format!("{pool}/zooid-blocks-1");
        for path in [&pool, &generation] {
            zk.create(zk.generation(), path, &[], &zooid::zk::Create::persistent())
                .await
                .expect("create");
        }
        // A token of the length of the claim's (16 hex digits).
        let name = format!("{generation}/0123456789abcdef-");
        RawClaim {
            zk: zk.clone(),
            pool,
            generation,
            name,
        }
    }

    async fn claim(&self) {
        use zooid::zk::{Create, Mode, Multi, ZooKeeperExt};
        let mut multi = Multi::new();
        multi.check(&self.pool, 0);
        multi.check(&self.generation, 0);
        multi.create(&self.name, &[], &Create::new(Mode::PersistentSequential));
        multi
            .commit(&*self.zk, self.zk.generation())
            .await
            .expect("raw claim");
    }
}

/// A take of a fresh block from a category in block allocation (one `multi` of three checks and
/// a sequential create) against a raw compare-and-set write of the same request size.
async fn block_takes(svc: &IdGeneratorService, store: &zooid::AnyStore) {
    let cat = IdCategory::new("/bench/blocks").expect("category");
    svc.create_category(&cat, &CategorySpec::new(1, i64::MAX / 2).blocks(1000))
        .await
        .expect("create");
    // The claim's request: paths of the pool, its pushes' node, its generation and the create.
    let size = 3 * cat.name().len() + 100;
    let data = vec![b'x'; size];
    store
        .create("/bench/raw-small", &data)
        .await
        .expect("create raw");
    let mut version = 0;
    for _ in 0..WARM_UP {
        svc.take_ids(&cat, 1000).await.expect("warm-up take");
        store
            .set("/bench/raw-small", &data, version, planned_now(store))
            .await
            .expect("raw set");
        version += 1;
    }
    let (mut raw, mut take) = (Vec::new(), Vec::new());
    for _ in 0..300 {
        let t = Instant::now();
        store
            .set("/bench/raw-small", &data, version, planned_now(store))
            .await
            .expect("raw set");
        raw.push(t.elapsed().as_nanos());
        version += 1;
        let t = Instant::now();
        svc.take_ids(&cat, 1000).await.expect("take");
        take.push(t.elapsed().as_nanos());
    }
    let median = |mut v: Vec<u128>| {
        v.sort_unstable();
        v[v.len() / 2] as f64 / 1000.0
    };
    let (raw, take) = (median(raw), median(take));
    let baseline = format!("raw set_data, {size} bytes");
    row(
        &format!("raw set_data round trip, {size} bytes"),
        raw,
        "us",
        "itself",
        1.0,
    );
    row(
        "take_ids(1000), block allocation",
        take,
        "us",
        &baseline,
        take / raw,
    );
}

/// The store's session and connection now: a raw write plans on nothing it read.
fn planned_now(store: &zooid::AnyStore) -> zooid::store::ReadOn {
    use zooid::zk::ZooKeeperExt;
    store
        .zookeeper()
        .map_or(Default::default(), |zk| zk.read_on())
}

fn main() {
    println!(
        "| {:<44} | {:>19} | {:<34} | {:>9} |",
        "measure", "median", "baseline (same run)", "ratio"
    );
    println!("|{:-<46}|{:-<21}|{:-<36}|{:-<11}|", "", "", "", "");
    local_take_id();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let zk = support::ZkServer::start_as_shipped();
    round_trips(
        &rt,
        &zk.connect_string(),
        "ZooKeeper, default layout (format 4)",
        None,
    );
    let single = support::ZkServer::start_as_shipped();
    round_trips(
        &rt,
        &single.connect_string(),
        "ZooKeeper, single node",
        Some(zooid::Layout::SingleNode),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    round_trips(
        &rt,
        &format!("file:{}", dir.path().display()),
        "file store",
        None,
    );
    round_trips(&rt, "mem:bench", "memory store", None);
}
