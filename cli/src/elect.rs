//! The election commands: `zooid elect GROUP -- COMMAND` runs a command only while this process
//! leads the group; `zooid leader GROUP` shows who leads.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::signal::unix::{signal, SignalKind};
use zooid::{
    ConnectOptions, Election, ElectionOptions, LeaderState, PausePolicy, Session, ZooidError,
};

mod guard;

use guard::{Guard, Report};

/// The exit code of `zooid leader` when the group has no leader.
pub const NO_LEADER: u8 = 12;

/// What `zooid elect` was asked to do.
pub struct ElectArgs {
    pub group: String,
    pub name: Option<String>,
    pub on_pause: PausePolicy,
    pub grace: Duration,
    pub log: Option<PathBuf>,
    pub metrics_addr: Option<std::net::SocketAddr>,
    pub command: Vec<String>,
}

fn zookeeper_only(connect: &str) -> zooid::Result<()> {
    if connect.starts_with("file:") || connect.starts_with("mem:") {
        return Err(ZooidError::InvalidArgument(
            "elections need ZooKeeper (--connect host:port,...); the embedded stores have none"
                .into(),
        ));
    }
    Ok(())
}

fn now_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0)
}

/// Timestamped lines (unix µs) to the `--log` file, if any, written by a thread of their own:
/// a slow or stuck file never stalls the runtime thread, which carries the session's
/// heartbeats. Dropping it lets the thread write what is queued, waiting for that at most a
/// second (a stuck file does not keep the process from exiting).
struct Log {
    lines: Option<std::sync::mpsc::Sender<String>>,
    /// Disconnected when the writer thread is done.
    done: Option<std::sync::mpsc::Receiver<()>>,
}

impl Log {
    fn open(path: Option<&PathBuf>) -> std::io::Result<Log> {
        let Some(path) = path else {
            return Ok(Log {
                lines: None,
                done: None,
            });
        };
        let mut file: File = OpenOptions::new().create(true).append(true).open(path)?;
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let (done_tx, done) = std::sync::mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("zooid-elect-log".into())
            .spawn(move || {
                let _done = done_tx;
                for line in rx {
                    let _ = file.write_all(line.as_bytes());
                    let _ = file.flush();
                }
            })?;
        Ok(Log {
            lines: Some(tx),
            done: Some(done),
        })
    }

    fn line(&self, text: &str) {
        if let Some(tx) = &self.lines {
            let _ = tx.send(format!("{} {} {}\n", now_us(), std::process::id(), text));
        }
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        self.lines = None;
        if let Some(done) = self.done.take() {
            let _ = done.recv_timeout(Duration::from_secs(1));
        }
    }
}

fn default_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "host".into());
    format!("{host}:{}", std::process::id())
}

/// The longest pause between SIGTERM and SIGKILL: a quarter of the negotiated session timeout.
/// The command is asked to stop when the lease runs out (half a session after the last
/// confirmation was sent), so it is gone three quarters of a session after it, a quarter
/// before the servers can expire the session and let another candidate lead.
fn grace_bound(negotiated: Duration) -> Duration {
    negotiated / 4
}

/// `zooid elect`: joins the election and runs the command while leading. Returns the exit code:
/// the command's own when it ended by itself while leading, 0 after SIGTERM / SIGINT.
pub fn elect(connect: &str, options: &ConnectOptions, args: ElectArgs) -> zooid::Result<ExitCode> {
    zookeeper_only(connect)?;
    if args.command.is_empty() {
        return Err(ZooidError::InvalidArgument(
            "no command given after --".into(),
        ));
    }
    let name = args.name.clone().unwrap_or_else(default_name);
    // Forked while the process has one thread: the guard runs and stops the command, and
    // enforces the lease even when this process is stopped.
    let guard =
        Guard::fork(args.command.clone(), name.clone(), args.group.clone()).map_err(|e| {
            ZooidError::InvalidArgument(format!("cannot start the command's guard: {e}"))
        })?;
    runtime()?.block_on(run_elect(connect, options, args, name, guard))
}

fn runtime() -> zooid::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ZooidError::InvalidArgument(format!("cannot start a runtime: {e}")))
}

/// What the guard was told to run.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Order {
    token: i64,
    deadline_ns: u64,
}

