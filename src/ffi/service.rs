//! The service handle: one connection to a store, shared by every thread of the program.

use std::ffi::c_char;
use std::sync::Arc;

use super::idset::zooid_id_set;
use super::layout::zooid_migrated;
use super::options::zooid_options;
use super::pool_info::zooid_pool_info;
use super::spec::zooid_category_spec;
use super::{arg_ref, arg_str, guard, guard_void, zooid_status, Failure, Out};
use crate::alloc::ServiceOptions;
use crate::blocking::IdGeneratorService;
use crate::idset::IdCategory;
use crate::zk::ConnectOptions;

/// An ID generator service: one session with a store (ZooKeeper, or an embedded store) that
/// hands out and takes back IDs of any number of categories.
///
/// Thread-safe: one service may be used from any number of threads at once. It is reference
/// counted: `zooid_service_open` and `zooid_service_clone` each give a reference that is
/// released with `zooid_service_free`; the session closes when the last one is released.
pub struct zooid_service {
    pub(crate) inner: IdGeneratorService,
}

/// Reads a category path argument.
///
/// # Safety
/// `path` must be NULL or a NUL-terminated string.
pub(super) unsafe fn category(path: *const c_char) -> Result<IdCategory, Failure> {
    // SAFETY: forwarded from this function's contract.
    let path = unsafe { arg_str(path, "category") }?;
    Ok(IdCategory::new(path)?)
}

/// Opens a service on the store named by `connect` and writes a reference to it to
/// `*out_service`:
/// - `host:port[,host:port...][/chroot]`: an Apache ZooKeeper ensemble;
/// - `mem:` or `mem:NAME`: process memory (`mem:NAME` is shared by every service of the process
///   opened with the same name; `mem:` is private to this service);
/// - `file:DIR`: the embedded file store in directory `DIR`, shared by the processes of one
///   machine.
///
/// `options` may be NULL for the defaults; it is copied, and may be freed right after.
///
/// Errors: `ZOOID_STATUS_INVALID_ARGUMENT` for a malformed connect string,
/// `ZOOID_STATUS_CONNECTION_LOST` when no ZooKeeper session could be opened,
/// `ZOOID_STATUS_AUTH_FAILED` when the servers refused the credentials,
/// `ZOOID_STATUS_STORE` when the directory cannot be used.
///
/// # Safety
/// `connect` must be NULL or a NUL-terminated string; `options` NULL or live options;
/// `out_service` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_service_open(
    connect: *const c_char,
    options: *const zooid_options,
    out_service: *mut *const zooid_service,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let connect = unsafe { arg_str(connect, "connect") }?;
        let out = Out::new(out_service, "out_service")?;
        // SAFETY: NULL or live options, by this function's contract.
        let inner = match unsafe { options.as_ref() } {
            Some(options) => {
                IdGeneratorService::connect(connect, &options.connect, options.service.clone())?
            }
            None => IdGeneratorService::connect(
                connect,
                &ConnectOptions::default(),
                ServiceOptions::default(),
            )?,
        };
        let service = Arc::new(zooid_service { inner });
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(Arc::into_raw(service)) };
        Ok(())
    })
}

/// Writes a new reference to the same service to `*out_service` (for example one per thread,
/// each released by its owner). Both references must be freed.
///
/// # Safety
/// `service` must be NULL or a live service reference; `out_service` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_service_clone(
    service: *const zooid_service,
    out_service: *mut *const zooid_service,
) -> zooid_status {
    guard(|| {
        if service.is_null() {
            return Err(Failure::Null("service"));
        }
        let out = Out::new(out_service, "out_service")?;
        // SAFETY: a live reference from `Arc::into_raw`, by this function's contract.
        unsafe {
            Arc::increment_strong_count(service);
            out.write(service);
        }
        Ok(())
    })
}

