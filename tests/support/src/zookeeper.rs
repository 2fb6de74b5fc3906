//! Real Apache ZooKeeper servers for integration tests.
//!
//! * [`ZkServer`]: one standalone server on a free loopback port.
//! * [`ZkEnsemble`]: an N-server (normally 3) quorum on loopback, with fault controls
//!   (SIGKILL, SIGSTOP/SIGCONT, restart, wipe).
//!
//! Every server is a `java ... QuorumPeerMain <cfg>` child process with its data directory, config
//! and log file in a [`tempfile::TempDir`]. The process is owned by a Rust value: it is killed by
//! PID and reaped when that value drops (also when the test panics), and, as a last resort, the
//! kernel kills it if the test binary itself dies (`PR_SET_PDEATHSIG`).
//!
//! The jars come from `$ZOOID_ZK_LIB`, else `<crate>/target/zookeeper/lib` (filled by
//! `scripts/fetch-zookeeper.sh`). A given server version ([`ZkServer::start_version`], the
//! compatibility matrix) comes from `$ZOOID_ZK_ROOT/<version>/lib`, else
//! `<crate>/target/zookeeper/<version>/lib` (`scripts/fetch-zookeeper.sh <version>`). Tests never
//! download anything.
//!
//! Servers are tuned for tests ([`Tuning::Tests`]: quick to start, one JIT tier, no `fsync`);
//! benchmarks start them as ZooKeeper ships ([`Tuning::AsShipped`]).
//!
//! Environment knobs (all optional):
//! * `ZOOID_ZK_LIB`: directory holding the ZooKeeper jars.
//! * `ZOOID_ZK_ROOT`: directory holding `<version>/lib` for [`ZkServer::start_version`].
//! * `ZOOID_ZK_LOG_LEVEL`: server log level (`info` by default; `debug`, `warn`, ...).
//! * `ZOOID_ZK_KEEP=1`: keep the temp directories (data, configs, logs) after the test.
//! * `JAVA_HOME`: use `$JAVA_HOME/bin/java` instead of `java` from `PATH`.

use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// ZooKeeper's basic time unit for the servers started here. Small, so that elections, follower
/// timeouts and session expiry happen quickly, but not so small that a busy 2-core machine
/// causes spurious leader changes.
pub const TICK_TIME: Duration = Duration::from_millis(250);
/// Smallest session timeout the servers accept (clients asking for less get this).
pub const MIN_SESSION_TIMEOUT: Duration = Duration::from_millis(500);
/// Largest session timeout the servers accept.
pub const MAX_SESSION_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a standalone server may take to start serving.
const STANDALONE_START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an ensemble may take to form its first quorum (3 JVMs starting on 2 cores).
const ENSEMBLE_START_TIMEOUT: Duration = Duration::from_secs(60);
/// Timeout of one four-letter-word probe (a SIGSTOPped server accepts but never answers).
const PROBE_TIMEOUT: Duration = Duration::from_millis(1000);
/// Attempts at picking free ports when a server fails with "Address already in use"
/// (another test binary may grab a port between our probe bind and the JVM's bind).
const PORT_ATTEMPTS: usize = 3;

/// How a server's JVM and transaction log are set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tuning {
    /// For tests: a small heap, the serial collector and only the first JIT tier (quick to
    /// start, light on a 2-core machine), and no `fsync` of the transaction log
    /// (`forceSync=no`, small log preallocation).
    Tests,
    /// As ZooKeeper ships (`zkServer.sh`, `zkEnv.sh` and zoo.cfg's defaults): a 1000 MB heap,
    /// the JVM's default collector and both JIT tiers, and every transaction log write synced
    /// to disk before its reply. For benchmarks: what a deployment runs.
    AsShipped,
}

/// Directory holding the ZooKeeper server jars: `$ZOOID_ZK_LIB` if set, else
/// `<repo>/target/zookeeper/lib`. Panics, telling how to fetch them, if the
/// ZooKeeper jar is not there.
pub fn zk_lib_dir() -> PathBuf {
    let dir = match std::env::var_os("ZOOID_ZK_LIB") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => crate::repo().join("target/zookeeper/lib"),
    };
    check_lib_dir(
        dir,
        "zookeeper-3",
        "bash scripts/fetch-zookeeper.sh",
        "ZOOID_ZK_LIB",
    )
}

/// Directory holding the jars of ZooKeeper server `version` (such as `"3.4.14"`):
/// `$ZOOID_ZK_ROOT/<version>/lib` if `ZOOID_ZK_ROOT` is set, else
/// `<repo>/target/zookeeper/<version>/lib`. Panics, telling how to fetch them, if that version's
/// server jar is not there.
pub fn zk_version_lib_dir(version: &str) -> PathBuf {
    let root = match std::env::var_os("ZOOID_ZK_ROOT") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => crate::repo().join("target/zookeeper"),
    };
    check_lib_dir(
        root.join(version).join("lib"),
        &format!("zookeeper-{version}.jar"),
        &format!("bash scripts/fetch-zookeeper.sh {version}"),
        "ZOOID_ZK_ROOT",
    )
}

/// `dir` if it holds a file whose name starts with `jar_prefix` and ends in `.jar`; else panics
/// telling how to fetch the jars.
fn check_lib_dir(dir: PathBuf, jar_prefix: &str, fetch: &str, env: &str) -> PathBuf {
    let jar_prefix = jar_prefix.trim_end_matches(".jar");
    let has_server_jar = fs::read_dir(&dir)
        .map(|entries| {
            entries.filter_map(|e| e.ok()).any(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.starts_with(jar_prefix) && name.ends_with(".jar")
            })
        })
        .unwrap_or(false);
    if !has_server_jar {
        panic!(
            "Apache ZooKeeper jars ({jar_prefix}*.jar) not found in {} (set {env} to override). \
             Run `{fetch}` from the repository root first; tests do not download anything.",
            dir.display()
        );
    }
    dir
}

