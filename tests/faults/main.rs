//! The fault suite (docs/RELIABILITY.md): "never the same ID twice" against a real 3-server
//! ZooKeeper ensemble, one fault per test.
//!
//! Each test starts an ensemble with one fault-injecting proxy per server, creates a category,
//! and runs worker processes (examples/faultload.rs: threads that take a batch, fsync it to their
//! ledger, use part of it and push the rest back) connected through the proxies. It injects its
//! fault, checks that the fault really happened, lets the workload carry on, stops it and runs the
//! checker (tests/faults/check.rs) over every ledger and the final pool. Every test then asserts
//! (`Rig::assert_guarantees`): zero duplicates; every ID accounted for from what was observed
//! (free in ZooKeeper as read by docs/FORMAT.md, used, held, named leaked by a report, given up
//! by a restore, or covered by a bounded report: an unknown block claim's `at_most` within its
//! range, one take's worth per take in flight in a killed worker), failing on any ID none of
//! these explains; at most one batch leaked per operation whose outcome was unknown, and none
//! where the protocol can tell the outcome; at most one batch held per killed worker thread;
//! only transient error kinds.
//!
//! The wipe rows (10a to 10f, tests/faults/wipe.rs) also run two `zooid keeper` processes and
//! `zooid restore` (tests/faults/keepers.rs): the CLI is built once per run in a target directory
//! of its own, `target/cli-for-tests` (several minutes the first time).
//!
//! Needs the ZooKeeper jars (`bash scripts/fetch-zookeeper.sh`). The tests run one at a time
//! (each holds a lock), so `cargo test --test faults` is enough. `ZOOID_FAULT_SCALE=N` runs the
//! workload N times longer and repeats the repeatable faults N times more (the soak);
//! `ZOOID_FAULT_REPORT=FILE` appends each test's figures to FILE as a markdown table row.

use zooid_test_support as support;

mod check;
mod keepers;
#[allow(dead_code)]
#[path = "../../examples/eventpublish/ledger.rs"]
mod ledger;
mod pool;
mod rig;
mod wipe;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rig::{scaled, scaled_count, serial, unix_ms, Config, Expect, Rig};
use support::{RequestMatch, ResetPoint};

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

const DECIDABLE: Expect = Expect {
    unknown_allowed: false,
    push_unknown_allowed: false,
    also_errors: &[],
};
/// Format 4 under lost replies: every take is told; a push in doubt whose hole nodes are gone
/// (never created, or taken since) is `OutcomeUnknown` (docs/DESIGN.md, "Lost replies").
const TAKES_DECIDABLE: Expect = Expect {
    unknown_allowed: false,
    push_unknown_allowed: true,
    also_errors: &[],
};
const AMBIGUOUS: Expect = Expect {
    unknown_allowed: true,
    push_unknown_allowed: false,
    also_errors: &[],
};

/// What a row under lost replies allows: every outcome told on a single node; on hole nodes
/// every take told, a push in doubt whose holes are gone `OutcomeUnknown`.
fn decidable(cfg: &Config) -> Expect {
    match cfg.blocks {
        Some(_) => TAKES_DECIDABLE,
        None => DECIDABLE,
    }
}

/// The writes of a format-4 pool under `/faults/ids`: its `multi`s (claims, takes of holes,
/// pushes of several ranges, give-backs) and its plain `create`s (a push of one range).
fn format4_writes() -> RequestMatch {
    RequestMatch::Custom(support::MatchFn::new(|opcode, frame| {
        matches!(
            opcode,
            support::op::MULTI | support::op::CREATE | support::op::CREATE2
        ) && frame
            .windows(b"/faults/ids/zooid-".len())
            .any(|w| w == b"/faults/ids/zooid-")
    }))
}

/// Drops the reply to `target` writes of `kind` after the server applied them.
fn reply_lost_after(kind: &'static str, name: &str) {
    let _serial = serial();
    let mut rig = Rig::start(name, Config::default());
    rig.warm_up();
    let target = scaled_count(6);
    let matcher = rig.pool_write(kind);
    let dropped = rig.inject_until(
        |p| p.drop_reply(matcher.clone()),
        |t| t.dropped_replies,
        target,
        Duration::from_secs(60),
    );
    rig.run_for(secs(1.0));
    let a = rig.finish();
    assert!(
        dropped >= target,
        "only {dropped} of {target} replies dropped"
    );
    let lost = if kind == "take" {
        a.lost_replies_take
    } else {
        a.lost_replies_push
    };
    assert!(
        lost >= dropped,
        "{dropped} {kind} replies dropped, but the workers saw only {lost} lost {kind} replies"
    );
    rig.assert_guarantees(&a, DECIDABLE);
}