/// Creates the category at path `category` (such as `"/eventpublish/idgen/did"`) as `spec`
/// says: its IDs `first` to `last`, all free, in its layout, with its ceiling and its ACL (see
/// `zooid_category_spec`). `spec` is only read: the caller still owns it.
///
/// Errors: `ZOOID_STATUS_CATEGORY_EXISTS` when it is already there (an existing pool is never
/// reset, since that would hand out its IDs again), `ZOOID_STATUS_INVALID_ARGUMENT` for a bad
/// path or a block layout on the embedded stores, `ZOOID_STATUS_STORE` for an ACL on the
/// embedded stores (they have no ACLs), and the store errors.
///
/// # Safety
/// `service` must be NULL or a live service reference; `category` NULL or a NUL-terminated
/// string; `spec` NULL or a live spec not changed by another thread during the call.
#[no_mangle]
pub unsafe extern "C" fn zooid_service_create_category(
    service: *const zooid_service,
    category: *const c_char,
    spec: *const zooid_category_spec,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let service = unsafe { arg_ref(service, "service") }?;
        // SAFETY: forwarded from this function's contract.
        let category = unsafe { self::category(category) }?;
        // SAFETY: forwarded from this function's contract.
        let spec = unsafe { arg_ref(spec, "spec") }?;
        service.inner.create_category(&category, &spec.spec)?;
        Ok(())
    })
}

/// Moves the existing category `category` to the block layout `layout` in place, while other
/// processes keep taking and pushing (what `zooid migrate` does): a single-node pool (formats 1
/// and 2, or a seed-style node) to `ZOOID_LAYOUT_HOLE_NODES` (format 4), its free ranges
/// becoming hole nodes, in blocks of `unit` IDs (0: 1000). `ZOOID_LAYOUT_DEFAULT` is
/// `ZOOID_LAYOUT_HOLE_NODES`. No ID is handed out twice and none is lost. When `out_migrated`
/// is not NULL, what was done is written to it (a pool in the layout asked for already is left
/// alone: `moved` false).
///
/// Errors: `ZOOID_STATUS_INVALID_ARGUMENT` for a number that is not a `zooid_layout`,
/// `ZOOID_LAYOUT_SINGLE_NODE` (there is no way back), a `unit` above 2147483647, or an
/// embedded store; `ZOOID_STATUS_NOT_FOUND`, `ZOOID_STATUS_CORRUPT_POOL` (also for a pool in
/// the retired format 3, left as it is) and the store errors.
///
/// # Safety
/// `service` must be NULL or a live service reference; `category` NULL or a NUL-terminated
/// string; `out_migrated` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_service_migrate_category(
    service: *const zooid_service,
    category: *const c_char,
    layout: u32,
    unit: u64,
    out_migrated: *mut zooid_migrated,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let service = unsafe { arg_ref(service, "service") }?;
        // SAFETY: forwarded from this function's contract.
        let category = unsafe { self::category(category) }?;
        let layout = crate::marshal::migration_target(layout, unit)?;
        let migrated = service.inner.migrate_category(&category, layout)?;
        if !out_migrated.is_null() {
            // SAFETY: non-NULL and valid for a write by this function's contract.
            unsafe { out_migrated.write(migrated.into()) };
        }
        Ok(())
    })
}

/// Takes up to `n` (1 to 2^31 - 1) of the lowest free IDs of `category` (fewer when fewer
/// remain, or when a take that got some could not get the rest with nothing in doubt) and
/// writes a new ID set holding them to `*out_set`; the caller owns the set.
///
/// Errors: `ZOOID_STATUS_EXHAUSTED` when none remain, `ZOOID_STATUS_NOT_FOUND` for a missing
/// category, `ZOOID_STATUS_CORRUPT_POOL`, `ZOOID_STATUS_CONTENTION`,
/// `ZOOID_STATUS_CONNECTION_LOST`, `ZOOID_STATUS_TIMEOUT` (nothing was taken), and
/// `ZOOID_STATUS_OUTCOME_UNKNOWN` (the IDs named by `zooid_last_error_ranges` are leaked).
///
/// # Safety
/// `service` must be NULL or a live service reference; `category` NULL or a NUL-terminated
/// string; `out_set` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_service_take_ids(
    service: *const zooid_service,
    category: *const c_char,
    n: u64,
    out_set: *mut *mut zooid_id_set,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let service = unsafe { arg_ref(service, "service") }?;
        // SAFETY: forwarded from this function's contract.
        let category = unsafe { self::category(category) }?;
        let out = Out::new(out_set, "out_set")?;
        let set = service.inner.take_ids(&category, n)?;
        let handle = Box::new(zooid_id_set::new(set));
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(Box::into_raw(handle)) };
        Ok(())
    })
}

