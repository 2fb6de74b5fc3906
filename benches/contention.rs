//! `cargo bench --bench contention`: takes under contention from 1, 4, 16 and 32 processes, each
//! with its own ZooKeeper session, on the same server in one run, interleaved:
//!
//! - `zooid`: `take_ids(category, batch)` with default options (examples/contender.rs);
//! - `zooid-fair`: the same with `ServiceOptions::fair_pacing` (src/pace.rs);
//! - `zooid-blocks`: the same on a category in block allocation, blocks of one batch
//!   (`create_category_blocks`, src/blocks.rs);
//! - `naive`: the seed-000 loop on a legacy counter: get, add, set with the read version, retry at
//!   once on `BADVERSION` (examples/contender.rs);
//! - `curator`: Curator's `DistributedAtomicLong.add(batch)` (java/curator-bench), N clients with
//!   their own sessions in one JVM.
//!
//! Each setup (a standalone server; a 3-server ensemble reached through one follower) runs every
//! client count and mode for a window. Printed per run: completed takes/s, its ratio to the same
//! mode at 1 process, failed writes per take counted on the server (zxid delta minus completed
//! takes: every write the server processes, failed compare-and-sets included, takes a zxid),
//! p50 / p99 / max take latency, and fairness (the fewest takes any process completed ÷ the mean;
//! processes that completed none). A CSV of the rows goes to `target/contention.csv`
//! (`scripts/plot-contention.py` draws docs/contention.png from it).
//!
//! ```text
//! cargo build --release --example contender
//! mvn -B -q -f java/curator-bench/pom.xml package dependency:copy-dependencies
//! cargo bench --bench contention -- [--clients 1,4,16,32] [--window-ms 6000] [--batch 1000]
//!     [--modes zooid,zooid-blocks,zooid-fair,naive,curator] [--setups standalone,ensemble] [--rounds 1]
//! ```
//!
//! Without the Curator build the `curator` rows are skipped (and say so).
//!
//! `--burst TASKS` runs the Hadoop-shaped burst instead, on a standalone server, once with the
//! default options and once with `fair_pacing`: TASKS sessions in this process each take one
//! batch of `--burst-batch` (10,000) IDs at the same moment, then each pushes back its last 10 %
//! at the same moment. Printed: time until every take was served, the same for the pushes,
//! failed writes per operation (server side), errors, and the pool's free ranges at the end.

use zooid_test_support as support;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use support::{four_letter_word, ZkEnsemble, ZkServer};
use zooid::{ConnectOptions, IdCategory, IdGeneratorService, ServiceOptions};

/// How long processes may take to connect and warm up.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

struct Args {
    clients: Vec<usize>,
    window_ms: u64,
    batch: u64,
    modes: Vec<String>,
    setups: Vec<String>,
    rounds: usize,
    burst: Option<usize>,
    burst_batch: u64,
}

fn parse_args() -> Args {
    let mut args = Args {
        clients: vec![1, 4, 16, 32],
        window_ms: 6000,
        batch: 1000,
        modes: vec![
            "zooid".into(),
            "zooid-blocks".into(),
            "zooid-fair".into(),
            "naive".into(),
            "curator".into(),
        ],
        setups: vec!["standalone".into(), "ensemble".into()],
        rounds: 1,
        burst: None,
        burst_batch: 10_000,
    };
    let list = |v: &str| v.split(',').map(str::to_string).collect::<Vec<_>>();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--clients" => {
                args.clients = list(&value())
                    .iter()
                    .map(|c| c.parse().expect("--clients: numbers"))
                    .collect()
            }
            "--window-ms" => args.window_ms = value().parse().expect("--window-ms: a number"),
            "--batch" => args.batch = value().parse().expect("--batch: a number"),
            "--modes" => args.modes = list(&value()),
            "--setups" => args.setups = list(&value()),
            "--rounds" => args.rounds = value().parse().expect("--rounds: a number"),
            "--burst" => args.burst = Some(value().parse().expect("--burst: a number")),
            "--burst-batch" => args.burst_batch = value().parse().expect("--burst-batch: a number"),
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    args
}

