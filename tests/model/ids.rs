//! Sets of IDs as bit sets: ID `i` (1..=15) is bit `i`. The model's categories are tiny, so
//! every set of IDs the protocol keeps (free list, hole nodes, what a process holds) is one
//! `u16`, which keeps the states small and cheap to hash.

/// A set of IDs; bit `i` is ID `i` (bit 0 is unused: IDs start at 1).
pub type Ids = u16;

/// The largest ID a model may use.
pub const MAX_ID: u8 = 15;

/// The set of the single ID `id`.
pub fn one(id: u8) -> Ids {
    debug_assert!((1..=MAX_ID).contains(&id));
    1 << id
}

/// The IDs `lo..=hi` (empty when `lo > hi`), clipped to `1..=MAX_ID`.
pub fn span(lo: u8, hi: u8) -> Ids {
    (lo.max(1)..=hi.min(MAX_ID)).fold(0, |set, id| set | one(id))
}

/// The lowest ID of `set`.
pub fn lowest(set: Ids) -> Option<u8> {
    (set != 0).then(|| set.trailing_zeros() as u8)
}

/// The highest ID of `set`.
pub fn highest(set: Ids) -> Option<u8> {
    (set != 0).then(|| 15 - set.leading_zeros() as u8)
}

/// How many IDs `set` holds.
pub fn count(set: Ids) -> u8 {
    set.count_ones() as u8
}

/// `{1,4,5}`: a set for traces.
pub fn show(set: Ids) -> String {
    let ids: Vec<String> = (1..=MAX_ID)
        .filter(|&i| set & one(i) != 0)
        .map(|i| i.to_string())
        .collect();
    format!("{{{}}}", ids.join(","))
}

#[test]
fn bit_sets() {
    assert_eq!(span(2, 4), one(2) | one(3) | one(4));
    assert_eq!(span(5, 4), 0);
    assert_eq!(lowest(span(3, 9)), Some(3));
    assert_eq!(highest(span(3, 9)), Some(9));
    assert_eq!(lowest(0), None);
    assert_eq!(count(span(1, 15)), 15);
    assert_eq!(show(one(1) | one(7)), "{1,7}");
}
