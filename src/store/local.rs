//! Compare-and-set semantics shared by the embedded stores, written once over a node backend.

use super::{parent, StoreError, Versioned};

/// Where an embedded store keeps its nodes. Callers hold the store's lock around every call.
pub(crate) trait Nodes {
    /// The node at `path`, if any.
    fn read(&self, path: &str) -> Result<Option<Versioned>, StoreError>;
    /// Writes (creates or replaces) the node at `path`.
    fn write(&mut self, path: &str, node: &Versioned) -> Result<(), StoreError>;
    /// Removes the node at `path`.
    fn remove(&mut self, path: &str) -> Result<(), StoreError>;
    /// The sorted names of the children of `path`.
    fn list(&self, path: &str) -> Result<Vec<String>, StoreError>;
}

pub(crate) fn get(nodes: &impl Nodes, path: &str) -> Result<Versioned, StoreError> {
    nodes.read(path)?.ok_or(StoreError::NoNode)
}

pub(crate) fn create(nodes: &mut impl Nodes, path: &str, data: &[u8]) -> Result<(), StoreError> {
    if nodes.read(path)?.is_some() {
        return Err(StoreError::NodeExists);
    }
    let mut missing = Vec::new();
    let mut cursor = parent(path);
    while let Some(p) = cursor {
        if nodes.read(p)?.is_some() {
            break;
        }
        missing.push(p);
        cursor = parent(p);
    }
    for p in missing.into_iter().rev() {
        nodes.write(
            p,
            &Versioned {
                data: Vec::new(),
                version: 0,
                created: 0,
            },
        )?;
    }
    nodes.write(
        path,
        &Versioned {
            data: data.to_vec(),
            version: 0,
            created: 0,
        },
    )
}

pub(crate) fn set(
    nodes: &mut impl Nodes,
    path: &str,
    data: &[u8],
    expected: i32,
) -> Result<i32, StoreError> {
    let node = get(nodes, path)?;
    if node.version != expected {
        return Err(StoreError::BadVersion);
    }
    let version = expected
        .checked_add(1)
        .ok_or_else(|| StoreError::Refused("data version would wrap".into()))?;
    nodes.write(
        path,
        &Versioned {
            data: data.to_vec(),
            version,
            created: 0,
        },
    )?;
    Ok(version)
}

/// A node deleted at `expected` and created again holding `data`, in one step under the store's
/// lock. The embedded stores keep no incarnations: `created` stays what it was.
pub(crate) fn replace(
    nodes: &mut impl Nodes,
    path: &str,
    data: &[u8],
    expected: i32,
) -> Result<Option<i64>, StoreError> {
    let node = get(nodes, path)?;
    if node.version != expected {
        return Err(StoreError::BadVersion);
    }
    if !nodes.list(path)?.is_empty() {
        return Err(StoreError::Refused("node has children".into()));
    }
    nodes.write(
        path,
        &Versioned {
            data: data.to_vec(),
            version: 0,
            created: node.created,
        },
    )?;
    Ok(Some(node.created))
}

pub(crate) fn delete(nodes: &mut impl Nodes, path: &str, expected: i32) -> Result<(), StoreError> {
    let node = get(nodes, path)?;
    if node.version != expected {
        return Err(StoreError::BadVersion);
    }
    if !nodes.list(path)?.is_empty() {
        return Err(StoreError::Refused("node has children".into()));
    }
    nodes.remove(path)
}

pub(crate) fn children(nodes: &impl Nodes, path: &str) -> Result<Vec<String>, StoreError> {
    // The root always exists, as in ZooKeeper, though no node file holds it.
    if path != "/" {
        get(nodes, path)?;
    }
    nodes.list(path)
}
