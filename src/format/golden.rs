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

    let mut three = Pool::with_blocks(r(1, 4_611_686_018_427_387_903), 1_000);
    three.set_blocks(Blocks {
        unit: 1_000,
        generation: 2,
        base: 20_001,
        hole_nodes: true,
    });
    three.set_ceiling(Some(60_000));
    three.record(op(9, OpKind::Push, 0x127c51b24da4fc9c, 250), 64);
    three.record(op(10, OpKind::Blocks, 0x3f0e9a1c77d2b460, 10_011_000), 64);
    three.free_mut().insert_all(&[r(2_751, 3_000)]).unwrap();
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
    vec![one, two, three, moved]
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

/// The part and push nodes the document describes in words: a header line, then the ranges.
#[test]
fn part_and_push_nodes_render_as_documented() {
    let ranges = [r(4_001, 4_100), r(4_201, 5_380)];
    let part = parts::render_chunk(4_001, &ranges);
    assert_eq!(part, b"#zooid-chunk 4001\n4001:4100\n4201:5380\n");
    assert_eq!(
        parts::parse_chunk("/p", 4_001, i64::MAX, &part).unwrap(),
        ranges
    );
    let push = render_return(&ranges);
    assert_eq!(push, b"#zooid-returned\n4001:4100\n4201:5380\n");
    assert_eq!(
        parse_return("/p/zooid-returned/r-1", &push).unwrap(),
        ranges
    );
}
