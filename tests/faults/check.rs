//! The fault suite's checker: reads every worker's ledger (`*.log`, eventpublish's format),
//! operation log (`*.ops`) and stderr (`*.stderr`) plus the free IDs read from ZooKeeper at the
//! end, and accounts for every ID of the category from what was observed.
//!
//! Each ledger is replayed in order (one thread writes it sequentially), tracking what the thread
//! holds: `T` adds, `U` (used) and `P` (pushed back) remove and must be held, `L` is a push whose
//! outcome is unknown when its IDs are held and a take's leaked IDs otherwise. Then, over all
//! ledgers:
//!
//! * duplicates: an ID used twice; an ID used and also free at the end; an ID held (handed out,
//!   neither used nor given back) and free, unless its thread was killed inside the push of it;
//!   an ID handed out more times than it came back (`T` count > 1 + `P` + unknown pushes + held
//!   by a thread killed inside a push, which may have applied); an ID free twice in ZooKeeper;
//! * where every ID is ([`account`]): each must be named by an observation (free in ZooKeeper,
//!   used, held by a worker, named leaked by a report: an `OutcomeUnknown`'s ranges in an `L`
//!   line, or the `leaked=A:B,C:D` field of a `... not given back; IDs leaked` or
//!   [`CLAIM_UNKNOWN`] log line), lie at or below the record a `zooid restore` recreated the
//!   category from (given up by it), or be covered by a bounded report: a [`CLAIM_UNKNOWN`]
//!   line's `at_most=N within=A:B`, or a take in flight in a killed worker (at most one take's
//!   IDs). A bound covers at most its `at_most` IDs inside its range. Any ID left over is a
//!   problem: the check does not define the unexplained IDs as whatever remains.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use zooid::IdRange;

/// Sorted, disjoint, non-adjacent inclusive intervals of IDs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ivs(Vec<(i64, i64)>);

impl Ivs {
    pub fn new(ranges: impl IntoIterator<Item = (i64, i64)>) -> Self {
        let mut v: Vec<(i64, i64)> = ranges.into_iter().filter(|(s, e)| s <= e).collect();
        v.sort_unstable();
        let mut out: Vec<(i64, i64)> = Vec::with_capacity(v.len());
        for (s, e) in v {
            match out.last_mut() {
                Some(last) if s <= last.1.saturating_add(1) => last.1 = last.1.max(e),
                _ => out.push((s, e)),
            }
        }
        Ivs(out)
    }

    pub fn of(ranges: &[IdRange]) -> Self {
        Self::new(ranges.iter().map(|r| (r.start(), r.end())))
    }

