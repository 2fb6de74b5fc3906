//! Candidate processes (examples/election_candidate.rs), their logs, and the checker over the
//! timestamped state transitions of all candidates.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Builds the candidate example once per test binary and returns its path.
pub fn candidate_bin() -> PathBuf {
    zooid_test_support::example_binary("election_candidate")
}

/// Makes a child die with the test process (PR_SET_PDEATHSIG).
pub fn die_with_parent(cmd: &mut Command) {
    // SAFETY: prctl and getppid are async-signal-safe.
    unsafe {
        let parent = libc::getpid();
        cmd.pre_exec(move || {
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
}

pub use zooid_test_support::now_us;

/// One candidate process; killed (SIGKILL) and reaped on drop.
pub struct Candidate {
    pub name: String,
    pub log: PathBuf,
    child: Child,
    /// When the test killed it (unix µs).
    pub killed_at: Option<u128>,
}

impl Candidate {
    pub fn start(
        dir: &Path,
        connect: &str,
        group: &str,
        name: &str,
        policy: &str,
        session_ms: u64,
        fence_node: Option<&str>,
    ) -> Candidate {
        let log = dir.join(format!("{name}.log"));
        let stderr =
            std::fs::File::create(dir.join(format!("{name}.stderr"))).expect("stderr file");
        let mut cmd = Command::new(candidate_bin());
        cmd.args([
            "--connect",
            connect,
            "--group",
            group,
            "--name",
            name,
            "--on-pause",
            policy,
        ])
        .arg("--session-timeout-ms")
        .arg(session_ms.to_string())
        .arg("--log")
        .arg(&log)
        .env("RUST_LOG", "zooid=info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
        if let Some(node) = fence_node {
            cmd.args(["--fence-node", node]);
        }
        die_with_parent(&mut cmd);
        let child = cmd.spawn().expect("start a candidate");
        Candidate {
            name: name.to_string(),
            log,
            child,
            killed_at: None,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as i32, sig);
        }
    }

    pub fn kill(&mut self) {
        if self.killed_at.is_none() {
            self.signal(libc::SIGKILL);
            self.killed_at = Some(now_us());
            let _ = self.child.wait();
        }
    }

    pub fn events(&self) -> Vec<Event> {
        read_log(&self.log)
    }

    /// The latest state line.
    pub fn last_state(&self) -> Option<StateLine> {
        self.events().into_iter().rev().find_map(|e| match e.kind {
            Kind::State(s) => Some(s),
            _ => None,
        })
    }

    pub fn is_active(&self) -> bool {
        self.last_state().is_some_and(|s| s.state == "active")
    }
}

impl Drop for Candidate {
    fn drop(&mut self) {
        self.signal(libc::SIGCONT);
        self.kill();
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateLine {
    pub state: String,
    pub token: Option<i64>,
    pub generation: u64,
    pub notifications: u64,
    pub terms: u64,
}

#[derive(Clone, Debug)]
pub enum Kind {
    Joined,
    State(StateLine),
    Fenced {
        outcome: String,
        token: i64,
        detail: String,
    },
    /// A fenced write attempted right after SIGCONT, whatever the state.
    FencedCont {
        token: Option<i64>,
        outcome: String,
        detail: String,
    },
}

#[derive(Clone, Debug)]
pub struct Event {
    pub t_us: u128,
    pub kind: Kind,
}

fn field<T: std::str::FromStr>(word: Option<&str>, key: &str) -> Option<T> {
    word?.strip_prefix(key)?.parse().ok()
}

pub fn read_log(path: &Path) -> Vec<Event> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut w = line.split(' ');
            let t_us = w.next()?.parse().ok()?;
            let _name = w.next()?;
            let _pid = w.next()?;
            let kind = match w.next()? {
                "joined" => Kind::Joined,
                "state" => Kind::State(StateLine {
                    state: w.next()?.to_string(),
                    token: w.next()?.parse().ok(),
                    generation: field(w.next(), "gen=")?,
                    notifications: field(w.next(), "notif=")?,
                    terms: field(w.next(), "terms=")?,
                }),
                "fenced-cont" => Kind::FencedCont {
                    token: w.next()?.parse().ok(),
                    outcome: w.next()?.to_string(),
                    detail: w.collect::<Vec<_>>().join(" "),
                },
                "fenced" => Kind::Fenced {
                    outcome: w.next()?.to_string(),
                    token: w.next()?.parse().ok()?,
                    detail: w.collect::<Vec<_>>().join(" "),
                },
                _ => return None,
            };
            Some(Event { t_us, kind })
        })
        .collect()
}

/// An Active interval of one candidate: [start, end) in unix µs, with its token.
#[derive(Clone, Debug)]
pub struct Term {
    pub name: String,
    pub token: i64,
    pub start: u128,
    pub end: u128,
}

/// The Active intervals in the candidates' logs; an interval still open at the end of a log
/// ends when the process was killed, else at `now`.
pub fn active_terms(candidates: &[&Candidate], now: u128) -> Vec<Term> {
    let mut terms = Vec::new();
    for c in candidates {
        let mut open: Option<(i64, u128)> = None;
        for e in c.events() {
            let Kind::State(s) = e.kind else { continue };
            if s.state == "active" {
                if open.is_none() {
                    open = Some((s.token.unwrap_or(-1), e.t_us));
                }
            } else if let Some((token, start)) = open.take() {
                terms.push(Term {
                    name: c.name.clone(),
                    token,
                    start,
                    end: e.t_us,
                });
            }
        }
        if let Some((token, start)) = open {
            terms.push(Term {
                name: c.name.clone(),
                token,
                start,
                end: c.killed_at.unwrap_or(now),
            });
        }
    }
    terms.sort_by_key(|t| t.start);
    terms
}

/// The checker: no two Active intervals of different candidates overlap by more than
/// `margin_us` (the logging delay between a transition and its line; all processes share this
/// host's clock). Returns the overlaps found.
pub fn overlaps(terms: &[Term], margin_us: u128) -> Vec<(Term, Term)> {
    let mut found = Vec::new();
    for (i, a) in terms.iter().enumerate() {
        for b in &terms[i + 1..] {
            if a.name != b.name && b.start + margin_us < a.end && a.start + margin_us < b.end {
                found.push((a.clone(), b.clone()));
            }
        }
    }
    found
}

/// The tokens of the successive terms, in start order, must strictly increase from one
/// candidate's term to the next candidate's term (a Keep leader may resume its own term).
pub fn tokens_grow(terms: &[Term]) -> bool {
    terms
        .windows(2)
        .all(|w| w[1].token >= w[0].token && (w[1].token > w[0].token || w[1].name == w[0].name))
}

/// Sum of watch notifications per candidate (latest count in each log).
pub fn notifications(candidates: &[&Candidate]) -> BTreeMap<String, u64> {
    candidates
        .iter()
        .map(|c| {
            (
                c.name.clone(),
                c.last_state().map_or(0, |s| s.notifications),
            )
        })
        .collect()
}

pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    if values.is_empty() {
        return 0.0;
    }
    values[values.len() / 2]
}

/// Polls until `cond` holds or `timeout` passes.
pub fn wait_for(timeout: Duration, cond: impl FnMut() -> bool) -> bool {
    zooid_test_support::wait_until(timeout, cond)
}
