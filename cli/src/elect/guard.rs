//! The command's guard: a small process `zooid elect` forks before it starts any thread, which
//! starts and stops the command and enforces the leadership's lease on its own.
//!
//! `zooid elect` tells it, over a pipe, which token to run and until when (an absolute
//! `CLOCK_BOOTTIME` instant: the lease of the election, see `Election::lease`, converted by
//! [`BootClock`]). When that instant passes without a renewal the guard stops the command by
//! itself (SIGTERM to its process group, SIGKILL after the grace), so a `zooid elect` that is
//! stopped (`kill -STOP`, Ctrl-Z), stalled or SIGKILLed cannot keep the command running while
//! another process leads: a stopped process can kill nothing, so the killing is done here.
//!
//! **Deadlines come from the lease**, never from when the guard noticed: SIGTERM is due at the
//! lease's end, SIGKILL at the lease's end plus the grace (a guard that wakes later, frozen or
//! starved, kills at once), and a command whose lease has ended before the guard could start it
//! is not started (`refused`). The clock is `CLOCK_BOOTTIME`, which counts a suspend of the host
//! (`CLOCK_MONOTONIC` does not, and the servers' clocks run on through it). The guard sits in its own
//! process group and ignores the terminal's stop signals (SIGTSTP, SIGTTIN, SIGTTOU), so a
//! Ctrl-Z of the job or a `kill -STOP` of `zooid elect`'s group stops `zooid elect` only.
//! When the pipe closes (`zooid elect` exited or died) the guard kills the command's group and
//! exits. What it cannot cover: a SIGSTOP sent to the guard itself (or to its process group),
//! after which nothing stops the command in time (docs/RECIPES.md lists what remains).
//!
//! Protocol (one line each): `run TOKEN DEADLINE_NS GRACE_MS` (run the command with this token;
//! `DEADLINE_NS` 0 = no lease), `lease TOKEN DEADLINE_NS` (the lease of that token's command,
//! running or still to start), `stop`. Reports back: `started TOKEN PID`, `stopped TOKEN PID HOW`,
//! `exited TOKEN CODE`, `failed TOKEN REASON`, `refused TOKEN` (not started: its lease had
//! ended), and `idle` once nothing runs after a `stop` (what `zooid elect` waits for before it
//! resigns).

use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::time::Duration;

mod clock;

pub(super) use clock::{boottime_ns, BootClock};

/// What the guard reports to `zooid elect`.
#[derive(Debug)]
pub(super) enum Report {
    /// The command runs with this token.
    Started { token: i64, pid: u32 },
    /// The command was stopped by the guard (`how`: "terminated", "killed", with "lease lapsed"
    /// when no renewal came in time).
    Stopped { token: i64, pid: u32, how: String },
    /// The command ended by itself with this code.
    Exited { token: i64, code: i32 },
    /// The command could not be started.
    Failed { token: i64, reason: String },
    /// The command was not started: the lease of its `run` order had ended.
    Refused { token: i64 },
    /// After a `stop`: nothing runs and nothing will start.
    Idle,
}

impl Report {
    fn parse(line: &str) -> Option<Report> {
        if line == "idle" {
            return Some(Report::Idle);
        }
        let mut words = line.splitn(4, ' ');
        let kind = words.next()?;
        let token = words.next()?.parse().ok()?;
        let rest: Vec<&str> = words.collect();
        Some(match kind {
            "started" => Report::Started {
                token,
                pid: rest.first()?.parse().ok()?,
            },
            "stopped" => Report::Stopped {
                token,
                pid: rest.first()?.parse().ok()?,
                how: rest.get(1).copied().unwrap_or_default().to_string(),
            },
            "exited" => Report::Exited {
                token,
                code: rest.first()?.parse().ok()?,
            },
            "failed" => Report::Failed {
                token,
                reason: rest.join(" "),
            },
            "refused" => Report::Refused { token },
            _ => return None,
        })
    }
}

/// `zooid elect`'s end of the guard.
pub(super) struct Guard {
    /// Lines to the guard, written by a thread (never blocks the runtime).
    orders: std::sync::mpsc::Sender<String>,
    /// The guard's reports; `None` once it is gone.
    pub(super) reports: tokio::sync::mpsc::UnboundedReceiver<Report>,
    /// The guard's pid.
    pub(super) pid: i32,
}

