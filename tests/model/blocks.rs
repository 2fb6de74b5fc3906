//! Block allocation (pool format 4: src/alloc/blocks/, src/alloc/holes/, docs/FORMAT.md "Hole
//! nodes"): the generation's sequence parent numbering claims, the pushed IDs kept as hole nodes
//! and taken by deleting them, the takers' ephemeral receipts, and generation moves. Blocks are
//! one ID each (unit 1): a take of one ID claims one block.

use crate::ids::{self, Ids};
use crate::pool::{Token, Zk};

/// The nodes of a pool in block allocation, and the pool node's `#blocks` line.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Blocks {
    /// `#blocks UNIT GENERATION BASE`: the generation fresh blocks are claimed in...
    pub generation: u8,
    /// ...and the first ID of its block 0.
    pub base: u8,
    /// The IDs of the hole nodes `zooid-holes/h-START-END`.
    pub holes: Ids,
    /// Per process: its receipts `m-TOKEN` (of takes of holes), one bit per token
    /// (ephemeral: gone with its session). Each write has its own receipt, so a late write of
    /// an older operation does not hide a newer one's.
    pub markers: Vec<u32>,
    /// The sequence parents `zooid-blocks-G`, by generation.
    pub generations: Vec<Generation>,
}

/// One generation's sequence parent.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Generation {
    /// The base its blocks are numbered from.
    pub base: u8,
    /// Its children in sequence order: the claiming take's token (so `cversion` is the length).
    pub claims: Vec<Token>,
    /// `sealed` (data version 1): claims fail.
    pub sealed: bool,
}

impl Blocks {
    /// A new pool in block allocation: generation 0 from ID 1, nothing claimed.
    pub fn new(processes: u8) -> Self {
        Blocks {
            generation: 0,
            base: 1,
            holes: 0,
            markers: vec![0; usize::from(processes)],
            generations: vec![Generation {
                base: 1,
                claims: Vec::new(),
                sealed: false,
            }],
        }
    }

    /// The generation the pool node names.
    pub fn current(&self) -> &Generation {
        &self.generations[usize::from(self.generation)]
    }

    /// The first ID no block of the current generation has claimed.
    pub fn frontier(&self) -> u8 {
        let g = self.current();
        g.base + g.claims.len() as u8
    }

    /// Moves the pool node's `#blocks` line to a new generation starting at `base`, creating
    /// its sequence parent (the model creates it with the move: issue 19's finding 3, a missing
    /// parent, is a stall, not a duplicate).
    pub fn move_to(&mut self, base: u8) {
        self.generation += 1;
        self.base = base;
        self.generations.push(Generation {
            base,
            claims: Vec::new(),
            sealed: false,
        });
    }
}

/// The claim `multi` of one block: `check(P/zooid-blocks-G, 0)`,
/// `create(P/zooid-blocks-G/TOKEN-, PERSISTENT_SEQUENTIAL)`. It does not check the pool node:
/// every pool write that narrows what a claim may hand out seals the generation first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Claim {
    pub incarnation: u8,
    pub version: u8,
    pub generation: u8,
    pub token: Token,
    /// The highest ID the take may hand out (the ceiling as planned on).
    pub top: u8,
}

/// What a claim got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Claimed {
    /// Block (ID) `id`; `rotate`: its number reached the generation's limit.
    Granted { id: u8, rotate: bool },
    /// The pool node changed: plan again.
    Changed,
    /// The generation is sealed: finish the move, then plan again.
    Sealed,
    /// No such node (the category is gone).
    Missing,
}

impl Claim {
    /// Applies the `multi` (all or nothing).
    pub fn apply(&self, zk: &mut Zk, rotate_at: u8) -> Claimed {
        let Some(b) = zk.blocks.as_mut() else {
            return Claimed::Missing;
        };
        let Some(g) = b.generations.get_mut(usize::from(self.generation)) else {
            return Claimed::Missing;
        };
        if g.sealed {
            return Claimed::Sealed;
        }
        g.claims.push(self.token);
        let seq = g.claims.len() as u8 - 1;
        Claimed::Granted {
            id: g.base + seq,
            rotate: seq + 1 >= rotate_at,
        }
    }

