//! A category in block allocation (hole nodes, pool format 4) created and used from the CLI. (The
//! block allocation tests are in tests/zookeeper/blocks.rs and holes.rs.)

use support::ZkServer;
use zooid_test_support as support;

/// `zooid init --block-size`, then `take`, `push` and `show` from the CLI.
#[test]
fn cli_creates_and_uses_a_category_in_block_allocation() {
    support::init_tracing();
    let zk = ZkServer::start();
    let zooid = env!("CARGO_BIN_EXE_zooid");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(zooid)
            .args(["--connect", &zk.connect_string()])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let created = run(&[
        "init",
        "/cli/blocks",
        "--last",
        "1000000",
        "--block-size",
        "250",
    ]);
    assert!(
        created.contains("block allocation in blocks of 250"),
        "{created}"
    );
    assert_eq!(run(&["take", "/cli/blocks", "250"]).trim(), "1:250");
    // The rest of the second block, 351..=500, goes back as a hole node.
    assert_eq!(run(&["take", "/cli/blocks", "100"]).trim(), "251:350");
    // A hole smaller than the take waits for one it covers: this take claims the third block
    // and gives back 701..=750.
    assert_eq!(run(&["take", "/cli/blocks", "200"]).trim(), "501:700");
    assert_eq!(run(&["take", "/cli/blocks", "150"]).trim(), "351:500");
    let shown = run(&["show", "/cli/blocks", "--json"]);
    assert!(shown.contains("\"free_ids\":999300"), "{shown}");
    assert!(
        shown.contains("\"blocks\":{\"base\":1,\"generation\":0,\"unit\":250}"),
        "{shown}"
    );
    let text = run(&["show", "/cli/blocks"]);
    assert!(
        text.contains("blocks:     250 IDs each, generation 0 from 1 (fresh IDs from 751 on)"),
        "{text}"
    );
}
