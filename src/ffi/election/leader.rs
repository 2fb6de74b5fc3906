//! Who leads a group, from C, without joining it: `zooid_election_leader` and the info it
//! hands out.

use std::ffi::{c_char, CString};

use super::super::service::zooid_service;
use super::{arg_ref, arg_str, guard, guard_void, zooid_status, Failure, Out};
use crate::recipes::election::LeaderInfo;

/// Who leads a group, from `zooid_election_leader`. Ownership: the caller owns it and frees it
/// with `zooid_leader_info_free`; every pointer in it is valid until then. Immutable.
#[repr(C)]
pub struct zooid_leader_info {
    /// The leader's candidate name (NUL-terminated UTF-8).
    pub name: *const c_char,
    /// The leader's candidate data, `data_len` bytes (NULL when `data_len` is 0).
    pub data: *const u8,
    /// The length of `data` in bytes.
    pub data_len: usize,
    /// The leader's fencing token.
    pub token: i64,
    /// The leader's candidate node path (NUL-terminated).
    pub node: *const c_char,
}

/// The owner of a [`zooid_leader_info`]'s memory; the public struct is its first field, so a
/// pointer to it is a pointer to the whole.
#[repr(C)]
struct LeaderInfoBox {
    public: zooid_leader_info,
    name: CString,
    data: Vec<u8>,
    node: CString,
}

// The raw pointers point into the box's own immutable strings.
// SAFETY: nothing mutates the pointed-to memory before `zooid_leader_info_free`.
unsafe impl Send for zooid_leader_info {}
// SAFETY: as above; reads only.
unsafe impl Sync for zooid_leader_info {}

/// `value`, read from the candidate node `node`, as a C string: one with a NUL byte (written by
/// another client; zooid's candidates cannot have one) is the node's fault, not the caller's.
fn text(value: String, what: &str, node: &str) -> Result<CString, Failure> {
    CString::new(value).map_err(|err| {
        Failure::Zooid(crate::error::ZooidError::CorruptPool {
            path: node.to_string(),
            line: 1,
            content: String::from_utf8_lossy(&err.into_vec())
                .escape_debug()
                .take(64)
                .collect(),
            reason: format!("{what} contains a NUL byte, which a C string cannot carry"),
        })
    })
}

impl LeaderInfoBox {
    fn new(info: LeaderInfo) -> Result<Box<Self>, Failure> {
        let mut boxed = Box::new(LeaderInfoBox {
            public: zooid_leader_info {
                name: std::ptr::null(),
                data: std::ptr::null(),
                data_len: 0,
                token: info.token,
                node: std::ptr::null(),
            },
            name: text(info.name, "the leader's name", &info.node)?,
            data: info.data,
            node: text(info.node.clone(), "the leader's node path", &info.node)?,
        });
        boxed.public.name = boxed.name.as_ptr();
        boxed.public.node = boxed.node.as_ptr();
        boxed.public.data_len = boxed.data.len();
        if !boxed.data.is_empty() {
            boxed.public.data = boxed.data.as_ptr();
        }
        Ok(boxed)
    }
}

/// Asks who leads `group` without joining it, on `service`'s ZooKeeper session, and writes the
/// answer to `*out_info`: a new `zooid_leader_info` the caller owns and frees with
/// `zooid_leader_info_free`, or NULL (with `ZOOID_STATUS_OK`) when the group has no candidate
/// or does not exist.
///
/// Errors: `ZOOID_STATUS_INVALID_ARGUMENT` (bad group path, or an embedded store),
/// `ZOOID_STATUS_CORRUPT_POOL` (the leader's node, written by another client, holds a name with a
/// NUL byte), `ZOOID_STATUS_CONNECTION_LOST`, `ZOOID_STATUS_TIMEOUT`, `ZOOID_STATUS_STORE`.
///
/// # Safety
/// `service` must be NULL or a live service reference; `group` NULL or a NUL-terminated string;
/// `out_info` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_election_leader(
    service: *const zooid_service,
    group: *const c_char,
    out_info: *mut *mut zooid_leader_info,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let service = unsafe { arg_ref(service, "service") }?;
        // SAFETY: forwarded from this function's contract.
        let group = unsafe { arg_str(group, "group") }?;
        let out = Out::new(out_info, "out_info")?;
        let info = match service.inner.leader(group)? {
            Some(info) => Box::into_raw(LeaderInfoBox::new(info)?).cast::<zooid_leader_info>(),
            None => std::ptr::null_mut(),
        };
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(info) };
        Ok(())
    })
}

/// Frees leader info from `zooid_election_leader`; NULL is accepted and ignored.
///
/// # Safety
/// `info` must be NULL or leader info from `zooid_election_leader` not yet freed; it (and the
/// pointers in it) must not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn zooid_leader_info_free(info: *mut zooid_leader_info) {
    guard_void(|| {
        if !info.is_null() {
            // SAFETY: `info` is the first field of a `LeaderInfoBox` from `Box::into_raw`
            // (`#[repr(C)]`, so the addresses are equal), freed once.
            drop(unsafe { Box::from_raw(info.cast::<LeaderInfoBox>()) });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leader_info_points_into_its_own_box() {
        let info = LeaderInfoBox::new(LeaderInfo {
            name: "a".into(),
            data: vec![1, 2],
            token: 9,
            node: "/g/_c_x-n_0000000001".into(),
        })
        .unwrap();
        let raw = Box::into_raw(info).cast::<zooid_leader_info>();
        // SAFETY: just created; freed below.
        let public = unsafe { &*raw };
        assert_eq!(public.data_len, 2);
        assert_eq!(public.token, 9);
        // SAFETY: NUL-terminated, owned by the box.
        let name = unsafe { std::ffi::CStr::from_ptr(public.name) };
        assert_eq!(name.to_str().unwrap(), "a");
        // SAFETY: from `zooid_election_leader`'s allocation path.
        unsafe { zooid_leader_info_free(raw) };
        // SAFETY: NULL is accepted.
        unsafe { zooid_leader_info_free(std::ptr::null_mut()) };
    }
}
