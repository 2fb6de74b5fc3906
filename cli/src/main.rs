//! `zooid`: the operator CLI. Creates categories, takes and pushes IDs, shows pools, runs work
//! queues; one module per group of commands.

mod child;
mod counter;
mod durable;
mod elect;
mod ids;
mod inspect;
mod metrics;
mod migrate;
mod prefetch;
mod queue;
mod security;
mod stop;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, Parser, Subcommand};
use zooid::{ConnectOptions, ZooidError};

/// Unique integer IDs for distributed workers, through Apache ZooKeeper.
#[derive(Parser)]
#[command(
    name = "zooid",
    version,
    after_help = "Examples:
  export ZOOID_CONNECT=zk1:2181,zk2:2181/ids
  zooid init /eventpublish/idgen/did --last 123456789
  zooid take /eventpublish/idgen/did 10000
  zooid stats /eventpublish/idgen/did --json
  zooid ls /eventpublish/idgen

Exit codes: 0 ok, 1 other error, 2 invalid argument or usage, 3 exhausted, 4 not found,
5 already exists, 6 corrupt pool, 7 outcome unknown (IDs leaked), 8 ZooKeeper unreachable or
timeout, 9 queue full, 10 too large, 11 session lost, 12 no leader (zooid leader), 13 not the
leader, 14 not authorized (ACL / credentials). See docs/OPERATIONS.md."
)]
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
    /// How long a take at a category's ceiling waits for the keeper to raise it, in
    /// milliseconds, before failing (exit 15).
    #[arg(long, default_value_t = 10_000)]
    ceiling_wait_ms: u64,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create a category whose IDs FIRST..=LAST are all free.
    #[command(after_help = "Examples:
  zooid init /eventpublish/idgen/did --last 123456789
  zooid init /ids/order --first 1000000
  zooid init /ids/agent --after-counter /legacy/agent-counter   # continue a legacy counter
  zooid init /ids/task --block-size 1000   # for thousands of contending tasks (pool format 4)")]
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
        /// Start with a durable-reservation ceiling: no take hands out an ID above it until a
        /// keeper raises it (use 0 so that nothing is handed out before the keeper saw it).
        #[arg(long)]
        ceiling: Option<i64>,
        /// Block allocation for categories many processes take from at once: fresh IDs are
        /// claimed in blocks of this many IDs with creates that never conflict, pushed ranges
        /// kept as hole nodes (pool format 4, docs/DESIGN.md). Use the batch size the workers
        /// take.
        #[arg(long, value_name = "IDS", conflicts_with = "acl")]
        block_size: Option<u64>,
        /// The pool's layout: `single` (one node, formats 1 and 2, strictly lowest first) or
        /// `holes` (format 4). Default: `holes` on ZooKeeper (in blocks of --block-size, else
        /// 1000), `single` on the embedded stores; `holes` when --block-size is given.
        #[arg(long, value_enum)]
        layout: Option<ids::InitLayout>,
    },
    /// Move an existing single-node category to hole nodes (pool format 4) in place, while
    /// processes keep taking and pushing (needs ZooKeeper): the free range that ends at its last
    /// ID becomes fresh blocks, its other free ranges become hole nodes. No way back.
    #[command(after_help = "Examples:
  zooid migrate /eventpublish/idgen/did                 # hole nodes (pool format 4), blocks of 1000
  zooid migrate /ids/task --block-size 250              # in blocks of 250")]
    Migrate {
        category: String,
        /// IDs per fresh block: use the batch size the workers take.
        #[arg(long, value_name = "IDS", default_value_t = zooid::DEFAULT_BLOCK_SIZE)]
        block_size: u64,
        /// The layout to move to.
        #[arg(long, value_enum, default_value_t = migrate::Target::Holes)]
        layout: migrate::Target,
    },
    /// Take up to N IDs; prints one START:END line per range.
    #[command(after_help = "Examples:
  zooid take /eventpublish/idgen/did 10000          # 1:10000
  zooid take /eventpublish/idgen/did 5 --json       # {\"category\":...,\"count\":5,\"ranges\":[...]}")]
    Take {
        category: String,
        n: u64,
        /// Print a JSON object instead of START:END lines.
        #[arg(long)]
        json: bool,
    },
    /// Push IDs back, given as START:END (or a single ID).
    #[command(after_help = "Examples:
  zooid push /eventpublish/idgen/did 9001:10000 19001:20000
  zooid push /eventpublish/idgen/did 42")]
    Push {
        category: String,
        #[arg(required = true)]
        ranges: Vec<String>,
    },
    /// Show a category's free list and size.
    #[command(after_help = "Examples:
  zooid show /eventpublish/idgen/did
  zooid show /eventpublish/idgen/did --json")]
    Show {
        category: String,
        /// Print a JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Print each category's free IDs, free ranges (fragmentation) and pool node size against
    /// its limit, as read now.
    #[command(after_help = "Examples:
  zooid stats /eventpublish/idgen/did /eventpublish/idgen/uid
  zooid stats /eventpublish/idgen/did --json")]
    Stats {
        #[arg(required = true)]
        categories: Vec<String>,
        /// Print a JSON array, one object per category.
        #[arg(long)]
        json: bool,
    },
    /// List the categories directly below ROOT, with their free IDs.
    #[command(after_help = "Examples:
  zooid ls /eventpublish/idgen
  zooid ls / --json")]
    Ls {
        root: String,
        /// Print a JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Open a session and show it: id, state, generation, the session timeout requested
    /// (--session-timeout-ms) and the one the servers negotiated (clamped to their
    /// minSessionTimeout..maxSessionTimeout; zooid times everything from it), and after how
    /// long a suspension zooid stops acting (half the negotiated timeout).
    #[command(after_help = "Examples:
  zooid status
  zooid --session-timeout-ms 500 status --json")]
    Status {
        /// Print a JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script for SHELL (bash, zsh, fish, elvish, powershell).
    #[command(after_help = "Examples:
  zooid completions bash > /etc/bash_completion.d/zooid
  zooid completions zsh > \"${fpath[1]}/_zooid\"")]
    Completions { shell: clap_complete::Shell },
    /// Print the man page zooid(1), or write one page per command into DIR.
    #[command(after_help = "Examples:
  zooid man | man -l -
  zooid man --dir target/man    # zooid.1, zooid-take.1, ...")]
    Man {
        /// Write zooid.1 and zooid-COMMAND.1 into this directory instead.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
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
        /// Serve Prometheus metrics over HTTP on HOST:PORT (e.g. 127.0.0.1:9464).
        #[arg(long, value_name = "HOST:PORT")]
        metrics_addr: Option<SocketAddr>,
    },
    /// Write the durable records to stdout (for backups).
    Dump {
        /// Where the records live: a directory, or s3://BUCKET/PREFIX.
        #[arg(long)]
        durable: String,
    },
    /// Run COMMAND only while this process leads GROUP (ZooKeeper only), with
    /// ZOOID_FENCING_TOKEN and ZOOID_LEADER_NAME exported. The command is stopped (SIGTERM to its
    /// process group, SIGKILL after the grace) when the leadership ends or its lease runs out,
    /// by a guard process that does so even when zooid elect is stopped (except under
    /// --on-pause keep, which has no lease: see below), and started again when
    /// the leadership comes back. SIGTERM/SIGINT stop the command, resign and exit 0; when the
    /// command ends by itself, zooid elect resigns and exits with its code. The command dies
    /// with zooid elect.
    #[command(after_help = "Examples:
  zooid elect /services/compactor -- ./compactor --once-leader
  zooid elect /services/compactor --on-pause keep --metrics-addr 0.0.0.0:9464 -- ./compactor
  zooid elect --bump-epoch /services/compactor")]
    Elect {
        group: String,
        /// The candidate's name (default HOST:PID).
        #[arg(long)]
        name: Option<String>,
        /// keep: a leader cut off from ZooKeeper keeps its command running until the session is
        /// lost, as zooid elect sees it: if zooid elect itself is paused, the command runs on
        /// past the session's end, beside the next leader's (at-least-one, RECIPES.md); stop:
        /// it stops the command at once and rejoins at the back of the line.
        #[arg(long, default_value = "stop")]
        on_pause: String,
        /// Milliseconds between SIGTERM and SIGKILL when stopping the command; at most a
        /// quarter of the negotiated session timeout.
        #[arg(long, default_value_t = 5000)]
        grace_ms: u64,
        /// Append timestamped state transitions (unix microseconds) to this file.
        #[arg(long)]
        log: Option<PathBuf>,
        /// Serve Prometheus metrics over HTTP on HOST:PORT (e.g. 127.0.0.1:9464).
        #[arg(long, value_name = "HOST:PORT")]
        metrics_addr: Option<SocketAddr>,
        /// Do not run anything: raise GROUP's epoch to the current second (waiting up to 5 s
        /// for the clock to pass an epoch raised a moment ago) and print it, so every later
        /// leader's token is above every token handed out before.
        /// Run it for every group after restoring ZooKeeper from a snapshot (zooid restore).
        #[arg(long)]
        bump_epoch: bool,
        #[arg(last = true, required_unless_present = "bump_epoch")]
        command: Vec<String>,
    },
    /// Print the leader of GROUP (name, token, node, data); exit 12 when there is none.
    #[command(after_help = "Examples:
  zooid leader /services/compactor")]
    Leader { group: String },
    /// A CAS counter node (8-byte big-endian long, the last value handed out), in ZooKeeper.
    #[command(
        subcommand,
        after_help = "Examples:
  zooid counter init /legacy/agent-counter
  zooid counter next /legacy/agent-counter 100 --hex
  zooid counter get /legacy/agent-counter"
    )]
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
    #[command(after_help = "Examples:
  zooid counter init /legacy/agent-counter --value 41")]
    Init {
        path: String,
        #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
        value: i64,
        /// The counter node's ACL, as for `zooid init --acl`.
        #[arg(long, value_name = "ACL")]
        acl: Vec<String>,
    },
    /// Reserve the next N values; prints them as one START:END line.
    #[command(after_help = "Examples:
  zooid counter next /legacy/agent-counter 100")]
    Next {
        path: String,
        #[arg(default_value_t = 1)]
        n: u64,
        /// Print the values in hex, as the seed did (Long.toHexString).
        #[arg(long)]
        hex: bool,
    },
    /// Print the counter's value (the last value handed out).
    #[command(after_help = "Examples:
  zooid counter get /legacy/agent-counter --hex")]
    Get {
        path: String,
        /// Print the value in hex.
        #[arg(long)]
        hex: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let connect = cli.connect.clone().unwrap_or_else(default_connect);
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            match hint(&err, &connect) {
                Some(hint) => eprintln!("zooid: error: {err}; {hint}"),
                None => eprintln!("zooid: error: {err}"),
            }
            ExitCode::from(exit_code(&err))
        }
    }
}

