//! The C ABI, from C: the committed header is current, and C programs under `tests/c/`, compiled
//! against it and linked to both the shared and the static library, pass against the embedded
//! stores and a real ZooKeeper; once under valgrind; and the C example builds through
//! pkg-config.

use zooid_test_support as support;
use zooid_test_support::c as harness;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Instant;

use harness::{compile, run, run_ok, Link};
use support::{op, FaultProxy, ZkServer};

/// Compiles each C test program once per link kind, shared by the tests of this binary.
type Built = Vec<(String, Link, &'static Path)>;

fn program(name: &str, link: Link) -> &'static Path {
    static BUILT: OnceLock<std::sync::Mutex<Built>> = OnceLock::new();
    let built = BUILT.get_or_init(Default::default);
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, path)) = built.iter().find(|(n, l, _)| n == name && *l == link) {
        return path;
    }
    let source = format!("tests/c/{name}.c");
    let exe = compile(name, &[&source], link, &["-pthread"]);
    let exe: &'static Path = Box::leak(exe.into_boxed_path());
    built.push((name.to_string(), link, exe));
    exe
}

fn run_program(name: &str, link: Link, args: &[&str]) -> String {
    let out = run_ok(Command::new(program(name, link)).args(args));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("zooid-c-abi-")
        .tempdir()
        .expect("create a temp dir")
}

#[test]
fn committed_header_matches_the_generated_one() {
    let generated_path = env!("ZOOID_GENERATED_HEADER");
    let generated = std::fs::read_to_string(generated_path).expect("build.rs generated the header");
    let committed_path = harness::repo().join("include/zooid.h");
    let committed = std::fs::read_to_string(&committed_path).unwrap_or_default();
    assert!(
        !generated.starts_with("#error"),
        "cbindgen failed in build.rs: {generated}"
    );
    assert!(
        committed == generated,
        "include/zooid.h is stale: src/ffi or cbindgen.toml changed. Refresh it with\n  cp {generated_path} {}",
        committed_path.display()
    );
}

#[test]
fn header_compiles_as_cpp() {
    let exe = harness::out_dir().join("header-cpp");
    let mut cmd = Command::new("c++");
    cmd.args(["-std=c++11", "-Wall", "-Wextra", "-Werror", "-x", "c++"])
        .arg(harness::repo().join("tests/c/header_cpp.cpp"))
        .arg("-I")
        .arg(harness::repo().join("include"))
        .arg("-o")
        .arg(&exe);
    harness::link_args(&mut cmd, Link::Shared);
    run_ok(&mut cmd);
    let out = run_ok(&mut Command::new(&exe));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "ZOOID_STATUS_EXHAUSTED 2"
    );
}

#[test]
fn programs_link_the_library_they_were_built_for() {
    assert!(harness::needs_shared_zooid(program(
        "worked_example",
        Link::Shared
    )));
    assert!(!harness::needs_shared_zooid(program(
        "worked_example",
        Link::Static
    )));
}

#[test]
fn worked_example_on_the_embedded_stores() {
    for link in Link::BOTH {
        let out = run_program("worked_example", link, &["mem:"]);
        assert!(out.contains("worked example OK"), "{out}");
        let dir = temp_dir();
        let connect = format!("file:{}", dir.path().display());
        run_program("worked_example", link, &[&connect]);
        // The file store is a real shared store: the pool is there for the next process.
        let node = dir.path().join("eventpublish/idgen/did/.node");
        let text = std::fs::read_to_string(&node).expect("the pool node file");
        assert!(text.starts_with("zooid-node 7\n"), "{text}");
        assert!(text.lines().any(|l| l == "37001:123456789"), "{text}");
    }
}

#[test]
fn many_threads_take_unique_ids_on_the_embedded_stores() {
    for link in Link::BOTH {
        let out = run_program("threads", link, &["mem:", "", "8", "40"]);
        assert!(out.contains("threads OK"), "{out}");
    }
    let dir = temp_dir();
    let connect = format!("file:{}", dir.path().display());
    run_program("threads", Link::Shared, &[&connect, "", "4", "15"]);
}

/// A set shared by two threads or pushed twice (tests/c/set_sharing.c): no ID is handed out
/// twice, the second push fails with `ZOOID_STATUS_CLOSED`.
#[test]
fn a_set_shared_by_threads_or_pushed_twice_hands_out_no_id_twice() {
    for link in Link::BOTH {
        let out = run_program("set_sharing", link, &["mem:"]);
        assert!(out.contains("set sharing OK"), "{out}");
    }
}

