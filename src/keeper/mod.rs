//! The keeper: keeps every category's ceiling ahead of demand, each raise made durable outside
//! ZooKeeper before it takes effect (docs/DURABILITY.md).
//!
//! Several keepers run for redundancy; they elect one active keeper with [`crate::recipes::election::Election`]
//! (herd-free succession, fenced writes). The active keeper
//!
//! - discovers the categories under its root: one persistent recursive watch on the root (it
//!   never needs re-arming, so no change can slip between a trigger and a re-registration, the
//!   seed's missed-watch gap), a full re-scan after every reconnect and new session (events that
//!   happened while disconnected are not replayed), and a periodic re-scan as a backstop. On
//!   servers without persistent watches (ZooKeeper 3.4 and 3.5;
//!   [`Session::persistent_watches`](crate::zk::Session::persistent_watches) asks once) it
//!   polls instead: a full re-scan every [`KeeperOptions::poll`];
//! - evaluates a category on every change of its node and on every tick: headroom (free IDs at
//!   or below the ceiling), take rate, reserve;
//! - raises a ceiling when the headroom falls under the low-water mark: (1) the durable record
//!   gets the new ceiling, made durable; (2) the pool gets it by a fenced, versioned write;
//! - repairs a pool that is behind its durable record (rolled back, or a crash between (1) and
//!   (2)): removes its free IDs at or below the recorded ceiling, bumps the generation, raises.

mod raise;
pub mod sizing;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::durable::DurableStore;
use crate::error::{Result, ZooidError};
use crate::recipes::election::{Election, ElectionOptions, LeaderState, PausePolicy};
use crate::zk::{ConnectionState, EventKind, Failure, TreeWatch, Verdict, Zk, ZooKeeperExt};
pub use sizing::{Sizing, TakeRate};

/// Where a keeper may be told to crash (tests): `ZOOID_KEEPER_CRASH_AT` names one, and the
/// process aborts there on its first raise.
pub const CRASH_POINTS: [&str; 3] = ["before-durable", "after-durable", "after-zookeeper"];

/// A line of keeper output (metrics and events), handed to [`KeeperOptions::report`].
pub type Reporter = Arc<dyn Fn(&str) + Send + Sync>;

/// How a keeper runs.
#[derive(Clone)]
pub struct KeeperOptions {
    /// Categories are the pool nodes under this path.
    pub root: String,
    /// The keepers' election group.
    pub group: String,
    /// This keeper's name in the election.
    pub name: String,
    /// Reserve sizing.
    pub sizing: Sizing,
    /// How often every category is evaluated (and metrics reported) without a change.
    pub tick: Duration,
    /// How often the category list is re-read in full without a reason.
    pub rescan: Duration,
    /// How often the category list is re-read in full on servers without persistent watches
    /// (ZooKeeper before 3.6), where that re-read is how new categories are found.
    pub poll: Duration,
    /// Receives metric and event lines.
    pub report: Reporter,
}

impl std::fmt::Debug for KeeperOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeeperOptions")
            .field("root", &self.root)
            .field("group", &self.group)
            .field("name", &self.name)
            .field("sizing", &self.sizing)
            .field("tick", &self.tick)
            .field("rescan", &self.rescan)
            .field("poll", &self.poll)
            .finish_non_exhaustive()
    }
}

/// The default election group of the keepers.
pub const DEFAULT_GROUP: &str = "/zooid/keepers";

impl KeeperOptions {
    /// Options for a keeper of the categories under `root`.
    pub fn new(root: &str, name: &str) -> Self {
        Self {
            root: root.to_string(),
            group: DEFAULT_GROUP.to_string(),
            name: name.to_string(),
            sizing: Sizing::default(),
            tick: Duration::from_secs(1),
            rescan: Duration::from_secs(30),
            poll: Duration::from_secs(2),
            report: Arc::new(|line| tracing::info!("{line}")),
        }
    }
}

/// What the active keeper knows of one category.
#[derive(Debug, Default)]
pub(crate) struct Tracked {
    pub rate: TakeRate,
    /// When this keeper last made a ceiling durable for it.
    pub last_durable: Option<Instant>,
    /// The last report line's time.
    pub last_report: Option<Instant>,
    /// A raise of this term made durable whose pool write has not applied yet: its ceiling and
    /// the pool version it was planned at (`Pool::version_at`, which goes on across a move of
    /// the pool to a fresh node, where the data version starts again at 0). Only a pool at or past that version is ours to
    /// finish; an older one came back from an older state. (A repair is never pending: one whose
    /// pool write did not apply is a repair still to make, not a raise to finish.)
    pub pending: Option<(i64, i64)>,
}

