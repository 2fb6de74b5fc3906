//! The fault suite's workload (tests/faults/main.rs): one client process whose threads share one
//! blocking service and, until a stop file appears, take a batch, use part of it and push the
//! rest back, over and over.
//!
//! Each thread keeps a ledger in eventpublish's format (`T`, `U`, `P`, `L`, `E` lines;
//! examples/eventpublish/ledger.rs), with the `T` line fsynced before any taken ID is used, and an
//! `.ops` file with one line when an operation starts and one when it ends:
//!
//! ```text
//! > take 1732230000123                               (started, unix ms)
//! < take ok 100 1732230000123 1732230000140 0        (op, outcome, IDs, start, end, lost replies)
//! < push unknown 57 1732230000200 1732230004210 1    (OutcomeUnknown: the IDs are in an L line)
//! < take err:connection-lost 0 1732230000300 1732230003301 0
//! ```
//!
//! The `<` line ends with how many of the operation's writes lost their reply (and were then
//! resolved by the protocol, or ended in `unknown`), counted from zooid's own `reply lost` event,
//! which the blocking API emits on the calling thread. A process killed mid-operation leaves a
//! `>` line without its `<` line. zooid's log goes to stderr (`RUST_LOG`, default `zooid=info`).
//!
//! ```text
//! cargo run --example faultload -- --connect 127.0.0.1:2181 --category /faults/did \
//!     --dir /tmp/ledgers --name p0 --stop-file /tmp/ledgers/STOP
//! ```

#[allow(dead_code)]
#[path = "eventpublish/ledger.rs"]
mod ledger;

use std::cell::Cell;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use ledger::Ledger;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use zooid::blocking::IdGeneratorService;
use zooid::{ConnectOptions, IdCategory, IdSet, RetryPolicy, ServiceOptions, ZooidError};

#[derive(Parser, Clone)]
#[command(about = "Fault-suite workload: take, use and push back IDs until a stop file appears")]
struct Cli {
    /// ZooKeeper connect string (or `file:DIR`).
    #[arg(long)]
    connect: String,
    /// The category, which must exist.
    #[arg(long)]
    category: String,
    /// Directory for the ledgers (`NAME-tK.log`) and operation logs (`NAME-tK.ops`).
    #[arg(long)]
    dir: PathBuf,
    /// This process's name, the prefix of its files.
    #[arg(long)]
    name: String,
    /// Threads sharing the process's one service.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// IDs each take asks for.
    #[arg(long, default_value_t = 100)]
    batch: u64,
    /// Longest pause, in ms, between using IDs and pushing the rest back (random 0..=this).
    #[arg(long, default_value_t = 10)]
    pace_ms: u64,
    /// ZooKeeper session timeout, ms.
    #[arg(long, default_value_t = 3000)]
    session_timeout_ms: u64,
    /// Deadline of one operation (`RetryPolicy::deadline`), ms.
    #[arg(long, default_value_t = 5000)]
    op_deadline_ms: u64,
    /// Stop (pushing back what is held) once this file exists.
    #[arg(long)]
    stop_file: PathBuf,
    /// Stop anyway after this many seconds (a safety net).
    #[arg(long, default_value_t = 300)]
    max_seconds: u64,
    /// Give up pushing leftovers back after this many seconds of errors (they stay held).
    #[arg(long, default_value_t = 120)]
    push_patience_s: u64,
    /// Ride out a wipe of ZooKeeper with keepers running: the category missing (`NotFound`,
    /// until `zooid restore` recreates it) and its ceiling not raised in time
    /// (`ReservationExhausted`) are transient too.
    #[arg(long)]
    ride_out_wipe: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("zooid=info"));
    tracing_subscriber::registry()
        .with(filter)
        .with(
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_writer(std::io::stderr),
        )
        .with(CountLostReplies)
        .init();
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("faultload {}: error: {err}", cli.name);
            ExitCode::from(2)
        }
    }
}

thread_local! {
    /// zooid `reply lost` events seen on this thread.
    static LOST_REPLIES: Cell<u64> = const { Cell::new(0) };
}

