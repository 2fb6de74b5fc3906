//! Fenced writes from C: one op at a time, applied only while the candidate leads.

use std::ffi::c_char;

use super::{arg_ref, arg_str, bytes_arg, guard, zooid_election, zooid_status, Failure};
use crate::recipes::election::{FencedOp, FencedResult};

/// The expected version of a fenced write: `version` (>= 0) unless `any_version`.
fn expected_version(version: i64, any_version: bool) -> Result<Option<i32>, Failure> {
    if any_version {
        return Ok(None);
    }
    i32::try_from(version)
        .ok()
        .filter(|v| *v >= 0)
        .map(Some)
        .ok_or_else(|| {
            Failure::Invalid(format!(
                "expected version {version}: give a data version from 0 to 2^31 - 1, or set \
                 any_version (-1 is not \"any\" here)"
            ))
        })
}

/// Runs one fenced op and returns its result.
fn fenced_one(election: &zooid_election, op: FencedOp) -> Result<FencedResult, Failure> {
    let mut results = election.inner.fenced(std::slice::from_ref(&op))?;
    results
        .pop()
        .ok_or_else(|| Failure::Invalid("ZooKeeper returned no result for the fenced op".into()))
}

/// A fenced `setData`: sets `path`'s data to `data_len` bytes of `data` only while this
/// candidate still leads (one ZooKeeper `multi` whose first op checks the leader's own
/// candidate node), and writes the node's new data version to `*out_version` (may be NULL).
///
/// `version` is the node's expected data version (0 to 2^31 - 1). There is no "-1 means any
/// version" here: pass `any_version = true` (and any `version`) to write whatever the version
/// is; a negative `version` without it is `ZOOID_STATUS_INVALID_ARGUMENT`.
///
/// Errors: `ZOOID_STATUS_NOT_LEADER` (this candidate does not lead, by its own view or
/// ZooKeeper's: nothing was written), `ZOOID_STATUS_STORE` (the node is missing or at another
/// version, nothing was written; or the reply was lost and the message says the outcome is
/// unknown), `ZOOID_STATUS_CLOSED` (after resign), `ZOOID_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `election` must be NULL or a live candidacy; `path` NULL or a NUL-terminated string; `data`
/// NULL or valid for `data_len` bytes; `out_version` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_election_fenced_set_data(
    election: *const zooid_election,
    path: *const c_char,
    data: *const u8,
    data_len: usize,
    version: i64,
    any_version: bool,
    out_version: *mut i32,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let election = unsafe { arg_ref(election, "election") }?;
        // SAFETY: forwarded from this function's contract.
        let path = unsafe { arg_str(path, "path") }?;
        // SAFETY: forwarded from this function's contract.
        let data = unsafe { bytes_arg(data, data_len, "data", "fenced write data", usize::MAX) }?;
        let version = expected_version(version, any_version)?;
        let op = FencedOp::SetData {
            path: path.to_string(),
            data: data.to_vec(),
            version,
        };
        let new_version = match fenced_one(election, op)? {
            FencedResult::Set { version } => version,
            other => {
                return Err(Failure::Invalid(format!(
                    "unexpected result of a fenced setData: {other:?}"
                )))
            }
        };
        if !out_version.is_null() {
            // SAFETY: non-NULL and writable by this function's contract.
            unsafe { out_version.write(new_version) };
        }
        Ok(())
    })
}

/// A fenced `create`: creates the persistent node `path` (its parent must exist) holding
/// `data_len` bytes of `data`, only while this candidate still leads.
///
/// Errors: as `zooid_election_fenced_set_data` (`ZOOID_STATUS_STORE` when the node exists or
/// its parent does not).
///
/// # Safety
/// `election` must be NULL or a live candidacy; `path` NULL or a NUL-terminated string; `data`
/// NULL or valid for `data_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn zooid_election_fenced_create(
    election: *const zooid_election,
    path: *const c_char,
    data: *const u8,
    data_len: usize,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let election = unsafe { arg_ref(election, "election") }?;
        // SAFETY: forwarded from this function's contract.
        let path = unsafe { arg_str(path, "path") }?;
        // SAFETY: forwarded from this function's contract.
        let data = unsafe { bytes_arg(data, data_len, "data", "fenced write data", usize::MAX) }?;
        fenced_one(
            election,
            FencedOp::Create {
                path: path.to_string(),
                data: data.to_vec(),
            },
        )?;
        Ok(())
    })
}

/// A fenced `delete` of `path` at data version `version` (0 to 2^31 - 1), or at any version
/// with `any_version = true`, only while this candidate still leads.
///
/// Errors: as `zooid_election_fenced_set_data` (`ZOOID_STATUS_STORE` when the node is missing,
/// at another version or has children).
///
/// # Safety
/// `election` must be NULL or a live candidacy; `path` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zooid_election_fenced_delete(
    election: *const zooid_election,
    path: *const c_char,
    version: i64,
    any_version: bool,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let election = unsafe { arg_ref(election, "election") }?;
        // SAFETY: forwarded from this function's contract.
        let path = unsafe { arg_str(path, "path") }?;
        let version = expected_version(version, any_version)?;
        fenced_one(
            election,
            FencedOp::Delete {
                path: path.to_string(),
                version,
            },
        )?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_versions_have_no_minus_one_shortcut() {
        assert_eq!(expected_version(0, false).unwrap(), Some(0));
        assert_eq!(expected_version(7, false).unwrap(), Some(7));
        assert_eq!(expected_version(-1, true).unwrap(), None);
        assert!(matches!(
            expected_version(-1, false),
            Err(Failure::Invalid(_))
        ));
        assert!(matches!(
            expected_version(i64::from(i32::MAX) + 1, false),
            Err(Failure::Invalid(_))
        ));
    }
}
