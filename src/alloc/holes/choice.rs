//! Which holes a take claims (pure): the holes a listing found, grouped where they overlap, and
//! the choice of enough of them for the take, lowest first or from a given start.

use crate::range::{IdRange, RangeSet};

/// A hole node as listed: its name and the range it holds.
pub(crate) type Hole = (String, IdRange);

/// The holes one take claims.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Choice {
    /// The names of the nodes it deletes.
    pub nodes: Vec<String>,
    /// The IDs it hands out (ascending).
    pub handed: Vec<IdRange>,
    /// What is left of the holes it deletes, created again as nodes.
    pub remainder: Vec<IdRange>,
    /// Whether two of the holes overlapped (a push of free IDs that got in): counted once.
    pub overlapped: bool,
}

/// Holes that overlap, taken together: their nodes (consecutive in ID order) and the IDs they
/// hold, once.
struct Cluster<'h> {
    holes: &'h [Hole],
    start: i64,
    end: i64,
}

/// `holes` in ID order: borrowed when they are already (a listing keeps them so), else sorted.
fn in_order(holes: &[Hole]) -> std::borrow::Cow<'_, [Hole]> {
    let key = |(_, r): &Hole| (r.start(), r.end());
    if holes.is_sorted_by_key(key) {
        std::borrow::Cow::Borrowed(holes)
    } else {
        let mut sorted = holes.to_vec();
        sorted.sort_by_key(key);
        std::borrow::Cow::Owned(sorted)
    }
}

/// The clusters of overlapping holes among `sorted` (in ID order), ascending, one pass and no
/// allocation per cluster: a take on 20,000 holes walks them, it does not copy them.
fn clusters(sorted: &[Hole]) -> impl Iterator<Item = Cluster<'_>> {
    let mut next = 0;
    std::iter::from_fn(move || {
        let first = sorted.get(next)?;
        let (start, mut end) = (first.1.start(), first.1.end());
        let mut last = next + 1;
        while let Some((_, range)) = sorted.get(last) {
            if range.start() > end {
                break;
            }
            end = end.max(range.end());
            last += 1;
        }
        let cluster = Cluster {
            holes: &sorted[next..last],
            start,
            end,
        };
        next = last;
        Some(cluster)
    })
}

/// `holes` without the clusters of overlapping holes that hold one `left` says to leave: what
/// a take that leaves young holes to their pushers chooses among, or one that tries again
/// without the holes it lost a race for. Clusters go whole, never split: overlapping holes are
/// taken together, so that the IDs they share are handed out once.
pub(crate) fn without(holes: &[Hole], left: impl Fn(&Hole) -> bool) -> Vec<Hole> {
    let sorted = in_order(holes);
    clusters(&sorted)
        .filter(|cluster| !cluster.holes.iter().any(&left))
        .flat_map(|cluster| cluster.holes.iter().cloned())
        .collect()
}

/// What [`available_at_most`] finds in [`without`]`(holes, left)`, without building that list:
/// a take of whole blocks that the holes left to others do not cover (most takes under the
/// seeds' workload) copies nothing.
pub(crate) fn available_without(holes: &[Hole], top: i64, left: impl Fn(&Hole) -> bool) -> u64 {
    clusters(&in_order(holes))
        .filter(|cluster| !cluster.holes.iter().any(&left))
        .map(|cluster| available(&cluster, top))
        .sum()
}

/// The IDs of a cluster at or below `top`.
fn available(cluster: &Cluster<'_>, top: i64) -> u64 {
    if cluster.start > top {
        return 0;
    }
    cluster.start.abs_diff(cluster.end.min(top)) + 1
}

/// How many IDs `holes` hold at or below `top`, overlaps counted once.
pub(crate) fn available_at_most(holes: &[Hole], top: i64) -> u64 {
    clusters(&in_order(holes)).map(|c| available(&c, top)).sum()
}

/// How many IDs a take of `wanted` hands out from holes that hold `available` (at or below the
/// ceiling), with blocks of `unit` IDs: all it wants when they cover it; else the most that
/// leaves whole blocks to claim, so that no block is cut and no rest of one is left behind as
/// one more write (holes of 3,000 and a take of 10,000: 3,000 and 7 blocks; holes of 100 and a
/// take of 1,000: none, the holes wait for a take they cover).
pub(crate) fn hole_amount(available: u64, wanted: u64, unit: u64) -> u64 {
    if available >= wanted {
        return wanted;
    }
    let blocks = (wanted - available).div_ceil(unit.max(1));
    wanted.saturating_sub(blocks.saturating_mul(unit))
}