/// Sends a four-letter word (`ruok`, `srvr`, `stat`, `mntr`, `conf`, ...) to a ZooKeeper
/// server and returns its whole answer.
pub fn four_letter_word(addr: SocketAddr, cmd: &str, timeout: Duration) -> io::Result<String> {
    let deadline = Instant::now() + timeout;
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(cmd.as_bytes())?;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("{cmd} to {addr} timed out"),
            ));
        }
        stream.set_read_timeout(Some(left))?;
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The `Mode:` a server reports through `srvr` (`standalone`, `leader`, `follower`,
/// `observer`), or `None` if it does not answer or is not serving requests.
fn probe_mode(addr: SocketAddr) -> Option<String> {
    let answer = four_letter_word(addr, "srvr", PROBE_TIMEOUT).ok()?;
    answer
        .lines()
        .find_map(|l| l.strip_prefix("Mode: ").map(|m| m.trim().to_string()))
}

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))
}

/// `n` distinct free loopback ports for servers (see [`crate::ports`]).
fn free_ports(n: usize) -> Vec<u16> {
    crate::ports::free_loopback_ports(n)
}

fn java_binary() -> PathBuf {
    if let Some(home) = std::env::var_os("JAVA_HOME") {
        let java = Path::new(&home).join("bin/java");
        if java.is_file() {
            return java;
        }
    }
    PathBuf::from("java")
}

fn keep_dirs() -> bool {
    matches!(
        std::env::var("ZOOID_ZK_KEEP").as_deref(),
        Ok("1") | Ok("true") | Ok("yes")
    )
}

fn make_temp_dir(prefix: &str) -> TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .expect("create temp dir for ZooKeeper")
}

fn finish_temp_dir(dir: Option<TempDir>) {
    if let Some(dir) = dir {
        if keep_dirs() {
            let path = dir.keep();
            eprintln!(
                "[zk] keeping ZooKeeper files in {} (ZOOID_ZK_KEEP)",
                path.display()
            );
        }
        // else: TempDir's own Drop deletes it.
    }
}

/// Last `n` lines of a file (empty string if unreadable).
fn tail_file(path: &Path, n: usize) -> String {
    let text = fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Spawns children from one long-lived thread. `PR_SET_PDEATHSIG` fires when the *thread* that
/// forked the child exits, so the JVMs must not be forked from test threads (which end while a
/// server value may still be alive in a static or another thread) or short-lived tokio blocking
/// threads. This idle thread lives as long as the test binary; when the binary dies, so do the JVMs.
/// Spawns `cmd` so that the kernel kills it if the test process dies (for helper daemons such
/// as a test KDC); the caller still kills and reaps it by PID when done.
pub fn spawn_owned(cmd: Command) -> io::Result<Child> {
    spawn_with_parent_death_signal(cmd)
}

/// Spawns `cmd` with `PR_SET_PDEATHSIG`: the kernel kills it if the test process dies.
pub fn spawn_with_parent_death_signal(mut cmd: Command) -> io::Result<Child> {
    type Req = (Command, mpsc::Sender<io::Result<Child>>);
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Req>>> = OnceLock::new();
    let tx = SPAWNER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Req>();
            std::thread::Builder::new()
                .name("zk-spawner".into())
                .spawn(move || {
                    for (mut cmd, reply) in rx {
                        let _ = reply.send(cmd.spawn());
                    }
                })
                .expect("start zk-spawner thread");
            Mutex::new(tx)
        })
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    // SAFETY: the closure only calls async-signal-safe functions (prctl, getppid).
    unsafe {
        let parent = libc::getpid();
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // The test binary died between fork and prctl: do not outlive it.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let (reply_tx, reply_rx) = mpsc::channel();
    tx.send((cmd, reply_tx)).expect("zk-spawner thread is gone");
    reply_rx.recv().expect("zk-spawner thread is gone")
}

/// Waits until every thread of `pid` is stopped (`stopped`) or none is, reading
/// `/proc/<pid>/task/*/stat`. Dead or vanished threads count as either.
pub fn wait_threads(pid: u32, timeout: Duration, stopped: bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        let all = match fs::read_dir(format!("/proc/{pid}/task")) {
            Err(_) => return true, // process gone
            Ok(tasks) => tasks.flatten().all(|task| {
                let stat = fs::read_to_string(task.path().join("stat")).unwrap_or_default();
                // "tid (comm) S ...": the state follows the last ')'.
                let state = stat
                    .rsplit_once(')')
                    .and_then(|(_, rest)| rest.trim_start().chars().next());
                match state {
                    None | Some('Z') | Some('X') | Some('x') => true,
                    Some('T') | Some('t') => stopped,
                    Some(_) => !stopped,
                }
            }),
        };
        if all {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// One JVM child process. Killed (SIGKILL) and reaped on drop.
struct Jvm {
    child: Child,
    pid: u32,
    paused: bool,
    exit: Option<ExitStatus>,
}

impl Jvm {
    /// Sends `sig` to the process. Safe against PID reuse: we never reap the child except in
    /// `reap`, so until then the PID stays ours (possibly as a zombie).
    fn signal(&self, sig: libc::c_int) -> io::Result<()> {
        if self.exit.is_some() {
            return Ok(());
        }
        // SAFETY: plain kill(2) on our own unreaped child.
        if unsafe { libc::kill(self.pid as libc::pid_t, sig) } != 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::ESRCH) {
                return Err(err);
            }
        }
        Ok(())
    }

    /// `Some(status)` once the process has exited (reaps it).
    fn exited(&mut self) -> Option<ExitStatus> {
        if self.exit.is_none() {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.exit = Some(status);
            }
        }
        self.exit
    }

    /// SIGCONT (a stopped process cannot act on anything but SIGKILL, which would still work,
    /// but keep it simple and symmetric) then SIGKILL, without waiting.
    fn start_kill(&mut self) {
        if self.exit.is_some() {
            return;
        }
        if self.paused {
            let _ = self.signal(libc::SIGCONT);
            self.paused = false;
        }
        let _ = self.signal(libc::SIGKILL);
    }

    /// Kills (if still running) and waits for the process.
    fn reap(&mut self) {
        self.start_kill();
        if self.exit.is_none() {
            match self.child.wait() {
                Ok(status) => self.exit = Some(status),
                Err(e) => eprintln!("[zk] waiting for pid {} failed: {e}", self.pid),
            }
        }
    }
}

