//! The election commands: `zooid elect GROUP -- COMMAND` runs a command only while this process
//! leads the group; `zooid leader GROUP` shows who leads.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use zooid::zk::Zk;
use zooid::{ConnectOptions, Election, ElectionOptions, LeaderState, PausePolicy, ZooidError};

use crate::stop::{io_error, Stop};

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
/// confirmation was sent) and killed the grace after that at the latest (also when the guard
/// notices late), so it is gone three quarters of a session after it, a quarter before the
/// servers can expire the session and let another candidate lead.
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
    // zooid's runtime (and its threads) starts only now, after the fork.
    let (log, stop) = zooid::blocking::block_on(async {
        let log = Log::open(args.log.as_ref()).map_err(|e| io_error("--log", e))?;
        let stop = Stop::new()?;
        crate::metrics::serve(args.metrics_addr)?;
        Ok::<_, ZooidError>((log, stop))
    })??;
    let clock = guard::BootClock::new();
    // The session is the blocking facade's, held by a service for the whole run (closed when it
    // ends); the loop runs on the facade's runtime.
    let service = crate::ids::open(connect, options)?;
    let zk = service.zookeeper()?;
    let run = Run {
        args,
        name,
        log,
        stop,
        clock,
    };
    zooid::blocking::block_on(run_elect(zk, run, guard))?
}

/// What `run_elect` works with, set up before it.
struct Run {
    args: ElectArgs,
    name: String,
    log: Log,
    stop: Stop,
    clock: guard::BootClock,
}

/// What the guard was told to run.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Order {
    token: i64,
    deadline_ns: u64,
}

/// How long past the grace `zooid elect` waits for the guard to confirm a stop before it kills
/// the command and the guard itself (a guard that is stopped or starved).
const CONFIRM_MARGIN: Duration = Duration::from_secs(1);

