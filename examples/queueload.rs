//! The work-queue tests' workload (tests/recipes/queue/mod.rs): a producer or a consumer process on one
//! queue, writing a timestamped log the test's checker reads.
//!
//! ```text
//! P <item> <data> <unix ms>                 a put returned <item>
//! C <item> <data> <unix ms> <session hex>   a claim returned <item>
//! D <item> <unix ms>                        complete() returned Ok
//! L <item> <unix ms> <error>                complete() failed (the claim was lost)
//! E <unix ms> <error>                       another error (the process goes on)
//! ```
//!
//! ```text
//! cargo run --example queueload -- produce --connect 127.0.0.1:2181 --queue /q --name p0 --count 1000 --log p0.log
//! cargo run --example queueload -- consume --connect 127.0.0.1:2181 --queue /q --log c0.log --stop-file STOP
//! ```

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{Parser, Subcommand};
use zooid::blocking::{open_session, WorkQueue};
use zooid::{ConnectOptions, QueueOptions};

#[derive(Parser)]
#[command(about = "Work-queue test workload: a producer or a consumer writing a timestamped log")]
struct Cli {
    /// ZooKeeper connect string.
    #[arg(long, global = true, default_value = "127.0.0.1:2181")]
    connect: String,
    /// The queue's path.
    #[arg(long, global = true, default_value = "/queue")]
    queue: String,
    /// The log file (appended).
    #[arg(long, global = true, default_value = "queueload.log")]
    log: PathBuf,
    /// Session timeout in milliseconds.
    #[arg(long, global = true, default_value_t = 4000)]
    session_ms: u64,
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Subcommand)]
enum Mode {
    /// Put `count` items named `<name>-<i>`.
    Produce {
        #[arg(long)]
        name: String,
        #[arg(long)]
        count: usize,
    },
    /// Claim and complete items until the stop file exists and the queue yields nothing.
    Consume {
        #[arg(long)]
        stop_file: PathBuf,
        /// Hold each item this long before completing it.
        #[arg(long, default_value_t = 0)]
        hold_ms: u64,
        /// Each claim waits this long for an item (the stop file is checked between claims).
        #[arg(long, default_value_t = 300)]
        claim_ms: u64,
    },
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut log = match OpenOptions::new().create(true).append(true).open(&cli.log) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("cannot open {}: {e}", cli.log.display());
            return ExitCode::FAILURE;
        }
    };
    let options = ConnectOptions {
        session_timeout: Duration::from_millis(cli.session_ms),
        digest_auth: None,
        ..ConnectOptions::default()
    };
    let session = match open_session(&cli.connect, &options) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("session: {e}");
            return ExitCode::FAILURE;
        }
    };
    let queue = match WorkQueue::open(
        session.clone().into_zk(),
        &cli.queue,
        QueueOptions::default(),
    ) {
        Ok(q) => q,
        Err(e) => {
            eprintln!("queue: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut line = |s: String| {
        // Each line is written whole, so a killed process leaves complete lines.
        let _ = log.write_all(s.as_bytes());
    };
    match cli.mode {
        Mode::Produce { name, count } => {
            for i in 0..count {
                let data = format!("{name}-{i}");
                loop {
                    match queue.put(data.as_bytes()) {
                        Ok(item) => {
                            line(format!("P {item} {data} {}\n", now_ms()));
                            break;
                        }
                        Err(e) => {
                            line(format!("E {} put: {e}\n", now_ms()));
                            std::thread::sleep(Duration::from_millis(100));
                        }
                    }
                }
            }
        }
        Mode::Consume {
            stop_file,
            hold_ms,
            claim_ms,
        } => loop {
            match queue.claim(Some(Duration::from_millis(claim_ms))) {
                Ok(Some(claim)) => {
                    let data = String::from_utf8_lossy(claim.data()).into_owned();
                    let item = claim.item().to_string();
                    line(format!(
                        "C {item} {data} {} {:x}\n",
                        now_ms(),
                        session.status().session_id
                    ));
                    if hold_ms > 0 {
                        std::thread::sleep(Duration::from_millis(hold_ms));
                    }
                    match claim.complete() {
                        Ok(()) => line(format!("D {item} {}\n", now_ms())),
                        Err(e) => line(format!("L {item} {} {e}\n", now_ms())),
                    }
                }
                Ok(None) => {
                    if stop_file.exists() {
                        break;
                    }
                }
                Err(e) => {
                    line(format!("E {} claim: {e}\n", now_ms()));
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        },
    }
    drop(queue);
    // The session holds a client: close it inside zooid's runtime (see blocking::open_session).
    drop(session);
    ExitCode::SUCCESS
}