/// Fault 1: The server applied a take, its reply never came: the take returns its own IDs.
#[test]
fn f1a_reply_lost_after_take_applied() {
    reply_lost_after("take", "1a reply lost after a take applied");
}

/// Fault 1: The server applied a push, its reply never came: the push is not applied twice.
#[test]
fn f1b_reply_lost_after_push_applied() {
    reply_lost_after("push", "1b reply lost after a push applied");
}

/// Fault 2: The connection is reset while a write is in flight: before it reached the server, after
/// half of its frame did (torn), and after all of it did (the reply is lost).
#[test]
fn f2_connection_reset_mid_request() {
    connection_reset("2 connection reset mid-request", Config::default());
}

/// Resets connections mid-request, before, torn and after each pool write (a `setData` in the
/// default layout, a `multi` in block allocation).
fn connection_reset(name: &str, cfg: Config) {
    let _serial = serial();
    let mut rig = Rig::start(name, cfg);
    rig.warm_up();
    let target = scaled_count(6);
    let points = [
        ResetPoint::MidRequest,
        ResetPoint::AfterRequest,
        ResetPoint::MidRequest,
        ResetPoint::BeforeRequest,
    ];
    let next = AtomicUsize::new(0);
    let matcher = if rig.cfg.blocks.is_some() {
        format4_writes()
    } else {
        rig.any_pool_write()
    };
    let resets = rig.inject_until(
        |p| {
            let point = points[next.fetch_add(1, Ordering::SeqCst) % points.len()];
            p.reset_on_request(matcher.clone(), point)
        },
        |t| t.resets,
        target,
        Duration::from_secs(60),
    );
    rig.run_for(secs(1.0));
    let a = rig.finish();
    assert!(resets >= target, "only {resets} of {target} resets");
    // Each reset hit a write (a first attempt, or the identical resend of one whose frame was
    // torn, which the protocol retries without a new "reply lost") and cost its client the
    // connection.
    assert!(
        a.ambiguous_ops >= 1 && a.lost_replies() >= 1,
        "the workers saw no lost reply"
    );
    let accepted: u64 = rig.proxies.iter().map(|p| p.accepted_connections()).sum();
    assert!(
        accepted >= rig.cfg.processes as u64 + resets,
        "{resets} resets but only {accepted} connections accepted"
    );
    rig.assert_guarantees(&a, decidable(&rig.cfg));
}

/// Blackholes every proxy for `hold`, `rounds` times, with the workload running in between.
fn blackhole_all(rig: &Rig, hold: Duration, rounds: u64) {
    for _ in 0..rounds {
        for p in &rig.proxies {
            p.blackhole_for(hold);
        }
        std::thread::sleep(hold);
        rig.run_for(secs(1.5));
    }
}

/// Fault 3: A blackhole longer than the client's connection timeout (it drops the connection) but
/// shorter than the session timeout: the session survives, in-flight writes are resolved.
#[test]
fn f3a_blackhole_shorter_than_session_timeout() {
    blackhole_within_session(
        "3a blackhole shorter than the session timeout",
        Config::default(),
    );
}

/// Blackholes every proxy for half a session timeout: the sessions survive.
fn blackhole_within_session(name: &str, cfg: Config) {
    let _serial = serial();
    let hold = cfg.session_timeout / 2;
    let mut rig = Rig::start(name, cfg);
    rig.warm_up();
    let rounds = scaled_count(2);
    blackhole_all(&rig, hold, rounds);
    let a = rig.finish();
    let totals = rig.proxy_totals();
    assert!(totals.blackholes >= 3 * rounds, "{totals:?}");
    let stalled = a
        .records
        .iter()
        .filter(|r| r.elapsed_ms() >= hold.as_millis() * 3 / 4)
        .count();
    assert!(stalled > 0, "no operation was held up by the blackhole");
    assert_eq!(
        a.session_renewals, 0,
        "a session expired during a blackhole shorter than the session timeout"
    );
    rig.assert_guarantees(&a, decidable(&rig.cfg));
}

