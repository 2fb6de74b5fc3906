//! The in-memory store: one process, no persistence; for tests and single-process use.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use once_cell::sync::Lazy;

use super::local::{self, Nodes};
use super::{ReadOn, Store, StoreError, Versioned};

/// Nodes in process memory. Clones share the same nodes.
#[derive(Clone)]
pub struct MemoryStore {
    nodes: Arc<Mutex<MemoryNodes>>,
    /// `mem:#N`, N counting the stores the process made (an address could be reused).
    origin: Arc<str>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        static MADE: AtomicU64 = AtomicU64::new(0);
        Self {
            nodes: Arc::default(),
            origin: format!("mem:#{}", MADE.fetch_add(1, Ordering::Relaxed)).into(),
        }
    }
}

#[derive(Default)]
struct MemoryNodes(BTreeMap<String, Versioned>);

static NAMED: Lazy<Mutex<HashMap<String, MemoryStore>>> = Lazy::new(Default::default);

impl MemoryStore {
    /// A new, empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The process-wide store called `name`; an empty name gives a new private store.
    pub fn named(name: &str) -> Self {
        if name.is_empty() {
            return Self::new();
        }
        let mut named = NAMED
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        named.entry(name.to_string()).or_default().clone()
    }

    fn lock(&self) -> MutexGuard<'_, MemoryNodes> {
        // The map is never left half-updated, so a poisoned lock is safe to reuse.
        self.nodes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Nodes for MemoryNodes {
    fn read(&self, path: &str) -> Result<Option<Versioned>, StoreError> {
        Ok(self.0.get(path).cloned())
    }
    fn write(&mut self, path: &str, node: &Versioned) -> Result<(), StoreError> {
        self.0.insert(path.to_string(), node.clone());
        Ok(())
    }
    fn remove(&mut self, path: &str) -> Result<(), StoreError> {
        self.0.remove(path);
        Ok(())
    }
    fn list(&self, path: &str) -> Result<Vec<String>, StoreError> {
        let prefix = format!("{path}/");
        Ok(self
            .0
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(k, _)| &k[prefix.len()..])
            .filter(|rest| !rest.contains('/'))
            .map(str::to_string)
            .collect())
    }
}

impl Store for MemoryStore {
    fn origin(&self) -> Option<Arc<str>> {
        Some(Arc::clone(&self.origin))
    }
    async fn get(&self, path: &str) -> Result<Versioned, StoreError> {
        local::get(&*self.lock(), path)
    }
    async fn create(&self, path: &str, data: &[u8]) -> Result<(), StoreError> {
        local::create(&mut *self.lock(), path, data)
    }
    async fn set(
        &self,
        path: &str,
        data: &[u8],
        expected: i32,
        _planned: ReadOn,
    ) -> Result<i32, StoreError> {
        local::set(&mut *self.lock(), path, data, expected)
    }
    async fn replace(
        &self,
        path: &str,
        data: &[u8],
        expected: i32,
        _planned: ReadOn,
    ) -> Result<Option<i64>, StoreError> {
        local::replace(&mut *self.lock(), path, data, expected)
    }
    fn read_on(&self) -> ReadOn {
        ReadOn::default()
    }
    async fn sync(&self, _path: &str) -> Result<(), StoreError> {
        Ok(())
    }
    async fn children(&self, path: &str) -> Result<Vec<String>, StoreError> {
        local::children(&*self.lock(), path)
    }
    async fn delete(&self, path: &str, expected: i32) -> Result<(), StoreError> {
        local::delete(&mut *self.lock(), path, expected)
    }
}