    pub fn count(&self) -> u64 {
        self.0.iter().map(|(s, e)| (e - s) as u64 + 1).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn union(&self, other: &Ivs) -> Ivs {
        Ivs::new(self.0.iter().chain(other.0.iter()).copied())
    }

    pub fn intersect(&self, other: &Ivs) -> Ivs {
        let (mut i, mut j, mut out) = (0, 0, Vec::new());
        while i < self.0.len() && j < other.0.len() {
            let (a, b) = (self.0[i], other.0[j]);
            let (s, e) = (a.0.max(b.0), a.1.min(b.1));
            if s <= e {
                out.push((s, e));
            }
            if a.1 < b.1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        Ivs(out)
    }

    pub fn subtract(&self, other: &Ivs) -> Ivs {
        let mut out = Vec::new();
        let mut j = 0;
        for &(s, e) in &self.0 {
            let mut cur = s;
            while j < other.0.len() && other.0[j].1 < cur {
                j += 1;
            }
            let mut k = j;
            while k < other.0.len() && other.0[k].0 <= e {
                let (os, oe) = other.0[k];
                if os > cur {
                    out.push((cur, os - 1));
                }
                if oe >= e {
                    cur = e.saturating_add(1);
                    break;
                }
                cur = oe + 1;
                k += 1;
            }
            if cur <= e {
                out.push((cur, e));
            }
        }
        Ivs(out)
    }

    pub fn contains_all(&self, other: &Ivs) -> bool {
        other.subtract(self).is_empty()
    }

    pub fn overlaps(&self, other: &Ivs) -> bool {
        !self.intersect(other).is_empty()
    }

    pub fn first(&self) -> Option<(i64, i64)> {
        self.0.first().copied()
    }
}

/// How many IDs, in total, `adds` covers more often than `1 + subs` does: the sum over IDs of
/// `max(0, adds(x) - subs(x) - 1)`.
fn excess(adds: &[(i64, i64)], subs: &[(i64, i64)]) -> (u64, Option<i64>) {
    let mut events: Vec<(i64, i64)> = Vec::with_capacity(2 * (adds.len() + subs.len()));
    for &(s, e) in adds {
        events.push((s, 1));
        events.push((e + 1, -1));
    }
    for &(s, e) in subs {
        events.push((s, -1));
        events.push((e + 1, 1));
    }
    events.sort_unstable();
    let (mut total, mut level, mut first) = (0u64, 0i64, None);
    let mut i = 0;
    while i < events.len() {
        let pos = events[i].0;
        while i < events.len() && events[i].0 == pos {
            level += events[i].1;
            i += 1;
        }
        if level > 1 && i < events.len() {
            total += (level - 1) as u64 * (events[i].0 - pos) as u64;
            first.get_or_insert(pos);
        }
    }
    (total, first)
}

/// One operation as recorded in an `.ops` file (`stem` and `op` are shown by `Debug` in failure
/// reports only).
#[allow(dead_code)]
#[derive(Clone, Debug)]
pub struct OpRecord {
    pub stem: String,
    pub op: String,
    /// `ok`, `unknown` or `err:<kind>`.
    pub outcome: String,
    pub ids: u64,
    pub start_ms: u128,
    pub end_ms: u128,
    /// How many of its writes lost their reply.
    pub lost: u64,
}

impl OpRecord {
    pub fn elapsed_ms(&self) -> u128 {
        self.end_ms.saturating_sub(self.start_ms)
    }
}

/// A report that IDs it cannot name may be gone: at most `at_most` of the IDs in `within`
/// (a take whose claim of fresh blocks stayed unknown, [`CLAIM_UNKNOWN`]; a take in flight when
/// its worker was SIGKILLed, which could report nothing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bound {
    /// Where it was observed, for failure reports.
    pub source: String,
    pub kind: BoundKind,
    pub at_most: u64,
    pub within: (i64, i64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoundKind {
    /// A [`CLAIM_UNKNOWN`] line's `at_most=N within=A:B`.
    Claim,
    /// A killed worker thread whose `.ops` file ends inside a take.
    KilledTake,
}

/// Where IDs were seen at the end, each set from its own observation; [`account`] finds the IDs
/// none of them names and matches them against the bounded reports.
#[derive(Clone, Debug, Default)]
pub struct Observations {
    /// The category.
    pub all: Ivs,
    /// Free in ZooKeeper at the end (holes, the pool's free list and parts, waiting pushes, the
    /// fresh IDs from the frontier up).
    pub free: Ivs,
    /// Used by a worker (`U`).
    pub used: Ivs,
    /// Handed out to a thread (`T`) and neither used nor pushed back nor reported: by killed
    /// workers, and by workers that stopped normally (which must be none).
    pub held_by_killed: Ivs,
    pub held_by_live: Ivs,
    /// Named as leaked by a report: an `OutcomeUnknown`'s ranges (`L`) or a `leaked=` log field.
    pub leaked: Ivs,
    /// The durable record a `zooid restore` recreated the category from: the IDs at or below it
    /// that nothing else names were given up by that restore.
    pub restored_from: Option<i64>,
    /// Reports of IDs that may be gone without being named.
    pub bounds: Vec<Bound>,
}

/// What [`account`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Account {
    /// IDs that no observation names (neither free, used, held nor named leaked), besides those
    /// a restore gave up.
    pub unexplained: Ivs,
    /// IDs named by nothing at or below the record a restore recreated the category from.
    pub restore_gave_up: Ivs,
    /// How many unexplained IDs each bound (same order as [`Observations::bounds`]) covers.
    pub covered: Vec<u64>,
    /// Unexplained IDs no bound covers (within its range, up to its `at_most`): the check fails
    /// on any.
    pub uncovered: Ivs,
}

/// Finds the IDs of the category that no observation explains, and matches them against the
/// bounded reports: a bound covers only IDs inside its range, and at most `at_most` of them;
/// each ID is covered by one bound. The matching is the greedy one that is optimal for points
/// and capacitated intervals (IDs ascending, each to the bound with room whose range ends
/// first), so an uncovered ID means that no assignment covers them all.
pub fn account(o: &Observations) -> Account {
    let named = o
        .free
        .union(&o.used)
        .union(&o.held_by_killed)
        .union(&o.held_by_live)
        .union(&o.leaked);
    let mut unexplained = o.all.subtract(&named);
    let restore_gave_up = match o.restored_from {
        Some(record) => unexplained.intersect(&Ivs::new([(i64::MIN, record)])),
        None => Ivs::default(),
    };
    unexplained = unexplained.subtract(&restore_gave_up);

    // Cut the unexplained ranges where any bound starts or ends: inside a piece every ID lies in
    // the same bounds.
    let mut cuts: Vec<i64> = Vec::new();
    for b in &o.bounds {
        cuts.push(b.within.0);
        cuts.push(b.within.1.saturating_add(1));
    }
    cuts.sort_unstable();
    cuts.dedup();
    let mut room: Vec<u64> = o.bounds.iter().map(|b| b.at_most).collect();
    let mut covered = vec![0u64; o.bounds.len()];
    let mut uncovered = Vec::new();
    for &(s, e) in &unexplained.0 {
        let mut start = s;
        while start <= e {
            let next_cut = cuts.iter().copied().find(|&c| c > start);
            let end = next_cut.map_or(e, |c| (c - 1).min(e));
            let mut left = (end - start) as u64 + 1;
            while left > 0 {
                let best = (0..o.bounds.len())
                    .filter(|&i| {
                        room[i] > 0 && o.bounds[i].within.0 <= start && o.bounds[i].within.1 >= end
                    })
                    .min_by_key(|&i| o.bounds[i].within.1);
                let Some(i) = best else { break };
                let n = left.min(room[i]);
                room[i] -= n;
                covered[i] += n;
                left -= n;
            }
            if left > 0 {
                // Which IDs of the piece stay uncovered does not matter (they are alike): say the
                // highest.
                uncovered.push((end - (left as i64 - 1), end));
            }
            if end == i64::MAX {
                break;
            }
            start = end + 1;
        }
    }
    Account {
        unexplained,
        restore_gave_up,
        covered,
        uncovered: Ivs::new(uncovered),
    }
}

/// Everything the checker found. Counts of IDs unless said otherwise.
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    pub category: u64,
    /// `T` lines and the IDs they name.
    pub batches: u64,
    pub handed_out: u64,
    /// IDs used (`U`), counted with multiplicity.
    pub used: u64,
    pub pushed: u64,
    pub free: u64,
    /// IDs free twice at the end (overlapping holes, a hole also in the pool's free list or at
    /// or above the frontier: a push of free IDs got in).
    pub free_twice: u64,
    /// Used in two places, or used and free, or handed out twice without coming back, or held
    /// (handed out, neither used nor given back) and free.
    pub used_twice: u64,
    pub used_and_free: u64,
    pub handed_out_twice: u64,
    pub held_and_free: u64,
    /// Where the IDs are at the end, each counted once, in this order of precedence: used, free,
    /// held by a killed worker (taken, neither used nor pushed: unaccounted), held by a live
    /// worker (must be none), named leaked by a report, given up by a restore.
    pub held_by_killed: u64,
    pub held_by_live: u64,
    pub leaked: u64,
    /// IDs a `zooid restore` gave up: at or below the durable record it restored from, named by
    /// no observation (free in the wiped pool, or between its frontier and the record).
    pub restore_gave_up: u64,
    /// IDs no observation names ([`account`]): neither free in ZooKeeper, used, held nor named
    /// leaked by a report, nor given up by a restore. Only bounded reports may cover them.
    pub unexplained: u64,
    /// Of those, covered by unknown block claims' bounds and by takes in flight in killed
    /// workers (each up to its `at_most`, inside its range).
    pub covered_by_claims: u64,
    pub covered_by_killed_takes: u64,
    /// Unexplained IDs no report covers: the check fails on any.
    pub uncovered: u64,
    pub uncovered_ids: Ivs,
    /// All the unexplained IDs.
    pub unexplained_ids: Ivs,
    /// Operations that ended in `OutcomeUnknown`, from the ledgers' `L` lines.
    pub takes_unknown: u64,
    pub pushes_unknown: u64,
    /// IDs named by those operations.
    pub unknown_take_ids: u64,
    pub unknown_push_ids: u64,
    /// The largest number of IDs one outcome-unknown operation named.
    pub largest_unknown: u64,
    /// Reports in the workers' stderr of IDs taken but not given back (a block give-back that
    /// failed or whose outcome was unknown, IDs a caller never received): `... IDs leaked`
    /// lines with a `leaked=A:B,C:D` field, and the IDs they name.
    pub give_backs_leaked: u64,
    pub give_back_ids: u64,
    /// Takes whose claim of fresh blocks stayed unknown, reported in the workers' stderr
    /// ([`CLAIM_UNKNOWN`]); the ranges their unnamed blocks lie in and at most how many IDs
    /// those hold.
    pub claims_unknown: u64,
    pub claim_bounds: Ivs,
    pub claim_bound_ids: u64,
    /// Every bounded report ([`Bound`]): unknown claims and takes in flight in killed workers.
    pub bounds: Vec<Bound>,
    /// Completed operations that lost the reply to a write (ambiguous until resolved), and how
    /// they ended: ok (the protocol told the outcome), err (told "not applied", then failed
    /// otherwise, nothing changed) or unknown (OutcomeUnknown: the IDs are leaked).
    pub ambiguous_ops: u64,
    pub ambiguous_ok: u64,
    pub ambiguous_err: u64,
    pub ambiguous_unknown: u64,
    /// From the workers' stderr: writes whose reply was lost (each resolved by the protocol or
    /// ending in OutcomeUnknown), by operation, and session renewals.
    pub lost_replies_take: u64,
    pub lost_replies_push: u64,
    pub session_renewals: u64,
    /// `E` lines by kind.
    pub errors: BTreeMap<String, u64>,
    /// Operations by `op outcome`.
    pub ops: BTreeMap<String, u64>,
    pub records: Vec<OpRecord>,
    /// Stems (`pN-tK`) of killed workers whose `.ops` file ends inside an operation.
    pub killed_mid_op: Vec<String>,
    pub problems: Vec<String>,
}

impl Analysis {
    pub fn duplicates(&self) -> u64 {
        self.used_twice + self.used_and_free + self.handed_out_twice + self.held_and_free
    }

