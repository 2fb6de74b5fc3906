//! The pool node's text format: strict parsing and rendering (specified in docs/FORMAT.md).
//!
//! ```text
//! #zooid 1
//! #bounds 1:123456789
//! #op 3 take 5d0c3a0f9e8b7a61 10000
//! 37001:123456789
//! ```

use std::collections::VecDeque;
use std::fmt::Write as _;

use crate::error::{Result, ZooidError};
use crate::range::{IdRange, RangeSet};

/// The format version zooid writes and understands.
pub const FORMAT_VERSION: u32 = 1;

/// How many recent operations a pool remembers by default, to resolve lost replies.
pub const DEFAULT_OP_LOG_LEN: usize = 64;

/// A random token naming one write, so its author can recognise it after a lost reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpToken(pub u64);

impl OpToken {
    /// A fresh random token.
    pub fn random() -> Self {
        Self(rand::random())
    }
}

/// What a logged write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// The category was created.
    Create,
    /// IDs were taken.
    Take,
    /// IDs were pushed back.
    Push,
}

impl OpKind {
    /// The word used in `#op` lines.
    pub const fn as_str(self) -> &'static str {
        match self {
            OpKind::Create => "create",
            OpKind::Take => "take",
            OpKind::Push => "push",
        }
    }

    fn parse(word: &str) -> Option<Self> {
        match word {
            "create" => Some(OpKind::Create),
            "take" => Some(OpKind::Take),
            "push" => Some(OpKind::Push),
            _ => None,
        }
    }
}

/// One entry of the operation log: the write that produced data version `version`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpRecord {
    /// The node data version this write produced.
    pub version: i32,
    /// The writer's token.
    pub token: OpToken,
    /// What the write did.
    pub kind: OpKind,
    /// How many IDs it moved.
    pub count: u64,
}

/// A parsed pool node: the category's bounds, its free IDs and its recent operations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pool {
    bounds: IdRange,
    free: RangeSet,
    log: VecDeque<OpRecord>,
    /// True when the node had no header (a seed-style list of `start:end` lines).
    legacy: bool,
}

impl Pool {
    /// A fresh pool whose every ID in `bounds` is free.
    pub fn new(bounds: IdRange) -> Self {
        Self {
            bounds,
            free: RangeSet::from_range(bounds),
            log: VecDeque::new(),
            legacy: false,
        }
    }

    /// The IDs the category may ever hold.
    pub fn bounds(&self) -> IdRange {
        self.bounds
    }

    /// The free IDs.
    pub fn free(&self) -> &RangeSet {
        &self.free
    }

    /// Mutable access to the free IDs.
    pub fn free_mut(&mut self) -> &mut RangeSet {
        &mut self.free
    }

    /// The recent operations, oldest first.
    pub fn log(&self) -> impl Iterator<Item = &OpRecord> {
        self.log.iter()
    }

    /// Whether the node was a headerless, seed-style list.
    pub fn is_legacy(&self) -> bool {
        self.legacy
    }

    /// The logged write that produced data version `version`, if still remembered.
    pub fn op_at(&self, version: i32) -> Option<&OpRecord> {
        self.log.iter().find(|op| op.version == version)
    }

    /// Appends `op` to the log, keeping at most `capacity` entries.
    pub fn record(&mut self, op: OpRecord, capacity: usize) {
        self.log.push_back(op);
        while self.log.len() > capacity.max(1) {
            self.log.pop_front();
        }
    }

    /// The node content for this pool.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(64 + 48 * (self.log.len() + self.free.range_count()));
        // Writing to a String cannot fail.
        let _ = writeln!(out, "#zooid {FORMAT_VERSION}");
        let _ = writeln!(out, "#bounds {}", self.bounds);
        for op in &self.log {
            let _ = writeln!(
                out,
                "#op {} {} {:016x} {}",
                op.version,
                op.kind.as_str(),
                op.token.0,
                op.count
            );
        }
        for range in self.free.ranges() {
            let _ = writeln!(out, "{range}");
        }
        out
    }

    /// Parses the content of pool node `path`, strictly.
    pub fn parse(path: &str, data: &[u8]) -> Result<Self> {
        Parser { path }.parse(data)
    }
}