/// Fault 3: A blackhole of 2.5 session timeouts: every session expires, the workers open new ones
/// and resolve the writes they had in flight.
#[test]
fn f3b_blackhole_longer_than_session_timeout() {
    sessions_expire("3b blackhole longer than the session timeout", None);
}

/// Blackholes every proxy for 2.5 session timeouts: every session expires, the workers open new
/// ones and resolve the writes they had in flight.
fn sessions_expire(name: &str, blocks: Option<u64>) {
    let _serial = serial();
    let cfg = Config {
        // Long enough for a write in flight to be resolved after the blackhole.
        op_deadline: Duration::from_secs(15),
        blocks,
        ..Config::default()
    };
    let hold = cfg.session_timeout * 5 / 2;
    let mut rig = Rig::start(name, cfg);
    rig.warm_up();
    let rounds = scaled_count(1);
    blackhole_all(&rig, hold, rounds);
    rig.assert_progress(20, "the blackhole");
    let a = rig.finish();
    assert!(rig.proxy_totals().blackholes >= 3 * rounds);
    assert!(
        a.session_renewals >= 1,
        "no session expired during a blackhole of {hold:?}"
    );
    rig.assert_guarantees(&a, AMBIGUOUS);
}

/// Fault 4: Client processes SIGKILLed at random moments (until at least one died inside an
/// operation) and replaced: nothing is duplicated; each killed thread loses at most its batch.
#[test]
fn f4a_client_killed_mid_operation() {
    clients_killed("4a client SIGKILLed mid-operation", Config::default());
}

/// SIGKILLs client processes at random moments until one died inside an operation.
fn clients_killed(name: &str, cfg: Config) {
    let _serial = serial();
    let mut rig = Rig::start(name, cfg);
    rig.warm_up();
    let wanted = scaled_count(2);
    let (mut kills, mut mid_op) = (0u64, 0u64);
    while (kills < wanted || mid_op == 0) && kills < 12 {
        std::thread::sleep(Duration::from_millis(rand::random_range(200..700)));
        let running = rig.running_workers();
        let victim = running[rand::random_range(0..running.len())];
        let status = rig.kill_worker(victim);
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGKILL)
        );
        kills += 1;
        let name = rig.workers[victim].name.clone();
        mid_op += inside_operation(rig.dir(), &name);
        rig.spawn_worker();
    }
    rig.run_for(secs(1.0));
    let a = rig.finish();
    assert!(kills >= wanted);
    assert!(
        !a.killed_mid_op.is_empty(),
        "no kill landed inside an operation in {kills} kills"
    );
    rig.assert_guarantees(&a, DECIDABLE);
}

/// How many threads of worker `name` were inside an operation (their `.ops` file ends with a
/// `>` line).
fn inside_operation(dir: &std::path::Path, name: &str) -> u64 {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        if file.starts_with(&format!("{name}-")) && file.ends_with(".ops") {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            if text.lines().last().is_some_and(|l| l.starts_with('>')) {
                n += 1;
            }
        }
    }
    n
}

/// Fault 4: A client process SIGSTOPped for twice its session timeout: its session expires while
/// the others carry on; on SIGCONT it opens a new session and goes on without duplicates.
#[test]
fn f4b_client_paused_past_session_timeout() {
    client_paused(
        "4b client SIGSTOPped past its session timeout",
        Config::default(),
    );
}

/// SIGSTOPs one client process for twice its session timeout, then resumes it.
fn client_paused(name: &str, cfg: Config) {
    let _serial = serial();
    let hold = cfg.session_timeout * 2;
    let mut rig = Rig::start(name, cfg);
    rig.warm_up();
    let victim = 0;
    rig.pause_worker(victim);
    let paused_at = unix_ms();
    std::thread::sleep(hold);
    let others_meanwhile = rig.ok_ops("", paused_at) - rig.ok_ops("p0-", paused_at);
    rig.resume_worker(victim);
    let resumed_at = unix_ms();
    assert!(
        rig.wait_ops("p0-", resumed_at, 10, Duration::from_secs(60)),
        "the paused worker did not carry on:\n{}",
        rig.worker_logs()
    );
    rig.run_for(secs(1.0));
    let a = rig.finish();
    assert!(
        others_meanwhile >= 10,
        "the other workers did not carry on while p0 was paused"
    );
    assert!(
        rig.worker_log_contains(victim, "ZooKeeper session renewed"),
        "the paused worker's session did not expire:\n{}",
        rig.worker_logs()
    );
    rig.assert_guarantees(&a, AMBIGUOUS);
}