/// The exit code of a missing category or node.
pub const NOT_FOUND: u8 = 4;
/// The exit code of an error: its kind's (README and docs/OPERATIONS.md list them).
fn exit_code(err: &ZooidError) -> u8 {
    err.kind().exit_code()
}

/// What to do about an error, appended to its line.
fn hint(err: &ZooidError, connect: &str) -> Option<String> {
    Some(match err {
        ZooidError::ConnectionLost { .. } | ZooidError::Timeout { .. } => format!(
            "is ZooKeeper running and reachable at {connect}? Check --connect / ZOOID_CONNECT (host:port,...[/chroot])"
        ),
        ZooidError::NotAuthorized { .. } => "give the credentials of an identity the node's ACL allows (ZOOID_AUTH=user:password, or --sasl ...), or have its ACL changed".to_string(),
        ZooidError::AuthFailed { .. } => "ZooKeeper refused the credentials: give those of an identity the ensemble knows (ZOOID_AUTH=user:password, or --sasl ...)".to_string(),
        ZooidError::Exhausted { .. } => {
            "push unused IDs back (zooid push) or create a new category".to_string()
        }
        _ => return None,
    })
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
    let _ = ids::CEILING_WAIT.set(Duration::from_millis(cli.ceiling_wait_ms));
    match cli.command {
        Command::Init {
            category,
            first,
            last,
            after_counter,
            acl,
            ceiling,
            block_size,
            layout,
        } => ids::init(
            &connect,
            &options,
            &category,
            (first, last),
            after_counter,
            ids::InitFlags {
                acl: security::parse_acls(&acl)?,
                ceiling,
                block_size,
                layout,
            },
        )
        .map(|()| ExitCode::SUCCESS),
        Command::Migrate {
            category,
            block_size,
            layout,
        } => migrate::migrate(&connect, &options, &category, layout, block_size)
            .map(|()| ExitCode::SUCCESS),
        Command::Take { category, n, json } => {
            ids::take(&connect, &options, &category, n, json).map(|()| ExitCode::SUCCESS)
        }
        Command::Push { category, ranges } => {
            ids::push(&connect, &options, &category, &ranges).map(|()| ExitCode::SUCCESS)
        }
        Command::Show { category, json } => {
            ids::show(&connect, &options, &category, json).map(|()| ExitCode::SUCCESS)
        }
        Command::Stats { categories, json } => {
            inspect::stats(&connect, &options, &categories, json).map(|()| ExitCode::SUCCESS)
        }
        Command::Ls { root, json } => inspect::ls(&connect, &options, &root, json),
        Command::Status { json } => {
            inspect::status(&connect, &options, json).map(|()| ExitCode::SUCCESS)
        }
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "zooid", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir } => man(dir).map(|()| ExitCode::SUCCESS),
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
            metrics_addr,
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
                metrics_addr,
            },
        )
        .map(|()| ExitCode::SUCCESS),
        Command::Dump { durable } => durable::dump(&durable).map(|()| ExitCode::SUCCESS),
        Command::Elect {
            group,
            bump_epoch: true,
            ..
        } => elect::bump_epoch(&connect, &options, &group),
        Command::Elect {
            group,
            name,
            on_pause,
            grace_ms,
            log,
            metrics_addr,
            command,
            bump_epoch: false,
        } => elect::elect(
            &connect,
            &options,
            elect::ElectArgs {
                group,
                name,
                on_pause: on_pause.parse()?,
                grace: Duration::from_millis(grace_ms),
                log,
                metrics_addr,
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

/// `zooid man`: the man page of the whole CLI to stdout, or one page per command into `dir`.
fn man(dir: Option<PathBuf>) -> zooid::Result<()> {
    let io = |e: std::io::Error| ZooidError::InvalidArgument(format!("writing the man page: {e}"));
    let cli = Cli::command();
    let Some(dir) = dir else {
        return clap_mangen::Man::new(cli)
            .render(&mut std::io::stdout())
            .map_err(io);
    };
    std::fs::create_dir_all(&dir).map_err(io)?;
    let mut page = Vec::new();
    clap_mangen::Man::new(cli.clone())
        .render(&mut page)
        .map_err(io)?;
    std::fs::write(dir.join("zooid.1"), &page).map_err(io)?;
    for sub in cli.get_subcommands() {
        let name = format!("zooid-{}", sub.get_name());
        let mut page = Vec::new();
        clap_mangen::Man::new(sub.clone().name(&*name.clone().leak()))
            .render(&mut page)
            .map_err(io)?;
        std::fs::write(dir.join(format!("{name}.1")), &page).map_err(io)?;
    }
    Ok(())
}
