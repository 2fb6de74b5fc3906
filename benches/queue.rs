//! `cargo bench --bench queue`: the work queue's throughput and ZooKeeper requests per item,
//! next to the seed's design (plain sequential creates; every consumer watching the queue) and
//! to a put guarded by one shared version (the queue node's), all on the same real ZooKeeper
//! server (started on loopback for the run), in the same run.
//!
//! Each row: PRODUCERS handles put ITEMS items concurrently (items/s put), then CONSUMERS
//! consumers, each with its own session, claim and complete them all (items/s completed);
//! requests per item counted on the client side (a `multi` is one request; watch notifications
//! are counted apart).

use zooid_test_support as support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zooid::queue::{QueueOptions, WorkQueue};
use zooid::{ConnectOptions, Session};
use zookeeper_client::{Acls, Client, CreateMode, MultiWriteError};

const ITEMS: u64 = 1000;
const PRODUCERS: usize = 4;

fn options() -> ConnectOptions {
    ConnectOptions {
        session_timeout: Duration::from_secs(10),
        digest_auth: None,
        ..ConnectOptions::default()
    }
}

struct Row {
    design: &'static str,
    consumers: usize,
    put_per_s: f64,
    put_reqs: f64,
    done_per_s: f64,
    done_reqs: f64,
    events: f64,
}

fn print(r: &Row) {
    println!(
        "| {:<34} | {:>3} | {:>9.0} | {:>8.2} | {:>9.0} | {:>8.2} | {:>8.2} |",
        r.design, r.consumers, r.put_per_s, r.put_reqs, r.done_per_s, r.done_reqs, r.events
    );
}

