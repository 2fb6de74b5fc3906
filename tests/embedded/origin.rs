//! IDs go back only to the store they were taken from: a set pushed through a service on
//! another store (another ensemble, chroot, directory or memory store holding a category of the
//! same name) would free there IDs that store may hand out, or already handed out.

use zooid::blocking::IdGeneratorService;
use zooid::{CategorySpec, ConnectOptions, IdCategory, ServiceOptions, ZooidError};

fn service(connect: &str) -> IdGeneratorService {
    IdGeneratorService::connect(connect, &ConnectOptions::default(), ServiceOptions::default())
        .unwrap()
}

/// Takes from `a`, pushes the set through `b` (the same category name, its own pool): refused,
/// the set kept; `b`'s pool unchanged; the set still goes back through `a`.
fn refused_across(a: &IdGeneratorService, b: &IdGeneratorService) {
    let category = IdCategory::new("/origin/did").unwrap();
    for service in [a, b] {
        service
            .create_category(&category, &CategorySpec::new(1, 100))
            .unwrap();
    }
    let held_by_b = b.take_ids(&category, 10).unwrap();
    let mut from_a = a.take_ids(&category, 10).unwrap();
    assert_eq!(from_a.ranges(), held_by_b.ranges(), "guard: the same IDs in both");
    let pushed = b.push_ids(&mut from_a);
    assert!(
        matches!(&pushed, Err(ZooidError::InvalidArgument(m)) if m.contains("another store")),
        "a set taken from one store was pushed through another: {pushed:?}"
    );
    assert_eq!(from_a.count_ids(), 10, "the refused set keeps its IDs");
    assert_eq!(b.pool_info(&category).unwrap().free_count, 90, "b's pool changed");
    a.push_ids(&mut from_a).unwrap();
    assert_eq!(a.pool_info(&category).unwrap().free_count, 100);
}

#[test]
fn a_set_is_refused_by_a_service_on_another_memory_store() {
    refused_across(&service("mem:"), &service("mem:"));
}

#[test]
fn a_set_is_refused_by_a_service_on_another_directory() {
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    refused_across(
        &service(&format!("file:{}", one.path().display())),
        &service(&format!("file:{}", two.path().display())),
    );
}

/// Another service on the same store takes the set: a set outlives the service it came from.
#[test]
fn a_set_goes_back_through_another_service_on_the_same_store() {
    let dir = tempfile::tempdir().unwrap();
    let connect = format!("file:{}", dir.path().display());
    let category = IdCategory::new("/origin/same").unwrap();
    let first = service(&connect);
    first
        .create_category(&category, &CategorySpec::new(1, 100))
        .unwrap();
    let mut ids = first.take_ids(&category, 10).unwrap();
    drop(first);
    let second = service(&format!("{connect}/"));
    second.push_ids(&mut ids).unwrap();
    assert_eq!(second.pool_info(&category).unwrap().free_count, 100);
    // A memory store of the same name is the same store.
    let named = service("mem:origin-named");
    named
        .create_category(&category, &CategorySpec::new(1, 100))
        .unwrap();
    let mut taken = named.take_ids(&category, 10).unwrap();
    service("mem:origin-named").push_ids(&mut taken).unwrap();
    assert_eq!(named.pool_info(&category).unwrap().free_count, 100);
}

/// A set built from ranges (the CLI's push, a binding's) names no store: the caller vouches
/// for it, as before.
#[test]
fn a_set_built_from_ranges_goes_to_any_store() {
    let category = IdCategory::new("/origin/built").unwrap();
    let (a, b) = (service("mem:"), service("mem:"));
    for service in [&a, &b] {
        service
            .create_category(&category, &CategorySpec::new(1, 100))
            .unwrap();
    }
    let taken = b.take_ids(&category, 10).unwrap();
    let mut rebuilt = zooid::IdSet::new(category.clone(), taken.ranges());
    b.push_ids(&mut rebuilt).unwrap();
    assert_eq!(b.pool_info(&category).unwrap().free_count, 100);
    drop(a);
}