impl Drop for Jvm {
    fn drop(&mut self) {
        self.reap();
    }
}

/// Quorum membership of a node: (myid, all servers as (myid, client port, quorum port, election port)).
#[derive(Clone)]
struct Peers {
    servers: Vec<(u32, u16, u16, u16)>,
}

/// One server's files and (optional) running process.
struct Node {
    label: String,
    dir: PathBuf,
    client_port: u16,
    myid: Option<u32>,
    peers: Option<Peers>,
    extra_config: Vec<(String, String)>,
    /// Extra JVM arguments (`-Dkey=value`), before the main class.
    jvm_args: Vec<String>,
    tuning: Tuning,
    /// The server's jars (and logging configuration files).
    lib: PathBuf,
    jvm: Option<Jvm>,
    last_pid: Option<u32>,
}

enum StartError {
    /// Died with "Address already in use" in its log: try other ports.
    PortConflict(String),
}

impl Node {
    fn new(
        label: String,
        dir: PathBuf,
        client_port: u16,
        myid: Option<u32>,
        peers: Option<Peers>,
        extra_config: Vec<(String, String)>,
        lib: PathBuf,
    ) -> Node {
        let node = Node {
            label,
            dir,
            client_port,
            myid,
            peers,
            extra_config,
            jvm_args: Vec::new(),
            tuning: Tuning::Tests,
            lib,
            jvm: None,
            last_pid: None,
        };
        fs::create_dir_all(node.data_dir()).expect("create ZooKeeper data dir");
        node.write_config();
        node.write_myid();
        node
    }

    /// This node with `tuning` (its config written again).
    fn tuned(mut self, tuning: Tuning) -> Node {
        self.tuning = tuning;
        self.write_config();
        self
    }

