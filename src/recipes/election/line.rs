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
