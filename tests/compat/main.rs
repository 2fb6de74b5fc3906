//! The server-version matrix: zooid's core (create, take, push, a lost reply), block
//! allocation, the recipes (counter, election, queue, prefetch) and the keeper against each
//! ZooKeeper release of tests/compat/versions.txt (3.4.14, 3.5.10, 3.6.4, 3.7.2, 3.8.6, 3.9.5).
//!
//! The servers' jars come from `bash scripts/fetch-zookeeper.sh matrix` (into
//! target/zookeeper/<version>/lib); a version whose jars are missing fails with that command.
//! One test per version, each on its own standalone server; every feature is checked in its own
//! subtree and timed, and the row is printed (`--nocapture` shows the table):
//!
//!   cargo test --test compat -- --nocapture --test-threads=2
//!
//! Expected on every release: every feature passes. The session detects 3.4 (no
//! `/zookeeper/config`) and creates nodes with `create` there; the keeper discovers categories
//! through a persistent recursive watch on 3.6+ and by polling on 3.4 and 3.5.

use zooid::CategorySpec;
use zooid_test_support as support;

mod checks;

use std::future::Future;
use std::time::Instant;

use checks::Discovery;
use support::{runtime, ZkServer};
use zooid::ServerVersion;

/// The releases of the matrix, in the order of tests/compat/versions.txt.
fn versions() -> Vec<&'static str> {
    include_str!("versions.txt")
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect()
}

/// Runs one feature check, timing it, and adds its cell to `row`.
async fn cell<F: Future<Output = String>>(row: &mut Vec<String>, name: &str, check: F) {
    let start = Instant::now();
    let note = check.await;
    let took = start.elapsed();
    row.push(format!("{name}: pass{note} ({:.1} s)", took.as_secs_f64()));
}

/// Every feature against ZooKeeper `version`; prints the row and returns it.
fn matrix_row(version: &str) -> Vec<String> {
    support::init_tracing();
    let started = Instant::now();
    let zk = ZkServer::start_version(version);
    let connect = zk.connect_string();
    let expected = if version.starts_with("3.4.") {
        ServerVersion::V3_4
    } else {
        ServerVersion::V3_5
    };
    let mut row = vec![format!("ZooKeeper {version}")];
    // Boxed: the checks' futures together outgrow a test thread's stack in debug builds.
    runtime().block_on(Box::pin(async {
        cell(&mut row, "detect", async {
            checks::detects(&connect, expected).await;
            format!(" ({expected})")
        })
        .await;
        cell(&mut row, "core", async {
            checks::core(&connect, zk.addr()).await;
            Box::pin(checks::moves(&connect)).await;
            String::new()
        })
        .await;
        cell(&mut row, "blocks", async {
            checks::blocks(&connect).await;
            Box::pin(checks::holes(&connect)).await;
            checks::child_versions(&connect).await;
            String::new()
        })
        .await;
        cell(&mut row, "counter", async {
            checks::counter(&connect).await;
            String::new()
        })
        .await;
        cell(&mut row, "election", async {
            checks::election(&connect).await;
            String::new()
        })
        .await;
        cell(&mut row, "queue", async {
            checks::queue(&connect).await;
            String::new()
        })
        .await;
        cell(&mut row, "prefetch", async {
            checks::prefetch(&connect).await;
            String::new()
        })
        .await;
        cell(&mut row, "keeper", async {
            let (discovery, took) = checks::keeper(&connect).await;
            let persistent = !matches!(version.get(..4), Some("3.4." | "3.5."));
            let want = if persistent {
                Discovery::Watch
            } else {
                Discovery::Poll
            };
            assert_eq!(discovery, want, "keeper discovery on {version}");
            format!(
                ", discovered by {discovery:?} in {:.2} s",
                took.as_secs_f64()
            )
        })
        .await;
    }));
    // Nothing sent that the server does not know, except the one `addWatch` with which a
    // throwaway session asks a 3.5 server whether it has persistent watches.
    let log = std::fs::read_to_string(zk.log_path()).unwrap_or_default();
    let unknown: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("of unknown type"))
        .collect();
    let allowed = usize::from(version.starts_with("3.5."));
    assert!(
        unknown.len() <= allowed,
        "requests ZooKeeper {version} does not know: {unknown:#?}"
    );
    row.push(format!("total {:.1} s", started.elapsed().as_secs_f64()));
    eprintln!("[compat] {}", row.join(" | "));
    row
}

#[test]
fn the_matrix_lists_the_six_releases() {
    let listed = versions();
    let series: Vec<&str> = listed.iter().map(|v| &v[..3]).collect();
    assert_eq!(
        series,
        ["3.4", "3.5", "3.6", "3.7", "3.8", "3.9"],
        "{listed:?}"
    );
}

macro_rules! release_tests {
    ($($name:ident => $version:literal;)*) => {
        $(
            #[doc = concat!("Every feature against ZooKeeper ", $version, ".")]
            #[test]
            fn $name() {
                assert!(versions().contains(&$version), "{} is not in versions.txt", $version);
                // On a thread with room: the checks' futures together outgrow a test thread's
                // 2 MiB stack in debug builds.
                let row = std::thread::Builder::new()
                    .name(stringify!($name).into())
                    .stack_size(32 << 20)
                    .spawn(|| matrix_row($version))
                    .expect("spawn the check thread");
                if let Err(panic) = row.join() {
                    std::panic::resume_unwind(panic);
                }
            }
        )*
    };
}

release_tests! {
    zookeeper_3_4 => "3.4.14";
    zookeeper_3_5 => "3.5.10";
    zookeeper_3_6 => "3.6.4";
    zookeeper_3_7 => "3.7.2";
    zookeeper_3_8 => "3.8.6";
    zookeeper_3_9 => "3.9.5";
}

/// `ServerVersion::V3_4` (the setting for an ensemble being upgraded from 3.4) works on a newer
/// server too: creates go as `create`, which every release knows, and the session reports what
/// it was told instead of asking.
#[test]
fn assuming_3_4_works_on_a_newer_server() {
    support::init_tracing();
    let zk = ZkServer::start();
    let connect = zk.connect_string();
    runtime().block_on(async {
        let options = zooid::ConnectOptions {
            server_version: ServerVersion::V3_4,
            ..support::session_options(6000)
        };
        let session = zooid::Session::connect(&connect, &options).await.unwrap();
        assert_eq!(session.server_version(), ServerVersion::V3_4);
        assert!(!session.persistent_watches().await.unwrap());
        let svc = zooid::IdGeneratorService::on_zookeeper(
            session.clone().into_zk(),
            zooid::ServiceOptions::default(),
        );
        let cat = zooid::IdCategory::new("/assumed/did").unwrap();
        svc.create_category(&cat, &CategorySpec::new(1, 1000).blocks(10))
            .await
            .unwrap();
        let mut taken = svc.take_ids(&cat, 25).await.unwrap();
        assert_eq!(taken.count_ids(), 25);
        svc.push_ids(&mut taken).await.unwrap();
        let queue = zooid::WorkQueue::open(
            session.clone().into_zk(),
            "/assumed/queue",
            zooid::QueueOptions::default(),
        )
        .unwrap();
        queue.put(b"x").await.unwrap();
        let claim = queue
            .claim(Some(std::time::Duration::from_secs(5)))
            .await
            .unwrap();
        claim.expect("the item").complete().await.unwrap();
    });
}
