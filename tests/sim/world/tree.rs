//! The simulated data tree: nodes with their data, ACL and `Stat` (zxids, data version, child
//! version, ephemeral owner), changed by transactions that follow ZooKeeper's rules: a create
//! needs its parent and names a sequential node after the parent's child version (`%010d`), a
//! versioned set, delete or check refuses another version, a delete refuses a node with
//! children, and a `multi` applies all of its ops under one zxid or none of them, failing at
//! the index of the first op that fails.

use std::collections::{BTreeMap, BTreeSet};

use zooid::zk::{Acl, EventKind, Mode, Op, OpResult, Stat, Verdict};

/// One znode.
#[derive(Clone, Debug)]
pub struct Node {
    pub data: Vec<u8>,
    pub acl: Vec<Acl>,
    pub stat: Stat,
    pub children: BTreeSet<String>,
}

/// A change a transaction made, for the watches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub kind: EventKind,
}

/// The whole tree at one zxid.
#[derive(Clone, Debug)]
pub struct Tree {
    pub nodes: BTreeMap<String, Node>,
    /// The zxid of the last transaction applied.
    pub zxid: i64,
}

/// Why an op failed: the verdict the servers' error reads as, and their words.
pub type Refusal = (Verdict, &'static str);

fn stat(zxid: i64, now_ms: i64, owner: i64, data: &[u8]) -> Stat {
    Stat {
        czxid: zxid,
        mzxid: zxid,
        pzxid: zxid,
        ctime: now_ms,
        mtime: now_ms,
        version: 0,
        cversion: 0,
        aversion: 0,
        ephemeral_owner: owner,
        data_length: data.len() as i32,
        num_children: 0,
    }
}

/// The parent of `path` (`/` for a top-level node), `None` for the root.
pub fn parent(path: &str) -> Option<&str> {
    match path.rfind('/') {
        None => None,
        Some(0) if path.len() > 1 => Some("/"),
        Some(0) => None,
        Some(i) => Some(&path[..i]),
    }
}

/// ZooKeeper's path rules, as far as zooid can break them.
pub fn valid(path: &str) -> bool {
    path == "/"
        || (path.starts_with('/')
            && !path.ends_with('/')
            && !path.contains("//")
            && !path.split('/').any(|part| part == "." || part == ".."))
}

impl Tree {
    /// The tree of a fresh ensemble: `/` and `/zookeeper`.
    pub fn new() -> Self {
        let mut tree = Tree {
            nodes: BTreeMap::new(),
            zxid: 0,
        };
        let open = vec![Acl::world(zooid::zk::Perms::ALL)];
        let root = Node {
            data: Vec::new(),
            acl: open.clone(),
            stat: stat(0, 0, 0, &[]),
            children: ["zookeeper".to_string()].into(),
        };
        tree.nodes.insert("/".into(), root);
        let zk = Node {
            data: Vec::new(),
            acl: open,
            stat: stat(0, 0, 0, &[]),
            children: BTreeSet::new(),
        };
        tree.nodes.insert("/zookeeper".into(), zk);
        tree.fix_counts("/");
        tree
    }

    fn fix_counts(&mut self, path: &str) {
        if let Some(node) = self.nodes.get_mut(path) {
            node.stat.num_children = node.children.len() as i32;
        }
    }

    pub fn get(&self, path: &str) -> Option<&Node> {
        self.nodes.get(path)
    }

    /// Creates a node under transaction `zxid`; returns the created path.
    #[allow(clippy::too_many_arguments)] // One argument per field of ZooKeeper's create.
    pub fn create(
        &mut self,
        zxid: i64,
        now_ms: i64,
        session: i64,
        path: &str,
        data: &[u8],
        mode: Mode,
        acl: Vec<Acl>,
        changes: &mut Vec<Change>,
    ) -> Result<String, Refusal> {
        if !valid(path) || path == "/" {
            return Err((Verdict::Refused, "bad arguments: invalid path"));
        }
        if acl.is_empty() {
            return Err((Verdict::Refused, "invalid ACL"));
        }
        let parent_path = parent(path).ok_or((Verdict::Refused, "bad arguments"))?;
        let parent_node = self
            .nodes
            .get(parent_path)
            .ok_or((Verdict::NoNode, "no node (parent)"))?;
        if parent_node.stat.ephemeral_owner != 0 {
            return Err((Verdict::Refused, "no children for ephemerals"));
        }
        let created = if mode.is_sequential() {
            format!("{path}{:010}", parent_node.stat.cversion)
        } else {
            path.to_string()
        };
        if self.nodes.contains_key(&created) {
            return Err((Verdict::NodeExists, "node exists"));
        }
        let owner = if mode.is_ephemeral() { session } else { 0 };
        let node = Node {
            data: data.to_vec(),
            acl,
            stat: stat(zxid, now_ms, owner, data),
            children: BTreeSet::new(),
        };
        self.nodes.insert(created.clone(), node);
        let name = created[parent_path.len()..]
            .trim_start_matches('/')
            .to_string();
        let parent_node = self.nodes.get_mut(parent_path).expect("checked above");
        parent_node.children.insert(name);
        parent_node.stat.cversion += 1;
        parent_node.stat.pzxid = zxid;
        self.fix_counts(parent_path);
        changes.push(Change {
            path: created.clone(),
            kind: EventKind::Created,
        });
        changes.push(Change {
            path: parent_path.to_string(),
            kind: EventKind::ChildrenChanged,
        });
        Ok(created)
    }

    pub fn set(
        &mut self,
        zxid: i64,
        now_ms: i64,
        path: &str,
        data: &[u8],
        expected: Option<i32>,
        changes: &mut Vec<Change>,
    ) -> Result<Stat, Refusal> {
        let node = self
            .nodes
            .get_mut(path)
            .ok_or((Verdict::NoNode, "no node"))?;
        if expected.is_some_and(|v| v != -1 && v != node.stat.version) {
            return Err((Verdict::BadVersion, "bad version"));
        }
        node.data = data.to_vec();
        // Servers before 3.9.1 wrap the 32-bit version; zooid moves the node before that.
        node.stat.version = node.stat.version.wrapping_add(1);
        node.stat.mzxid = zxid;
        node.stat.mtime = now_ms;
        node.stat.data_length = data.len() as i32;
        changes.push(Change {
            path: path.to_string(),
            kind: EventKind::DataChanged,
        });
        Ok(node.stat)
    }

    pub fn delete(
        &mut self,
        zxid: i64,
        path: &str,
        expected: Option<i32>,
        changes: &mut Vec<Change>,
    ) -> Result<(), Refusal> {
        if path == "/" || path == "/zookeeper" {
            return Err((Verdict::Refused, "bad arguments: reserved node"));
        }
        let node = self.nodes.get(path).ok_or((Verdict::NoNode, "no node"))?;
        if expected.is_some_and(|v| v != -1 && v != node.stat.version) {
            return Err((Verdict::BadVersion, "bad version"));
        }
        if !node.children.is_empty() {
            return Err((Verdict::Refused, "not empty"));
        }
        self.nodes.remove(path);
        let parent_path = parent(path).expect("not the root");
        let name = path[parent_path.len()..].trim_start_matches('/');
        let parent_node = self.nodes.get_mut(parent_path).expect("parents exist");
        parent_node.children.remove(name);
        parent_node.stat.cversion += 1;
        parent_node.stat.pzxid = zxid;
        self.fix_counts(parent_path);
        changes.push(Change {
            path: path.to_string(),
            kind: EventKind::Deleted,
        });
        changes.push(Change {
            path: parent_path.to_string(),
            kind: EventKind::ChildrenChanged,
        });
        Ok(())
    }

    pub fn check(&self, path: &str, version: i32) -> Result<(), Refusal> {
        let node = self.nodes.get(path).ok_or((Verdict::NoNode, "no node"))?;
        if version != -1 && node.stat.version != version {
            return Err((Verdict::BadVersion, "bad version"));
        }
        Ok(())
    }

    /// Applies `ops` as one transaction `zxid`: all, or none (the index of the op that failed).
    pub fn multi(
        &mut self,
        zxid: i64,
        now_ms: i64,
        session: i64,
        ops: &[Op],
        default_acl: &[Acl],
        changes: &mut Vec<Change>,
    ) -> Result<Vec<OpResult>, (usize, Refusal)> {
        let mut work = self.clone();
        let mut results = Vec::with_capacity(ops.len());
        let mut staged = Vec::new();
        for (index, op) in ops.iter().enumerate() {
            let result = match op {
                Op::Check { path, version } => work.check(path, *version).map(|_| OpResult::Check),
                Op::Create { path, data, create } => {
                    let acl = create.acl.clone().unwrap_or_else(|| default_acl.to_vec());
                    work.create(
                        zxid,
                        now_ms,
                        session,
                        path,
                        data,
                        create.mode,
                        acl,
                        &mut staged,
                    )
                    .map(|created| {
                        let stat = work.nodes.get(&created).map(|n| n.stat);
                        OpResult::Create {
                            path: created,
                            stat,
                        }
                    })
                }
                Op::Set {
                    path,
                    data,
                    expected,
                } => work
                    .set(zxid, now_ms, path, data, *expected, &mut staged)
                    .map(|stat| OpResult::Set { stat }),
                Op::Delete { path, expected } => work
                    .delete(zxid, path, *expected, &mut staged)
                    .map(|_| OpResult::Delete),
            };
            match result {
                Ok(result) => results.push(result),
                Err(refusal) => return Err((index, refusal)),
            }
        }
        work.zxid = zxid;
        *self = work;
        changes.extend(staged);
        Ok(results)
    }

    /// The ephemeral nodes `session` owns, deepest first.
    pub fn owned_by(&self, session: i64) -> Vec<String> {
        let mut owned: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.stat.ephemeral_owner == session)
            .map(|(p, _)| p.clone())
            .collect();
        owned.sort_by_key(|p| std::cmp::Reverse(p.len()));
        owned
    }
}
