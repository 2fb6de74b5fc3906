//! One category's evaluation: metrics, and the raise and repair protocols.
//!
//! Raise: (1) the durable record gets the new ceiling and is made durable; (2) the pool gets it
//! by a fenced write at the version read. A crash between leaves the record ahead of the pool,
//! which only leaks IDs; the pool is never ahead of the record.

use tokio::time::Instant;

use super::Active;
use crate::alloc::blocks::{generations, repair};
use crate::alloc::fenced::{self, Change, Planned};
use crate::durable::{Fence, Record};
use crate::error::{Result, ZooidError};
use crate::format::{sequence_parent, Pool};
use crate::recipes::election::FencedOp;
use crate::zk::{Failure, ReadOn, Verdict, ZooKeeperExt};

/// How many times one evaluation re-reads after a version conflict.
const MAX_CONFLICTS: usize = 8;

/// Aborts the process at `point` when `ZOOID_KEEPER_CRASH_AT` names it (crash tests).
fn crash_point(point: &str) {
    if std::env::var("ZOOID_KEEPER_CRASH_AT").as_deref() == Ok(point) {
        eprintln!("zooid keeper: crashing at {point} (ZOOID_KEEPER_CRASH_AT)");
        std::process::abort();
    }
}

/// Fails the evaluation once at `point`, when `ZOOID_KEEPER_FAIL_AT` names it (fault tests: a
/// write that applied and reported an error).
fn failure_point(point: &str) -> Result<()> {
    static FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if std::env::var("ZOOID_KEEPER_FAIL_AT").as_deref() == Ok(point)
        && !FAILED.swap(true, std::sync::atomic::Ordering::SeqCst)
    {
        return Err(ZooidError::Store {
            path: point.to_string(),
            reason: "injected failure after the write applied (ZOOID_KEEPER_FAIL_AT)".into(),
        });
    }
    Ok(())
}

/// What the evaluation wrote, if anything.
enum Wrote {
    Nothing,
    Conflict,
    Done,
}