#[test]
fn every_error_path_on_the_embedded_stores() {
    for link in Link::BOTH {
        run_program("errors", link, &["mem:"]);
    }
    let dir = temp_dir();
    let connect = format!("file:{}", dir.path().display());
    run_program("errors", Link::Static, &[&connect]);
}

/// What `corrupt_pool` writes into pool nodes; not a pool in any format.
const GARBAGE: &[u8] = b"#zooid 1\nthis is not a pool\n\xff\xfe\n";

#[test]
fn corrupt_pool_in_the_file_store() {
    let dir = temp_dir();
    let node_dir = dir.path().join("corrupt/did");
    std::fs::create_dir_all(&node_dir).unwrap();
    let node = node_dir.join(".node");
    let content = [b"zooid-node 3\n".as_slice(), GARBAGE].concat();
    std::fs::write(&node, &content).unwrap();
    let connect = format!("file:{}", dir.path().display());
    for link in Link::BOTH {
        run_program("corrupt_pool", link, &[&connect, "/corrupt/did"]);
    }
    assert_eq!(
        std::fs::read(&node).unwrap(),
        content,
        "the corrupt node was left untouched"
    );
}

#[test]
fn example_builds_with_pkg_config_and_runs() {
    let lib_dir = harness::lib_dir();
    harness::library(Link::Shared);
    harness::library(Link::Static);
    let pc_dir = harness::out_dir().join("pkgconfig");
    run_ok(
        Command::new("bash")
            .arg(harness::repo().join("scripts/write-pkg-config.sh"))
            .arg("--libdir")
            .arg(&lib_dir)
            .arg("--includedir")
            .arg(harness::repo().join("include"))
            .arg("--out")
            .arg(pc_dir.join("zooid.pc")),
    );
    let pkg_config = |args: &[&str]| -> Vec<String> {
        let out = run_ok(
            Command::new("pkg-config")
                .env("PKG_CONFIG_PATH", &pc_dir)
                .args(args)
                .arg("zooid"),
        );
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let cflags_libs = pkg_config(&["--cflags", "--libs"]);
    assert!(
        cflags_libs.contains(&"-lzooid".to_string()),
        "{cflags_libs:?}"
    );
    let example = harness::repo().join("examples/c/eventpublish.c");
    let out_dir = harness::out_dir();

    // Shared, exactly as the README shows it (plus an rpath, since libdir is not a system one).
    let shared = out_dir.join("eventpublish-pkg-config-shared");
    run_ok(
        Command::new(harness::cc())
            .args(["-Wall", "-Wextra", "-Werror"])
            .arg(&example)
            .args(&cflags_libs)
            .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
            .arg("-o")
            .arg(&shared),
    );
    // Static: the archive by path, and the system libraries from Libs.private.
    let static_libs: Vec<String> = pkg_config(&["--static", "--libs-only-l"])
        .into_iter()
        .filter(|flag| flag != "-lzooid")
        .collect();
    let statik = out_dir.join("eventpublish-pkg-config-static");
    run_ok(
        Command::new(harness::cc())
            .args(["-Wall", "-Wextra", "-Werror"])
            .arg(&example)
            .args(pkg_config(&["--cflags"]))
            .arg(lib_dir.join("libzooid.a"))
            .args(&static_libs)
            .arg("-o")
            .arg(&statik),
    );
    assert!(harness::needs_shared_zooid(&shared));
    assert!(!harness::needs_shared_zooid(&statik));
    for exe in [&shared, &statik] {
        let out = run_ok(Command::new(exe).arg("mem:"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("event 0 gets ID 1\n"), "{stdout}");
        assert!(stdout.contains("event 20000 gets ID 20001\n"), "{stdout}");
        // 25000 events from batches of 10000: 5000 of the third batch go back.
        assert!(stdout.contains("pushed back 5000 unused IDs"), "{stdout}");
    }
    // Against a file store, a second run starts with the IDs the first one pushed back.
    let dir = temp_dir();
    let connect = format!("file:{}", dir.path().display());
    run_ok(Command::new(&shared).arg(&connect));
    let out = run_ok(Command::new(&statik).arg(&connect));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("event 0 gets ID 25001\n"), "{stdout}");
}

/// Every C program against one real ZooKeeper server, each in its own subtree.
#[test]
fn c_programs_against_zookeeper() {
    support::init_tracing();
    let zk = ZkServer::start();
    let connect = zk.connect_string();
    for link in Link::BOTH {
        let prefix = format!("/c-abi/{}", link.name());
        // The default layout (hole nodes), then the single node and hole nodes asked for by
        // number: the same IDs in each.
        let out = run_program("worked_example", link, &[&connect, &prefix]);
        assert!(out.contains("worked example OK"), "{out}");
        for layout in ["1", "3"] {
            let prefix = format!("{prefix}/layout-{layout}");
            let out = run_program("worked_example", link, &[&connect, &prefix, layout]);
            assert!(out.contains("worked example OK"), "{out}");
        }
        run_program("errors", link, &[&connect, &prefix]);
    }
    run_program(
        "threads",
        Link::Shared,
        &[&connect, "/c-abi/threads", "8", "25"],
    );
    // The same on a category in block allocation (blocks of 100 IDs).
    let out = run_program(
        "threads",
        Link::Static,
        &[&connect, "/c-abi/threads-blocks", "8", "25", "100"],
    );
    assert!(out.contains("threads OK"), "{out}");
    let out = run_program("digest_auth", Link::Static, &[&connect, "/c-abi/auth/did"]);
    assert!(out.contains("digest auth OK"), "{out}");

    // Garbage in a pool node, written with the ZooKeeper client. The programs are compiled
    // first: the client's session is not kept alive while the runtime is idle.
    for link in Link::BOTH {
        program("corrupt_pool", link);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let path = "/c-abi/corrupt/did";
    let client = rt.block_on(async {
        let client = zookeeper_client::Client::connect(&connect).await.unwrap();
        let options = zookeeper_client::CreateMode::Persistent
            .with_acls(zookeeper_client::Acls::anyone_all());
        client.mkdir("/c-abi/corrupt", &options).await.unwrap();
        client.create(path, GARBAGE, &options).await.unwrap();
        client
    });
    for link in Link::BOTH {
        run_program("corrupt_pool", link, &[&connect, path]);
    }
    let (data, stat) = rt.block_on(client.get_data(path)).unwrap();
    assert_eq!(data, GARBAGE, "the corrupt node was left untouched");
    assert_eq!(stat.version, 0);
    drop(client);
}

/// Runs `server_down MODE CONNECT CATEGORY`: calls `ready` once the program is ready (after its
/// first take), lets it go on, calls `going` right after; returns its stdout.
fn server_down(
    link: Link,
    mode: &str,
    connect: &str,
    category: &str,
    ready: impl FnOnce(),
    going: impl FnOnce(),
) -> String {
    let mut child = Command::new(program("server_down", link))
        .args([mode, connect, category])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start server_down");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut line = String::new();
    stdout
        .read_line(&mut line)
        .expect("read server_down's stdout");
    if line != "READY\n" {
        let _ = child.kill();
        let _ = child.wait();
        panic!("server_down {mode} did not get ready: {line:?}");
    }
    ready();
    let mut stdin = child.stdin.take().expect("piped stdin");
    stdin.write_all(b"go\n").expect("write to server_down");
    drop(stdin);
    going();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).expect("read server_down's stdout");
    let status = child.wait().expect("wait for server_down");
    eprintln!("server_down {mode}: {status}\n{rest}");
    assert!(
        status.success(),
        "server_down {mode} failed: {status}\n{rest}"
    );
    rest
}

#[test]
fn server_down_gives_a_clear_status() {
    support::init_tracing();
    let zk = ZkServer::start();
    let connect = zk.connect_string();
    // Killed between two takes.
    let out = server_down(
        Link::Shared,
        "killed",
        &connect,
        "/c-abi/down/did",
        || zk.kill(),
        || {},
    );
    assert!(out.contains("killed OK"), "{out}");
    // Nothing listening at all any more.
    for link in Link::BOTH {
        run_program("server_down", link, &["unreachable", &connect]);
    }
}

/// The server applies a take, its reply is lost (the proxy swallows it and closes the
/// connection), and every later connection leads nowhere, so the outcome cannot be resolved:
/// C gets ZOOID_STATUS_OUTCOME_UNKNOWN and the leaked IDs, which the server did take.
#[test]
fn lost_reply_names_the_leaked_ids() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    // A loopback port nothing listens on (bound by the OS, then released).
    let nowhere = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("an ephemeral loopback port");
    let category = "/c-abi/lossy/did";
    let out = server_down(
        Link::Static,
        "lost-reply",
        &proxy.connect_string(),
        category,
        || {
            // The open connection stays with the server; reconnects go nowhere.
            proxy.set_upstream(nowhere);
            proxy.drop_reply_to(op::SET_DATA, category);
        },
        || {},
    );
    assert!(
        out.contains("lost-reply OK: ZOOID_STATUS_OUTCOME_UNKNOWN"),
        "{out}"
    );
    assert_eq!(proxy.dropped_replies(), 1, "the fault must have happened");
    // The take did apply: IDs 11..20 are gone from the pool, never handed out.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (data, _) = rt.block_on(async {
        let client = zookeeper_client::Client::connect(&zk.connect_string())
            .await
            .unwrap();
        client.get_data(category).await.unwrap()
    });
    let pool = String::from_utf8_lossy(&data);
    assert!(pool.lines().any(|l| l == "21:1000"), "{pool}");
}

