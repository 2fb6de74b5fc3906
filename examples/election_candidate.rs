//! One election candidate in its own process, for the election tests (tests/recipes/election/mod.rs).
//!
//! Joins GROUP and appends one line per status change to `--log` (and, with `--fence-node`, one
//! line per fenced write it attempts every 100 ms while it holds a token):
//!
//! ```text
//! 1732230000123456 c1 4242 state active 4294967301 gen=1 notif=0 terms=1
//! 1732230000223456 c1 4242 fenced ok 4294967301 version=3
//! 1732230004223456 c1 4242 fenced notleader 4294967301 c1: not the leader (...)
//! ```
//!
//! (unix microseconds, name, pid, event, ...). Runs until killed.
//!
//! ```text
//! cargo run --example election_candidate -- --connect 127.0.0.1:2181 --group /app/leader \
//!     --name c1 --log /tmp/c1.log --on-pause stop
//! ```

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Parser;
use zooid::{
    ConnectOptions, Election, ElectionOptions, FencedOp, LeaderState, PausePolicy, Session,
    ZooidError,
};

#[derive(Parser)]
#[command(about = "An election candidate that logs its state changes")]
struct Cli {
    /// ZooKeeper connect string.
    #[arg(long)]
    connect: String,
    /// The election group node.
    #[arg(long)]
    group: String,
    /// The candidate's name.
    #[arg(long)]
    name: String,
    /// keep or stop.
    #[arg(long, default_value = "keep")]
    on_pause: String,
    /// Session timeout in milliseconds.
    #[arg(long, default_value_t = 3000)]
    session_timeout_ms: u64,
    /// The file the lines are appended to.
    #[arg(long)]
    log: PathBuf,
    /// Attempt a fenced setData of this (existing) node every 100 ms while holding a token,
    /// and after a SIGCONT (resumed from SIGSTOP) at once, whatever the state, every 100 ms
    /// until ZooKeeper or the candidate gives a definite answer (logged as `fenced-cont`).
    #[arg(long)]
    fence_node: Option<String>,
}

fn now_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let policy: PausePolicy = cli.on_pause.parse()?;
    let mut log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&cli.log)?;
    let pid = std::process::id();
    let name = cli.name.clone();
    let mut line = move |text: String| {
        let _ = writeln!(log, "{} {} {} {}", now_us(), name, pid, text);
        let _ = log.flush();
    };
    let options = ConnectOptions {
        session_timeout: Duration::from_millis(cli.session_timeout_ms),
        digest_auth: None,
        ..ConnectOptions::default()
    };
    let zk = Session::connect(&cli.connect, &options).await?.into_zk();
    let mut options = ElectionOptions::new(cli.name.clone());
    options.on_pause = policy;
    options.data = format!("pid={pid}").into_bytes();
    let election = Election::join(&zk, &cli.group, options).await?;
    line("joined".to_string());
    let mut rx = election.subscribe();
    let mut fence_tick = tokio::time::interval(Duration::from_millis(100));
    let mut cont =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::from_raw(libc::SIGCONT))?;
    let mut last = None;
    loop {
        let status = rx.borrow_and_update().clone();
        let key = (
            status.state,
            status.token,
            status.session_generation,
            status.watch_notifications,
        );
        if last != Some(key) {
            last = Some(key);
            line(format!(
                "state {} {} gen={} notif={} terms={}",
                status.state.as_str(),
                status.token.map_or("-".to_string(), |t| t.to_string()),
                status.session_generation,
                status.watch_notifications,
                status.terms
            ));
        }
        tokio::select! {
            changed = rx.changed() => if changed.is_err() { break },
            _ = cont.recv(), if cli.fence_node.is_some() => {
                let node = cli.fence_node.clone().unwrap_or_default();
                for _ in 0..50 {
                    let token = election.token();
                    let op = FencedOp::SetData {
                        path: node.clone(),
                        data: format!("{} {token:?}", cli.name).into_bytes(),
                        version: None,
                    };
                    let (definite, outcome) = match election.fenced(&[op]).await {
                        Ok(results) => (true, format!("ok {results:?}")),
                        Err(ZooidError::NotLeader { reason, .. }) => (true, format!("notleader {reason}")),
                        Err(err) => (false, format!("error {err}")),
                    };
                    line(format!("fenced-cont {} {outcome}", token.map_or("-".into(), |t| t.to_string())));
                    if definite {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
            _ = fence_tick.tick(), if cli.fence_node.is_some() => {
                let Some(token) = status.token else { continue };
                if status.state == LeaderState::Inactive {
                    continue;
                }
                let node = cli.fence_node.clone().unwrap_or_default();
                let op = FencedOp::SetData {
                    path: node,
                    data: format!("{} {token}", cli.name).into_bytes(),
                    version: None,
                };
                let outcome = match election.fenced(&[op]).await {
                    Ok(results) => format!("ok {token} {results:?}"),
                    Err(ZooidError::NotLeader { reason, .. }) => format!("notleader {token} {reason}"),
                    Err(err) => format!("error {token} {err}"),
                };
                line(format!("fenced {outcome}"));
            }
        }
    }
    Ok(())
}
