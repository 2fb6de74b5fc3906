use super::*;

#[test]
fn sequence_numbers_parse_from_names() {
    assert_eq!(sequence_of("i-0123456789abcdef-0000000042"), Some(42));
    assert_eq!(sequence_of("w-0123456789abcdef-0000000000"), Some(0));
    assert_eq!(sequence_of("i-0123456789abcdef-42"), None);
    assert_eq!(sequence_of("junk"), None);
}

#[test]
fn paths_are_validated() {
    assert!(validate_path("/q").is_ok());
    assert!(validate_path("/a/b/c").is_ok());
    for bad in ["", "/", "q", "/q/", "/a//b", "/a/./b", "/a/../b"] {
        assert!(validate_path(bad).is_err(), "{bad:?}");
    }
}