    pub fn lost_replies(&self) -> u64 {
        self.lost_replies_take + self.lost_replies_push
    }

    pub fn unknown_ops(&self) -> u64 {
        self.takes_unknown + self.pushes_unknown
    }

    /// Operations started (takes and pushes, whatever their outcome).
    pub fn operations(&self) -> u64 {
        self.records.len() as u64
    }

    pub fn ok_ops(&self) -> u64 {
        self.records.iter().filter(|r| r.outcome == "ok").count() as u64
    }

    pub fn error_summary(&self) -> String {
        if self.errors.is_empty() {
            return "none".into();
        }
        self.errors
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// A human-readable account, printed by every test.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "  operations {} ({} ok): {:?}",
            self.operations(),
            self.ok_ops(),
            self.ops
        );
        let _ = writeln!(
            s,
            "  IDs: handed out {} in {} batches, used {}, pushed back {}, free at end {}",
            self.handed_out, self.batches, self.used, self.pushed, self.free
        );
        let _ = writeln!(
            s,
            "  duplicates {} (used twice {}, used and free {}, handed out twice {}, held and free {}); free twice {}",
            self.duplicates(),
            self.used_twice,
            self.used_and_free,
            self.handed_out_twice,
            self.held_and_free,
            self.free_twice
        );
        let _ = writeln!(
            s,
            "  lost replies {} (take {}, push {}) in {} operations: {} resolved and completed, {} resolved then failed, {} unknown; outcome unknown: {} takes ({} IDs), {} pushes ({} IDs); session renewals {}",
            self.lost_replies(),
            self.lost_replies_take,
            self.lost_replies_push,
            self.ambiguous_ops,
            self.ambiguous_ok,
            self.ambiguous_err,
            self.ambiguous_unknown,
            self.takes_unknown,
            self.unknown_take_ids,
            self.pushes_unknown,
            self.unknown_push_ids,
            self.session_renewals
        );
        if self.give_backs_leaked > 0 {
            let _ = writeln!(
                s,
                "  IDs not given back: {} reports ({} IDs named leaked)",
                self.give_backs_leaked, self.give_back_ids
            );
        }
        if self.claims_unknown > 0 {
            let _ = writeln!(
                s,
                "  block claims unknown: {} (unnamed: at most {} IDs within {:?})",
                self.claims_unknown, self.claim_bound_ids, self.claim_bounds.0
            );
        }
        let _ = writeln!(
            s,
            "  where the {} IDs are: used {}, free {}, held by killed workers {}, held by live workers {}, named leaked {}, given up by a restore {}; named by nothing {}: covered by unknown claims' bounds {}, by takes in flight in killed workers {}, by no report {}",
            self.category,
            self.used - self.used_twice,
            self.free - self.used_and_free.min(self.free),
            self.held_by_killed,
            self.held_by_live,
            self.leaked,
            self.restore_gave_up,
            self.unexplained,
            self.covered_by_claims,
            self.covered_by_killed_takes,
            self.uncovered
        );
        if !self.unexplained_ids.is_empty() {
            let _ = writeln!(
                s,
                "  IDs named by nothing (to trace where they went): {:?}",
                self.unexplained_ids.0.iter().take(10).collect::<Vec<_>>()
            );
        }
        if !self.uncovered_ids.is_empty() {
            let _ = writeln!(
                s,
                "  IDs no observation explains and no report covers: {:?}",
                self.uncovered_ids.0.iter().take(10).collect::<Vec<_>>()
            );
        }
        let _ = writeln!(s, "  errors ridden out: {}", self.error_summary());
        if !self.killed_mid_op.is_empty() {
            let _ = writeln!(s, "  killed mid-operation: {:?}", self.killed_mid_op);
        }
        for p in self.problems.iter().take(20) {
            let _ = writeln!(s, "  PROBLEM: {p}");
        }
        s
    }
}

/// The end of the message of zooid's reports of IDs it took but could not give back (a block
/// give-back that failed, src/alloc/blocks/take.rs; IDs a caller never received,
/// src/alloc/undelivered.rs), each with a `leaked=A:B,C:D` field naming them.
const IDS_LEAKED: &str = "not given back; IDs leaked";

/// The ranges of a line's `leaked=A:B,C:D` field (empty: none); `None`: no such field, or
/// unreadable.
fn leaked_field(line: &str) -> Option<Vec<(i64, i64)>> {
    let (_, rest) = line.rsplit_once(" leaked=")?;
    if rest.is_empty() || rest.starts_with(char::is_whitespace) {
        return Some(Vec::new());
    }
    let field = rest.split_whitespace().next()?;
    field.split(',').map(parse_range).collect()
}