/// Counts zooid's `reply lost; resolving the outcome` events per thread.
struct CountLostReplies;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for CountLostReplies {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Message(bool);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 |= format!("{value:?}").starts_with("reply lost");
                }
            }
        }
        if !event.metadata().target().starts_with("zooid") {
            return;
        }
        let mut message = Message(false);
        event.record(&mut message);
        if message.0 {
            LOST_REPLIES.with(|n| n.set(n.get() + 1));
        }
    }
}

fn unix_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

fn stop_requested(cli: &Cli, started: Instant) -> bool {
    cli.stop_file.exists() || started.elapsed() >= Duration::from_secs(cli.max_seconds)
}

/// The short name of an error, as written to `E` lines and `.ops` files.
pub fn kind(err: &ZooidError) -> &'static str {
    match err {
        ZooidError::Exhausted { .. } => "exhausted",
        ZooidError::ReservationExhausted { .. } => "reservation-exhausted",
        ZooidError::NotFound { .. } => "not-found",
        ZooidError::CategoryExists { .. } => "category-exists",
        ZooidError::InvalidArgument(_) => "invalid-argument",
        ZooidError::OutOfBounds { .. } => "out-of-bounds",
        ZooidError::AlreadyFree { .. } => "already-free",
        ZooidError::CorruptPool { .. } => "corrupt-pool",
        ZooidError::PoolFull { .. } => "pool-full",
        ZooidError::Contention { .. } => "contention",
        ZooidError::OutcomeUnknown { .. } => "outcome-unknown",
        ZooidError::ConnectionLost { .. } => "connection-lost",
        ZooidError::Timeout { .. } => "timeout",
        ZooidError::VersionWrap { .. } => "version-wrap",
        ZooidError::Store { .. } => "store",
        ZooidError::RuntimeThread => "runtime-thread",
        _ => "other",
    }
}

/// Errors that clear up by themselves: nothing changed, try again.
fn transient(cli: &Cli, err: &ZooidError) -> bool {
    match err {
        ZooidError::ConnectionLost { .. }
        | ZooidError::Timeout { .. }
        | ZooidError::Contention { .. } => true,
        ZooidError::NotFound { .. } | ZooidError::ReservationExhausted { .. } => cli.ride_out_wipe,
        _ => false,
    }
}

fn run(cli: &Cli) -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let category = IdCategory::new(cli.category.clone())?;
    let connect_options = ConnectOptions {
        session_timeout: Duration::from_millis(cli.session_timeout_ms),
        digest_auth: None,
        ..ConnectOptions::default()
    };
    let options = ServiceOptions {
        retry: RetryPolicy {
            deadline: Duration::from_millis(cli.op_deadline_ms),
            ..RetryPolicy::default()
        },
        ..ServiceOptions::default()
    };
    // The ensemble may be down when this process starts: keep trying.
    let service = loop {
        match IdGeneratorService::connect(&cli.connect, &connect_options, options.clone()) {
            Ok(service) => break service,
            Err(err) if !stop_requested(cli, started) => {
                eprintln!("faultload {}: connect: {err}; retrying", cli.name);
                thread::sleep(Duration::from_millis(200));
            }
            Err(err) => return Err(err.into()),
        }
    };
    let failures: Vec<String> = thread::scope(|scope| {
        let handles: Vec<_> = (0..cli.threads)
            .map(|t| {
                let (service, category) = (&service, &category);
                scope.spawn(move || worker_thread(cli, service, category, t, started))
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| match h.join() {
                Ok(Ok(())) => None,
                Ok(Err(err)) => Some(err),
                Err(_) => Some("thread panicked".to_string()),
            })
            .collect()
    });
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; ").into())
    }
}

/// One operation's record in the `.ops` file.
struct Ops {
    file: File,
}

impl Ops {
    fn open(path: &Path) -> std::io::Result<Self> {
        Ok(Self {
            file: OpenOptions::new().create(true).append(true).open(path)?,
        })
    }

