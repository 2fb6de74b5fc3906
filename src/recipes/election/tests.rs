use super::line::candidates;
use super::*;

#[test]
fn candidate_names_parse_and_sort_by_sequence() {
    let a = format!("_c_{}-n_0000000012", "a".repeat(32));
    let b = format!("_c_{}-n_0000000003", "b".repeat(32));
    let list = candidates(&[a.clone(), "other".into(), b.clone(), "_c_xyz-n_1".into()]);
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].name, b);
    assert_eq!(list[0].seq, 3);
    assert_eq!(list[1].marker, "a".repeat(32));
}

#[test]
fn payload_round_trips() {
    let p = encode_payload("node-1", b"host:1\nmore");
    assert_eq!(
        decode_payload(&p),
        ("node-1".to_string(), b"host:1\nmore".to_vec())
    );
    assert_eq!(decode_payload(b"plain"), ("plain".to_string(), Vec::new()));
}

#[test]
fn options_and_groups_are_validated() {
    assert!(validate_group("/a/b").is_ok());
    assert!(validate_group("/a/b/").is_ok());
    for bad in ["", "/", "a/b", "/a//b", "/a/./b"] {
        assert!(validate_group(bad).is_err(), "{bad}");
    }
    assert!(validate_options(&ElectionOptions::new("x")).is_ok());
    assert!(validate_options(&ElectionOptions::new("")).is_err());
    assert!(validate_options(&ElectionOptions::new("a\nb")).is_err());
    let nul = validate_options(&ElectionOptions::new("a\0b")).unwrap_err();
    assert!(nul.to_string().contains("NUL"), "{nul}");
    let mut big = ElectionOptions::new("x");
    big.data = vec![0; MAX_DATA_BYTES + 1];
    assert!(matches!(
        validate_options(&big),
        Err(ZooidError::TooLarge { .. })
    ));
}
