//! Test support shared by the integration tests: a real Apache ZooKeeper (standalone server or
//! a 3-server ensemble, run as JVM child processes) and a fault-injecting TCP proxy that speaks
//! just enough of ZooKeeper's wire protocol to lose precisely the reply a test cares about.
//!
//! The crate `zooid-test-support`, a dev-dependency of the workspace's crates, compiled once for
//! every test binary and benchmark:
//!
//! ```ignore
//! use zooid_test_support as support;
//! use support::{FaultProxy, ZkEnsemble, ZkServer, op};
//! ```
//!
//! Besides the servers and the proxy: the store behaviour suite ([`behaviour`], with the
//! fault-injecting store [`faulty`]), the C program harness ([`c`]) and the TLS / SASL / Kerberos
//! fixtures ([`security`]).
//!
//! The ZooKeeper jars must already be on disk (`bash scripts/fetch-zookeeper.sh`); tests never
//! download anything. Every process started here is owned by a Rust value and is killed by PID
//! and reaped when that value drops, also when the test panics.

pub mod behaviour;
pub mod c;
pub mod faulty;
pub mod ports;
pub mod proxy;
pub mod security;
pub mod zookeeper;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use ports::free_loopback_ports;
pub use proxy::{op, FaultProxy, MatchFn, Mode, ProxyStats, RequestMatch, ResetPoint};
pub use zookeeper::{
    four_letter_word, spawn_owned, spawn_with_parent_death_signal, zk_lib_dir, zk_version_lib_dir,
    LinkRelay, QuorumLinks, Tuning, ZkEnsemble, ZkServer,
};

/// The repository (workspace) root.
pub fn repo() -> PathBuf {
    let support = Path::new(env!("CARGO_MANIFEST_DIR"));
    support
        .parent()
        .and_then(Path::parent)
        .expect("the support crate lives in <repo>/tests/support")
        .to_path_buf()
}

/// The binary of `examples/NAME.rs`, built once per test binary in the profile and target
/// directory the tests run in (multi-process tests start it as their workload).
pub fn example_binary(name: &str) -> std::path::PathBuf {
    built_binary(
        "zooid",
        &["--example", name],
        &format!("examples/{name}"),
        None,
    )
}

/// The `zooid` command-line tool (package `zooid-cli`), for tests outside its package that start
/// `zooid keeper` or `zooid restore` (its own tests use `CARGO_BIN_EXE_zooid`). Built once per
/// test binary in the running test's profile, in a target directory of its own
/// (`<target>/cli-for-tests`): the CLI turns on the library's `s3` feature, and the library's
/// rlib has no hash in its file name (it is also a cdylib), so a build in the shared target
/// directory would overwrite the rlib the tests and examples link with another variant.
/// `ZOOID_CLI`, when set, names a `zooid` built with the tests already (scripts/test-all.sh sets
/// it after its workspace build, whose features are unified: no second build of every crate).
pub fn cli_binary() -> std::path::PathBuf {
    if let Some(path) = std::env::var_os("ZOOID_CLI").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(path.is_file(), "ZOOID_CLI={} is not a file", path.display());
        return path;
    }
    built_binary(
        "zooid-cli",
        &["--bin", "zooid"],
        "zooid",
        Some("cli-for-tests"),
    )
}

/// Builds `cargo build -p PACKAGE TARGET` once per test binary, in the profile of the running
/// test and its target directory (or the directory `separate` inside it), and returns
/// `<target>[/<separate>]/<profile>/<output>`.
fn built_binary(
    package: &str,
    target_args: &[&str],
    output: &str,
    separate: Option<&str>,
) -> PathBuf {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let mut built = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let key = format!("{package} {output}");
    if let Some(bin) = built.get(&key) {
        return bin.clone();
    }
    let exe = std::env::current_exe().expect("current_exe");
    // <target>/<profile>/deps/TEST-HASH
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test binary in <target>/<profile>/deps")
        .to_path_buf();
    let profile = profile_dir
        .file_name()
        .expect("profile dir name")
        .to_string_lossy()
        .into_owned();
    let target = profile_dir.parent().expect("target dir").to_path_buf();
    let (target, profile_dir) = match separate {
        Some(dir) => (target.join(dir), target.join(dir).join(&profile)),
        None => (target, profile_dir),
    };
    let mut cmd = std::process::Command::new(env!("CARGO"));
    cmd.args(["build", "--quiet", "-p", package])
        .args(target_args)
        .current_dir(repo())
        .env("CARGO_TARGET_DIR", &target);
    match profile.as_str() {
        "debug" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    let status = cmd.status().expect("run cargo build");
    assert!(status.success(), "building {output} of {package} failed");
    let bin = profile_dir.join(output);
    assert!(bin.is_file(), "{} missing after the build", bin.display());
    built.insert(key, bin.clone());
    bin
}

/// A 2-worker multi-thread tokio runtime for a test's async part.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime for the test")
}

/// Connect options with the given ZooKeeper session timeout, everything else default.
pub fn session_options(session_ms: u64) -> zooid::ConnectOptions {
    zooid::ConnectOptions {
        session_timeout: Duration::from_millis(session_ms),
        ..zooid::ConnectOptions::default()
    }
}

/// Service options whose operations each retry for at most `deadline` (tests that outlast a
/// session timeout with a fault in place).
pub fn service_options_with_deadline(deadline: Duration) -> zooid::ServiceOptions {
    zooid::ServiceOptions {
        retry: zooid::RetryPolicy {
            deadline,
            ..zooid::RetryPolicy::default()
        },
        ..zooid::ServiceOptions::default()
    }
}

/// Installs a `tracing` subscriber once per test binary, filtered by `RUST_LOG`
/// (default `warn`), writing through the test harness's captured output.
pub fn init_tracing() {
    use std::sync::Once;
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_test_writer()
            .try_init();
    });
}

/// The wall-clock time in microseconds since the Unix epoch (0 before it), for timestamps that
/// are compared across processes.
pub fn now_us() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0)
}

/// Polls `cond` every 50 ms until it returns true or `timeout` passes; returns whether it held.
/// Blocking: from async code prefer a loop with `tokio::time::sleep`.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