/// Runs a keeper on `zk` until `shutdown` turns true: joins the election, and while active keeps
/// the ceilings of the categories under the root ahead of demand.
pub async fn run(
    zk: Zk,
    durable: DurableStore,
    options: KeeperOptions,
    mut shutdown: watch::Receiver<bool>,
) -> Result<()> {
    let mut election_options = ElectionOptions::new(options.name.clone());
    election_options.on_pause = PausePolicy::Stop;
    let election = Election::join(&zk, &options.group, election_options).await?;
    let durable = Arc::new(durable);
    let report = options.report.clone();
    report(&format!("keeper {} joined {}", options.name, options.group));
    loop {
        if *shutdown.borrow() {
            break;
        }
        let token = tokio::select! {
            biased;
            token = election.await_leadership(Duration::from_secs(3600)) => match token {
                Ok(token) => token,
                Err(ZooidError::Timeout { .. }) => continue,
                Err(err) => return Err(err),
            },
            _ = shutdown.changed() => break,
        };
        report(&format!("keeper {} active, token {token}", options.name));
        let mut active = Active {
            zk: &zk,
            election: &election,
            token,
            durable: &durable,
            options: &options,
            tracked: BTreeMap::new(),
        };
        match active.lead(&mut shutdown).await {
            Ok(()) => report(&format!("keeper {} no longer active", options.name)),
            Err(err) => report(&format!("keeper {} stepped back: {err}", options.name)),
        }
    }
    let _ = election.resign().await;
    Ok(())
}

/// How the active keeper learns of new categories.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Discovery {
    /// A persistent recursive watch on the root (ZooKeeper 3.6+), plus the periodic re-scan.
    Watch,
    /// A full re-scan every [`KeeperOptions::poll`] (servers without persistent watches).
    Poll,
}

/// The active keeper's term.
pub(crate) struct Active<'a> {
    pub zk: &'a Zk,
    pub election: &'a Election,
    pub token: i64,
    pub durable: &'a DurableStore,
    pub options: &'a KeeperOptions,
    pub tracked: BTreeMap<String, Tracked>,
}