/// A child process killed by PID when dropped, and by the kernel if the benchmark dies.
struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Worker {
    fn spawn(mut command: Command, lines: mpsc::Sender<String>) -> Worker {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // SAFETY: prctl is async-signal-safe; it only asks the kernel to SIGKILL the child when
        // this process dies.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = command.spawn().expect("spawn a contender");
        let stdout = child.stdout.take().expect("piped stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Worker { child, stdin }
    }

    fn send(&mut self, line: &str) {
        if let Some(stdin) = self.stdin.as_mut() {
            let _ = writeln!(stdin, "{line}");
            let _ = stdin.flush();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        drop(self.stdin.take());
        for _ in 0..100 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One client's `done` line.
struct Done {
    takes: u64,
    errors: u64,
    latencies_us: Vec<u64>,
}

fn parse_done(line: &str) -> Option<Done> {
    let mut fields = line.strip_prefix("done ")?.split_whitespace();
    let takes = fields.next()?.parse().ok()?;
    let errors = fields.next()?.parse().ok()?;
    let _ids: u64 = fields.next()?.parse().ok()?;
    let latencies_us = fields.filter_map(|f| f.parse().ok()).collect();
    Some(Done {
        takes,
        errors,
        latencies_us,
    })
}

/// The server's last zxid (`srvr`).
fn zxid(addr: std::net::SocketAddr) -> u64 {
    let out = four_letter_word(addr, "srvr", Duration::from_secs(5)).expect("srvr");
    let hex = out
        .lines()
        .find_map(|l| l.strip_prefix("Zxid: 0x"))
        .unwrap_or_else(|| panic!("no Zxid in srvr output:\n{out}"));
    u64::from_str_radix(hex.trim(), 16).expect("hex zxid")
}

struct Row {
    setup: String,
    mode: String,
    clients: usize,
    takes_per_s: f64,
    failed_per_take: f64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    min_over_mean: f64,
    starved: usize,
    errors: u64,
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn contender_binary() -> PathBuf {
    let path = repo().join("target/release/examples/contender");
    assert!(
        path.exists(),
        "{} missing: run `cargo build --release --example contender` first",
        path.display()
    );
    path
}

fn curator_classpath() -> Option<String> {
    let dir = repo().join("java/curator-bench/target");
    let classes = dir.join("classes");
    let deps = dir.join("dependency");
    (classes.exists() && deps.exists())
        .then(|| format!("{}:{}/*", classes.to_string_lossy(), deps.to_string_lossy()))
}

#[allow(clippy::too_many_arguments)]
fn run_one(
    setup: &str,
    connect: &str,
    zxid_addr: std::net::SocketAddr,
    mode: &str,
    path: &str,
    clients: usize,
    args: &Args,
) -> Option<Row> {
    let (tx, rx) = mpsc::channel();
    let mut workers = Vec::new();
    let expected_ready = match mode {
        "zooid" | "zooid-fair" | "zooid-blocks" | "naive" => {
            for _ in 0..clients {
                let mut command = Command::new(contender_binary());
                command.args([
                    "--connect",
                    connect,
                    "--mode",
                    mode,
                    "--path",
                    path,
                    "--batch",
                    &args.batch.to_string(),
                    "--window-ms",
                    &args.window_ms.to_string(),
                ]);
                workers.push(Worker::spawn(command, tx.clone()));
            }
            clients
        }
        "curator" => {
            let Some(classpath) = curator_classpath() else {
                eprintln!(
                    "curator skipped: run `mvn -B -q -f java/curator-bench/pom.xml package dependency:copy-dependencies`"
                );
                return None;
            };
            let mut command = Command::new("java");
            command.args([
                "-Xss512k",
                "-cp",
                &classpath,
                "io.zooid.bench.CuratorContender",
                connect,
                path,
                &clients.to_string(),
                &args.batch.to_string(),
                &args.window_ms.to_string(),
            ]);
            workers.push(Worker::spawn(command, tx.clone()));
            1
        }
        other => panic!("unknown mode {other}"),
    };
    drop(tx);
    let mut ready = 0;
    while ready < expected_ready {
        match rx.recv_timeout(READY_TIMEOUT) {
            Ok(line) if line == "ready" => ready += 1,
            Ok(other) => eprintln!("{mode}: {other}"),
            Err(err) => panic!("{mode} x{clients}: only {ready} ready ({err})"),
        }
    }
    let before = zxid(zxid_addr);
    for w in &mut workers {
        w.send("go");
    }
    let mut done = Vec::new();
    let wait = Duration::from_millis(args.window_ms) + Duration::from_secs(120);
    while done.len() < clients {
        match rx.recv_timeout(wait) {
            Ok(line) => match parse_done(&line) {
                Some(d) => done.push(d),
                None => eprintln!("{mode}: {line}"),
            },
            Err(err) => panic!("{mode} x{clients}: only {} done ({err})", done.len()),
        }
    }
    let after = zxid(zxid_addr);
    drop(workers);

    let takes: u64 = done.iter().map(|d| d.takes).sum();
    let errors: u64 = done.iter().map(|d| d.errors).sum();
    let mut latencies: Vec<u64> = done
        .iter()
        .flat_map(|d| d.latencies_us.iter().copied())
        .collect();
    latencies.sort_unstable();
    let mean = takes as f64 / clients as f64;
    let fewest = done.iter().map(|d| d.takes).min().unwrap_or(0);
    let writes = after - before;
    Some(Row {
        setup: setup.to_string(),
        mode: mode.to_string(),
        clients,
        takes_per_s: takes as f64 / (args.window_ms as f64 / 1000.0),
        failed_per_take: writes.saturating_sub(takes) as f64 / takes.max(1) as f64,
        p50_ms: percentile(&latencies, 0.5),
        p99_ms: percentile(&latencies, 0.99),
        max_ms: latencies.last().map_or(f64::NAN, |&l| l as f64 / 1000.0),
        min_over_mean: if mean > 0.0 {
            fewest as f64 / mean
        } else {
            0.0
        },
        starved: done.iter().filter(|d| d.takes == 0).count(),
        errors,
    })
}

/// Creates the node `mode` takes from, fresh for each run (so node sizes are the same).
fn prepare(connect: &str, mode: &str, path: &str, batch: u64) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        match mode {
            "zooid" | "zooid-fair" => {
                let service = IdGeneratorService::connect(
                    connect,
                    &ConnectOptions::default(),
                    ServiceOptions::default(),
                )
                .await
                .expect("connect");
                service
                    .create_category(&IdCategory::new(path).expect("category"), 1, i64::MAX / 2)
                    .await
                    .expect("create category");
            }
            "zooid-blocks" => {
                let service = IdGeneratorService::connect(
                    connect,
                    &ConnectOptions::default(),
                    ServiceOptions::default(),
                )
                .await
                .expect("connect");
                service
                    .create_category_blocks(
                        &IdCategory::new(path).expect("category"),
                        1,
                        i64::MAX / 2,
                        batch,
                    )
                    .await
                    .expect("create category");
            }
            "naive" => {
                let client = zookeeper_client::Client::connect(connect)
                    .await
                    .expect("connect");
                let options = zookeeper_client::CreateMode::Persistent
                    .with_acls(zookeeper_client::Acls::anyone_all());
                let parent = Path::new(path)
                    .parent()
                    .and_then(Path::to_str)
                    .expect("parent");
                client.mkdir(parent, &options).await.expect("mkdir");
                client
                    .create(path, &0i64.to_be_bytes(), &options)
                    .await
                    .expect("create counter");
            }
            _ => {} // Curator creates its node on the first add (the warm-up, before the window).
        }
    });
}

/// The Hadoop-shaped burst: `tasks` sessions take one batch each at once, then push back 10 %.
fn burst(tasks: usize, batch: u64) {
    let zk = ZkServer::start();
    let connect = zk.connect_string();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "burst: {tasks} sessions, each takes {batch} IDs at once, then pushes back 10 % at once\n"
    );
    println!("| options | all takes served in | failed writes per take | take errors | all pushes done in | failed writes per push | push errors | free ranges after |");
    println!("|---|---|---|---|---|---|---|---|");
    for (name, fair) in [("default", false), ("blocks", false), ("fair_pacing", true)] {
        rt.block_on(async {
            let options = ServiceOptions {
                fair_pacing: fair,
                ..ServiceOptions::default()
            };
            let category = IdCategory::new(format!("/burst/{name}")).expect("category");
            let open = (0..tasks).map(|_| {
                let connect = connect.clone();
                let options = options.clone();
                async move {
                    IdGeneratorService::connect(&connect, &ConnectOptions::default(), options).await
                }
            });
            let mut services = Vec::new();
            // Open the sessions 50 at a time (opening is not what is measured).
            let mut open = open.collect::<Vec<_>>().into_iter();
            loop {
                let chunk: Vec<_> = open.by_ref().take(50).collect();
                if chunk.is_empty() {
                    break;
                }
                for s in futures_join(chunk).await {
                    services.push(std::sync::Arc::new(s.expect("connect")));
                }
            }
            if name == "blocks" {
                services[0]
                    .create_category_blocks(&category, 1, i64::MAX / 2, batch)
                    .await
                    .expect("create");
            } else {
                services[0]
                    .create_category(&category, 1, i64::MAX / 2)
                    .await
                    .expect("create");
            }
            let before = zxid(zk.addr());
            let t = std::time::Instant::now();
            let takes = services.iter().map(|s| {
                let s = std::sync::Arc::clone(s);
                let category = category.clone();
                tokio::spawn(async move { s.take_ids(&category, batch).await })
            });
            let takes: Vec<_> = takes.collect();
            let mut sets = Vec::new();
            let mut take_errors = 0;
            for h in takes {
                match h.await.expect("task") {
                    Ok(set) => sets.push(set),
                    Err(_) => take_errors += 1,
                }
            }
            let take_time = t.elapsed();
            let take_writes = zxid(zk.addr()) - before;
            let failed_per_take =
                take_writes.saturating_sub(sets.len() as u64) as f64 / sets.len().max(1) as f64;

            let before = zxid(zk.addr());
            let t = std::time::Instant::now();
            let pushes: Vec<_> = sets
                .into_iter()
                .zip(services.iter())
                .map(|(mut set, s)| {
                    let s = std::sync::Arc::clone(s);
                    tokio::spawn(async move {
                        // Use 90 %, push back the rest.
                        let mut used = 0;
                        while used < batch - batch / 10 {
                            let Some(run) = set.take_run(batch - batch / 10 - used) else {
                                break;
                            };
                            used += run.len();
                        }
                        s.push_ids(&mut set).await
                    })
                })
                .collect();
            let pushed = pushes.len();
            let mut push_errors = 0;
            for h in pushes {
                if h.await.expect("task").is_err() {
                    push_errors += 1;
                }
            }
            let push_time = t.elapsed();
            let push_ok = pushed - push_errors;
            let failed_per_push = (zxid(zk.addr()) - before).saturating_sub(push_ok as u64) as f64
                / push_ok.max(1) as f64;
            let info = services[0].pool_info(&category).await.expect("pool info");
            println!(
                "| {name} | {:.2} s | {failed_per_take:.2} | {take_errors} | {:.2} s | {failed_per_push:.2} | {push_errors} | {} |",
                take_time.as_secs_f64(),
                push_time.as_secs_f64(),
                info.free.len()
            );
            for s in services {
                drop(std::sync::Arc::into_inner(s));
            }
        });
    }
}

/// Awaits every future of `futures` concurrently, in order.
async fn futures_join<F: std::future::Future + Send + 'static>(futures: Vec<F>) -> Vec<F::Output>
where
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await.expect("task"));
    }
    out
}

