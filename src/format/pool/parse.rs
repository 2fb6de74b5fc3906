//! Parsing a pool node's text, strictly (docs/FORMAT.md): every line checked, every error a
//! `CorruptPool` naming the line; a node in the retired format 3 is `RetiredFormat`.

use std::collections::VecDeque;

use super::{Blocks, Pool};
use super::{
    FORMAT_VERSION, FORMAT_VERSION_HOLES, FORMAT_VERSION_RESERVED, FORMAT_VERSION_RETIRED,
    MAX_EPOCH, MAX_GENERATION, MAX_OFFSET, MAX_TAKE,
};
use crate::error::{Result, ZooidError};
use crate::format::oplog::{OpKind, OpRecord, OpToken};
use crate::format::ranges::parse_range;
use crate::range::{IdRange, RangeSet};

impl Pool {
    /// Parses the content of pool node `path`, strictly.
    pub fn parse(path: &str, data: &[u8]) -> Result<Self> {
        Parser { path }.parse(data)
    }
}

struct Parser<'a> {
    path: &'a str,
}

/// The header lines of a pool node read so far, with the line each came from where a later
/// check names it.
#[derive(Default)]
struct Headers {
    format: Option<u32>,
    bounds: Option<IdRange>,
    ceiling: Option<(usize, i64)>,
    epoch: Option<u64>,
    offset: Option<i64>,
    blocks: Option<(usize, Blocks)>,
    log: VecDeque<OpRecord>,
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
        let text = self.text(data)?;
        let mut headers = Headers::default();
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
                self.header(&mut headers, header, line_no, raw)?;
                if headers.format.is_none() {
                    return Err(self.corrupt(line_no, raw, "header lines need '#zooid 1' first"));
                }
            } else {
                ranges.push((line_no, self.range(line, line_no, raw)?));
            }
        }
        self.finish(headers, ranges)
    }

    /// The node's text, or why it is not text.
    fn text<'d>(&self, data: &'d [u8]) -> Result<&'d str> {
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
        Ok(text)
    }

    /// Reads header line `header` (without its `#`) into `h`.
    fn header(&self, h: &mut Headers, header: &str, line_no: usize, raw: &str) -> Result<()> {
        let mut words = header.split_ascii_whitespace();
        match words.next() {
            Some("zooid") => {
                if h.format.is_some() || h.bounds.is_some() || !h.log.is_empty() {
                    return Err(self.corrupt(
                        line_no,
                        raw,
                        "'#zooid' must be the first line, once",
                    ));
                }
                let version: u32 = self.one_number(&mut words, line_no, raw)?;
                if version == FORMAT_VERSION_RETIRED {
                    return Err(ZooidError::RetiredFormat {
                        path: self.path.to_string(),
                        format: version,
                    });
                }
                if ![
                    FORMAT_VERSION,
                    FORMAT_VERSION_RESERVED,
                    FORMAT_VERSION_HOLES,
                ]
                .contains(&version)
                {
                    return Err(self.corrupt(line_no, raw, format!("unsupported format version {version} (this zooid reads {FORMAT_VERSION}, {FORMAT_VERSION_RESERVED} and {FORMAT_VERSION_HOLES})")));
                }
                h.format = Some(version);
            }
            Some("bounds") => {
                if h.bounds.is_some() {
                    return Err(self.corrupt(line_no, raw, "duplicate '#bounds'"));
                }
                let word = words
                    .next()
                    .ok_or_else(|| self.corrupt(line_no, raw, "'#bounds' needs start:end"))?;
                h.bounds = Some(self.range(word, line_no, raw)?);
                if words.next().is_some() {
                    return Err(self.corrupt(line_no, raw, "trailing words"));
                }
            }
            Some("blocks") => {
                let blocks = self.blocks_line(h, &mut words, line_no, raw)?;
                h.blocks = Some((line_no, blocks));
            }
            Some(word @ ("ceiling" | "epoch" | "offset")) => {
                self.reserved_line(h, word, &mut words, line_no, raw)?
            }
            Some("op") => {
                let op = self.op(&mut words, line_no, raw)?;
                if h.log.back().is_some_and(|prev| prev.version >= op.version) {
                    return Err(self.corrupt(line_no, raw, "'#op' versions must ascend"));
                }
                h.log.push_back(op);
            }
            _ => return Err(self.corrupt(line_no, raw, "unknown header line")),
        }
        Ok(())
    }

    /// `#blocks UNIT GENERATION BASE` (format 4).
    fn blocks_line<'w>(
        &self,
        h: &Headers,
        words: &mut impl Iterator<Item = &'w str>,
        line_no: usize,
        raw: &str,
    ) -> Result<Blocks> {
        if !blocks_format(h.format) {
            return Err(self.corrupt(
                line_no,
                raw,
                format!("'#blocks' needs '#zooid {FORMAT_VERSION_HOLES}'"),
            ));
        }
        if h.blocks.is_some() {
            return Err(self.corrupt(line_no, raw, "duplicate '#blocks'"));
        }
        if !h.log.is_empty() {
            return Err(self.corrupt(line_no, raw, "'#blocks' must come before the '#op' lines"));
        }
        let mut number = |name: &str| {
            words
                .next()
                .and_then(|w| w.parse::<u64>().ok())
                .ok_or_else(|| {
                    self.corrupt(
                        line_no,
                        raw,
                        format!("'#blocks UNIT GENERATION BASE': bad {name}"),
                    )
                })
        };
        let unit = number("unit")?;
        let generation = number("generation")?;
        let base = number("base")?;
        if words.next().is_some() {
            return Err(self.corrupt(line_no, raw, "trailing words"));
        }
        let base = i64::try_from(base)
            .map_err(|_| self.corrupt(line_no, raw, "base out of the 64-bit range"))?;
        if generation > MAX_GENERATION {
            return Err(self.corrupt(line_no, raw, format!("generation above {MAX_GENERATION}")));
        }
        if unit == 0 || unit > MAX_TAKE {
            return Err(self.corrupt(line_no, raw, format!("unit must be 1..={MAX_TAKE}")));
        }
        Ok(Blocks {
            unit,
            generation,
            base,
        })
    }

    /// `#ceiling C`, `#epoch E` or `#offset N` (formats 2 to 4), before the `#op` lines.
    fn reserved_line<'w>(
        &self,
        h: &mut Headers,
        word: &str,
        words: &mut impl Iterator<Item = &'w str>,
        line_no: usize,
        raw: &str,
    ) -> Result<()> {
        if h.format != Some(FORMAT_VERSION_RESERVED) && !blocks_format(h.format) {
            return Err(self.corrupt(
                line_no,
                raw,
                format!("'#{word}' needs '#zooid {FORMAT_VERSION_RESERVED}'"),
            ));
        }
        if !h.log.is_empty() {
            return Err(self.corrupt(
                line_no,
                raw,
                format!("'#{word}' must come before the '#op' lines"),
            ));
        }
        if word == "ceiling" {
            if h.ceiling.is_some() {
                return Err(self.corrupt(line_no, raw, "duplicate '#ceiling'"));
            }
            let value: i64 = self.one_number(words, line_no, raw)?;
            if value < 0 {
                return Err(self.corrupt(line_no, raw, "negative '#ceiling'"));
            }
            h.ceiling = Some((line_no, value));
        } else if word == "offset" {
            if h.offset.is_some() {
                return Err(self.corrupt(line_no, raw, "duplicate '#offset'"));
            }
            let value: i64 = self.one_number(words, line_no, raw)?;
            if value < 0 {
                return Err(self.corrupt(line_no, raw, "negative '#offset'"));
            }
            if value > MAX_OFFSET {
                return Err(self.corrupt(line_no, raw, format!("'#offset' above {MAX_OFFSET}")));
            }
            h.offset = Some(value);
        } else {
            if h.epoch.is_some() {
                return Err(self.corrupt(line_no, raw, "duplicate '#epoch'"));
            }
            let value: u64 = self.one_number(words, line_no, raw)?;
            if value > MAX_EPOCH {
                return Err(self.corrupt(line_no, raw, format!("'#epoch' above {MAX_EPOCH}")));
            }
            h.epoch = Some(value);
        }
        Ok(())
    }

    /// Checks the headers against each other and the ranges against them; builds the pool.
    fn finish(&self, h: Headers, ranges: Vec<(usize, IdRange)>) -> Result<Pool> {
        let Headers {
            format,
            bounds,
            ceiling,
            epoch,
            offset,
            blocks,
            log,
        } = h;
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
        if format == Some(FORMAT_VERSION_RESERVED) && ceiling.is_none() && offset.is_none() {
            return Err(self.corrupt(
                1,
                "#zooid 2",
                "format 2 needs a '#ceiling' or '#offset' header",
            ));
        }
        if blocks_format(format) && blocks.is_none() {
            return Err(self.corrupt(1, "#zooid 4", "format 4 needs a '#blocks' header"));
        }
        if let Some((line_no, b)) = blocks {
            // The base may sit one past the last ID: every block is handed out.
            if b.base < bounds.start() || b.base > bounds.end().saturating_add(1) {
                return Err(self.corrupt(
                    line_no,
                    &format!("#blocks {} {} {}", b.unit, b.generation, b.base),
                    format!("base outside the bounds {bounds}"),
                ));
            }
        }
        if let Some((line_no, value)) = ceiling {
            if value > bounds.end() {
                return Err(self.corrupt(
                    line_no,
                    &format!("#ceiling {value}"),
                    format!("above the bounds {bounds}"),
                ));
            }
        }
        let mut free = RangeSet::new();
        let mut prev: Option<IdRange> = None;
        for (line_no, range) in ranges {
            let raw = range.to_string();
            if blocks.is_some() {
                return Err(self.corrupt(
                    line_no,
                    &raw,
                    "a format-4 pool node holds no free ranges (its free IDs are hole nodes)",
                ));
            }
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
            ceiling: ceiling.map(|(_, c)| c),
            epoch: epoch.unwrap_or(0),
            offset: offset.unwrap_or(0),
            blocks: blocks.map(|(_, b)| b),
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
                .ok()
                .filter(|&v: &i64| v >= 0)
                .ok_or_else(|| self.corrupt(line_no, raw, "bad '#op' version"))?,
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
        parse_range(word).map_err(|reason| self.corrupt(line_no, raw, reason))
    }
}

/// Whether pool format `format` is block allocation's (4).
fn blocks_format(format: Option<u32>) -> bool {
    format == Some(FORMAT_VERSION_HOLES)
}
