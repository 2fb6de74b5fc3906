//! Candidate processes (examples/election_candidate.rs): kills, SIGSTOP, and the checker over
//! the timestamped state transitions of every candidate on an ensemble.

use std::time::Duration;

use super::harness::{self, active_terms, now_us, overlaps, tokens_grow, Candidate, Kind};
use super::{create, line_order, read, session, support};
use support::{op, runtime, FaultProxy, ZkEnsemble, ZkServer};
use zooid::zk::ZooKeeperExt;

fn by_name<'a>(cands: &'a mut [Candidate], name: &str) -> &'a mut Candidate {
    cands
        .iter_mut()
        .find(|c| c.name == name)
        .expect("candidate by name")
}

fn active_names(cands: &[Candidate]) -> Vec<String> {
    cands
        .iter()
        .filter(|c| c.killed_at.is_none() && c.is_active())
        .map(|c| c.name.clone())
        .collect()
}

/// When a candidate's log first shows it Active after `after_us`, and with which token.
fn active_since(c: &Candidate, after_us: u128) -> Option<(u128, i64)> {
    c.events().into_iter().find_map(|e| match e.kind {
        Kind::State(s) if s.state == "active" && e.t_us >= after_us => Some((e.t_us, s.token?)),
        _ => None,
    })
}

fn total_notifications(cands: &[Candidate]) -> u64 {
    let refs: Vec<&Candidate> = cands.iter().collect();
    harness::notifications(&refs).values().sum()
}

/// Five candidate processes: exactly one Active; SIGKILL the leader (three times): the next in
/// line is Active within the session timeout plus a margin, with a higher token, woken by one
/// notification; killing a middle candidate leaves the leader alone and re-links its successor.
#[test]
fn five_processes_kill_leader_and_middle() {
    support::init_tracing();
    let zk = ZkServer::start();
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let group = "/el/five";
    let session_ms = 3000u64;
    let observer = rt.block_on(session(&zk.connect_string(), 4000));
    let mut cands: Vec<Candidate> = Vec::new();
    let mut next = 0;
    let mut start = |cands: &mut Vec<Candidate>| {
        let name = format!("p{next}");
        next += 1;
        cands.push(Candidate::start(
            dir.path(),
            &zk.connect_string(),
            group,
            &name,
            "keep",
            session_ms,
            None,
        ));
        let n = cands.len();
        // Join one at a time, so the line order is the start order.
        assert!(
            harness::wait_for(Duration::from_secs(20), || rt
                .block_on(line_order(&observer, group))
                .contains(&name)),
            "{name} joined"
        );
        n
    };
    for _ in 0..5 {
        start(&mut cands);
    }
    assert!(harness::wait_for(Duration::from_secs(10), || active_names(
        &cands
    )
    .len()
        == 1));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        active_names(&cands),
        vec!["p0".to_string()],
        "exactly one Active"
    );

    let mut failovers = Vec::new();
    let mut notif_per_change = Vec::new();
    for _ in 0..3 {
        let line = rt.block_on(line_order(&observer, group));
        let (leader, successor) = (line[0].clone(), line[1].clone());
        let old_token = by_name(&mut cands, &leader)
            .last_state()
            .unwrap()
            .token
            .unwrap();
        let before = total_notifications(&cands);
        by_name(&mut cands, &leader).kill();
        let killed = by_name(&mut cands, &leader).killed_at.unwrap();
        let limit = Duration::from_millis(session_ms) + Duration::from_secs(3);
        assert!(
            harness::wait_for(limit, || active_since(
                by_name(&mut cands, &successor),
                killed
            )
            .is_some()),
            "{successor} Active within {limit:?} after {leader} was killed"
        );
        let (t, token) = active_since(by_name(&mut cands, &successor), killed).unwrap();
        assert!(token > old_token, "token {token} after {old_token}");
        failovers.push((t - killed) as f64 / 1000.0);
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(
            active_names(&cands),
            vec![successor.clone()],
            "exactly one Active"
        );
        notif_per_change.push(total_notifications(&cands) - before);
        start(&mut cands);
    }
    assert!(
        notif_per_change.iter().all(|&n| n == 1),
        "one notification per leader change: {notif_per_change:?}"
    );

    // Kill a middle candidate: the leader is unaffected, its successor re-links.
    let line = rt.block_on(line_order(&observer, group));
    let (leader, middle, after) = (line[0].clone(), line[2].clone(), line[3].clone());
    let leader_lines = by_name(&mut cands, &leader).events().len();
    let after_notif = by_name(&mut cands, &after)
        .last_state()
        .unwrap()
        .notifications;
    by_name(&mut cands, &middle).kill();
    assert!(
        harness::wait_for(
            Duration::from_millis(session_ms) + Duration::from_secs(3),
            || {
                by_name(&mut cands, &after)
                    .last_state()
                    .unwrap()
                    .notifications
                    == after_notif + 1
            }
        ),
        "{after} notified once when {middle} left"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        by_name(&mut cands, &leader).events().len(),
        leader_lines,
        "leader unaffected"
    );
    assert_eq!(active_names(&cands), vec![leader.clone()]);
    assert!(!by_name(&mut cands, &after).is_active());
    let line = rt.block_on(line_order(&observer, group));
    assert!(!line.contains(&middle));

    let mut sorted = failovers.clone();
    let median = harness::median(&mut sorted);
    let max = failovers.iter().cloned().fold(0.0, f64::max);
    eprintln!(
        "FIGURES five-processes: leader changes {}, failover after SIGKILL median {median:.0} ms max {max:.0} ms (session {session_ms} ms), watch notifications per change {notif_per_change:?}, middle kill: 1 notification, leader unaffected",
        failovers.len()
    );
    drop(cands);
    drop(observer);
}

