//! Pool layouts across the C boundary: the `zooid_layout` numbers and what a migration did
//! ([`zooid_migrated`]).

use super::Failure;
use crate::{Layout, Migrated, DEFAULT_BLOCK_SIZE};

/// The layout of a category's pool (docs/DESIGN.md), for `zooid_service_create_category_in`
/// and `zooid_service_migrate_category`. The numbers are stable.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum zooid_layout {
    /// The layout `zooid_service_create_category` makes on the service's store: hole nodes in
    /// blocks of 1000 on ZooKeeper, a single node on the embedded stores.
    ZOOID_LAYOUT_DEFAULT = 0,
    /// One node holds the free list (pool formats 1 and 2, readable by the seed's tools):
    /// every take and push is a compare-and-set on it; takes are exactly lowest first.
    ZOOID_LAYOUT_SINGLE_NODE = 1,
    /// Block allocation (pool format 3, ZooKeeper only): fresh IDs are claimed in blocks by
    /// creates that never conflict; pushed IDs are merged into the pool node's free list.
    ZOOID_LAYOUT_BLOCKS = 2,
    /// Hole nodes (pool format 4, ZooKeeper only): block allocation whose pushed ranges stay
    /// nodes of their own, claimed by deleting them, so tasks that take a batch and push back
    /// their leftovers do not conflict.
    ZOOID_LAYOUT_HOLE_NODES = 3,
}

/// A layout asked for from C: the store's default, or one chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Asked {
    /// `ZOOID_LAYOUT_DEFAULT`.
    Default,
    /// Any other number.
    Chosen(Layout),
}

/// The layout of a `zooid_layout` number from C and its block size `unit` (ignored for the
/// default and the single-node layout; 0 means [`DEFAULT_BLOCK_SIZE`]).
pub(super) fn layout(value: u32, unit: u64) -> Result<Asked, Failure> {
    let unit = if unit == 0 { DEFAULT_BLOCK_SIZE } else { unit };
    match value {
        v if v == zooid_layout::ZOOID_LAYOUT_DEFAULT as u32 => Ok(Asked::Default),
        v if v == zooid_layout::ZOOID_LAYOUT_SINGLE_NODE as u32 => {
            Ok(Asked::Chosen(Layout::SingleNode))
        }
        v if v == zooid_layout::ZOOID_LAYOUT_BLOCKS as u32 => {
            Ok(Asked::Chosen(Layout::Blocks { unit }))
        }
        v if v == zooid_layout::ZOOID_LAYOUT_HOLE_NODES as u32 => {
            Ok(Asked::Chosen(Layout::HoleNodes { unit }))
        }
        other => Err(Failure::Invalid(format!(
            "layout {other} is not a zooid_layout: expected ZOOID_LAYOUT_DEFAULT (0), \
             ZOOID_LAYOUT_SINGLE_NODE (1), ZOOID_LAYOUT_BLOCKS (2) or ZOOID_LAYOUT_HOLE_NODES (3)"
        ))),
    }
}

/// What `zooid_service_migrate_category` did.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct zooid_migrated {
    /// True when the pool moved; false when it was in the layout asked for already (nothing
    /// written).
    pub moved: bool,
    /// The pool format before (1 for a seed-style node; 1 to 4).
    pub from_format: u32,
    /// The pool format now (3 or 4; equal to `from_format` when nothing moved).
    pub to_format: u32,
    /// When moved: the first ID of the fresh-block region (one past the last ID when none is
    /// left); 0 when nothing moved.
    pub base: i64,
}

impl From<Migrated> for zooid_migrated {
    fn from(migrated: Migrated) -> Self {
        match migrated {
            Migrated::Already { format } => Self {
                moved: false,
                from_format: format,
                to_format: format,
                base: 0,
            },
            Migrated::Moved { from, to, base } => Self {
                moved: true,
                from_format: from,
                to_format: to,
                base,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_numbers_map_to_layouts_and_unit_zero_is_the_default_block_size() {
        assert_eq!(layout(0, 7).unwrap(), Asked::Default);
        assert_eq!(layout(1, 7).unwrap(), Asked::Chosen(Layout::SingleNode));
        assert_eq!(
            layout(2, 0).unwrap(),
            Asked::Chosen(Layout::Blocks {
                unit: DEFAULT_BLOCK_SIZE
            })
        );
        assert_eq!(
            layout(3, 250).unwrap(),
            Asked::Chosen(Layout::HoleNodes { unit: 250 })
        );
        match layout(4, 0) {
            Err(Failure::Invalid(message)) => {
                assert!(message.contains("layout 4"), "{message}");
                assert!(message.contains("ZOOID_LAYOUT_HOLE_NODES"), "{message}");
            }
            other => panic!("expected an invalid argument, got {other:?}"),
        }
    }
}
