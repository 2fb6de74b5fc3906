//! Issue 19, finding 8: a fresh-block claim whose reply was lost is never silently lost. The
//! claim applies, its reply is dropped, and before its author can look for it (the author's
//! reattach is refused meanwhile) the claim's generation is retired as a generation move does
//! it: sealed, the pool moved on to the next generation, then the children deleted (the parent
//! last, so a listing in between finds it without the claim's nodes). The take must then
//! report what its claim may have got: the blocks named where the claim's own nodes are found,
//! else a bound; every ID of the category is handed out, free, or reported leaked.

use zooid::CategorySpec;
use zooid_test_support as support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::{op, runtime, session_options, FaultProxy, ZkServer};
use zooid::{
    IdCategory, IdGeneratorService, IdRange, IdSet, Layout, LeakBound, ServiceOptions, ZooidError,
};
use zookeeper_client::Client;

fn r(start: i64, end: i64) -> IdRange {
    IdRange::new(start, end).unwrap()
}

/// The category's last ID: 1..=LAST, blocks of [`UNIT`].
const LAST: i64 = 1000;
const UNIT: u64 = 100;

/// How much of the claim's nodes the imitated retire deletes before the author lists them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Retired {
    /// Every child of the generation: the claim's nodes are not found.
    All,
    /// Every child but the claim's highest block: one of its nodes is found.
    AllButOne,
}

/// What the lost take came to, and what the test saw on the way.
struct Outcome {
    take: Result<IdSet, ZooidError>,
    /// The claim's blocks (from its nodes, listed by the test before deleting them).
    claimed: Vec<i64>,
    /// Every ID handed out, by the author and by the process that moved the generation.
    handed: Vec<IdSet>,
    free: BTreeSet<i64>,
    /// The author's `ids_leaked` figure.
    leaked_figure: u64,
}

/// Takes 100 IDs (block 0), then a take of 200 whose claim (blocks 1 and 2 of generation 0)
/// applies with its reply dropped; while the author cannot reattach, the test seals generation
/// 0, lets a second process move the pool to generation 1 (its take of one ID), and deletes
/// generation 0's children as `retire` does (all, or all but the claim's highest block).
fn lose_a_claim_to_a_retire(name: &str, layout: Layout, retired: Retired) -> Outcome {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    runtime().block_on(async {
        let author = Arc::new(
            IdGeneratorService::connect(
                &proxy.connect_string(),
                &session_options(10_000),
                ServiceOptions::default(),
            )
            .await
            .unwrap(),
        );
        let mover = IdGeneratorService::connect(
            &zk.connect_string(),
            &session_options(10_000),
            ServiceOptions::default(),
        )
        .await
        .unwrap();
        let direct = Client::connect(&zk.connect_string()).await.unwrap();
        let cat = IdCategory::new(name).unwrap();
        author
            .create_category(&cat, &CategorySpec::new(1, LAST).layout(layout))
            .await
            .unwrap();
        let first = author.take_ids(&cat, 100).await.unwrap();
        assert_eq!(first.ranges(), vec![r(1, 100)]);

        let parent = format!("{name}/zooid-blocks-0");
        proxy.refuse_reattach(true);
        proxy.drop_reply_to(op::MULTI, &parent);
        let take = {
            let (author, cat) = (Arc::clone(&author), cat.clone());
            tokio::spawn(async move { author.take_ids(&cat, 200).await })
        };
        let started = Instant::now();
        while proxy.dropped_replies() == 0 {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "no claim reply dropped"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }

        // The claim applied: blocks 1 and 2, under a token of their own.
        direct.sync(&parent).await.unwrap();
        let children = direct.list_children(&parent).await.unwrap();
        let seq = |child: &str| -> i64 { child.rsplit('-').next().unwrap().parse().unwrap() };
        let token = |child: &str| child.rsplit_once('-').unwrap().0.to_string();
        let block0 = children.iter().find(|c| seq(c) == 0).expect("block 0");
        let mut claim: Vec<&String> = children
            .iter()
            .filter(|c| token(c) != token(block0))
            .collect();
        claim.sort_by_key(|c| seq(c));
        let claimed: Vec<i64> = claim.iter().map(|c| seq(c)).collect();
        assert_eq!(claimed, vec![1, 2], "the claim applied: {children:?}");

        // A generation move: sealed, the pool moved to generation 1 (by another process, whose
        // claim meets the seal and finishes the move), then generation 0 retired, children
        // first.
        direct
            .set_data(&parent, b"sealed", Some(0))
            .await
            .expect("seal generation 0");
        let moved = mover.take_ids(&cat, 1).await.expect("the mover's take");
        let info = mover.pool_info(&cat).await.unwrap();
        assert_eq!(
            info.blocks.map(|b| (b.generation, b.base)),
            Some((1, 301)),
            "the pool moved to generation 1 above the 3 blocks claimed"
        );
        let keep = match retired {
            Retired::All => None,
            Retired::AllButOne => claim.last().copied(),
        };
        for child in &children {
            if Some(child) != keep {
                direct
                    .delete(&format!("{parent}/{child}"), None)
                    .await
                    .expect("retire: delete a child");
            }
        }
        let held_out = proxy.stats().refused_reattaches;
        proxy.refuse_reattach(false);
        let take = take.await.unwrap();
        // Guards: the reply was dropped once, and the author could not look before the retire.
        assert_eq!(proxy.dropped_replies(), 1);
        assert!(
            held_out > 0,
            "the author's reattach was refused during the retire"
        );

        let mut free = BTreeSet::new();
        let info = author.pool_info(&cat).await.unwrap();
        for range in info.free.iter().chain(&[r(info.high_water + 1, LAST)]) {
            free.extend(range.start()..=range.end().min(LAST));
        }
        eprintln!("{name}: take {take:?}; pool {info:?}");
        Outcome {
            take,
            claimed,
            handed: vec![first, moved],
            free,
            leaked_figure: author.stats().ids_leaked,
        }
    })
}

