//! A push to a pool in format 4: its ranges become hole nodes (one `multi`, see
//! src/alloc/holes/requests.rs), refused when a hole this process listed holds any of them.

use crate::alloc::service::IdGeneratorService;
use crate::error::{Result, ZooidError};
use crate::range::IdRange;
use crate::retry::Budget;
use crate::store::Store;
use crate::zk::Session;

impl<S: Store> IdGeneratorService<S> {
    /// Leaves `ranges` under pool `path` as hole nodes. Refused as `AlreadyFree` when one of
    /// them overlaps a hole of this process's current listing (checked when no take of this
    /// process holds the category), or is a hole already.
    pub(crate) async fn push_hole_nodes(
        &self,
        path: &str,
        session: &Session,
        ranges: &[IdRange],
    ) -> Result<()> {
        if let Ok(slot) = self.categories.slot(path).try_lock() {
            let generation = session.client().1;
            let listed = slot.holes.as_ref().filter(|l| l.is_current(generation));
            let overlap = listed.and_then(|listing| {
                ranges.iter().find_map(|r| {
                    listing
                        .holes
                        .iter()
                        .filter(|(_, hole)| hole.overlaps(r))
                        .find_map(|(_, hole)| {
                            IdRange::new(hole.start().max(r.start()), hole.end().min(r.end()))
                        })
                })
            });
            if let Some(range) = overlap {
                return Err(ZooidError::AlreadyFree {
                    category: path.to_string(),
                    range,
                });
            }
        }
        let previous = self.categories.take_marker(path);
        let mut budget = Budget::start(self.options.retry);
        match super::requests::push(session, path, ranges, previous.clone(), &mut budget).await {
            Ok(marker) => {
                self.categories.put_marker(path, marker);
                Ok(())
            }
            Err(err) => {
                if let Some(previous) = previous {
                    self.categories.put_marker(path, previous);
                }
                Err(err)
            }
        }
    }
}
