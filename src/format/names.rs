//! The names of the nodes below a pool node (format 4, docs/FORMAT.md).

/// The node whose children number generation `generation`'s blocks.
pub fn sequence_parent(path: &str, generation: u64) -> String {
    format!("{path}/zooid-blocks-{generation}")
}

/// Whether `name` (a child of a pool node) is one of zooid's sequence parents.
pub fn is_sequence_parent(name: &str) -> bool {
    is_numbered(name, "zooid-blocks-")
}

/// The generation a sequence parent's name (a child of a pool node) numbers; `None` for any
/// other name.
pub fn generation_of(name: &str) -> Option<u64> {
    if !is_sequence_parent(name) {
        return None;
    }
    name.strip_prefix("zooid-blocks-")?.parse().ok()
}

/// The sequence number ZooKeeper appended to a created node's name.
pub fn sequence_of(path: &str) -> Option<i64> {
    let digits = path.rsplit('-').next()?;
    digits.parse().ok()
}

/// The node under which the takers of holes of pool `path` keep their receipts.
pub fn returned_parent(path: &str) -> String {
    format!("{path}/zooid-returned")
}

/// The name prefix of a write's ephemeral receipt under [`returned_parent`] (`m-TOKEN`).
pub const MARKER_PREFIX: &str = "m-";

/// The node under which a pool in format 4 keeps its free ranges, one node each.
pub fn holes_parent(path: &str) -> String {
    format!("{path}/zooid-holes")
}

/// The name of the node that holds free range `range` under [`holes_parent`]:
/// `h-START-END`, both 19 digits wide (zero-padded), so that names sort by ID.
pub fn hole_name(range: &crate::range::IdRange) -> String {
    format!("h-{:019}-{:019}", range.start(), range.end())
}

/// The free range a node name under [`holes_parent`] holds; `None` for any other name.
pub fn hole_of(name: &str) -> Option<crate::range::IdRange> {
    let (start, end) = name.strip_prefix("h-")?.split_once('-')?;
    let digits = |s: &str| s.len() == 19 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(start) || !digits(end) {
        return None;
    }
    crate::range::IdRange::new(start.parse().ok()?, end.parse().ok()?)
}

/// Whether `name` (a child of a pool node) is one of the nodes zooid keeps below a pool (block
/// claims, receipts, holes, and the free-list parts `zooid-free-KEY` a pool in the retired
/// format 3 left), never a category.
pub fn is_pool_child(name: &str) -> bool {
    is_sequence_parent(name)
        || is_numbered(name, "zooid-free-")
        || name == "zooid-holes"
        || name == "zooid-returned"
}

/// Whether `name` is `prefix` followed by decimal digits.
fn is_numbered(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(sequence_of("/p/zooid-blocks-3/00ab-0000000042"), Some(42));
        assert_eq!(sequence_of("/p/zooid-blocks-3/x"), None);
        assert!(is_sequence_parent("zooid-blocks-12"));
        assert!(!is_sequence_parent("zooid-blocks-"));
        assert!(!is_sequence_parent("zooid-blocks-1a"));
        assert_eq!(generation_of("zooid-blocks-4294967296"), Some(1 << 32));
        assert_eq!(generation_of("zooid-blocks-+1"), None);
        assert_eq!(generation_of("zooid-holes"), None);
        assert_eq!(sequence_parent("/a/b", 7), "/a/b/zooid-blocks-7");
        assert!(is_pool_child("zooid-free-17"));
        assert_eq!(returned_parent("/p"), "/p/zooid-returned");
        assert!(is_pool_child("zooid-holes") && is_pool_child("zooid-blocks-3"));
        assert!(!is_pool_child("did"));
        let range = crate::range::IdRange::new(7, 1_000_000).unwrap();
        assert_eq!(
            hole_name(&range),
            "h-0000000000000000007-0000000000001000000"
        );
        assert_eq!(hole_of(&hole_name(&range)), Some(range));
        assert_eq!(hole_of("h-7-9"), None);
        assert_eq!(hole_of("h-0000000000000000009-0000000000000000007"), None);
        assert_eq!(hole_of("m-0000000000000000007-0000000000000000009"), None);
    }
}
