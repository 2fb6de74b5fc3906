//! One contending client of the contention benchmark (`cargo bench --bench contention`): opens
//! its own ZooKeeper session, takes batches in a loop for a window, and reports what it got.
//!
//! Modes:
//! - `zooid`: `IdGeneratorService::take_ids(category, batch)` on a zooid category, default
//!   options (the benchmark creates the category in `create_category`'s default layout);
//! - `zooid-single`: the same on a category in `Layout::SingleNode` (formats 1/2);
//! - `zooid-fair`: the same with `ServiceOptions::fair_pacing` (src/pace.rs);
//! - `zooid-blocks`: the same on a category in block allocation (src/blocks.rs);
//! - `naive`: the seed-000 loop on a legacy counter node (8-byte big-endian long): `getData`,
//!   add the batch, `setData` with the read version, on `BADVERSION` start again at once.
//! - `raw`: the server's floor for any layout that writes once per take and once per push: a
//!   take is one `create` of a sequential node under `--path` (its number names the batch), a
//!   push one `delete` of it. Nothing is recycled; no two processes write the same node.
//! - `raw-multi`: the same with zooid's shapes of a fresh take and a push (src/alloc/blocks/,
//!   src/alloc/holes/) on the raw client: a take is `multi[check(zooid-blocks-0, 0),
//!   create(sequential)]`, a push `create(hole)`, with zooid's node names; no reads, no
//!   listing, no choice. It separates what the protocol's writes cost the server from what
//!   zooid's client adds. `ZOOID_RAW_MULTI` varies the shapes ([`Shape`]).
//! - `raw-kept`: `raw` keeping what it writes: a take is the same sequential `create`, a push a
//!   plain `create` of a node named by the pushed range; nothing is deleted. It writes the nodes
//!   `raw-multi` leaves (one per take, one per push) without the take's `multi` and checks:
//!   what keeping a record of each take and push costs the server, apart from the protocol's
//!   `multi`.
//!
//! With `--push-back PCT` (zooid modes only: the naive loop cannot recycle), every take is
//! followed by a push of the last `PCT` % of the IDs it got (`push_ids`); an operation is then
//! a take and its push, and it completes when both succeed.
//!
//! Protocol on stdin/stdout (the benchmark drives many of these at once):
//!
//! ```text
//! ready                       after the session is open and one warm-up operation succeeded
//! <- go                       (a line on stdin) starts the window
//! push-errors N               failed pushes in the window
//! push-latency L1 L2 ...      every completed push's latency in microseconds
//! kept S:E S:E ...            every ID this process kept (handed out, not pushed back),
//!                             the warm-up's included, as merged ranges
//! done OPS ERRORS IDS L1 L2 ...   the window's completed operations, failed ones (a take or
//!                             its push failed), IDs kept, and every completed take's latency
//! <- (EOF on stdin)           closes the session and exits
//! ```
//!
//! ```text
//! cargo run --release --example contender -- --connect 127.0.0.1:2181 --mode zooid \
//!     --path /bench/zooid --batch 1000 --window-ms 6000 --push-back 10
//! ```

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use zooid::{ConnectOptions, IdCategory, IdGeneratorService, IdRange, ServiceOptions};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Mode {
    Zooid,
    ZooidFair,
    /// `take_ids` on a category in `Layout::SingleNode` (the benchmark creates it).
    ZooidSingle,
    /// `take_ids` on a category in block allocation (the benchmark creates it).
    ZooidBlocks,
    Naive,
    /// One sequential `create` per take, one `delete` per push: the server's floor.
    Raw,
    /// zooid's `multi`s of a fresh take and a push, sent by the raw client.
    RawMulti,
    /// `Raw` with its nodes kept: a sequential `create` per take, a `create` per push.
    RawKept,
}

#[derive(Parser, Debug)]
#[command(about = "One contending client of the contention benchmark")]
struct Cli {
    /// ZooKeeper connect string.
    #[arg(long)]
    connect: String,
    /// What to run.
    #[arg(long, value_enum)]
    mode: Mode,
    /// The category (zooid) or counter node (naive); it must exist.
    #[arg(long)]
    path: String,
    /// IDs per take.
    #[arg(long, default_value_t = 1000)]
    batch: u64,
    /// How long to take for after `go`.
    #[arg(long, default_value_t = 6000)]
    window_ms: u64,
    /// ZooKeeper session timeout.
    #[arg(long, default_value_t = 10000)]
    session_timeout_ms: u64,
    /// Push back the last PCT % of every take (zooid modes).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=100))]
    push_back: u64,
}