impl Guard {
    /// Forks the guard. Must be called while the process has a single thread (before the
    /// runtime starts): the child runs Rust code after `fork`.
    pub(super) fn fork(
        command: Vec<String>,
        name: String,
        group: String,
    ) -> std::io::Result<Guard> {
        let (order_r, order_w) = pipe()?;
        let (report_r, report_w) = pipe()?;
        // SAFETY: the process is single-threaded here (see above), so the child may run
        // ordinary code; it never returns from `guard_main`.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if pid == 0 {
            drop(order_w);
            drop(report_r);
            guard_main(order_r, report_w, &command, &name, &group);
        }
        drop(order_r);
        drop(report_w);
        let (orders, order_rx) = std::sync::mpsc::channel::<String>();
        let mut order_file = std::fs::File::from(order_w);
        std::thread::Builder::new()
            .name("zooid-elect-orders".into())
            .spawn(move || {
                for line in order_rx {
                    if order_file.write_all(line.as_bytes()).is_err() {
                        break;
                    }
                }
            })?;
        let (report_tx, reports) = tokio::sync::mpsc::unbounded_channel();
        let report_file = std::fs::File::from(report_r);
        std::thread::Builder::new()
            .name("zooid-elect-reports".into())
            .spawn(move || {
                for line in BufReader::new(report_file).lines() {
                    let Ok(line) = line else { break };
                    if let Some(report) = Report::parse(&line) {
                        if report_tx.send(report).is_err() {
                            break;
                        }
                    }
                }
            })?;
        Ok(Guard {
            orders,
            reports,
            pid,
        })
    }

    /// Run the command with `token` until `deadline_ns` (0: no lease), stopping it with
    /// `grace` between SIGTERM and SIGKILL.
    pub(super) fn run(&self, token: i64, deadline_ns: u64, grace: Duration) {
        let _ = self
            .orders
            .send(format!("run {token} {deadline_ns} {}\n", grace.as_millis()));
    }

    /// Moves the lease of `token`'s command (running, or ordered and not started yet).
    pub(super) fn lease(&self, token: i64, deadline_ns: u64) {
        let _ = self.orders.send(format!("lease {token} {deadline_ns}\n"));
    }

    /// Stops the command; the guard answers [`Report::Idle`] once nothing runs.
    pub(super) fn stop(&self) {
        let _ = self.orders.send("stop\n".into());
    }

    /// The guard did not confirm a stop in time (it is stopped or starved): SIGKILL the
    /// command's process group (`command`: its pid, which is also its group's id, when it was
    /// reported started) and every other child of the guard with its group, then the guard, and
    /// reap the guard (waiting at most `within`). The command's pid cannot have been reused while
    /// the guard, its parent, has not reaped it; the groups are killed before the guard for that
    /// reason. The command's own children that left its process group are not reached (as with
    /// the guard's own kills). Returns whether the guard is gone.
    pub(super) async fn kill_all(&self, command: Option<u32>, within: Duration) -> bool {
        let mut groups: Vec<i32> = children_of(self.pid);
        groups.extend(command.and_then(|pid| i32::try_from(pid).ok()));
        for pid in groups {
            signal_group(pid, libc::SIGKILL);
            // Before its `setpgid`, a child is in the guard's group, not in its own.
            // SAFETY: kill(2) on a child of our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        // SAFETY: kill(2) and waitpid(2) on our own child, which nothing else reaps.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let mut status = 0;
            // SAFETY: as above.
            let done = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
            if done != 0 {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// The pids whose parent is `parent` (from /proc; empty when it cannot be read).
fn children_of(parent: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    // "pid (comm) state ppid ...": the fields after the last ')'.
                    let rest = stat.rsplit_once(')')?.1;
                    rest.split_whitespace().nth(1)?.parse::<i32>().ok()
                })
                == Some(parent)
        })
        .collect()
}

/// A pipe whose ends are closed on exec (the command inherits neither).
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two new descriptors into `fds`.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both are fresh descriptors we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The running command, as the guard sees it.
struct Running {
    child: std::process::Child,
    token: i64,
    pid: i32,
    /// The lease: stop when `CLOCK_BOOTTIME` passes it (0: none).
    deadline: u64,
    grace_ns: u64,
    /// Set once the stop began: when SIGKILL is due, and why.
    stopping: Option<(u64, &'static str)>,
    killed: bool,
}

/// A command to start once nothing runs: token, lease deadline, grace (ns).
type Pending = (i64, u64, u64);

/// The terminal's stop signals and the others the guard ignores (the command gets them back).
/// SIGTERM too: a stop sent to every process of the service (`systemctl stop`, a kill by the
/// command line the guard shares with zooid elect) reaches zooid elect, which has the guard stop
/// the command with its grace; a guard dead of it would have the command killed at once. The
/// guard ends when zooid elect does (its orders pipe closes), or by SIGKILL.
const IGNORED: [i32; 6] = [
    libc::SIGTSTP,
    libc::SIGTTIN,
    libc::SIGTTOU,
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGTERM,
];

/// The guard's state between two wake-ups.
struct Watch<'a> {
    command: &'a [String],
    name: &'a str,
    group: &'a str,
    reports: std::fs::File,
    running: Option<Running>,
    pending: Option<Pending>,
    /// A `stop` came: report `idle` once nothing runs.
    confirm_idle: bool,
}