    fn addr(&self) -> SocketAddr {
        loopback(self.client_port)
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn config_path(&self) -> PathBuf {
        self.dir.join("zoo.cfg")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("zookeeper.log")
    }

    fn write_config(&self) {
        let tick = TICK_TIME.as_millis();
        let mut cfg = format!(
            "# Written by tests/support/zookeeper.rs\n\
             tickTime={tick}\n\
             initLimit=40\n\
             syncLimit=10\n\
             dataDir={data}\n\
             clientPort={port}\n\
             clientPortAddress=127.0.0.1\n\
             minSessionTimeout={min}\n\
             maxSessionTimeout={max}\n\
             maxClientCnxns=0\n\
             4lw.commands.whitelist=*\n\
             admin.enableServer=false\n",
            data = self.data_dir().display(),
            port = self.client_port,
            min = MIN_SESSION_TIMEOUT.as_millis(),
            max = MAX_SESSION_TIMEOUT.as_millis(),
        );
        if self.tuning == Tuning::Tests {
            cfg.push_str("forceSync=no\npreAllocSize=4096\n");
        }
        if let Some(peers) = &self.peers {
            // Election connections to a dead peer should give up quickly.
            cfg.push_str("cnxTimeout=2000\n");
            for (id, _client, quorum, election) in &peers.servers {
                cfg.push_str(&format!("server.{id}=127.0.0.1:{quorum}:{election}\n"));
            }
        }
        for (k, v) in &self.extra_config {
            cfg.push_str(&format!("{k}={v}\n"));
        }
        fs::write(self.config_path(), cfg).expect("write zoo.cfg");
    }

    fn write_myid(&self) {
        if let Some(id) = self.myid {
            fs::write(self.data_dir().join("myid"), format!("{id}\n")).expect("write myid");
        }
    }

    fn spawn(&mut self) {
        assert!(self.jvm.is_none(), "{}: already running", self.label);
        let lib = self.lib.clone();
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("open ZooKeeper log");
        let _ = writeln!(
            log,
            "===== [zk harness] starting {} on 127.0.0.1:{} =====",
            self.label, self.client_port
        );
        let level = std::env::var("ZOOID_ZK_LOG_LEVEL").unwrap_or_else(|_| "info".into());
        let mut cmd = Command::new(java_binary());
        match self.tuning {
            Tuning::Tests => cmd.args([
                "-Xmx256m",
                "-Xms32m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-XX:-UsePerfData",
                "-Xshare:auto",
            ]),
            // zkEnv.sh's ZK_SERVER_HEAP.
            Tuning::AsShipped => cmd.arg("-Xmx1000m"),
        };
        cmd.args([
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.net.preferIPv4Stack=true",
            "-Dzookeeper.admin.enableServer=false",
            "-Dzookeeper.jmx.log4j.disable=true",
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
        ])
        .arg(format!("-Dorg.slf4j.simpleLogger.defaultLogLevel={level}"))
        // Read by the log4j.properties / logback.xml that fetch-zookeeper.sh writes for
        // servers logging through log4j 1.2 (3.4) or logback (3.8).
        .arg(format!("-Dzooid.zk.log.level={level}"))
        .args(&self.jvm_args)
        .arg("-cp")
        // The jars, and the directory itself for those logging configuration files.
        .arg(format!("{lib}/*:{lib}", lib = lib.display()))
        .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
        .arg(self.config_path())
        .current_dir(&self.dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("clone log handle"))
        .stderr(log);
        let child = match spawn_with_parent_death_signal(cmd) {
            Ok(c) => c,
            Err(e) => panic!(
                "{}: cannot start `{}`: {e} (is a JDK installed?)",
                self.label,
                java_binary().display()
            ),
        };
        let pid = child.id();
        self.last_pid = Some(pid);
        self.jvm = Some(Jvm {
            child,
            pid,
            paused: false,
            exit: None,
        });
    }

    /// Running (possibly paused) and not exited.
    fn is_running(&mut self) -> bool {
        match &mut self.jvm {
            Some(jvm) => jvm.exited().is_none(),
            None => false,
        }
    }

    fn is_paused(&mut self) -> bool {
        self.is_running() && self.jvm.as_ref().map(|j| j.paused).unwrap_or(false)
    }

    /// Running, not paused: should answer four-letter words.
    fn is_live(&mut self) -> bool {
        self.is_running() && !self.is_paused()
    }

    fn exit_status(&mut self) -> Option<ExitStatus> {
        self.jvm.as_mut().and_then(|j| j.exited())
    }

    fn kill(&mut self) {
        if let Some(mut jvm) = self.jvm.take() {
            jvm.reap();
        }
    }

    fn pause(&mut self) {
        self.stop_or_continue(true);
    }

    fn resume(&mut self) {
        self.stop_or_continue(false);
    }

    /// SIGSTOP (`stop`) or SIGCONT the JVM and wait until its threads have all stopped or all
    /// continued: kill(2) returns before they have, and a probe right after `pause` must not be
    /// answered.
    fn stop_or_continue(&mut self, stop: bool) {
        let (signal, name) = if stop {
            (libc::SIGSTOP, "SIGSTOP")
        } else {
            (libc::SIGCONT, "SIGCONT")
        };
        let jvm = self
            .jvm
            .as_mut()
            .unwrap_or_else(|| panic!("{}: {name}: not running", self.label));
        jvm.signal(signal).expect(name);
        jvm.paused = stop;
        let pid = jvm.pid;
        if !wait_threads(pid, Duration::from_secs(10), stop) {
            panic!(
                "{}: pid {pid} did not react within 10 s of {name}",
                self.label
            );
        }
    }

    /// Deletes the data (snapshots, transaction logs), keeping `myid`.
    fn wipe_data(&mut self) {
        assert!(self.jvm.is_none(), "{}: wipe while running", self.label);
        let data = self.data_dir();
        if let Ok(entries) = fs::read_dir(&data) {
            for e in entries.flatten() {
                if e.file_name() == "myid" {
                    continue;
                }
                let p = e.path();
                let _ = if p.is_dir() {
                    fs::remove_dir_all(&p)
                } else {
                    fs::remove_file(&p)
                };
            }
        }
        self.write_myid();
    }

    fn log_tail(&self, n: usize) -> String {
        tail_file(&self.log_path(), n)
    }

    /// If the process died: `Err` with a description (or a port conflict to retry).
    fn check_alive(&mut self) -> Result<(), StartError> {
        if let Some(status) = self.exit_status() {
            let tail = self.log_tail(60);
            if tail.contains("Address already in use") {
                return Err(StartError::PortConflict(tail));
            }
            panic!(
                "{} (pid {:?}) exited with {status} while starting; log {}:\n{tail}",
                self.label,
                self.last_pid,
                self.log_path().display()
            );
        }
        Ok(())
    }

    fn describe(&mut self) -> String {
        let state = if self.jvm.is_none() {
            "stopped".to_string()
        } else if let Some(status) = self.exit_status() {
            format!("exited ({status})")
        } else if self.is_paused() {
            "paused".to_string()
        } else {
            match probe_mode(self.addr()) {
                Some(mode) => format!("serving as {mode}"),
                None => "running, not serving".to_string(),
            }
        };
        format!(
            "{} 127.0.0.1:{} pid {:?}: {state}",
            self.label, self.client_port, self.last_pid
        )
    }
}

/// A standalone ZooKeeper server on 127.0.0.1:<free port>.
///
/// All methods take `&self`, so a server can be shared (e.g. in an `Arc`) between tasks.
pub struct ZkServer {
    node: Mutex<Node>,
    addr: SocketAddr,
    tmp: Option<TempDir>,
}

impl ZkServer {
    /// Starts a server and waits (up to 30 s) until it serves requests; panics with the log
    /// tail if it does not.
    pub fn start() -> ZkServer {
        Self::start_with(&[])
    }

    /// Like [`ZkServer::start`], with extra `zoo.cfg` lines (later keys override the defaults).
    pub fn start_with(extra_config: &[(&str, &str)]) -> ZkServer {
        Self::start_with_jvm_args(extra_config, &[])
    }

    /// Like [`ZkServer::start_with`], with extra JVM arguments such as
    /// `-Djava.security.auth.login.config=FILE` (for SASL) before the main class.
    pub fn start_with_jvm_args(extra_config: &[(&str, &str)], jvm_args: &[String]) -> ZkServer {
        Self::start_from(zk_lib_dir(), extra_config, jvm_args, Tuning::Tests)
    }

    /// Like [`ZkServer::start`], tuned as ZooKeeper ships ([`Tuning::AsShipped`]): for
    /// benchmarks.
    pub fn start_as_shipped() -> ZkServer {
        Self::start_from(zk_lib_dir(), &[], &[], Tuning::AsShipped)
    }

    /// Like [`ZkServer::start`], running ZooKeeper `version` (such as `"3.4.14"`) from
    /// [`zk_version_lib_dir`] instead of the suite's default server.
    pub fn start_version(version: &str) -> ZkServer {
        Self::start_from(zk_version_lib_dir(version), &[], &[], Tuning::Tests)
    }

