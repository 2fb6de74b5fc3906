//! The pool node's text: parsing and rendering round trips and refusals.

use super::*;
use crate::error::ZooidError;
use crate::format::oplog::{OpKind, OpToken};

fn r(start: i64, end: i64) -> IdRange {
    IdRange::new(start, end).unwrap()
}

fn reason(data: &str) -> (usize, String) {
    match Pool::parse("/p", data.as_bytes()) {
        Err(ZooidError::CorruptPool {
            path, line, reason, ..
        }) => {
            assert_eq!(path, "/p");
            (line, reason)
        }
        other => panic!("expected CorruptPool for {data:?}, got {other:?}"),
    }
}

#[test]
fn renders_and_parses_back() {
    let mut pool = Pool::new(r(1, 123456789));
    pool.free_mut().take_lowest(10);
    pool.record(
        OpRecord {
            version: 1,
            token: OpToken(0xabc),
            kind: OpKind::Take,
            count: 10,
        },
        8,
    );
    let text = pool.render();
    assert_eq!(
        text,
        "#zooid 1\n#bounds 1:123456789\n#op 1 take 0000000000000abc 10\n11:123456789\n"
    );
    assert_eq!(Pool::parse("/p", text.as_bytes()).unwrap(), pool);
}

#[test]
fn seed_style_nodes_are_accepted_and_merged() {
    let pool = Pool::parse(
        "/p",
        b"9001:10000\n19001:20000\n29001:30000\n30001:123456789\n",
    )
    .unwrap();
    assert!(pool.is_legacy());
    assert_eq!(pool.bounds(), r(1, 123456789));
    assert_eq!(
        pool.free().ranges(),
        &[r(9001, 10000), r(19001, 20000), r(29001, 123456789)]
    );
    assert!(pool.render().starts_with("#zooid 1\n#bounds 1:123456789\n"));
}

