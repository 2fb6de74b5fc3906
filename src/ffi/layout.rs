//! Pool layouts across the C boundary: the `zooid_layout` numbers (read by
//! [`crate::marshal::layout`], shared with Java) and what a migration did ([`zooid_migrated`]).

use crate::alloc::Migrated;

/// The layout of a category's pool (docs/DESIGN.md), for `zooid_category_spec_set_layout`
/// and `zooid_service_migrate_category`. The numbers are stable (2 was block allocation in the
/// retired pool format 3, and is refused).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum zooid_layout {
    /// The layout `zooid_service_create_category` makes on the service's store by default: hole nodes in
    /// blocks of 1000 on ZooKeeper, a single node on the embedded stores.
    ZOOID_LAYOUT_DEFAULT = 0,
    /// One node holds the free list (pool formats 1 and 2, readable by the seed's tools):
    /// every take and push is a compare-and-set on it; takes are exactly lowest first.
    ZOOID_LAYOUT_SINGLE_NODE = 1,
    /// Hole nodes (pool format 4, ZooKeeper only): block allocation (fresh IDs claimed in blocks
    /// by creates that never conflict) whose pushed ranges stay nodes of their own, claimed by
    /// deleting them, so tasks that take a batch and push back their leftovers do not conflict.
    ZOOID_LAYOUT_HOLE_NODES = 3,
}

/// What `zooid_service_migrate_category` did.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct zooid_migrated {
    /// True when the pool moved; false when it was in the layout asked for already (nothing
    /// written).
    pub moved: bool,
    /// The pool format before (1 for a seed-style node; 1, 2 or 4).
    pub from_format: u32,
    /// The pool format now (4).
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
    use super::zooid_layout::*;
    use crate::alloc::Layout;
    use crate::marshal::layout;

    #[test]
    fn the_c_numbers_are_the_shared_layout_numbers() {
        assert_eq!(layout(ZOOID_LAYOUT_DEFAULT as u32, 5).unwrap(), None);
        assert_eq!(
            layout(ZOOID_LAYOUT_SINGLE_NODE as u32, 5).unwrap(),
            Some(Layout::SingleNode)
        );
        assert!(layout(2, 5).is_err(), "the retired format 3's layout");
        assert_eq!(
            layout(ZOOID_LAYOUT_HOLE_NODES as u32, 5).unwrap(),
            Some(Layout::HoleNodes { unit: 5 })
        );
    }
}
