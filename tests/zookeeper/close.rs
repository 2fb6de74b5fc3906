//! Closing a service closes its ZooKeeper session on the server at once (issue 22): a long-lived
//! process that opens and closes services (a Spark executor, a web service) must not leak
//! sessions and their ephemeral nodes until the servers expire them.
//!
//! The server's own count (`zk_global_sessions` in `mntr`) is the measure, before and after, for
//! a default category and a block-allocation category, after takes and pushes. The session
//! timeout is long (20 s) so that expiry cannot pass for a close.

use zooid::CategorySpec;
use zooid_test_support as support;

use std::time::{Duration, Instant};

use support::{session_options, ZkServer};
use zooid::blocking::IdGeneratorService;
use zooid::{IdCategory, ServiceOptions};

/// Opens `SERVICES` services, each takes and pushes back in `category` (created by `create`)
/// from its own thread at the same time, then drops them: the server counts that many more
/// sessions while they are open and none after, within 2 s.
fn sessions_close_with_the_services(
    zk: &ZkServer,
    category: &str,
    create: impl Fn(&IdGeneratorService, &IdCategory),
) {
    const SERVICES: u64 = 4;
    let before = zk.global_sessions();
    let category = IdCategory::new(category).unwrap();
    let services: Vec<IdGeneratorService> = (0..SERVICES)
        .map(|_| {
            IdGeneratorService::connect(
                &zk.connect_string(),
                &session_options(20_000),
                ServiceOptions::default(),
            )
            .expect("connect")
        })
        .collect();
    create(&services[0], &category);
    std::thread::scope(|scope| {
        for service in &services {
            let category = &category;
            scope.spawn(move || {
                for _ in 0..5 {
                    let mut ids = service.take_ids(category, 1_000).expect("take");
                    // A task's leftovers: keep 900, push back the last 100.
                    for _ in 0..900 {
                        ids.take_id().expect("an ID");
                    }
                    service.push_ids(&mut ids).expect("push");
                }
            });
        }
    });
    // Guard: the services' sessions are open on the server.
    let open = zk.wait_global_sessions(before + SERVICES, Duration::from_secs(5));
    assert_eq!(
        open,
        before + SERVICES,
        "{category:?}: the services' sessions are not counted by the server"
    );

    let closed_at = Instant::now();
    drop(services);
    let after = zk.wait_global_sessions(before, Duration::from_secs(2));
    assert_eq!(
        after,
        before,
        "{category:?}: {} session(s) still open on the server {:?} after the services were dropped",
        after - before,
        closed_at.elapsed()
    );
    eprintln!(
        "{category:?}: sessions closed on the server {:?} after the drop",
        closed_at.elapsed()
    );
}

#[test]
fn dropping_a_service_closes_its_session_on_the_server_at_once() {
    support::init_tracing();
    let zk = ZkServer::start();
    sessions_close_with_the_services(&zk, "/close/default", |s, c| {
        s.create_category(c, &CategorySpec::new(1, 1_000_000))
            .expect("create")
    });
    sessions_close_with_the_services(&zk, "/close/blocks", |s, c| {
        s.create_category(c, &CategorySpec::new(1, 1_000_000).blocks(1_000))
            .expect("create blocks")
    });
}
