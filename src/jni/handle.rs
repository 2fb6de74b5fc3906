//! Native objects crossing to Java as `long` handles (leaked `Box`es), and the one way to make,
//! look up and free them.
//!
//! The Java side (`io.zooid.NativeResource`) passes only handles it got from an `open` and has
//! not freed: calls hold its read lock, and the one free holds the write lock. So a handle a
//! native method receives is live for the whole call; 0 (never a valid handle) is reported as
//! `IllegalStateException`, the backstop for a caller that bypassed the Java class.

use jni::sys::jlong;

use super::errors::Failure;
use crate::blocking::{Claim, Counter, Election, IdGeneratorService, IdSource, WorkQueue};

/// A native object that crosses to Java as a handle; `CLASS` names its Java class in errors.
pub(super) trait Handled: Send + Sync + 'static {
    const CLASS: &'static str;
}

/// Each handle type with its Java class.
macro_rules! handled {
    ($($rust:ty => $java:literal),* $(,)?) => {
        $(impl Handled for $rust {
            const CLASS: &'static str = $java;
        })*
    };
}

handled! {
    IdGeneratorService => "IDGeneratorService",
    Counter => "Counter",
    WorkQueue => "WorkQueue",
    Claim => "WorkQueue.Claim",
    Election => "LeaderElection",
    IdSource => "IDSource",
}

/// Hands `value` to Java as a handle.
pub(super) fn into_handle<T: Handled>(value: T) -> jlong {
    Box::into_raw(Box::new(value)) as jlong
}

fn closed<T: Handled>() -> Failure {
    Failure::IllegalState(format!("the {} is closed", T::CLASS))
}

/// The object behind a live handle (see the module comment).
pub(super) fn get<'a, T: Handled>(handle: jlong) -> Result<&'a T, Failure> {
    let ptr = handle as *const T;
    // SAFETY: a non-zero handle came from `into_handle::<T>` and is not freed while Java uses
    // it (the module comment).
    unsafe { ptr.as_ref() }.ok_or_else(closed::<T>)
}

/// Takes back ownership of the object behind a live handle, which Java never uses again (a
/// claim that completes consumes its handle).
pub(super) fn take<T: Handled>(handle: jlong) -> Result<Box<T>, Failure> {
    let ptr = handle as *mut T;
    if ptr.is_null() {
        return Err(closed::<T>());
    }
    // SAFETY: from `into_handle::<T>`; Java gives a handle back exactly once, with no call in
    // flight (the module comment).
    Ok(unsafe { Box::from_raw(ptr) })
}

/// Frees the object behind a handle; 0 is ignored. The blocking objects drop their ZooKeeper
/// clients inside zooid's runtime themselves.
pub(super) fn free<T: Handled>(handle: jlong) {
    if handle != 0 {
        drop(take::<T>(handle));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::ServiceOptions;
    use crate::zk::ConnectOptions;

    #[test]
    fn a_handle_reaches_its_object_until_freed_and_zero_is_a_closed_object() {
        let service = IdGeneratorService::connect(
            "mem:",
            &ConnectOptions::default(),
            ServiceOptions::default(),
        )
        .unwrap();
        let handle = into_handle(service);
        assert_ne!(handle, 0);
        let category = crate::idset::IdCategory::new("/handle/c").unwrap();
        get::<IdGeneratorService>(handle)
            .unwrap()
            .create_category(&category, &crate::alloc::CategorySpec::new(1, 10))
            .unwrap();
        assert_eq!(
            get::<IdGeneratorService>(handle)
                .unwrap()
                .take_ids(&category, 3)
                .unwrap()
                .count_ids(),
            3
        );
        free::<IdGeneratorService>(handle);

        match get::<Counter>(0) {
            Err(Failure::IllegalState(why)) => assert_eq!(why, "the Counter is closed"),
            other => panic!("expected IllegalState, got {:?}", other.map(|_| ())),
        }
        assert!(matches!(take::<Claim>(0), Err(Failure::IllegalState(_))));
        free::<WorkQueue>(0);
    }
}