/// The message of zooid's report of a take whose claim of fresh blocks stayed unknown
/// (src/alloc/blocks/take.rs): its blocks found are named in the take's error (`L` lines) and its
/// `leaked=` field, the rest bounded by the fields `at_most=N within=A:B` (`within=` empty: no bound).
const CLAIM_UNKNOWN: &str = "block claim outcome unknown; its blocks stay unused";

/// The bound of a [`CLAIM_UNKNOWN`] line: at most how many IDs, within which range (`None`
/// inside: the line names none); `None`: unreadable.
fn claim_unknown_bound(line: &str) -> Option<Option<(u64, (i64, i64))>> {
    let (_, rest) = line.rsplit_once(" at_most=")?;
    let at_most: u64 = rest.split_whitespace().next()?.parse().ok()?;
    let (_, rest) = rest.split_once(" within=")?;
    match rest.split_whitespace().next() {
        None => Some(None),
        Some(field) => Some(Some((at_most, parse_range(field)?))),
    }
}

fn parse_range(text: &str) -> Option<(i64, i64)> {
    let (a, b) = text.trim().split_once(':')?;
    let (a, b) = (a.parse().ok()?, b.parse().ok()?);
    (a <= b).then_some((a, b))
}

/// What the checker is told besides the files in the ledger directory.
#[derive(Clone, Debug)]
pub struct Inputs<'a> {
    /// The category's bounds.
    pub bounds: IdRange,
    /// The free ranges read from ZooKeeper at the end, as found: ranges that overlap are IDs
    /// free twice.
    pub free: &'a [IdRange],
    /// The worker processes (file prefixes, e.g. `p0`) that were SIGKILLed.
    pub killed: &'a [String],
    /// The most IDs one take may remove from the pool: what a take in flight in a killed worker
    /// may have taken without anyone being able to name them.
    pub take_at_most: u64,
    /// The durable record a `zooid restore` recreated the category from, if one did.
    pub restored_from: Option<i64>,
}

