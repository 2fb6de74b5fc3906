//! `zooid draw`: prefetching ID sources in several processes at once. (Moved from
//! tests/prefetch.rs; the prefetch tests are in tests/recipes/prefetch.rs.)

use std::collections::HashSet;
use std::process::Command;
use std::time::Duration;
use zooid::CategorySpec;

use support::ZkServer;
use zooid::blocking::IdGeneratorService;
use zooid::{ConnectOptions, IdCategory, RetryPolicy, ServiceOptions};
use zooid_test_support as support;

const LAST: i64 = 10_000_000;

fn connect(connect: &str, deadline: Duration) -> IdGeneratorService {
    let options = ServiceOptions {
        retry: RetryPolicy {
            deadline,
            ..RetryPolicy::default()
        },
        ..ServiceOptions::default()
    };
    let connect_options = ConnectOptions {
        session_timeout: Duration::from_secs(4),
        digest_auth: None,
        ..ConnectOptions::default()
    };
    IdGeneratorService::connect(connect, &connect_options, options).unwrap()
}

fn free(service: &IdGeneratorService, category: &IdCategory) -> u64 {
    service.pool_info(category).unwrap().free_count
}

/// Three `zooid draw` processes, each a source shared by 4 threads, at once: no ID twice, and the
/// pool afterwards lacks exactly the IDs they printed.
#[test]
fn processes_never_share_an_id_and_close_conserves() {
    support::init_tracing();
    let zk = ZkServer::start();
    let service = connect(&zk.connect_string(), Duration::from_secs(30));
    let category = IdCategory::new("/prefetch/processes").unwrap();
    service
        .create_category(&category, &CategorySpec::new(1, LAST))
        .unwrap();
    let before = free(&service, &category);
    let children: Vec<_> = (0..3)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_zooid"))
                .args(["--connect", &zk.connect_string(), "draw", category.name()])
                .args(["20000", "--threads", "4", "--initial-batch", "200"])
                .args(["--min-batch", "100", "--max-batch", "3200"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut seen = HashSet::new();
    let mut count = 0u64;
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "zooid draw failed: {stderr}");
        eprint!("{stderr}");
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            let (start, end) = line.split_once(':').unwrap();
            let (start, end): (i64, i64) = (start.parse().unwrap(), end.parse().unwrap());
            for id in start..=end {
                assert!(seen.insert(id), "ID {id} drawn by two processes");
                count += 1;
            }
        }
    }
    assert_eq!(count, 3 * 20_000);
    assert_eq!(free(&service, &category), before - count);
}

/// The IDs of `zooid draw`'s `START:END` lines.
fn printed(stdout: &[u8]) -> Vec<i64> {
    let mut ids = Vec::new();
    for line in String::from_utf8_lossy(stdout).lines() {
        let (start, end) = line.split_once(':').expect("a START:END line");
        let (start, end): (i64, i64) = (start.parse().unwrap(), end.parse().unwrap());
        ids.extend(start..=end);
    }
    ids
}

/// A draw that runs out of IDs before it has all it asked for prints the IDs it drew (they
/// left the pool) and fails; what its source held undrawn goes back.
#[test]
fn a_draw_that_runs_out_prints_what_it_drew_and_fails() {
    let zk = ZkServer::start();
    let service = connect(&zk.connect_string(), Duration::from_secs(30));
    let category = IdCategory::new("/prefetch/small").unwrap();
    service
        .create_category(&category, &CategorySpec::new(1, 250))
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_zooid"))
        .env_remove("ZOOID_AUTH")
        .args(["--connect", &zk.connect_string(), "draw", category.name()])
        .args(["300", "--threads", "4", "--initial-batch", "100"])
        .args(["--min-batch", "100", "--max-batch", "100"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a draw of 300 of 250 IDs succeeded: {stderr}");
    assert_ne!(out.status.code(), Some(101), "a panic: {stderr}");
    let ids = printed(&out.stdout);
    assert_eq!(
        ids.iter().copied().collect::<HashSet<_>>().len(),
        ids.len(),
        "an ID printed twice"
    );
    assert_eq!(
        ids.len() as u64 + free(&service, &category),
        250,
        "IDs neither printed nor back in the pool ({} printed): {stderr}",
        ids.len()
    );
    assert_eq!(ids.len(), 250, "every ID was there to draw: {stderr}");
}

/// A draw whose output cannot be written names the IDs it drew as leaked, in one line, rather
/// than panicking with them unnamed.
#[test]
fn a_draw_whose_output_cannot_be_written_names_its_ids_leaked() {
    let zk = ZkServer::start();
    let service = connect(&zk.connect_string(), Duration::from_secs(30));
    let category = IdCategory::new("/prefetch/closed-pipe").unwrap();
    service
        .create_category(&category, &CategorySpec::new(1, LAST))
        .unwrap();
    let (read, write) = std::io::pipe().unwrap();
    drop(read);
    let out = Command::new(env!("CARGO_BIN_EXE_zooid"))
        .env_remove("ZOOID_AUTH")
        .args(["--connect", &zk.connect_string(), "draw", category.name(), "10"])
        .stdout(write)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(101), "a panic: {err}");
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("leaked") && err.contains("1:10"), "{err}");
}
