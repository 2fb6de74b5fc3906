use super::format::plan;
use super::*;
use crate::range::IdRange;

#[test]
fn the_node_format_is_the_seeds_big_endian_long() {
    assert_eq!(encode(0x0102), [0, 0, 0, 0, 0, 0, 1, 2]);
    assert_eq!(decode("/c", &encode(-5)).unwrap(), -5);
    assert_eq!(decode("/c", &encode(i64::MAX)).unwrap(), i64::MAX);
    let err = decode("/c/x", b"12345").unwrap_err();
    assert!(
        matches!(&err, ZooidError::CorruptPool { path, .. } if path == "/c/x"),
        "{err:?}"
    );
    assert!(err.to_string().contains("5 bytes"), "{err}");
    assert!(decode("/c", &[0; 9]).is_err());
    assert!(decode("/c", &[]).is_err());
}

#[test]
fn plans_refuse_zero_and_overflow() {
    assert_eq!(plan("/c", 0, 3).unwrap(), IdRange::new(1, 3).unwrap());
    assert_eq!(plan("/c", -10, 1).unwrap(), IdRange::single(-9));
    assert!(matches!(
        plan("/c", 0, 0),
        Err(ZooidError::InvalidArgument(_))
    ));
    assert!(matches!(
        plan("/c", i64::MAX, 1),
        Err(ZooidError::Exhausted { .. })
    ));
    assert_eq!(
        plan("/c", i64::MAX - 2, 2).unwrap(),
        IdRange::new(i64::MAX - 1, i64::MAX).unwrap()
    );
    assert!(matches!(
        plan("/c", i64::MAX - 2, 3),
        Err(ZooidError::InvalidArgument(_))
    ));
    assert!(matches!(
        plan("/c", -1, u64::MAX),
        Err(ZooidError::InvalidArgument(_))
    ));
    // The whole span above i64::MIN: u64::MAX values, ending exactly at i64::MAX.
    assert_eq!(
        plan("/c", i64::MIN, u64::MAX).unwrap(),
        IdRange::new(i64::MIN + 1, i64::MAX).unwrap()
    );
    assert_eq!(
        plan("/c", i64::MIN, u64::MAX - 1).unwrap(),
        IdRange::new(i64::MIN + 1, i64::MAX - 1).unwrap()
    );
}

#[test]
fn paths_are_checked() {
    for bad in ["", "/", "c", "/c/", "/a//b", "/a/../b"] {
        assert!(validate_path(bad).is_err(), "{bad}");
    }
    validate_path("/a/b").unwrap();
    assert_eq!(parent("/a/b"), Some("/a"));
    assert_eq!(parent("/a"), None);
}
