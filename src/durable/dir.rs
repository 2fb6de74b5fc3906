//! The durable record in a local (or mounted) directory: one file per category, replaced by
//! write-temp, fsync, rename, fsync-the-directory, under an exclusive lock file so that
//! concurrent writers (several keepers, `restore`) read-check-write one at a time.
//!
//! [`DurableStore`](super::DurableStore) runs this I/O on tokio's blocking pool, unless the
//! directory was opened [`inline`](DirRecords::inline).

use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::record::Record;
use super::{file_name, Listing, SUFFIX};
use crate::error::{Result, ZooidError};

/// A directory holding durable records.
#[derive(Clone, Debug)]
pub struct DirRecords {
    dir: PathBuf,
    inline: bool,
}

fn io_error(path: &Path, err: std::io::Error) -> ZooidError {
    ZooidError::Store {
        path: path.display().to_string(),
        reason: format!("durable record: {err}"),
    }
}

impl DirRecords {
    /// Opens (creating it if needed) the directory `dir`.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
        Ok(Self { dir, inline: false })
    }

    /// These records with their I/O done on the calling task's thread by
    /// [`DurableStore`](super::DurableStore), not on tokio's blocking pool: the same files,
    /// written and synced the same way, while the runtime's thread waits. For a current-thread
    /// runtime whose clock is paused (the deterministic simulation, tests/sim): a blocking-pool
    /// task ends at a wall-clock instant, so the task awaiting it would resume at a different
    /// point among the others from one run to the next.
    pub fn inline(self) -> Self {
        Self {
            inline: true,
            ..self
        }
    }

    /// Whether [`inline`](Self::inline) was asked for.
    pub fn is_inline(&self) -> bool {
        self.inline
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn lock(&self) -> Result<File> {
        let path = self.dir.join(".lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| io_error(&path, e))?;
        file.lock().map_err(|e| io_error(&path, e))?;
        Ok(file)
    }

    /// The record of `category`, if there is one.
    pub fn read(&self, category: &str) -> Result<Option<Record>> {
        let path = self.dir.join(file_name(category));
        match fs::read(&path) {
            Ok(data) => Record::parse_of(category, &path.display().to_string(), &data).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(&path, e)),
        }
    }

    /// Every file whose name ends in `.record`, read as a record ([`Listing`]): one that
    /// cannot be read or parsed is listed as unreadable, naming it, and left as it is. An error
    /// only when the directory cannot be read.
    pub fn list(&self) -> Result<Listing> {
        let mut paths = Vec::new();
        for entry in fs::read_dir(&self.dir).map_err(|e| io_error(&self.dir, e))? {
            let entry = entry.map_err(|e| io_error(&self.dir, e))?;
            // Temporary files end in `.tmp` and the lock is `.lock`; a name starting with `.` is
            // a record too (the category `/.x`).
            if entry
                .file_name()
                .as_encoded_bytes()
                .ends_with(SUFFIX.as_bytes())
            {
                paths.push(entry.path());
            }
        }
        paths.sort();
        let mut listing = Listing::default();
        for path in paths {
            match fs::read(&path) {
                Ok(data) => listing.push(Record::parse(&path.display().to_string(), &data)),
                // Removed since the directory was read.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => listing.push(Err(io_error(&path, e))),
            }
        }
        Ok(listing.sorted())
    }

    /// Writes `record` if it moves nothing backwards (see [`Record::check_succeeds`]), and makes
    /// it durable before returning.
    pub fn write(&self, record: &Record) -> Result<()> {
        let _lock = self.lock()?;
        if let Some(old) = self.read(&record.category)? {
            record.check_succeeds(&old)?;
        }
        let path = self.dir.join(file_name(&record.category));
        let temp = self.dir.join(format!(
            ".{}.{:016x}.tmp",
            file_name(&record.category),
            crate::random::random::<u64>()
        ));
        let written = (|| {
            let mut file = File::create(&temp)?;
            file.write_all(record.render().as_bytes())?;
            file.sync_all()?;
            fs::rename(&temp, &path)?;
            File::open(&self.dir)?.sync_all()
        })();
        if written.is_err() {
            let _ = fs::remove_file(&temp);
        }
        written.map_err(|e| io_error(&path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::Fence;
    use crate::range::IdRange;

    fn record(category: &str, ceiling: i64) -> Record {
        let fence = Fence {
            generation: 1,
            token: 7,
        };
        Record::new(category, IdRange::new(1, 1000).unwrap(), ceiling, fence)
    }

    /// A record's file is found again, by its category and by the listing, for every path a
    /// category can have: spaces and U+00A0 kept in the name, and a leading `.` (the listing
    /// skipped every name starting with `.`, so `/.x` was never restored).
    #[test]
    fn every_categorys_file_is_read_and_listed() {
        let dir = tempfile::tempdir().unwrap();
        let records = DirRecords::open(dir.path()).unwrap();
        let categories = ["/app/my ids", "/\u{a0}x", "/.x", "/a/.b c"];
        for (i, category) in categories.iter().enumerate() {
            records.write(&record(category, 100 + i as i64)).unwrap();
        }
        assert!(dir.path().join("app%2Fmy ids.record").exists());
        for (i, category) in categories.iter().enumerate() {
            let read = records.read(category).unwrap().expect("a record");
            assert_eq!(
                (read.category.as_str(), read.ceiling),
                (*category, 100 + i as i64)
            );
        }
        let listing = records.list().unwrap();
        assert!(listing.unreadable.is_empty(), "{:?}", listing.unreadable);
        let mut listed: Vec<String> = listing.records.into_iter().map(|r| r.category).collect();
        let mut expected: Vec<String> = categories.iter().map(|c| c.to_string()).collect();
        listed.sort();
        expected.sort();
        assert_eq!(listed, expected);
    }

    /// A file that is not a record does not hide the others: it is listed as unreadable, named
    /// with why, and left as it is; so is one that cannot be read (here a directory).
    #[test]
    fn an_unreadable_file_is_listed_apart_and_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let records = DirRecords::open(dir.path()).unwrap();
        records.write(&record("/b", 200)).unwrap();
        records.write(&record("/a", 100)).unwrap();
        let garbage = dir.path().join("x.record");
        fs::write(&garbage, "not a record\n").unwrap();
        fs::create_dir(dir.path().join("y.record")).unwrap();

        let listing = records.list().unwrap();
        let listed: Vec<&str> = listing
            .records
            .iter()
            .map(|r| r.category.as_str())
            .collect();
        assert_eq!(listed, ["/a", "/b"]);
        match &listing.unreadable[..] {
            [ZooidError::CorruptPool { path, reason, .. }, ZooidError::Store { path: y, .. }] => {
                assert!(path.ends_with("/x.record"), "{path}");
                assert!(reason.contains("expected 6 lines, found 1"), "{reason}");
                assert!(y.ends_with("/y.record"), "{y}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(fs::read(&garbage).unwrap(), b"not a record\n");
    }

    /// Two categories whose names differ only in case share one file where the file system
    /// folds case (here the file is copied, as a folding file system would show it): the read
    /// of the second is refused naming both, and the record of the first is left as it is.
    /// Before, the keeper of `/app/x` read `/App/x`'s record as its own.
    #[test]
    fn another_categorys_record_in_the_file_is_refused_and_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let records = DirRecords::open(dir.path()).unwrap();
        records.write(&record("/App/x", 500)).unwrap();
        let theirs = dir.path().join(file_name("/App/x"));
        let ours = dir.path().join(file_name("/app/x"));
        fs::copy(&theirs, &ours).unwrap();
        let before = fs::read(&ours).unwrap();

        let err = records.read("/app/x").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("record of /App/x, not of /app/x"), "{text}");
        let err = records.write(&record("/app/x", 600)).unwrap_err();
        assert!(err.to_string().contains("not of /app/x"), "{err}");
        assert_eq!(
            fs::read(&ours).unwrap(),
            before,
            "the file was left as it is"
        );
        assert_eq!(records.read("/App/x").unwrap().unwrap().ceiling, 500);
    }
}