/// Fault 5: The leader is SIGKILLed under load; a new one is elected; the old one comes back.
#[test]
fn f5a_leader_killed() {
    leader_killed("5a leader SIGKILLed", Config::default());
}

/// Kills the ensemble's leader (with clients on it) under load, waits for a new one, restarts
/// the old one.
fn leader_killed(name: &str, cfg: Config) {
    let _serial = serial();
    let mut rig = Rig::start(name, cfg);
    rig.warm_up();
    let leader = rig.zk.leader().expect("a leader");
    rig.ensure_clients_on(leader);
    rig.zk.kill(leader);
    rig.record_fault("leader SIGKILL");
    rig.new_leader_after(leader);
    rig.assert_progress(20, "the leader was killed");
    rig.restart_server(leader);
    rig.run_for(secs(1.5));
    let a = rig.finish();
    rig.assert_guarantees(&a, AMBIGUOUS);
}

/// Fault 5: A follower that serves clients is SIGKILLed: the quorum remains, its clients move on.
#[test]
fn f5b_follower_killed() {
    let _serial = serial();
    let mut rig = Rig::start("5b follower SIGKILLed", Config::default());
    rig.warm_up();
    let leader = rig.zk.leader().expect("a leader");
    let follower = (0..3).find(|&i| i != leader).unwrap();
    assert_eq!(rig.zk.mode(follower).as_deref(), Some("follower"));
    rig.ensure_clients_on(follower);
    rig.zk.kill(follower);
    rig.record_fault("follower SIGKILL");
    rig.assert_progress(20, "a follower was killed");
    rig.run_for(secs(1.0));
    rig.restart_server(follower);
    rig.run_for(secs(1.0));
    let a = rig.finish();
    assert!(
        rig.proxies[follower].stats().accepted >= 1,
        "no client ever used the killed follower"
    );
    rig.assert_guarantees(&a, AMBIGUOUS);
}

/// Fault 5: The leader is SIGSTOPped past the followers' sync limit: they elect a new leader; the
/// old one, resumed, finds itself deposed and rejoins.
#[test]
fn f5c_leader_paused() {
    leader_paused("5c leader SIGSTOPped", Config::default());
}

