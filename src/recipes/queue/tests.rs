use super::*;

#[test]
fn sequence_numbers_parse_from_names() {
    assert_eq!(sequence_of("i-0123456789abcdef-0000000042"), Some(42));
    assert_eq!(sequence_of("w-0123456789abcdef-0000000000"), Some(0));
    assert_eq!(sequence_of("i-0123456789abcdef-42"), None);
    assert_eq!(sequence_of("junk"), None);
    assert_eq!(
        sequence_of("i-0123456789abcdef-2147483647"),
        Some(2147483647)
    );
}

/// After 2^31 - 1 ZooKeeper's `%010d` counter wraps to negative numbers; they come after every
/// positive one, in their own order (issue 20, finding 8: `-N` was read as `N`, or not at all).
#[test]
fn sequence_numbers_keep_their_order_across_the_counter_wrap() {
    let names = [
        "i-0123456789abcdef-2147483646",
        "i-0123456789abcdef-2147483647",
        "i-0123456789abcdef--2147483648",
        "i-0123456789abcdef--2147483647",
        "i-0123456789abcdef--000000002",
        "i-0123456789abcdef--000000001",
    ];
    let keys: Vec<u64> = names.iter().map(|n| sequence_of(n).expect(n)).collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
    assert_eq!(keys[2], 1 << 31);
    assert_eq!(keys[5], u64::from(u32::MAX));
    assert_eq!(sequence_of("i-0123456789abcdef--00000001"), None);
}

#[test]
fn paths_are_validated() {
    assert!(validate_path("/q").is_ok());
    assert!(validate_path("/a/b/c").is_ok());
    for bad in ["", "/", "q", "/q/", "/a//b", "/a/./b", "/a/../b"] {
        assert!(validate_path(bad).is_err(), "{bad:?}");
    }
}