#[test]
fn strict_parsing_names_the_line() {
    assert_eq!(
        reason("5:10\n1:3\n"),
        (2, "overlaps or precedes the previous range 5:10".into())
    );
    assert_eq!(reason("1:10\n5:20\n").0, 2);
    assert_eq!(reason("1:10\nabc\n"), (2, "expected start:end".into()));
    assert_eq!(reason("10:1\n"), (1, "start is greater than end".into()));
    assert_eq!(reason("-1:5\n").0, 1);
    assert_eq!(reason("0:5\n"), (1, "IDs start at 1".into()));
    assert_eq!(
        reason("1:99999999999999999999\n"),
        (1, "ID out of the 64-bit range".into())
    );
    assert_eq!(
        reason("#zooid 1\n#bounds 1:100\n50:200\n"),
        (3, "outside the bounds 1:100".into())
    );
    assert_eq!(
        reason("#zooid 5\n#bounds 1:100\n").1,
        "unsupported format version 5 (this zooid reads 1, 2 and 4)"
    );
    assert_eq!(
        reason("#zooid 4\n#bounds 1:100\n").1,
        "format 4 needs a '#blocks' header"
    );
    assert_eq!(reason("#zooid 1\n1:5\n").1, "missing '#bounds' header");
    assert_eq!(
        reason("#zooid 1\n#zooid 1\n").1,
        "'#zooid' must be the first line, once"
    );
    assert_eq!(reason("#zooid 1\n#bounds 1:100\n#frob\n").0, 3);
    assert_eq!(
        reason("#zooid 1\n#bounds 1:100\n1:5\n#op 1 take 0000000000000001 1\n").0,
        4
    );
    assert_eq!(reason("#zooid 1\n#bounds 1:100\n#op 2 take 0000000000000001 1\n#op 1 take 0000000000000002 1\n").0, 4);
    assert_eq!(reason("#zooid 1\n#bounds 1:100\n#op 2 take xyz 1\n").0, 3);
    assert_eq!(
        reason("#bounds 1:100\n1:5\n").1,
        "header lines need '#zooid 1' first"
    );
    assert_eq!(reason(""), (1, "empty node: not a zooid pool".into()));
    let legacy_counter = 77i64.to_be_bytes();
    match Pool::parse("/p", &legacy_counter) {
        Err(ZooidError::CorruptPool { .. }) => {}
        other => panic!("{other:?}"),
    }
    let bad_utf8 = [0xffu8, 0xfe, 0, 0, 0, 0, 0, 1];
    match Pool::parse("/p", &bad_utf8) {
        Err(ZooidError::CorruptPool { reason, .. }) => {
            assert!(reason.contains("legacy big-endian counter"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_log_keeps_the_newest_entries() {
    let mut pool = Pool::new(r(1, 10));
    for v in 1..=5 {
        pool.record(
            OpRecord {
                version: v,
                token: OpToken(v as u64),
                kind: OpKind::Push,
                count: 1,
            },
            3,
        );
    }
    let versions: Vec<i64> = pool.log().map(|op| op.version).collect();
    assert_eq!(versions, vec![3, 4, 5]);
    assert_eq!(pool.op_at(4).map(|op| op.token), Some(OpToken(4)));
    assert_eq!(pool.op_at(2), None);
    // A node recreated with old content restarts at version 0: the old entries go.
    pool.record(
        OpRecord {
            version: 1,
            token: OpToken(9),
            kind: OpKind::Take,
            count: 1,
        },
        3,
    );
    let versions: Vec<i64> = pool.log().map(|op| op.version).collect();
    assert_eq!(versions, vec![1]);
    assert!(Pool::parse("/p", pool.render().as_bytes()).is_ok());
}

#[test]
fn a_ceiling_makes_format_2_and_parses_back() {
    let mut pool = Pool::new(r(1, 1000));
    pool.set_ceiling(Some(100));
    pool.free_mut().take_lowest(10);
    let text = pool.render();
    assert_eq!(text, "#zooid 2\n#bounds 1:1000\n#ceiling 100\n11:1000\n");
    let back = Pool::parse("/p", text.as_bytes()).unwrap();
    assert_eq!(back, pool);
    assert_eq!(back.available(), 90);
    assert_eq!(back.high_water(), 10);
    pool.set_epoch(3);
    let text = pool.render();
    assert_eq!(
        text,
        "#zooid 2\n#bounds 1:1000\n#ceiling 100\n#epoch 3\n11:1000\n"
    );
    assert_eq!(Pool::parse("/p", text.as_bytes()).unwrap(), pool);
    // Clamped to the bounds.
    pool.set_ceiling(Some(5000));
    assert_eq!(pool.ceiling(), Some(1000));
    // Without a ceiling the pool stays format 1.
    let plain = Pool::new(r(1, 10));
    assert!(plain.render().starts_with("#zooid 1\n"));
    assert_eq!(plain.available(), 10);
}

#[test]
fn ceiling_lines_are_strict() {
    assert_eq!(
        reason("#zooid 1\n#bounds 1:100\n#ceiling 5\n").1,
        "'#ceiling' needs '#zooid 2'"
    );
    assert_eq!(
        reason("#zooid 2\n#bounds 1:100\n1:100\n").1,
        "format 2 needs a '#ceiling' or '#offset' header"
    );
    assert_eq!(
        reason("#zooid 2\n#bounds 1:100\n#ceiling 5\n#ceiling 6\n").1,
        "duplicate '#ceiling'"
    );
    assert_eq!(
        reason("#zooid 2\n#bounds 1:100\n#ceiling 500\n"),
        (3, "above the bounds 1:100".into())
    );
    assert_eq!(
        reason("#zooid 2\n#bounds 1:100\n#ceiling -1\n").1,
        "negative '#ceiling'"
    );
    assert_eq!(
        reason("#zooid 2\n#bounds 1:100\n#ceiling x\n").1,
        "expected a number"
    );
    assert_eq!(
        reason("#zooid 2\n#bounds 1:100\n#ceiling 5 6\n").1,
        "trailing words"
    );
    assert_eq!(
        reason("#zooid 2\n#bounds 1:100\n#op 1 take 0000000000000001 1\n#ceiling 5\n").1,
        "'#ceiling' must come before the '#op' lines"
    );
    assert_eq!(
        reason("#zooid 2\n#bounds 1:100\n#ceiling 5\n#epoch 1\n#epoch 2\n").1,
        "duplicate '#epoch'"
    );
    assert_eq!(
        reason("#zooid 1\n#bounds 1:100\n#epoch 2\n").1,
        "'#epoch' needs '#zooid 2'"
    );
}

#[test]
fn offset_lines_are_strict() {
    assert_eq!(
        reason("#zooid 1\n#bounds 1:100\n#offset 5\n").1,
        "'#offset' needs '#zooid 2'"
    );
    assert_eq!(
        reason("#zooid 2\n#bounds 1:100\n#offset 5\n#offset 6\n").1,
        "duplicate '#offset'"
    );
    assert_eq!(
        reason("#zooid 2\n#bounds 1:100\n#offset -5\n").1,
        "negative '#offset'"
    );
    assert_eq!(
        reason("#zooid 2\n#bounds 1:100\n#op 6 take 0000000000000001 1\n#offset 5\n").1,
        "'#offset' must come before the '#op' lines"
    );
    assert_eq!(
        reason("#zooid 2\n#bounds 1:100\n#offset 5\n#op -1 take 0000000000000001 1\n").1,
        "bad '#op' version"
    );
    // A moved pool without a ceiling is format 2; its log versions pass the 32-bit range.
    let text = "#zooid 2\n#bounds 1:100\n#offset 3000000000\n#op 3000000001 take 0000000000000001 1\n2:100\n";
    let pool = Pool::parse("/p", text.as_bytes()).unwrap();
    assert_eq!(
        (pool.offset(), pool.version_at(1), pool.ceiling()),
        (3_000_000_000, 3_000_000_001, None)
    );
    assert_eq!(
        pool.op_at(3_000_000_001).map(|op| op.token),
        Some(OpToken(1))
    );
    assert_eq!(pool.render(), text);
}

/// What a reader of format 1 (zooid before ceilings) does with a pool that has one: it
/// refuses the version line, so it can never hand out IDs above the ceiling.
#[test]
fn format_1_readers_refuse_a_pool_with_a_ceiling() {
    let mut pool = Pool::new(r(1, 100));
    pool.set_ceiling(Some(10));
    let text = pool.render();
    // The format-1 parser's rule: versions other than its own are refused. Model it by
    // checking the first line is not '#zooid 1' and that a format-1 body with the ceiling
    // line is refused too.
    assert!(text.starts_with("#zooid 2\n"));
    let as_v1 = text.replacen("#zooid 2", "#zooid 1", 1);
    assert_eq!(reason(&as_v1).1, "'#ceiling' needs '#zooid 2'");
}

proptest::proptest! {
    /// Any pool, with or without ceiling and epoch, renders to text that parses back to it.
    #[test]
    fn any_pool_round_trips(
        last in 1i64..1_000_000,
        taken in 0u64..2_000_000,
        ceiling in proptest::option::of(0i64..1_000_000),
        epoch in 0u64..5,
        ops in 0i32..5,
        offset in proptest::option::of(1i64..i64::MAX / 2),
    ) {
        let mut pool = Pool::new(r(1, last));
        pool.free_mut().take_lowest(taken);
        if pool.free().is_empty() {
            return Ok(());
        }
        pool.set_ceiling(ceiling);
        pool.set_offset(offset.unwrap_or(0));
        let format_2 = ceiling.is_some() || offset.is_some();
        pool.set_epoch(if format_2 { epoch } else { 0 });
        for v in 0..ops {
            let version = pool.version_at(v);
            pool.record(OpRecord { version, token: OpToken(v as u64 * 7), kind: OpKind::Ceiling, count: 1 }, 64);
        }
        let text = pool.render();
        proptest::prop_assert_eq!(Pool::parse("/p", text.as_bytes()).unwrap(), pool.clone());
        proptest::prop_assert_eq!(text.starts_with("#zooid 2\n"), format_2);
        let avail = pool.available();
        proptest::prop_assert!(avail <= pool.free().count());
    }
}

#[test]
fn blocks_make_format_4_and_parse_back() {
    let mut pool = Pool::with_hole_nodes(r(1, 1_000_000), 1000);
    pool.set_blocks(Blocks {
        unit: 1000,
        generation: 2,
        base: 20_001,
    });
    pool.set_ceiling(Some(50_000));
    let text = pool.render();
    assert_eq!(
        text,
        "#zooid 4\n#bounds 1:1000000\n#blocks 1000 2 20001\n#ceiling 50000\n"
    );
    let back = Pool::parse("/p", text.as_bytes()).unwrap();
    assert_eq!(back, pool);
    assert_eq!(back.high_water(), 20_000);
    // The unclaimed block region up to the ceiling (the holes are nodes of their own).
    assert_eq!(back.available(), 30_000);
    let b = back.blocks().unwrap();
    assert_eq!(b.block(0, 1_000_000), Some(r(20_001, 21_000)));
    assert_eq!(b.block(979, 1_000_000), Some(r(999_001, 1_000_000)));
    assert_eq!(b.block(980, 1_000_000), None);
    assert_eq!(b.block(i64::MAX, 1_000_000), None);
}

#[test]
fn blocks_lines_are_strict() {
    assert_eq!(
        reason("#zooid 1\n#bounds 1:100\n#blocks 10 0 1\n").1,
        "'#blocks' needs '#zooid 4'"
    );
    assert_eq!(
        reason("#zooid 4\n#bounds 1:100\n#blocks 0 0 1\n").1,
        "unit must be 1..=2147483647"
    );
    assert_eq!(
        reason("#zooid 4\n#bounds 1:100\n#blocks 10 0 x\n").1,
        "'#blocks UNIT GENERATION BASE': bad base"
    );
    assert_eq!(
        reason("#zooid 4\n#bounds 1:100\n#blocks 10 0 102\n").1,
        "base outside the bounds 1:100"
    );
    assert_eq!(
        reason("#zooid 4\n#bounds 1:100\n#blocks 10 0 1\n#chunk 50 0 5\n").1,
        "unknown header line"
    );
    // Base one past the last ID: everything was handed out in blocks.
    assert!(Pool::parse("/p", b"#zooid 4\n#bounds 1:100\n#blocks 10 0 101\n").is_ok());
}

#[test]
fn a_range_up_to_the_largest_id_renders_and_parses() {
    let mut pool = Pool::new(r(1, i64::MAX));
    pool.set_ceiling(Some(0));
    let text = pool.render();
    assert!(text.ends_with("1:9223372036854775807\n"), "{text}");
    assert_eq!(Pool::parse("/p", text.as_bytes()).unwrap(), pool);
}

#[test]
fn a_repair_moves_fresh_blocks_above_the_record_and_the_frontier() {
    let mut pool = Pool::with_hole_nodes(r(1, 1_000_000), 1000);
    // Three blocks claimed, the ceiling cut the third: its top half waits as hole nodes (the
    // repair gives up those at or below the record, src/alloc/blocks/repair.rs).
    pool.set_ceiling(Some(2500));
    let mut repaired = pool.clone();
    let removed = repaired.clear_through(2600, 3001, 1);
    assert!(removed.is_empty() && repaired.free().is_empty());
    let blocks = repaired.blocks().unwrap();
    assert_eq!(
        (repaired.epoch(), blocks.generation, blocks.base),
        (1, GENERATIONS_PER_EPOCH, 3001),
        "not inside the holes, in the epoch's first generation"
    );
    // A record above the frontier wins; the end of the bounds caps it.
    // The fresh IDs the new base skips are given up, and named.
    let mut above = pool.clone();
    assert_eq!(above.clear_through(5000, 3001, 1), vec![r(3001, 5000)]);
    assert_eq!(above.blocks().unwrap().base, 5001);
    let mut end = pool.clone();
    assert_eq!(
        end.clear_through(1_000_000, 3001, 1),
        vec![r(3001, 1_000_000)]
    );
    assert_eq!(end.blocks().unwrap().base, 1_000_001);
}

#[test]
fn hole_nodes_make_format_4_and_parse_back() {
    let mut pool = Pool::with_hole_nodes(r(1, 1_000_000), 1000);
    pool.set_ceiling(Some(50_000));
    let text = pool.render();
    assert!(
        text.starts_with("#zooid 4\n#bounds 1:1000000\n#blocks 1000 0 1\n#ceiling 50000\n"),
        "{text}"
    );
    let back = Pool::parse("p", text.as_bytes()).unwrap();
    assert_eq!(back, pool);
    // The same text in format 3 is refused, naming the format; never read as format 4.
    let three = text.replace("#zooid 4", "#zooid 3");
    assert!(matches!(
        Pool::parse("p", three.as_bytes()),
        Err(ZooidError::RetiredFormat { format: 3, .. })
    ));
}

/// A restore or a repair (a new epoch) numbers its blocks in a generation no earlier
/// incarnation of the pool used, whatever generation it was at; within an epoch, generations
/// follow one another.
#[test]
fn each_epoch_numbers_its_generations_apart() {
    let blocks = |generation| Blocks {
        unit: 100,
        generation,
        base: 1,
    };
    assert_eq!(blocks(0).next_generation(0), 1);
    assert_eq!(blocks(7).next_generation(0), 8);
    // Restored twice from the same generation number: never the same sequence parent.
    assert_eq!(blocks(0).next_generation(1), GENERATIONS_PER_EPOCH);
    assert_eq!(blocks(0).next_generation(2), 2 * GENERATIONS_PER_EPOCH);
    assert_eq!(
        blocks(GENERATIONS_PER_EPOCH + 5).next_generation(2),
        2 * GENERATIONS_PER_EPOCH
    );
    // A move inside an epoch goes on from the epoch's generation.
    let current = blocks(2 * GENERATIONS_PER_EPOCH);
    assert_eq!(current.next_generation(2), 2 * GENERATIONS_PER_EPOCH + 1);
    // Restored from a fresh pool (generation 0) and from a moved one, epochs 1 and 2.
    let mut restored = Pool::with_hole_nodes(r(1, 1_000_000), 100);
    restored.clear_through(10_000, 1, 2);
    let text = restored.render();
    assert!(text.contains("#blocks 100 8589934592 10001\n"), "{text}");
    assert_eq!(Pool::parse("/p", text.as_bytes()).unwrap(), restored);
}

#[test]
fn numbers_without_room_for_the_next_write_are_refused() {
    let over = |header: &str| format!("#zooid 4\n#bounds 1:1000\n{header}\n");
    let (line, why) = reason(&over(&format!("#blocks 10 {} 1", MAX_GENERATION + 1)));
    assert_eq!(line, 3, "{why}");
    assert!(why.contains("generation above"), "{why}");
    assert!(Pool::parse("/p", over(&format!("#blocks 10 {MAX_GENERATION} 1")).as_bytes()).is_ok());
    let two = |header: &str| format!("#zooid 2\n#bounds 1:1000\n{header}\n1:1000\n");
    assert!(reason(&two(&format!("#offset {}", MAX_OFFSET + 1))).1.contains("above"));
    assert!(Pool::parse("/p", two(&format!("#offset {MAX_OFFSET}")).as_bytes()).is_ok());
    let epoch = |e: u64| format!("#zooid 2\n#bounds 1:1000\n#ceiling 10\n#epoch {e}\n1:1000\n");
    assert!(reason(&epoch(MAX_EPOCH + 1)).1.contains("'#epoch' above"));
    assert!(Pool::parse("/p", epoch(MAX_EPOCH).as_bytes()).is_ok());
}

#[test]
fn an_epoch_alone_is_written_with_an_offset_of_zero() {
    let pool = Pool::parse("/p", b"#zooid 2\n#bounds 1:1000\n#epoch 7\n#offset 0\n1:1000\n").unwrap();
    let text = pool.render();
    assert_eq!(text, "#zooid 2\n#bounds 1:1000\n#epoch 7\n#offset 0\n1:1000\n");
    assert_eq!(Pool::parse("/p", text.as_bytes()).unwrap(), pool);
}