impl Watch<'_> {
    fn report(&mut self, line: String) {
        let _ = self.reports.write_all(format!("{line}\n").as_bytes());
    }

    /// Enforces the lease and the grace, and notices the command's end.
    fn check(&mut self) {
        let now = boottime_ns();
        let Some(run) = self.running.as_mut() else {
            return;
        };
        if run.stopping.is_none() && run.deadline != 0 && now >= run.deadline {
            begin_stop(run, now, "lease lapsed");
        }
        if let Some((kill_at, _)) = run.stopping {
            if !run.killed && now >= kill_at {
                signal_group(run.pid, libc::SIGKILL);
                run.killed = true;
            }
        }
        let Ok(Some(status)) = run.child.try_wait() else {
            return;
        };
        // Whatever is left of its group goes too.
        signal_group(run.pid, libc::SIGKILL);
        let line = match run.stopping {
            Some((_, why)) => {
                let how = if run.killed { "killed" } else { "terminated" };
                format!(
                    "stopped {} {} {how},{}",
                    run.token,
                    run.pid,
                    why.replace(' ', "_")
                )
            }
            None => {
                let code = status
                    .code()
                    .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
                format!("exited {} {code}", run.token)
            }
        };
        self.running = None;
        self.report(line);
    }

    /// Starts the pending command once nothing runs, unless its lease has ended (a guard that
    /// was stopped or starved past it): then `refused`. Answers a `stop` with `idle` once
    /// nothing runs.
    fn start_pending(&mut self) {
        if self.running.is_some() {
            return;
        }
        if self.confirm_idle && self.pending.is_none() {
            self.confirm_idle = false;
            self.report("idle".into());
            return;
        }
        let Some((token, deadline, grace_ns)) = self.pending.take() else {
            return;
        };
        if deadline != 0 && boottime_ns() >= deadline {
            self.report(format!("refused {token}"));
            return;
        }
        match spawn(self.command, token, self.name, self.group) {
            Ok(child) => {
                let pid = child.id() as i32;
                self.running = Some(Running {
                    child,
                    token,
                    pid,
                    deadline,
                    grace_ns,
                    stopping: None,
                    killed: false,
                });
                self.report(format!("started {token} {pid}"));
            }
            Err(err) => self.report(format!("failed {token} {err}")),
        }
    }

    /// How long to sleep: until an order comes (-1) or, while a command runs, until its next
    /// deadline but at most 10 ms, to notice its exit.
    fn sleep_ms(&self) -> i32 {
        let Some(run) = &self.running else {
            return -1;
        };
        let next = match run.stopping {
            Some((kill_at, _)) if !run.killed => kill_at,
            Some(_) => u64::MAX,
            None if run.deadline != 0 => run.deadline,
            None => u64::MAX,
        };
        let wait = next.saturating_sub(boottime_ns()).div_ceil(1_000_000);
        wait.min(10) as i32
    }

    /// Follows one order of `zooid elect`.
    fn order(&mut self, line: &str) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let now = boottime_ns();
        match words.as_slice() {
            ["run", token, deadline, grace_ms] => {
                let (Ok(token), Ok(deadline), Ok(grace_ms)) = (
                    token.parse::<i64>(),
                    deadline.parse::<u64>(),
                    grace_ms.parse::<u64>(),
                ) else {
                    return;
                };
                let grace_ns = grace_ms.saturating_mul(1_000_000);
                self.confirm_idle = false;
                match self.running.as_mut() {
                    Some(run) if run.token == token && run.stopping.is_none() => {
                        run.deadline = deadline;
                        run.grace_ns = grace_ns;
                    }
                    Some(run) => {
                        if run.stopping.is_none() {
                            begin_stop(run, now, "replaced");
                        }
                        self.pending = Some((token, deadline, grace_ns));
                    }
                    None => self.pending = Some((token, deadline, grace_ns)),
                }
            }
            ["lease", token, deadline] => {
                let (Ok(token), Ok(deadline)) = (token.parse::<i64>(), deadline.parse::<u64>())
                else {
                    return;
                };
                // A stop once begun is never called off.
                if let Some(run) = self.running.as_mut() {
                    if run.token == token && run.stopping.is_none() {
                        run.deadline = deadline;
                    }
                }
                if let Some(pending) = self.pending.as_mut() {
                    if pending.0 == token {
                        pending.1 = deadline;
                    }
                }
            }
            ["stop"] => {
                self.confirm_idle = true;
                self.pending = None;
                if let Some(run) = self.running.as_mut() {
                    if run.stopping.is_none() {
                        begin_stop(run, now, "asked");
                    }
                }
            }
            _ => {}
        }
    }

    /// `zooid elect` is gone: nothing may run without it.
    fn end(mut self) -> ! {
        if let Some(run) = self.running.as_mut() {
            signal_group(run.pid, libc::SIGKILL);
            let _ = run.child.wait();
        }
        // SAFETY: ends the guard without running the parent's atexit handlers.
        unsafe { libc::_exit(0) }
    }
}