/// Every ID of 1..=LAST is handed out (once), free, named leaked, or within the bound the take
/// reported, no more of them than the bound says.
fn assert_accounted(outcome: &Outcome) -> (Vec<IdRange>, Option<LeakBound>) {
    let mut handed = outcome.handed.clone();
    let (named, bound) = match &outcome.take {
        Ok(set) => {
            handed.push(set.clone());
            (Vec::new(), None)
        }
        Err(ZooidError::OutcomeUnknown {
            ids, leaked_within, ..
        }) => (ids.clone(), *leaked_within),
        Err(err) => panic!("the take failed otherwise: {err}"),
    };
    let mut accounted = BTreeSet::new();
    for set in &handed {
        for range in set.ranges() {
            for id in range.start()..=range.end() {
                assert!(accounted.insert(id), "ID {id} handed out twice");
                assert!(!outcome.free.contains(&id), "ID {id} handed out and free");
            }
        }
    }
    accounted.extend(&outcome.free);
    for range in &named {
        for id in range.start()..=range.end() {
            assert!(
                accounted.insert(id),
                "ID {id} reported leaked and handed out or free"
            );
        }
    }
    let named_ids: u64 = named.iter().map(|r| r.len()).sum();
    assert_eq!(
        outcome.leaked_figure,
        named_ids + bound.map_or(0, |b| b.at_most),
        "the ids_leaked figure counts the IDs named and the most the bound allows"
    );
    let unnamed: Vec<i64> = (1..=LAST).filter(|id| !accounted.contains(id)).collect();
    let runs = runs(&unnamed);
    match bound {
        Some(LeakBound { at_most, within }) => {
            assert!(
                unnamed.iter().all(|id| within.contains(*id)),
                "IDs {runs:?} neither handed out, free nor named, and not all within {within}"
            );
            assert!(
                unnamed.len() as u64 <= at_most,
                "{} unnamed IDs ({runs:?}), the bound says at most {at_most}",
                unnamed.len()
            );
        }
        None => assert!(
            unnamed.is_empty(),
            "IDs {runs:?} neither handed out, free nor reported leaked (the claim got blocks {:?}; the take: {:?})",
            outcome.claimed,
            outcome.take
        ),
    }
    (named, bound)
}

/// `ids` (ascending) as runs of consecutive IDs.
fn runs(ids: &[i64]) -> Vec<IdRange> {
    let mut out: Vec<IdRange> = Vec::new();
    for &id in ids {
        match out.last_mut() {
            Some(last) if last.end() + 1 == id => *last = r(last.start(), id),
            _ => out.push(r(id, id)),
        }
    }
    out
}

/// The claim's nodes all deleted: the take is `OutcomeUnknown`, and its report bounds the
/// blocks it got (generation 0 ends below generation 1's base, 301). Before: the listing found
/// no node of the claim and read "not applied"; the take claimed again in generation 1 and
/// returned those IDs, and blocks 1 and 2 (101..=300) were lost without a word.
fn a_lost_claim_whose_nodes_were_retired_is_reported(name: &str, layout: Layout) {
    let outcome = lose_a_claim_to_a_retire(name, layout, Retired::All);
    let (named, bound) = assert_accounted(&outcome);
    assert!(
        named.is_empty(),
        "nothing of the claim was found: {named:?}"
    );
    assert_eq!(
        bound,
        Some(LeakBound {
            at_most: 200,
            within: r(1, 300)
        }),
        "up to two blocks within generation 0"
    );
    let message = outcome.take.unwrap_err().to_string();
    assert!(
        message.contains("up to 200 IDs within 1:300"),
        "the message names the bound: {message}"
    );
}

#[test]
fn a_lost_claim_whose_nodes_were_retired_is_reported_format_4() {
    a_lost_claim_whose_nodes_were_retired_is_reported(
        "/claims/retired4",
        Layout::HoleNodes { unit: UNIT },
    );
}

/// One of the claim's two nodes found (the retire stopped between them): that block is named
/// exactly (201..=300), and the other one bounded to the blocks next to it inside generation 0
/// (101..=300, at most 100 IDs). Before: "found blocks [2] for the claim", no ID named.
#[test]
fn a_lost_claim_partly_retired_names_the_blocks_found() {
    let outcome = lose_a_claim_to_a_retire(
        "/claims/partly",
        Layout::HoleNodes { unit: UNIT },
        Retired::AllButOne,
    );
    let (named, bound) = assert_accounted(&outcome);
    assert_eq!(named, vec![r(201, 300)], "the block found is named");
    assert_eq!(
        bound,
        Some(LeakBound {
            at_most: 100,
            within: r(101, 300)
        }),
        "the other block lies next to it"
    );
}
