//! Pool layouts chosen from C (tests/c/layouts.c): a `zooid_category_spec` makes each layout;
//! `ZOOID_LAYOUT_DEFAULT` and a spec with no layout set make hole nodes
//! (format 4) on ZooKeeper and a single node on the embedded stores, and
//! `zooid_service_migrate_category` moves a single node to hole nodes. The pool nodes are read
//! raw with a ZooKeeper client.

use zooid_test_support as support;
use zooid_test_support::c as harness;

use std::process::Command;

use harness::{compile, run_ok, Link};
use support::ZkServer;

fn run_layouts(link: Link, args: &[&str]) -> String {
    let exe = compile(
        &format!("layouts-{}", link.name()),
        &["tests/c/layouts.c"],
        link,
        &[],
    );
    let out = run_ok(Command::new(&exe).args(args));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn every_layout_from_c_writes_its_format() {
    support::init_tracing();
    let zk = ZkServer::start();
    let connect = zk.connect_string();
    for link in Link::BOTH {
        let prefix = format!("/c-layouts/{}", link.name());
        let out = run_layouts(link, &[&connect, &prefix]);
        assert!(out.ends_with("layouts OK\n"), "{out}");

        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let nodes = rt.block_on(async {
            let client = zookeeper_client::Client::connect(&connect).await.unwrap();
            let mut nodes = Vec::new();
            for name in [
                "single",
                "holes",
                "holes-in",
                "default-in",
                "default",
                "moved",
            ] {
                let path = format!("{prefix}/{name}");
                let (data, stat) = client.get_data(&path).await.unwrap();
                nodes.push((
                    name,
                    String::from_utf8_lossy(&data).into_owned(),
                    stat.version,
                ));
            }
            let refused = client
                .check_stat(&format!("{prefix}/refused"))
                .await
                .unwrap();
            assert!(refused.is_none(), "a refused create left a node");
            nodes
        });
        for (name, text, version) in nodes {
            let want = match name {
                "single" => "#zooid 1\n",
                _ => "#zooid 4\n",
            };
            assert!(text.starts_with(want), "{name}: {text}");
            match name {
                // Written by the take, the push and the take.
                "single" => assert_eq!(version, 3, "{name}: {text}"),
                // Takes claim blocks and holes, pushes create holes: the node stays as created.
                "holes" | "holes-in" | "default-in" | "default" => {
                    assert_eq!(version, 0, "{name}: {text}")
                }
                _ => {}
            }
        }
    }
}

#[test]
fn the_embedded_store_makes_single_nodes_and_refuses_block_layouts_from_c() {
    let out = run_layouts(Link::Shared, &["mem:", "/c-layouts"]);
    assert!(out.ends_with("layouts on mem: OK\n"), "{out}");
}
