//! The durable record of the reservations, outside ZooKeeper: per category its bounds, its
//! ceiling, the fencing token of the writer and the time (docs/DURABILITY.md).
//!
//! Every ID ever handed out is at or below a ceiling that was made durable here first, so a
//! restore from these records never reissues an ID. A record only moves up: a write that would
//! lower the ceiling or carries an older fencing token is refused.

mod dir;
mod record;
#[cfg(feature = "s3")]
mod s3;

pub use dir::DirRecords;
pub use record::{now_ms, rfc3339_ms, Fence, Record, RECORD_VERSION};
#[cfg(feature = "s3")]
pub use s3::S3Records;

use crate::error::{Result, ZooidError};

/// Every record a store holds, as [`DurableStore::list`] found them: one record that cannot be
/// read does not hide the others.
#[derive(Debug, Default)]
pub struct Listing {
    /// The records read, sorted by category.
    pub records: Vec<Record>,
    /// One error per record file or object that could not be read, naming it (its path, or
    /// `s3://BUCKET/KEY`) and why: `CorruptPool` when its content is not a record, `Store` when
    /// reading it failed. In the order of their names; the files and objects are left as they
    /// are.
    pub unreadable: Vec<ZooidError>,
}

impl Listing {
    fn push(&mut self, read: Result<Record>) {
        match read {
            Ok(record) => self.records.push(record),
            Err(err) => self.unreadable.push(err),
        }
    }

    fn sorted(mut self) -> Self {
        self.records.sort_by(|a, b| a.category.cmp(&b.category));
        self
    }
}

/// Suffix of record files and objects.
pub(crate) const SUFFIX: &str = ".record";

/// The file or object name of a category's record: the path without its leading `/`, with
/// `%` and `/` percent-encoded, and `.record` appended.
pub(crate) fn file_name(category: &str) -> String {
    let mut name = String::with_capacity(category.len() + 16);
    for c in category.trim_start_matches('/').chars() {
        match c {
            '%' => name.push_str("%25"),
            '/' => name.push_str("%2F"),
            c => name.push(c),
        }
    }
    name.push_str(SUFFIX);
    name
}

/// Where the durable records live: a directory or `s3://BUCKET/PREFIX` (cargo feature `s3`).
#[derive(Debug)]
pub enum DurableStore {
    /// A directory (local disk or a mounted file system).
    Dir(DirRecords),
    /// S3-compatible object storage.
    #[cfg(feature = "s3")]
    S3(S3Records),
}

impl DurableStore {
    /// Opens a location: `s3://BUCKET/PREFIX`, else a directory path (created if missing).
    /// An `s3://` location in a build without the cargo feature `s3` is an `InvalidArgument`
    /// naming the feature.
    pub fn open(location: &str) -> Result<Self> {
        if location.starts_with("s3://") {
            Self::open_s3(location)
        } else {
            Ok(DurableStore::Dir(DirRecords::open(location)?))
        }
    }

    #[cfg(feature = "s3")]
    fn open_s3(location: &str) -> Result<Self> {
        Ok(DurableStore::S3(S3Records::open(location)?))
    }

    #[cfg(not(feature = "s3"))]
    fn open_s3(location: &str) -> Result<Self> {
        Err(ZooidError::InvalidArgument(format!(
            "{location}: this build of zooid has no S3 support (cargo feature `s3`); \
             use a directory, or a build with the feature (the zooid CLI has it)"
        )))
    }

    /// The record of `category`, if there is one.
    pub async fn read(&self, category: &str) -> Result<Option<Record>> {
        match self {
            DurableStore::Dir(d) => {
                let d = d.clone();
                let category = category.to_string();
                blocking(d.is_inline(), move || d.read(&category)).await
            }
            #[cfg(feature = "s3")]
            DurableStore::S3(s) => s.read(category).await,
        }
    }

    /// Every record, and every record file or object that could not be read ([`Listing`]); an
    /// error only when the listing itself failed.
    pub async fn list(&self) -> Result<Listing> {
        match self {
            DurableStore::Dir(d) => {
                let d = d.clone();
                blocking(d.is_inline(), move || d.list()).await
            }
            #[cfg(feature = "s3")]
            DurableStore::S3(s) => s.list().await,
        }
    }

    /// Writes `record` durably if it moves nothing backwards; `WentBackwards` otherwise.
    pub async fn write(&self, record: &Record) -> Result<()> {
        match self {
            DurableStore::Dir(d) => {
                let d = d.clone();
                let record = record.clone();
                blocking(d.is_inline(), move || d.write(&record)).await
            }
            #[cfg(feature = "s3")]
            DurableStore::S3(s) => s.write(record).await,
        }
    }
}

/// Runs `f` on tokio's blocking pool (on this thread when `inline`: `DirRecords::inline`).
async fn blocking<T: Send + 'static>(
    inline: bool,
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    if inline {
        return f();
    }
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ZooidError::Store {
            path: "durable record".into(),
            reason: format!("I/O task failed: {e}"),
        })?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(not(feature = "s3"))]
    #[test]
    fn s3_location_without_the_feature_names_it() {
        let err = DurableStore::open("s3://bucket/prefix").unwrap_err();
        assert!(
            matches!(&err, crate::error::ZooidError::InvalidArgument(why) if why.contains("feature `s3`")),
            "{err}"
        );
    }

    #[test]
    fn file_names_are_flat_and_unambiguous() {
        assert_eq!(file_name("/a/b"), "a%2Fb.record");
        assert_eq!(file_name("/a%2Fb"), "a%252Fb.record");
        assert_ne!(file_name("/a/b"), file_name("/a%2Fb"));
    }
}