/// How many IDs at or below `top` the lowest holes hold that one take can delete together (at
/// most [`MAX_NODES`] nodes, whole clusters of overlapping holes): what a take at the end of a
/// category, with no fresh block left, can hand out at once.
pub(crate) fn available_in_one_take(holes: &[Hole], top: i64) -> u64 {
    let sorted = in_order(holes);
    let mut nodes = 0;
    eligible(&sorted, top)
        .take_while(|c| {
            nodes += c.holes.len();
            nodes <= MAX_NODES
        })
        .map(|c| available(&c, top))
        .sum()
}

/// The clusters of `sorted` with IDs at or below `top`, ascending (a prefix of them all).
fn eligible(sorted: &[Hole], top: i64) -> impl Iterator<Item = Cluster<'_>> {
    clusters(sorted).take_while(move |c| available(c, top) > 0)
}

/// Where a take of `wanted` IDs on contended holes starts among `holes`, drawn with `random`:
/// the holes at or below `top`, walked upwards, make consecutive groups that each cover the
/// take; with at least [`MIN_GROUPS`] of them, the first hole of one of the lowest `groups`
/// ([`MAX_GROUPS`] but for a take's first look, [`FIRST_LOOK_GROUPS`]), so that takes at once
/// choose apart; else `None` (the lowest hole). The relaxation of "lowest first" is bounded: a
/// take's holes come from the lowest `groups` groups.
pub(crate) fn group_start(
    holes: &[Hole],
    wanted: u64,
    top: i64,
    groups: u64,
    random: u32,
) -> Option<usize> {
    if wanted == 0 {
        return None;
    }
    let mut starts = Vec::new();
    let (mut index, mut covered) = (0, 0);
    let sorted = in_order(holes);
    for (i, cluster) in eligible(&sorted, top).enumerate() {
        if covered == 0 {
            index = i;
        }
        covered += available(&cluster, top);
        if covered >= wanted {
            starts.push(index);
            covered = 0;
            if starts.len() as u64 >= groups {
                break;
            }
        }
    }
    (starts.len() as u64 >= MIN_GROUPS).then(|| starts[random as usize % starts.len()])
}

/// The most hole nodes one take deletes (one `multi`, within ZooKeeper's request limit).
pub(crate) const MAX_NODES: usize = 1_000;

/// How many groups of holes, at least, make [`group_start`] spread takes.
pub(crate) const MIN_GROUPS: u64 = 2;

/// How many groups of holes [`group_start`] spreads takes over, at most.
pub(crate) const MAX_GROUPS: u64 = 64;

/// How many groups of holes [`group_start`] spreads a take over when it tries again after
/// losing a race at its first look (src/alloc/holes/take.rs): a herd of processes starting at
/// once (a job's tasks) outnumbers [`MAX_GROUPS`] many times over, and a take that finds no
/// hole claims fresh blocks, above every hole. Any hole below them serves lower IDs.
pub(crate) const FIRST_LOOK_GROUPS: u64 = u64::MAX;