async fn run_elect(zk: Zk, run: Run, mut guard: Guard) -> zooid::Result<ExitCode> {
    let Run {
        args,
        name,
        log,
        mut stop,
        mut clock,
    } = run;
    let mut election_options = ElectionOptions::new(name.clone());
    election_options.on_pause = args.on_pause;
    election_options.data = format!("pid={}", std::process::id()).into_bytes();
    let mut election = Election::join(&zk, &args.group, election_options.clone()).await?;
    log.line(&format!(
        "joined {} as {name} guard={}",
        args.group, guard.pid
    ));
    let stop_policy = args.on_pause == PausePolicy::Stop;
    let grace = |zk: &Zk| args.grace.min(grace_bound(zk.status().timeout));
    let mut rx = election.subscribe();
    let mut lease_rx = election.subscribe_lease();
    // What the guard was told to run.
    let mut ordered: Option<Order> = None;
    // The command the guard reported started and not yet ended: token, pid.
    let mut running: Option<(i64, u32)> = None;
    // A term whose command the guard stopped for its lapsed lease, or never started because the
    // lease had ended: that term is over even if the driver renewed the lease meanwhile.
    let mut ended: Option<i64> = None;
    let mut last = None;
    let code = loop {
        if let Some(token) = ended.take() {
            // A leader must not stay leader with nothing running: resign (once the guard
            // confirms that nothing runs) and join again, behind whoever waits, for a new term
            // with a new token (as the stop policy does after a lapse the driver sees).
            let within = grace(&zk) + CONFIRM_MARGIN;
            if !confirm_stopped(&mut guard, &log, within, running).await {
                eprintln!("zooid elect: the command's guard did not confirm the stop; it and the command were killed");
                break 1;
            }
            running = None;
            ordered = None;
            election.resign().await?;
            log.line(&format!(
                "resigned token={token}: its command's lease ended; joining again"
            ));
            match join_again(&zk, &args.group, &election_options, &log, &mut stop).await? {
                Some(joined) => election = joined,
                None => break 0,
            }
            rx = election.subscribe();
            lease_rx = election.subscribe_lease();
            last = None;
            continue;
        }
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
        };
        // Under the stop policy the command runs on the lease (on CLOCK_BOOTTIME); under keep
        // it has none.
        let deadline_ns = match (stop_policy, lease) {
            (false, _) => 0,
            (true, Some(lease)) => clock.boottime_of(lease.into_std(), zk.status().timeout),
            (true, None) => 1,
        };
        match (run_token, ordered) {
            (Some(token), Some(order)) if order.token == token => {
                if order.deadline_ns != deadline_ns {
                    guard.lease(token, deadline_ns);
                    ordered = Some(Order { token, deadline_ns });
                }
            }
            (Some(_), _) if deadline_ns != 0 && deadline_ns <= guard::boottime_ns() => {
                // Active on a lease that has ended (the driver has not seen it yet): start
                // nothing; it renews or turns Paused, and either wakes this loop.
                if ordered.take().is_some() {
                    guard.stop();
                }
            }
            (Some(token), _) => {
                guard.run(token, deadline_ns, grace(&zk));
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
            _ = stop.recv() => break 0,
            report = guard.reports.recv() => match report {
                Some(Report::Started { token, pid }) => {
                    log.line(&format!("command started pid={pid} token={token}"));
                    running = Some((token, pid));
                }
                Some(Report::Stopped { token, pid, how }) => {
                    log.line(&format!("command stopped pid={pid} token={token} {how}"));
                    if running.is_some_and(|(_, p)| p == pid) {
                        running = None;
                    }
                    if how.contains("lease") && ordered.is_some_and(|o| o.token == token) {
                        ended = Some(token);
                    }
                }
                Some(Report::Refused { token }) => {
                    log.line(&format!("command not started token={token}: its lease had ended"));
                    if ordered.is_some_and(|o| o.token == token) {
                        ended = Some(token);
                    }
                }
                Some(Report::Exited { token, code }) => {
                    log.line(&format!("command exited by itself code={code} token={token}"));
                    running = None;
                    break code;
                }
                Some(Report::Failed { token, reason }) => {
                    eprintln!("zooid elect: cannot start {:?}: {reason}", args.command[0]);
                    log.line(&format!("command failed token={token}: {reason}"));
                    break 127;
                }
                Some(Report::Idle) => {}
                None => {
                    eprintln!("zooid elect: the command's guard (pid {}) is gone", guard.pid);
                    break 1;
                }
            }
        }
    };
    // Nobody may lead after us while the command may still run: resign only once the guard has
    // confirmed that nothing runs, or after the command and the guard were killed.
    if !confirm_stopped(&mut guard, &log, grace(&zk) + CONFIRM_MARGIN, running).await {
        eprintln!("zooid elect: the command's guard did not confirm the stop; it and the command were killed");
    }
    election.resign().await?;
    log.line("resigned");
    drop(election);
    drop(zk);
    drop(guard);
    drop(log);
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

/// Stops the command and waits, at most `within`, for the guard's confirmation that nothing
/// runs. A guard that does not confirm in time (stopped, starved) is taken as unable to: the
/// command (`running`, as last reported) and the guard are SIGKILLed here (`Guard::kill_all`);
/// a guard that is gone already took the command with it (`PR_SET_PDEATHSIG`) and is only
/// reaped. Returns whether the guard confirmed (and can run commands again).
async fn confirm_stopped(
    guard: &mut Guard,
    log: &Log,
    within: Duration,
    mut running: Option<(i64, u32)>,
) -> bool {
    guard.stop();
    let wait = async {
        while let Some(report) = guard.reports.recv().await {
            match report {
                Report::Idle => return true,
                Report::Started { token, pid } => {
                    log.line(&format!("command started pid={pid} token={token}"));
                    running = Some((token, pid));
                }
                Report::Stopped { token, pid, how } => {
                    log.line(&format!("command stopped pid={pid} token={token} {how}"));
                    running = None;
                }
                Report::Exited { token, code } => {
                    log.line(&format!(
                        "command exited by itself code={code} token={token}"
                    ));
                    running = None;
                }
                Report::Failed { token, reason } => {
                    log.line(&format!("command failed token={token}: {reason}"));
                }
                Report::Refused { token } => {
                    log.line(&format!(
                        "command not started token={token}: its lease had ended"
                    ));
                }
            }
        }
        false
    };
    let confirmed = tokio::time::timeout(within, wait).await;
    let command = match confirmed {
        Ok(true) => return true,
        // Gone: its pipe closed; the command died with it. Only reap it.
        Ok(false) => None,
        Err(_) => {
            log.line(&format!(
                "the guard did not confirm the stop within {} ms: killing the command's group and the guard",
                within.as_millis()
            ));
            running.map(|(_, pid)| pid)
        }
    };
    guard.kill_all(command, CONFIRM_MARGIN).await;
    false
}

/// Joins `group` again after a resignation, retrying every half second while ZooKeeper cannot
/// be reached. `None` when SIGTERM or SIGINT came first; an error when the session is closed or
/// the join can never succeed.
async fn join_again(
    zk: &Zk,
    group: &str,
    options: &ElectionOptions,
    log: &Log,
    stop: &mut Stop,
) -> zooid::Result<Option<Election>> {
    loop {
        match Election::join(zk, group, options.clone()).await {
            Ok(election) => return Ok(Some(election)),
            Err(err @ (ZooidError::Closed { .. } | ZooidError::InvalidArgument(_))) => {
                return Err(err)
            }
            Err(err) => log.line(&format!("joining again failed: {err}; retrying")),
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            _ = stop.recv() => return Ok(None),
        }
    }
}

/// `zooid leader`: prints the leader's name, token and data; `NO_LEADER` when there is none.
pub fn leader(connect: &str, options: &ConnectOptions, group: &str) -> zooid::Result<ExitCode> {
    zookeeper_only(connect)?;
    let info = crate::ids::open(connect, options)?.leader(group);
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
    let epoch = crate::ids::open(connect, options)?.bump_epoch(group)?;
    println!("group={group} epoch={epoch}");
    Ok(ExitCode::SUCCESS)
}
