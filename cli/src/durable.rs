//! The durable-reservation commands: `restore` and `dump` (and, with the election, `keeper`).

use zooid::alloc::Restored;
use zooid::blocking::block_on;
use zooid::durable::{DurableStore, Record};
use zooid::{ConnectOptions, IdCategory, IdGeneratorService, ZooidError};

use crate::stop::Stop;

/// Whether `category` lies under `root` (`/` holds everything).
pub fn under_root(category: &str, root: &str) -> bool {
    let root = root.trim_end_matches('/');
    root.is_empty()
        || category == root
        || category
            .strip_prefix(root)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// `zooid restore`: recreates every category under `root` from the durable record. A record
/// that cannot be read is named on stderr and left as it is, whatever `root` (its category is
/// not known), and the others are restored; the command then fails, counting both.
pub fn restore(
    connect: &str,
    options: &ConnectOptions,
    location: &str,
    root: &str,
) -> zooid::Result<()> {
    if !root.starts_with('/') {
        return Err(ZooidError::InvalidArgument(format!(
            "--root {root:?} must start with '/' (e.g. / or /eventpublish/idgen)"
        )));
    }
    existing(location)?;
    let service = crate::ids::open(connect, options)?;
    let service = service.as_async();
    // The durable store's clients live on the runtime, like everything async here.
    block_on(async {
        let store = DurableStore::open(location)?;
        let listing = store.list().await?;
        for err in &listing.unreadable {
            eprintln!("zooid: restore: skipped a record that could not be read: {err}");
        }
        let mut failures = 0;
        let mut matched = 0;
        for record in listing.records {
            if !under_root(&record.category, root) {
                continue;
            }
            matched += 1;
            match restore_one(service, &store, &record).await {
                Ok(line) => {
                    println!("{line}");
                    if record.ceiling >= record.bounds.end() {
                        eprintln!(
                            "zooid: restore {}: EXHAUSTED: the record's ceiling {} is the category's last ID, so every ID may have been handed out before ZooKeeper lost its data and no take succeeds any more; give the category new bounds (a new category above {}) before clients need it",
                            record.category,
                            record.ceiling,
                            record.bounds.end()
                        );
                    }
                }
                Err(err) => {
                    failures += 1;
                    eprintln!("zooid: restore {}: {err}", record.category);
                }
            }
        }
        if matched == 0 && listing.unreadable.is_empty() {
            // After a loss, restoring nothing is a wrong location or root far more often than
            // an intent, and what follows it (creating the categories afresh) hands out IDs
            // again.
            return Err(ZooidError::InvalidArgument(format!(
                "no durable record under {root} at {location}: nothing restored (check --durable and --root)"
            )));
        }
        let mut reasons = Vec::new();
        if failures > 0 {
            reasons.push(format!("{failures} categories could not be restored"));
        }
        if let Some(unreadable) = unreadable(&listing.unreadable) {
            reasons.push(unreadable);
        }
        if !reasons.is_empty() {
            return Err(ZooidError::Store {
                path: location.to_string(),
                reason: reasons.join("; "),
            });
        }
        Ok(())
    })?
}

async fn restore_one(
    service: &IdGeneratorService,
    store: &DurableStore,
    record: &Record,
) -> zooid::Result<String> {
    let category = IdCategory::new(&record.category)?;
    match service.pool_info(&category).await {
        Ok(info) if info.ceiling.is_some_and(|c| c >= record.ceiling) => {
            return Ok(format!(
                "kept     {} (its ceiling {} is at or above the record's {})",
                record.category,
                info.ceiling.unwrap_or_default(),
                record.ceiling
            ));
        }
        Ok(_) | Err(ZooidError::NotFound { .. }) => {}
        Err(err) => return Err(err),
    }
    // The new history's generation goes to the record first (durably), then into the pool as
    // its epoch: a keeper's tokens restart from zero on the new ensemble, and are ordered by
    // (generation, token) above everything the old history wrote.
    let bumped = record.for_new_history();
    let generation = bumped.fence.generation;
    store.write(&bumped).await?;
    let (bounds, ceiling) = (record.bounds, record.ceiling);
    let outcome = service
        .restore_category_in(&category, bounds, ceiling, generation, record.layout())
        .await?;
    Ok(match outcome {
        Restored::Created => format!(
            "restored {} bounds {} ceiling {} epoch {generation} (IDs {}:{} free{})",
            record.category,
            record.bounds,
            record.ceiling,
            record.ceiling + 1,
            record.bounds.end(),
            record
                .block_size
                .map(|unit| format!(", block allocation in blocks of {unit}"))
                .unwrap_or_default()
        ),
        Restored::Kept => format!("kept     {} (raced with a keeper)", record.category),
        Restored::Repaired { removed } => format!(
            "repaired {} (it was behind the record: {removed} free IDs at or below {} removed)",
            record.category, record.ceiling
        ),
    })
}

/// What `zooid keeper` was asked to do.
pub struct KeeperArgs {
    pub durable: String,
    pub root: String,
    pub name: Option<String>,
    pub group: String,
    pub reserve_minutes: f64,
    pub reserve_floor: u64,
    pub reserve_cap: u64,
    pub tick_ms: u64,
    pub metrics_addr: Option<std::net::SocketAddr>,
}

/// `zooid keeper`: runs a keeper until SIGTERM or SIGINT; metrics and events go to stderr.
pub fn keeper(connect: &str, options: &ConnectOptions, args: KeeperArgs) -> zooid::Result<()> {
    use std::sync::Arc;
    use std::time::Duration;
    use zooid::keeper::{KeeperOptions, Sizing};

    if !(args.reserve_minutes > 0.0 && args.reserve_minutes.is_finite()) {
        return Err(ZooidError::InvalidArgument(
            "--reserve-minutes must be positive".into(),
        ));
    }
    let mut stop = block_on(async {
        let stop = Stop::new()?;
        crate::metrics::serve(args.metrics_addr)?;
        Ok::<_, ZooidError>(stop)
    })??;
    // The session is the blocking facade's, held by a service until the keeper stopped.
    let service = crate::ids::open(connect, options)?;
    let zk = service.zookeeper()?;
    block_on(async {
        let durable = DurableStore::open(&args.durable)?;
        let name = args.name.unwrap_or_else(|| {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_else(|_| "host".into());
            format!("{host}:{}", std::process::id())
        });
        let mut keeper_options = KeeperOptions::new(&args.root, &name);
        keeper_options.group = args.group;
        keeper_options.tick = Duration::from_millis(args.tick_ms.max(10));
        keeper_options.sizing = Sizing {
            cover: Duration::from_secs_f64(args.reserve_minutes * 60.0),
            floor: args.reserve_floor.max(1),
            cap: args.reserve_cap.max(1),
            ..Sizing::default()
        };
        keeper_options.report = Arc::new(|line| {
            let ms = zooid::durable::now_ms();
            eprintln!("{} keeper: {line}", zooid::durable::rfc3339_ms(ms));
        });
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut keeper = tokio::spawn(zooid::keeper::run(
            zk.clone(),
            durable,
            keeper_options,
            stop_rx,
        ));
        // A keeper that ends by itself (it could not join its group, its election closed) ends
        // the command with its error: a process that stays up keeping nothing is a keeper less
        // that nobody sees missing.
        let ended = tokio::select! {
            _ = stop.recv() => {
                let _ = stop_tx.send(true);
                (&mut keeper).await
            }
            ended = &mut keeper => ended,
        };
        let result = ended.map_err(|e| ZooidError::Store {
            path: "keeper".into(),
            reason: e.to_string(),
        })?;
        drop(zk);
        result
    })?
}

/// `zooid dump`: the records, as stored, to stdout. A record that cannot be read is named on
/// stderr and left as it is; the others are printed, and the command then fails.
pub fn dump(location: &str) -> zooid::Result<()> {
    existing(location)?;
    block_on(async {
        let store = DurableStore::open(location)?;
        let listing = store.list().await?;
        for record in &listing.records {
            print!("{}", record.render());
        }
        for err in &listing.unreadable {
            eprintln!("zooid: dump: skipped a record that could not be read: {err}");
        }
        match unreadable(&listing.unreadable) {
            Some(reason) => Err(ZooidError::Store {
                path: location.to_string(),
                reason,
            }),
            None => Ok(()),
        }
    })?
}

/// Refuses a durable location that is a directory not there: opening it would create it, and
/// read it as holding no record (a mistyped `--durable` restored nothing, silently).
fn existing(location: &str) -> zooid::Result<()> {
    if location.starts_with("s3://") || std::path::Path::new(location).is_dir() {
        return Ok(());
    }
    Err(ZooidError::InvalidArgument(format!(
        "--durable {location}: no such directory"
    )))
}

/// What the summary of a command says of the records it could not read, if any.
fn unreadable(errors: &[ZooidError]) -> Option<String> {
    match errors.len() {
        0 => None,
        1 => Some("1 record could not be read (left as it is)".into()),
        n => Some(format!("{n} records could not be read (left as they are)")),
    }
}

#[cfg(test)]
mod tests {
    use super::under_root;

    #[test]
    fn roots_match_whole_path_segments() {
        assert!(under_root("/a/b", "/"));
        assert!(under_root("/a/b", "/a"));
        assert!(under_root("/a/b", "/a/"));
        assert!(!under_root("/ab/c", "/a"));
        assert!(under_root("/a", "/a"));
    }
}