/// The holes a take of `wanted` IDs claims among `holes`, none above `top`: `None` when they
/// hold fewer than `wanted` IDs at or below `top`. `start`: `None` takes the lowest holes;
/// `Some(k)` starts at the `k`-th (modulo their number) and goes on upwards, then from the
/// lowest. The take hands out the lowest `wanted` IDs of the holes it claims.
pub(crate) fn choose(
    holes: &[Hole],
    wanted: u64,
    top: i64,
    start: Option<usize>,
) -> Option<Choice> {
    if wanted == 0 {
        return None;
    }
    let sorted = in_order(holes);
    let first = match start {
        None => 0,
        Some(k) => match eligible(&sorted, top).count() {
            0 => return None,
            count => k % count,
        },
    };
    let mut chosen = Vec::new();
    let (mut covered, mut nodes_chosen) = (0, 0);
    let walk = eligible(&sorted, top)
        .skip(first)
        .chain(eligible(&sorted, top).take(first));
    for cluster in walk {
        covered += available(&cluster, top);
        nodes_chosen += cluster.holes.len();
        chosen.push(cluster);
        // One `multi` deletes them: beyond MAX_NODES, a take of fresh blocks serves better.
        if nodes_chosen > MAX_NODES {
            return None;
        }
        if covered >= wanted {
            break;
        }
    }
    if covered < wanted {
        return None;
    }
    let mut ids = RangeSet::new();
    let mut nodes = Vec::new();
    let mut overlapped = false;
    for cluster in chosen {
        overlapped |= cluster.holes.len() > 1;
        nodes.extend(cluster.holes.iter().map(|(name, _)| name.clone()));
        // Clusters are disjoint, so this cannot overlap.
        let whole = IdRange::new(cluster.start, cluster.end)?;
        ids.insert_all(&[whole]).ok()?;
    }
    let handed = ids.take_lowest_at_most(wanted, top);
    Some(Choice {
        nodes,
        handed,
        remainder: ids.ranges().to_vec(),
        overlapped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::hole_name;

    fn r(a: i64, b: i64) -> IdRange {
        IdRange::new(a, b).unwrap()
    }

    fn holes(ranges: &[(i64, i64)]) -> Vec<Hole> {
        ranges
            .iter()
            .map(|&(a, b)| (hole_name(&r(a, b)), r(a, b)))
            .collect()
    }

    #[test]
    fn available_without_counts_what_without_keeps() {
        // Overlapping holes (201..=300 and 250..=320) form one cluster, left whole or not at all.
        let h = holes(&[(1, 100), (201, 300), (250, 320), (401, 450), (1001, 2000)]);
        let lefts: [&dyn Fn(&Hole) -> bool; 4] = [
            &|_| false,
            &|(_, r)| r.start() == 250,
            &|(_, r)| r.start() == 1,
            &|(_, r)| r.start() > 300,
        ];
        for left in lefts {
            for top in [0, 100, 260, 430, 5000] {
                let kept = without(&h, left);
                assert_eq!(
                    available_without(&h, top, left),
                    available_at_most(&kept, top),
                    "top {top}, kept {kept:?}"
                );
            }
        }
        assert_eq!(available_without(&h, 5000, |(_, r)| r.start() == 250), 1150);
    }

    #[test]
    fn lowest_first_with_the_rest_of_the_last_hole_kept() {
        let h = holes(&[(201, 300), (1, 100), (101, 150)]);
        let c = choose(&h, 120, i64::MAX, None).unwrap();
        assert_eq!(c.handed, vec![r(1, 120)]);
        assert_eq!(
            c.nodes,
            vec![hole_name(&r(1, 100)), hole_name(&r(101, 150))]
        );
        assert_eq!(c.remainder, vec![r(121, 150)]);
        assert!(!c.overlapped);
    }

    #[test]
    fn too_few_ids_in_holes_chooses_none() {
        let h = holes(&[(1, 100), (201, 300)]);
        assert_eq!(choose(&h, 201, i64::MAX, None), None);
        assert_eq!(
            choose(&h, 200, 250, None),
            None,
            "50 of them are above the ceiling"
        );
        assert!(choose(&h, 150, 250, None).is_some());
    }

    #[test]
    fn a_start_goes_upwards_then_wraps_to_the_lowest() {
        let h = holes(&[(1, 10), (21, 30), (41, 50)]);
        let c = choose(&h, 15, i64::MAX, Some(2)).unwrap();
        assert_eq!(c.nodes, vec![hole_name(&r(41, 50)), hole_name(&r(1, 10))]);
        assert_eq!(c.handed, vec![r(1, 10), r(41, 45)]);
        assert_eq!(c.remainder, vec![r(46, 50)]);
        // Modulo the number of holes.
        assert_eq!(
            choose(&h, 5, i64::MAX, Some(7)).unwrap().handed,
            vec![r(21, 25)]
        );
    }

    #[test]
    fn contended_takes_spread_over_the_lowest_groups() {
        // 200 holes of 100 and takes of 1000: 20 groups of 10 holes.
        let many: Vec<(i64, i64)> = (0..200).map(|i| (i * 200 + 1, i * 200 + 100)).collect();
        let h = holes(&many);
        assert_eq!(group_start(&h, 1000, i64::MAX, MAX_GROUPS, 0), Some(0));
        assert_eq!(group_start(&h, 1000, i64::MAX, MAX_GROUPS, 7), Some(70));
        assert_eq!(
            group_start(&h, 1000, i64::MAX, MAX_GROUPS, 27),
            Some(70),
            "modulo 20 groups"
        );
        // 19 holes for takes of 10 holes: one group, lowest first.
        assert_eq!(group_start(&h[..19], 1000, i64::MAX, MAX_GROUPS, 7), None);
        assert_eq!(
            group_start(&holes(&[(1, 10), (16, 1000)]), 10, i64::MAX, MAX_GROUPS, 1),
            Some(1)
        );
        // More groups than the bound: the lowest 64.
        let small: Vec<(i64, i64)> = (0..1000).map(|i| (i * 10 + 1, i * 10 + 5)).collect();
        let start = group_start(&holes(&small), 5, i64::MAX, MAX_GROUPS, 999).unwrap();
        assert_eq!(start, 999 % 64);
    }

    /// A first look's retry spreads over every group, not the lowest 64: a herd of takes
    /// that starts at once outnumbers them (src/alloc/holes/take.rs).
    #[test]
    fn a_first_look_retry_spreads_over_every_group_without_the_holes_it_lost() {
        // 1,000 holes of 1,000 and takes of 10,000: 100 groups of 10 holes.
        let many: Vec<(i64, i64)> = (0..1000).map(|i| (i * 2000 + 1, i * 2000 + 1000)).collect();
        let h = holes(&many);
        assert_eq!(
            group_start(&h, 10_000, i64::MAX, MAX_GROUPS, 99),
            Some(10 * (99 % 64))
        );
        assert_eq!(
            group_start(&h, 10_000, i64::MAX, FIRST_LOOK_GROUPS, 99),
            Some(990)
        );
        // Without the 10 holes it lost (named), the groups start after them.
        let lost: std::collections::HashSet<String> =
            h[..10].iter().map(|(name, _)| name.clone()).collect();
        let kept = without(&h, |(name, _)| lost.contains(name));
        assert_eq!(kept.len(), 990);
        assert_eq!(kept[0], h[10]);
        let start = group_start(&kept, 10_000, i64::MAX, FIRST_LOOK_GROUPS, 98).unwrap();
        let c = choose(&kept, 10_000, i64::MAX, Some(start)).unwrap();
        assert_eq!(c.nodes.first(), Some(&h[990].0));
        assert!(c.nodes.iter().all(|name| !lost.contains(name)));
    }

    #[test]
    fn holes_leave_whole_blocks_to_claim() {
        assert_eq!(hole_amount(3_000, 10_000, 1_000), 3_000);
        assert_eq!(hole_amount(3_500, 10_000, 1_000), 3_000);
        assert_eq!(hole_amount(100, 1_000, 1_000), 0);
        assert_eq!(hole_amount(1_300, 1_000, 1_000), 1_000);
        assert_eq!(hole_amount(5, 10, 1_000), 0);
        assert_eq!(hole_amount(0, 10, 1), 0);
        assert_eq!(hole_amount(7, 10, 1), 7);
    }

    #[test]
    fn a_take_deletes_at_most_max_nodes_holes() {
        let tiny: Vec<(i64, i64)> = (0..1500).map(|i| (i * 2 + 1, i * 2 + 1)).collect();
        let h = holes(&tiny);
        assert_eq!(
            choose(&h, MAX_NODES as u64, i64::MAX, None)
                .unwrap()
                .nodes
                .len(),
            MAX_NODES
        );
        assert_eq!(choose(&h, MAX_NODES as u64 + 1, i64::MAX, None), None);
        // At the end of a category: what the lowest MAX_NODES of them hold.
        assert_eq!(available_in_one_take(&h, i64::MAX), MAX_NODES as u64);
        assert_eq!(available_in_one_take(&h, 20), 10);
    }

    #[test]
    fn overlapping_holes_are_taken_together_and_counted_once() {
        let h = holes(&[(1, 100), (50, 60), (90, 120)]);
        assert_eq!(available_at_most(&h, i64::MAX), 120);
        let c = choose(&h, 10, i64::MAX, None).unwrap();
        assert_eq!(c.nodes.len(), 3);
        assert_eq!(c.handed, vec![r(1, 10)]);
        assert_eq!(c.remainder, vec![r(11, 120)]);
        assert!(c.overlapped);
    }

    #[test]
    fn ids_above_the_ceiling_stay_in_the_remainder() {
        let h = holes(&[(1, 100)]);
        let c = choose(&h, 50, 50, None).unwrap();
        assert_eq!(c.handed, vec![r(1, 50)]);
        assert_eq!(c.remainder, vec![r(51, 100)]);
    }

    /// Found by review: leaving one of two overlapping holes out split them, and a take
    /// handed out the IDs they share while the other hole still held them.
    #[test]
    fn holes_left_out_take_the_holes_they_overlap_with_them() {
        let h = holes(&[(1001, 2000), (1501, 2500), (3001, 4000)]);
        let young = |(_, range): &Hole| *range == r(1501, 2500);
        assert_eq!(without(&h, young), holes(&[(3001, 4000)]));
        assert_eq!(without(&h, |_| false), h);
        let c = choose(&without(&h, young), 1000, i64::MAX, None).unwrap();
        assert_eq!(c.nodes, vec![hole_name(&r(3001, 4000))]);
    }
}