/// Reads everything in `dir` and checks it against the final pool.
pub fn analyse(dir: &Path, inputs: &Inputs) -> Analysis {
    let bounds = inputs.bounds;
    let mut a = Analysis {
        category: bounds.len(),
        ..Analysis::default()
    };
    let all = Ivs::new([(bounds.start(), bounds.end())]);
    let free_ranges: Vec<(i64, i64)> = inputs.free.iter().map(|r| (r.start(), r.end())).collect();
    let free_set = Ivs::new(free_ranges.iter().copied());
    a.free = free_set.count();
    let free_twice = free_overlaps(&free_ranges);
    a.free_twice = free_twice.count();
    if let Some(r) = free_twice.first() {
        a.problems.push(format!(
            "{} IDs free twice at the end (a push of free IDs got in), e.g. {}:{}",
            a.free_twice, r.0, r.1
        ));
    }
    if !all.contains_all(&free_set) {
        a.problems
            .push("the pool's free list leaves the bounds".into());
    }
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .expect("read the ledger directory")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let is_killed = |stem: &str| {
        let process = stem.split('-').next().unwrap_or(stem);
        inputs.killed.iter().any(|k| k == process)
    };

    // The operation logs first: which operation each killed thread was inside.
    let mut open_ops: BTreeMap<String, String> = BTreeMap::new();
    for name in &names {
        let Some(stem) = name.strip_suffix(".ops") else {
            continue;
        };
        let text = std::fs::read_to_string(dir.join(name)).expect("read ops");
        let mut open = None;
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            match f.as_slice() {
                [">", op, _start] => open = Some(op.to_string()),
                ["<", op, outcome, ids, start, end, lost] => {
                    open = None;
                    let record = OpRecord {
                        stem: stem.to_string(),
                        op: op.to_string(),
                        outcome: outcome.to_string(),
                        ids: ids.parse().unwrap_or(0),
                        start_ms: start.parse().unwrap_or(0),
                        end_ms: end.parse().unwrap_or(0),
                        lost: lost.parse().unwrap_or(0),
                    };
                    *a.ops.entry(format!("{op} {outcome}")).or_default() += 1;
                    if record.lost > 0 {
                        a.ambiguous_ops += 1;
                        match record.outcome.as_str() {
                            "ok" => a.ambiguous_ok += 1,
                            "unknown" => a.ambiguous_unknown += 1,
                            _ => a.ambiguous_err += 1,
                        }
                    } else if record.outcome == "unknown" {
                        a.problems.push(format!(
                            "{name}: {line:?}: outcome unknown without a lost reply"
                        ));
                    }
                    if outcome == &"unknown" {
                        a.largest_unknown = a.largest_unknown.max(record.ids);
                        if op == &"take" {
                            a.takes_unknown += 1;
                        } else {
                            a.pushes_unknown += 1;
                        }
                    }
                    a.records.push(record);
                }
                // A killed process may leave a torn last line.
                _ if is_killed(stem) => {}
                _ => a.problems.push(format!("{name}: unreadable line {line:?}")),
            }
        }
        if let Some(op) = open {
            if is_killed(stem) {
                a.killed_mid_op.push(format!("{stem} ({op})"));
                if op == "take" {
                    // It may have taken IDs that nobody can name (a killed process reports
                    // nothing): at most one take's worth, anywhere in the category.
                    a.bounds.push(Bound {
                        source: format!("{stem}: killed inside a take"),
                        kind: BoundKind::KilledTake,
                        at_most: inputs.take_at_most,
                        within: (bounds.start(), bounds.end()),
                    });
                }
                open_ops.insert(stem.to_string(), op);
            } else {
                a.problems
                    .push(format!("{name}: a live worker left its {op} unfinished"));
            }
        }
    }

    let (mut takes, mut uses, mut returns) = (Vec::new(), Vec::new(), Vec::new());
    let (mut used_set, mut leaked_set) = (Ivs::default(), Ivs::default());
    let (mut held_killed, mut held_live) = (Ivs::default(), Ivs::default());
    // Held IDs that may not be free nor handed out again: all but those of a killed thread
    // inside a push (which may have applied).
    let mut held_kept = Ivs::default();
    for name in &names {
        let path = dir.join(name);
        if let Some(stem) = name.strip_suffix(".log") {
            let text = std::fs::read_to_string(&path).expect("read ledger");
            let mut held = Ivs::default();
            for line in text.lines() {
                let (tag, rest) = line.split_once(' ').unwrap_or((line, ""));
                if tag == "E" {
                    *a.errors.entry(rest.to_string()).or_default() += 1;
                    continue;
                }
                let Some(r) = parse_range(rest) else {
                    a.problems.push(format!("{name}: unreadable line {line:?}"));
                    continue;
                };
                let one = Ivs::new([r]);
                if !all.contains_all(&one) {
                    a.problems
                        .push(format!("{name}: {line:?} leaves the bounds"));
                }
                let len = one.count();
                match tag {
                    "T" => {
                        a.batches += 1;
                        a.handed_out += len;
                        if held.overlaps(&one) {
                            a.problems
                                .push(format!("{name}: {line:?} handed out IDs it already held"));
                        }
                        held = held.union(&one);
                        takes.push(r);
                    }
                    "U" | "P" => {
                        if !held.contains_all(&one) {
                            a.problems.push(format!(
                                "{name}: {line:?} names IDs the thread did not hold"
                            ));
                        }
                        held = held.subtract(&one);
                        if tag == "U" {
                            a.used += len;
                            uses.push(r);
                            used_set = used_set.union(&one);
                        } else {
                            a.pushed += len;
                            returns.push(r);
                        }
                    }
                    "L" => {
                        // Operations are counted from the `.ops` files (one operation may
                        // report several ranges).
                        if held.contains_all(&one) {
                            held = held.subtract(&one);
                            a.unknown_push_ids += len;
                            returns.push(r);
                        } else if !held.overlaps(&one) {
                            a.unknown_take_ids += len;
                        } else {
                            a.problems
                                .push(format!("{name}: {line:?} is partly held, partly not"));
                        }
                        leaked_set = leaked_set.union(&one);
                    }
                    _ => a.problems.push(format!("{name}: unknown line {line:?}")),
                }
            }
            if is_killed(stem) {
                held_killed = held_killed.union(&held);
                if open_ops.get(stem).is_some_and(|op| op == "push") {
                    // Its push may have applied: the IDs may be free, or handed out again.
                    returns.extend(held.0.iter().copied());
                } else {
                    held_kept = held_kept.union(&held);
                }
            } else {
                held_live = held_live.union(&held);
                held_kept = held_kept.union(&held);
            }
        } else if name.ends_with(".stderr") {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            for line in text.lines() {
                if line.contains("reply lost; resolving the outcome") {
                    if line.contains("op=\"push\"") || line.contains("op=push") {
                        a.lost_replies_push += 1;
                    } else {
                        a.lost_replies_take += 1;
                    }
                } else if line.contains("ZooKeeper session renewed") {
                    a.session_renewals += 1;
                } else if line.contains(CLAIM_UNKNOWN) {
                    // Its `leaked=` blocks are the take's `L` lines too; its bound is here only.
                    match (claim_unknown_bound(line), leaked_field(line)) {
                        (Some(bound), Some(named)) => {
                            a.claims_unknown += 1;
                            leaked_set = leaked_set.union(&Ivs::new(named));
                            if let Some((at_most, range)) = bound {
                                a.claim_bound_ids += at_most;
                                a.claim_bounds = a.claim_bounds.union(&Ivs::new([range]));
                                a.bounds.push(Bound {
                                    source: format!("{name}: {line}"),
                                    kind: BoundKind::Claim,
                                    at_most,
                                    within: range,
                                });
                            }
                        }
                        _ => a.problems.push(format!("{name}: unreadable line {line:?}")),
                    }
                } else if line.contains(IDS_LEAKED) {
                    match leaked_field(line) {
                        Some(ranges) if !ranges.is_empty() => {
                            a.give_backs_leaked += 1;
                            let ranges = Ivs::new(ranges);
                            a.give_back_ids += ranges.count();
                            leaked_set = leaked_set.union(&ranges);
                        }
                        // A report of leaked IDs that does not name them: nothing can cover
                        // them.
                        _ => a.problems.push(format!(
                            "{name}: a report of leaked IDs that names none: {line:?}"
                        )),
                    }
                }
            }
        }
    }

    // Duplicates.
    let (twice, first) = excess(&uses, &[]);
    a.used_twice = twice;
    if let Some(id) = first {
        a.problems
            .push(format!("ID {id} (and others: {twice}) used twice"));
    }
    let used_free = used_set.intersect(&free_set);
    a.used_and_free = used_free.count();
    if let Some(r) = used_free.first() {
        a.problems
            .push(format!("used IDs are free again, e.g. {}:{}", r.0, r.1));
    }
    let held_free = held_kept.intersect(&free_set);
    a.held_and_free = held_free.count();
    if let Some(r) = held_free.first() {
        a.problems.push(format!(
            "{} IDs held by a worker (handed out, neither used nor given back, and not in a push \
             a kill interrupted) are free, e.g. {}:{}",
            a.held_and_free, r.0, r.1
        ));
    }
    let (again, first) = excess(&takes, &returns);
    a.handed_out_twice = again;
    if let Some(id) = first {
        a.problems.push(format!(
            "ID {id} (and others: {again}) handed out again without coming back"
        ));
    }

    // Where every ID is: named by an observation, given up by a restore, or covered by a
    // bounded report; anything else fails.
    let observed = Observations {
        all: all.clone(),
        free: free_set.clone(),
        used: used_set.clone(),
        held_by_killed: held_killed.clone(),
        held_by_live: held_live.clone(),
        leaked: leaked_set.clone(),
        restored_from: inputs.restored_from,
        bounds: a.bounds.clone(),
    };
    let account = account(&observed);
    let out = free_set.union(&used_set);
    a.held_by_killed = held_killed.subtract(&out).count();
    let out = out.union(&held_killed);
    let live_rest = held_live.subtract(&out);
    a.held_by_live = live_rest.count();
    if let Some(r) = live_rest.first() {
        a.problems.push(format!(
            "{} IDs still held by workers that stopped normally, e.g. {}:{}",
            a.held_by_live, r.0, r.1
        ));
    }
    let out = out.union(&held_live);
    a.leaked = leaked_set.subtract(&out).count();
    a.restore_gave_up = account.restore_gave_up.count();
    a.unexplained = account.unexplained.count();
    a.unexplained_ids = account.unexplained.clone();
    for (bound, n) in a.bounds.iter().zip(&account.covered) {
        match bound.kind {
            BoundKind::Claim => a.covered_by_claims += n,
            BoundKind::KilledTake => a.covered_by_killed_takes += n,
        }
    }
    a.uncovered = account.uncovered.count();
    a.uncovered_ids = account.uncovered.clone();
    if let Some(r) = account.uncovered.first() {
        a.problems.push(format!(
            "{} IDs no observation explains (not free in ZooKeeper, used, held, named leaked by \
             a report nor given up by a restore) and no report covers, e.g. {}:{} (all: {:?}); \
             {} named by nothing, {} reports bound the unnamed: {:?}",
            a.uncovered,
            r.0,
            r.1,
            account.uncovered.0.iter().take(10).collect::<Vec<_>>(),
            a.unexplained,
            a.bounds.len(),
            a.bounds
                .iter()
                .zip(&account.covered)
                .map(|(b, n)| format!(
                    "{} of at most {} in {}:{}",
                    n, b.at_most, b.within.0, b.within.1
                ))
                .collect::<Vec<_>>()
        ));
    }
    a
}

