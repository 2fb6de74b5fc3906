//! The embedded file store: nodes in a local directory, shared safely by the processes of one
//! machine through an exclusive lock on `DIR/.lock`.
//!
//! Node `/a/b` lives in `DIR/a/b/.node` as a line `zooid-node <version>` followed by its data,
//! replaced atomically (write a temporary file, fsync, rename).

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::local::{self, Nodes};
use super::{ReadOn, Store, StoreError, Versioned};
use crate::error::{Result, ZooidError};

const NODE_FILE: &str = ".node";
const HEADER: &str = "zooid-node ";

/// A store in a local directory. Clones share the directory.
#[derive(Clone, Debug)]
pub struct FileStore {
    root: Arc<PathBuf>,
    /// `file:` and the directory's canonical path.
    origin: Arc<str>,
}

struct FileNodes<'a> {
    root: &'a Path,
}

impl FileStore {
    /// Opens (creating if needed) the store in directory `dir`.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        let root = dir.as_ref();
        if root.as_os_str().is_empty() {
            return Err(ZooidError::InvalidArgument(
                "file store needs a directory: file:DIR".into(),
            ));
        }
        fs::create_dir_all(root).map_err(|e| ZooidError::Store {
            path: root.display().to_string(),
            reason: format!("cannot create the store directory: {e}"),
        })?;
        let canonical = fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        Ok(Self {
            root: Arc::new(root.to_path_buf()),
            origin: format!("file:{}", canonical.display()).into(),
        })
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.root
    }

    /// Runs `op` on the nodes while holding the store's exclusive lock, off the async threads.
    async fn locked<T: Send + 'static>(
        &self,
        op: impl FnOnce(&mut FileNodes<'_>) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let root = Arc::clone(&self.root);
        let run = move || {
            let lock = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(root.join(".lock"))
                .map_err(io_error)?;
            lock.lock().map_err(io_error)?;
            // The lock is released when `lock` is closed at the end of this closure.
            op(&mut FileNodes { root: &root })
        };
        tokio::task::spawn_blocking(run)
            .await
            // A task that panicked may have stopped after its rename: not a refusal.
            .map_err(|e| StoreError::Unknown(format!("file store task failed: {e}")))?
    }
}

fn io_error(e: std::io::Error) -> StoreError {
    StoreError::Refused(format!("file store I/O: {e}"))
}

impl FileNodes<'_> {
    fn dir_of(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }
}

impl Nodes for FileNodes<'_> {
    fn read(&self, path: &str) -> Result<Option<Versioned>, StoreError> {
        let bytes = match fs::read(self.dir_of(path).join(NODE_FILE)) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(e)),
        };
        let corrupt =
            || StoreError::Refused(format!("file store node {path} has a damaged header"));
        let newline = bytes.iter().position(|&b| b == b'\n').ok_or_else(corrupt)?;
        let header = std::str::from_utf8(&bytes[..newline]).map_err(|_| corrupt())?;
        let version = header
            .strip_prefix(HEADER)
            .and_then(|v| v.parse().ok())
            .ok_or_else(corrupt)?;
        Ok(Some(Versioned {
            data: bytes[newline + 1..].to_vec(),
            version,
            created: 0,
        }))
    }

    fn write(&mut self, path: &str, node: &Versioned) -> Result<(), StoreError> {
        let dir = self.dir_of(path);
        fs::create_dir_all(&dir).map_err(io_error)?;
        let tmp = dir.join(format!(".node.tmp.{}", std::process::id()));
        let mut file = File::create(&tmp).map_err(io_error)?;
        file.write_all(format!("{HEADER}{}\n", node.version).as_bytes())
            .map_err(io_error)?;
        file.write_all(&node.data).map_err(io_error)?;
        file.sync_all().map_err(io_error)?;
        fs::rename(&tmp, dir.join(NODE_FILE)).map_err(io_error)?;
        // The write has applied once renamed: a failure now is not a refusal (a caller told
        // "nothing written" would send the same write again).
        File::open(&dir).and_then(|d| d.sync_all()).map_err(|e| {
            StoreError::Unknown(format!(
                "file store: node {path} written, its directory not synced: {e}"
            ))
        })
    }

    fn remove(&mut self, path: &str) -> Result<(), StoreError> {
        let dir = self.dir_of(path);
        fs::remove_file(dir.join(NODE_FILE)).map_err(io_error)?;
        // Leftover temporary files from crashed writers may remain; remove what is empty.
        let _ = fs::remove_dir(&dir);
        Ok(())
    }

    fn list(&self, path: &str) -> Result<Vec<String>, StoreError> {
        let mut names = Vec::new();
        for entry in fs::read_dir(self.dir_of(path)).map_err(io_error)? {
            let entry = entry.map_err(io_error)?;
            if entry.path().join(NODE_FILE).is_file() {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        names.sort();
        Ok(names)
    }
}

impl Store for FileStore {
    fn origin(&self) -> Option<Arc<str>> {
        Some(Arc::clone(&self.origin))
    }
    async fn get(&self, path: &str) -> Result<Versioned, StoreError> {
        let path = path.to_string();
        self.locked(move |nodes| local::get(nodes, &path)).await
    }
    async fn create(&self, path: &str, data: &[u8]) -> Result<(), StoreError> {
        let (path, data) = (path.to_string(), data.to_vec());
        self.locked(move |nodes| local::create(nodes, &path, &data))
            .await
    }
    async fn set(
        &self,
        path: &str,
        data: &[u8],
        expected: i32,
        _planned: ReadOn,
    ) -> Result<i32, StoreError> {
        let (path, data) = (path.to_string(), data.to_vec());
        self.locked(move |nodes| local::set(nodes, &path, &data, expected))
            .await
    }
    async fn replace(
        &self,
        path: &str,
        data: &[u8],
        expected: i32,
        _planned: ReadOn,
    ) -> Result<Option<i64>, StoreError> {
        let (path, data) = (path.to_string(), data.to_vec());
        self.locked(move |nodes| local::replace(nodes, &path, &data, expected))
            .await
    }
    fn read_on(&self) -> ReadOn {
        ReadOn::default()
    }
    async fn sync(&self, _path: &str) -> Result<(), StoreError> {
        Ok(())
    }
    async fn children(&self, path: &str) -> Result<Vec<String>, StoreError> {
        let path = path.to_string();
        self.locked(move |nodes| local::children(nodes, &path))
            .await
    }
    async fn delete(&self, path: &str, expected: i32) -> Result<(), StoreError> {
        let path = path.to_string();
        self.locked(move |nodes| local::delete(nodes, &path, expected))
            .await
    }
}
