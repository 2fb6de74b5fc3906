//! Moving a category to a block layout in place (`zooid migrate`), while processes keep taking
//! and pushing: a single-node pool (formats 1 and 2, or a seed-style node) to hole nodes
//! (format 4) or block allocation (format 3), or a format-3 pool to format 4.
//!
//! The free range that ends at the pool's last ID becomes the fresh-block region (block 0 of
//! generation 0 starts at its first ID); every other free range stays in the pool node's free
//! list, which block takes take first with compare-and-set, as for any pool in block
//! allocation. With no free range ending at the last ID, every fresh block is handed out
//! already (the base is one past the last ID). The ceiling and the epoch are kept.
//!
//! The children of the new layout are created first (with the pool node's ACL): a reader of
//! the single-node layout ignores them. Then the pool node is written once, through the engine
//! (compare-and-set, lost replies resolved by the operation log, logged as a `blocks` write).
//! A take or push planned on the old layout conflicts with that write and plans again on the
//! new one, so no ID is handed out twice and none is lost.

use std::cell::Cell;

use zookeeper_client::{Acls, CreateMode};

use super::blocks::{needs_zookeeper, refused};
use super::engine::{Plan, Step};
use super::options::Layout;
use super::service::IdGeneratorService;
use crate::error::{Result, ZooidError};
use crate::format::{
    holes_parent, returned_parent, sequence_parent, Blocks, OpKind, Pool, FORMAT_VERSION,
    FORMAT_VERSION_BLOCKS, FORMAT_VERSION_HOLES, FORMAT_VERSION_RESERVED, MAX_TAKE,
};
use crate::idset::IdCategory;
use crate::range::IdRange;
use crate::retry::Budget;
use crate::store::Store;
use crate::zk::{Classified, Session, Verdict};

/// What [`IdGeneratorService::migrate_category`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Migrated {
    /// The pool was in the layout asked for already (pool format `format`); nothing written.
    Already {
        /// The pool's format version.
        format: u32,
    },
    /// The pool moved from format `from` (1 for a seed-style node) to format `to`.
    Moved {
        /// The format version before.
        from: u32,
        /// The format version now (3 or 4).
        to: u32,
        /// The first ID of the fresh-block region (one past the last ID when none is left).
        base: i64,
    },
}

/// Where a migration goes: block size and whether pushed ranges are hole nodes.
#[derive(Clone, Copy)]
struct Target {
    unit: u64,
    hole_nodes: bool,
}

impl Target {
    /// The target of `layout`; the single-node layout is not one (no way back).
    fn of(layout: Layout) -> Result<Self> {
        let (unit, hole_nodes) = match layout {
            Layout::Blocks { unit } => (unit, false),
            Layout::HoleNodes { unit } => (unit, true),
            Layout::SingleNode => return Err(ZooidError::InvalidArgument(
                "migrate: only to a block layout (blocks or hole nodes), not back to a single node"
                    .into(),
            )),
        };
        if unit == 0 || unit > MAX_TAKE {
            return Err(ZooidError::InvalidArgument(format!(
                "block size {unit}: need 1..={MAX_TAKE}"
            )));
        }
        Ok(Self { unit, hole_nodes })
    }

    fn format(self) -> u32 {
        if self.hole_nodes {
            FORMAT_VERSION_HOLES
        } else {
            FORMAT_VERSION_BLOCKS
        }
    }
}

/// The format version a pool is written in (1 for a seed-style node).
fn format_of(pool: &Pool) -> u32 {
    match pool.blocks() {
        Some(b) if b.hole_nodes => FORMAT_VERSION_HOLES,
        Some(_) => FORMAT_VERSION_BLOCKS,
        None if pool.ceiling().is_some() => FORMAT_VERSION_RESERVED,
        None => FORMAT_VERSION,
    }
}

