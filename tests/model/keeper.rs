//! The keeper (src/keeper/raise.rs, docs/DURABILITY.md) and the faults around it: the durable
//! record, the first ceiling, raises (durable record first, then the fenced pool write at the
//! version read), repairs of a pool behind its record, crashes between those steps, a wipe of
//! ZooKeeper's data and `zooid restore`.

use crate::blocks::Blocks;
use crate::ids;
use crate::model::{Bug, State, ZooidModel};
use crate::pool::{Zk, KEEPER, RESTORE};

/// The durable record (outside ZooKeeper: survives a wipe). Only moves up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Record {
    pub ceiling: u8,
    /// The fence's generation (its token is the keeper's term; one keeper here).
    pub generation: u8,
}

/// The active keeper.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Keeper {
    pub phase: Phase,
    /// A raise of this term made durable whose pool write has not applied yet: its ceiling and
    /// the pool version it was planned at (`Tracked::pending`). Lost with a crash.
    pub pending: Option<(u8, u8)>,
}

/// Where the keeper is in an evaluation; each step is one atomic action, and a crash may come
/// between any two.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Phase {
    #[default]
    Idle,
    /// Repair of a pool in block allocation: seal its generation, then read the final frontier.
    Seal(Plan),
    /// Write the durable record next (the crash point `before-durable`).
    Durable(Plan),
    /// Only with `Bug::FirstCeilingRereads`: read the frontier again after the durable write.
    Reread(Plan),
    /// Write the pool next, fenced, at the version read (the crash point `after-durable`).
    Pool(Plan),
}

/// What the keeper read and means to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Plan {
    pub incarnation: u8,
    /// The pool version read; the fenced write expects it.
    pub version: u8,
    pub ceiling: u8,
    pub kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Durable record first, then the pool's ceiling; the fence's generation is the pool epoch.
    Raise { fence: u8 },
    /// The fix of finding 2: a pool without a ceiling first gets, by the fenced write at the
    /// version read and with no durable record yet, the ceiling `high water as read`. It hands
    /// out nothing new; in block allocation its generation is sealed first, so every claim
    /// planned before it fails (claims check that their generation is open, not the pool
    /// version); the next evaluation makes durable a ceiling at or above the frontier
    /// it then reads, which no claim can pass any more.
    Provisional,
    /// Remove the free IDs at or below `recorded`, epoch `generation`, new ceiling; in block
    /// allocation, move fresh blocks to a new generation from `max(base, recorded + 1,
    /// frontier)`.
    Repair {
        recorded: u8,
        generation: u8,
        frontier: u8,
    },
}

impl ZooidModel {
    /// What an evaluation of the pool as it is now would start, if anything.
    pub fn evaluation(&self, st: &State) -> Option<Phase> {
        let cfg = &self.cfg;
        let (last, reserve) = (cfg.last, cfg.reserve);
        let zk = st.zk.as_ref()?;
        let hw = zk.high_water(last);
        let record = st.record;
        let plan = |ceiling: u8, kind| Plan {
            incarnation: zk.incarnation,
            version: zk.version,
            ceiling: ceiling.min(last),
            kind,
        };
        // Our own raise whose pool write lost a race: finish it, nothing to repair.
        let ours = st.keeper.pending.is_some_and(|(ceiling, planned)| {
            record.is_some_and(|r| r.ceiling == ceiling && r.generation == zk.epoch)
                && zk.version >= planned
        });
        let behind = !ours
            && match (record, zk.ceiling) {
                (Some(r), Some(c)) => r.ceiling > c || r.generation > zk.epoch,
                (Some(_), None) => true,
                (None, _) => false,
            };
        if let (true, Some(r)) = (behind, record) {
            let generation = r.generation.max(zk.epoch) + 1;
            let ceiling = r.ceiling.max(zk.ceiling.unwrap_or(0)).max(hw) + reserve;
            let repair = |frontier| Kind::Repair {
                recorded: r.ceiling,
                generation,
                frontier,
            };
            return Some(match (&zk.blocks, cfg.bug) {
                (Some(_), Bug::None | Bug::FirstCeilingLags) => {
                    Phase::Seal(plan(ceiling, repair(0)))
                }
                (Some(b), Bug::RepairUnsealedFrontier) => {
                    Phase::Durable(plan(ceiling, repair(b.frontier())))
                }
                _ => Phase::Durable(plan(ceiling, repair(0))),
            });
        }
        let recorded = record.map(|r| r.ceiling);
        let raise = Kind::Raise { fence: zk.epoch };
        match zk.ceiling {
            // Finding 2 as built: durable high water + reserve, then the fenced write at the
            // version read, which claims made meanwhile do not change.
            None if matches!(cfg.bug, Bug::FirstCeilingLags | Bug::FirstCeilingRereads) => Some(
                Phase::Durable(plan((hw + reserve).max(recorded.unwrap_or(0)), raise)),
            ),
            None if zk.blocks.is_some() && cfg.bug != Bug::FirstCeilingUnsealed => {
                Some(Phase::Seal(plan(hw, Kind::Provisional)))
            }
            None => Some(Phase::Pool(plan(hw, Kind::Provisional))),
            Some(c) => {
                let unrecorded = recorded.is_none_or(|r| r < c);
                let unfinished = recorded.is_some_and(|r| r > c);
                let low = zk.available(last) < reserve && c < last;
                if !low && !unrecorded && !unfinished {
                    return None;
                }
                let mut target = (c + if low { reserve } else { 0 }).max(recorded.unwrap_or(0));
                if unrecorded {
                    // A ceiling with no record yet (the provisional one): cover the frontier.
                    target = target.max(hw);
                }
                Some(Phase::Durable(plan(target, raise)))
            }
        }
    }

