//! What a new category is made of: `zooid_category_spec`, the one argument of
//! `zooid_service_create_category` besides the path (a [`CategorySpec`]).

use std::ffi::c_char;

use super::{arg_mut, arg_str, guard, guard_void, zooid_status, Failure, Out};
use crate::alloc::CategorySpec;
use crate::marshal::layout as layout_of;

/// What a new category is made of, created by `zooid_category_spec_new` with its bounds and the
/// defaults: the store's default layout (hole nodes in blocks of 1000 on ZooKeeper, a single
/// node on the embedded stores), no ceiling, the session's default ACL. The setters change one
/// field each, checked at once: a setter that fails leaves the spec as it was, so a spec is
/// always valid.
///
/// Ownership: the caller owns the spec and frees it with `zooid_category_spec_free`;
/// `zooid_service_create_category` only reads it, so it may be freed or reused right after.
/// Not thread-safe: set it from one thread at a time.
pub struct zooid_category_spec {
    pub(crate) spec: CategorySpec,
}

impl zooid_category_spec {
    /// Applies one change, kept only when the spec still validates.
    fn change(&mut self, change: impl FnOnce(CategorySpec) -> CategorySpec) -> Result<(), Failure> {
        let changed = change(self.spec.clone());
        changed.validate()?;
        self.spec = changed;
        Ok(())
    }
}

/// Creates a spec for a category whose IDs are `first` to `last` inclusive, all free, with the
/// defaults, and writes it to `*out_spec`.
///
/// Errors: `ZOOID_STATUS_INVALID_ARGUMENT` unless 1 <= first <= last (the message names the
/// bounds).
///
/// # Safety
/// `out_spec` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_category_spec_new(
    first: i64,
    last: i64,
    out_spec: *mut *mut zooid_category_spec,
) -> zooid_status {
    guard(|| {
        let out = Out::new(out_spec, "out_spec")?;
        let spec = CategorySpec::new(first, last);
        spec.validate()?;
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(Box::into_raw(Box::new(zooid_category_spec { spec }))) };
        Ok(())
    })
}

/// Sets block allocation with hole nodes (pool format 4, ZooKeeper only) in blocks of
/// `block_size` IDs: fresh IDs are claimed by creates that never conflict and pushed ranges
/// stay nodes of their own, so thousands of processes taking at once do not conflict. Use the
/// batch size the workers take as `block_size`.
///
/// Errors: `ZOOID_STATUS_INVALID_ARGUMENT` for a `block_size` of 0 or above 2147483647, or when
/// the spec has an ACL (which needs the single-node layout). A block layout on an embedded
/// store fails `zooid_service_create_category` with `ZOOID_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `spec` must be NULL or a live spec not used by another thread during the call.
#[no_mangle]
pub unsafe extern "C" fn zooid_category_spec_set_blocks(
    spec: *mut zooid_category_spec,
    block_size: u64,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let spec = unsafe { arg_mut(spec, "spec") }?;
        spec.change(|s| s.blocks(block_size))
    })
}

/// Sets the single-node layout (pool formats 1 and 2, readable by the seed's tools): one node
/// holds the free list; every take and push is a compare-and-set on it; takes are exactly
/// lowest first.
///
/// # Safety
/// `spec` must be NULL or a live spec not used by another thread during the call.
#[no_mangle]
pub unsafe extern "C" fn zooid_category_spec_set_single_node(
    spec: *mut zooid_category_spec,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let spec = unsafe { arg_mut(spec, "spec") }?;
        spec.change(CategorySpec::single_node)
    })
}

/// Sets the layout by its `zooid_layout` number, in blocks of `unit` IDs (0: 1000; ignored for
/// the default and the single-node layout): `ZOOID_LAYOUT_DEFAULT` (the store's default, as
/// after `zooid_category_spec_new`), `ZOOID_LAYOUT_SINGLE_NODE` (as
/// `zooid_category_spec_set_single_node`) or `ZOOID_LAYOUT_HOLE_NODES` (format 4, as
/// `zooid_category_spec_set_blocks`).
///
/// Errors: `ZOOID_STATUS_INVALID_ARGUMENT` for a number that is not a `zooid_layout` (the
/// message names it; 2, the retired pool format 3's, included), a `unit` above 2147483647, or a
/// block layout when the spec has an ACL.
///
/// # Safety
/// `spec` must be NULL or a live spec not used by another thread during the call.
#[no_mangle]
pub unsafe extern "C" fn zooid_category_spec_set_layout(
    spec: *mut zooid_category_spec,
    layout: u32,
    unit: u64,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let spec = unsafe { arg_mut(spec, "spec") }?;
        let layout = layout_of(layout, unit)?;
        spec.change(|s| match layout {
            Some(layout) => s.layout(layout),
            None => s.default_layout(),
        })
    })
}