/// Pushes the unused IDs of `set` back to their category, to be handed out again (lowest
/// first), and empties `set`: the push consumes it. The caller still owns `set` and frees it
/// with `zooid_id_set_free`. A set with no unused IDs pushes nothing (and is consumed too).
///
/// The set is held for the whole push: another thread's take from it waits, then finds it
/// empty. Pushing a consumed set again fails with `ZOOID_STATUS_CLOSED` (the message names its
/// category) and changes nothing, so the same IDs are never pushed twice.
///
/// Errors: `ZOOID_STATUS_INVALID_ARGUMENT` when `set` was taken from another store (another
/// ensemble or chroot, directory, memory store: pushed into a category of the same name there,
/// its IDs would be handed out twice), `ZOOID_STATUS_OUT_OF_BOUNDS`,
/// `ZOOID_STATUS_ALREADY_FREE`, `ZOOID_STATUS_POOL_FULL` and the store errors leave both the
/// pool and `set` unchanged, so the push may be retried;
/// after `ZOOID_STATUS_OUTCOME_UNKNOWN` the push is not repeated and `set` is emptied and
/// consumed.
///
/// # Safety
/// `service` must be NULL or a live service reference; `set` NULL or a live ID set.
#[no_mangle]
pub unsafe extern "C" fn zooid_service_push_ids(
    service: *const zooid_service,
    set: *mut zooid_id_set,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let service = unsafe { arg_ref(service, "service") }?;
        // SAFETY: forwarded from this function's contract.
        let set = unsafe { arg_ref(set, "set") }?;
        set.push(&service.inner)
    })
}

/// Reads the pool node of `category` afresh and writes a snapshot of it to `*out_info`; the
/// caller owns it and frees it with `zooid_pool_info_free`.
///
/// Errors: `ZOOID_STATUS_NOT_FOUND`, `ZOOID_STATUS_CORRUPT_POOL`, the store errors.
///
/// # Safety
/// `service` must be NULL or a live service reference; `category` NULL or a NUL-terminated
/// string; `out_info` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zooid_service_pool_info(
    service: *const zooid_service,
    category: *const c_char,
    out_info: *mut *mut zooid_pool_info,
) -> zooid_status {
    guard(|| {
        // SAFETY: forwarded from this function's contract.
        let service = unsafe { arg_ref(service, "service") }?;
        // SAFETY: forwarded from this function's contract.
        let category = unsafe { self::category(category) }?;
        let out = Out::new(out_info, "out_info")?;
        let info = service.inner.pool_info(&category)?;
        let handle = Box::new(zooid_pool_info::from(info));
        // SAFETY: forwarded from this function's contract.
        unsafe { out.write(Box::into_raw(handle)) };
        Ok(())
    })
}

/// Releases a service reference; NULL is accepted and ignored. Releasing the last reference
/// closes the ZooKeeper session on the servers (unless a recipe shares it) and waits up to 2 s
/// for their answer, so a program may exit right after: no session or ephemeral node is left
/// behind until the servers would expire it. ID sets taken from the service stay valid (and must still be freed), but
/// can only be pushed through another reference to a service on the same store.
///
/// # Safety
/// `service` must be NULL or a reference from `zooid_service_open` / `zooid_service_clone` not
/// yet released, not in use by a call on another thread; it must not be used afterwards (other
/// references to the same service stay valid).
#[no_mangle]
pub unsafe extern "C" fn zooid_service_free(service: *const zooid_service) {
    guard_void(|| {
        if !service.is_null() {
            // SAFETY: from `Arc::into_raw`, released once.
            drop(unsafe { Arc::from_raw(service) });
        }
    })
}

// The documented sharing rules, checked by the compiler: a service is shared between threads,
// and so is an ID set; options may move between threads, pool info may be read from several.
const _: () = {
    const fn shared<T: Send + Sync>() {}
    const fn movable<T: Send>() {}
    shared::<zooid_service>();
    shared::<zooid_pool_info>();
    shared::<zooid_id_set>();
    movable::<zooid_options>();
    movable::<zooid_category_spec>();
};