/// The guard's life: never returns.
fn guard_main(orders: OwnedFd, reports: OwnedFd, command: &[String], name: &str, group: &str) -> ! {
    // SAFETY: plain libc calls on our own process.
    unsafe {
        libc::setpgid(0, 0);
        for sig in IGNORED {
            libc::signal(sig, libc::SIG_IGN);
        }
    }
    let order_fd = std::os::fd::AsRawFd::as_raw_fd(&orders);
    let mut watch = Watch {
        command,
        name,
        group,
        reports: std::fs::File::from(reports),
        running: None,
        pending: None,
        confirm_idle: false,
    };
    let mut buf: Vec<u8> = Vec::new();
    loop {
        watch.check();
        watch.start_pending();
        let mut pfd = libc::pollfd {
            fd: order_fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut pfd, 1, watch.sleep_ms()) } <= 0 {
            continue;
        }
        let mut chunk = [0u8; 4096];
        // SAFETY: reads into our buffer.
        let n = unsafe { libc::read(order_fd, chunk.as_mut_ptr().cast(), chunk.len()) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            watch.check();
            watch.end();
        }
        buf.extend_from_slice(&chunk[..n as usize]);
        while let Some(end) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=end).collect();
            watch.order(&String::from_utf8_lossy(&line));
        }
    }
}

/// Begins to stop the command: SIGKILL is due the grace after now or after the lease's end,
/// whichever is earlier, so a guard that notices late (stopped, starved, the host suspended)
/// does not add its delay to the command's life; when that has passed already, SIGKILL at once
/// (no SIGTERM first).
fn begin_stop(run: &mut Running, now: u64, why: &'static str) {
    let mut kill_at = now.saturating_add(run.grace_ns);
    if run.deadline != 0 {
        kill_at = kill_at.min(run.deadline.saturating_add(run.grace_ns));
    }
    if now >= kill_at {
        signal_group(run.pid, libc::SIGKILL);
        run.killed = true;
    } else {
        signal_group(run.pid, libc::SIGTERM);
    }
    run.stopping = Some((kill_at, why));
}

fn signal_group(pid: i32, sig: i32) {
    // SAFETY: kill(2) on the process group the guard created for the command; ESRCH when
    // it is gone.
    unsafe {
        libc::kill(-pid, sig);
    }
}

/// Starts the command in its own process group, with the terminal's stop signals back to
/// their defaults, dying with the guard (`PR_SET_PDEATHSIG`; the kernel clears it when the
/// command execs a set-user-ID or set-group-ID program or one with file capabilities).
fn spawn(
    command: &[String],
    token: i64,
    name: &str,
    group: &str,
) -> std::io::Result<std::process::Child> {
    let mut cmd = std::process::Command::new(&command[0]);
    cmd.args(&command[1..])
        .env("ZOOID_FENCING_TOKEN", token.to_string())
        .env("ZOOID_LEADER_NAME", name)
        .env("ZOOID_ELECTION_GROUP", group);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        let parent = libc::getpid();
        cmd.pre_exec(move || {
            libc::setpgid(0, 0);
            for sig in IGNORED {
                libc::signal(sig, libc::SIG_DFL);
            }
            crate::child::die_with(parent)
        });
    }
    cmd.spawn()
}
