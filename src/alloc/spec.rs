//! [`CategorySpec`]: what a new category is, the one argument of
//! [`IdGeneratorService::create_category`](super::IdGeneratorService::create_category) in every
//! binding (the blocking facade, C's `zooid_category_spec`, Java's `io.zooid.CategorySpec`, the
//! CLI's `zooid init`).

use super::options::Layout;
use crate::error::{Result, ZooidError};
use crate::format::MAX_TAKE;
use crate::range::IdRange;
use crate::zk::Acl;

/// What a category is made of when it is created: its bounds `first..=last`, its layout, an
/// optional ceiling (the durable reservation's bound) and an optional ACL on its pool node.
///
/// ```
/// use zooid::{CategorySpec, Layout};
///
/// // The store's default layout (format 4 in blocks of 1000 on ZooKeeper, a single node on
/// // the embedded stores), no ceiling, the session's default ACL.
/// let plain = CategorySpec::new(1, 1_000_000);
/// // Format 4 in blocks of 500, handing out nothing above 10 000 until a keeper raises it.
/// let reserved = CategorySpec::new(1, 1_000_000).blocks(500).ceiling(10_000);
/// assert_eq!(reserved.layout_asked(), Some(Layout::HoleNodes { unit: 500 }));
/// assert!(plain.validate().is_ok() && reserved.validate().is_ok());
/// assert!(CategorySpec::new(1, 10).ceiling(11).validate().is_err());
/// ```
///
/// The builder methods never fail; [`validate`](Self::validate) (which
/// [`create_category`](super::IdGeneratorService::create_category) calls first) reports the
/// first unusable field as `InvalidArgument` naming it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CategorySpec {
    first: i64,
    last: i64,
    layout: Option<Layout>,
    ceiling: Option<i64>,
    acl: Option<Vec<Acl>>,
}

impl CategorySpec {
    /// A category whose IDs are `first..=last` (`1 <= first <= last`), all free, in the store's
    /// default layout, without a ceiling, with the session's default ACL.
    pub fn new(first: i64, last: i64) -> Self {
        Self {
            first,
            last,
            layout: None,
            ceiling: None,
            acl: None,
        }
    }

    /// Block allocation with hole nodes (pool format 4, [`Layout::HoleNodes`]; needs ZooKeeper)
    /// in blocks of `size` IDs (`1..=MAX_TAKE`): use the batch size the workers take.
    pub fn blocks(self, size: u64) -> Self {
        self.layout(Layout::HoleNodes { unit: size })
    }

    /// One node holding the free list (pool formats 1 and 2, [`Layout::SingleNode`]): every take
    /// and push is a compare-and-set on it; takes are exactly lowest first.
    pub fn single_node(self) -> Self {
        self.layout(Layout::SingleNode)
    }

    /// Any [`Layout`]. Without this (or [`blocks`](Self::blocks) /
    /// [`single_node`](Self::single_node)), the store's default layout is used:
    /// [`default_layout`](super::IdGeneratorService::default_layout), or the single node when
    /// the spec has an ACL.
    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = Some(layout);
        self
    }

    /// Back to the store's default layout, as after [`new`](Self::new).
    pub fn default_layout(mut self) -> Self {
        self.layout = None;
        self
    }

    /// The ceiling of the durable reservation (`0 <= ceiling <= last`): no ID above it is handed
    /// out until it is raised (by a keeper), so a keeper's first durable record covers every ID
    /// from the start. `None` (the default): no ceiling.
    pub fn ceiling(mut self, ceiling: impl Into<Option<i64>>) -> Self {
        self.ceiling = ceiling.into();
        self
    }

    /// The ACL of the pool node (at least one entry; needs ZooKeeper and the single-node
    /// layout). Clients it does not grant read and write get `NotAuthorized` on every take and
    /// push. Without it the store's default applies: `creator_all` for an authenticated
    /// session, else open to all.
    pub fn acl(mut self, acl: impl Into<Vec<Acl>>) -> Self {
        self.acl = Some(acl.into());
        self
    }

    /// The first ID.
    pub fn first(&self) -> i64 {
        self.first
    }

    /// The last ID.
    pub fn last(&self) -> i64 {
        self.last
    }

    /// The layout asked for; `None` for the store's default.
    pub fn layout_asked(&self) -> Option<Layout> {
        self.layout
    }

    /// The ceiling, if any.
    pub fn ceiling_asked(&self) -> Option<i64> {
        self.ceiling
    }

    /// The ACL, if any.
    pub fn acl_asked(&self) -> Option<&[Acl]> {
        self.acl.as_deref()
    }

    /// Checks every field without touching a store: the bounds (`first`, `last`), the block
    /// size of a block layout (`block size`), the ceiling (`ceiling`), the ACL (`acl`: not
    /// empty, only in the single-node layout). Fails with `InvalidArgument` naming the field.
    /// (Whether the store supports the layout or the ACL is known only when creating.)
    pub fn validate(&self) -> Result<()> {
        self.bounds()?;
        if let Some(Layout::HoleNodes { unit }) = self.layout {
            if unit == 0 || unit > MAX_TAKE {
                return Err(invalid(format!("block size {unit}: need 1..={MAX_TAKE}")));
            }
        }
        if let Some(c) = self.ceiling {
            if c < 0 || c > self.last {
                return Err(invalid(format!(
                    "ceiling {c}: need 0 <= ceiling <= last ({})",
                    self.last
                )));
            }
        }
        if let Some(acl) = &self.acl {
            crate::zk::acl::check_acl_list(acl)?;
            if matches!(self.layout, Some(Layout::HoleNodes { .. })) {
                return Err(invalid(
                    "acl: a category with its own ACL needs the single-node layout (the nodes of \
                     the block layout get the session's default ACL)"
                        .into(),
                ));
            }
        }
        Ok(())
    }

    /// The bounds, checked (`1 <= first <= last`).
    pub(super) fn bounds(&self) -> Result<IdRange> {
        let (first, last) = (self.first, self.last);
        IdRange::new(first, last)
            .filter(|_| first >= 1)
            .ok_or_else(|| {
                invalid(format!(
                    "category bounds {first}..={last}: need 1 <= first <= last"
                ))
            })
    }
}

