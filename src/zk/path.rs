//! ZooKeeper paths as zooid accepts them.

use crate::error::{Result, ZooidError};

/// Checks a znode path that zooid will create or use: absolute, not `/`, no empty, `.` or `..`
/// segment, no trailing `/`, no NUL, and no character ZooKeeper refuses in a path
/// ([`unsupported_char`]). `what` names it in the error ("counter path", ...).
pub fn validate_path(what: &str, path: &str) -> Result<()> {
    let ok = path.starts_with('/')
        && path.len() > 1
        && !path.ends_with('/')
        && !path.contains('\0')
        && !path[1..]
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..");
    if !ok {
        return Err(ZooidError::InvalidArgument(format!(
            "{what} {path:?}: expected an absolute ZooKeeper path other than /, without empty, . or .. segments"
        )));
    }
    check_chars(what, path)
}

/// The first character of `path` that ZooKeeper refuses in a path, with its byte offset: the
/// servers' rule (`PathUtils.validatePath`, applied to Java's UTF-16 units) refuses U+0001 to
/// U+001F, U+007F to U+009F, U+D800 to U+F8FF and U+FFF0 to U+FFFF, and so every character
/// above U+FFFF too (a surrogate pair in Java). NUL is left to the callers' own checks.
///
/// Such a path works on the embedded stores but not on ZooKeeper, where it failed as a store
/// error, or (above U+FFFF) broke the connection's decoding of the servers' reply and was
/// reported as a lost connection.
pub fn unsupported_char(path: &str) -> Option<(usize, char)> {
    path.char_indices().find(
        |&(_, c)| matches!(u32::from(c), 0x01..=0x1f | 0x7f..=0x9f | 0xd800..=0xf8ff | 0xfff0..),
    )
}

/// `InvalidArgument` naming the first character of `path` that ZooKeeper refuses, if any
/// ([`unsupported_char`]); `what` names the path ("category path", ...). Every store refuses
/// it, so that a name that works on one store works on all.
pub fn check_chars(what: &str, path: &str) -> Result<()> {
    match unsupported_char(path) {
        None => Ok(()),
        Some((at, c)) => Err(ZooidError::InvalidArgument(format!(
            "{what} {path:?}: character {c:?} (U+{:04X}) at byte {at} is not allowed in a \
             ZooKeeper path (control characters, U+007F to U+009F, U+D800 to U+F8FF, U+FFF0 \
             and above)",
            u32::from(c)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_zookeeper_refuses_are_named() {
        for good in [
            "/a/b",
            "/ids/did-1_x.y",
            "/é/ü/日本",
            "/a b",
            "/\u{a0}",
            "/\u{f900}",
        ] {
            assert_eq!(unsupported_char(good), None, "{good:?}");
            validate_path("path", good).unwrap();
        }
        for (bad, at, c) in [
            ("/a\tb", 2, '\t'),
            ("/\u{1}", 1, '\u{1}'),
            ("/a\u{7f}", 2, '\u{7f}'),
            ("/a\u{9f}", 2, '\u{9f}'),
            ("/x\u{e000}", 2, '\u{e000}'),
            ("/x\u{f8ff}", 2, '\u{f8ff}'),
            ("/x\u{fffd}", 2, '\u{fffd}'),
            ("/emoji\u{1f600}", 6, '\u{1f600}'),
        ] {
            assert_eq!(unsupported_char(bad), Some((at, c)), "{bad:?}");
            let err = validate_path("queue path", bad).unwrap_err();
            assert!(matches!(err, ZooidError::InvalidArgument(_)), "{err:?}");
            assert!(
                err.to_string()
                    .contains(&format!("U+{:04X}) at byte {at}", u32::from(c))),
                "{err}"
            );
        }
    }
}
