//! The ID commands: `init`, `take`, `push`, `show`.

use zooid::blocking::IdGeneratorService;
use zooid::{
    CategorySpec, ConnectOptions, IdCategory, IdRange, IdSet, Layout, ServiceOptions, ZooidError,
};

/// How long a take at a category's ceiling waits for the keeper (`--ceiling-wait-ms`).
pub static CEILING_WAIT: std::sync::OnceLock<std::time::Duration> = std::sync::OnceLock::new();

/// A service on `connect`, with the CLI's ceiling wait.
pub fn open(connect: &str, options: &ConnectOptions) -> zooid::Result<IdGeneratorService> {
    let mut service_options = ServiceOptions::default();
    if let Some(wait) = CEILING_WAIT.get() {
        service_options.ceiling_wait = *wait;
    }
    IdGeneratorService::connect(connect, options, service_options)
}

/// The flags of `zooid init` beyond the bounds, made into a [`CategorySpec`] by
/// [`InitFlags::spec`].
pub struct InitFlags {
    /// The pool node's ACL.
    pub acl: Option<Vec<zooid::Acl>>,
    /// A durable-reservation ceiling.
    pub ceiling: Option<i64>,
    /// Block allocation (hole nodes) with blocks of this many IDs.
    pub block_size: Option<u64>,
    /// The layout asked for (`None`: the store's default, or hole nodes with a block size).
    pub layout: Option<InitLayout>,
}

/// The layouts `zooid init --layout` creates.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum InitLayout {
    /// One node (formats 1 and 2).
    Single,
    /// Hole nodes (format 4): block allocation whose pushed ranges are nodes of their own.
    Holes,
}

impl InitFlags {
    /// The category `first..=last` these flags describe: `--layout` (with `--block-size`, 1000
    /// by default; `--block-size` alone is hole nodes), `--ceiling`, `--acl` (single node only).
    pub fn spec(&self, first: i64, last: i64) -> zooid::Result<CategorySpec> {
        let unit = self.block_size.unwrap_or(zooid::DEFAULT_BLOCK_SIZE);
        let layout = match (self.layout, self.block_size) {
            (Some(InitLayout::Single), Some(_)) => {
                return Err(ZooidError::InvalidArgument(
                    "--block-size needs the block layout (--layout holes)".into(),
                ))
            }
            (Some(InitLayout::Single), None) => Some(Layout::SingleNode),
            (Some(InitLayout::Holes), _) | (None, Some(_)) => Some(Layout::HoleNodes { unit }),
            (None, None) => None,
        };
        let mut spec = CategorySpec::new(first, last).ceiling(self.ceiling);
        if let Some(layout) = layout {
            spec = spec.layout(layout);
        }
        if let Some(acl) = &self.acl {
            if !matches!(layout, None | Some(Layout::SingleNode)) {
                return Err(ZooidError::InvalidArgument(
                    "--acl needs the single-node layout (--layout single)".into(),
                ));
            }
            spec = spec.acl(acl.clone());
        }
        Ok(spec)
    }
}

/// `zooid init`: creates a category, optionally above a legacy counter.
pub fn init(
    connect: &str,
    options: &ConnectOptions,
    category: &str,
    (first, last): (i64, i64),
    after_counter: Option<String>,
    flags: InitFlags,
) -> zooid::Result<()> {
    let service = open(connect, options)?;
    let category = IdCategory::new(category)?;
    let first = match after_counter {
        Some(path) => legacy_counter(&service, &path)?
            .checked_add(1)
            .ok_or_else(|| {
                ZooidError::InvalidArgument(format!("legacy counter {path} is at the largest ID"))
            })?,
        None => first,
    };
    let spec = flags.spec(first, last)?;
    service.create_category(&category, &spec)?;
    let mut notes = Vec::new();
    if let Some(Layout::HoleNodes { unit }) = spec.layout_asked() {
        notes.push(format!(
            "block allocation in blocks of {unit} (pool format 4)"
        ));
    }
    if let Some(c) = spec.ceiling_asked() {
        notes.push(format!("ceiling {c}"));
    }
    if let Some(acl) = spec.acl_asked() {
        let entries: Vec<String> = acl.iter().map(zooid::Acl::to_text).collect();
        notes.push(format!("ACL {}", entries.join(",")));
    }
    if notes.is_empty() {
        println!("created {category} with IDs {first}:{last}");
    } else {
        println!(
            "created {category} with IDs {first}:{last}, {}",
            notes.join(", ")
        );
    }
    Ok(())
}

/// `zooid take`: prints one `START:END` line per range taken.
pub fn take(
    connect: &str,
    options: &ConnectOptions,
    category: &str,
    n: u64,
    json: bool,
) -> zooid::Result<()> {
    let service = open(connect, options)?;
    let ids = service.take_ids(&IdCategory::new(category)?, n)?;
    let out = if json {
        format!(
            "{}\n",
            serde_json::json!({
                "category": category,
                "count": ids.count_ids(),
                "ranges": ranges_json(&ids.ranges()),
            })
        )
    } else {
        ids.ranges().iter().map(|r| format!("{r}\n")).collect()
    };
    write_taken(&out, &ids.ranges())
}