/// What a migration of `pool` to `target` writes: `None` when it is there already.
fn plan(pool: &Pool, target: Target) -> Result<Option<(Pool, u64, i64)>> {
    let mut next = pool.clone();
    match pool.blocks() {
        Some(b) if b.hole_nodes == target.hole_nodes => Ok(None),
        Some(b) if b.hole_nodes => Err(ZooidError::InvalidArgument(
            "migrate: a pool with hole nodes (format 4) does not go back to format 3".into(),
        )),
        Some(b) => {
            next.set_blocks(Blocks {
                hole_nodes: true,
                ..b
            });
            Ok(Some((next, 0, b.base)))
        }
        None => {
            let last = pool.bounds().end();
            let top = pool
                .free()
                .ranges()
                .last()
                .copied()
                .filter(|r| r.end() == last);
            let (base, count) = match top {
                Some(range) => {
                    next.free_mut().remove(&range);
                    (range.start(), range.len())
                }
                None => (last.saturating_add(1), 0),
            };
            next.set_blocks(Blocks {
                unit: target.unit,
                generation: 0,
                base,
                hole_nodes: target.hole_nodes,
            });
            Ok(Some((next, count, base)))
        }
    }
}

impl<S: Store> IdGeneratorService<S> {
    /// See [`migrate_category`](Self::migrate_category).
    pub(super) async fn migrate(&self, category: &IdCategory, layout: Layout) -> Result<Migrated> {
        let target = Target::of(layout)?;
        let session = self.store.session().ok_or_else(needs_zookeeper)?;
        let path = category.name();
        let mut budget = Budget::start(self.options.retry);
        let node = self.read(path, &mut budget).await?;
        let pool = Pool::parse(path, &node.data)?;
        if plan(&pool, target)?.is_none() {
            return Ok(Migrated::Already {
                format: format_of(&pool),
            });
        }
        let single = pool.blocks().is_none();
        let mut children = vec![returned_parent(path)];
        if single {
            children.push(sequence_parent(path, 0));
        }
        if target.hole_nodes {
            children.push(holes_parent(path));
        }
        create_children(session, path, &children).await?;
        if single {
            // Nothing may wait there yet: such nodes would read as free IDs once the pool moves.
            for parent in [returned_parent(path), holes_parent(path)] {
                let left = match self.store.children(&parent).await {
                    Ok(left) => left,
                    Err(crate::store::StoreError::NoNode) => Vec::new(),
                    Err(other) => return Err(other.into_zooid(&parent)),
                };
                if !left.is_empty() {
                    return Err(ZooidError::InvalidArgument(format!(
                        "migrate: {parent} holds {} nodes left from elsewhere; remove them first",
                        left.len()
                    )));
                }
            }
        }
        self.write_migration(category, target, format_of(&pool))
            .await
    }

    /// The pool node's write of a migration, through the engine; `from`: the format read
    /// before. A write whose outcome stayed unknown is planned again on what the node holds.
    async fn write_migration(
        &self,
        category: &IdCategory,
        target: Target,
        from: u32,
    ) -> Result<Migrated> {
        let (mut slot, mut budget) = self.hold(category).await?;
        let mut unknown = false;
        loop {
            let planned = Cell::new(None);
            let step = self
                .update(
                    category,
                    &mut slot,
                    &mut budget,
                    OpKind::Blocks,
                    true,
                    |pool: &Pool, _| {
                        Ok(match plan(pool, target)? {
                            None => Plan::Keep,
                            Some((next, count, base)) => {
                                planned.set(Some((format_of(pool), base)));
                                Plan::Write {
                                    next,
                                    moved: Vec::<IdRange>::new(),
                                    count,
                                }
                            }
                        })
                    },
                )
                .await;
            let to = target.format();
            return match step {
                Ok(Step::Done { .. }) => {
                    let (from, base) = planned.get().unwrap_or((from, 0));
                    tracing::warn!(category = category.name(), from, to, base, "pool migrated");
                    Ok(Migrated::Moved { from, to, base })
                }
                Ok(Step::Kept(state)) if unknown => Ok(Migrated::Moved {
                    from,
                    to,
                    base: state.pool.blocks().map_or(0, |b| b.base),
                }),
                Ok(Step::Kept(_)) => Ok(Migrated::Already { format: to }),
                Err(ZooidError::OutcomeUnknown { .. }) if !unknown && budget.try_attempt() => {
                    // Moving no IDs, the write is safe to plan again: it applied or it did not.
                    unknown = true;
                    slot.cached = None;
                    continue;
                }
                Err(err) => Err(err),
            };
        }
    }
}

