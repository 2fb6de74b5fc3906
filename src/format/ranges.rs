//! Range words (`START:END`, inclusive, decimal): the one parser of the pool node's free-list
//! lines.

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
}
