//! `cargo bench --bench prefetch`: per-ID take latency from a prefetching [`IdSource`] while its
//! batches are refilled in the background, against the same run's non-prefetching take path (an
//! `IdSet` from `take_ids`, refilled by a blocking `take_ids` when it runs out), on a real
//! ZooKeeper server started on loopback for the run.
//!
//! Every ID is timed on its own (`Instant::now()` before and after, which adds ~20-40 ns to each
//! figure). Between IDs the caller does a fixed amount of busy work, as a worker does, so that the
//! consumption rate is finite and a background refill has a batch's lifetime to arrive. Prints
//! p50/p99/p99.9/max per ID, the number of calls that waited on ZooKeeper, the batches taken,
//! and the ratios of the prefetching to the non-prefetching figures.
//!
//! Environment: `ZOOID_ZK_LIB` (ZooKeeper jars), `PREFETCH_BENCH_IDS` (IDs per run, default
//! 2,000,000), `PREFETCH_BENCH_WORK_NS` (busy work per ID, default 200), `PREFETCH_BENCH_CONNECT`
//! (another store instead of the ZooKeeper server, such as `mem:`).

use zooid::CategorySpec;
use zooid_test_support as support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use zooid::blocking::{IdGeneratorService, IdSource};
use zooid::prefetch::SourceOptions;
use zooid::{ConnectOptions, IdCategory, ServiceOptions};

/// Counts allocations, to show that the C per-ID call allocates nothing.
struct CountingAlloc;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Allocations made by the C entry point `zooid_id_source_next`: over a batch with no refill
/// due, and over batches refilled in the background.
fn c_next_allocations(connect: &str) {
    use std::ffi::CString;
    use std::ptr;
    use zooid::ffi::prefetch::*;
    use zooid::ffi::service::*;
    use zooid::ffi::zooid_status::ZOOID_STATUS_OK;
    let connect = CString::new(connect).expect("connect");
    let category = CString::new("/bench/prefetch-c").expect("category");
    // SAFETY: every pointer below is live and used as the header documents.
    unsafe {
        let mut service = ptr::null();
        assert_eq!(
            zooid_service_open(connect.as_ptr(), ptr::null(), &mut service),
            ZOOID_STATUS_OK
        );
        let mut spec = ptr::null_mut();
        assert_eq!(
            zooid::ffi::spec::zooid_category_spec_new(1, i64::MAX, &mut spec),
            ZOOID_STATUS_OK
        );
        assert_eq!(
            zooid_service_create_category(service, category.as_ptr(), spec),
            ZOOID_STATUS_OK
        );
        zooid::ffi::spec::zooid_category_spec_free(spec);
        let mut options = ptr::null_mut();
        assert_eq!(zooid_source_options_new(&mut options), ZOOID_STATUS_OK);
        let measure = |batch: u64, percent: u32, ids: u64| {
            assert_eq!(
                zooid_source_options_set_batch(options, batch, batch, batch),
                ZOOID_STATUS_OK
            );
            assert_eq!(
                zooid_source_options_set_refill_when_used_percent(options, percent),
                ZOOID_STATUS_OK
            );
            let mut source = ptr::null_mut();
            assert_eq!(
                zooid_id_source_open(service, category.as_ptr(), options, &mut source),
                ZOOID_STATUS_OK
            );
            let mut id = 0i64;
            let before = ALLOCATIONS.load(Ordering::SeqCst);
            for _ in 0..ids {
                assert_eq!(zooid_id_source_next(source, &mut id), ZOOID_STATUS_OK);
                black_box(id);
            }
            let allocations = ALLOCATIONS.load(Ordering::SeqCst) - before;
            let mut stats = zooid_source_stats::default();
            assert_eq!(zooid_id_source_stats(source, &mut stats), ZOOID_STATUS_OK);
            assert_eq!(zooid_id_source_close(source), ZOOID_STATUS_OK);
            zooid_id_source_free(source);
            println!(
                "C zooid_id_source_next: {allocations} allocations (counted process-wide) over {ids} IDs, {} batches taken in the background, {} waits",
                stats.refills - 1,
                stats.waits
            );
        };
        measure(1_000_000, 100, 999_999); // no refill falls due
        measure(100_000, 10, 1_000_000); // refills in the background
        zooid_source_options_free(options);
        zooid_service_free(service);
    }
}

/// Busy work of about `ns` nanoseconds (calibrated spin), standing in for using an ID.
struct Work {
    iterations: u64,
}

impl Work {
    fn calibrate(ns: u64) -> Self {
        let probe = 10_000_000u64;
        let t = Instant::now();
        spin(probe);
        let per = t.elapsed().as_nanos() as f64 / probe as f64;
        Self {
            iterations: ((ns as f64) / per.max(0.01)) as u64,
        }
    }