/// The IDs that two or more of `ranges` cover.
fn free_overlaps(ranges: &[(i64, i64)]) -> Ivs {
    let mut sorted = ranges.to_vec();
    sorted.sort_unstable();
    let mut out = Vec::new();
    let mut reach: Option<i64> = None;
    for (s, e) in sorted {
        if let Some(r) = reach {
            if s <= r {
                out.push((s, e.min(r)));
            }
        }
        reach = Some(reach.map_or(e, |r| r.max(e)));
    }
    Ivs::new(out)
}
#[cfg(test)]
mod tests {
    use super::*;

    fn r(a: i64, b: i64) -> IdRange {
        IdRange::new(a, b).unwrap()
    }

    /// Writes files (`name` -> content: ledgers, `.ops`, `.stderr`) into a temp dir and
    /// analyses them against `free`, in a category of 1:1000 whose takes take at most 100 IDs.
    fn run(files: &[(&str, &str)], free: &[IdRange], killed: &[&str]) -> Analysis {
        run_with(files, free, killed, None)
    }

    fn run_with(
        files: &[(&str, &str)],
        free: &[IdRange],
        killed: &[&str],
        restored_from: Option<i64>,
    ) -> Analysis {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let killed: Vec<String> = killed.iter().map(|s| s.to_string()).collect();
        analyse(
            dir.path(),
            &Inputs {
                bounds: r(1, 1000),
                free,
                killed: &killed,
                take_at_most: 100,
                restored_from,
            },
        )
    }

    fn claim_line(leaked: &str, bound: &str) -> String {
        format!(
            "2026-11-25T16:41:35.230837Z ERROR zooid::alloc::blocks::take: {CLAIM_UNKNOWN} category=\"/c\" why=found blocks [2] of a claim of 2 leaked={leaked} {bound}\n"
        )
    }

    fn obs(free: &[(i64, i64)], used: &[(i64, i64)], bounds: Vec<Bound>) -> Observations {
        Observations {
            all: Ivs::new([(1, 1000)]),
            free: Ivs::new(free.iter().copied()),
            used: Ivs::new(used.iter().copied()),
            bounds,
            ..Observations::default()
        }
    }

    fn bound(at_most: u64, within: (i64, i64)) -> Bound {
        Bound {
            source: "test".into(),
            kind: BoundKind::Claim,
            at_most,
            within,
        }
    }

    /// The check's teeth, on the pure function: an ID that no observation names fails the
    /// check unless a bounded report covers it, within its range and its count.
    #[test]
    fn an_id_no_observation_names_fails_unless_a_report_covers_it() {
        // 1:20 used, 22:1000 free: 21 is nowhere.
        let missing = obs(&[(22, 1000)], &[(1, 20)], vec![]);
        let acc = account(&missing);
        assert_eq!(acc.unexplained, Ivs::new([(21, 21)]));
        assert_eq!(acc.uncovered, Ivs::new([(21, 21)]));
        // Named by any observation: nothing unexplained.
        for named in [
            obs(&[(21, 1000)], &[(1, 20)], vec![]),
            obs(&[(22, 1000)], &[(1, 21)], vec![]),
            Observations {
                leaked: Ivs::new([(21, 21)]),
                ..missing.clone()
            },
            Observations {
                held_by_killed: Ivs::new([(21, 21)]),
                ..missing.clone()
            },
        ] {
            let acc = account(&named);
            assert!(acc.unexplained.is_empty() && acc.uncovered.is_empty());
        }
        // Covered by a bound around it; not by one elsewhere, nor by one with no room.
        let acc = account(&obs(&[(22, 1000)], &[(1, 20)], vec![bound(1, (11, 30))]));
        assert_eq!(
            (acc.covered.clone(), acc.uncovered.is_empty()),
            (vec![1], true)
        );
        let acc = account(&obs(&[(22, 1000)], &[(1, 20)], vec![bound(5, (22, 30))]));
        assert_eq!(acc.uncovered, Ivs::new([(21, 21)]));
        let acc = account(&obs(&[(22, 1000)], &[(1, 20)], vec![bound(0, (1, 1000))]));
        assert_eq!(acc.uncovered, Ivs::new([(21, 21)]));
        // A restore gives up what is at or below its record, only.
        let restored = |record| Observations {
            restored_from: Some(record),
            ..missing.clone()
        };
        assert!(account(&restored(21)).uncovered.is_empty());
        assert_eq!(account(&restored(20)).uncovered, Ivs::new([(21, 21)]));
    }

    /// A bound covers at most its own `at_most` IDs: two reports do not pool their counts, and
    /// the matching finds a cover when one exists.
    #[test]
    fn bounds_cover_per_report_and_the_matching_finds_a_cover() {
        // 101:150 unexplained; one report allows 10 there, another 100 where nothing is missing.
        let o = obs(
            &[(151, 1000)],
            &[(1, 100)],
            vec![bound(10, (101, 200)), bound(100, (301, 400))],
        );
        let acc = account(&o);
        assert_eq!(
            (acc.covered.clone(), acc.uncovered.count()),
            (vec![10, 0], 40)
        );
        // 5:14 and 500:509 unexplained; the narrow bound must take the low ones for the wide one
        // to have room for the high ones.
        let mut o = obs(&[(15, 499), (510, 1000)], &[(1, 4)], vec![]);
        o.bounds = vec![bound(10, (1, 1000)), bound(10, (1, 100))];
        let acc = account(&o);
        assert!(acc.uncovered.is_empty(), "{acc:?}");
        assert_eq!(acc.covered, vec![10, 10]);
        o.bounds[0].at_most = 9;
        assert_eq!(account(&o).uncovered.count(), 1);
    }

