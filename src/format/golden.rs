//! Every node text docs/FORMAT.md shows, rendered from pools built through the API, byte for
//! byte: the document and the renderer cannot drift apart unnoticed.

use super::*;
use crate::range::IdRange;

fn r(start: i64, end: i64) -> IdRange {
    IdRange::new(start, end).unwrap()
}

/// The fenced blocks of docs/FORMAT.md, each with a newline at its end as a node has.
fn documented() -> Vec<String> {
    let doc = include_str!("../../docs/FORMAT.md");
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        match (line.trim_start().starts_with("```"), current.as_mut()) {
            (true, None) => current = Some(String::new()),
            (true, Some(_)) => blocks.extend(current.take()),
            (false, Some(text)) => {
                text.push_str(line);
                text.push('\n');
            }
            (false, None) => {}
        }
    }
    blocks
}

fn op(version: i64, kind: OpKind, token: u64, count: u64) -> OpRecord {
    OpRecord {
        version,
        token: OpToken(token),
        kind,
        count,
    }
}

/// The pools the document's examples show, in its order.
fn examples() -> Vec<Pool> {
    let mut one = Pool::new(r(1, 123_456_789));
    one.free_mut().take_lowest(20_000);
    one.free_mut().insert_all(&[r(9_001, 10_000)]).unwrap();
    for o in [
        op(0, OpKind::Create, 0xf139a069854fef71, 123_456_789),
        op(1, OpKind::Take, 0x4aeb2050d53832e7, 10_000),
        op(2, OpKind::Take, 0xd2f7145f9cdb1183, 10_000),
        op(3, OpKind::Push, 0x127c51b24da4fc9c, 1_000),
    ] {
        one.record(o, DEFAULT_OP_LOG_LEN);
    }

    let mut two = Pool::new(r(1, 123_456_789));
    two.free_mut().take_lowest(30_000);
    two.set_ceiling(Some(60_000));
    two.set_epoch(1);
    two.record(op(7, OpKind::Take, 0x4aeb2050d53832e7, 10_000), 64);
    two.record(op(8, OpKind::Ceiling, 0x9d3c0e5f2a7b8c11, 20_000), 64);

    let mut four = Pool::with_hole_nodes(r(1, 4_611_686_018_427_387_903), 1_000);
    four.set_blocks(Blocks {
        unit: 1_000,
        generation: 2,
        base: 20_001,
    });
    four.set_ceiling(Some(60_000));
    four.record(op(9, OpKind::Ceiling, 0x9d3c0e5f2a7b8c11, 20_000), 64);
    four.record(op(10, OpKind::Blocks, 0x3f0e9a1c77d2b460, 10_011_000), 64);
    // A pool moved to a fresh node (at data version 2,147,418,112), now at data version 1 of
    // the new node: its log goes on from the old node's.
    let mut moved = Pool::new(r(1, 123_456_789));
    moved.free_mut().take_lowest(20_000);
    moved.free_mut().insert_all(&[r(9_501, 10_000)]).unwrap();
    moved.set_offset(2_147_418_113);
    for o in [
        op(2_147_418_112, OpKind::Take, 0x5d0c3a0f9e8b7a61, 10_000),
        op(2_147_418_113, OpKind::Take, 0x81b2c4d6e8f0a1b3, 10_000),
        op(2_147_418_114, OpKind::Push, 0x0f1e2d3c4b5a6978, 500),
    ] {
        moved.record(o, DEFAULT_OP_LOG_LEN);
    }
    vec![one, two, four, moved]
}

#[test]
fn every_documented_pool_node_renders_byte_for_byte() {
    let documented = documented();
    let examples = examples();
    assert_eq!(
        documented.len(),
        examples.len(),
        "docs/FORMAT.md shows {} node texts; build each one here",
        documented.len()
    );
    for (text, pool) in documented.iter().zip(&examples) {
        assert_eq!(&pool.render(), text);
        // And the text parses back to what renders it again.
        let back = Pool::parse("/p", text.as_bytes()).unwrap();
        assert_eq!(&back.render(), text);
    }
}

/// A node in the retired format 3, as zooid wrote it before (pushes waiting in
/// `zooid-returned`, a free list in the node and its `#chunk` parts): refused with the error
/// that names the format, whatever it holds.
pub(crate) const FORMAT_3_NODE: &str = "#zooid 3\n#bounds 1:4611686018427387903\n#blocks 1000 2 20001\n#ceiling 60000\n#op 9 push 127c51b24da4fc9c 250\n#op 10 blocks 3f0e9a1c77d2b460 10011000\n#chunk 4001 3 1280\n2751:3000\n";

#[test]
fn a_format_3_node_is_refused_naming_its_format() {
    for text in [
        FORMAT_3_NODE,
        "#zooid 3\n",
        "#zooid 3\n#bounds 1:10\n#blocks 5 0 1\n",
    ] {
        match Pool::parse("/x", text.as_bytes()) {
            Err(err @ crate::error::ZooidError::RetiredFormat { .. }) => {
                assert_eq!(err.kind(), crate::error::ErrorKind::CorruptPool);
                let message = err.to_string();
                assert!(
                    message.starts_with(
                        "pool node /x is in format 3, which this release no longer reads"
                    ),
                    "{message}"
                );
            }
            other => panic!("expected RetiredFormat for {text:?}, got {other:?}"),
        }
    }
}

#[test]
fn a_format_4_node_holds_no_free_list() {
    let text = "#zooid 4\n#bounds 1:100\n#blocks 10 0 51\n5:9\n";
    match Pool::parse("/p", text.as_bytes()) {
        Err(crate::error::ZooidError::CorruptPool { line, reason, .. }) => {
            assert_eq!(line, 4);
            assert!(reason.contains("hole nodes"), "{reason}");
        }
        other => panic!("expected CorruptPool, got {other:?}"),
    }
}