    /// Starts an evaluation (reads the pool and, in block allocation, the frontier).
    pub fn keeper_eval(&self, st: &mut State) {
        if let Some(phase) = self.evaluation(st) {
            st.keeper.phase = phase;
            st.left.evals -= 1;
        }
    }

    /// Repair in block allocation: seals the generation (claims fail from now on), reads its
    /// final frontier; the new ceiling covers it. The first ceiling: seals the generation, then
    /// writes the pool.
    pub fn keeper_seal(&self, st: &mut State) {
        let Phase::Seal(mut plan) = st.keeper.phase else {
            return;
        };
        st.keeper.phase = Phase::Idle;
        let Some(zk) = st.zk.as_mut().filter(|zk| same(zk, &plan)) else {
            return;
        };
        let Some(b) = zk.blocks.as_mut() else {
            return;
        };
        let generation = usize::from(b.generation);
        b.generations[generation].sealed = true;
        if plan.kind == Kind::Provisional {
            st.keeper.phase = Phase::Pool(plan);
            return;
        }
        let frontier = b.frontier();
        if let Kind::Repair { frontier: f, .. } = &mut plan.kind {
            *f = frontier;
        }
        plan.ceiling = plan
            .ceiling
            .max((frontier - 1 + self.cfg.reserve).min(self.cfg.last));
        st.keeper.phase = Phase::Durable(plan);
    }

    /// The durable write: refused when it would lower the ceiling or the fence; skipped when
    /// the record already says it.
    pub fn keeper_durable(&self, st: &mut State) {
        let Phase::Durable(plan) = st.keeper.phase else {
            return;
        };
        let fence = match plan.kind {
            Kind::Raise { fence } => fence,
            Kind::Repair { generation, .. } => generation,
            Kind::Provisional => unreachable!("a provisional ceiling is not made durable"),
        };
        match st.record {
            Some(r) if plan.ceiling < r.ceiling || fence < r.generation => {
                st.keeper.phase = Phase::Idle;
                return;
            }
            Some(r) if plan.ceiling == r.ceiling && fence == r.generation => {}
            _ => {
                st.record = Some(Record {
                    ceiling: plan.ceiling,
                    generation: fence,
                });
                st.keeper.pending = Some((plan.ceiling, plan.version));
            }
        }
        let first = st.zk.as_ref().is_some_and(|zk| zk.ceiling.is_none());
        st.keeper.phase = match (self.cfg.bug, plan.kind) {
            (Bug::FirstCeilingRereads, Kind::Raise { .. }) if first => Phase::Reread(plan),
            _ => Phase::Pool(plan),
        };
    }