async fn run_elect(
    connect: &str,
    options: &ConnectOptions,
    args: ElectArgs,
    name: String,
    mut guard: Guard,
) -> zooid::Result<ExitCode> {
    let io = |e: std::io::Error| ZooidError::InvalidArgument(e.to_string());
    let log = Log::open(args.log.as_ref()).map_err(io)?;
    let mut term = signal(SignalKind::terminate()).map_err(io)?;
    let mut int = signal(SignalKind::interrupt()).map_err(io)?;
    crate::metrics::serve(args.metrics_addr)?;
    let session = Session::connect(connect, options).await?;
    let mut election_options = ElectionOptions::new(name.clone());
    election_options.on_pause = args.on_pause;
    election_options.data = format!("pid={}", std::process::id()).into_bytes();
    let election = Election::join(&session, &args.group, election_options).await?;
    log.line(&format!(
        "joined {} as {name} guard={}",
        args.group, guard.pid
    ));
    let stop_policy = args.on_pause == PausePolicy::Stop;
    let mut rx = election.subscribe();
    let mut lease_rx = election.subscribe_lease();
    // What the guard runs, and a token whose command the guard stopped for a lapsed lease
    // (not started again: that term is over).
    let mut ordered: Option<Order> = None;
    let mut lapsed: Option<i64> = None;
    let mut last = None;
    let code = loop {
        let status = rx.borrow_and_update().clone();
        let lease = *lease_rx.borrow_and_update();
        let key = (status.state, status.token, status.session_generation);
        if last != Some(key) {
            last = Some(key);
            let group = args.group.clone();
            metrics::gauge!("zooid_election_leader", "group" => group.clone()).set(
                if status.state == LeaderState::Active {
                    1.0
                } else {
                    0.0
                },
            );
            // A token has 63 bits; a gauge is an f64 (53 bits exact): the epoch and the
            // sequence number are exported exactly beside it.
            let token = status.token.unwrap_or(0);
            metrics::gauge!("zooid_election_token", "group" => group.clone()).set(token as f64);
            metrics::gauge!("zooid_election_token_epoch", "group" => group.clone())
                .set((token >> 31) as f64);
            metrics::gauge!("zooid_election_token_sequence", "group" => group.clone())
                .set((token & 0x7fff_ffff) as f64);
            metrics::counter!("zooid_election_transitions_total", "group" => group, "state" => status.state.as_str())
                .increment(1);
            log.line(&format!(
                "state {} {} gen={}",
                status.state.as_str(),
                status.token.map_or("-".into(), |t| t.to_string()),
                status.session_generation
            ));
        }
        let run_token = match status.state {
            LeaderState::Active => status.token,
            LeaderState::Paused if !stop_policy => status.token,
            _ => None,
        }
        .filter(|t| Some(*t) != lapsed);
        // Under the stop policy the command runs on the lease; under keep it has none.
        let deadline_ns = match (stop_policy, lease) {
            (false, _) => 0,
            (true, Some(lease)) => guard::monotonic_ns_of(lease),
            (true, None) => 1,
        };
        match (run_token, ordered) {
            (Some(token), Some(order)) if order.token == token => {
                if order.deadline_ns != deadline_ns {
                    guard.lease(deadline_ns);
                    ordered = Some(Order { token, deadline_ns });
                }
            }
            (Some(token), _) => {
                let grace = args.grace.min(grace_bound(session.status().timeout));
                guard.run(token, deadline_ns, grace);
                ordered = Some(Order { token, deadline_ns });
            }
            (None, Some(_)) => {
                guard.stop();
                ordered = None;
            }
            (None, None) => {}
        }
        tokio::select! {
            changed = rx.changed() => if changed.is_err() { break 1 },
            _ = lease_rx.changed() => {}
            _ = term.recv() => break 0,
            _ = int.recv() => break 0,
            report = guard.reports.recv() => match report {
                Some(Report::Started { token, pid }) => {
                    log.line(&format!("command started pid={pid} token={token}"));
                }
                Some(Report::Stopped { token, pid, how }) => {
                    log.line(&format!("command stopped pid={pid} token={token} {how}"));
                    if how.contains("lease") && ordered.is_some_and(|o| o.token == token) {
                        lapsed = Some(token);
                        ordered = None;
                    }
                }
                Some(Report::Exited { token, code }) => {
                    log.line(&format!("command exited by itself code={code} token={token}"));
                    break code;
                }
                Some(Report::Failed { token, reason }) => {
                    eprintln!("zooid elect: cannot start {:?}: {reason}", args.command[0]);
                    log.line(&format!("command failed token={token}: {reason}"));
                    break 127;
                }
                None => {
                    eprintln!("zooid elect: the command's guard (pid {}) is gone", guard.pid);
                    break 1;
                }
            }
        }
    };
    if ordered.is_some() {
        // Stop the command and wait for it (the guard bounds that by the grace).
        guard.stop();
        let wait = async {
            while let Some(report) = guard.reports.recv().await {
                match report {
                    Report::Stopped { token, pid, how } => {
                        log.line(&format!("command stopped pid={pid} token={token} {how}"));
                        break;
                    }
                    Report::Exited { token, code } => {
                        log.line(&format!(
                            "command exited by itself code={code} token={token}"
                        ));
                        break;
                    }
                    _ => {}
                }
            }
        };
        let bound = args.grace + Duration::from_secs(1);
        let _ = tokio::time::timeout(bound, wait).await;
    }
    election.resign().await?;
    log.line("resigned");
    drop(election);
    drop(session);
    drop(guard);
    drop(log);
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

/// `zooid leader`: prints the leader's name, token and data; `NO_LEADER` when there is none.
pub fn leader(connect: &str, options: &ConnectOptions, group: &str) -> zooid::Result<ExitCode> {
    zookeeper_only(connect)?;
    let rt = runtime()?;
    let info = rt.block_on(async {
        let session = Session::connect(connect, options).await?;
        zooid::election::leader(&session, group).await
    });
    match info? {
        Some(info) => {
            println!("name={}", info.name);
            println!("token={}", info.token);
            println!("node={}", info.node);
            println!("data={}", String::from_utf8_lossy(&info.data));
            Ok(ExitCode::SUCCESS)
        }
        None => {
            println!("no leader in {group}");
            Ok(ExitCode::from(NO_LEADER))
        }
    }
}

/// `zooid elect --bump-epoch GROUP`: raises the group's epoch (see [`zooid::election::bump_epoch`])
/// and prints `group=GROUP epoch=N`.
pub fn bump_epoch(connect: &str, options: &ConnectOptions, group: &str) -> zooid::Result<ExitCode> {
    zookeeper_only(connect)?;
    let rt = runtime()?;
    let epoch = rt.block_on(async {
        let session = Session::connect(connect, options).await?;
        zooid::election::bump_epoch(&session, group).await
    })?;
    println!("group={group} epoch={epoch}");
    Ok(ExitCode::SUCCESS)
}
