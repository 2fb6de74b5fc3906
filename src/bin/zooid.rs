//! `zooid`: the operator CLI. Creates categories, takes and pushes IDs, shows pools.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use zooid::blocking::IdGeneratorService;
use zooid::{ConnectOptions, IdCategory, IdRange, IdSet, ServiceOptions, ZooidError};

/// Unique integer IDs for distributed workers, through Apache ZooKeeper.
#[derive(Parser)]
#[command(name = "zooid", version)]
struct Cli {
    /// ZooKeeper connect string (host:port,...[/chroot]), `file:DIR` or `mem:`.
    /// Default: the embedded file store in $ZOOID_HOME, else ~/.local/share/zooid.
    #[arg(long, env = "ZOOID_CONNECT")]
    connect: Option<String>,

    /// ZooKeeper session timeout in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    session_timeout_ms: u64,

    /// ZooKeeper digest authentication, as user:password.
    #[arg(long, env = "ZOOID_AUTH", hide_env_values = true)]
    auth: Option<String>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create a category whose IDs FIRST..=LAST are all free.
    Init {
        category: String,
        #[arg(long, default_value_t = 1)]
        first: i64,
        #[arg(long, default_value_t = i64::MAX)]
        last: i64,
        /// Start above a legacy counter node (8-byte big-endian long, as older deployments keep).
        #[arg(long, conflicts_with = "first")]
        after_counter: Option<String>,
    },
    /// Take up to N IDs; prints one START:END line per range.
    Take { category: String, n: u64 },
    /// Push IDs back, given as START:END (or a single ID).
    Push {
        category: String,
        #[arg(required = true)]
        ranges: Vec<String>,
    },
    /// Show a category's free list and size.
    Show { category: String },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("zooid: error: {err}");
            ExitCode::from(exit_code(&err))
        }
    }
}

/// Distinct exit codes for the errors a script may want to tell apart.
fn exit_code(err: &ZooidError) -> u8 {
    match err {
        ZooidError::InvalidArgument(_) => 2,
        ZooidError::Exhausted { .. } => 3,
        ZooidError::NotFound { .. } => 4,
        ZooidError::CategoryExists { .. } => 5,
        ZooidError::CorruptPool { .. } => 6,
        ZooidError::OutcomeUnknown { .. } => 7,
        ZooidError::ConnectionLost { .. } | ZooidError::Timeout { .. } => 8,
        _ => 1,
    }
}

fn default_connect() -> String {
    let dir = std::env::var_os("ZOOID_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("."));
            home.join(".local/share/zooid")
        });
    format!("file:{}", dir.display())
}

fn run(cli: Cli) -> zooid::Result<()> {
    let connect = cli.connect.unwrap_or_else(default_connect);
    let digest_auth = match cli.auth {
        Some(auth) => match auth.split_once(':') {
            Some((user, password)) => Some((user.to_string(), password.to_string())),
            None => {
                return Err(ZooidError::InvalidArgument(
                    "--auth needs user:password".into(),
                ))
            }
        },
        None => None,
    };
    let options = ConnectOptions {
        session_timeout: Duration::from_millis(cli.session_timeout_ms),
        digest_auth,
    };
    let service = IdGeneratorService::connect(&connect, &options, ServiceOptions::default())?;
    match cli.command {
        Command::Init {
            category,
            first,
            last,
            after_counter,
        } => {
            let category = IdCategory::new(category)?;
            let first = match after_counter {
                Some(path) => legacy_counter(&service, &path)?
                    .checked_add(1)
                    .ok_or_else(|| {
                        ZooidError::InvalidArgument(format!(
                            "legacy counter {path} is at the largest ID"
                        ))
                    })?,
                None => first,
            };
            service.create_category(&category, first, last)?;
            println!("created {category} with IDs {first}:{last}");
        }
        Command::Take { category, n } => {
            let ids = service.take_ids(&IdCategory::new(category)?, n)?;
            for range in ids.ranges() {
                println!("{range}");
            }
        }
        Command::Push { category, ranges } => {
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
            let mut ids = IdSet::new(category, parsed);
            let count = ids.count_ids();
            service.push_ids(&mut ids)?;
            println!("pushed {count} IDs");
        }
        Command::Show { category } => {
            let info = service.pool_info(&IdCategory::new(category.clone())?)?;
            println!("category:   {category}");
            println!("bounds:     {}", info.bounds);
            println!("free IDs:   {}", info.free_count);
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
        }
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
