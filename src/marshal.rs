//! What the C and JNI bindings share when moving values across: durations given in
//! milliseconds, pool layouts given as numbers. (Handles and ranges have a shape of their own
//! in each binding: see `ffi::convert` and `jni::convert`.)

use std::time::Duration;

use crate::alloc::{Layout, DEFAULT_BLOCK_SIZE};
use crate::error::{Result, ZooidError};

/// A duration given in milliseconds; a negative number is `None`, which each call documents
/// ("wait for ever", "the default").
pub(crate) fn millis(ms: i64) -> Option<Duration> {
    u64::try_from(ms).ok().map(Duration::from_millis)
}

/// A setting in milliseconds that must be at least 1; `what` names it in the error.
pub(crate) fn positive_millis(ms: u64, what: &str) -> Result<Duration> {
    if ms == 0 {
        return Err(ZooidError::InvalidArgument(format!(
            "{what} must be at least 1 ms"
        )));
    }
    Ok(Duration::from_millis(ms))
}

/// A pool layout given as a number, as C's `zooid_layout` and Java's `io.zooid.Layout` number
/// them: 0 the store's default (`None`), 1 a single node, 3 hole nodes (2 was block allocation
/// in the retired pool format 3, and is refused); in blocks of `unit` IDs, 0 meaning
/// [`DEFAULT_BLOCK_SIZE`] (ignored for 0 and 1).
pub(crate) fn layout(number: u32, unit: u64) -> Result<Option<Layout>> {
    let unit = if unit == 0 { DEFAULT_BLOCK_SIZE } else { unit };
    match number {
        0 => Ok(None),
        1 => Ok(Some(Layout::SingleNode)),
        2 => Err(ZooidError::InvalidArgument(
            "layout 2 (block allocation in pool format 3) was retired: use 3 (hole nodes, \
             block allocation in format 4)"
                .into(),
        )),
        3 => Ok(Some(Layout::HoleNodes { unit })),
        other => Err(ZooidError::InvalidArgument(format!(
            "layout {other} is not a layout: expected 0 (the store's default), 1 (a single \
             node) or 3 (hole nodes)"
        ))),
    }
}

/// The layout a migration given as a number moves to: [`layout`]'s, with 0 (the store's
/// default) meaning hole nodes in blocks of `unit` (0 meaning [`DEFAULT_BLOCK_SIZE`]), the only
/// layout a pool migrates to.
pub(crate) fn migration_target(number: u32, unit: u64) -> Result<Layout> {
    Ok(layout(number, unit)?.unwrap_or(Layout::HoleNodes {
        unit: if unit == 0 { DEFAULT_BLOCK_SIZE } else { unit },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_migration_to_the_default_layout_keeps_its_unit() {
        assert_eq!(
            migration_target(0, 250).unwrap(),
            Layout::HoleNodes { unit: 250 }
        );
        assert_eq!(
            migration_target(0, 0).unwrap(),
            Layout::HoleNodes {
                unit: DEFAULT_BLOCK_SIZE
            }
        );
        assert_eq!(migration_target(1, 0).unwrap(), Layout::SingleNode);
    }

    #[test]
    fn layout_numbers_name_the_layouts_and_unit_zero_is_the_default_block_size() {
        assert_eq!(layout(0, 7).unwrap(), None);
        assert_eq!(layout(1, 7).unwrap(), Some(Layout::SingleNode));
        assert_eq!(
            layout(3, 0).unwrap(),
            Some(Layout::HoleNodes {
                unit: DEFAULT_BLOCK_SIZE
            })
        );
        let err = layout(2, 0).unwrap_err();
        assert!(err.to_string().contains("was retired"), "{err}");
        assert_eq!(
            layout(3, 250).unwrap(),
            Some(Layout::HoleNodes { unit: 250 })
        );
        let err = layout(4, 0).unwrap_err();
        assert!(
            err.to_string().contains("layout 4 is not a layout"),
            "{err}"
        );
    }

    #[test]
    fn negative_is_none_and_zero_is_refused_as_a_setting() {
        assert_eq!(millis(-1), None);
        assert_eq!(millis(0), Some(Duration::ZERO));
        assert_eq!(millis(1500), Some(Duration::from_millis(1500)));
        assert_eq!(positive_millis(7, "x").unwrap(), Duration::from_millis(7));
        let err = positive_millis(0, "the session timeout").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid argument: the session timeout must be at least 1 ms"
        );
    }
}