impl Active<'_> {
    /// Whether this term still holds: Active with the same token.
    fn still_leading(&self) -> bool {
        let status = self.election.status();
        status.state == LeaderState::Active && status.token == Some(self.token)
    }

    /// Leads until the leadership ends (Ok) or a keeper error makes it step back (Err).
    async fn lead(&mut self, shutdown: &mut watch::Receiver<bool>) -> Result<()> {
        let mut session_rx = self.zk.subscribe();
        let mut election_rx = self.election.subscribe();
        let mut watcher: Option<(u64, TreeWatch)> = None;
        // Servers before 3.6 have no persistent watches (asked once per session).
        let mut discovery = match self.zk.persistent_watches().await {
            Ok(true) => Discovery::Watch,
            Ok(false) => {
                self.report_polling();
                Discovery::Poll
            }
            Err(err) => {
                tracing::warn!(%err, "keeper: cannot tell whether the servers have persistent watches; polling this term");
                Discovery::Poll
            }
        };
        let mut need_scan = true;
        let mut last_scan = Instant::now();
        let mut dirty: BTreeSet<String> = BTreeSet::new();
        let mut tick = tokio::time::interval(self.options.tick);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            if *shutdown.borrow() || !self.still_leading() {
                return Ok(());
            }
            let status = self.zk.status();
            if status.state == ConnectionState::Connected {
                if discovery == Discovery::Watch
                    && watcher.as_ref().map(|(g, _)| *g) != Some(status.generation)
                {
                    let generation = status.generation;
                    match self.zk.watch_tree(generation, &self.options.root).await {
                        Ok(w) => {
                            watcher = Some((generation, w));
                            need_scan = true;
                        }
                        // Servers that turn the request down have no persistent watches.
                        Err(Failure {
                            verdict: Verdict::Refused,
                            ..
                        }) => {
                            discovery = Discovery::Poll;
                            watcher = None;
                            self.report_polling();
                        }
                        Err(err) => {
                            tracing::warn!(root = self.options.root, %err, "keeper: cannot watch the root yet");
                            watcher = None;
                        }
                    }
                }
                let every = match discovery {
                    Discovery::Watch => self.options.rescan,
                    Discovery::Poll => self.options.poll.min(self.options.rescan),
                };
                if need_scan || last_scan.elapsed() >= every {
                    match self.scan().await {
                        Ok(found) => {
                            need_scan = false;
                            last_scan = Instant::now();
                            let known: BTreeSet<String> = self.tracked.keys().cloned().collect();
                            for gone in known.difference(&found) {
                                self.tracked.remove(gone);
                                (self.options.report)(&format!(
                                    "category {gone} dropped (deleted)"
                                ));
                            }
                            for new in found.difference(&known) {
                                self.tracked.insert(new.clone(), Tracked::default());
                                (self.options.report)(&format!("category {new} discovered"));
                            }
                            dirty.extend(found);
                        }
                        Err(err) => tracing::warn!(%err, "keeper: scan failed; retrying"),
                    }
                }
                let batch: Vec<String> = std::mem::take(&mut dirty).into_iter().collect();
                for path in batch {
                    if !self.still_leading() {
                        return Ok(());
                    }
                    if let Err(err) = self.evaluate(&path).await {
                        match err {
                            ZooidError::NotLeader { .. } => return Ok(()),
                            ZooidError::NotFound { .. } => {
                                if self.tracked.remove(&path).is_some() {
                                    (self.options.report)(&format!(
                                        "category {path} dropped (deleted)"
                                    ));
                                }
                            }
                            other => {
                                (self.options.report)(&format!("category {path}: {other}"));
                            }
                        }
                    }
                }
            }
            tokio::select! {
                // Polled in order, so that a seed replays (tests/sim); the shutdown first, so
                // that a stream of events cannot hold it off.
                biased;
                _ = shutdown.changed() => return Ok(()),
                event = async {
                    match watcher.as_mut() {
                        Some((_, w)) => Some(w.changed().await),
                        None => std::future::pending().await,
                    }
                } => {
                    let Some(event) = event else { continue };
                    match event.kind {
                        EventKind::DataChanged => {
                            if self.tracked.contains_key(&event.path) {
                                dirty.insert(event.path);
                            } else {
                                // A node that may have become a pool.
                                need_scan = true;
                            }
                        }
                        EventKind::Created | EventKind::Deleted => {
                            if !event.path.starts_with(self.options.group.as_str()) {
                                need_scan = true;
                            }
                        }
                        EventKind::Session | EventKind::ChildrenChanged => need_scan = true,
                    }
                }
                changed = session_rx.changed() => {
                    if changed.is_err() {
                        return Err(ZooidError::Closed { what: "ZooKeeper session".into() });
                    }
                    // Reconnected or a new session: events may have been missed meanwhile.
                    need_scan = true;
                }
                _ = election_rx.changed() => {}
                _ = tick.tick() => {
                    dirty.extend(self.tracked.keys().cloned());
                }
            }
        }
    }

    /// Says that the servers have no persistent watches, so categories are found by polling.
    fn report_polling(&self) {
        (self.options.report)(&format!(
            "keeper {}: the servers have no persistent watches (ZooKeeper before 3.6); \
             discovering categories by polling every {:?}",
            self.options.name, self.options.poll
        ));
    }

    /// Lists every pool node under the root (recursively), skipping ZooKeeper's own nodes and
    /// the keepers' election group.
    async fn scan(&self) -> Result<BTreeSet<String>> {
        let generation = self.zk.generation();
        let root = self.options.root.trim_end_matches('/');
        let mut todo = vec![if root.is_empty() {
            "/".to_string()
        } else {
            root.to_string()
        }];
        let mut found = BTreeSet::new();
        let unavailable = |e: Failure| ZooidError::ConnectionLost {
            category: self.options.root.clone(),
            reason: format!("keeper scan: {e}"),
        };
        while let Some(path) = todo.pop() {
            if path == "/zookeeper"
                || path == self.options.group
                || path.starts_with(&format!("{}/", self.options.group))
            {
                continue;
            }
            match self.zk.get(generation, &path).await {
                Ok((data, _)) => {
                    if data.starts_with(b"#zooid ") {
                        found.insert(path.clone());
                    }
                }
                Err(Failure {
                    verdict: Verdict::NoNode,
                    ..
                }) => continue,
                Err(e) => return Err(unavailable(e)),
            }
            match self.zk.children(generation, &path).await {
                Ok((children, _)) => {
                    // Block claims, receipts and holes of format-4 pools (and the free-list
                    // parts a retired format-3 pool left) are not categories.
                    for child in children
                        .into_iter()
                        .filter(|c| !crate::format::is_pool_child(c))
                    {
                        todo.push(if path == "/" {
                            format!("/{child}")
                        } else {
                            format!("{path}/{child}")
                        });
                    }
                }
                Err(Failure {
                    verdict: Verdict::NoNode,
                    ..
                }) => {}
                Err(e) => return Err(unavailable(e)),
            }
        }
        Ok(found)
    }
}