/// Sets the ceiling of the durable reservation (0 <= ceiling <= last): no ID above it is handed
/// out until it is raised (by a keeper), so the keeper's first durable record covers every ID
/// from the start.
///
/// Errors: `ZOOID_STATUS_INVALID_ARGUMENT` for a ceiling below 0 or above the last ID.
///
/// # Safety
/// `spec` must be NULL or a live spec not used by another thread during the call.
#[no_mangle]
pub unsafe extern "C" fn zooid_category_spec_set_ceiling(
    spec: *mut zooid_category_spec,
    ceiling: i64,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let spec = unsafe { arg_mut(spec, "spec") }?;
        spec.change(|s| s.ceiling(ceiling))
    })
}

/// Sets the ACL of the pool node: comma-separated `scheme:id:perms` entries as ZooKeeper's CLI
/// writes them, such as `"sasl:app:cdrwa,world:anyone:r"`, `"auth::cdrwa"` (the identities the
/// service authenticated as) or `"digest:app:BASE64SHA1:cdrwa"` (copied). Services the ACL does
/// not grant read and write get `ZOOID_STATUS_NOT_AUTHORIZED` on takes and pushes, and nothing
/// changes. A category with an ACL is a single node: with no layout set, the single-node layout
/// is used.
///
/// Errors: `ZOOID_STATUS_INVALID_ARGUMENT` for an unparsable or empty ACL, or when a block
/// layout is set. On the embedded stores, which have no ACLs, `zooid_service_create_category`
/// fails with `ZOOID_STATUS_STORE`.
///
/// # Safety
/// `spec` must be NULL or a live spec not used by another thread during the call; `acl` NULL or
/// a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn zooid_category_spec_set_acl(
    spec: *mut zooid_category_spec,
    acl: *const c_char,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let spec = unsafe { arg_mut(spec, "spec") }?;
        // SAFETY: forwarded from this function's contract.
        let acl = crate::zk::parse_acl_list(unsafe { arg_str(acl, "acl") }?)?;
        spec.change(|s| s.acl(acl))
    })
}

/// Frees a spec; NULL is accepted and ignored.
///
/// # Safety
/// `spec` must be NULL or a spec from `zooid_category_spec_new` not yet freed; it must not be
/// used afterwards.
#[no_mangle]
pub unsafe extern "C" fn zooid_category_spec_free(spec: *mut zooid_category_spec) {
    guard_void(|| {
        if !spec.is_null() {
            // SAFETY: from `Box::into_raw` in `zooid_category_spec_new`, freed once.
            drop(unsafe { Box::from_raw(spec) });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::Layout;
    use crate::ffi::error::last_message;
    use crate::ffi::zooid_status::*;

    #[test]
    fn a_failed_setter_leaves_the_spec_as_it_was() {
        let mut spec = std::ptr::null_mut();
        unsafe {
            assert_eq!(
                zooid_category_spec_new(0, 10, &mut spec),
                ZOOID_STATUS_INVALID_ARGUMENT
            );
            assert!(spec.is_null());
            assert!(last_message().unwrap().contains("category bounds 0..=10"));
            assert_eq!(zooid_category_spec_new(1, 10, &mut spec), ZOOID_STATUS_OK);
            assert_eq!(zooid_category_spec_set_blocks(spec, 5), ZOOID_STATUS_OK);
            assert_eq!(
                zooid_category_spec_set_ceiling(spec, 11),
                ZOOID_STATUS_INVALID_ARGUMENT
            );
            assert!(last_message().unwrap().contains("ceiling 11"));
            assert_eq!(
                zooid_category_spec_set_blocks(spec, 0),
                ZOOID_STATUS_INVALID_ARGUMENT
            );
            assert!(last_message().unwrap().contains("block size 0"));
            let acl = c"world:anyone:cdrwa";
            assert_eq!(
                zooid_category_spec_set_acl(spec, acl.as_ptr()),
                ZOOID_STATUS_INVALID_ARGUMENT
            );
            assert!(last_message().unwrap().contains("acl:"));
            assert_eq!((*spec).spec, CategorySpec::new(1, 10).blocks(5));
            assert_eq!(
                zooid_category_spec_set_layout(spec, 2, 0),
                ZOOID_STATUS_INVALID_ARGUMENT
            );
            assert_eq!((*spec).spec, CategorySpec::new(1, 10).blocks(5));
            assert_eq!(zooid_category_spec_set_layout(spec, 3, 0), ZOOID_STATUS_OK);
            assert_eq!(
                (*spec).spec.layout_asked(),
                Some(Layout::HoleNodes { unit: 1000 })
            );
            assert_eq!(zooid_category_spec_set_layout(spec, 0, 0), ZOOID_STATUS_OK);
            assert_eq!(
                zooid_category_spec_set_acl(spec, acl.as_ptr()),
                ZOOID_STATUS_OK
            );
            assert_eq!(zooid_category_spec_set_ceiling(spec, 10), ZOOID_STATUS_OK);
            assert_eq!(zooid_category_spec_set_single_node(spec), ZOOID_STATUS_OK);
            assert_eq!(
                zooid_category_spec_set_blocks(std::ptr::null_mut(), 5),
                ZOOID_STATUS_INVALID_ARGUMENT
            );
            zooid_category_spec_free(spec);
            zooid_category_spec_free(std::ptr::null_mut());
        }
    }
}