/// The C programs under valgrind: no invalid access, no uninitialised read, no leak (definite
/// or possible; tests/c/valgrind.supp only covers the library's process-lifetime runtime
/// threads). valgrind must be installed in CI (`CI` set); elsewhere the test says it skipped.
#[test]
fn valgrind_reports_no_errors_and_no_leaks() {
    if !harness::valgrind_available() {
        return;
    }
    let dir = temp_dir();
    let file_store = format!("file:{}", dir.path().display());
    type Run<'a> = (&'a str, Link, Vec<&'a str>);
    let runs: Vec<Run> = vec![
        ("worked_example", Link::Shared, vec!["mem:"]),
        ("worked_example", Link::Static, vec![&file_store]),
        ("errors", Link::Shared, vec!["mem:"]),
        ("threads", Link::Shared, vec!["mem:", "", "4", "10"]),
        (
            "corrupt_pool",
            Link::Static,
            vec![&file_store, "/eventpublish/idgen/did/x"],
        ),
    ];
    // corrupt_pool needs a corrupt node: one below the worked example's category.
    let node_dir = dir.path().join("eventpublish/idgen/did/x");
    std::fs::create_dir_all(&node_dir).unwrap();
    std::fs::write(
        node_dir.join(".node"),
        [b"zooid-node 0\n".as_slice(), GARBAGE].concat(),
    )
    .unwrap();
    let started = Instant::now();
    for (name, link, args) in runs {
        let out = run(Command::new("valgrind")
            .args([
                "--leak-check=full",
                "--errors-for-leak-kinds=definite,possible",
                "--error-exitcode=99",
                "--track-origins=yes",
            ])
            .arg(format!(
                "--suppressions={}",
                harness::repo().join("tests/c/valgrind.supp").display()
            ))
            .arg(program(name, link))
            .args(&args));
        let report = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{name} ({}) under valgrind: {}\n{report}",
            link.name(),
            out.status
        );
        for clean in [
            "definitely lost: 0 bytes",
            "indirectly lost: 0 bytes",
            "possibly lost: 0 bytes",
            "ERROR SUMMARY: 0 errors",
        ] {
            // valgrind omits the leak lines when nothing at all is left on the heap.
            let leak_line = clean.contains("lost");
            assert!(
                report.contains(clean)
                    || (leak_line && report.contains("All heap blocks were freed")),
                "{name} ({}): valgrind did not report \"{clean}\"\n{report}",
                link.name()
            );
        }
    }
    eprintln!("valgrind runs took {:?}", started.elapsed());
}

/// The C side of `cargo bench --bench c_abi` keeps building and checks the IDs it takes.
#[test]
fn c_bench_builds_and_takes_the_right_ids() {
    for link in Link::BOTH {
        let exe = compile("bench_take_id", &["benches/c/take_id.c"], link, &["-O2"]);
        let out = run_ok(Command::new(exe).args(["mem:", "100000", "3"]));
        let stdout = String::from_utf8_lossy(&out.stdout);
        for key in ["take_id_ns ", "take_range_ns ", "plain_loop_ns "] {
            let value: f64 = stdout
                .lines()
                .find_map(|l| l.strip_prefix(key)?.parse().ok())
                .unwrap_or_else(|| panic!("no {key} in {stdout}"));
            assert!(value > 0.0 && value < 10_000.0, "{key}{value}");
        }
    }
}