    fn start_from(
        lib: PathBuf,
        extra_config: &[(&str, &str)],
        jvm_args: &[String],
        tuning: Tuning,
    ) -> ZkServer {
        let extra: Vec<(String, String)> = extra_config
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut last_conflict = String::new();
        for _attempt in 0..PORT_ATTEMPTS {
            let tmp = make_temp_dir("zooid-zk-");
            let port = free_ports(1)[0];
            let mut node = Node::new(
                "zk-standalone".into(),
                tmp.path().to_path_buf(),
                port,
                None,
                None,
                extra.clone(),
                lib.clone(),
            )
            .tuned(tuning);
            node.jvm_args = jvm_args.to_vec();
            node.spawn();
            match wait_serving(&mut node, STANDALONE_START_TIMEOUT) {
                Ok(()) => {
                    return ZkServer {
                        addr: node.addr(),
                        node: Mutex::new(node),
                        tmp: Some(tmp),
                    };
                }
                Err(StartError::PortConflict(tail)) => {
                    node.kill();
                    last_conflict = tail;
                }
            }
        }
        panic!("ZooKeeper could not bind a free port in {PORT_ATTEMPTS} attempts; last log:\n{last_conflict}");
    }

    fn node(&self) -> MutexGuard<'_, Node> {
        self.node.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `"127.0.0.1:PORT"`.
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// The client address (127.0.0.1:PORT). Stays the same across [`ZkServer::restart`].
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// PID of the current JVM, or of the last one if the server was stopped.
    pub fn pid(&self) -> u32 {
        self.node().last_pid.expect("server was never started")
    }

    /// The process exists and has not exited (a paused server counts as running).
    pub fn is_running(&self) -> bool {
        self.node().is_running()
    }

    /// Kills the server (SIGKILL, like a crash) and waits for the process. Data stays.
    pub fn stop(&self) {
        self.node().kill();
    }

    /// Same as [`ZkServer::stop`]: SIGKILL + wait.
    pub fn kill(&self) {
        self.stop();
    }

    /// Stops the server if it runs, starts it again on the same port with the same data, and
    /// waits until it serves.
    pub fn restart(&self) {
        let mut node = self.node();
        node.kill();
        node.spawn();
        if let Err(StartError::PortConflict(tail)) =
            wait_serving(&mut node, STANDALONE_START_TIMEOUT)
        {
            panic!(
                "restart: port {} was taken by someone else meanwhile; log:\n{tail}",
                self.addr.port()
            );
        }
    }

    /// SIGSTOP: the process freezes; connections stay open but nothing is answered.
    pub fn pause(&self) {
        self.node().pause();
    }

    /// SIGCONT after [`ZkServer::pause`].
    pub fn resume(&self) {
        self.node().resume();
    }

    /// Whether `srvr` currently reports a serving server.
    pub fn is_serving(&self) -> bool {
        probe_mode(self.addr).is_some()
    }

    /// Sends a four-letter word (e.g. `"srvr"`, `"mntr"`, `"cons"`) and returns the answer.
    pub fn four_letter(&self, cmd: &str) -> io::Result<String> {
        four_letter_word(self.addr, cmd, PROBE_TIMEOUT * 5)
    }

