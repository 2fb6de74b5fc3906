//! The counter suite's workload (tests/recipes/counter.rs): one process whose threads each hold a
//! [`zooid::blocking::Counter`] on the process's one session and call `next` a fixed number of
//! times, printing one line per call to stdout:
//!
//! ```text
//! ok 17 19        (values 17..=19 handed out)
//! skip 20 22      (OutcomeUnknown: 20..=22 skipped, never handed out)
//! err MESSAGE     (any other error; nothing handed out)
//! stats lost=3 applied=2 not_applied=1 resends=1 skipped=3 lookalikes=1   (per thread)
//! ```
//!
//! ```text
//! cargo run --example counterload -- --connect 127.0.0.1:2181 --path /counter/c \
//!     --threads 3 --calls 50 --max-n 5
//! ```

use std::io::Write;
use std::process::ExitCode;
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

use clap::Parser;
use zooid::blocking::{open_session, Counter};
use zooid::{ConnectOptions, RetryPolicy, ZooidError};

#[derive(Parser, Clone)]
#[command(about = "Counter workload: threads calling next and printing what they got")]
struct Cli {
    /// ZooKeeper connect string.
    #[arg(long)]
    connect: String,
    /// The counter node, which must exist.
    #[arg(long)]
    path: String,
    /// Threads, each with its own counter handle on the process's one session.
    #[arg(long, default_value_t = 3)]
    threads: usize,
    /// `next` calls per thread.
    #[arg(long, default_value_t = 50)]
    calls: usize,
    /// Each call asks for 1..=max-n values.
    #[arg(long, default_value_t = 5)]
    max_n: u64,
    /// ZooKeeper session timeout.
    #[arg(long, default_value_t = 4000)]
    session_timeout_ms: u64,
    /// The retry policy's deadline.
    #[arg(long, default_value_t = 30000)]
    deadline_ms: u64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("zooid=warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let options = ConnectOptions {
        session_timeout: Duration::from_millis(cli.session_timeout_ms),
        digest_auth: None,
        ..ConnectOptions::default()
    };
    let session = match open_session(&cli.connect, &options) {
        Ok(session) => session,
        Err(err) => {
            eprintln!("cannot open a session: {err}");
            return ExitCode::FAILURE;
        }
    };
    let policy = RetryPolicy {
        max_attempts: 10_000,
        deadline: Duration::from_millis(cli.deadline_ms),
        ..RetryPolicy::default()
    };
    let out = Mutex::new(std::io::stdout());
    let print = |line: String| {
        let mut out = out.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    };
    thread::scope(|scope| {
        for _ in 0..cli.threads {
            let session = session.clone();
            let cli = &cli;
            let print = &print;
            scope.spawn(move || {
                let counter = match Counter::with_policy(session.into_zk(), &cli.path, policy) {
                    Ok(counter) => counter,
                    Err(err) => return print(format!("err {err}")),
                };
                for _ in 0..cli.calls {
                    let n = rand::random_range(1..=cli.max_n);
                    match counter.next(n) {
                        Ok(range) => print(format!("ok {} {}", range.start(), range.end())),
                        Err(ZooidError::OutcomeUnknown { ids, .. }) => {
                            for range in ids {
                                print(format!("skip {} {}", range.start(), range.end()));
                            }
                        }
                        Err(err) => print(format!("err {err}")),
                    }
                }
                if let Ok(s) = counter.stats() {
                    print(format!(
                        "stats lost={} applied={} not_applied={} resends={} skipped={} lookalikes={}",
                        s.lost_replies,
                        s.resolved_applied,
                        s.resolved_not_applied,
                        s.resends,
                        s.skipped,
                        s.lookalikes
                    ));
                }
            });
        }
    });
    // The session's client must be dropped inside a runtime; the process ends here anyway.
    std::mem::forget(session);
    ExitCode::SUCCESS
}
