//! The CAS counter commands (seed 000): `counter init`, `counter next`, `counter get`.

use zooid::blocking::{open_session, Counter};
use zooid::{ConnectOptions, IdRange, ZooidError};

fn open(connect: &str, options: &ConnectOptions, path: &str) -> zooid::Result<Counter> {
    if connect.starts_with("file:") || connect.starts_with("mem:") {
        return Err(ZooidError::InvalidArgument(format!(
            "counters live in ZooKeeper; {connect:?} is an embedded store (pass --connect host:port)"
        )));
    }
    Counter::new(open_session(connect, options)?.into_zk(), path)
}

/// A value as the seed printed it (`Long.toHexString`: lowercase, two's complement for
/// negative values), or in decimal.
fn show(value: i64, hex: bool) -> String {
    if hex {
        format!("{value:x}")
    } else {
        value.to_string()
    }
}

fn show_range(range: IdRange, hex: bool) -> String {
    format!("{}:{}", show(range.start(), hex), show(range.end(), hex))
}

/// `zooid counter init PATH [--value N]`.
pub fn init(
    connect: &str,
    options: &ConnectOptions,
    path: &str,
    value: i64,
    acl: Option<Vec<zooid::Acl>>,
) -> zooid::Result<()> {
    open(connect, options, path)?.init_with_acl(value, acl.as_deref())?;
    println!("created counter {path} at {value}");
    Ok(())
}

/// `zooid counter next PATH [N] [--hex]`: prints the reserved values as one `START:END` line.
/// When the outcome of a lost write cannot be told, the skipped values are named in the error
/// (exit code 7) and nothing is printed to stdout.
pub fn next(
    connect: &str,
    options: &ConnectOptions,
    path: &str,
    n: u64,
    hex: bool,
) -> zooid::Result<()> {
    let range = open(connect, options, path)?.next(n)?;
    println!("{}", show_range(range, hex));
    Ok(())
}

/// `zooid counter get PATH [--hex]`: prints the counter's value (the last value handed out).
pub fn get(connect: &str, options: &ConnectOptions, path: &str, hex: bool) -> zooid::Result<()> {
    let value = open(connect, options, path)?.get()?;
    println!("{}", show(value, hex));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_the_seeds_long_to_hex_string() {
        assert_eq!(show(255, true), "ff");
        assert_eq!(show(-1, true), "ffffffffffffffff");
        assert_eq!(show(-1, false), "-1");
        assert_eq!(show_range(IdRange::new(10, 17).unwrap(), true), "a:11");
    }
}