    /// `Bug::FirstCeilingRereads`: the frontier read again; past the record, the record again.
    pub fn keeper_reread(&self, st: &mut State) {
        let Phase::Reread(mut plan) = st.keeper.phase else {
            return;
        };
        let Some(zk) = st.zk.as_ref() else {
            st.keeper.phase = Phase::Idle;
            return;
        };
        let hw = zk.high_water(self.cfg.last);
        st.keeper.phase = if hw > plan.ceiling {
            plan.ceiling = (hw + self.cfg.reserve).min(self.cfg.last);
            Phase::Durable(plan)
        } else {
            Phase::Pool(plan)
        };
    }

    /// The fenced pool write at the version read; a conflict ends the evaluation (the next
    /// one re-reads).
    pub fn keeper_pool(&self, st: &mut State) {
        let Phase::Pool(plan) = st.keeper.phase else {
            return;
        };
        st.keeper.phase = Phase::Idle;
        let cfg = &self.cfg;
        let Some(zk) = st.zk.as_mut().filter(|zk| same(zk, &plan)) else {
            return;
        };
        zk.ceiling = Some(plan.ceiling);
        if let Kind::Repair {
            recorded,
            generation,
            frontier,
        } = plan.kind
        {
            let removed = zk.free & ids::span(1, recorded);
            zk.free &= !removed;
            st.ghost.leaked |= removed;
            zk.epoch = generation;
            if let Some(b) = zk.blocks.as_mut() {
                // The hole nodes at or below the record are given up too (a rollback may have
                // brought back holes taken since).
                let given_up = b.holes & ids::span(1, recorded);
                b.holes &= !given_up;
                st.ghost.leaked |= given_up;
                let floor = b.base.max(recorded + 1);
                let base = match cfg.bug {
                    // Finding 1 as built (`Pool::clear_through`): the frontier is ignored.
                    Bug::RepairIgnoresFrontier => floor,
                    _ => floor.max(frontier),
                }
                .min(cfg.last + 1);
                // The old generation's unclaimed IDs below the new base are given up (the
                // repair's report names the new base).
                st.ghost.leaked |= ids::span(b.frontier(), base - 1);
                b.move_to(base);
            }
            st.ghost.repaired = true;
        }
        zk.write(KEEPER, cfg.log_len);
        st.keeper.pending = None;
    }

    /// The keeper process dies mid-evaluation; the next one starts afresh (a new term).
    pub fn keeper_crash(&self, st: &mut State) {
        st.keeper = Keeper::default();
        st.left.crashes -= 1;
    }

    /// ZooKeeper loses all its data: the category, every session (so every request in flight
    /// dies and every ephemeral marker is gone), the keeper's leadership.
    pub fn wipe(&self, st: &mut State) {
        st.zk = None;
        for proc in &mut st.procs {
            proc.net = None;
            proc.expired = true;
        }
        st.keeper = Keeper::default();
        st.left.wipes -= 1;
    }

    /// `zooid restore`: the record's generation is bumped durably, then the category is
    /// created as a single-node pool with ceiling = the record's, every ID above it free, epoch
    /// = the new generation. The IDs at or below the ceiling that nobody holds are leaked (the
    /// restore says so).
    pub fn restore(&self, st: &mut State) {
        let Some(r) = st.record else {
            return;
        };
        let generation = r.generation + 1;
        st.record = Some(Record {
            ceiling: r.ceiling,
            generation,
        });
        st.created += 1;
        st.zk = Some(Zk {
            incarnation: st.created,
            version: 0,
            epoch: generation,
            ceiling: Some(r.ceiling),
            free: ids::span(r.ceiling + 1, self.cfg.last),
            log: vec![(0, RESTORE)],
            blocks: None,
        });
        let in_use = st.procs.iter().fold(0, |s, p| s | p.held | p.busy);
        st.ghost.leaked |= ids::span(1, r.ceiling) & !in_use;
        st.ghost.restored = true;
    }

    /// The category as created.
    pub fn created(&self) -> Zk {
        let cfg = &self.cfg;
        Zk {
            incarnation: 0,
            version: 0,
            epoch: 0,
            ceiling: cfg.ceiling,
            free: if cfg.blocks {
                0
            } else {
                ids::span(1, cfg.last)
            },
            log: vec![(0, RESTORE)],
            blocks: cfg.blocks.then(|| Blocks::new(cfg.procs)),
        }
    }
}

/// Whether the node is still the one, at the version, the plan read.
fn same(zk: &Zk, plan: &Plan) -> bool {
    zk.incarnation == plan.incarnation && zk.version == plan.version
}