    /// After a lost reply, once the request has certainly landed or died: the claim's token
    /// among the generation's children. `None`: cannot be told (the node is gone or another
    /// incarnation).
    pub fn resolve(&self, zk: Option<&Zk>, rotate_at: u8) -> Option<Claimed> {
        let zk = zk.filter(|zk| zk.incarnation == self.incarnation)?;
        let g = zk
            .blocks
            .as_ref()?
            .generations
            .get(usize::from(self.generation))?;
        Some(match g.claims.iter().position(|&t| t == self.token) {
            Some(seq) => Claimed::Granted {
                id: g.base + seq as u8,
                rotate: seq as u8 + 1 >= rotate_at,
            },
            None => Claimed::Changed,
        })
    }
}

/// A push of a pool in block allocation: `create(P/zooid-holes/h-ID-ID)` for its IDs, no
/// receipt. It never conflicts (its IDs are held, so no hole has them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Push {
    pub incarnation: u8,
    pub token: Token,
    pub process: u8,
    pub ids: Ids,
    /// IDs of a claimed block the take did not hand out (above the ceiling).
    pub give_back: bool,
}

impl Push {
    /// Applies the push; false when the category is gone (or was restored as a single node).
    pub fn apply(&self, zk: Option<&mut Zk>) -> bool {
        let Some(b) = zk
            .filter(|zk| zk.incarnation == self.incarnation)
            .and_then(|zk| zk.blocks.as_mut())
        else {
            return false;
        };
        b.holes |= self.ids;
        true
    }

    /// After a lost reply, once the request has certainly landed or died: a push whose holes
    /// are all there applied; else the outcome cannot be told (`None`: it may never have
    /// landed, or another take may have taken them since).
    pub fn resolve(&self, zk: Option<&Zk>) -> Option<bool> {
        let zk = zk.filter(|zk| zk.incarnation == self.incarnation)?;
        let b = zk.blocks.as_ref()?;
        (b.holes & self.ids == self.ids).then_some(true)
    }
}

/// A take of holes: `check(P, version)`, `check(P/zooid-blocks-G, 0)` (its generation still
/// open), `delete(P/zooid-holes/h-...)` for each, `create(P/zooid-returned/m-TOKEN,
/// EPHEMERAL)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HoleTake {
    pub incarnation: u8,
    pub version: u8,
    pub generation: u8,
    pub token: Token,
    pub process: u8,
    pub ids: Ids,
}

/// What a take of holes came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Taken {
    Applied,
    /// The pool node changed, or another take deleted a hole first: plan again.
    Changed,
    /// The generation is sealed: finish the move, then plan again.
    Sealed,
    /// No such node (the category is gone).
    Missing,
}

impl HoleTake {
    /// Applies the `multi` (all or nothing).
    pub fn apply(&self, zk: &mut Zk) -> Taken {
        if zk.incarnation != self.incarnation {
            return Taken::Missing;
        }
        if zk.version != self.version {
            return Taken::Changed;
        }
        let Some(b) = zk.blocks.as_mut() else {
            return Taken::Missing;
        };
        match b.generations.get(usize::from(self.generation)) {
            None => return Taken::Missing,
            Some(g) if g.sealed => return Taken::Sealed,
            Some(_) => {}
        }
        if b.holes & self.ids != self.ids {
            return Taken::Changed;
        }
        b.holes &= !self.ids;
        b.markers[usize::from(self.process)] |= 1 << self.token;
        Taken::Applied
    }

    /// After a lost reply: the receipt tells while the session lives; once it expired, a take
    /// whose holes are all still there did not apply; else the outcome cannot be told (`None`).
    pub fn resolve(&self, zk: Option<&Zk>, expired: bool) -> Option<bool> {
        let zk = zk.filter(|zk| zk.incarnation == self.incarnation)?;
        let b = zk.blocks.as_ref()?;
        if b.markers[usize::from(self.process)] & (1 << self.token) != 0 {
            return Some(true);
        }
        if !expired {
            return Some(false);
        }
        (b.holes & self.ids == self.ids).then_some(false)
    }
}

/// The holes a take may hand out now: the hole nodes at or below the ceiling.
pub fn holes(zk: &Zk, last: u8) -> Ids {
    let holes = zk.blocks.as_ref().map_or(0, |b| b.holes);
    holes & ids::span(1, zk.top(last))
}
