//! Range lines (`START:END`, inclusive, decimal) and the small nodes made of them: one parser
//! and one renderer for the pool node's free list, its parts and the pushes waiting in their
//! own nodes.

use crate::error::{Result, ZooidError};
use crate::range::IdRange;

/// Parses one range word `START:END` strictly: plain decimal digits (no sign, no spaces),
/// `1 <= START <= END`. The error is the reason, for the caller to place in its node and line.
pub fn parse_range(word: &str) -> std::result::Result<IdRange, &'static str> {
    let (start, end) = word.split_once(':').ok_or("expected start:end")?;
    let number = |s: &str| {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err("expected start:end with decimal IDs");
        }
        s.parse::<i64>().map_err(|_| "ID out of the 64-bit range")
    };
    let (start, end) = (number(start)?, number(end)?);
    if start == 0 {
        return Err("IDs start at 1");
    }
    IdRange::new(start, end).ok_or("start is greater than end")
}

/// A node of zooid's own: a `header` line, then one `START:END` line per range.
pub fn render_ranges(header: &str, ranges: &[IdRange]) -> Vec<u8> {
    let mut out = String::with_capacity(header.len() + 1 + 24 * ranges.len());
    out.push_str(header);
    out.push('\n');
    for range in ranges {
        out.push_str(&format!("{range}\n"));
    }
    out.into_bytes()
}

/// Parses a node written by [`render_ranges`] strictly: the `header` line, then ascending,
/// disjoint ranges within `first..=last`. Errors are `CorruptPool` naming `node`.
pub fn parse_ranges(
    node: &str,
    header: &str,
    data: &[u8],
    (first, last): (i64, i64),
) -> Result<Vec<IdRange>> {
    let corrupt = |line: usize, content: &str, reason: &str| ZooidError::CorruptPool {
        path: node.to_string(),
        line,
        content: content.to_string(),
        reason: reason.to_string(),
    };
    let text = std::str::from_utf8(data).map_err(|_| corrupt(1, "", "not UTF-8 text"))?;
    let mut lines = (1..).zip(text.lines());
    match lines.next() {
        Some((_, line)) if line.trim() == header => {}
        Some((_, line)) => return Err(corrupt(1, line, &format!("expected '{header}'"))),
        None => return Err(corrupt(1, "", "empty node")),
    }
    let mut ranges: Vec<IdRange> = Vec::new();
    for (line_no, raw) in lines {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let range = parse_range(line).map_err(|reason| corrupt(line_no, raw, reason))?;
        if range.start() < first || range.end() > last {
            return Err(corrupt(line_no, raw, &format!("outside {first}:{last}")));
        }
        if ranges.last().is_some_and(|p| range.start() <= p.end()) {
            return Err(corrupt(
                line_no,
                raw,
                "overlaps or precedes the previous range",
            ));
        }
        ranges.push(range);
    }
    Ok(ranges)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_words_are_strict() {
        assert_eq!(parse_range("5:9"), Ok(IdRange::new(5, 9).unwrap()));
        assert_eq!(parse_range("5"), Err("expected start:end"));
        assert_eq!(
            parse_range("+5:9"),
            Err("expected start:end with decimal IDs")
        );
        assert_eq!(parse_range("0:9"), Err("IDs start at 1"));
        assert_eq!(parse_range("9:5"), Err("start is greater than end"));
        assert_eq!(
            parse_range("1:99999999999999999999"),
            Err("ID out of the 64-bit range")
        );
    }

    #[test]
    fn range_nodes_round_trip() {
        let ranges = [IdRange::new(3, 4).unwrap(), IdRange::new(9, 9).unwrap()];
        let data = render_ranges("#h", &ranges);
        assert_eq!(data, b"#h\n3:4\n9:9\n");
        assert_eq!(parse_ranges("/n", "#h", &data, (1, 10)).unwrap(), ranges);
        assert!(parse_ranges("/n", "#h", &data, (1, 8)).is_err());
        assert!(parse_ranges("/n", "#other", &data, (1, 10)).is_err());
    }
}
