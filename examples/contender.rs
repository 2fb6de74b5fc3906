//! One contending client of the contention benchmark (`cargo bench --bench contention`): opens
//! its own ZooKeeper session, takes batches in a loop for a window, and reports what it got.
//!
//! Modes:
//! - `zooid`: `IdGeneratorService::take_ids(category, batch)` on a zooid category, default
//!   options;
//! - `zooid-fair`: the same with `ServiceOptions::fair_pacing` (src/pace.rs);
//! - `zooid-blocks`: the same on a category in block allocation (src/blocks.rs);
//! - `naive`: the seed-000 loop on a legacy counter node (8-byte big-endian long): `getData`,
//!   add the batch, `setData` with the read version, on `BADVERSION` start again at once.
//!
//! Protocol on stdin/stdout (the benchmark drives many of these at once):
//!
//! ```text
//! ready                       after the session is open and one warm-up take succeeded
//! <- go                       (a line on stdin) starts the window
//! done TAKES ERRORS IDS L1 L2 ...   the window's completed takes, failed takes, IDs handed
//!                             out, and every completed take's latency in microseconds
//! <- (EOF on stdin)           closes the session and exits
//! ```
//!
//! ```text
//! cargo run --release --example contender -- --connect 127.0.0.1:2181 --mode zooid \
//!     --path /bench/zooid --batch 1000 --window-ms 6000
//! ```

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use zooid::{ConnectOptions, IdCategory, IdGeneratorService, ServiceOptions};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Mode {
    Zooid,
    ZooidFair,
    /// `take_ids` on a category in block allocation (the benchmark creates it).
    ZooidBlocks,
    Naive,
}

#[derive(Parser, Debug)]
#[command(about = "One contending client of the contention benchmark")]
struct Cli {
    /// ZooKeeper connect string.
    #[arg(long)]
    connect: String,
    /// What to run.
    #[arg(long, value_enum)]
    mode: Mode,
    /// The category (zooid) or counter node (naive); it must exist.
    #[arg(long)]
    path: String,
    /// IDs per take.
    #[arg(long, default_value_t = 1000)]
    batch: u64,
    /// How long to take for after `go`.
    #[arg(long, default_value_t = 6000)]
    window_ms: u64,
    /// ZooKeeper session timeout.
    #[arg(long, default_value_t = 10000)]
    session_timeout_ms: u64,
}

/// The window's outcome.
#[derive(Default)]
struct Tally {
    takes: u64,
    errors: u64,
    ids: u64,
    latencies_us: Vec<u64>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("cannot start a runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("contender: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: &Cli) -> Result<(), String> {
    let options = ConnectOptions {
        session_timeout: Duration::from_millis(cli.session_timeout_ms),
        digest_auth: None,
        ..ConnectOptions::default()
    };
    let window = Duration::from_millis(cli.window_ms);
    match cli.mode {
        Mode::Zooid | Mode::ZooidFair | Mode::ZooidBlocks => {
            let service_options = ServiceOptions {
                fair_pacing: matches!(cli.mode, Mode::ZooidFair),
                ..ServiceOptions::default()
            };
            let service = IdGeneratorService::connect(&cli.connect, &options, service_options)
                .await
                .map_err(|e| e.to_string())?;
            let category = IdCategory::new(&cli.path).map_err(|e| e.to_string())?;
            service
                .take_ids(&category, cli.batch)
                .await
                .map_err(|e| format!("warm-up take: {e}"))?;
            ready_then_wait_for_go()?;
            let tally = window_loop(window, || async {
                service
                    .take_ids(&category, cli.batch)
                    .await
                    .map(|ids| ids.count_ids())
                    .map_err(|e| e.to_string())
            })
            .await;
            report(&tally)?;
            wait_for_eof();
            drop(service);
        }
        Mode::Naive => {
            let client = zookeeper_client::Client::connector()
                .with_session_timeout(options.session_timeout)
                .connect(&cli.connect)
                .await
                .map_err(|e| e.to_string())?;
            naive_take(&client, &cli.path, cli.batch)
                .await
                .map_err(|e| format!("warm-up take: {e}"))?;
            ready_then_wait_for_go()?;
            let tally = window_loop(window, || naive_take(&client, &cli.path, cli.batch)).await;
            report(&tally)?;
            wait_for_eof();
            drop(client);
        }
    }
    Ok(())
}

/// The seed-000 loop: read the counter, add `n`, write it back expecting the read version; on a
/// conflict start again at once (no backoff, as the seed does).
async fn naive_take(client: &zookeeper_client::Client, path: &str, n: u64) -> Result<u64, String> {
    loop {
        let (data, stat) = client.get_data(path).await.map_err(|e| e.to_string())?;
        let bytes: [u8; 8] = data
            .as_slice()
            .try_into()
            .map_err(|_| format!("{path} holds {} bytes, not 8", data.len()))?;
        let value = i64::from_be_bytes(bytes);
        let next = value
            .checked_add(n as i64)
            .ok_or_else(|| "counter overflow".to_string())?;
        match client
            .set_data(path, &next.to_be_bytes(), Some(stat.version))
            .await
        {
            Ok(_) => return Ok(n),
            Err(zookeeper_client::Error::BadVersion) => continue,
            Err(err) => return Err(err.to_string()),
        }
    }
}

async fn window_loop<F, Fut>(window: Duration, mut take: F) -> Tally
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<u64, String>>,
{
    let mut tally = Tally::default();
    let started = Instant::now();
    while started.elapsed() < window {
        let t = Instant::now();
        match take().await {
            Ok(ids) => {
                tally.takes += 1;
                tally.ids += ids;
                tally
                    .latencies_us
                    .push(u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX));
            }
            Err(err) => {
                eprintln!("take failed: {err}");
                tally.errors += 1;
            }
        }
    }
    tally
}

fn ready_then_wait_for_go() -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready").map_err(|e| e.to_string())?;
    out.flush().map_err(|e| e.to_string())?;
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    if line.trim() == "go" {
        Ok(())
    } else {
        Err(format!("expected go, got {line:?}"))
    }
}

fn report(tally: &Tally) -> Result<(), String> {
    let mut line = format!("done {} {} {}", tally.takes, tally.errors, tally.ids);
    for l in &tally.latencies_us {
        line.push(' ');
        line.push_str(&l.to_string());
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").map_err(|e| e.to_string())?;
    out.flush().map_err(|e| e.to_string())
}

fn wait_for_eof() {
    let mut sink = String::new();
    while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {
        sink.clear();
    }
}
