//! The blocking facade: one service shared by many plain threads, and a clear error (not a
//! panic) when called from inside an async runtime.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::thread;
use zooid::CategorySpec;

use zooid::blocking::IdGeneratorService;
use zooid::{ConnectOptions, IdCategory, ServiceOptions, ZooidError};

fn service(connect: &str) -> IdGeneratorService {
    IdGeneratorService::connect(
        connect,
        &ConnectOptions::default(),
        ServiceOptions::default(),
    )
    .unwrap()
}

#[test]
fn one_service_many_threads() {
    let dir = tempfile::tempdir().unwrap();
    let svc = Arc::new(service(&format!("file:{}", dir.path().display())));
    let cat = IdCategory::new("/blocking/did").unwrap();
    svc.create_category(&cat, &CategorySpec::new(1, 1_000_000))
        .unwrap();
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let (svc, cat) = (Arc::clone(&svc), cat.clone());
            thread::spawn(move || {
                let mut used = Vec::new();
                for round in 0..20 {
                    let mut set = svc.take_ids(&cat, 50 + t * 3 + round).unwrap();
                    for _ in 0..(set.count_ids() / 3) {
                        used.push(set.take_id().unwrap());
                    }
                    svc.push_ids(&mut set).unwrap();
                }
                used
            })
        })
        .collect();
    let used: Vec<i64> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let unique: BTreeSet<i64> = used.iter().copied().collect();
    assert_eq!(unique.len(), used.len(), "an ID was handed out twice");
    let info = svc.pool_info(&cat).unwrap();
    assert_eq!(info.free_count + used.len() as u64, 1_000_000);
}

#[test]
fn calls_from_a_runtime_thread_are_refused() {
    let svc = service("mem:");
    let cat = IdCategory::new("/blocking/refused").unwrap();
    svc.create_category(&cat, &CategorySpec::new(1, 10))
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let result = rt.block_on(async { svc.take_ids(&cat, 1) });
    assert!(
        matches!(result, Err(ZooidError::RuntimeThread)),
        "{result:?}"
    );
    assert_eq!(
        svc.take_ids(&cat, 1).unwrap().take_id(),
        Some(1),
        "fine from a plain thread"
    );
}
