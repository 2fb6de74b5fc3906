//! Per-worker ledgers of what a worker was handed, used and pushed back, and the checker that
//! reads them all together with the final pool.
//!
//! One line per fact: `T a:b` taken (fsynced before any of it is used), `U a:b` used
//! (published), `P a:b` pushed back, `L a:b` leaked by an operation whose outcome was unknown,
//! `E kind` an error the worker rode out.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;

use zooid::{IdRange, RangeSet};

/// Appends facts to one worker's ledger file.
pub struct Ledger {
    file: File,
    run: Option<IdRange>,
}

impl Ledger {
    /// Creates (or appends to) the ledger at `path`.
    pub fn open(path: &Path) -> io::Result<Self> {
        Ok(Self {
            file: OpenOptions::new().create(true).append(true).open(path)?,
            run: None,
        })
    }

    /// Records ranges handed to the worker, durably, before any is used.
    pub fn taken(&mut self, ranges: &[IdRange]) -> io::Result<()> {
        self.lines('T', ranges)?;
        self.file.sync_data()
    }

    /// Records one published ID (consecutive IDs are folded into one line).
    pub fn used(&mut self, id: i64) -> io::Result<()> {
        match self.run {
            Some(run) if run.end().checked_add(1) == Some(id) => {
                self.run = IdRange::new(run.start(), id);
                Ok(())
            }
            _ => {
                self.flush_used()?;
                self.run = Some(IdRange::single(id));
                Ok(())
            }
        }
    }

    /// Writes the pending run of used IDs.
    pub fn flush_used(&mut self) -> io::Result<()> {
        match self.run.take() {
            Some(run) => self.lines('U', &[run]),
            None => Ok(()),
        }
    }

    /// Records ranges pushed back.
    pub fn pushed(&mut self, ranges: &[IdRange]) -> io::Result<()> {
        self.flush_used()?;
        self.lines('P', ranges)?;
        self.file.sync_data()
    }

    /// Records ranges leaked by an operation whose outcome could not be told.
    pub fn leaked(&mut self, ranges: &[IdRange]) -> io::Result<()> {
        self.flush_used()?;
        self.lines('L', ranges)?;
        self.file.sync_data()
    }

    /// Records an error the worker rode out.
    pub fn error(&mut self, kind: &str) -> io::Result<()> {
        writeln!(self.file, "E {kind}")
    }

    fn lines(&mut self, tag: char, ranges: &[IdRange]) -> io::Result<()> {
        let mut text = String::new();
        for range in ranges {
            text.push_str(&format!("{tag} {range}\n"));
        }
        self.file.write_all(text.as_bytes())
    }
}

impl Drop for Ledger {
    fn drop(&mut self) {
        let _ = self.flush_used();
        let _ = self.file.sync_data();
    }
}

/// What the ledgers and the final pool say, checked.
#[derive(Debug, Default)]
pub struct Report {
    pub batches: u64,
    pub handed_out: u64,
    pub used: u64,
    pub duplicates: u64,
    pub pushed: u64,
    pub recycled: u64,
    pub leaked: u64,
    /// IDs neither used, free, nor reported leaked, yet not pushed back either (a crashed worker
    /// holds them): they are lost but never duplicated.
    pub unaccounted: u64,
    pub free: u64,
    pub category_size: u64,
    pub errors: BTreeMap<String, u64>,
    pub problems: Vec<String>,
}

/// Reads every `*.log` ledger in `dir` and checks them against the final free list.
///
/// Checks: no ID used twice; no used ID still free; used + free + leaked + unaccounted equals the
/// category exactly (nothing appears from nowhere).
pub fn check(dir: &Path, bounds: IdRange, free: &[IdRange]) -> io::Result<Report> {
    let mut report = Report {
        category_size: bounds.len(),
        ..Report::default()
    };
    let mut used = RangeSet::new();
    let mut leaked = RangeSet::new();
    let mut pushed_ever = RangeSet::new();
    let mut used_ranges = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        if entry.path().extension().is_none_or(|e| e != "log") {
            continue;
        }
        for line in BufReader::new(File::open(entry.path())?).lines() {
            let line = line?;
            let (tag, rest) = line.split_once(' ').unwrap_or((line.as_str(), ""));
            if tag == "E" {
                *report.errors.entry(rest.to_string()).or_default() += 1;
                continue;
            }
            let Some(range) = parse(rest) else {
                report.problems.push(format!(
                    "{}: unreadable line {line:?}",
                    entry.path().display()
                ));
                continue;
            };
            match tag {
                "T" => {
                    report.batches += 1;
                    report.handed_out += range.len();
                }
                "U" => {
                    report.used += range.len();
                    used_ranges.push(range);
                    if used.insert_all(&[range]).is_err() {
                        report.duplicates += count_overlap(&used, range);
                        report.problems.push(format!("ID used twice in {range}"));
                        let fresh = subtract(range, &used);
                        let _ = used.insert_all(&fresh);
                    }
                }
                "P" => {
                    report.pushed += range.len();
                    let _ = pushed_ever.insert_all(&[range]);
                }
                "L" => {
                    report.leaked += range.len();
                    let _ = leaked.insert_all(&[range]);
                }
                _ => report
                    .problems
                    .push(format!("unknown ledger line {line:?}")),
            }
        }
    }
    report.recycled = used_ranges
        .iter()
        .map(|r| count_overlap(&pushed_ever, *r))
        .sum();
    report.free = free.iter().map(IdRange::len).sum();
    for range in free {
        if used.first_overlap(range).is_some() {
            report
                .problems
                .push(format!("free range {range} holds used IDs"));
        }
    }
    let accounted = report.used - report.duplicates + report.free + report.leaked;
    match report.category_size.checked_sub(accounted) {
        Some(rest) => report.unaccounted = rest,
        None => report.problems.push(format!(
            "conservation: used {} + free {} + leaked {} exceeds the category's {} IDs",
            report.used, report.free, report.leaked, report.category_size
        )),
    }
    Ok(report)
}

fn parse(text: &str) -> Option<IdRange> {
    let (start, end) = text.trim().split_once(':')?;
    IdRange::new(start.parse().ok()?, end.parse().ok()?)
}

/// How many IDs of `range` are in `set`.
fn count_overlap(set: &RangeSet, range: IdRange) -> u64 {
    set.ranges()
        .iter()
        .filter(|r| r.overlaps(&range))
        .map(|r| {
            IdRange::new(r.start().max(range.start()), r.end().min(range.end()))
                .map_or(0, |o| o.len())
        })
        .sum()
}

/// The parts of `range` not in `set`.
fn subtract(range: IdRange, set: &RangeSet) -> Vec<IdRange> {
    let mut rest = Vec::new();
    let mut next = Some(range.start());
    for r in set.ranges().iter().filter(|r| r.overlaps(&range)) {
        if let Some(gap) = next.and_then(|n| IdRange::new(n, r.start().saturating_sub(1))) {
            rest.push(gap);
        }
        next = r.end().checked_add(1);
    }
    if let Some(tail) = next.and_then(|n| IdRange::new(n, range.end())) {
        rest.push(tail);
    }
    rest
}