    /// The inputs the old checker passed, through the whole checker: an ID vanished while a
    /// worker was killed (the old check allowed one batch per killed thread, wherever the IDs
    /// were and whatever the thread was doing), and IDs beyond what the report in their range
    /// allows (the old check pooled every report's count).
    #[test]
    fn ids_the_old_check_let_through_are_problems() {
        let ledger = ("p0-t0.log", "T 1:10\nU 1:10\nT 11:20\nU 11:15\nP 16:20\n");
        // p1 was killed between operations: no take of its was in flight.
        let a = run(
            &[
                ledger,
                ("p1-t0.log", "T 31:40\nU 31:32\nP 33:40\n"),
                (
                    "p1-t0.ops",
                    "> take 1\n< take ok 10 1 2 0\n> push 3\n< push ok 8 3 4 0\n",
                ),
            ],
            &[r(16, 20), r(33, 1000)],
            &["p1"],
        );
        assert_eq!((a.unexplained, a.uncovered), (10, 10));
        assert_eq!(a.uncovered_ids, Ivs::new([(21, 30)]));
        assert!(!a.problems.is_empty());
        // The same, p1 killed inside a take: it may have taken them.
        let a = run(
            &[
                ledger,
                ("p1-t0.log", "T 31:40\nU 31:32\nP 33:40\n"),
                (
                    "p1-t0.ops",
                    "> take 1\n< take ok 10 1 2 0\n> push 3\n< push ok 8 3 4 0\n> take 5\n",
                ),
            ],
            &[r(16, 20), r(33, 1000)],
            &["p1"],
        );
        assert!(a.problems.is_empty(), "{:?}", a.problems);
        assert_eq!(
            (a.unexplained, a.covered_by_killed_takes, a.uncovered),
            (10, 10, 0)
        );
        // Nobody killed; a report allows 5 IDs within 21:30, another 100 within 201:300.
        let stderr = claim_line("", "at_most=5 within=21:30")
            + &claim_line("", "at_most=100 within=201:300");
        let a = run(
            &[ledger, ("p0.stderr", &stderr)],
            &[r(16, 20), r(31, 1000)],
            &[],
        );
        assert_eq!((a.claims_unknown, a.claim_bound_ids), (2, 105));
        assert_eq!(
            (a.unexplained, a.covered_by_claims, a.uncovered),
            (10, 5, 5)
        );
        assert!(!a.problems.is_empty());
    }

    #[test]
    fn a_clean_history_balances() {
        let a = run(
            &[
                ("p0-t0.log", "T 1:10\nU 1:4\nP 5:10\nT 5:14\nU 5:14\n"),
                ("p1-t0.log", "T 15:24\nU 15:15\nP 16:24\n"),
            ],
            &[r(16, 1000)],
            &[],
        );
        assert!(a.problems.is_empty(), "{:?}", a.problems);
        assert_eq!(
            (a.duplicates(), a.used, a.leaked, a.unexplained, a.uncovered),
            (0, 15, 0, 0, 0)
        );
    }

    #[test]
    fn the_same_ids_handed_to_two_workers_are_duplicates_even_if_unused() {
        let a = run(
            &[
                ("p0-t0.log", "T 1:10\nU 1:2\n"),
                ("p1-t0.log", "T 5:14\nU 11:14\n"),
            ],
            &[r(15, 1000)],
            &[],
        );
        assert_eq!(a.handed_out_twice, 6);
        assert!(a.duplicates() > 0 && !a.problems.is_empty());
    }

    #[test]
    fn used_twice_or_used_and_free_are_duplicates() {
        let a = run(
            &[
                ("p0-t0.log", "T 1:10\nU 1:10\n"),
                ("p1-t0.log", "T 1:10\nU 3:3\n"),
            ],
            &[r(5, 1000)],
            &[],
        );
        assert_eq!(a.used_twice, 1);
        assert_eq!(a.used_and_free, 6);
        assert!(!a.problems.is_empty());
    }