fn invalid(message: String) -> ZooidError {
    ZooidError::InvalidArgument(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(spec: CategorySpec) -> String {
        spec.validate().unwrap_err().to_string()
    }

    #[test]
    fn builder_sets_each_field() {
        let spec = CategorySpec::new(5, 50);
        assert_eq!((spec.first(), spec.last()), (5, 50));
        assert_eq!(spec.layout_asked(), None);
        assert_eq!(spec.ceiling_asked(), None);
        assert_eq!(spec.acl_asked(), None);
        assert_eq!(
            spec.clone().blocks(7).layout_asked(),
            Some(Layout::HoleNodes { unit: 7 })
        );
        assert_eq!(
            spec.clone().blocks(7).single_node().layout_asked(),
            Some(Layout::SingleNode)
        );
        assert_eq!(
            spec.clone()
                .layout(Layout::HoleNodes { unit: 3 })
                .layout_asked(),
            Some(Layout::HoleNodes { unit: 3 })
        );
        assert_eq!(spec.clone().ceiling(9).ceiling_asked(), Some(9));
        assert_eq!(spec.clone().ceiling(9).ceiling(None).ceiling_asked(), None);
        let acl = crate::zk::parse_acl_list("world:anyone:cdrwa").unwrap();
        assert_eq!(spec.acl(acl.clone()).acl_asked(), Some(&acl[..]));
    }

    #[test]
    fn validation_names_the_bad_field() {
        assert!(message(CategorySpec::new(0, 10)).contains("category bounds 0..=10"));
        assert!(message(CategorySpec::new(10, 9)).contains("need 1 <= first <= last"));
        assert!(message(CategorySpec::new(1, 10).blocks(0)).contains("block size 0"));
        assert!(
            message(CategorySpec::new(1, 10).layout(Layout::HoleNodes { unit: MAX_TAKE + 1 }))
                .contains("block size")
        );
        assert!(message(CategorySpec::new(1, 10).ceiling(11)).contains("ceiling 11"));
        assert!(message(CategorySpec::new(1, 10).ceiling(-1)).contains("ceiling -1"));
        assert!(message(CategorySpec::new(1, 10).acl(Vec::new())).contains("empty ACL"));
        let acl = crate::zk::parse_acl_list("world:anyone:cdrwa").unwrap();
        assert!(
            message(CategorySpec::new(1, 10).acl(acl.clone()).blocks(10))
                .starts_with("invalid argument: acl:")
        );
        for ok in [
            CategorySpec::new(1, 1),
            CategorySpec::new(1, i64::MAX).blocks(MAX_TAKE),
            CategorySpec::new(1, 10).ceiling(0),
            CategorySpec::new(1, 10).ceiling(10).single_node(),
            CategorySpec::new(1, 10).acl(acl.clone()),
            CategorySpec::new(1, 10).acl(acl).single_node().ceiling(3),
        ] {
            ok.validate().unwrap();
        }
    }

    #[test]
    fn validation_errors_are_invalid_argument() {
        let err = CategorySpec::new(1, 10).blocks(0).validate().unwrap_err();
        assert_eq!(err.kind(), crate::error::ErrorKind::InvalidArgument);
    }
}