/// SIGSTOP the leader past its session timeout: a new leader with a higher token; the resumed
/// ex-leader goes Paused/Inactive and none of its fenced writes applies after the new leader's.
#[test]
fn sigstopped_leader_is_fenced() {
    support::init_tracing();
    let zk = ZkServer::start();
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let group = "/el/stopped";
    let resource = "/el/stopped-resource";
    let session_ms = 2000u64;
    let observer = rt.block_on(session(&zk.connect_string(), 4000));
    rt.block_on(async {
        observer
            .create_all(observer.generation(), "/el", None)
            .await
            .unwrap();
        create(&observer, resource).await;
    });
    let a = Candidate::start(
        dir.path(),
        &zk.connect_string(),
        group,
        "a",
        "keep",
        session_ms,
        Some(resource),
    );
    assert!(harness::wait_for(Duration::from_secs(20), || a.is_active()));
    let b = Candidate::start(
        dir.path(),
        &zk.connect_string(),
        group,
        "b",
        "keep",
        session_ms,
        Some(resource),
    );
    assert!(harness::wait_for(Duration::from_secs(20), || b
        .last_state()
        .is_some()));
    std::thread::sleep(Duration::from_millis(300));
    let a_token = a.last_state().unwrap().token.unwrap();

    a.signal(libc::SIGSTOP);
    let stopped = now_us();
    assert!(
        support::zookeeper::wait_threads(a.pid(), Duration::from_secs(5), true),
        "a is stopped"
    );
    assert!(
        harness::wait_for(Duration::from_secs(15), || b.is_active()),
        "b leads while a is stopped"
    );
    let (b_active, b_token) = active_since(&b, stopped).unwrap();
    assert!(b_token > a_token);
    // Let b write with its token, then resume a while it still believes it leads.
    assert!(harness::wait_for(Duration::from_secs(5), || b
        .events()
        .iter()
        .any(
            |e| matches!(&e.kind, Kind::Fenced { outcome, .. } if outcome == "ok")
        )));
    a.signal(libc::SIGCONT);
    let resumed = now_us();
    assert!(
        harness::wait_for(Duration::from_secs(15), || {
            a.events().iter().any(|e| {
                e.t_us >= resumed && matches!(&e.kind, Kind::State(s) if s.state == "inactive")
            })
        }),
        "a goes Inactive after resuming"
    );
    std::thread::sleep(Duration::from_millis(500));
    let after: Vec<_> = a
        .events()
        .into_iter()
        .filter(|e| e.t_us >= resumed)
        .collect();
    let states: Vec<String> = after
        .iter()
        .filter_map(|e| match &e.kind {
            Kind::State(s) => Some(s.state.clone()),
            _ => None,
        })
        .collect();
    let fenced: Vec<String> = after
        .iter()
        .filter_map(|e| match &e.kind {
            Kind::Fenced {
                outcome, detail, ..
            } => Some(format!("{outcome}: {detail}")),
            _ => None,
        })
        .collect();
    assert!(
        after
            .iter()
            .all(|e| !matches!(&e.kind, Kind::Fenced { token, .. } if *token != a_token)),
        "a only ever tried with its old token"
    );
    assert!(
        fenced.iter().all(|f| !f.starts_with("ok")),
        "no fenced write of a applied after resuming: {fenced:?}"
    );
    // Right after SIGCONT a tried a fenced write until it got a definite answer: refused.
    assert!(
        harness::wait_for(Duration::from_secs(10), || a.events().iter().any(
            |e| matches!(&e.kind, Kind::FencedCont { outcome, .. } if outcome != "error")
        )),
        "a's fenced write after SIGCONT got a definite answer"
    );
    let cont: Vec<String> = a
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            Kind::FencedCont {
                token,
                outcome,
                detail,
            } => Some(format!("{outcome} (token {token:?}): {detail}")),
            _ => None,
        })
        .collect();
    assert!(
        cont.last().is_some_and(|c| c.starts_with("notleader")),
        "{cont:?}"
    );
    assert!(cont.iter().all(|c| !c.starts_with("ok")), "{cont:?}");
    // The resource holds b's write, never a's after b took over.
    let data = rt.block_on(async { read(&observer, resource).await.0 });
    assert!(
        String::from_utf8_lossy(&data).starts_with("b "),
        "{}",
        String::from_utf8_lossy(&data)
    );
    // Every ok of a happened before b was Active.
    assert!(a.events().iter().all(
        |e| !matches!(&e.kind, Kind::Fenced { outcome, .. } if outcome == "ok")
            || e.t_us < b_active
    ));
    // a rejoined on a new session, behind b.
    assert!(harness::wait_for(Duration::from_secs(10), || a
        .last_state()
        .is_some_and(|s| s.generation == 2)));
    assert!(b.is_active() && !a.is_active());
    eprintln!(
        "FIGURES sigstop: b Active {} ms after a was stopped (session {session_ms} ms); a after SIGCONT: states {states:?}, fenced attempts {fenced:?}, fenced right after SIGCONT {cont:?}",
        (b_active - stopped) / 1000
    );
    drop(a);
    drop(b);
    drop(observer);
}

