//! What a pool holds, for operators: the pool node, and for a pool in block allocation its hole
//! nodes and the blocks claimed since its node was written; and the categories below a node.

use super::blocks::{hole_ranges, usage};
use super::options::PoolInfo;
use super::service::IdGeneratorService;
use super::state::figures;
use crate::error::{Result, ZooidError};
use crate::format::Pool;
use crate::idset::IdCategory;
use crate::range::IdRange;
use crate::retry::Budget;
use crate::store::{Store, StoreError};

impl<S: Store> IdGeneratorService<S> {
    /// Reads the pool afresh (see [`pool_info`](Self::pool_info)).
    pub(super) async fn read_info(&self, category: &IdCategory) -> Result<PoolInfo> {
        let mut budget = Budget::start(self.options.retry);
        tracing::Span::current().record("attempt", 1);
        let path = category.name();
        let node = self.read(path, &mut budget).await?;
        let pool = Pool::parse(path, &node.data)?;
        let usage = usage(self.zk.as_ref(), path, &pool).await?;
        let limit = self.options.max_pool_bytes;
        // What is free: for format 4 also the holes in their nodes and the IDs no block claimed.
        let shown = match (pool.blocks(), self.zk.as_ref()) {
            (Some(_), Some(session)) => {
                let mut shown = pool.clone();
                let unclaimed =
                    IdRange::new(usage.high_water.saturating_add(1), pool.bounds().end());
                for range in hole_ranges(session, path)
                    .await?
                    .into_iter()
                    .chain(unclaimed)
                {
                    // Overlapping holes (a push of free IDs) are listed once.
                    if shown.free_mut().insert_all(&[range]).is_err() {
                        tracing::warn!(category = path, %range, "hole overlaps another");
                    }
                }
                shown
            }
            _ => pool.clone(),
        };
        self.stats
            .pool_seen(figures(path, &shown, node.data.len(), node.version, limit));
        let free = shown.free().ranges().to_vec();
        Ok(PoolInfo {
            bounds: pool.bounds(),
            free,
            free_count: usage.free,
            version: node.version,
            offset: pool.offset(),
            bytes: node.data.len(),
            legacy: pool.is_legacy(),
            ceiling: pool.ceiling(),
            epoch: pool.epoch(),
            headroom: usage.available,
            high_water: usage.high_water,
            blocks: pool.blocks(),
        })
    }

    /// The children of `parent` (see [`list_categories`](Self::list_categories)).
    pub(super) async fn list_children(&self, parent: &str) -> Result<Vec<String>> {
        tracing::Span::current().record("attempt", 1);
        self.store.children(parent).await.map_err(|e| match e {
            StoreError::NoNode => ZooidError::NotFound {
                category: parent.to_string(),
            },
            other => other.into_zooid(parent),
        })
    }
}
