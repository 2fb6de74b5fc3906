//! Two closes of one prefetching ID source at once, both refused (review finding,
//! 2026-11-29): the second to fail put its IDs back in place of the first's.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use zooid::prefetch::{IdSource, SourceOptions};
use zooid::IdGeneratorService;

use crate::support::{drain, options, run_scenario, setup, Setup};

/// Two closes of one ID source at once (`close_returning`, each with IDs its caller gives
/// back), both refused with nothing pushed: the source keeps the IDs of both, and a later close
/// pushes them all. Review finding (2026-11-29): the second close to fail put its own IDs in
/// place of the first's, which were then neither free nor reported leaked.
#[test]
fn two_failed_closes_at_once_keep_the_ids_of_both() {
    run_scenario(async {
        let Setup {
            category,
            creator,
            flaky,
            refuse_writes: refuse,
            ..
        } = setup(11, "/ids/closes", 400, 10).await;
        let service = Arc::new(IdGeneratorService::on_zookeeper(flaky, options(0)));
        let source = IdSource::open(
            Arc::clone(&service),
            category.clone(),
            SourceOptions {
                initial_batch: 100,
                min_batch: 10,
                ..SourceOptions::default()
            },
        )
        .await
        .expect("open");
        // What two callers hold and give back with their closes.
        let first = service
            .take_ids(&category, 10)
            .await
            .unwrap()
            .ranges()
            .to_vec();
        let second = service
            .take_ids(&category, 10)
            .await
            .unwrap()
            .ranges()
            .to_vec();
        refuse.store(true, Ordering::SeqCst);
        let (a, b) = tokio::join!(
            source.close_returning(&first),
            source.close_returning(&second)
        );
        assert!(
            a.is_err() && b.is_err(),
            "guard: both closes were refused: {a:?}, {b:?}"
        );
        println!("closes refused: {a:?}; {b:?}");
        refuse.store(false, Ordering::SeqCst);
        source
            .close()
            .await
            .expect("a later close pushes what the refused ones kept");
        let drained = drain(&creator, &category, 8).await;
        let leaked = service.stats().ids_leaked + creator.stats().ids_leaked;
        println!("first {first:?}, second {second:?}, drained {drained}, leaked {leaked}");
        assert_eq!(
            drained + leaked,
            400,
            "IDs neither held, free nor reported leaked: {} (drained {drained}, leaked {leaked})",
            400 - drained - leaked
        );
    });
}
