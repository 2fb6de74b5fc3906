//! `zooid draw`: IDs one at a time from a prefetching source, as a worker would use them.

use std::thread;

use zooid::blocking::{IdGeneratorService, IdSource};
use zooid::prefetch::SourceOptions;
use zooid::{ConnectOptions, IdCategory, IdRange, ServiceOptions};

/// How `zooid draw` shapes its source and its load.
pub struct Draw {
    pub category: String,
    pub n: u64,
    pub threads: usize,
    pub options: SourceOptions,
}

/// Draws `n` IDs from one source shared by `threads` threads, closes the source (pushing back
/// what it holds), and prints the IDs drawn as `START:END` lines (consecutive IDs merged) and a
/// summary line on stderr.
pub fn draw(connect: &str, connect_options: &ConnectOptions, draw: Draw) -> zooid::Result<()> {
    let service = IdGeneratorService::connect(connect, connect_options, ServiceOptions::default())?;
    let category = IdCategory::new(&draw.category)?;
    let source = IdSource::open(&service, &category, draw.options)?;
    let threads = draw.threads.max(1) as u64;
    let per_thread = |i: u64| draw.n / threads + u64::from(i < draw.n % threads);
    let drawn: zooid::Result<Vec<Vec<i64>>> = thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|i| {
                let source = &source;
                scope.spawn(move || (0..per_thread(i)).map(|_| source.next()).collect())
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a drawing thread panicked"))
            .collect()
    });
    let closed = source.close();
    let mut ids: Vec<i64> = drawn?.into_iter().flatten().collect();
    closed?;
    ids.sort_unstable();
    let mut ranges: Vec<IdRange> = Vec::new();
    for id in ids {
        match ranges.last_mut() {
            Some(last) if last.end().checked_add(1) == Some(id) => {
                *last = IdRange::new(last.start(), id).unwrap_or(*last);
            }
            _ => ranges.extend(IdRange::new(id, id)),
        }
    }
    for range in &ranges {
        println!("{range}");
    }
    let stats = source.stats();
    eprintln!(
        "drew {} IDs in {} batches {:?}; {} calls waited on ZooKeeper",
        stats.handed_out, stats.refills, stats.batches, stats.waits
    );
    Ok(())
}
