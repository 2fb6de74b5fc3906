//! The line of candidates: candidate node names (marker and sequence number) and their order.

/// A candidate node's name, split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Candidate {
    pub(super) name: String,
    pub(super) marker: String,
    pub(super) seq: i64,
}

pub(super) const MARKER_PREFIX: &str = "_c_";
pub(super) const SEQ_PREFIX: &str = "-n_";

pub(super) fn parse_candidate(name: &str) -> Option<Candidate> {
    let rest = name.strip_prefix(MARKER_PREFIX)?;
    let (marker, seq) = rest.split_once(SEQ_PREFIX)?;
    if marker.len() != 32 || !marker.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    if seq.is_empty() || !seq.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(Candidate {
        name: name.to_string(),
        marker: marker.to_string(),
        seq: seq.parse().ok()?,
    })
}

/// The candidate nodes among a group's children, in line order (lowest sequence first).
pub(super) fn candidates(children: &[String]) -> Vec<Candidate> {
    let mut list: Vec<Candidate> = children.iter().filter_map(|c| parse_candidate(c)).collect();
    list.sort_by_key(|c| c.seq);
    list
}

/// The group node data line that raises a group's epoch by hand (`zooid-epoch=N`).
pub(super) const EPOCH_KEY: &str = "zooid-epoch=";

/// The largest epoch: tokens are `epoch << 31 | sequence` and must stay positive `i64`s.
pub(super) const MAX_EPOCH: i64 = (1 << 32) - 1;

/// A group node's epoch: its creation time in whole seconds (the servers' clock), raised to the
/// `zooid-epoch=N` line of its data when that is larger. A group node created again after a
/// wipe of the ensemble is created later, so its epoch is larger.
pub(super) fn group_epoch(data: &[u8], ctime_ms: i64) -> i64 {
    let created = ctime_ms.div_euclid(1000).clamp(0, MAX_EPOCH);
    let set = String::from_utf8_lossy(data)
        .lines()
        .filter_map(|line| line.trim().strip_prefix(EPOCH_KEY))
        .filter_map(|n| n.trim().parse::<i64>().ok())
        .filter(|n| (0..=MAX_EPOCH).contains(n))
        .max()
        .unwrap_or(0);
    created.max(set)
}

/// The fencing token of the candidate with sequence number `seq` in a group of epoch `epoch`:
/// `epoch << 31 | seq`. Sequence numbers grow within one group node's life (they are below
/// 2^31), and epochs grow from one group node to the next, so tokens grow across both.
pub(super) fn token(epoch: i64, seq: i64) -> i64 {
    (epoch.clamp(0, MAX_EPOCH) << 31) | (seq & 0x7fff_ffff)
}

#[cfg(test)]
mod token_tests {
    use super::*;

    #[test]
    fn tokens_grow_with_the_sequence_and_the_epoch() {
        let e = group_epoch(b"", 1_764_000_000_123);
        assert_eq!(e, 1_764_000_000);
        assert!(token(e, 2) > token(e, 1));
        assert!(token(e + 1, 0) > token(e, i32::MAX as i64));
        assert!(token(MAX_EPOCH, i32::MAX as i64) > 0);
        // A czxid-era token (epoch 0xff, counter 2^32 - 1) is below any epoch token from 1971 on.
        assert!(token(group_epoch(b"", 31_536_000_000), 0) > (0xff_i64 << 32) | 0xffff_ffff);
        // An operator's epoch raises, never lowers.
        assert_eq!(
            group_epoch(b"x\nzooid-epoch=1800000000\n", 1_764_000_000_000),
            1_800_000_000
        );
        assert_eq!(
            group_epoch(b"zooid-epoch=5", 1_764_000_000_000),
            1_764_000_000
        );
        assert_eq!(group_epoch(b"zooid-epoch=99999999999", 1_000), 1);
    }
}
