//! The election commands: `zooid elect GROUP -- COMMAND` runs a command only while this process
//! leads the group; `zooid leader GROUP` shows who leads.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::process::{Child, Command};
use tokio::signal::unix::{signal, SignalKind};
use zooid::{
    ConnectOptions, Election, ElectionOptions, LeaderState, PausePolicy, Session, ZooidError,
};

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

/// Timestamped lines (unix µs) to the `--log` file, if any.
struct Log(Option<File>);

impl Log {
    fn line(&mut self, text: &str) {
        if let Some(file) = &mut self.0 {
            let _ = writeln!(file, "{} {} {}", now_us(), std::process::id(), text);
            let _ = file.flush();
        }
    }
}

fn default_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "host".into());
    format!("{host}:{}", std::process::id())
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
    // One thread: the command is spawned from the thread that lives as long as the process,
    // which PR_SET_PDEATHSIG ties it to.
    runtime()?.block_on(run_elect(connect, options, args))
}

fn runtime() -> zooid::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ZooidError::InvalidArgument(format!("cannot start a runtime: {e}")))
}

async fn run_elect(
    connect: &str,
    options: &ConnectOptions,
    args: ElectArgs,
) -> zooid::Result<ExitCode> {
    let io = |e: std::io::Error| ZooidError::InvalidArgument(e.to_string());
    let mut log = Log(match &args.log {
        Some(path) => Some(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(io)?,
        ),
        None => None,
    });
    let mut term = signal(SignalKind::terminate()).map_err(io)?;
    let mut int = signal(SignalKind::interrupt()).map_err(io)?;
    crate::metrics::serve(args.metrics_addr)?;
    let session = Session::connect(connect, options).await?;
    let name = args.name.clone().unwrap_or_else(default_name);
    let mut election_options = ElectionOptions::new(name.clone());
    election_options.on_pause = args.on_pause;
    election_options.data = format!("pid={}", std::process::id()).into_bytes();
    let election = Election::join(&session, &args.group, election_options).await?;
    log.line(&format!("joined {} as {name}", args.group));
    let mut rx = election.subscribe();
    let mut child: Option<(Child, i64)> = None;
    let mut last = None;
    let code = loop {
        let status = rx.borrow_and_update().clone();
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
            metrics::gauge!("zooid_election_token", "group" => group.clone())
                .set(status.token.map_or(0.0, |t| t as f64));
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
            LeaderState::Paused if args.on_pause == PausePolicy::Keep => status.token,
            _ => None,
        };
        if let Some((_, running)) = &child {
            if run_token != Some(*running) {
                let (c, token) = child.take().expect("child present");
                stop_child(c, token, args.grace, &mut log).await;
            }
        }
        if child.is_none() {
            if let Some(token) = run_token {
                match spawn_command(&args.command, token, &name, &args.group) {
                    Ok(c) => {
                        log.line(&format!(
                            "command started pid={} token={token}",
                            c.id().unwrap_or(0)
                        ));
                        child = Some((c, token));
                    }
                    Err(err) => {
                        eprintln!("zooid elect: cannot start {:?}: {err}", args.command[0]);
                        break 127;
                    }
                }
            }
        }
        tokio::select! {
            changed = rx.changed() => if changed.is_err() { break 1 },
            _ = term.recv() => break 0,
            _ = int.recv() => break 0,
            exited = wait_child(&mut child) => {
                let code = exited.ok().and_then(|s| s.code()).unwrap_or(1);
                log.line(&format!("command exited by itself code={code}"));
                child = None;
                break code;
            }
        }
    };
    if let Some((c, token)) = child.take() {
        stop_child(c, token, args.grace, &mut log).await;
    }
    election.resign().await?;
    log.line("resigned");
    drop(election);
    drop(session);
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

async fn wait_child(child: &mut Option<(Child, i64)>) -> std::io::Result<std::process::ExitStatus> {
    match child {
        Some((c, _)) => c.wait().await,
        None => std::future::pending().await,
    }
}

fn spawn_command(
    command: &[String],
    token: i64,
    name: &str,
    group: &str,
) -> std::io::Result<Child> {
    let mut cmd = std::process::Command::new(&command[0]);
    cmd.args(&command[1..])
        .env("ZOOID_FENCING_TOKEN", token.to_string())
        .env("ZOOID_LEADER_NAME", name)
        .env("ZOOID_ELECTION_GROUP", group);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        let parent = libc::getpid();
        cmd.pre_exec(move || {
            // Its own process group, so a stop reaches the command's children too.
            libc::setpgid(0, 0);
            // Die with zooid elect, even when it is SIGKILLed.
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let mut cmd = Command::from(cmd);
    cmd.kill_on_drop(true);
    cmd.spawn()
}

/// SIGTERM to the command's process group, then SIGKILL after `grace`.
async fn stop_child(mut child: Child, token: i64, grace: Duration, log: &mut Log) {
    let Some(pid) = child.id() else { return };
    // SAFETY: kill(2) on the process group we created for the child.
    unsafe {
        libc::kill(-(pid as i32), libc::SIGTERM);
    }
    let how = match tokio::time::timeout(grace, child.wait()).await {
        Ok(_) => "terminated",
        Err(_) => {
            // SAFETY: as above.
            unsafe {
                libc::kill(-(pid as i32), libc::SIGKILL);
            }
            let _ = child.wait().await;
            "killed after the grace period"
        }
    };
    // Reap what is left of the group (the command's children), if anything.
    // SAFETY: as above; ESRCH when the group is gone.
    unsafe {
        libc::kill(-(pid as i32), libc::SIGKILL);
    }
    log.line(&format!("command stopped pid={pid} token={token} {how}"));
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
