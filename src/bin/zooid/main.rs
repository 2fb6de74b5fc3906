//! `zooid`: the operator CLI. Creates categories, takes and pushes IDs, shows pools, runs work
//! queues; one module per group of commands.

mod counter;
mod elect;
mod ids;
mod prefetch;
mod queue;
mod security;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use zooid::{ConnectOptions, ZooidError};

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

    /// ZooKeeper digest authentication (`addauth digest`), as user:password. Prefer the
    /// environment variable: an argument shows the password to every user of the machine.
    #[arg(long, env = "ZOOID_AUTH", hide_env_values = true)]
    auth: Option<String>,

    #[command(flatten)]
    security: security::SecurityArgs,

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
        /// The pool node's ACL, as scheme:id:perms entries (comma-separated or repeated), such
        /// as `sasl:app:cdrwa,world:anyone:r` or `digest:app:HASH:cdrwa` or `auth::cdrwa`.
        /// Default: the creator only when authenticated, else open to all.
        #[arg(long, value_name = "ACL")]
        acl: Vec<String>,
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
    /// Run COMMAND only while this process leads GROUP (ZooKeeper only), with
    /// ZOOID_FENCING_TOKEN and ZOOID_LEADER_NAME exported. The command is stopped (SIGTERM to its
    /// process group, SIGKILL after --grace-ms) when the leadership ends, and started again when
    /// it comes back. SIGTERM/SIGINT stop the command, resign and exit 0; when the command ends
    /// by itself, zooid elect resigns and exits with its code. The command dies with zooid elect.
    Elect {
        group: String,
        /// The candidate's name (default HOST:PID).
        #[arg(long)]
        name: Option<String>,
        /// keep: a leader cut off from ZooKeeper keeps its command running until the session is
        /// lost; stop: it stops the command at once and rejoins at the back of the line.
        #[arg(long, default_value = "stop")]
        on_pause: String,
        /// Milliseconds between SIGTERM and SIGKILL when stopping the command.
        #[arg(long, default_value_t = 5000)]
        grace_ms: u64,
        /// Append timestamped state transitions (unix microseconds) to this file.
        #[arg(long)]
        log: Option<PathBuf>,
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Print the leader of GROUP (name, token, node, data); exit 12 when there is none.
    Leader { group: String },
    /// A CAS counter node (8-byte big-endian long, the last value handed out), in ZooKeeper.
    #[command(subcommand)]
    Counter(CounterCommand),
    /// A distributed work queue (needs ZooKeeper): put items, work on them, show them.
    #[command(subcommand)]
    Queue(queue::QueueCommand),
    /// Draw N IDs one at a time from a prefetching source (as a worker would), push back what
    /// it holds, and print the IDs drawn as START:END lines.
    Draw {
        category: String,
        n: u64,
        /// Threads sharing the source.
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// First batch size.
        #[arg(long, default_value_t = 1_000)]
        initial_batch: u64,
        /// Smallest refill.
        #[arg(long, default_value_t = 100)]
        min_batch: u64,
        /// Largest refill.
        #[arg(long, default_value_t = 1_000_000)]
        max_batch: u64,
    },
}

#[derive(Subcommand)]
enum CounterCommand {
    /// Create the counter node holding VALUE, the last value handed out.
    Init {
        path: String,
        #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
        value: i64,
        /// The counter node's ACL, as for `zooid init --acl`.
        #[arg(long, value_name = "ACL")]
        acl: Vec<String>,
    },
    /// Reserve the next N values; prints them as one START:END line.
    Next {
        path: String,
        #[arg(default_value_t = 1)]
        n: u64,
        /// Print the values in hex, as the seed did (Long.toHexString).
        #[arg(long)]
        hex: bool,
    },
    /// Print the counter's value (the last value handed out).
    Get {
        path: String,
        /// Print the value in hex.
        #[arg(long)]
        hex: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
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
        ZooidError::QueueFull { .. } => 9,
        ZooidError::TooLarge { .. } => 10,
        ZooidError::SessionLost { .. } => 11,
        // 12: `zooid leader` found no leader (not an error).
        ZooidError::NotLeader { .. } => 13,
        ZooidError::NotAuthorized { .. } => 14,
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

fn run(cli: Cli) -> zooid::Result<ExitCode> {
    let connect = cli.connect.unwrap_or_else(default_connect);
    let mut options = ConnectOptions {
        session_timeout: Duration::from_millis(cli.session_timeout_ms),
        digest_auth: security::digest_auth(cli.auth)?,
        ..ConnectOptions::default()
    };
    cli.security.apply(&mut options)?;
    match cli.command {
        Command::Init {
            category,
            first,
            last,
            after_counter,
            acl,
        } => ids::init(
            &connect,
            &options,
            &category,
            (first, last),
            after_counter,
            security::parse_acls(&acl)?,
        )
        .map(|()| ExitCode::SUCCESS),
        Command::Take { category, n } => {
            ids::take(&connect, &options, &category, n).map(|()| ExitCode::SUCCESS)
        }
        Command::Push { category, ranges } => {
            ids::push(&connect, &options, &category, &ranges).map(|()| ExitCode::SUCCESS)
        }
        Command::Show { category } => {
            ids::show(&connect, &options, &category).map(|()| ExitCode::SUCCESS)
        }
        Command::Elect {
            group,
            name,
            on_pause,
            grace_ms,
            log,
            command,
        } => elect::elect(
            &connect,
            &options,
            elect::ElectArgs {
                group,
                name,
                on_pause: on_pause.parse()?,
                grace: Duration::from_millis(grace_ms),
                log,
                command,
            },
        ),
        Command::Leader { group } => elect::leader(&connect, &options, &group),
        Command::Counter(CounterCommand::Init { path, value, acl }) => counter::init(
            &connect,
            &options,
            &path,
            value,
            security::parse_acls(&acl)?,
        )
        .map(|()| ExitCode::SUCCESS),
        Command::Counter(CounterCommand::Next { path, n, hex }) => {
            counter::next(&connect, &options, &path, n, hex).map(|()| ExitCode::SUCCESS)
        }
        Command::Counter(CounterCommand::Get { path, hex }) => {
            counter::get(&connect, &options, &path, hex).map(|()| ExitCode::SUCCESS)
        }
        Command::Queue(command) => {
            queue::run(&connect, &options, command).map(|()| ExitCode::SUCCESS)
        }
        Command::Draw {
            category,
            n,
            threads,
            initial_batch,
            min_batch,
            max_batch,
        } => prefetch::draw(
            &connect,
            &options,
            prefetch::Draw {
                category,
                n,
                threads,
                options: zooid::prefetch::SourceOptions {
                    initial_batch,
                    min_batch,
                    max_batch,
                    ..Default::default()
                },
            },
        )
        .map(|()| ExitCode::SUCCESS),
    }
}