/// The window's outcome.
#[derive(Default)]
struct Tally {
    /// Completed operations (a take, and its push when pushing back).
    ops: u64,
    /// Operations whose take or push failed.
    errors: u64,
    /// Pushes that failed.
    push_errors: u64,
    /// IDs kept in the window.
    ids: u64,
    take_latencies_us: Vec<u64>,
    push_latencies_us: Vec<u64>,
}

/// What one operation did: the take's latency, and the push's when it pushed.
struct Op {
    take_us: u64,
    push: Option<Result<u64, String>>,
    kept: u64,
}

/// Every ID kept so far, as ascending merged ranges (takes hand out ascending IDs mostly, so
/// merging with the last range keeps this short).
#[derive(Default)]
struct Kept(Vec<IdRange>);

impl Kept {
    fn add(&mut self, range: IdRange) {
        if let Some(last) = self.0.last_mut() {
            if last.end().checked_add(1) == Some(range.start()) {
                if let Some(merged) = IdRange::new(last.start(), range.end()) {
                    *last = merged;
                    return;
                }
            }
        }
        self.0.push(range);
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("cannot start a runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("contender: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: &Cli) -> Result<(), String> {
    let options = ConnectOptions {
        session_timeout: Duration::from_millis(cli.session_timeout_ms),
        digest_auth: None,
        ..ConnectOptions::default()
    };
    let window = Duration::from_millis(cli.window_ms);
    match cli.mode {
        Mode::Zooid | Mode::ZooidFair | Mode::ZooidSingle | Mode::ZooidBlocks => {
            let service_options = ServiceOptions {
                fair_pacing: matches!(cli.mode, Mode::ZooidFair),
                ..ServiceOptions::default()
            };
            let service = IdGeneratorService::connect(&cli.connect, &options, service_options)
                .await
                .map_err(|e| e.to_string())?;
            let category = IdCategory::new(&cli.path).map_err(|e| e.to_string())?;
            let kept = std::cell::RefCell::new(Kept::default());
            let cycle = || zooid_cycle(&service, &category, cli.batch, cli.push_back, &kept);
            serve(window, cycle, &kept).await?;
            drop(service);
        }
        Mode::Raw | Mode::RawKept => {
            let client = raw_client(cli, &options).await?;
            let kept = std::cell::RefCell::new(Kept::default());
            let push = match cli.mode {
                Mode::RawKept => RawPush::Create,
                _ => RawPush::Delete,
            };
            let cycle = || raw_cycle(&client, &cli.path, cli.batch, cli.push_back, push, &kept);
            serve(window, cycle, &kept).await?;
            drop(client);
        }
        Mode::RawMulti => {
            let client = raw_client(cli, &options).await?;
            let shape = MultiShape::start(&client, &cli.path).await?;
            let kept = std::cell::RefCell::new(Kept::default());
            let cycle = || shape.cycle(&client, cli.batch, cli.push_back, &kept);
            serve(window, cycle, &kept).await?;
            drop(client);
        }
        Mode::Naive => {
            let client = raw_client(cli, &options).await?;
            let kept = std::cell::RefCell::new(Kept::default());
            let cycle = || async {
                let t = Instant::now();
                let range = naive_take(&client, &cli.path, cli.batch).await?;
                kept.borrow_mut().add(range);
                Ok(Op {
                    take_us: micros(t.elapsed()),
                    push: None,
                    kept: range.len(),
                })
            };
            serve(window, cycle, &kept).await?;
            drop(client);
        }
    }
    Ok(())
}

/// A take of `batch` IDs, then (with `push_back` > 0) a push of the last `push_back` % of what
/// it got; the rest is recorded in `kept`.
async fn zooid_cycle(
    service: &IdGeneratorService,
    category: &IdCategory,
    batch: u64,
    push_back: u64,
    kept: &std::cell::RefCell<Kept>,
) -> Result<Op, String> {
    let t = Instant::now();
    let mut ids = service
        .take_ids(category, batch)
        .await
        .map_err(|e| e.to_string())?;
    let take_us = micros(t.elapsed());
    let got = ids.count_ids();
    let keep = got - got * push_back / 100;
    let mut left = keep;
    while left > 0 {
        let Some(run) = ids.take_run(left) else { break };
        left -= run.len();
        kept.borrow_mut().add(run);
    }
    let push = if push_back > 0 && ids.has_more_ids() {
        let t = Instant::now();
        Some(
            service
                .push_ids(&mut ids)
                .await
                .map(|()| micros(t.elapsed()))
                .map_err(|e| e.to_string()),
        )
    } else {
        None
    };
    Ok(Op {
        take_us,
        push,
        kept: keep,
    })
}

/// What a push of the raw modes writes.
#[derive(Clone, Copy)]
enum RawPush {
    /// `raw`: deletes the take's node.
    Delete,
    /// `raw-kept`: creates a node named by the pushed range, and keeps the take's.
    Create,
}

/// The server's floor for a take and its push: one sequential `create` under `parent` (batch
/// `n` of the sequence number), then, with `push_back` > 0, one write as `push` says.
async fn raw_cycle(
    client: &zookeeper_client::Client,
    parent: &str,
    batch: u64,
    push_back: u64,
    push: RawPush,
    kept: &std::cell::RefCell<Kept>,
) -> Result<Op, String> {
    let options = zookeeper_client::CreateMode::PersistentSequential
        .with_acls(zookeeper_client::Acls::anyone_all());
    let t = Instant::now();
    let (_, sequence) = client
        .create(&format!("{parent}/t-"), &[], &options)
        .await
        .map_err(|e| e.to_string())?;
    let take_us = micros(t.elapsed());
    let node = format!("{parent}/t-{sequence}");
    let keep = batch - batch * push_back / 100;
    let start = sequence.into_i64() * batch as i64 + 1;
    if let Some(range) = IdRange::new(start, start + keep as i64 - 1) {
        kept.borrow_mut().add(range);
    }
    let push = if push_back > 0 {
        let t = Instant::now();
        let written = match push {
            RawPush::Delete => client.delete(&node, None).await,
            RawPush::Create => {
                let persistent = zookeeper_client::CreateMode::Persistent
                    .with_acls(zookeeper_client::Acls::anyone_all());
                let pushed = format!(
                    "{parent}/h-{}-{}",
                    start + keep as i64,
                    start + batch as i64 - 1
                );
                client.create(&pushed, &[], &persistent).await.map(|_| ())
            }
        };
        Some(
            written
                .map(|()| micros(t.elapsed()))
                .map_err(|e| e.to_string()),
        )
    } else {
        None
    };
    Ok(Op {
        take_us,
        push,
        kept: keep,
    })
}

/// zooid's write shapes on the raw client (mode `raw-multi`): the pool node `path` (the
/// benchmark creates it with `zooid-blocks-0`, `zooid-holes` and `zooid-returned` under it) and
/// this process's receipt.
struct MultiShape {
    shape: Shape,
    path: String,
    pool_version: i32,
    sequence_parent: String,
    receipt: String,
    token: String,
}

impl MultiShape {
    async fn start(client: &zookeeper_client::Client, path: &str) -> Result<MultiShape, String> {
        let (_, stat) = client.get_data(path).await.map_err(|e| e.to_string())?;
        let token = format!("{:016x}", rand_u64());
        let receipt = format!("{path}/zooid-returned/m-{token}");
        let ephemeral =
            zookeeper_client::CreateMode::Ephemeral.with_acls(zookeeper_client::Acls::anyone_all());
        client
            .create(&receipt, token.as_bytes(), &ephemeral)
            .await
            .map_err(|e| e.to_string())?;
        Ok(MultiShape {
            shape: Shape::from_env()?,
            path: path.to_string(),
            pool_version: stat.version,
            sequence_parent: format!("{path}/zooid-blocks-0"),
            receipt,
            token,
        })
    }

    /// A take of one block as zooid's fresh claim writes it, then a push of its last
    /// `push_back` % as a hole with the receipt's `setData`.
    async fn cycle(
        &self,
        client: &zookeeper_client::Client,
        batch: u64,
        push_back: u64,
        kept: &std::cell::RefCell<Kept>,
    ) -> Result<Op, String> {
        let sequential = zookeeper_client::CreateMode::PersistentSequential
            .with_acls(zookeeper_client::Acls::anyone_all());
        let persistent = zookeeper_client::CreateMode::Persistent
            .with_acls(zookeeper_client::Acls::anyone_all());
        let t = Instant::now();
        let mut take = client.new_multi_writer();
        let shape = &self.shape;
        let pool_check = match shape.pool_check {
            true => take.add_check_version(&self.path, self.pool_version),
            false => Ok(()),
        };
        let parent_check = match shape.parent_check {
            true => take.add_check_version(&self.sequence_parent, 0),
            false => Ok(()),
        };
        pool_check
            .and(parent_check)
            .and_then(|()| {
                let token = format!("{:016x}", rand_u64());
                take.add_create(
                    &format!("{}/{token}-", self.sequence_parent),
                    &[],
                    &sequential,
                )
            })
            .map_err(|e| e.to_string())?;
        let results = take.commit().await.map_err(|e| e.to_string())?;
        let take_us = micros(t.elapsed());
        let sequence = match results.last() {
            Some(zookeeper_client::MultiWriteResult::Create { path, .. }) => path
                .rsplit('-')
                .next()
                .and_then(|digits| digits.parse::<i64>().ok())
                .ok_or_else(|| format!("no sequence number in {path}"))?,
            other => return Err(format!("unexpected multi result {other:?}")),
        };
        let keep = batch - batch * push_back / 100;
        let start = sequence * batch as i64 + 1;
        if let Some(range) = IdRange::new(start, start + keep as i64 - 1) {
            kept.borrow_mut().add(range);
        }
        let push = match IdRange::new(start + keep as i64, start + batch as i64 - 1) {
            Some(hole) if push_back > 0 => {
                let t = Instant::now();
                let name = format!(
                    "{}/zooid-holes/h-{:019}-{:019}",
                    self.path,
                    hole.start(),
                    hole.end()
                );
                let mut push = client.new_multi_writer();
                let written = async {
                    if !shape.push_receipt {
                        client.create(&name, &[], &persistent).await?;
                        return Ok(());
                    }
                    push.add_create(&name, &[], &persistent)?;
                    push.add_set_data(&self.receipt, self.token.as_bytes(), None)?;
                    push.commit().await.map(drop).map_err(|e| match e {
                        zookeeper_client::MultiWriteError::RequestFailed { source }
                        | zookeeper_client::MultiWriteError::OperationFailed { source, .. } => {
                            source
                        }
                    })
                };
                Some(
                    written
                        .await
                        .map(|_| micros(t.elapsed()))
                        .map_err(|e| e.to_string()),
                )
            }
            _ => None,
        };
        Ok(Op {
            take_us,
            push,
            kept: keep,
        })
    }
}

/// Which ops `raw-multi` sends: zooid's by default, others from `ZOOID_RAW_MULTI` (a
/// comma-separated list: `pool-check` adds the check of the pool node a take made before
/// claims stopped checking it, `no-parent-check` leaves the take's check of its generation out,
/// `push-receipt` sends a push as the protocol did before pushes dropped their receipt,
/// `multi[create(hole), setData(receipt)]`), to measure what each op costs the servers.
struct Shape {
    pool_check: bool,
    parent_check: bool,
    push_receipt: bool,
}

impl Shape {
    fn from_env() -> Result<Shape, String> {
        let mut shape = Shape {
            pool_check: false,
            parent_check: true,
            push_receipt: false,
        };
        let list = std::env::var("ZOOID_RAW_MULTI").unwrap_or_default();
        for item in list.split(',').filter(|i| !i.is_empty()) {
            match item {
                "pool-check" => shape.pool_check = true,
                "no-parent-check" => shape.parent_check = false,
                "push-receipt" => shape.push_receipt = true,
                other => return Err(format!("ZOOID_RAW_MULTI: unknown item {other:?}")),
            }
        }
        Ok(shape)
    }
}

/// A random `u64` for tokens, from the standard library's randomly keyed hasher.
fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(Instant::now().elapsed().as_nanos());
    hasher.finish()
}

/// The seed-000 loop: read the counter, add `n`, write it back expecting the read version; on a
/// conflict start again at once (no backoff, as the seed does). The IDs handed out are the ones
/// above the value read, up to the value written.
async fn naive_take(
    client: &zookeeper_client::Client,
    path: &str,
    n: u64,
) -> Result<IdRange, String> {
    loop {
        let (data, stat) = client.get_data(path).await.map_err(|e| e.to_string())?;
        let bytes: [u8; 8] = data
            .as_slice()
            .try_into()
            .map_err(|_| format!("{path} holds {} bytes, not 8", data.len()))?;
        let value = i64::from_be_bytes(bytes);
        let next = value
            .checked_add(n as i64)
            .ok_or_else(|| "counter overflow".to_string())?;
        match client
            .set_data(path, &next.to_be_bytes(), Some(stat.version))
            .await
        {
            Ok(_) => {
                return IdRange::new(value + 1, next)
                    .ok_or_else(|| format!("a take of {n} IDs from {value}"))
            }
            Err(zookeeper_client::Error::BadVersion) => continue,
            Err(err) => return Err(err.to_string()),
        }
    }
}

/// One warm-up operation, `ready`, then the window of operations after `go`, its report, and
/// the wait for EOF on stdin: the protocol every mode follows (the module's doc comment).
async fn serve<F, Fut>(
    window: Duration,
    mut cycle: F,
    kept: &std::cell::RefCell<Kept>,
) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Op, String>>,
{
    cycle().await.map_err(|e| format!("warm-up take: {e}"))?;
    ready_then_wait_for_go()?;
    let tally = window_loop(window, cycle).await;
    report(&tally, &kept.borrow())?;
    wait_for_eof();
    Ok(())
}

/// A plain ZooKeeper client with the contender's session timeout (the raw and naive modes).
async fn raw_client(
    cli: &Cli,
    options: &ConnectOptions,
) -> Result<zookeeper_client::Client, String> {
    zookeeper_client::Client::connector()
        .with_session_timeout(options.session_timeout)
        .connect(&cli.connect)
        .await
        .map_err(|e| e.to_string())
}

async fn window_loop<F, Fut>(window: Duration, mut op: F) -> Tally
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Op, String>>,
{
    let mut tally = Tally::default();
    let started = Instant::now();
    while started.elapsed() < window {
        match op().await {
            Ok(done) => {
                tally.ids += done.kept;
                tally.take_latencies_us.push(done.take_us);
                match done.push {
                    None => tally.ops += 1,
                    Some(Ok(push_us)) => {
                        tally.ops += 1;
                        tally.push_latencies_us.push(push_us);
                    }
                    Some(Err(err)) => {
                        eprintln!("push failed: {err}");
                        tally.errors += 1;
                        tally.push_errors += 1;
                    }
                }
            }
            Err(err) => {
                eprintln!("take failed: {err}");
                tally.errors += 1;
            }
        }
    }
    tally
}

fn ready_then_wait_for_go() -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready").map_err(|e| e.to_string())?;
    out.flush().map_err(|e| e.to_string())?;
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    if line.trim() == "go" {
        Ok(())
    } else {
        Err(format!("expected go, got {line:?}"))
    }
}

fn report(tally: &Tally, kept: &Kept) -> Result<(), String> {
    let join = |head: String, items: &mut dyn Iterator<Item = String>| {
        items.fold(head, |mut line, item| {
            line.push(' ');
            line.push_str(&item);
            line
        })
    };
    let lines = [
        format!("push-errors {}", tally.push_errors),
        join(
            "push-latency".into(),
            &mut tally.push_latencies_us.iter().map(u64::to_string),
        ),
        join("kept".into(), &mut kept.0.iter().map(IdRange::to_string)),
        join(
            format!("done {} {} {}", tally.ops, tally.errors, tally.ids),
            &mut tally.take_latencies_us.iter().map(u64::to_string),
        ),
    ];
    let mut out = std::io::stdout().lock();
    for line in lines {
        writeln!(out, "{line}").map_err(|e| e.to_string())?;
    }
    out.flush().map_err(|e| e.to_string())
}

fn wait_for_eof() {
    let mut sink = String::new();
    while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {
        sink.clear();
    }
}
