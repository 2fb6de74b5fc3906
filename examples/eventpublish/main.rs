//! The seed's eventpublish job, runnable: worker processes (like map tasks) each run threads
//! that take a batch of IDs, assign one to every event they publish, and push the leftovers back
//! in a `finally`-like guard. Afterwards the parent checks every worker's ledger against the
//! final pool and prints a summary: every ID unique, nothing lost, leftovers recycled.
//!
//! ```text
//! cargo run --release --example eventpublish                      # embedded file store
//! cargo run --release --example eventpublish -- --connect 127.0.0.1:2181
//! ```

mod ledger;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::thread;
use std::time::{Duration, Instant};
use zooid::CategorySpec;

use clap::{Args, Parser, Subcommand};
use ledger::Ledger;
use zooid::blocking::IdGeneratorService;
use zooid::{ConnectOptions, IdCategory, IdSet, ServiceOptions, ZooidError};

#[derive(Parser)]
#[command(about = "Run the eventpublish job on zooid and check the IDs it assigned")]
struct Cli {
    #[command(subcommand)]
    worker: Option<Role>,
    #[command(flatten)]
    job: Job,
    /// Worker processes to start.
    #[arg(long, default_value_t = 4)]
    processes: usize,
    /// Category bounds: IDs 1..=MAX_ID.
    #[arg(long, default_value_t = 4_294_967_295)]
    max_id: i64,
}

#[derive(Subcommand)]
enum Role {
    /// One worker process (started by the parent).
    #[command(hide = true)]
    Worker {
        #[arg(long)]
        index: usize,
    },
}

#[derive(Args, Clone)]
struct Job {
    /// ZooKeeper connect string, `file:DIR` or `mem:`; default: a file store in a temp dir.
    #[arg(long, env = "ZOOID_CONNECT")]
    connect: Option<String>,
    /// Category path; default: a fresh one per run.
    #[arg(long)]
    category: Option<String>,
    /// Threads per worker process, sharing one service.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Tasks each thread runs one after another (each a publishEvents call).
    #[arg(long, default_value_t = 6)]
    tasks: usize,
    /// Mean events per task (each task publishes between half and one and a half times this).
    #[arg(long, default_value_t = 25_000)]
    events: u64,
    /// IDs per takeIDs call.
    #[arg(long, default_value_t = 10_000)]
    batch: u64,
    /// Directory for the workers' ledgers; default: a temp dir.
    #[arg(long)]
    ledger_dir: Option<PathBuf>,
    /// ZooKeeper session timeout in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    session_timeout_ms: u64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.worker {
        Some(Role::Worker { index }) => worker(&cli.job, index),
        None => parent(&cli),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(err) => {
            eprintln!("eventpublish: error: {err}");
            ExitCode::from(2)
        }
    }
}

type AnyError = Box<dyn std::error::Error>;

fn open_service(job: &Job) -> zooid::Result<IdGeneratorService> {
    let options = ConnectOptions {
        session_timeout: Duration::from_millis(job.session_timeout_ms),
        digest_auth: None,
        ..ConnectOptions::default()
    };
    IdGeneratorService::connect(
        job.connect.as_deref().unwrap_or("mem:"),
        &options,
        ServiceOptions::default(),
    )
}

fn parent(cli: &Cli) -> Result<bool, AnyError> {
    let scratch = tempfile::tempdir()?;
    let mut job = cli.job.clone();
    let connect = job
        .connect
        .get_or_insert_with(|| format!("file:{}", scratch.path().join("store").display()))
        .clone();
    if connect.starts_with("mem:") {
        return Err(
            "the workers are separate processes: use a file: store or ZooKeeper, not mem:".into(),
        );
    }
    let ledger_dir = job
        .ledger_dir
        .get_or_insert_with(|| scratch.path().join("ledgers"))
        .clone();
    std::fs::create_dir_all(&ledger_dir)?;
    let category = job
        .category
        .get_or_insert_with(|| format!("/zooid/eventpublish/run-{:016x}", rand::random::<u64>()))
        .clone();

    let service = open_service(&job)?;
    let cat = IdCategory::new(category.clone())?;
    service.create_category(&cat, &CategorySpec::new(1, cli.max_id))?;

    let started = Instant::now();
    let exe = std::env::current_exe()?;
    let mut children = Vec::new();
    for index in 0..cli.processes {
        children.push(worker_command(&exe, &job, index).spawn()?);
    }
    let mut failed_workers = 0;
    for mut child in children {
        if !child.wait()?.success() {
            failed_workers += 1;
        }
    }
    let elapsed = started.elapsed();

    let info = service.pool_info(&cat)?;
    let report = ledger::check(&ledger_dir, info.bounds, &info.free)?;
    let mut problems = report.problems.clone();
    if failed_workers > 0 {
        problems.push(format!("{failed_workers} worker processes failed"));
    }
    if report.unaccounted != 0 || report.leaked != 0 {
        problems.push(format!(
            "{} IDs unaccounted for, {} leaked",
            report.unaccounted, report.leaked
        ));
    }
    println!("eventpublish on {connect}, category {category}");
    println!(
        "  {:<40}{}",
        "workers (processes x threads)",
        format_args!("{} x {}", cli.processes, job.threads)
    );
    let rows = [
        ("events published", report.used),
        ("IDs handed out (batches)", report.handed_out),
        ("unique IDs assigned", report.used - report.duplicates),
        ("duplicate IDs", report.duplicates),
        ("IDs pushed back", report.pushed),
        ("pushed-back IDs reassigned (recycled)", report.recycled),
        ("IDs leaked", report.leaked + report.unaccounted),
        ("IDs free at the end", report.free),
    ];
    println!("  {:<40}{}", "takeIDs calls", report.batches);
    for (name, value) in rows {
        println!("  {name:<40}{value}");
    }
    println!(
        "  {:<40}{}",
        "conservation",
        format_args!(
            "{} used + {} free = {} in category",
            report.used, report.free, report.category_size
        )
    );
    println!(
        "  {:<40}{:.2?} ({:.0} events/s)",
        "wall time",
        elapsed,
        report.used as f64 / elapsed.as_secs_f64()
    );
    if report.recycled == 0 {
        problems.push("no pushed-back ID was reassigned: recycling did not happen".into());
    }
    if problems.is_empty() {
        println!("  check: OK (every event has an ID, no ID repeats, leftovers were recycled, nothing lost)");
        Ok(true)
    } else {
        for problem in &problems {
            println!("  check FAILED: {problem}");
        }
        Ok(false)
    }
}