    #[inline]
    fn run(&self) {
        spin(self.iterations);
    }
}

#[inline(never)]
fn spin(n: u64) {
    let mut x = 0u64;
    for i in 0..n {
        x = black_box(x.wrapping_add(i));
    }
    black_box(x);
}

/// Latency samples in nanoseconds, preallocated so that recording allocates nothing.
struct Histogram {
    samples: Vec<u32>,
}

impl Histogram {
    fn with_capacity(n: usize) -> Self {
        Self {
            samples: Vec::with_capacity(n),
        }
    }

    #[inline]
    fn record(&mut self, since: Instant) {
        let ns = since.elapsed().as_nanos();
        self.samples.push(u32::try_from(ns).unwrap_or(u32::MAX));
    }

    /// The latest sample.
    #[inline]
    fn last(&self) -> u32 {
        self.samples.last().copied().unwrap_or(0)
    }

    fn summary(mut self) -> Summary {
        self.samples.sort_unstable();
        let at = |q: f64| {
            let i = ((self.samples.len() as f64) * q) as usize;
            self.samples[i.min(self.samples.len() - 1)] as f64
        };
        Summary {
            p50: at(0.5),
            p99: at(0.99),
            p999: at(0.999),
            p9999: at(0.9999),
            waited_ms: self
                .samples
                .iter()
                .filter(|&&s| s > 100_000)
                .map(|&s| f64::from(s))
                .sum::<f64>()
                / 1e6,
            max: *self.samples.last().unwrap_or(&0) as f64,
            over_1us: self.samples.iter().filter(|&&s| s > 1_000).count(),
        }
    }
}

struct Summary {
    p50: f64,
    p99: f64,
    p999: f64,
    p9999: f64,
    /// Time spent in calls over 100 us.
    waited_ms: f64,
    max: f64,
    over_1us: usize,
}

fn print_row(name: &str, s: &Summary, waits: u64, extra: &str) {
    println!(
        "| {name:<40} | {:>6.0} | {:>6.0} | {:>6.0} | {:>9.0} | {:>9.0} | {:>6} | {:>8.1} | {:>6} | {extra}",
        s.p50, s.p99, s.p999, s.p9999, s.max, s.over_1us, s.waited_ms, waits
    );
}

fn options(batch: u64) -> SourceOptions {
    SourceOptions {
        initial_batch: batch,
        min_batch: batch,
        max_batch: 1_000_000,
        target_batch_duration: Duration::from_millis(200),
        ..SourceOptions::default()
    }
}

/// One thread drawing `ids` IDs from a prefetching source.
fn prefetching(
    service: &IdGeneratorService,
    category: &IdCategory,
    ids: usize,
    work: &Work,
) -> Summary {
    let source = IdSource::open(service, category, options(10_000)).expect("open source");
    let mut hist = Histogram::with_capacity(ids);
    // The slowest call that did not wait on ZooKeeper. `next` is `try_next` and, only when that
    // finds no local ID, a blocking wait: the same calls, told apart.
    let mut max_local = 0u32;
    for _ in 0..ids {
        let t = Instant::now();
        let (id, local) = match source.try_next().expect("try_next") {
            Some(id) => (id, true),
            None => (source.next().expect("next"), false),
        };
        black_box(id);
        hist.record(t);
        if local {
            max_local = max_local.max(hist.last());
        }
        work.run();
    }
    let stats = source.stats();
    source.close().expect("close");
    let s = hist.summary();
    print_row(
        "IdSource::next, 1 thread",
        &s,
        stats.waits,
        &format!(
            "slowest call without a wait {:.1} us; {} batches {:?}",
            f64::from(max_local) / 1e3,
            stats.refills,
            short(&stats.batches)
        ),
    );
    s
}

