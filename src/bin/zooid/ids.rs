//! The ID commands: `init`, `take`, `push`, `show`.

use zooid::blocking::IdGeneratorService;
use zooid::{ConnectOptions, IdCategory, IdRange, IdSet, ServiceOptions, ZooidError};

/// How long a take at a category's ceiling waits for the keeper (`--ceiling-wait-ms`).
pub static CEILING_WAIT: std::sync::OnceLock<std::time::Duration> = std::sync::OnceLock::new();

fn open(connect: &str, options: &ConnectOptions) -> zooid::Result<IdGeneratorService> {
    let mut service_options = ServiceOptions::default();
    if let Some(wait) = CEILING_WAIT.get() {
        service_options.ceiling_wait = *wait;
    }
    IdGeneratorService::connect(connect, options, service_options)
}

/// `zooid init`: creates a category, optionally above a legacy counter.
pub fn init(
    connect: &str,
    options: &ConnectOptions,
    category: &str,
    first: i64,
    last: i64,
    after_counter: Option<String>,
    ceiling: Option<i64>,
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
    service.create_category_with_ceiling(&category, first, last, ceiling)?;
    match ceiling {
        Some(c) => println!("created {category} with IDs {first}:{last}, ceiling {c}"),
        None => println!("created {category} with IDs {first}:{last}"),
    }
    Ok(())
}

/// `zooid take`: prints one `START:END` line per range taken.
pub fn take(connect: &str, options: &ConnectOptions, category: &str, n: u64) -> zooid::Result<()> {
    let service = open(connect, options)?;
    let ids = service.take_ids(&IdCategory::new(category)?, n)?;
    for range in ids.ranges() {
        println!("{range}");
    }
    Ok(())
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
pub fn show(connect: &str, options: &ConnectOptions, category: &str) -> zooid::Result<()> {
    let service = open(connect, options)?;
    let info = service.pool_info(&IdCategory::new(category)?)?;
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
    println!("ranges:     {}", info.free.len());
    println!(
        "node size:  {} bytes (version {}{})",
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
    let bad = || ZooidError::InvalidArgument(format!("{text:?} is not START:END or ID"));
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