impl Active<'_> {
    /// Evaluates a category: reports its metrics, and raises or repairs its ceiling if needed.
    pub(crate) async fn evaluate(&mut self, path: &str) -> Result<()> {
        for _ in 0..MAX_CONFLICTS {
            match self.evaluate_once(path).await? {
                Wrote::Conflict => continue,
                Wrote::Nothing | Wrote::Done => return Ok(()),
            }
        }
        Ok(())
    }

    async fn evaluate_once(&mut self, path: &str) -> Result<Wrote> {
        // The session and connection the evaluation reads on: its pool write goes on them only.
        // After a wipe (or a rollback) and a restore, the pool may be back at the version read
        // with other contents, and a write planned on the old one must not apply to it.
        let read_on = self.zk.read_on();
        let (data, stat) = match self.zk.get(read_on.generation, path).await {
            Ok(got) => got,
            Err(Failure {
                verdict: Verdict::NoNode,
                ..
            }) => {
                return Err(ZooidError::NotFound {
                    category: path.to_string(),
                })
            }
            Err(e) => {
                return Err(ZooidError::ConnectionLost {
                    category: path.to_string(),
                    reason: e.to_string(),
                })
            }
        };
        let pool = Pool::parse(path, &data)?;
        if let Some(blocks) = pool.blocks() {
            // A generation whose sequence parent is missing (a move stopped before creating it)
            // is not a deleted category: create it, then evaluate on what is there.
            if generations::frontier_if_numbered(self.zk, path, &blocks)
                .await?
                .is_none()
            {
                if generations::ensure_parent_at(
                    self.zk,
                    path,
                    blocks.generation,
                    stat.version,
                    read_on,
                )
                .await?
                {
                    (self.options.report)(&format!(
                        "category {path}: created the missing sequence parent of block generation {}",
                        blocks.generation
                    ));
                }
                return Ok(Wrote::Conflict);
            }
        }
        // In block allocation the node alone does not tell what was claimed since.
        let usage = crate::alloc::blocks::usage(Some(self.zk), path, &pool).await?;
        let sizing = self.options.sizing;
        let now = Instant::now();
        let used = pool.bounds().len() - usage.free;
        let tracked = self.tracked.entry(path.to_string()).or_default();
        let rate = tracked.rate.observe(now, used, sizing.alpha);
        // Never more than a share of what is left: a wipe costs at most that share.
        let left = pool.bounds().end().saturating_sub(usage.high_water).max(0) as u64;
        let wanted = sizing.reserve(rate);
        let reserve = sizing.within_left(wanted, left);
        let capped = reserve < wanted;
        let headroom = usage.available;
        let report_due = tracked
            .last_report
            .is_none_or(|t| now.duration_since(t) >= self.options.tick);
        if report_due {
            tracked.last_report = Some(now);
            let since = tracked.last_durable.map_or("never".to_string(), |t| {
                format!("{:.1}s", now.duration_since(t).as_secs_f64())
            });
            (self.options.report)(&format!(
                "metrics category={path} headroom={headroom} ceiling={} reserve={reserve} take_rate={rate:.1}/s since_durable_write={since}",
                pool.ceiling().map_or("none".to_string(), |c| c.to_string())
            ));
            if capped {
                (self.options.report)(&format!(
                    "category {path}: reserve capped at {reserve} (the take rate asks for {wanted}; {left} IDs are left, and a reserve is at most {:.0}% of them, which is what a wipe of ZooKeeper may cost)",
                    sizing.left_share * 100.0
                ));
            }
        }
        let record = self.durable.read(path).await?;
        let end = pool.bounds().end();
        let fence = Fence {
            generation: pool.epoch(),
            token: self.token,
        };
        // Our own raise whose pool write lost a race with takes: finish it, nothing to repair.
        let pending = self.tracked.get(path).and_then(|t| t.pending);
        let ours = record.as_ref().is_some_and(|r| {
            r.fence == fence
                && pending.is_some_and(|(ceiling, planned)| {
                    ceiling == r.ceiling && pool.version_at(stat.version) >= planned
                })
        });
        let Some(c) = pool.ceiling() else {
            // A pool without a ceiling hands out any ID, so no record may be written while it
            // has none (a restore from one would start below IDs it handed out after the record
            // was written: a keeper stalled after its durable write, or a take that finished
            // the move of a generation the keeper sealed, leaves such a pool). Its first ceiling
            // goes to the pool first and nothing is made durable yet; this holds for a repair
            // too (a pool without a ceiling behind a record: a rollback to before its first
            // ceiling), which follows on the pool that hands out nothing more.
            return self
                .provisional(path, &pool, stat.version, read_on, usage.high_water)
                .await;
        };
        let behind = !ours
            && record
                .as_ref()
                .is_some_and(|r| r.ceiling > c || r.fence.generation > pool.epoch());
        if let (true, Some(record)) = (behind, record.as_ref()) {
            return self
                .repair(path, &pool, stat.version, read_on, record, reserve)
                .await;
        }
        let recorded = record.as_ref().map(|r| r.ceiling);
        let unrecorded = recorded.is_none_or(|r| r < c);
        let unfinished = recorded.is_some_and(|r| r > c);
        let low = headroom < sizing.low_water_mark(reserve) && c < end;
        if !low && !unrecorded && !unfinished {
            return Ok(Wrote::Nothing);
        }
        let add = if low {
            reserve.saturating_sub(headroom)
        } else {
            0
        };
        let add = add.min(i64::MAX as u64) as i64;
        let target = c
            .saturating_add(add)
            .min(end)
            .max(c)
            .max(recorded.unwrap_or(c));
        // A ceiling below what was handed out (the provisional one, put on a pool that had
        // none): the record covers everything handed out, whatever record there was before.
        // Otherwise the high water is at or below `c` and this changes nothing.
        let target = target.max(usage.high_water.saturating_add(add).min(end));
        let change = Change::Ceiling;
        self.raise(
            path,
            &pool,
            stat.version,
            read_on,
            record.as_ref(),
            target,
            fence,
            change,
            None,
        )
        .await
    }

    /// The first ceiling of a pool without one: a fenced write, at the version read, of ceiling
    /// 0 (nothing more is handed out, as from a category created with `--ceiling 0`), with no
    /// durable record. In block allocation the pool's generation is sealed first and the write
    /// checks that it still is: claims of fresh blocks check that their generation is open, not
    /// the pool node, so none planned before it applies after it, and none after it hands out
    /// anything. The next evaluation (at once) finds a ceiling without
    /// a record and makes durable, first, a ceiling above everything handed out (`high_water`
    /// as read then, which no take can pass any more).
    async fn provisional(
        &mut self,
        path: &str,
        pool: &Pool,
        version: i32,
        read_on: ReadOn,
        high_water: i64,
    ) -> Result<Wrote> {
        if !self.zk.still_on(read_on) {
            return Ok(Wrote::Conflict);
        }
        let write = match fenced::plan_raise(
            self.zk,
            path,
            pool,
            version,
            read_on,
            0,
            Change::Ceiling,
            None,
        )
        .await?
        {
            Planned::Write(write) => write,
            Planned::Again { .. } => return Ok(Wrote::Conflict),
        };
        let mut ops = vec![FencedOp::SetData {
            path: path.to_string(),
            data: write.data.clone(),
            version: Some(write.version),
        }];
        #[cfg(not(zooid_mutant = "first_ceiling_unsealed"))]
        if let Some(layout) = pool.blocks() {
            let sealed = repair::sealed_frontier(self.zk, path, &layout, version, read_on).await?;
            if sealed.is_none() {
                return Ok(Wrote::Conflict); // The pool moved on: read it again.
            }
            // Sealed once: `generations::seal` writes it at data version 0.
            ops.push(FencedOp::Check {
                path: sequence_parent(path, layout.generation),
                version: 1,
            });
        }
        if !self.zk.still_on(read_on) {
            return Ok(Wrote::Conflict);
        }
        match self.election.fenced_on(read_on, &ops).await {
            Ok(_) => {}
            Err(ZooidError::Store { reason, .. }) => {
                tracing::debug!(category = path, %reason, "keeper: provisional ceiling did not apply; re-reading");
                return Ok(Wrote::Conflict);
            }
            Err(other) => return Err(other),
        }
        (self.options.report)(&format!(
            "provisional category={path} ceiling=0: the pool had no ceiling (high water {high_water} when read); nothing more is handed out until a record covers what was"
        ));
        // Read again: the record and the real ceiling follow now.
        Ok(Wrote::Conflict)
    }

    /// The raise protocol: durable first, then the fenced versioned pool write (`change`, with
    /// the ceiling set). `repair`: the recorded ceiling and the new epoch, for a repair.
    #[allow(clippy::too_many_arguments)]
    async fn raise(
        &mut self,
        path: &str,
        pool: &Pool,
        version: i32,
        read_on: ReadOn,
        record: Option<&Record>,
        ceiling: i64,
        fence: Fence,
        change: Change,
        repair: Option<(i64, u64)>,
    ) -> Result<Wrote> {
        if !self.zk.still_on(read_on) {
            return Ok(Wrote::Conflict); // Read again before anything is made durable.
        }
        crash_point("before-durable");
        let durable_needed = record.is_none_or(|r| r.ceiling < ceiling || r.fence < fence);
        if durable_needed {
            let new =
                Record::new(path, pool.bounds(), ceiling, fence).with_layout(match pool.blocks() {
                    None => crate::alloc::Layout::SingleNode,
                    Some(b) => crate::alloc::Layout::HoleNodes { unit: b.unit },
                });
            // Pending from before the write: one that applied but reported an error (a failed
            // directory sync after the rename, a timeout after the PUT) is still ours to finish,
            // not a rollback to repair. One that did not apply leaves a record without this
            // ceiling, which `ours` requires.
            if let Some(t) = self.tracked.get_mut(path) {
                t.pending = repair
                    .is_none()
                    .then_some((ceiling, pool.version_at(version)));
            }
            self.durable.write(&new).await?;
            failure_point("after-durable-write")?;
            if let Some(t) = self.tracked.get_mut(path) {
                t.last_durable = Some(Instant::now());
            }
            (self.options.report)(&format!(
                "durable category={path} ceiling={ceiling} (fence {fence}); writing the pool"
            ));
        }
        crash_point("after-durable");
        let epoch = repair.map(|(_, generation)| generation);
        let write = match fenced::plan_raise(
            self.zk, path, pool, version, read_on, ceiling, change, epoch,
        )
        .await?
        {
            Planned::Write(write) => write,
            Planned::Again { claimed_to } => {
                if let Some(claimed_to) = claimed_to {
                    (self.options.report)(&format!(
                        "category {path}: blocks up to {claimed_to} were claimed while ceiling {ceiling} was made durable; planning again"
                    ));
                }
                return Ok(Wrote::Conflict);
            }
        };
        let ops = [FencedOp::SetData {
            path: path.to_string(),
            data: write.data.clone(),
            version: Some(write.version),
        }];
        if !self.zk.still_on(read_on) {
            // Read again on the session and connection in use now, and plan again.
            return Ok(Wrote::Conflict);
        }
        match self.election.fenced_on(read_on, &ops).await {
            Ok(_) => {}
            Err(ZooidError::Store { reason, .. }) => {
                // A version conflict (takes moved the pool) or an unknown outcome: re-read.
                tracing::debug!(category = path, %reason, "keeper: pool write did not apply; re-reading");
                if repair.is_some() {
                    (self.options.report)(&format!(
                        "repair in doubt category={path}: its pool write did not report success ({reason}); if it applied, the IDs its `repair pending` line names are leaked and no REPAIR line follows; if not, the next evaluation repairs again"
                    ));
                }
                return Ok(Wrote::Conflict);
            }
            Err(other) => return Err(other),
        }
        crash_point("after-zookeeper");
        if let Some(t) = self.tracked.get_mut(path) {
            t.pending = None;
        }
        if let Err(err) = fenced::finish(self.zk, &write).await {
            // A take or the next evaluation creates the sequence parent.
            (self.options.report)(&format!(
                "category {path}: moved to block generation {:?}; its sequence parent is not created yet: {err}",
                write.moved_to
            ));
        }
        let (old, removed, moved_to, next) =
            (pool.ceiling(), write.removed, write.moved_to, &write.next);
        if repair.is_some() {
            // The removed IDs are not demand.
            if let Some(t) = self.tracked.get_mut(path) {
                t.rate.reset();
            }
        }
        let blocks = match (moved_to, next.blocks()) {
            (Some(g), Some(b)) => format!(", fresh blocks from {} (generation {g})", b.base),
            _ => String::new(),
        };
        match repair {
            Some((recorded, generation)) => (self.options.report)(&format!(
                "REPAIR category={path}: the pool (ceiling {}, epoch {}) was behind the durable record (ceiling {recorded}); removed {removed} free IDs at or below {recorded}, epoch now {generation}, ceiling raised to {ceiling}{blocks}. Either ZooKeeper came back from an older state, or a keeper crashed between the durable write and the pool write",
                old.map_or("none".into(), |c| c.to_string()),
                pool.epoch()
            )),
            None => (self.options.report)(&format!(
                "raised category={path} ceiling {} -> {ceiling} (durable first, fence {fence}){blocks}",
                old.map_or("none".into(), |c| c.to_string())
            )),
        }
        Ok(Wrote::Done)
    }

    /// A pool behind its durable record: remove its free IDs at or below the recorded ceiling,
    /// bump the generation (tokens of an older history are then below ours), raise.
    async fn repair(
        &mut self,
        path: &str,
        pool: &Pool,
        version: i32,
        read_on: ReadOn,
        record: &Record,
        reserve: u64,
    ) -> Result<Wrote> {
        // Only the leader, and only on the pool as read: a fenced check before bumping anything.
        if !self.zk.still_on(read_on) {
            return Ok(Wrote::Conflict);
        }
        match self
            .election
            .fenced_on(
                read_on,
                &[FencedOp::Check {
                    path: path.to_string(),
                    version,
                }],
            )
            .await
        {
            Ok(_) => {}
            Err(ZooidError::Store { .. }) => return Ok(Wrote::Conflict),
            Err(other) => return Err(other),
        }
        let generation = record.fence.generation.max(pool.epoch()) + 1;
        if generation > crate::format::MAX_EPOCH {
            return Err(ZooidError::Store {
                path: path.to_string(),
                reason: format!(
                    "a repair would raise the epoch to {generation}, above the highest a pool node may carry ({})",
                    crate::format::MAX_EPOCH
                ),
            });
        }
        // The free IDs it gives up are named before its first write (the hole nodes given up
        // while the move is planned, then the pool write): whatever happens after a write
        // leaves (its reply lost, this process killed before the REPAIR line), the leak is on
        // record, since a later evaluation that finds the pool level with the record has
        // nothing left to report. If no write applies, the next evaluation repairs again and
        // names them again.
        (self.options.report)(&format!(
            "repair pending category={path}: the pool (ceiling {}, epoch {}) is behind the durable record (ceiling {}); its free IDs at or below {}, epoch {generation}, are given up from now on: leaked if a write of this repair applies (the report of the repair that follows confirms it and counts them)",
            pool.ceiling().map_or("none".into(), |c| c.to_string()),
            pool.epoch(),
            record.ceiling,
            record.ceiling
        ));
        let (change, high_water) = if pool.blocks().is_some() {
            // The move (sealed generation, holes given up) is laid out after the durable write.
            let high_water = crate::alloc::blocks::usage(Some(self.zk), path, pool)
                .await?
                .high_water;
            let change = Change::Move {
                cleared: Some((record.ceiling, generation)),
            };
            (change, high_water)
        } else {
            let change = Change::Clear {
                through: record.ceiling,
            };
            (change, pool.high_water())
        };
        let base = record
            .ceiling
            .max(pool.ceiling().unwrap_or(0))
            .max(high_water);
        let ceiling = base
            .saturating_add(reserve.min(i64::MAX as u64) as i64)
            .min(pool.bounds().end());
        let fence = Fence {
            generation,
            token: self.token,
        };
        self.raise(
            path,
            pool,
            version,
            read_on,
            Some(record),
            ceiling,
            fence,
            change,
            Some((record.ceiling, generation)),
        )
        .await
    }
}