struct Parser<'a> {
    path: &'a str,
}

impl Parser<'_> {
    fn corrupt(&self, line: usize, content: &str, reason: impl Into<String>) -> ZooidError {
        let mut content = content.to_string();
        if content.len() > 80 {
            let cut = (0..=80)
                .rev()
                .find(|&i| content.is_char_boundary(i))
                .unwrap_or(0);
            content.truncate(cut);
            content.push('…');
        }
        ZooidError::CorruptPool {
            path: self.path.to_string(),
            line,
            content,
            reason: reason.into(),
        }
    }

    fn parse(&self, data: &[u8]) -> Result<Pool> {
        let text = std::str::from_utf8(data).map_err(|e| {
            let hint = if data.len() == 8 {
                " (8 bytes: a legacy big-endian counter? see `zooid init --after-counter`)"
            } else {
                ""
            };
            let line = data[..e.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1;
            self.corrupt(line, "", format!("not UTF-8 text{hint}"))
        })?;
        if text.trim().is_empty() {
            return Err(self.corrupt(1, "", "empty node: not a zooid pool"));
        }
        let mut format = None;
        let mut bounds = None;
        let mut log: VecDeque<OpRecord> = VecDeque::new();
        let mut ranges: Vec<(usize, IdRange)> = Vec::new();
        for (line_no, raw) in (1..).zip(text.lines()) {
            let line = raw.trim();
            if line.is_empty() {
                continue;
            }
            if let Some(header) = line.strip_prefix('#') {
                if !ranges.is_empty() {
                    return Err(self.corrupt(line_no, raw, "header line after the first range"));
                }
                let mut words = header.split_ascii_whitespace();
                match words.next() {
                    Some("zooid") => {
                        if format.is_some() || bounds.is_some() || !log.is_empty() {
                            return Err(self.corrupt(
                                line_no,
                                raw,
                                "'#zooid' must be the first line, once",
                            ));
                        }
                        let version: u32 = self.one_number(&mut words, line_no, raw)?;
                        if version != FORMAT_VERSION {
                            return Err(self.corrupt(line_no, raw, format!("unsupported format version {version} (this zooid reads {FORMAT_VERSION})")));
                        }
                        format = Some(version);
                    }
                    Some("bounds") => {
                        if bounds.is_some() {
                            return Err(self.corrupt(line_no, raw, "duplicate '#bounds'"));
                        }
                        let word = words.next().ok_or_else(|| {
                            self.corrupt(line_no, raw, "'#bounds' needs start:end")
                        })?;
                        bounds = Some(self.range(word, line_no, raw)?);
                        if words.next().is_some() {
                            return Err(self.corrupt(line_no, raw, "trailing words"));
                        }
                    }
                    Some("op") => {
                        let op = self.op(&mut words, line_no, raw)?;
                        if log.back().is_some_and(|prev| prev.version >= op.version) {
                            return Err(self.corrupt(line_no, raw, "'#op' versions must ascend"));
                        }
                        log.push_back(op);
                    }
                    _ => return Err(self.corrupt(line_no, raw, "unknown header line")),
                }
                if format.is_none() {
                    return Err(self.corrupt(line_no, raw, "header lines need '#zooid 1' first"));
                }
            } else {
                ranges.push((line_no, self.range(line, line_no, raw)?));
            }
        }
        let legacy = format.is_none();
        let bounds = match (legacy, bounds) {
            (false, Some(b)) => b,
            (false, None) => return Err(self.corrupt(1, "#zooid 1", "missing '#bounds' header")),
            // A seed-style node: IDs run from 1 to the end of its highest free range.
            (true, _) => match ranges
                .iter()
                .map(|(_, r)| r.end())
                .max()
                .and_then(|top| IdRange::new(1, top))
            {
                Some(b) => b,
                None => return Err(self.corrupt(1, "", "no ranges")),
            },
        };
        let mut free = RangeSet::new();
        let mut prev: Option<IdRange> = None;
        for (line_no, range) in ranges {
            let raw = range.to_string();
            if !bounds.covers(&range) {
                return Err(self.corrupt(line_no, &raw, format!("outside the bounds {bounds}")));
            }
            if let Some(p) = prev {
                if range.start() <= p.end() {
                    return Err(self.corrupt(
                        line_no,
                        &raw,
                        format!("overlaps or precedes the previous range {p}"),
                    ));
                }
            }
            prev = Some(range);
            // Ascending and disjoint were checked above, so this cannot fail.
            free.insert_all(&[range])
                .map_err(|_| self.corrupt(line_no, &raw, "overlapping range"))?;
        }
        Ok(Pool {
            bounds,
            free,
            log,
            legacy,
        })
    }

    fn one_number<'w, T: std::str::FromStr>(
        &self,
        words: &mut impl Iterator<Item = &'w str>,
        line_no: usize,
        raw: &str,
    ) -> Result<T> {
        let value = words
            .next()
            .and_then(|w| w.parse().ok())
            .ok_or_else(|| self.corrupt(line_no, raw, "expected a number"))?;
        if words.next().is_some() {
            return Err(self.corrupt(line_no, raw, "trailing words"));
        }
        Ok(value)
    }

    fn op<'w>(
        &self,
        words: &mut impl Iterator<Item = &'w str>,
        line_no: usize,
        raw: &str,
    ) -> Result<OpRecord> {
        let mut field = |name: &str| {
            words
                .next()
                .ok_or_else(|| self.corrupt(line_no, raw, format!("'#op' is missing its {name}")))
        };
        let version = field("version")?;
        let kind = field("kind")?;
        let token = field("token")?;
        let count = field("count")?;
        if words.next().is_some() {
            return Err(self.corrupt(line_no, raw, "trailing words"));
        }
        Ok(OpRecord {
            version: version
                .parse()
                .map_err(|_| self.corrupt(line_no, raw, "bad '#op' version"))?,
            kind: OpKind::parse(kind)
                .ok_or_else(|| self.corrupt(line_no, raw, "bad '#op' kind"))?,
            token: OpToken(
                u64::from_str_radix(token, 16)
                    .ok()
                    .filter(|_| token.len() == 16)
                    .ok_or_else(|| self.corrupt(line_no, raw, "bad '#op' token (16 hex digits)"))?,
            ),
            count: count
                .parse()
                .map_err(|_| self.corrupt(line_no, raw, "bad '#op' count"))?,
        })
    }

    fn range(&self, word: &str, line_no: usize, raw: &str) -> Result<IdRange> {
        let (start, end) = word
            .split_once(':')
            .ok_or_else(|| self.corrupt(line_no, raw, "expected start:end"))?;
        let number = |s: &str| {
            // Plain decimal digits only: no sign, no spaces, no '+'.
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(self.corrupt(line_no, raw, "expected start:end with decimal IDs"));
            }
            s.parse::<i64>()
                .map_err(|_| self.corrupt(line_no, raw, "ID out of the 64-bit range"))
        };
        let (start, end) = (number(start)?, number(end)?);
        if start == 0 {
            return Err(self.corrupt(line_no, raw, "IDs start at 1"));
        }
        IdRange::new(start, end)
            .ok_or_else(|| self.corrupt(line_no, raw, "start is greater than end"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start: i64, end: i64) -> IdRange {
        IdRange::new(start, end).unwrap()
    }

    fn reason(data: &str) -> (usize, String) {
        match Pool::parse("/p", data.as_bytes()) {
            Err(ZooidError::CorruptPool {
                path, line, reason, ..
            }) => {
                assert_eq!(path, "/p");
                (line, reason)
            }
            other => panic!("expected CorruptPool for {data:?}, got {other:?}"),
        }
    }

    #[test]
    fn renders_and_parses_back() {
        let mut pool = Pool::new(r(1, 123456789));
        pool.free_mut().take_lowest(10);
        pool.record(
            OpRecord {
                version: 1,
                token: OpToken(0xabc),
                kind: OpKind::Take,
                count: 10,
            },
            8,
        );
        let text = pool.render();
        assert_eq!(
            text,
            "#zooid 1\n#bounds 1:123456789\n#op 1 take 0000000000000abc 10\n11:123456789\n"
        );
        assert_eq!(Pool::parse("/p", text.as_bytes()).unwrap(), pool);
    }

    #[test]
    fn seed_style_nodes_are_accepted_and_merged() {
        let pool = Pool::parse(
            "/p",
            b"9001:10000\n19001:20000\n29001:30000\n30001:123456789\n",
        )
        .unwrap();
        assert!(pool.is_legacy());
        assert_eq!(pool.bounds(), r(1, 123456789));
        assert_eq!(
            pool.free().ranges(),
            &[r(9001, 10000), r(19001, 20000), r(29001, 123456789)]
        );
        assert!(pool.render().starts_with("#zooid 1\n#bounds 1:123456789\n"));
    }

    #[test]
    fn strict_parsing_names_the_line() {
        assert_eq!(
            reason("5:10\n1:3\n"),
            (2, "overlaps or precedes the previous range 5:10".into())
        );
        assert_eq!(reason("1:10\n5:20\n").0, 2);
        assert_eq!(reason("1:10\nabc\n"), (2, "expected start:end".into()));
        assert_eq!(reason("10:1\n"), (1, "start is greater than end".into()));
        assert_eq!(reason("-1:5\n").0, 1);
        assert_eq!(reason("0:5\n"), (1, "IDs start at 1".into()));
        assert_eq!(
            reason("1:99999999999999999999\n"),
            (1, "ID out of the 64-bit range".into())
        );
        assert_eq!(
            reason("#zooid 1\n#bounds 1:100\n50:200\n"),
            (3, "outside the bounds 1:100".into())
        );
        assert_eq!(
            reason("#zooid 2\n#bounds 1:100\n").1,
            "unsupported format version 2 (this zooid reads 1)"
        );
        assert_eq!(reason("#zooid 1\n1:5\n").1, "missing '#bounds' header");
        assert_eq!(
            reason("#zooid 1\n#zooid 1\n").1,
            "'#zooid' must be the first line, once"
        );
        assert_eq!(reason("#zooid 1\n#bounds 1:100\n#frob\n").0, 3);
        assert_eq!(
            reason("#zooid 1\n#bounds 1:100\n1:5\n#op 1 take 0000000000000001 1\n").0,
            4
        );
        assert_eq!(reason("#zooid 1\n#bounds 1:100\n#op 2 take 0000000000000001 1\n#op 1 take 0000000000000002 1\n").0, 4);
        assert_eq!(reason("#zooid 1\n#bounds 1:100\n#op 2 take xyz 1\n").0, 3);
        assert_eq!(
            reason("#bounds 1:100\n1:5\n").1,
            "header lines need '#zooid 1' first"
        );
        assert_eq!(reason(""), (1, "empty node: not a zooid pool".into()));
        let legacy_counter = 77i64.to_be_bytes();
        match Pool::parse("/p", &legacy_counter) {
            Err(ZooidError::CorruptPool { .. }) => {}
            other => panic!("{other:?}"),
        }
        let bad_utf8 = [0xffu8, 0xfe, 0, 0, 0, 0, 0, 1];
        match Pool::parse("/p", &bad_utf8) {
            Err(ZooidError::CorruptPool { reason, .. }) => {
                assert!(reason.contains("legacy big-endian counter"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_log_keeps_the_newest_entries() {
        let mut pool = Pool::new(r(1, 10));
        for v in 1..=5 {
            pool.record(
                OpRecord {
                    version: v,
                    token: OpToken(v as u64),
                    kind: OpKind::Push,
                    count: 1,
                },
                3,
            );
        }
        let versions: Vec<i32> = pool.log().map(|op| op.version).collect();
        assert_eq!(versions, vec![3, 4, 5]);
        assert_eq!(pool.op_at(4).map(|op| op.token), Some(OpToken(4)));
        assert_eq!(pool.op_at(2), None);
    }
}
