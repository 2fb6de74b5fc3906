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
/// summary line on stderr. A draw that fails partway (the category exhausted, ZooKeeper out of
/// reach) still prints every ID it drew, then fails with the first error.
pub fn draw(connect: &str, connect_options: &ConnectOptions, draw: Draw) -> zooid::Result<()> {
    let service = IdGeneratorService::connect(connect, connect_options, ServiceOptions::default())?;
    let category = IdCategory::new(&draw.category)?;
    let source = IdSource::open(&service, &category, draw.options)?;
    let threads = draw.threads.max(1) as u64;
    let per_thread = |i: u64| draw.n / threads + u64::from(i < draw.n % threads);
    // Each thread's IDs, and the error that stopped it: the IDs drawn before it are kept.
    let drawn: Vec<(Vec<i64>, Option<zooid::ZooidError>)> = thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|i| {
                let source = &source;
                scope.spawn(move || {
                    let mut ids = Vec::new();
                    for _ in 0..per_thread(i) {
                        match source.next() {
                            Ok(id) => ids.push(id),
                            Err(err) => return (ids, Some(err)),
                        }
                    }
                    (ids, None)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a drawing thread panicked"))
            .collect()
    });
    let closed = source.close();
    let mut ids = Vec::new();
    let mut failed = None;
    for (drawn, err) in drawn {
        ids.extend(drawn);
        failed = failed.or(err);
    }
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
    let out: String = ranges.iter().map(|r| format!("{r}\n")).collect();
    let written = crate::ids::write_taken(&out, &ranges);
    let stats = source.stats();
    eprintln!(
        "drew {} IDs in {} batches {:?}; {} calls waited on ZooKeeper",
        stats.handed_out, stats.refills, stats.batches, stats.waits
    );
    written?;
    match (failed, closed) {
        (Some(err), Err(close)) => {
            eprintln!("zooid: the source's close failed too: {close}");
            Err(err)
        }
        (Some(err), Ok(())) => Err(err),
        (None, closed) => closed,
    }
}
