//! Stress: 4 worker processes x 8 threads run the eventpublish job (take, publish, push back)
//! concurrently against a real ZooKeeper; the job's checker then proves every ID handed out is
//! unique and that used + free IDs equal the whole category.

use zooid_test_support as support;

use std::process::Command;

use support::ZkServer;

fn eventpublish_binary() -> std::path::PathBuf {
    support::example_binary("eventpublish")
}

#[test]
fn four_processes_by_eight_threads_never_duplicate() {
    let zk = ZkServer::start();
    let ledgers = tempfile::tempdir().unwrap();
    let output = Command::new(eventpublish_binary())
        .args([
            "--connect",
            &zk.connect_string(),
            "--processes",
            "4",
            "--threads",
            "8",
        ])
        .args([
            "--tasks",
            "3",
            "--events",
            "3000",
            "--batch",
            "1000",
            "--max-id",
            "100000000",
        ])
        .arg("--ledger-dir")
        .arg(ledgers.path())
        .output()
        .expect("run eventpublish");
    let stdout = String::from_utf8_lossy(&output.stdout);
    eprintln!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        output.status.success(),
        "eventpublish reported a failed check"
    );
    // The summary is the checker's: read its figures back rather than trusting the exit code alone.
    let figure = |name: &str| -> u64 {
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} line"));
        line.split_whitespace().last().unwrap().parse().unwrap()
    };
    assert_eq!(figure("duplicate IDs"), 0);
    assert_eq!(figure("IDs leaked"), 0);
    let used = figure("events published");
    assert!(used >= 32 * 3 * 1500, "only {used} events");
    assert_eq!(figure("unique IDs assigned"), used);
    assert!(figure("pushed-back IDs reassigned (recycled)") > 0);
    let logs = std::fs::read_dir(ledgers.path()).unwrap().count();
    assert_eq!(logs, 32, "one ledger per worker thread");
}