    /// IDs a thread holds are not free, unless a kill interrupted its push of them; IDs free
    /// twice are a push of free IDs.
    #[test]
    fn held_and_free_or_free_twice_are_problems() {
        let files = |ops: &'static str| {
            [
                ("p0-t0.log", "T 1:10\nU 1:5\n"),
                ("p0-t0.ops", ops),
                ("p1-t0.log", "T 11:20\nU 11:20\n"),
            ]
        };
        let free = [r(6, 10), r(21, 1000)];
        let a = run(&files("> take 1\n< take ok 10 1 2 0\n"), &free, &["p0"]);
        assert_eq!(a.held_and_free, 5);
        assert!(!a.problems.is_empty());
        let a = run(
            &files("> take 1\n< take ok 10 1 2 0\n> push 3\n"),
            &free,
            &["p0"],
        );
        assert!(a.problems.is_empty(), "{:?}", a.problems);
        assert_eq!((a.held_and_free, a.held_by_killed), (0, 0));
        // Held by a worker that stopped normally, and free.
        let a = run(&files("> take 1\n< take ok 10 1 2 0\n"), &free, &[]);
        assert_eq!(a.held_and_free, 5);
        let a = run(
            &[("p0-t0.log", "T 1:10\nU 1:10\n")],
            &[r(11, 500), r(400, 1000)],
            &[],
        );
        assert_eq!(a.free_twice, 101);
        assert!(!a.problems.is_empty());
    }

    #[test]
    fn lost_ids_are_reported_and_killed_takes_bounded() {
        // 11:20 vanished: p1-t1 was killed inside a take; 21:30 is held by p1-t0 (killed while
        // using them); 31:40 was leaked by an outcome-unknown take (never held); 41:50 by a
        // push whose outcome was unknown.
        let files = |t1_ops: &'static str| {
            [
                ("p0-t0.log", "T 1:10\nU 1:10\nL 31:40\nT 41:50\nL 41:50\n"),
                ("p1-t0.log", "T 21:30\n"),
                ("p1-t0.ops", "> take 1\n< take ok 10 1 2 0\n"),
                ("p1-t1.ops", t1_ops),
            ]
        };
        let a = run(
            &files("> take 1\n< take err:timeout 0 1 2 0\n> take 3\n"),
            &[r(51, 1000)],
            &["p1"],
        );
        assert!(a.problems.is_empty(), "{:?}", a.problems);
        assert_eq!(a.held_by_killed, 10);
        assert_eq!(a.leaked, 20);
        assert_eq!((a.unknown_take_ids, a.unknown_push_ids), (10, 10));
        assert_eq!(
            (a.unexplained, a.covered_by_killed_takes, a.uncovered),
            (10, 10, 0)
        );
        // Not killed inside a take: nothing covers 11:20.
        let a = run(
            &files("> take 1\n< take err:timeout 0 1 2 0\n"),
            &[r(51, 1000)],
            &["p1"],
        );
        assert_eq!(a.uncovered_ids, Ivs::new([(11, 20)]));
        assert!(!a.problems.is_empty());
        // The same ledger from a worker that was not killed: it kept IDs it should have pushed.
        let live = run(&[("p1-t0.log", "T 21:30\n")], &[r(1, 20), r(31, 1000)], &[]);
        assert_eq!(live.held_by_live, 10);
        assert!(!live.problems.is_empty());
    }

    #[test]
    fn failed_give_backs_are_explained_by_their_report() {
        let report = "2026-11-25T16:41:35.230837Z ERROR zooid::alloc::blocks::take: unused block IDs not given back; IDs leaked category=\"/c\" err=/c: outcome of push unknown after a lost reply; IDs [11:20] were not handed out and are leaked leaked=11:20,31:35\n";
        let ledger = ("p0-t0.log", "T 1:10\nU 1:10\n");
        let free = [r(21, 30), r(36, 1000)];
        let a = run(&[ledger, ("p0.stderr", report)], &free, &[]);
        assert!(a.problems.is_empty(), "{:?}", a.problems);
        assert_eq!((a.give_backs_leaked, a.give_back_ids), (1, 15));
        assert_eq!((a.leaked, a.unexplained), (15, 0));
        // IDs a caller never received, reported the same way.
        let undelivered = "2026-11-25T16:41:35.230837Z ERROR zooid::alloc::undelivered: IDs taken but never received by the caller not given back; IDs leaked category=\"/c\" err=x leaked=11:20,31:35\n";
        let a = run(&[ledger, ("p0.stderr", undelivered)], &free, &[]);
        assert!(a.problems.is_empty(), "{:?}", a.problems);
        assert_eq!((a.leaked, a.unexplained), (15, 0));
        // Without the report, the same IDs are unexplained: a problem.
        let a = run(&[ledger], &free, &[]);
        assert_eq!((a.leaked, a.unexplained, a.uncovered), (0, 15, 15));
        assert!(!a.problems.is_empty());
        // A report that names none of its IDs cannot cover them.
        let unnamed = report.replace("leaked=11:20,31:35", "leaked=");
        let a = run(&[ledger, ("p0.stderr", &unnamed)], &free, &[]);
        assert!(!a.problems.is_empty());
    }

    #[test]
    fn a_restore_gives_up_unexplained_ids_at_or_below_its_record_only() {
        // 11:20 free in the wiped pool and 21:40 between its frontier and the record (40): given
        // up by the restore; 61:70 above the record vanished: a problem.
        let files = [(
            "p0-t0.log",
            "T 1:10\nU 1:10\nT 41:50\nU 41:50\nT 51:60\nU 51:60\n",
        )];
        let a = run_with(&files, &[r(71, 1000)], &[], Some(40));
        assert_eq!((a.restore_gave_up, a.unexplained), (30, 10));
        assert_eq!(a.uncovered_ids, Ivs::new([(61, 70)]));
        assert!(!a.problems.is_empty());
        let a = run_with(&files, &[r(61, 1000)], &[], Some(40));
        assert!(a.problems.is_empty(), "{:?}", a.problems);
        assert_eq!((a.restore_gave_up, a.unexplained), (30, 0));
    }

    #[test]
    fn unknown_claims_are_bounded_by_their_report() {
        // 1:100 used; a take's claim stayed unknown: block 201:300 found (named, `L`), the other
        // one of its two blocks somewhere in 101:400; 101:200 is that block, 301:400 free.
        let ledger = ("p0-t0.log", "T 1:100\nU 1:100\nL 201:300\n");
        let free = [r(301, 1000)];
        let line = |bound: &str| claim_line("201:300", bound);
        let stderr = line("at_most=100 within=101:400");
        let a = run(&[ledger, ("p0.stderr", &stderr)], &free, &[]);
        assert!(a.problems.is_empty(), "{:?}", a.problems);
        assert_eq!(a.claims_unknown, 1);
        assert_eq!(
            (a.claim_bound_ids, a.claim_bounds.clone()),
            (100, Ivs::new([(101, 400)]))
        );
        assert_eq!(
            (a.unexplained, a.covered_by_claims, a.uncovered),
            (100, 100, 0)
        );
        // Fewer allowed than missing, a bound elsewhere, a line without a bound: problems.
        for bound in [
            "at_most=99 within=101:400",
            "at_most=100 within=401:500",
            "at_most=0 within=",
        ] {
            let stderr = line(bound);
            let a = run(&[ledger, ("p0.stderr", &stderr)], &free, &[]);
            assert_eq!(a.claims_unknown, 1, "{bound}");
            assert!(a.uncovered > 0 && !a.problems.is_empty(), "{bound}");
        }
        // The `leaked=` blocks explain IDs even without an `L` line.
        let stderr = line("at_most=100 within=101:400");
        let a = run(
            &[("p0-t0.log", "T 1:100\nU 1:100\n"), ("p0.stderr", &stderr)],
            &free,
            &[],
        );
        assert!(a.problems.is_empty(), "{:?}", a.problems);
        assert_eq!(a.leaked, 100);
    }

    #[test]
    fn interval_algebra() {
        let a = Ivs::new([(1, 10), (20, 30)]);
        let b = Ivs::new([(5, 25)]);
        assert_eq!(a.intersect(&b), Ivs::new([(5, 10), (20, 25)]));
        assert_eq!(a.subtract(&b), Ivs::new([(1, 4), (26, 30)]));
        assert_eq!(a.union(&b), Ivs::new([(1, 30)]));
        assert_eq!(Ivs::new([(1, 2), (3, 4)]), Ivs::new([(1, 4)]));
        assert_eq!(excess(&[(1, 10), (5, 12)], &[]).0, 6);
        assert_eq!(excess(&[(1, 10), (5, 12)], &[(5, 7)]).0, 3);
        assert_eq!(excess(&[(1, 10), (1, 10), (1, 10)], &[(1, 10)]).0, 10);
        assert_eq!(
            free_overlaps(&[(1, 10), (5, 12), (20, 30), (31, 40), (35, 36)]),
            Ivs::new([(5, 10), (35, 36)])
        );
    }
}
