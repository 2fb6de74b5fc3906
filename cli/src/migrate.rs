//! `zooid migrate`: moves a single-node category to hole nodes (pool format 4) in place, while
//! processes keep taking and pushing (docs/OPERATIONS.md, "Moving a category to the scalable
//! layout").

use clap::ValueEnum;
use zooid::{ConnectOptions, IdCategory, Layout, Migrated};

/// The layout `zooid migrate` moves a category to.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Target {
    /// Hole nodes (pool format 4): the layout for thousands of tasks that push back leftovers.
    Holes,
}

/// `zooid migrate`: prints what moved, or that the category is there already.
pub fn migrate(
    connect: &str,
    options: &ConnectOptions,
    category: &str,
    target: Target,
    block_size: u64,
) -> zooid::Result<()> {
    let layout = match target {
        Target::Holes => Layout::HoleNodes { unit: block_size },
    };
    let category = IdCategory::new(category)?;
    let service = crate::ids::open(connect, options)?;
    match service.migrate_category(&category, layout)? {
        Migrated::Already { format } => {
            println!("{category} is in pool format {format} already; nothing changed")
        }
        Migrated::Moved { from, to, base } => println!(
            "migrated {category} from pool format {from} to {to}: fresh IDs in blocks of \
             {block_size} from {base}"
        ),
    }
    Ok(())
}
