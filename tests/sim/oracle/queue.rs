//! The work queue's invariants. Items are numbered by the oracle (`item-<k>` is the data of
//! the k-th put), so a claim names the put it came from.
//!
//! - A claim never returns an item whose put failed for certain (an error other than
//!   `OutcomeUnknown`), nor data no put wrote.
//! - An item has one node: the same data under two item names is a put that landed twice.
//! - No item has two live claims: when a claim returns an item, no other claim of it may be
//!   held on a session still alive on the servers, unless that claim is being completed or
//!   released (or its process crashed and dropped it).
//! - A completed item is never delivered again: a claim that started after a complete of its
//!   item returned `Ok` is a violation.
//! - At the end (quiet, then a fresh consumer drains the queue): every put reported done (`Ok`)
//!   was completed (or its complete ended in doubt). A put in doubt (`OutcomeUnknown`, or cut
//!   short by a crash) may or may not have landed: counted, never a violation.

use std::collections::{BTreeMap, BTreeSet};

use tokio::time::Instant;
use zooid::ZooidError;

/// What a put reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PutFate {
    Running,
    Done(String),
    Doubt,
    Failed(String),
}

/// A claim a process holds.
#[derive(Clone, Debug)]
struct Hold {
    p: usize,
    session: i64,
    /// Its complete or release has started (or its process crashed, dropping it).
    finishing: bool,
    /// Its complete has started.
    completing: bool,
}

#[derive(Default)]
pub struct Oracle {
    next_item: u64,
    pub puts: BTreeMap<u64, PutFate>,
    /// The put each process has in flight.
    putting: BTreeMap<usize, u64>,
    /// The item names each item was seen under.
    names: BTreeMap<u64, BTreeSet<String>>,
    holds: BTreeMap<u64, Vec<Hold>>,
    /// When a complete of the item first returned `Ok`.
    completed_at: BTreeMap<u64, Instant>,
    pub completes: BTreeMap<u64, u32>,
    /// Items whose complete ended in doubt (completed, or handed out again).
    complete_doubt: BTreeSet<u64>,
    pub claims: u64,
    pub releases: u64,
    pub drained: u64,
    pub violations: Vec<String>,
}

pub fn data_of(k: u64) -> Vec<u8> {
    format!("item-{k}").into_bytes()
}

fn item_of(data: &[u8]) -> Option<u64> {
    std::str::from_utf8(data)
        .ok()?
        .strip_prefix("item-")?
        .parse()
        .ok()
}

impl Oracle {
    /// Process `p` starts a put: its item number.
    pub fn put_started(&mut self, p: usize) -> u64 {
        self.next_item += 1;
        let k = self.next_item;
        self.puts.insert(k, PutFate::Running);
        self.putting.insert(p, k);
        k
    }

    pub fn put_ended(&mut self, p: usize, k: u64, result: &Result<String, ZooidError>) {
        self.putting.remove(&p);
        let fate = match result {
            Ok(name) => PutFate::Done(name.clone()),
            Err(ZooidError::OutcomeUnknown { .. }) => PutFate::Doubt,
            Err(err) => PutFate::Failed(err.kind().to_string()),
        };
        self.puts.insert(k, fate);
    }

    /// A claim of process `p` (started at `started`, on session `session`) returned `data`
    /// under the item name `name`. `alive` tells whether a session lives on the servers.
    pub fn claimed(
        &mut self,
        p: usize,
        data: &[u8],
        name: &str,
        session: i64,
        started: Instant,
        alive: impl Fn(i64) -> bool,
    ) -> Option<u64> {
        self.claims += 1;
        let Some(k) = item_of(data) else {
            self.violations.push(format!(
                "p{p} claimed {name} whose data {:?} no put wrote",
                String::from_utf8_lossy(data)
            ));
            return None;
        };
        match self.puts.get(&k) {
            None => self.violations.push(format!(
                "p{p} claimed item {k} ({name}) that no put started"
            )),
            Some(PutFate::Failed(why)) => self.violations.push(format!(
                "p{p} claimed item {k} ({name}) whose put failed for certain ({why})"
            )),
            _ => {}
        }
        let names = self.names.entry(k).or_default();
        names.insert(name.to_string());
        if names.len() > 1 {
            self.violations.push(format!(
                "item {k} is in the queue twice: {names:?} (put twice)"
            ));
        }
        if let Some(done) = self.completed_at.get(&k) {
            if *done < started {
                self.violations.push(format!(
                    "p{p} claimed item {k} ({name}) after a complete of it had returned Ok"
                ));
            }
        }
        let holds = self.holds.entry(k).or_default();
        for h in holds.iter() {
            if !h.finishing && alive(h.session) {
                self.violations.push(format!(
                    "item {k} ({name}) has two live claims: p{} (s{:x}) and p{p} (s{session:x})",
                    h.p, h.session
                ));
            }
        }
        holds.push(Hold {
            p,
            session,
            finishing: false,
            completing: false,
        });
        Some(k)
    }

    /// Process `p` starts to complete (or release) its claim of item `k`.
    pub fn finishing(&mut self, p: usize, k: u64, complete: bool) {
        for h in self.holds.entry(k).or_default().iter_mut() {
            if h.p == p {
                h.finishing = true;
                h.completing = complete;
            }
        }
    }

    /// Process `p`'s complete (or release) of item `k` returned `result`.
    pub fn finished(&mut self, p: usize, k: u64, complete: bool, result: &Result<(), ZooidError>) {
        if let Some(holds) = self.holds.get_mut(&k) {
            holds.retain(|h| h.p != p);
        }
        if !complete {
            self.releases += 1;
            return;
        }
        match result {
            Ok(()) => {
                *self.completes.entry(k).or_default() += 1;
                self.completed_at.entry(k).or_insert_with(Instant::now);
            }
            Err(ZooidError::Timeout { .. }) => {
                self.complete_doubt.insert(k);
            }
            Err(_) => {}
        }
    }

    /// Process `p` crashed: its claims are dropped (released in the background, or lost with
    /// the session); its complete and its put in flight are in doubt.
    pub fn crashed(&mut self, p: usize) {
        for (k, holds) in self.holds.iter_mut() {
            for h in holds.iter_mut().filter(|h| h.p == p) {
                h.finishing = true;
                if h.completing {
                    self.complete_doubt.insert(*k);
                }
            }
        }
        if let Some(k) = self.putting.remove(&p) {
            self.puts.insert(k, PutFate::Doubt);
        }
    }

    /// Puts in doubt, and how many of them landed (their item was claimed).
    pub fn doubt(&self) -> (usize, usize) {
        let doubt: Vec<u64> = self
            .puts
            .iter()
            .filter(|(_, f)| **f == PutFate::Doubt)
            .map(|(k, _)| *k)
            .collect();
        let landed = doubt.iter().filter(|k| self.names.contains_key(k)).count();
        (doubt.len(), landed)
    }

    /// At the end, after the drain: every put reported done was completed.
    pub fn check_end(&mut self) {
        let mut lost = Vec::new();
        for (k, fate) in &self.puts {
            if let PutFate::Done(name) = fate {
                if !self.completes.contains_key(k) && !self.complete_doubt.contains(k) {
                    lost.push(format!("item {k} ({name})"));
                }
            }
        }
        if !lost.is_empty() {
            self.violations.push(format!(
                "{} puts reported done never reached a consumer: {:?}",
                lost.len(),
                &lost[..lost.len().min(5)]
            ));
        }
    }
}