    /// The number of sessions the server holds (`zk_global_sessions` in `mntr`).
    pub fn global_sessions(&self) -> u64 {
        let mntr = self.four_letter("mntr").expect("mntr");
        mntr.lines()
            .find_map(|line| line.strip_prefix("zk_global_sessions"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no zk_global_sessions in mntr:\n{mntr}"))
    }

    /// Waits up to `within` for [`ZkServer::global_sessions`] to be `want`; returns the last
    /// count.
    pub fn wait_global_sessions(&self, want: u64, within: Duration) -> u64 {
        let end = Instant::now() + within;
        loop {
            let now = self.global_sessions();
            if now == want || Instant::now() >= end {
                return now;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn data_dir(&self) -> PathBuf {
        self.node().data_dir()
    }

    pub fn log_path(&self) -> PathBuf {
        self.node().log_path()
    }

    /// Last `n` lines of the server log.
    pub fn log_tail(&self, n: usize) -> String {
        self.node().log_tail(n)
    }
}

impl Drop for ZkServer {
    fn drop(&mut self) {
        let node = self.node.get_mut().unwrap_or_else(|e| e.into_inner());
        if std::thread::panicking() {
            eprintln!(
                "[zk] test panicked; {}; last lines of {}:\n{}",
                node.describe(),
                node.log_path().display(),
                node.log_tail(30)
            );
        }
        node.kill();
        finish_temp_dir(self.tmp.take());
    }
}

/// Waits until `node` reports any serving mode.
fn wait_serving(node: &mut Node, timeout: Duration) -> Result<(), StartError> {
    let deadline = Instant::now() + timeout;
    loop {
        node.check_alive()?;
        if probe_mode(node.addr()).is_some() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let desc = node.describe();
            let tail = node.log_tail(60);
            node.kill();
            panic!("ZooKeeper did not start serving within {timeout:?}: {desc}; log:\n{tail}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A ZooKeeper ensemble of `n` servers on 127.0.0.1, each with its own client, quorum and
/// election ports, data directory and `myid` (= index + 1). Servers are addressed by
/// 0-based index.
///
/// All methods take `&self`, so an ensemble can be shared (e.g. in an `Arc`) between tasks.
pub struct ZkEnsemble {
    nodes: Mutex<Vec<Node>>,
    addrs: Vec<SocketAddr>,
    tmp: Option<TempDir>,
}

impl ZkEnsemble {
    /// Starts `n` servers in parallel and waits (up to 60 s) until they have formed a quorum
    /// with all `n` serving. Panics with every server's state and log tail if they do not.
    pub fn start(n: usize) -> ZkEnsemble {
        Self::start_with(n, &[])
    }

    /// Like [`ZkEnsemble::start`], with extra `zoo.cfg` lines for every server.
    pub fn start_with(n: usize, extra_config: &[(&str, &str)]) -> ZkEnsemble {
        Self::start_tuned(n, extra_config, Tuning::Tests)
    }

    /// Like [`ZkEnsemble::start`], tuned as ZooKeeper ships ([`Tuning::AsShipped`]): for
    /// benchmarks.
    pub fn start_as_shipped(n: usize) -> ZkEnsemble {
        Self::start_tuned(n, &[], Tuning::AsShipped)
    }

    fn start_tuned(n: usize, extra_config: &[(&str, &str)], tuning: Tuning) -> ZkEnsemble {
        assert!(n >= 1, "an ensemble needs at least one server");
        let extra: Vec<(String, String)> = extra_config
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut last_conflict = String::new();
        for _attempt in 0..PORT_ATTEMPTS {
            let tmp = make_temp_dir("zooid-zk-ensemble-");
            let ports = free_ports(3 * n);
            let peers = Peers {
                servers: (0..n)
                    .map(|i| {
                        (
                            (i + 1) as u32,
                            ports[3 * i],
                            ports[3 * i + 1],
                            ports[3 * i + 2],
                        )
                    })
                    .collect(),
            };
            let mut nodes: Vec<Node> = (0..n)
                .map(|i| {
                    Node::new(
                        format!("zk{}", i + 1),
                        tmp.path().join(format!("zk{}", i + 1)),
                        ports[3 * i],
                        Some((i + 1) as u32),
                        Some(peers.clone()),
                        extra.clone(),
                        zk_lib_dir(),
                    )
                    .tuned(tuning)
                })
                .collect();
            for node in nodes.iter_mut() {
                node.spawn();
            }
            let addrs = nodes.iter().map(|n| n.addr()).collect();
            let ensemble = ZkEnsemble {
                nodes: Mutex::new(nodes),
                addrs,
                tmp: Some(tmp),
            };
            match ensemble.wait_for_quorum_inner(ENSEMBLE_START_TIMEOUT, n) {
                Ok(_) => return ensemble,
                Err(StartError::PortConflict(tail)) => {
                    last_conflict = tail;
                    drop(ensemble);
                }
            }
        }
        panic!("ZooKeeper ensemble could not bind free ports in {PORT_ATTEMPTS} attempts; last log:\n{last_conflict}");
    }

    fn nodes(&self) -> MutexGuard<'_, Vec<Node>> {
        self.nodes.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn check_index(&self, i: usize) {
        assert!(
            i < self.addrs.len(),
            "server index {i} out of range (ensemble of {})",
            self.addrs.len()
        );
    }

    /// Number of servers.
    pub fn len(&self) -> usize {
        self.addrs.len()
    }

    /// Whether the ensemble has no server (never, once started).
    pub fn is_empty(&self) -> bool {
        self.addrs.is_empty()
    }

    /// `"127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3"`.
    pub fn connect_string(&self) -> String {
        self.addrs
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// `"127.0.0.1:Pi"`: server `i` alone.
    pub fn server_connect_string(&self, i: usize) -> String {
        self.server_addr(i).to_string()
    }

    /// Client address of server `i`.
    pub fn server_addr(&self, i: usize) -> SocketAddr {
        self.check_index(i);
        self.addrs[i]
    }

    /// PID of server `i`'s current (or last) JVM.
    pub fn pid(&self, i: usize) -> Option<u32> {
        self.check_index(i);
        self.nodes()[i].last_pid
    }

    /// The process of server `i` exists and has not exited (paused counts as running).
    pub fn is_running(&self, i: usize) -> bool {
        self.check_index(i);
        self.nodes()[i].is_running()
    }

    /// Server `i` is SIGSTOPped.
    pub fn is_paused(&self, i: usize) -> bool {
        self.check_index(i);
        self.nodes()[i].is_paused()
    }

    /// Servers whose process runs and is not paused.
    fn live(&self) -> Vec<usize> {
        let mut nodes = self.nodes();
        (0..nodes.len()).filter(|&i| nodes[i].is_live()).collect()
    }

    /// What server `i` reports as `Mode:` through `srvr` (`"leader"`, `"follower"`), or `None`
    /// if it is down, paused, or not serving.
    pub fn mode(&self, i: usize) -> Option<String> {
        self.check_index(i);
        if !self.nodes()[i].is_live() {
            return None;
        }
        probe_mode(self.addrs[i])
    }

    /// Index of the server that reports `Mode: leader` (paused and dead servers are not asked).
    pub fn leader(&self) -> Option<usize> {
        self.live()
            .into_iter()
            .find(|&i| probe_mode(self.addrs[i]).as_deref() == Some("leader"))
    }

    /// Waits until there is a quorum: every running, unpaused server serves (as leader or
    /// follower), exactly one of them is the leader, and they are a majority of the ensemble.
    /// Returns the leader's index; panics with every server's state and log tail on timeout.
    pub fn wait_for_quorum(&self, timeout: Duration) -> usize {
        let majority = self.len() / 2 + 1;
        match self.wait_for_quorum_inner(timeout, majority) {
            Ok(leader) => leader,
            Err(StartError::PortConflict(tail)) => {
                panic!("a ZooKeeper server lost its port:\n{tail}")
            }
        }
    }

    /// Like [`ZkEnsemble::wait_for_quorum`], but returns `None` instead of panicking.
    pub fn try_wait_for_quorum(&self, timeout: Duration) -> Option<usize> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(leader) = self.quorum_leader(self.len() / 2 + 1) {
                return Some(leader);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits for a quorum whose leader is not `old_leader`; returns the new leader.
    pub fn wait_for_new_leader(&self, old_leader: usize, timeout: Duration) -> usize {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let leader = self.wait_for_quorum(left.max(Duration::from_millis(1)));
            if leader != old_leader {
                return leader;
            }
            if Instant::now() >= deadline {
                panic!(
                    "server {old_leader} is still the leader after {timeout:?}:\n{}",
                    self.status_report(20)
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn quorum_leader(&self, min_serving: usize) -> Option<usize> {
        let live = self.live();
        if live.len() < min_serving {
            return None;
        }
        let mut leader = None;
        for i in live {
            match probe_mode(self.addrs[i]).as_deref() {
                Some("leader") if leader.is_none() => leader = Some(i),
                Some("follower") | Some("observer") => {}
                _ => return None,
            }
        }
        leader
    }

    fn wait_for_quorum_inner(
        &self,
        timeout: Duration,
        min_serving: usize,
    ) -> Result<usize, StartError> {
        let deadline = Instant::now() + timeout;
        loop {
            {
                let mut nodes = self.nodes();
                for node in nodes.iter_mut() {
                    if node.jvm.is_some() {
                        node.check_alive()?;
                    }
                }
            }
            if let Some(leader) = self.quorum_leader(min_serving) {
                return Ok(leader);
            }
            if Instant::now() >= deadline {
                panic!(
                    "ZooKeeper ensemble has no quorum after {timeout:?}:\n{}",
                    self.status_report(40)
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// One line per server (state, mode) followed by each server's last `log_lines` log lines.
    pub fn status_report(&self, log_lines: usize) -> String {
        let mut nodes = self.nodes();
        let mut out = String::new();
        for node in nodes.iter_mut() {
            out.push_str(&node.describe());
            out.push('\n');
        }
        if log_lines > 0 {
            for node in nodes.iter() {
                out.push_str(&format!(
                    "--- {} ({}) ---\n{}\n",
                    node.label,
                    node.log_path().display(),
                    node.log_tail(log_lines)
                ));
            }
        }
        out
    }

    /// SIGKILL server `i` and wait for the process. Its data stays; see [`ZkEnsemble::restart`].
    pub fn kill(&self, i: usize) {
        self.check_index(i);
        self.nodes()[i].kill();
    }

    /// SIGSTOP server `i`: it keeps its sockets but answers nothing (a hung or partitioned server).
    pub fn pause(&self, i: usize) {
        self.check_index(i);
        self.nodes()[i].pause();
    }

    /// SIGCONT server `i` after [`ZkEnsemble::pause`].
    pub fn resume(&self, i: usize) {
        self.check_index(i);
        self.nodes()[i].resume();
    }

    /// Kills server `i` if it runs and starts it again with the same ports and data. Does not
    /// wait for it to rejoin: use [`ZkEnsemble::wait_for_quorum`].
    pub fn restart(&self, i: usize) {
        self.check_index(i);
        let mut nodes = self.nodes();
        nodes[i].kill();
        nodes[i].spawn();
    }

    /// Adds `extra_config` lines to server `i`'s `zoo.cfg` (after the others, so they override
    /// them): they take effect at its next [`ZkEnsemble::restart`].
    pub fn configure(&self, i: usize, extra_config: &[(&str, &str)]) {
        self.check_index(i);
        let mut nodes = self.nodes();
        for (k, v) in extra_config {
            nodes[i].extra_config.push((k.to_string(), v.to_string()));
        }
        nodes[i].write_config();
    }

    /// Kills server `i` and deletes its data (snapshots and transaction logs), keeping `myid`.
    /// A later [`ZkEnsemble::restart`] brings it back empty; it then syncs from the leader.
    pub fn wipe(&self, i: usize) {
        self.check_index(i);
        let mut nodes = self.nodes();
        nodes[i].kill();
        nodes[i].wipe_data();
    }

    /// Four-letter word to server `i`.
    pub fn four_letter(&self, i: usize, cmd: &str) -> io::Result<String> {
        four_letter_word(self.server_addr(i), cmd, PROBE_TIMEOUT * 5)
    }

    pub fn data_dir(&self, i: usize) -> PathBuf {
        self.check_index(i);
        self.nodes()[i].data_dir()
    }

    pub fn log_path(&self, i: usize) -> PathBuf {
        self.check_index(i);
        self.nodes()[i].log_path()
    }

    pub fn log_tail(&self, i: usize, n: usize) -> String {
        self.check_index(i);
        self.nodes()[i].log_tail(n)
    }
}

impl Drop for ZkEnsemble {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "[zk] test panicked; ensemble state:\n{}",
                self.status_report(25)
            );
        }
        let nodes = self.nodes.get_mut().unwrap_or_else(|e| e.into_inner());
        // Kill all first, then reap, so the servers die together instead of watching each
        // other go one by one (and starting elections meanwhile).
        for node in nodes.iter_mut() {
            if let Some(jvm) = node.jvm.as_mut() {
                jvm.start_kill();
            }
        }
        for node in nodes.iter_mut() {
            node.kill();
        }
        finish_temp_dir(self.tmp.take());
    }
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<ZkServer>();
    is::<ZkEnsemble>();
}

/// The quorum and election links of an ensemble started with
/// [`ZkEnsemble::start_with_links`]: every server reaches every peer through its own
/// [`LinkRelay`], so one server can be cut off from the others (its quorum and election
/// traffic held, connections left open) while its clients stay connected to it.
pub struct QuorumLinks {
    /// (from server, to server, relay), both the quorum and the election port of `to`.
    relays: Vec<(usize, usize, LinkRelay)>,
}

impl QuorumLinks {
    /// Holds every byte between server `i` and its peers, both ways, until [`QuorumLinks::heal`].
    pub fn isolate(&self, i: usize) {
        for (from, to, relay) in &self.relays {
            if *from == i || *to == i {
                relay.cut();
            }
        }
    }

    /// Lets every link flow again.
    pub fn heal(&self) {
        for (_, _, relay) in &self.relays {
            relay.heal();
        }
    }

    /// Guard: how many times a relay of server `i`'s links found bytes waiting while cut.
    pub fn held(&self, i: usize) -> u64 {
        self.relays
            .iter()
            .filter(|(from, to, _)| *from == i || *to == i)
            .map(|(_, _, relay)| relay.held())
            .sum()
    }
}

impl ZkEnsemble {
    /// Like [`ZkEnsemble::start_with`], but each server's `server.N` lines for its peers point at
    /// relays, so [`QuorumLinks::isolate`] can cut one server off the quorum while its client
    /// port keeps answering (its pings are served locally until `syncLimit` ticks pass).
    pub fn start_with_links(n: usize, extra_config: &[(&str, &str)]) -> (ZkEnsemble, QuorumLinks) {
        assert!(n >= 1, "an ensemble needs at least one server");
        let extra: Vec<(String, String)> = extra_config
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut last_conflict = String::new();
        for _attempt in 0..PORT_ATTEMPTS {
            let tmp = make_temp_dir("zooid-zk-ensemble-");
            let ports = free_ports(3 * n);
            let real: Vec<(u32, u16, u16, u16)> = (0..n)
                .map(|i| {
                    (
                        (i + 1) as u32,
                        ports[3 * i],
                        ports[3 * i + 1],
                        ports[3 * i + 2],
                    )
                })
                .collect();
            let mut relays = Vec::new();
            let mut nodes: Vec<Node> = Vec::new();
            for i in 0..n {
                let mut servers = Vec::new();
                for (j, &(id, client, quorum, election)) in real.iter().enumerate() {
                    if i == j {
                        servers.push((id, client, quorum, election));
                        continue;
                    }
                    let q = LinkRelay::start(loopback(quorum));
                    let e = LinkRelay::start(loopback(election));
                    servers.push((id, client, q.port(), e.port()));
                    relays.push((i, j, q));
                    relays.push((i, j, e));
                }
                nodes.push(Node::new(
                    format!("zk{}", i + 1),
                    tmp.path().join(format!("zk{}", i + 1)),
                    ports[3 * i],
                    Some((i + 1) as u32),
                    Some(Peers { servers }),
                    extra.clone(),
                    zk_lib_dir(),
                ));
            }
            for node in nodes.iter_mut() {
                node.spawn();
            }
            let addrs = nodes.iter().map(|n| n.addr()).collect();
            let ensemble = ZkEnsemble {
                nodes: Mutex::new(nodes),
                addrs,
                tmp: Some(tmp),
            };
            match ensemble.wait_for_quorum_inner(ENSEMBLE_START_TIMEOUT, n) {
                Ok(_) => return (ensemble, QuorumLinks { relays }),
                Err(StartError::PortConflict(tail)) => {
                    last_conflict = tail;
                    drop(ensemble);
                }
            }
        }
        panic!("ZooKeeper ensemble could not bind free ports in {PORT_ATTEMPTS} attempts; last log:\n{last_conflict}");
    }
}

/// A raw TCP relay (no framing: quorum and election traffic are not client frames) that can be
/// cut: while cut it reads nothing, so bytes wait in the kernel and connections stay open.
pub struct LinkRelay {
    port: u16,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
    held: std::sync::Arc<std::sync::atomic::AtomicU64>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl LinkRelay {
    /// Listens on a free loopback port and relays every connection to `upstream`.
    pub fn start(upstream: SocketAddr) -> LinkRelay {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind a relay port");
        listener.set_nonblocking(true).expect("nonblocking relay");
        let port = listener.local_addr().expect("relay address").port();
        let cut = Arc::new(AtomicBool::new(false));
        let held = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, h, s) = (cut.clone(), held.clone(), stop.clone());
        let accept = std::thread::spawn(move || {
            while !s.load(std::sync::atomic::Ordering::SeqCst) {
                match listener.accept() {
                    Ok((down, _)) => {
                        let Ok(up) = TcpStream::connect_timeout(&upstream, Duration::from_secs(2))
                        else {
                            continue;
                        };
                        for (from, to) in [
                            (down.try_clone(), up.try_clone()),
                            (up.try_clone(), down.try_clone()),
                        ] {
                            if let (Ok(from), Ok(to)) = (from, to) {
                                let (c, h, s) = (c.clone(), h.clone(), s.clone());
                                std::thread::spawn(move || pump(from, to, &c, &h, &s));
                            }
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        LinkRelay {
            port,
            cut,
            held,
            stop,
            accept: Some(accept),
        }
    }

    /// The port peers connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops relaying (both ways) until [`LinkRelay::heal`].
    pub fn cut(&self) {
        self.cut.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Relays again; held bytes flow.
    pub fn heal(&self) {
        self.cut.store(false, std::sync::atomic::Ordering::SeqCst);
    }

    /// How many times bytes were found waiting while cut (the guard that traffic was held).
    pub fn held(&self) -> u64 {
        self.held.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for LinkRelay {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// Copies `from` to `to` until either side closes or the relay stops; reads nothing while cut.
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    cut: &std::sync::atomic::AtomicBool,
    held: &std::sync::atomic::AtomicU64,
    stop: &std::sync::atomic::AtomicBool,
) {
    use std::sync::atomic::Ordering;
    let _ = from.set_read_timeout(Some(Duration::from_millis(50)));
    let mut buf = vec![0u8; 64 * 1024];
    let mut was_held = false;
    while !stop.load(Ordering::SeqCst) {
        if cut.load(Ordering::SeqCst) {
            if !was_held && matches!(from.peek(&mut buf[..1]), Ok(n) if n > 0) {
                was_held = true;
                held.fetch_add(1, Ordering::SeqCst);
            }
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        was_held = false;
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Both);
    let _ = from.shutdown(std::net::Shutdown::Both);
}
