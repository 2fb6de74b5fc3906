//! The counter node's format (the seed's 8-byte big-endian long) and the range a `next(n)`
//! reserves after the value it read.

use crate::error::{Result, ZooidError};
use crate::range::IdRange;

/// Decodes a counter node's data: exactly 8 bytes, a big-endian signed long.
pub fn decode(path: &str, data: &[u8]) -> Result<i64> {
    let bytes: [u8; 8] = data.try_into().map_err(|_| {
        let shown: String = data
            .iter()
            .take(16)
            .map(|b| format!("{b:02x}"))
            .collect();
        ZooidError::CorruptPool {
            path: path.to_string(),
            line: 1,
            content: if data.len() > 16 {
                format!("{shown}...")
            } else {
                shown
            },
            reason: format!(
                "a counter node holds an 8-byte big-endian long; this one holds {} bytes (left untouched)",
                data.len()
            ),
        }
    })?;
    Ok(i64::from_be_bytes(bytes))
}

/// Encodes a counter value as the node stores it (what the seed's `ByteBuffer.putLong` writes).
pub fn encode(value: i64) -> [u8; 8] {
    value.to_be_bytes()
}

/// The range `next(n)` reserves after `last`, or why it cannot.
pub(super) fn plan(path: &str, last: i64, n: u64) -> Result<IdRange> {
    if n == 0 {
        return Err(ZooidError::InvalidArgument(
            "a counter reserves at least one value (n = 0)".into(),
        ));
    }
    if last == i64::MAX {
        return Err(ZooidError::Exhausted {
            category: path.to_string(),
        });
    }
    let room = i64::MAX.abs_diff(last); // >= 1
    if n > room {
        return Err(ZooidError::InvalidArgument(format!(
            "counter {path} is at {last}: {n} more values would pass i64::MAX (only {room} remain)"
        )));
    }
    // n <= room = i64::MAX - last, so the sum stays in range; `last < i64::MAX` above.
    let end = last.checked_add_unsigned(n).ok_or_else(|| {
        ZooidError::InvalidArgument(format!("counter {path}: {last} + {n} overflows"))
    })?;
    IdRange::new(last + 1, end).ok_or_else(|| ZooidError::InvalidArgument("empty range".into()))
}