fn main() {
    let args = parse_args();
    if let Some(tasks) = args.burst {
        burst(tasks, args.burst_batch);
        return;
    }
    std::fs::create_dir_all(repo().join("target")).expect("target dir");
    let csv_path = repo().join("target/contention.csv");
    let mut csv = String::from(
        "setup,mode,clients,takes_per_s,ratio_to_1,failed_per_take,p50_ms,p99_ms,max_ms,min_over_mean,starved,errors\n",
    );
    println!(
        "batch {} IDs, window {} ms, {} round(s); failed writes counted on the server (zxid delta - completed takes)\n",
        args.batch, args.window_ms, args.rounds
    );
    println!("| setup | mode | procs | takes/s | ÷ at 1 | failed writes/take | p50 ms | p99 ms | max ms | fewest ÷ mean | starved | errors |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut run_no = 0;
    for setup in &args.setups {
        // Keep the servers alive for the whole setup; drop them after.
        let (standalone, ensemble);
        let (connect, zxid_addr) = match setup.as_str() {
            "standalone" => {
                standalone = ZkServer::start();
                (standalone.connect_string(), standalone.addr())
            }
            "ensemble" => {
                ensemble = ZkEnsemble::start(3);
                let leader = ensemble.wait_for_quorum(Duration::from_secs(60));
                let follower = (0..ensemble.len())
                    .find(|&i| i != leader)
                    .expect("a follower");
                (
                    ensemble.server_connect_string(follower),
                    ensemble.server_addr(leader),
                )
            }
            other => panic!("unknown setup {other}"),
        };
        let mut at_one: std::collections::HashMap<String, f64> = Default::default();
        for _round in 0..args.rounds {
            for &clients in &args.clients {
                for mode in &args.modes {
                    run_no += 1;
                    let path = format!("/bench/{mode}/run{run_no}");
                    prepare(&connect, mode, &path, args.batch);
                    let Some(row) =
                        run_one(setup, &connect, zxid_addr, mode, &path, clients, &args)
                    else {
                        continue;
                    };
                    if clients == 1 {
                        at_one.insert(mode.clone(), row.takes_per_s);
                    }
                    let ratio = at_one
                        .get(mode)
                        .map_or(f64::NAN, |one| row.takes_per_s / one);
                    println!(
                        "| {} | {} | {} | {:.0} | {:.2} | {:.2} | {:.1} | {:.1} | {:.0} | {:.2} | {} | {} |",
                        row.setup,
                        row.mode,
                        row.clients,
                        row.takes_per_s,
                        ratio,
                        row.failed_per_take,
                        row.p50_ms,
                        row.p99_ms,
                        row.max_ms,
                        row.min_over_mean,
                        row.starved,
                        row.errors
                    );
                    csv.push_str(&format!(
                        "{},{},{},{:.1},{:.3},{:.3},{:.2},{:.2},{:.1},{:.3},{},{}\n",
                        row.setup,
                        row.mode,
                        row.clients,
                        row.takes_per_s,
                        ratio,
                        row.failed_per_take,
                        row.p50_ms,
                        row.p99_ms,
                        row.max_ms,
                        row.min_over_mean,
                        row.starved,
                        row.errors
                    ));
                    std::fs::write(&csv_path, &csv).expect("write csv");
                }
            }
        }
    }
    println!("\nCSV: {}", csv_path.display());
}