/// A candidate process behind its own fault proxy.
struct Proxied {
    cand: Candidate,
    proxy: FaultProxy,
}

/// The checker over the timestamped state transitions of every candidate, on the 3-server
/// ensemble, stop policy: never two Active at once (margin: 25 ms of logging delay; one host,
/// one clock), tokens growing, under a leader kill, a partition longer than the session, a
/// network pause shorter than it, a lost reply to a candidate's create, and the ensemble's own
/// leader killed.
#[test]
fn stop_policy_checker_on_an_ensemble() {
    support::init_tracing();
    let ens = ZkEnsemble::start(3);
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let group = "/el/checker";
    let session_ms = 3000u64;
    let observer = rt.block_on(session(&ens.connect_string(), 6000));
    let mut cs: Vec<Proxied> = Vec::new();
    let mut n = 0usize;
    let mut add = |cs: &mut Vec<Proxied>, drop_create_reply: bool| -> usize {
        let proxy = FaultProxy::start(ens.server_addr(n % 3));
        if drop_create_reply {
            proxy.drop_reply_to(op::MULTI, "");
        }
        let name = format!("c{n}");
        n += 1;
        let cand = Candidate::start(
            dir.path(),
            &proxy.connect_string(),
            group,
            &name,
            "stop",
            session_ms,
            None,
        );
        cs.push(Proxied { cand, proxy });
        cs.len() - 1
    };
    let alive_active = |cs: &[Proxied]| -> Vec<usize> {
        (0..cs.len())
            .filter(|&i| cs[i].cand.killed_at.is_none() && cs[i].cand.is_active())
            .collect()
    };
    let wait_new_leader = |cs: &[Proxied], not: usize, what: &str| -> (usize, u128) {
        let since = now_us();
        let mut found = None;
        assert!(
            harness::wait_for(Duration::from_secs(30), || {
                found = alive_active(cs).into_iter().find(|&i| i != not);
                found.is_some()
            }),
            "a new leader after {what}"
        );
        (found.unwrap(), now_us() - since)
    };
    for _ in 0..3 {
        add(&mut cs, false);
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(harness::wait_for(Duration::from_secs(20), || alive_active(
        &cs
    )
    .len()
        == 1));
    let mut figures = Vec::new();

    // 1. Leader killed.
    let leader = alive_active(&cs)[0];
    cs[leader].cand.kill();
    let (leader, took) = wait_new_leader(&cs, leader, "a leader kill");
    figures.push(format!("kill: {} ms", took / 1000));
    add(&mut cs, false);

    // 2. Partition longer than the session.
    cs[leader].proxy.blackhole();
    let (next, took) = wait_new_leader(&cs, leader, "a partition");
    figures.push(format!("partition: {} ms", took / 1000));
    assert!(cs[leader].proxy.is_blackholed());
    let old: Vec<String> = cs[leader]
        .cand
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            Kind::State(s) => Some(s.state.clone()),
            _ => None,
        })
        .collect();
    assert!(
        old.iter().rev().take(3).any(|s| s == "paused"),
        "partitioned leader went Paused: {old:?}"
    );
    cs[leader].proxy.heal();
    let part = leader;
    assert!(
        harness::wait_for(Duration::from_secs(20), || cs[part]
            .cand
            .last_state()
            .is_some_and(|s| s.generation >= 2)),
        "the partitioned candidate rejoined on a new session"
    );
    let leader = next;

    // 3. A network pause shorter than the session: stop policy gives the leadership up.
    let gen_before = cs[leader].cand.last_state().unwrap().generation;
    cs[leader].proxy.blackhole_for(Duration::from_millis(1800));
    let (next, took) = wait_new_leader(&cs, leader, "a short pause");
    figures.push(format!("short pause: {} ms", took / 1000));
    let paused = leader;
    assert!(harness::wait_for(Duration::from_secs(10), || cs[paused]
        .cand
        .last_state()
        .is_some_and(|s| s.state == "inactive")));
    assert_eq!(
        cs[paused].cand.last_state().unwrap().generation,
        gen_before,
        "the session survived the short pause"
    );
    assert!(cs[paused].cand.events().iter().any(
        |e| matches!(&e.kind, Kind::State(s) if s.state == "paused" && s.generation == gen_before)
    ));
    let leader = next;

    // 4. Lost reply to a new candidate's create: exactly one node for it; the line moves on.
    let lost = add(&mut cs, true);
    assert!(
        harness::wait_for(Duration::from_secs(20), || cs[lost].proxy.dropped_replies()
            == 1),
        "the multi's reply was dropped"
    );
    let lost_name = cs[lost].cand.name.clone();
    assert!(harness::wait_for(Duration::from_secs(20), || rt
        .block_on(line_order(&observer, group))
        .contains(&lost_name)));
    std::thread::sleep(Duration::from_millis(500));
    let line = rt.block_on(line_order(&observer, group));
    assert_eq!(
        line.iter().filter(|n| **n == lost_name).count(),
        1,
        "one node for {lost_name}: {line:?}"
    );

    // 5. The ensemble's leader server dies; candidates behind it move to another server.
    let zk_leader = ens.leader().expect("an ensemble leader");
    let other = ens.server_addr((zk_leader + 1) % 3);
    for c in &cs {
        if c.proxy.upstream() == ens.server_addr(zk_leader) {
            c.proxy.set_upstream(other);
        }
    }
    ens.kill(zk_leader);
    ens.wait_for_new_leader(zk_leader, Duration::from_secs(30));
    assert!(
        harness::wait_for(Duration::from_secs(30), || alive_active(&cs).len() == 1),
        "a leader after the ensemble's leader died"
    );
    ens.restart(zk_leader);
    let leader = {
        let _ = leader;
        alive_active(&cs)[0]
    };

    // 6. And one more leader kill: the line still moves.
    cs[leader].cand.kill();
    let (_, took) = wait_new_leader(&cs, leader, "the last kill");
    figures.push(format!("kill: {} ms", took / 1000));
    std::thread::sleep(Duration::from_millis(500));

    let refs: Vec<&Candidate> = cs.iter().map(|c| &c.cand).collect();
    let terms = active_terms(&refs, now_us());
    let bad = overlaps(&terms, 25_000);
    assert!(bad.is_empty(), "two Active at once: {bad:#?}");
    assert!(tokens_grow(&terms), "tokens must grow: {terms:#?}");
    assert!(terms.len() >= 6, "{terms:#?}");
    eprintln!(
        "FIGURES checker (ensemble, stop policy, session {session_ms} ms): {} Active terms over {} candidates, no overlap (margin 25 ms), tokens growing; time to a new leader: {}",
        terms.len(),
        cs.len(),
        figures.join(", ")
    );
    drop(cs);
    drop(observer);
}
