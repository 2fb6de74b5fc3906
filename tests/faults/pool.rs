//! The category's free IDs read straight from ZooKeeper by docs/FORMAT.md, for the checker:
//! not through zooid's own reading (`pool_info`), which is part of what is tested (it merges
//! overlapping holes, for one, where the checker wants to see them).
//!
//! Free IDs are the pool node's free list (formats 1 and 2), or in block allocation (format 4)
//! the hole nodes `zooid-holes/h-START-END` and the fresh IDs from the frontier up:
//! `BASE + cversion(zooid-blocks-GENERATION) * UNIT ..= LAST`.

use zookeeper_client::{Client, Error as ZkError};

/// What was read.
#[derive(Clone, Debug, Default)]
pub struct FreeSeen {
    pub bounds: (i64, i64),
    /// Every free range as found, from every source: ranges that overlap are IDs free twice.
    pub free: Vec<(i64, i64)>,
    /// Where they came from, for the report.
    pub sources: Vec<String>,
    /// Findings that break FORMAT.md.
    pub problems: Vec<String>,
}

struct PoolText {
    format: u32,
    bounds: (i64, i64),
    /// `#blocks UNIT GENERATION BASE`.
    blocks: Option<(i64, u64, i64)>,
    ranges: Vec<(i64, i64)>,
}

fn parse_range(text: &str) -> Option<(i64, i64)> {
    let (a, b) = text.trim().split_once(':')?;
    let (a, b) = (a.parse().ok()?, b.parse().ok()?);
    (a <= b).then_some((a, b))
}

/// The range lines of a node's text (header lines skipped).
fn ranges_of(node: &str, text: &str) -> Result<Vec<(i64, i64)>, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| parse_range(l).ok_or_else(|| format!("{node}: unreadable line {l:?}")))
        .collect()
}

fn parse_pool(path: &str, text: &str) -> Result<PoolText, String> {
    let mut pool = PoolText {
        format: 0,
        bounds: (0, -1),
        blocks: None,
        ranges: ranges_of(path, text)?,
    };
    let bad = |l: &str| format!("{path}: unreadable header {l:?}");
    for line in text.lines().map(str::trim).filter(|l| l.starts_with('#')) {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["#zooid", v] => pool.format = v.parse().map_err(|_| bad(line))?,
            ["#bounds", b] => pool.bounds = parse_range(b).ok_or_else(|| bad(line))?,
            ["#blocks", unit, generation, base] => {
                pool.blocks = Some((
                    unit.parse().map_err(|_| bad(line))?,
                    generation.parse().map_err(|_| bad(line))?,
                    base.parse().map_err(|_| bad(line))?,
                ))
            }
            _ => {}
        }
    }
    if pool.format == 0 {
        // Seed style: bounds 1 to the highest range end.
        pool.bounds = (1, pool.ranges.iter().map(|r| r.1).max().unwrap_or(0));
    }
    Ok(pool)
}

/// A hole node's name, `h-START-END`.
fn hole(name: &str) -> Option<(i64, i64)> {
    let (a, b) = name.strip_prefix("h-")?.split_once('-')?;
    let (a, b) = (a.parse().ok()?, b.parse().ok()?);
    (a <= b).then_some((a, b))
}

/// Children of `node`, none when it does not exist.
async fn children(client: &Client, node: &str) -> Result<Vec<String>, String> {
    match client.list_children(node).await {
        Ok(c) => Ok(c),
        Err(ZkError::NoNode) => Ok(Vec::new()),
        Err(e) => Err(format!("{node}: {e}")),
    }
}

async fn read_once(client: &Client, path: &str) -> Result<Option<FreeSeen>, String> {
    let (data, stat) = client
        .get_data(path)
        .await
        .map_err(|e| format!("{path}: {e}"))?;
    let text = String::from_utf8(data).map_err(|_| format!("{path}: not UTF-8"))?;
    let pool = parse_pool(path, &text)?;
    let mut seen = FreeSeen {
        bounds: pool.bounds,
        free: pool.ranges.clone(),
        ..FreeSeen::default()
    };
    seen.sources.push(format!(
        "pool node (format {}): {} ranges",
        pool.format,
        pool.ranges.len()
    ));
    if let Some((unit, generation, base)) = pool.blocks {
        if pool.format != 4 {
            seen.problems.push(format!(
                "{path}: '#blocks' in format {} (FORMAT.md: block allocation is format 4)",
                pool.format
            ));
        }
        if !pool.ranges.is_empty() {
            seen.problems.push(format!(
                "{path}: {} free ranges in a format-4 pool node (FORMAT.md: it holds none)",
                pool.ranges.len()
            ));
        }
        let returned = format!("{path}/zooid-returned");
        for name in children(client, &returned).await? {
            if !name.starts_with("m-") {
                seen.problems.push(format!(
                    "{returned}/{name}: not a receipt (FORMAT.md: only m-TOKEN)"
                ));
            }
        }
        let holes = format!("{path}/zooid-holes");
        let names = children(client, &holes).await?;
        for name in &names {
            match hole(name) {
                Some(range) => seen.free.push(range),
                None => seen
                    .problems
                    .push(format!("{holes}/{name}: not a hole node's name")),
            }
        }
        seen.sources.push(format!("{} hole nodes", names.len()));
        let parent = format!("{path}/zooid-blocks-{generation}");
        let claimed = match client.get_children(&parent).await {
            Ok((_, st)) => i64::from(st.cversion),
            Err(ZkError::NoNode) => {
                seen.sources
                    .push(format!("{parent} missing: no block claimed in it"));
                0
            }
            Err(e) => return Err(format!("{parent}: {e}")),
        };
        let frontier = base.saturating_add(claimed.saturating_mul(unit));
        seen.sources.push(format!(
            "frontier {frontier} (generation {generation}, base {base}, {claimed} blocks of {unit})"
        ));
        if frontier <= pool.bounds.1 {
            seen.free.push((frontier, pool.bounds.1));
        }
    }
    // Consistent only if the pool node did not change meanwhile.
    let (_, again) = client
        .get_data(path)
        .await
        .map_err(|e| format!("{path}: {e}"))?;
    Ok((again.version == stat.version && again.czxid == stat.czxid).then_some(seen))
}

/// Reads the free IDs of the category at `path` from the ensemble at `connect`.
pub fn read_free(connect: &str, path: &str) -> Result<FreeSeen, String> {
    let runtime = zooid_test_support::runtime();
    runtime.block_on(async {
        let client = Client::connect(connect)
            .await
            .map_err(|e| format!("connect to {connect}: {e}"))?;
        client
            .sync(path)
            .await
            .map_err(|e| format!("sync {path}: {e}"))?;
        for _ in 0..50 {
            if let Some(seen) = read_once(&client, path).await? {
                return Ok(seen);
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        Err(format!("{path} kept changing while it was read"))
    })
}
