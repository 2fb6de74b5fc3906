//! The behaviour suite on the embedded stores: in memory and in a local directory.

use zooid_test_support::behaviour::{self, Ctx};

fn run_case(connect: String, case: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ctx = Ctx {
        connect,
        prefix: format!("/test/{case}"),
    };
    runtime.block_on(behaviour::run(case, &ctx));
}

macro_rules! cases {
    ($($case:ident),* $(,)?) => {
        mod memory {
            $(#[test] fn $case() { super::run_case(format!("mem:{}", stringify!($case)), stringify!($case)); })*
        }
        mod file {
            $(#[test] fn $case() {
                let dir = tempfile::tempdir().unwrap();
                super::run_case(format!("file:{}", dir.path().display()), stringify!($case));
            })*
        }
        #[test]
        fn every_case_is_listed() {
            let listed: Vec<&str> = vec![$(stringify!($case)),*];
            assert_eq!(listed, behaviour::CASES);
        }
    };
}

cases!(
    worked_example,
    categories_are_explicit,
    takes_until_exhausted,
    bad_pushes_change_nothing,
    corrupt_pools_are_never_overwritten,
    seed_style_nodes_work,
    pool_size_is_capped,
    concurrent_services_never_duplicate,
    lost_replies_are_resolved,
    unresolvable_outcomes_leak_never_duplicate,
    pools_move_to_a_fresh_node_before_the_version_wraps,
    a_state_remembered_across_a_move_is_read_again,
    an_unmovable_pool_is_written_in_place,
    contention_is_bounded,
    free_list_resolves_past_the_log,
    numbers_without_room_are_refused,
    a_pool_keeps_its_epoch,
    ceilings_are_checked,
);