fn worker_command(exe: &Path, job: &Job, index: usize) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg("--connect")
        .arg(job.connect.as_deref().unwrap_or_default());
    cmd.arg("--category")
        .arg(job.category.as_deref().unwrap_or_default());
    cmd.arg("--threads").arg(job.threads.to_string());
    cmd.arg("--tasks").arg(job.tasks.to_string());
    cmd.arg("--events").arg(job.events.to_string());
    cmd.arg("--batch").arg(job.batch.to_string());
    cmd.arg("--session-timeout-ms")
        .arg(job.session_timeout_ms.to_string());
    if let Some(dir) = &job.ledger_dir {
        cmd.arg("--ledger-dir").arg(dir);
    }
    cmd.arg("worker").arg("--index").arg(index.to_string());
    cmd
}

/// One worker process: `threads` threads share one service and run `tasks` tasks each.
fn worker(job: &Job, index: usize) -> Result<bool, AnyError> {
    let service = open_service(job)?;
    let cat = IdCategory::new(job.category.clone().ok_or("worker needs --category")?)?;
    let dir = job.ledger_dir.clone().ok_or("worker needs --ledger-dir")?;
    thread::scope(|scope| {
        let mut handles = Vec::new();
        for t in 0..job.threads {
            let (service, cat, dir) = (&service, &cat, &dir);
            handles.push(scope.spawn(move || -> Result<(), String> {
                let mut ledger = Ledger::open(&dir.join(format!("p{index}-t{t}.log")))
                    .map_err(|e| e.to_string())?;
                for task in 0..job.tasks {
                    let spread = (index * 31 + t * 17 + task * 7) % 101;
                    let events = job.events / 2 + job.events * spread as u64 / 100;
                    publish_events(service, cat, events, job.batch, &mut ledger)?;
                }
                Ok(())
            }));
        }
        let mut ok = true;
        for handle in handles {
            match handle.join() {
                Ok(Ok(())) => {}
                Ok(Err(err)) => {
                    eprintln!("eventpublish worker {index}: {err}");
                    ok = false;
                }
                Err(_) => ok = false,
            }
        }
        Ok(ok)
    })
}

/// Pushes the unused IDs back when dropped, whatever happened: the seed's `finally` block.
struct Leftovers<'a> {
    service: &'a IdGeneratorService,
    ledger: &'a mut Ledger,
    set: Option<IdSet>,
}

impl Drop for Leftovers<'_> {
    fn drop(&mut self) {
        let Some(set) = self.set.as_mut().filter(|s| s.has_more_ids()) else {
            return;
        };
        let ranges = set.ranges();
        let outcome = retrying(self.ledger, || self.service.push_ids(set));
        let _ = match outcome {
            Ok(()) => self.ledger.pushed(&ranges),
            Err(err) => {
                eprintln!("eventpublish: leftovers {ranges:?} not recycled: {err}");
                self.ledger.leaked(&ranges)
            }
        };
    }
}

/// The seed's `publishEvents`: assign an ID to each event, taking batches as needed.
fn publish_events(
    service: &IdGeneratorService,
    cat: &IdCategory,
    events: u64,
    batch: u64,
    ledger: &mut Ledger,
) -> Result<(), String> {
    let mut guard = Leftovers {
        service,
        ledger,
        set: None,
    };
    for _ in 0..events {
        if !guard.set.as_ref().is_some_and(IdSet::has_more_ids) {
            let set = loop {
                match retrying(guard.ledger, || service.take_ids(cat, batch)) {
                    Ok(set) => break set,
                    Err(ZooidError::OutcomeUnknown { ids, .. }) => {
                        guard.ledger.leaked(&ids).map_err(|e| e.to_string())?
                    }
                    Err(err) => return Err(err.to_string()),
                }
            };
            guard
                .ledger
                .taken(&set.ranges())
                .map_err(|e| e.to_string())?;
            guard.set = Some(set);
        }
        let id = guard
            .set
            .as_mut()
            .and_then(IdSet::take_id)
            .ok_or("an ID set with more IDs gave none")?;
        // "Publishing" the event is recording its ID.
        guard.ledger.used(id).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Runs `op`, riding out errors that clear up by themselves (disconnects, timeouts, contention)
/// for up to two minutes.
fn retrying<T>(ledger: &mut Ledger, mut op: impl FnMut() -> zooid::Result<T>) -> zooid::Result<T> {
    let started = Instant::now();
    loop {
        match op() {
            Err(
                err @ (ZooidError::ConnectionLost { .. }
                | ZooidError::Timeout { .. }
                | ZooidError::Contention { .. }),
            ) if started.elapsed() < Duration::from_secs(120) => {
                let kind = match err {
                    ZooidError::ConnectionLost { .. } => "connection-lost",
                    ZooidError::Timeout { .. } => "timeout",
                    _ => "contention",
                };
                let _ = ledger.error(kind);
                thread::sleep(Duration::from_millis(200));
            }
            other => return other,
        }
    }
}
