//! The operator's read-only commands: `zooid stats CATEGORY...`, `zooid ls ROOT` and
//! `zooid status`.

use std::process::ExitCode;

use serde_json::json;
use zooid::blocking::IdGeneratorService;
use zooid::{CategoryStats, ConnectOptions, IdCategory, ServiceOptions, SessionStatus, ZooidError};

/// `zooid stats`: each category's free IDs, fragmentation and node size against its limit.
pub fn stats(
    connect: &str,
    options: &ConnectOptions,
    categories: &[String],
    json: bool,
) -> zooid::Result<()> {
    let service = IdGeneratorService::connect(connect, options, ServiceOptions::default())?;
    let mut rows = Vec::new();
    for name in categories {
        let category = IdCategory::new(name)?;
        service.pool_info(&category)?;
        let seen = service
            .stats()
            .categories
            .into_iter()
            .find(|c| c.category == category.name())
            .ok_or_else(|| ZooidError::NotFound {
                category: name.clone(),
            })?;
        rows.push(seen);
    }
    if json {
        let rows: Vec<_> = rows.iter().map(stats_json).collect();
        println!("{}", serde_json::Value::Array(rows));
        return Ok(());
    }
    println!(
        "{:<40} {:>20} {:>8} {:>10} {:>10} {:>6} {:>8}",
        "CATEGORY", "FREE_IDS", "RANGES", "NODE_BYTES", "LIMIT", "USED%", "VERSION"
    );
    for row in &rows {
        println!(
            "{:<40} {:>20} {:>8} {:>10} {:>10} {:>6.1} {:>8}",
            row.category,
            row.free_ids,
            row.ranges,
            row.node_bytes,
            row.node_bytes_limit,
            used_pct(row),
            row.version
        );
    }
    Ok(())
}

fn used_pct(row: &CategoryStats) -> f64 {
    if row.node_bytes_limit == 0 {
        return 0.0;
    }
    row.node_bytes as f64 * 100.0 / row.node_bytes_limit as f64
}

fn stats_json(row: &CategoryStats) -> serde_json::Value {
    json!({
        "category": row.category,
        "free_ids": row.free_ids,
        "ranges": row.ranges,
        "node_bytes": row.node_bytes,
        "node_bytes_limit": row.node_bytes_limit,
        "node_bytes_used_pct": (used_pct(row) * 10.0).round() / 10.0,
        "version": row.version,
        "ceiling_headroom": row.ceiling_headroom,
    })
}

/// `zooid ls`: the categories directly below ROOT (children that hold a pool), with their free
/// IDs. Other children (election groups, queues, plain parents) are left out.
pub fn ls(
    connect: &str,
    options: &ConnectOptions,
    root: &str,
    json: bool,
) -> zooid::Result<ExitCode> {
    if !root.starts_with('/') {
        return Err(ZooidError::InvalidArgument(format!(
            "ROOT {root:?} must start with '/' (e.g. / or /eventpublish/idgen)"
        )));
    }
    let service = IdGeneratorService::connect(connect, options, ServiceOptions::default())?;
    let root = if root.len() > 1 {
        root.trim_end_matches('/')
    } else {
        root
    };
    let children = match service.list_categories(root) {
        Ok(children) => children,
        Err(ZooidError::NotFound { .. }) => {
            eprintln!("zooid: error: no node {root} to list; check the path (zooid ls / lists the top level)");
            return Ok(ExitCode::from(crate::NOT_FOUND));
        }
        Err(err) => return Err(err),
    };
    let mut found = Vec::new();
    for child in children {
        let path = if root == "/" {
            format!("/{child}")
        } else {
            format!("{root}/{child}")
        };
        let Ok(category) = IdCategory::new(&path) else {
            continue;
        };
        match service.pool_info(&category) {
            Ok(info) => found.push((path, info)),
            Err(
                ZooidError::CorruptPool { .. }
                | ZooidError::RetiredFormat { .. }
                | ZooidError::NotFound { .. },
            ) => {}
            Err(err) => return Err(err),
        }
    }
    if json {
        let rows: Vec<_> = found
            .iter()
            .map(|(path, info)| {
                json!({
                    "category": path,
                    "free_ids": info.free_count,
                    "ranges": info.free.len(),
                    "bounds": {"start": info.bounds.start(), "end": info.bounds.end()},
                })
            })
            .collect();
        println!("{}", json!({"root": root, "categories": rows}));
    } else {
        for (path, info) in &found {
            println!(
                "{path}\t{} free\t{} ranges",
                info.free_count,
                info.free.len()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `zooid status`: opens a session and prints what the session layer knows of it: the session
/// id, its state and generation, the session timeout requested and the one the servers
/// negotiated (every timer of zooid uses the negotiated one), and how long a suspension lasts
/// before zooid stops acting. The servers' tick is not visible to a client.
pub fn status(connect: &str, options: &ConnectOptions, json: bool) -> zooid::Result<()> {
    let session = zooid::blocking::open_session(connect, options)?;
    let status = session.status();
    if json {
        println!("{}", status_json(connect, &status));
        return Ok(());
    }
    println!("connect            {connect}");
    println!("session            {:#x}", status.session_id);
    println!("state              {}", status.state.as_str());
    println!("generation         {}", status.generation);
    println!("timeout requested  {} ms", status.requested.as_millis());
    println!("timeout negotiated {} ms", status.timeout.as_millis());
    println!(
        "stop acting after  {} ms suspended",
        status.stop_acting_after().as_millis()
    );
    Ok(())
}

fn status_json(connect: &str, status: &SessionStatus) -> serde_json::Value {
    json!({
        "connect": connect,
        "session_id": format!("{:#x}", status.session_id),
        "state": status.state.as_str(),
        "generation": status.generation,
        "timeout_ms": {
            "requested": status.requested.as_millis() as u64,
            "negotiated": status.timeout.as_millis() as u64,
        },
        "stop_acting_after_ms": status.stop_acting_after().as_millis() as u64,
    })
}