/// SIGSTOPs the leader (with clients on it) past the followers' sync limit, then resumes it.
fn leader_paused(name: &str, cfg: Config) {
    let _serial = serial();
    let mut rig = Rig::start(name, cfg);
    rig.warm_up();
    let leader = rig.zk.leader().expect("a leader");
    rig.ensure_clients_on(leader);
    rig.zk.pause(leader);
    rig.record_fault("leader SIGSTOP");
    rig.new_leader_after(leader);
    rig.assert_progress(20, "the leader was paused");
    rig.zk.resume(leader);
    let deadline = Instant::now() + Duration::from_secs(60);
    while rig.zk.mode(leader).as_deref() != Some("follower") {
        assert!(
            Instant::now() < deadline,
            "the old leader did not rejoin as a follower:\n{}",
            rig.zk.status_report(20)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    rig.run_for(secs(1.5));
    let a = rig.finish();
    rig.assert_guarantees(&a, AMBIGUOUS);
}

/// Fault 6: Two of three servers down: operations fail with a clear error within their deadline,
/// and the workload carries on once the quorum is back.
#[test]
fn f6_quorum_lost() {
    quorum_lost("6 quorum lost (2 of 3 servers down)", None);
}

/// Kills two of three servers: operations fail within their deadline; the workload carries on
/// once the quorum is back.
fn quorum_lost(name: &str, blocks: Option<u64>) {
    let _serial = serial();
    let cfg = Config {
        op_deadline: Duration::from_secs(3),
        blocks,
        ..Config::default()
    };
    let deadline = cfg.op_deadline;
    let session = cfg.session_timeout;
    let mut rig = Rig::start(name, cfg);
    rig.warm_up();
    let leader = rig.zk.leader().expect("a leader");
    let follower = (0..3).find(|&i| i != leader).unwrap();
    let survivor = (0..3).find(|&i| i != leader && i != follower).unwrap();
    let down_at = unix_ms();
    rig.zk.kill(follower);
    rig.zk.kill(leader);
    rig.record_fault("leader + follower SIGKILL");
    // The survivor stops serving once it notices it is alone.
    assert!(
        support::wait_until(Duration::from_secs(20), || rig.zk.mode(survivor).is_none()),
        "the last server kept serving without a quorum"
    );
    std::thread::sleep(scaled(deadline * 2 + session));
    rig.zk.restart(follower);
    rig.zk.restart(leader);
    rig.zk.wait_for_quorum(Duration::from_secs(60));
    let quorum_at = unix_ms();
    assert!(
        rig.wait_ops("", quorum_at, 30, Duration::from_secs(60)),
        "the workload did not carry on after the quorum came back:\n{}",
        rig.worker_logs()
    );
    rig.run_for(secs(1.0));
    let a = rig.finish();
    // Operations in flight or started during the outage failed, with a clear error (the kinds
    // are checked by assert_guarantees), and none hung: an operation returns within its deadline
    // plus the requests already in flight when it passed (a read and a write, each bounded by the
    // session timeout). Resolving a lost reply has a deadline of its own.
    let failed = a
        .records
        .iter()
        .filter(|r| r.outcome != "ok" && r.end_ms >= down_at && r.end_ms <= quorum_at)
        .count();
    assert!(
        failed >= rig.cfg.processes,
        "only {failed} operations failed during the outage"
    );
    let slack = Duration::from_millis(1500);
    let bound = |r: &check::OpRecord| {
        let attempt = deadline + session * 2;
        (attempt * (1 + r.lost as u32) + slack).as_millis()
    };
    let slowest = a.records.iter().max_by_key(|r| r.elapsed_ms()).unwrap();
    eprintln!(
        "{failed} operations failed during the outage; slowest {} ms: {slowest:?}",
        slowest.elapsed_ms()
    );
    rig.assert_guarantees(&a, AMBIGUOUS);
    for r in &a.records {
        assert!(
            r.elapsed_ms() <= bound(r),
            "an operation took {} ms (deadline {deadline:?}, session timeout {session:?}, {} lost replies): {r:?}",
            r.elapsed_ms(),
            r.lost
        );
    }
}

/// `syncLimit` for the cut-off rows: 40 ticks (10 s), past the workers' 3-second session
/// timeout, so the cut-off follower keeps its clients (answering their pings itself) after the
/// ensemble expired their sessions.
const LONG_SYNC_LIMIT: &[(&str, &str)] = &[("syncLimit", "40")];

/// Fault 11: A follower cut off from the quorum while its clients stay connected to it.
#[test]
fn f11a_follower_cut_off() {
    follower_cut_off(
        "11a follower cut off from the quorum, its clients connected",
        Config::default(),
    );
}

/// Cuts a follower with clients on it off from the quorum and election links (held, not
/// closed) for longer than its `syncLimit`: it answers its clients' pings and reads, its writes
/// and `sync`s wait at the cut, the ensemble expires the sessions on it, and the rest of the
/// ensemble carries on. Then heals the links: the follower rejoins and the workload carries on.
fn follower_cut_off(name: &str, cfg: Config) {
    let _serial = serial();
    let session = cfg.session_timeout;
    let mut rig = Rig::start(
        name,
        Config {
            quorum_links: Some(LONG_SYNC_LIMIT),
            // Clients on both followers, most likely, without starting more.
            processes: 4,
            ..cfg
        },
    );
    rig.warm_up();
    assert!(
        rig.wait_for_an_operation_in_flight(Duration::from_secs(10)),
        "guard: no operation was in flight at the cut"
    );
    // The follower with the most clients (more workers only if neither has one).
    let leader = rig.zk.leader().expect("a leader");
    let follower = (0..3)
        .filter(|&i| i != leader)
        .max_by_key(|&i| rig.proxies[i].open_connections())
        .unwrap();
    rig.ensure_clients_on(follower);
    let connected_at_cut = rig.proxies[follower].open_connections();
    let cut_at = unix_ms();
    rig.links().isolate(follower);
    rig.record_fault("follower cut off from the quorum, clients connected");
    // The others carry on meanwhile.
    rig.assert_progress(20, "the follower was cut off");
    // Guards: the follower's quorum traffic was held, and it still served its clients: they
    // leave it when their own requests go unanswered (zooid gives a request up after the
    // session timeout), or when it drops them past its syncLimit.
    let mut left_after = None;
    while unix_ms() - cut_at < 12_000 {
        if rig.proxies[follower].open_connections() == 0 {
            left_after = Some(unix_ms() - cut_at);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        rig.links().held(follower) > 0,
        "guard: the relays held none of the follower's quorum traffic"
    );
    std::thread::sleep(
        Duration::from_secs(12).saturating_sub(Duration::from_millis((unix_ms() - cut_at) as u64)),
    );
    rig.links().heal();
    let healed_at = unix_ms();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !matches!(
        rig.zk.mode(follower).as_deref(),
        Some("follower" | "leader")
    ) {
        assert!(
            Instant::now() < deadline,
            "the cut-off server did not rejoin:\n{}",
            rig.zk.status_report(20)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    rig.assert_progress(20, "the follower was healed");
    rig.run_for(secs(1.0));
    let a = rig.finish();
    let failed = a
        .records
        .iter()
        .filter(|r| r.outcome != "ok" && r.end_ms >= cut_at && r.end_ms <= healed_at + 5_000)
        .count();
    eprintln!(
        "[{name}] {connected_at_cut} clients on the follower at the cut, all gone after \
         {left_after:?} ms (session timeout {session:?}); {failed} operations failed during the cut"
    );
    // The fault reached the clients on the follower: they were on it at the cut and left it
    // (their requests went unanswered, or it dropped them). Their operations may fail or be
    // ridden out.
    assert!(
        connected_at_cut > 0,
        "guard: no client on the follower at the cut"
    );
    assert!(
        left_after.is_some(),
        "guard: the clients on the cut-off follower never left it"
    );
    rig.assert_guarantees(&a, AMBIGUOUS);
}

/// Fault 7: Every server SIGKILLed at once, then restarted from its data.
#[test]
fn f7_all_servers_killed_and_restarted() {
    all_servers_killed("7 all servers SIGKILLed and restarted", Config::default());
}

/// SIGKILLs every server at once, then restarts them from their data.
fn all_servers_killed(name: &str, cfg: Config) {
    let _serial = serial();
    let mut rig = Rig::start(name, cfg);
    rig.warm_up();
    let pids: Vec<_> = (0..3).map(|i| rig.zk.pid(i)).collect();
    for i in 0..3 {
        rig.zk.kill(i);
    }
    rig.record_fault("all 3 servers SIGKILL");
    assert!((0..3).all(|i| !rig.zk.is_running(i)));
    std::thread::sleep(scaled(Duration::from_secs(2)));
    for i in 0..3 {
        rig.zk.restart(i);
    }
    rig.zk.wait_for_quorum(Duration::from_secs(60));
    assert!(
        (0..3).all(|i| rig.zk.pid(i) != pids[i]),
        "servers not restarted"
    );
    rig.assert_progress(30, "all servers were restarted");
    rig.run_for(secs(1.0));
    let a = rig.finish();
    rig.assert_guarantees(&a, AMBIGUOUS);
}

/// Replies dropped after the server applied a `multi` below the pool (a claim, a push, a take
/// of holes), until `scaled_count(8)` were: each is resolved.
fn replies_lost_in_blocks(name: &str, cfg: Config) {
    let _serial = serial();
    let mut rig = Rig::start(name, cfg);
    rig.warm_up();
    let target = scaled_count(8);
    let dropped = rig.inject_until(
        |p| p.drop_reply(format4_writes()),
        |t| t.dropped_replies,
        target,
        Duration::from_secs(60),
    );
    rig.run_for(secs(1.0));
    let a = rig.finish();
    assert!(
        dropped >= target,
        "only {dropped} of {target} replies dropped"
    );
    rig.assert_guarantees(&a, TAKES_DECIDABLE);
}

/// Format 4: the leader SIGSTOPped.
#[test]
fn f9h_holes_leader_paused() {
    leader_paused("9h hole nodes: leader SIGSTOPped", holes());
}

/// Format 4: every server SIGKILLed and restarted.
#[test]
fn f9j_holes_all_servers_killed_and_restarted() {
    all_servers_killed(
        "9j hole nodes: all servers SIGKILLed and restarted",
        holes(),
    );
}

/// A category in format 4 (hole nodes, the default layout on ZooKeeper; blocks of 100 IDs), for
/// the faults below: the same checker, under every fault kind block allocation is run under.
fn holes() -> Config {
    Config {
        blocks: Some(100),
        ..Config::default()
    }
}

/// Format 4: replies lost after the server applied a claim of holes, a push or a block claim.
#[test]
fn f9a_holes_replies_lost() {
    replies_lost_in_blocks("9a hole nodes: replies lost", holes());
}

/// Format 4: the ensemble's leader SIGKILLed under load.
#[test]
fn f9b_holes_leader_killed() {
    leader_killed("9b hole nodes: leader SIGKILLed", holes());
}

/// Format 4: every session expires with takes and pushes in flight.
#[test]
fn f9c_holes_sessions_expire() {
    sessions_expire("9c hole nodes: sessions expire", Some(100));
}

/// Format 4: connections reset before, torn in and after takes and pushes.
#[test]
fn f9d_holes_connection_reset_mid_request() {
    connection_reset("9d hole nodes: connection reset mid-request", holes());
}

/// Format 4: client processes SIGKILLed mid-operation.
#[test]
fn f9f_holes_client_killed_mid_operation() {
    clients_killed("9f hole nodes: clients SIGKILLed mid-operation", holes());
}

/// Format 4: a client SIGSTOPped past its session timeout.
#[test]
fn f9g_holes_client_paused_past_session_timeout() {
    client_paused(
        "9g hole nodes: a client SIGSTOPped past its session timeout",
        holes(),
    );
}

/// Format 4: two of three servers down.
#[test]
fn f9i_holes_quorum_lost() {
    quorum_lost(
        "9i hole nodes: quorum lost (2 of 3 servers down)",
        Some(100),
    );
}

/// Format 4: a follower cut off from the quorum while its clients stay connected to it.
#[test]
fn f11b_holes_follower_cut_off() {
    follower_cut_off(
        "11b hole nodes: follower cut off from the quorum, its clients connected",
        holes(),
    );
}

/// Format 4: a blackhole of half a session timeout; the sessions survive.
#[test]
fn f9e_holes_blackhole_shorter_than_session_timeout() {
    blackhole_within_session(
        "9e hole nodes: blackhole shorter than the session timeout",
        holes(),
    );
}

/// Wipe mid-burst (single node): every server loses its data while two `zooid keeper`
/// processes keep the ceiling ahead of the workers; `zooid restore`; the workers carry on.
#[test]
fn f10a_wipe_mid_burst_with_keepers() {
    wipe::wipe_mid_burst(
        "10a wipe mid-burst with keepers running",
        Config::default(),
        false,
    );
}

/// Wipe mid-burst, hole nodes (format 4, the default on ZooKeeper).
#[test]
fn f10c_holes_wipe_mid_burst_with_keepers() {
    wipe::wipe_mid_burst(
        "10c hole nodes: wipe mid-burst with keepers running",
        holes(),
        false,
    );
}

/// Wipe mid-burst in hole nodes with the active keeper SIGKILLed just before: the other keeper
/// takes over on the restored category.
#[test]
fn f10d_holes_wipe_mid_burst_active_keeper_killed() {
    wipe::wipe_mid_burst(
        "10d hole nodes: active keeper SIGKILLed, then a wipe mid-burst",
        holes(),
        true,
    );
}

/// Wipe mid-burst (single node) with the active keeper SIGKILLed just before.
#[test]
fn f10e_wipe_mid_burst_active_keeper_killed() {
    wipe::wipe_mid_burst(
        "10e active keeper SIGKILLed, then a wipe mid-burst",
        Config::default(),
        true,
    );
}