    fn begin(&mut self, op: &str) -> u128 {
        LOST_REPLIES.with(|n| n.set(0));
        let now = unix_ms();
        let _ = writeln!(self.file, "> {op} {now}");
        now
    }

    fn end(&mut self, op: &str, outcome: &str, ids: u64, start: u128) {
        let lost = LOST_REPLIES.with(Cell::get);
        let _ = writeln!(
            self.file,
            "< {op} {outcome} {ids} {start} {} {lost}",
            unix_ms()
        );
    }
}

fn worker_thread(
    cli: &Cli,
    service: &IdGeneratorService,
    category: &IdCategory,
    t: usize,
    started: Instant,
) -> Result<(), String> {
    let stem = format!("{}-t{t}", cli.name);
    let mut ledger =
        Ledger::open(&cli.dir.join(format!("{stem}.log"))).map_err(|e| e.to_string())?;
    let mut ops = Ops::open(&cli.dir.join(format!("{stem}.ops"))).map_err(|e| e.to_string())?;
    let io = |e: std::io::Error| e.to_string();
    while !stop_requested(cli, started) {
        let start = ops.begin("take");
        let mut set = match service.take_ids(category, cli.batch) {
            Ok(set) => {
                ledger.taken(&set.ranges()).map_err(io)?;
                ops.end("take", "ok", set.count_ids(), start);
                set
            }
            Err(ZooidError::OutcomeUnknown { ids, .. }) => {
                ledger.leaked(&ids).map_err(io)?;
                ledger.error("outcome-unknown").map_err(io)?;
                ops.end("take", "unknown", ids.iter().map(|r| r.len()).sum(), start);
                continue;
            }
            Err(err) => {
                ledger.error(kind(&err)).map_err(io)?;
                ops.end("take", &format!("err:{}", kind(&err)), 0, start);
                if !transient(cli, &err) {
                    eprintln!("faultload {stem}: take: {err}");
                }
                thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        // Use a random part of the batch, always leaving something to push back.
        let size = set.count_ids();
        let use_count = rand::random_range(0..size.max(1));
        for _ in 0..use_count {
            let id = set.take_id().ok_or("an ID set ran out early")?;
            ledger.used(id).map_err(io)?;
        }
        ledger.flush_used().map_err(io)?;
        if cli.pace_ms > 0 {
            thread::sleep(Duration::from_millis(rand::random_range(0..=cli.pace_ms)));
        }
        push_back(cli, service, &mut ledger, &mut ops, &mut set, &stem)?;
    }
    Ok(())
}

/// Pushes the rest of `set` back, riding out transient errors for `--push-patience-s`.
fn push_back(
    cli: &Cli,
    service: &IdGeneratorService,
    ledger: &mut Ledger,
    ops: &mut Ops,
    set: &mut IdSet,
    stem: &str,
) -> Result<(), String> {
    let io = |e: std::io::Error| e.to_string();
    let patience = Instant::now();
    while set.has_more_ids() {
        let ranges = set.ranges();
        let count = set.count_ids();
        let start = ops.begin("push");
        match service.push_ids(set) {
            Ok(()) => {
                ledger.pushed(&ranges).map_err(io)?;
                ops.end("push", "ok", count, start);
            }
            Err(ZooidError::OutcomeUnknown { ids, .. }) => {
                // Not repeated: the IDs are free again or leaked, never both.
                ledger.leaked(&ids).map_err(io)?;
                ledger.error("outcome-unknown").map_err(io)?;
                ops.end("push", "unknown", count, start);
            }
            Err(err) => {
                ledger.error(kind(&err)).map_err(io)?;
                ops.end("push", &format!("err:{}", kind(&err)), count, start);
                if !transient(cli, &err) {
                    return Err(format!("{stem}: push of {ranges:?}: {err}"));
                }
                if patience.elapsed() >= Duration::from_secs(cli.push_patience_s) {
                    return Err(format!("{stem}: gave up pushing {ranges:?} back: {err}"));
                }
                thread::sleep(Duration::from_millis(100));
            }
        }
    }
    Ok(())
}