/// Creates `children` of pool `path` with the pool node's ACL; existing ones are left alone.
async fn create_children(session: &Session, path: &str, children: &[String]) -> Result<()> {
    let (client, generation) = session.client();
    let unreachable = |node: &str, err: &dyn std::fmt::Display| ZooidError::ConnectionLost {
        category: path.to_string(),
        reason: format!("creating {node}: {err}"),
    };
    let (acl, _) = match session
        .run(generation, client.get_acl(path))
        .await
        .classified()
    {
        Ok(got) => got,
        Err((Verdict::NoNode, _)) => {
            return Err(ZooidError::NotFound {
                category: path.to_string(),
            })
        }
        Err((_, err)) => return Err(unreachable(path, &err)),
    };
    let options = CreateMode::Persistent.with_acls(Acls::new(&acl));
    for node in children {
        match session
            .run(generation, client.create(node, &[], &options))
            .await
            .classified()
        {
            Ok(_) | Err((Verdict::NodeExists, _)) => {}
            Err((Verdict::NoNode, _)) => {
                return Err(ZooidError::NotFound {
                    category: path.to_string(),
                })
            }
            Err((verdict @ Verdict::NotAuthorized, err)) => {
                return Err(refused(session, path, verdict, &err))
            }
            Err((_, err)) => return Err(unreachable(node, &err)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start: i64, end: i64) -> IdRange {
        IdRange::new(start, end).unwrap()
    }

    const HOLES: Target = Target {
        unit: 1000,
        hole_nodes: true,
    };

    #[test]
    fn the_range_that_ends_at_the_last_id_becomes_the_block_region() {
        let mut pool = Pool::new(r(1, 123456789));
        pool.free_mut().take_lowest(30000);
        pool.free_mut()
            .insert_all(&[r(9001, 10000), r(19001, 20000), r(29001, 30000)])
            .unwrap();
        pool.set_ceiling(Some(60000));
        let (next, count, base) = plan(&pool, HOLES).unwrap().unwrap();
        assert_eq!((count, base), (123456789 - 29001 + 1, 29001));
        assert_eq!(next.free().ranges(), &[r(9001, 10000), r(19001, 20000)]);
        assert_eq!(next.ceiling(), Some(60000));
        assert!(next
            .render()
            .starts_with("#zooid 4\n#bounds 1:123456789\n#blocks 1000 0 29001\n#ceiling 60000\n"));
        assert_eq!(format_of(&pool), 2);
        assert!(plan(&next, HOLES).unwrap().is_none(), "there already");
    }

    #[test]
    fn without_a_range_at_the_last_id_every_block_is_handed_out() {
        let mut pool = Pool::new(r(1, 100));
        pool.free_mut().take_lowest(100);
        pool.free_mut().insert_all(&[r(5, 9)]).unwrap();
        let (next, count, base) = plan(&pool, HOLES).unwrap().unwrap();
        assert_eq!((count, base), (0, 101));
        assert_eq!(next.free().ranges(), &[r(5, 9)]);
        let round = Pool::parse("/p", next.render().as_bytes()).unwrap();
        assert_eq!(round.blocks().map(|b| b.base), Some(101));
    }

    #[test]
    fn format_3_gets_hole_nodes_and_format_4_stays() {
        let mut three = Pool::with_blocks(r(1, 1000), 10);
        three.free_mut().insert_all(&[r(3, 4)]).unwrap();
        let (next, count, _) = plan(&three, HOLES).unwrap().unwrap();
        assert_eq!(count, 0);
        assert_eq!(next.free().ranges(), &[r(3, 4)]);
        assert!(next.blocks().is_some_and(|b| b.hole_nodes && b.unit == 10));
        let blocks = Target {
            unit: 10,
            hole_nodes: false,
        };
        assert!(plan(&three, blocks).unwrap().is_none());
        assert!(matches!(
            plan(&next, blocks),
            Err(ZooidError::InvalidArgument(_))
        ));
        assert!(matches!(
            Target::of(Layout::SingleNode),
            Err(ZooidError::InvalidArgument(_))
        ));
    }
}
