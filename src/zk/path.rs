//! ZooKeeper paths as zooid accepts them.

use crate::error::{Result, ZooidError};

/// Checks a znode path that zooid will create or use: absolute, not `/`, no empty, `.` or `..`
/// segment, no trailing `/`, no NUL. `what` names it in the error ("counter path", ...).
pub fn validate_path(what: &str, path: &str) -> Result<()> {
    let ok = path.starts_with('/')
        && path.len() > 1
        && !path.ends_with('/')
        && !path.contains('\0')
        && !path[1..]
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..");
    if ok {
        Ok(())
    } else {
        Err(ZooidError::InvalidArgument(format!(
            "{what} {path:?}: expected an absolute ZooKeeper path other than /, without empty, . or .. segments"
        )))
    }
}