async fn zooid_row(connect: &str, consumers: usize, run: usize) -> Row {
    let path = format!("/bench/zooid-{run}");
    let mut producers = Vec::new();
    let mut sessions = Vec::new();
    for _ in 0..PRODUCERS {
        let s = Session::connect(connect, &options()).await.unwrap();
        producers
            .push(WorkQueue::open(s.clone().into_zk(), &path, QueueOptions::default()).unwrap());
        sessions.push(s);
    }
    // Create the queue first, so the timing does not include it.
    producers[0].put(b"warm").await.unwrap();
    let t = Instant::now();
    let mut tasks = Vec::new();
    for (i, q) in producers.iter().enumerate() {
        let q = q.clone();
        let n = ITEMS / PRODUCERS as u64 + u64::from(i == 0) * (ITEMS % PRODUCERS as u64);
        tasks.push(tokio::spawn(async move {
            for _ in 0..n {
                q.put(&[b'x'; 100]).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let put_s = t.elapsed().as_secs_f64();
    let put_reqs: u64 = producers.iter().map(|q| q.stats().requests).sum::<u64>() - 4;
    let total = ITEMS + 1;
    let done = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    let mut tasks = Vec::new();
    for _ in 0..consumers {
        let s = Session::connect(connect, &options()).await.unwrap();
        let q = WorkQueue::open(s.clone().into_zk(), &path, QueueOptions::default()).unwrap();
        handles.push(q.clone());
        let done = done.clone();
        sessions.push(s);
        tasks.push(tokio::spawn(async move {
            while done.load(Ordering::Relaxed) < total {
                if let Ok(Some(c)) = q.claim(Some(Duration::from_millis(200))).await {
                    c.complete().await.unwrap();
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    let t = Instant::now();
    for task in tasks {
        task.await.unwrap();
    }
    let done_s = t.elapsed().as_secs_f64();
    let stats: Vec<_> = handles.iter().map(|q| q.stats()).collect();
    Row {
        design: "zooid",
        consumers,
        put_per_s: ITEMS as f64 / put_s,
        put_reqs: put_reqs as f64 / ITEMS as f64,
        done_per_s: total as f64 / done_s,
        done_reqs: stats.iter().map(|s| s.requests).sum::<u64>() as f64 / total as f64,
        events: stats.iter().map(|s| s.watch_events).sum::<u64>() as f64 / total as f64,
    }
}

/// The seed's put: one plain sequential create (a lost reply cannot be resolved).
async fn seed_row(connect: &str, consumers: usize, run: usize) -> Row {
    let base = format!("/bench/seed-{run}");
    let dir = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let admin = Client::connect(connect).await.unwrap();
    admin.mkdir(&format!("{base}/items"), &dir).await.unwrap();
    admin.mkdir(&format!("{base}/locks"), &dir).await.unwrap();
    let t = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..PRODUCERS {
        let client = Client::connect(connect).await.unwrap();
        let prefix = format!("{base}/items/q-");
        let n = ITEMS / PRODUCERS as u64 + u64::from(i == 0) * (ITEMS % PRODUCERS as u64);
        tasks.push(tokio::spawn(async move {
            let seq = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
            for _ in 0..n {
                client.create(&prefix, &[b'x'; 100], &seq).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let put_s = t.elapsed().as_secs_f64();
    let done = Arc::new(AtomicU64::new(0));
    let requests = Arc::new(AtomicU64::new(0));
    let events = Arc::new(AtomicU64::new(0));
    let t = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..consumers {
        let client = Client::connect(connect).await.unwrap();
        let (base, done, requests, events) =
            (base.clone(), done.clone(), requests.clone(), events.clone());
        tasks.push(tokio::spawn(async move {
            let items = format!("{base}/items");
            let locks = format!("{base}/locks");
            let eph = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
            while done.load(Ordering::Relaxed) < ITEMS {
                requests.fetch_add(1, Ordering::Relaxed);
                let (mut children, watcher) = client.list_and_watch_children(&items).await.unwrap();
                children.sort();
                for child in children {
                    let lock = format!("{locks}/{child}");
                    requests.fetch_add(1, Ordering::Relaxed);
                    if client.check_stat(&lock).await.unwrap().is_some() {
                        continue;
                    }
                    requests.fetch_add(1, Ordering::Relaxed);
                    if client.create(&lock, b"seed", &eph).await.is_ok() {
                        requests.fetch_add(3, Ordering::Relaxed);
                        let item = format!("{items}/{child}");
                        if client.get_data(&item).await.is_ok() {
                            client.delete(&item, None).await.unwrap();
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                        let _ = client.delete(&lock, None).await;
                    }
                }
                if done.load(Ordering::Relaxed) >= ITEMS {
                    break;
                }
                let _ = tokio::time::timeout(Duration::from_millis(500), watcher.changed()).await;
                events.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let done_s = t.elapsed().as_secs_f64();
    Row {
        design: "seed (watch-all, plain create)",
        consumers,
        put_per_s: ITEMS as f64 / put_s,
        put_reqs: 1.0,
        done_per_s: ITEMS as f64 / done_s,
        done_reqs: requests.load(Ordering::Relaxed) as f64 / ITEMS as f64,
        events: events.load(Ordering::Relaxed) as f64 / ITEMS as f64,
    }
}

/// Puts guarded by ONE shared version (the queue node's data version): read it, then
/// `multi[setData(queue, V), create(item)]`, re-read on BADVERSION. Every put conflicts with
/// every concurrent one: the cost of serializing all producers.
async fn shared_guard_puts(connect: &str, run: usize) -> (f64, f64) {
    let base = format!("/bench/shared-{run}");
    let dir = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let admin = Client::connect(connect).await.unwrap();
    admin.mkdir(&format!("{base}/items"), &dir).await.unwrap();
    let requests = Arc::new(AtomicU64::new(0));
    let t = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..PRODUCERS {
        let client = Client::connect(connect).await.unwrap();
        let (base, requests) = (base.clone(), requests.clone());
        let n = ITEMS / PRODUCERS as u64 + u64::from(i == 0) * (ITEMS % PRODUCERS as u64);
        tasks.push(tokio::spawn(async move {
            let seq = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
            let prefix = format!("{base}/items/i-");
            for _ in 0..n {
                loop {
                    requests.fetch_add(2, Ordering::Relaxed);
                    let (_, stat) = client.get_data(&base).await.unwrap();
                    let mut multi = client.new_multi_writer();
                    multi.add_set_data(&base, b"", Some(stat.version)).unwrap();
                    multi.add_create(&prefix, &[b'x'; 100], &seq).unwrap();
                    match multi.commit().await {
                        Ok(_) => break,
                        Err(MultiWriteError::OperationFailed { index: 0, .. }) => continue,
                        Err(e) => panic!("{e}"),
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    (
        ITEMS as f64 / t.elapsed().as_secs_f64(),
        requests.load(Ordering::Relaxed) as f64 / ITEMS as f64,
    )
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` would pass nothing: run only for bench.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let zk = support::ZkServer::start();
    let connect = zk.connect_string();
    println!(
        "work queue: {ITEMS} items of 100 bytes, {PRODUCERS} producers (own sessions), then N consumers (own sessions); one ZooKeeper server on loopback"
    );
    println!(
        "| {:<34} | {:>3} | {:>9} | {:>8} | {:>9} | {:>8} | {:>8} |",
        "design", "N", "put/s", "req/put", "done/s", "req/item", "wake/item"
    );
    println!(
        "|{:-<36}|{:-<5}|{:-<11}|{:-<10}|{:-<11}|{:-<10}|{:-<10}|",
        "", "", "", "", "", "", ""
    );
    rt.block_on(async {
        // Warm the server (JIT, allocation) with one untimed round.
        zooid_row(&connect, 4, 100).await;
        seed_row(&connect, 4, 100).await;
        let mut run = 0;
        for consumers in [1, 4, 16] {
            run += 1;
            print(&zooid_row(&connect, consumers, run).await);
            print(&seed_row(&connect, consumers, run).await);
        }
        let (per_s, reqs) = shared_guard_puts(&connect, 0).await;
        println!(
            "puts with one shared guard version ({PRODUCERS} producers): {per_s:.0} put/s, {reqs:.2} requests per put"
        );
    });
}