/// Writes `out`, the report of `ranges` taken from the pool, to stdout. If it cannot all be
/// written (a closed pipe, a full disk), the IDs are named as leaked, never pushed back (the
/// reader may have used what it read).
pub fn write_taken(out: &str, ranges: &[IdRange]) -> zooid::Result<()> {
    let mut stdout = std::io::stdout().lock();
    std::io::Write::write_all(&mut stdout, out.as_bytes())
        .and_then(|()| std::io::Write::flush(&mut stdout))
        .map_err(|e| zooid::ZooidError::Store {
            path: "stdout".into(),
            reason: format!(
                "the IDs taken could not all be written ({e}); they are leaked, not handed out again: {}",
                ranges.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(" ")
            ),
        })
}

fn ranges_json(ranges: &[IdRange]) -> serde_json::Value {
    ranges
        .iter()
        .map(|r| serde_json::json!({"start": r.start(), "end": r.end()}))
        .collect()
}

/// `zooid push`: returns ranges to their category.
pub fn push(
    connect: &str,
    options: &ConnectOptions,
    category: &str,
    ranges: &[String],
) -> zooid::Result<()> {
    let category = IdCategory::new(category)?;
    let mut parsed = ranges
        .iter()
        .map(|text| parse_range(text))
        .collect::<zooid::Result<Vec<_>>>()?;
    parsed.sort_unstable();
    if let Some(pair) = parsed.windows(2).find(|p| p[0].overlaps(&p[1])) {
        return Err(ZooidError::InvalidArgument(format!(
            "ranges {} and {} overlap",
            pair[0], pair[1]
        )));
    }
    let service = open(connect, options)?;
    let mut ids = IdSet::new(category, parsed);
    let count = ids.count_ids();
    service.push_ids(&mut ids)?;
    println!("pushed {count} IDs");
    Ok(())
}

/// `zooid show`: a category's free list and size.
pub fn show(
    connect: &str,
    options: &ConnectOptions,
    category: &str,
    json: bool,
) -> zooid::Result<()> {
    let service = open(connect, options)?;
    let info = service.pool_info(&IdCategory::new(category)?)?;
    if json {
        println!(
            "{}",
            serde_json::json!({
                "category": category,
                "bounds": {"start": info.bounds.start(), "end": info.bounds.end()},
                "free_ids": info.free_count,
                "ranges": info.free.len(),
                "node_bytes": info.bytes,
                "version": info.version,
                "pool_version": info.offset + i64::from(info.version),
                "legacy": info.legacy,
                "blocks": info.blocks.map(|b| serde_json::json!({
                    "unit": b.unit,
                    "generation": b.generation,
                    "base": b.base,
                })),
                "free": ranges_json(&info.free),
            })
        );
        return Ok(());
    }
    println!("category:   {category}");
    println!("bounds:     {}", info.bounds);
    println!("free IDs:   {}", info.free_count);
    match info.ceiling {
        Some(ceiling) => {
            println!("ceiling:    {ceiling} (epoch {})", info.epoch);
            println!(
                "headroom:   {} IDs free at or below the ceiling",
                info.headroom
            );
        }
        None => println!("ceiling:    none (headroom: every free ID)"),
    }
    if let Some(b) = info.blocks {
        println!(
            "blocks:     {} IDs each, generation {} from {} (fresh IDs from {} on)",
            b.unit,
            b.generation,
            b.base,
            info.high_water.saturating_add(1)
        );
    }
    println!("ranges:     {}", info.free.len());
    let moved = match info.offset {
        0 => String::new(),
        offset => format!(
            ", pool version {}: moved to a fresh node after {offset} writes",
            offset + i64::from(info.version)
        ),
    };
    println!(
        "node size:  {} bytes (version {}{moved}{})",
        info.bytes,
        info.version,
        if info.legacy { ", legacy format" } else { "" }
    );
    println!("free list:");
    for range in &info.free {
        println!("  {range}");
    }
    Ok(())
}

fn parse_range(text: &str) -> zooid::Result<IdRange> {
    let bad = || {
        ZooidError::InvalidArgument(format!(
            "{text:?} is not START:END or ID (e.g. 9001:10000 or 42, START <= END)"
        ))
    };
    let (start, end) = text.split_once(':').unwrap_or((text, text));
    let start: i64 = start.trim().parse().map_err(|_| bad())?;
    let end: i64 = end.trim().parse().map_err(|_| bad())?;
    IdRange::new(start, end).ok_or_else(bad)
}

/// Reads a legacy counter node: an 8-byte big-endian long, the last ID handed out.
fn legacy_counter(service: &IdGeneratorService, path: &str) -> zooid::Result<i64> {
    let node = service.read_raw(path)?;
    let bytes: [u8; 8] = node.as_slice().try_into().map_err(|_| {
        ZooidError::InvalidArgument(format!(
            "{path} holds {} bytes, not an 8-byte legacy counter",
            node.len()
        ))
    })?;
    Ok(i64::from_be_bytes(bytes))
}
