//! `zooid`: the operator CLI. Creates categories, takes and pushes IDs, shows pools; one module
//! per group of commands.

mod durable;
mod elect;
mod ids;

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

    /// ZooKeeper digest authentication, as user:password.
    #[arg(long, env = "ZOOID_AUTH", hide_env_values = true)]
    auth: Option<String>,

    /// How long a take at a category's ceiling waits for the keeper to raise it, in
    /// milliseconds, before failing (exit 9).
    #[arg(long, default_value_t = 10_000)]
    ceiling_wait_ms: u64,

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
        /// Start with a durable-reservation ceiling: no take hands out an ID above it until a
        /// keeper raises it (use 0 so that nothing is handed out before the keeper saw it).
        #[arg(long)]
        ceiling: Option<i64>,
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
    /// Recreate every category from the durable record after ZooKeeper lost its data.
    Restore {
        /// Where the records live: a directory, or s3://BUCKET/PREFIX.
        #[arg(long)]
        durable: String,
        /// Only categories under this path.
        #[arg(long, default_value = "/")]
        root: String,
    },
    /// Keep the ceilings of the categories under ROOT ahead of demand, each raise written to the
    /// durable record first (run two or more for redundancy; one is active). Metrics and events
    /// go to stderr. Stops on SIGTERM/SIGINT.
    Keeper {
        /// Where the records live: a directory, or s3://BUCKET/PREFIX.
        #[arg(long)]
        durable: String,
        /// Categories are the pool nodes under this path.
        #[arg(long, default_value = "/")]
        root: String,
        /// The keeper's name in the election (default HOST:PID).
        #[arg(long)]
        name: Option<String>,
        /// The keepers' election group.
        #[arg(long, default_value = zooid::keeper::DEFAULT_GROUP)]
        group: String,
        /// Reserve: this many minutes of demand at the observed take rate.
        #[arg(long, default_value_t = 10.0)]
        reserve_minutes: f64,
        /// Reserve: at least this many IDs.
        #[arg(long, default_value_t = 10_000)]
        reserve_floor: u64,
        /// Reserve: at most this many IDs.
        #[arg(long, default_value_t = 100_000_000)]
        reserve_cap: u64,
        /// Milliseconds between evaluations of every category (and metric lines).
        #[arg(long, default_value_t = 1000)]
        tick_ms: u64,
    },
    /// Write the durable records to stdout (for backups).
    Dump {
        /// Where the records live: a directory, or s3://BUCKET/PREFIX.
        #[arg(long)]
        durable: String,
    },
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
    /// Print the leader of GROUP (name, token, node, data); exit 10 when there is none.
    Leader { group: String },
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
        ZooidError::ReservationExhausted { .. } => 9,
        ZooidError::WentBackwards { .. } => 11,
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
    let _ = ids::CEILING_WAIT.set(Duration::from_millis(cli.ceiling_wait_ms));
    match cli.command {
        Command::Init {
            category,
            first,
            last,
            after_counter,
            ceiling,
        } => ids::init(
            &connect,
            &options,
            &category,
            first,
            last,
            after_counter,
            ceiling,
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
        Command::Restore { durable, root } => {
            durable::restore(&connect, &options, &durable, &root).map(|()| ExitCode::SUCCESS)
        }
        Command::Keeper {
            durable,
            root,
            name,
            group,
            reserve_minutes,
            reserve_floor,
            reserve_cap,
            tick_ms,
        } => durable::keeper(
            &connect,
            &options,
            durable::KeeperArgs {
                durable,
                root,
                name,
                group,
                reserve_minutes,
                reserve_floor,
                reserve_cap,
                tick_ms,
            },
        )
        .map(|()| ExitCode::SUCCESS),
        Command::Dump { durable } => durable::dump(&durable).map(|()| ExitCode::SUCCESS),
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
    }
}