/// `threads` threads sharing one source.
fn prefetching_shared(
    service: &IdGeneratorService,
    category: &IdCategory,
    ids: usize,
    threads: usize,
    work: &Work,
) {
    let source = IdSource::open(service, category, options(10_000)).expect("open source");
    let hists: Vec<Histogram> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let source = &source;
                scope.spawn(move || {
                    let mut hist = Histogram::with_capacity(ids / threads);
                    for _ in 0..ids / threads {
                        let t = Instant::now();
                        black_box(source.next().expect("next"));
                        hist.record(t);
                        work.run();
                    }
                    hist
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let stats = source.stats();
    source.close().expect("close");
    let mut all = Histogram::with_capacity(ids);
    for h in hists {
        all.samples.extend(h.samples);
    }
    print_row(
        &format!("IdSource::next, {threads} threads, 1 source"),
        &all.summary(),
        stats.waits,
        &format!("{} batches {:?}", stats.refills, short(&stats.batches)),
    );
}

/// The non-prefetching path: a batch from `take_ids`, a blocking `take_ids` when it runs out.
fn taking(service: &IdGeneratorService, category: &IdCategory, ids: usize, work: &Work) -> Summary {
    const BATCH: u64 = 10_000;
    let mut set = service.take_ids(category, BATCH).expect("take");
    let mut hist = Histogram::with_capacity(ids);
    let mut takes = 0u64;
    let mut max_local = 0u32;
    for _ in 0..ids {
        let t = Instant::now();
        let mut local = true;
        let id = match set.take_id() {
            Some(id) => id,
            None => {
                local = false;
                takes += 1;
                set = service.take_ids(category, BATCH).expect("take");
                set.take_id().expect("a fresh batch")
            }
        };
        black_box(id);
        hist.record(t);
        if local {
            max_local = max_local.max(hist.last());
        }
        work.run();
    }
    service.push_ids(&mut set).expect("push");
    let s = hist.summary();
    print_row(
        "take_ids(10000) + IdSet::take_id",
        &s,
        takes,
        &format!(
            "slowest call without a wait {:.1} us; a blocking take per 10000 IDs",
            f64::from(max_local) / 1e3
        ),
    );
    s
}

/// The timer and the work alone, around no take at all: the machine's noise floor.
fn noise_floor(ids: usize, work: &Work) {
    let mut hist = Histogram::with_capacity(ids);
    for i in 0..ids {
        let t = Instant::now();
        black_box(i);
        hist.record(t);
        work.run();
    }
    print_row("(noise floor: timer only)", &hist.summary(), 0, "");
}

fn short(batches: &[u64]) -> Vec<u64> {
    let mut v: Vec<u64> = batches.iter().take(6).copied().collect();
    if batches.len() > 6 {
        v.push(*batches.last().unwrap_or(&0));
    }
    v
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let ids = env_or("PREFETCH_BENCH_IDS", 2_000_000) as usize;
    let work_ns = env_or("PREFETCH_BENCH_WORK_NS", 200);
    let work = Work::calibrate(work_ns);
    // PREFETCH_BENCH_CONNECT (such as `mem:`) replaces the ZooKeeper server, to tell the
    // source's own stalls from those of a JVM sharing the cores.
    let (_zk, connect) = match std::env::var("PREFETCH_BENCH_CONNECT") {
        Ok(connect) => (None, connect),
        Err(_) => {
            let zk = support::ZkServer::start();
            let connect = zk.connect_string();
            (Some(zk), connect)
        }
    };
    let service = IdGeneratorService::connect(
        &connect,
        &ConnectOptions {
            session_timeout: Duration::from_secs(10),
            digest_auth: None,
            ..ConnectOptions::default()
        },
        ServiceOptions::default(),
    )
    .expect("connect");
    let category = IdCategory::new("/bench/prefetch").expect("category");
    service
        .create_category(&category, &CategorySpec::new(1, i64::MAX))
        .expect("create");
    // Warm-up, not printed.
    let warm = IdSource::open(&service, &category, options(1_000)).expect("open");
    for _ in 0..100_000 {
        black_box(warm.next().expect("next"));
    }
    warm.close().expect("close");

    println!("per-ID take latency, {ids} IDs per row, ~{work_ns} ns of work between IDs, store {connect} (ns)");
    println!(
        "| {:<40} | {:>6} | {:>6} | {:>6} | {:>9} | {:>9} | {:>6} | {:>8} | {:>6} | notes",
        "path", "p50", "p99", "p99.9", "p99.99", "max", ">1us", ">100us ms", "waits"
    );
    println!(
        "|{:-<42}|{:-<8}|{:-<8}|{:-<8}|{:-<11}|{:-<11}|{:-<8}|{:-<10}|{:-<8}|------",
        "", "", "", "", "", "", "", "", ""
    );
    noise_floor(ids, &work);
    // Interleaved twice so that both paths see the same conditions.
    let mut pairs = Vec::new();
    for _ in 0..2 {
        let take = taking(&service, &category, ids, &work);
        let prefetch = prefetching(&service, &category, ids, &work);
        pairs.push((prefetch, take));
    }
    prefetching_shared(&service, &category, ids, 2, &work);
    prefetching_shared(&service, &category, ids, 4, &work);
    noise_floor(ids, &work);
    for (p, t) in &pairs {
        println!(
            "ratio prefetch / take: p50 {:.2}x, p99.9 {:.2}x, p99.99 {:.4}x, max {:.3}x, time in calls over 100 us {:.4}x",
            p.p50 / t.p50,
            p.p999 / t.p999,
            p.p9999 / t.p9999,
            p.max / t.max,
            p.waited_ms / t.waited_ms.max(1e-9)
        );
    }
    c_next_allocations(&connect);
    let info = service.pool_info(&category).expect("info");
    println!(
        "(pool after the runs: {} free ranges; every source was closed)",
        info.free.len()
    );
}
