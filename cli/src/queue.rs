//! The work-queue commands: `queue put`, `queue work`, `queue show` (src/queue.rs).

use std::process::Stdio;
use std::time::Duration;

use clap::Subcommand;
use tokio::io::AsyncWriteExt;
use zooid::blocking;
use zooid::queue::{Claim, QueueOptions, WorkQueue};
use zooid::zk::Zk;
use zooid::{ConnectOptions, ZooidError};

use crate::stop::{io_error, Stop};

/// `zooid queue ...`
#[derive(Subcommand)]
pub enum QueueCommand {
    /// Add an item (DATA, or `-` to read it from stdin); prints the item's name.
    Put {
        queue: String,
        data: String,
        /// Refuse the put when the queue holds this many items.
        #[arg(long, default_value_t = zooid::queue::DEFAULT_MAX_ITEMS)]
        max_items: usize,
        /// Refuse items larger than this many bytes.
        #[arg(long, default_value_t = zooid::queue::DEFAULT_MAX_ITEM_BYTES)]
        max_item_bytes: usize,
    },
    /// Run COMMAND for each claimed item, the item's bytes on its stdin (and its name in
    /// $ZOOID_QUEUE_ITEM): exit status 0 completes the item, anything else releases it. SIGTERM
    /// or SIGINT lets the current item finish, or releases it after the grace period, then exits.
    Work {
        queue: String,
        /// Stop after this many items (completed or released).
        #[arg(long)]
        max: Option<u64>,
        /// Seconds a running COMMAND may go on after SIGTERM before it is killed and its item
        /// released.
        #[arg(long, default_value_t = 30)]
        grace: u64,
        /// The identity shown by `queue show` for this worker's claims (default host:pid).
        #[arg(long)]
        identity: Option<String>,
        /// Serve Prometheus metrics over HTTP on HOST:PORT (e.g. 127.0.0.1:9464).
        #[arg(long, value_name = "HOST:PORT")]
        metrics_addr: Option<std::net::SocketAddr>,
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// List the items in put order, and who holds the claimed ones.
    Show { queue: String },
}

/// Runs one queue command on the blocking facade: a service on `connect` holds the session
/// (closed when the command ends), the queue is opened from it.
pub fn run(connect: &str, options: &ConnectOptions, command: QueueCommand) -> zooid::Result<()> {
    if connect.starts_with("file:") || connect.starts_with("mem:") {
        return Err(ZooidError::InvalidArgument(
            "queues need ZooKeeper: pass --connect host:port (or set ZOOID_CONNECT)".into(),
        ));
    }
    if let QueueCommand::Work { metrics_addr, .. } = &command {
        blocking::block_on(async { crate::metrics::serve(*metrics_addr) })??;
    }
    let service = crate::ids::open(connect, options)?;
    match command {
        QueueCommand::Put {
            queue,
            data,
            max_items,
            max_item_bytes,
        } => {
            let opts = QueueOptions {
                max_items,
                max_item_bytes,
                ..QueueOptions::default()
            };
            put(&service.open_queue(&queue, opts)?, &data)
        }
        QueueCommand::Work {
            queue,
            max,
            grace,
            identity,
            command,
            metrics_addr: _,
        } => {
            let opts = QueueOptions {
                identity,
                ..QueueOptions::default()
            };
            let q = service.open_queue(&queue, opts)?;
            let zk = service.zookeeper()?;
            let grace = Duration::from_secs(grace);
            blocking::block_on(work(q.as_async(), &zk, max, grace, &command))?
        }
        QueueCommand::Show { queue } => show(&service.open_queue(&queue, QueueOptions::default())?),
    }
}

fn put(queue: &blocking::WorkQueue, data: &str) -> zooid::Result<()> {
    let bytes = if data == "-" {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf)
            .map_err(|e| io_error("reading stdin", e))?;
        buf
    } else {
        data.as_bytes().to_vec()
    };
    let name = queue.put(&bytes)?;
    println!("{name}");
    Ok(())
}

fn show(queue: &blocking::WorkQueue) -> zooid::Result<()> {
    let items = queue.items()?;
    let claimed = items.iter().filter(|i| i.claimed_by.is_some()).count();
    println!("queue:   {}", queue.path());
    println!("items:   {} ({claimed} claimed)", items.len());
    for item in items {
        match item.claimed_by {
            Some(holder) => println!(
                "{:>10}  {}  {} bytes  claimed by {} (session {:#x})",
                item.sequence, item.name, item.bytes, holder.identity, holder.session_id
            ),
            None => println!(
                "{:>10}  {}  {} bytes  unclaimed",
                item.sequence, item.name, item.bytes
            ),
        }
    }
    Ok(())
}

async fn work(
    queue: &WorkQueue,
    zk: &Zk,
    max: Option<u64>,
    grace: Duration,
    command: &[String],
) -> zooid::Result<()> {
    let mut stop = Stop::new()?;
    // `stop_acting` then also counts the quorum's confirmations (`claim_at_risk`): a server cut
    // off from the quorum keeps the worker connected while the ensemble expires its session.
    let _lease = zk.hold_lease().await?;
    let mut handled = 0u64;
    while max.is_none_or(|m| handled < m) {
        let claim = tokio::select! {
            claim = queue.claim(None) => claim?,
            _ = stop.recv() => break,
        };
        let Some(claim) = claim else { continue };
        handled += 1;
        let stopping = run_one(claim, zk, command, grace, &mut stop).await?;
        if stopping {
            break;
        }
    }
    Ok(())
}

/// Resolves when the claim may be lost while its command runs: its session was given up, or it
/// has been out of touch with the servers, or with their quorum, for half its timeout
/// (`stop_acting`), after which the servers may expire it and hand the item to another worker.
async fn claim_at_risk(claim: &Claim, zk: &Zk) -> std::time::Duration {
    let mut status = zk.subscribe();
    loop {
        let now = *status.borrow_and_update();
        if claim.is_lost() || now.stop_acting {
            // What may be left before the servers expire the session: they count its timeout
            // from the last contact, which came before the client noticed the disconnection
            // (up to a third of the timeout, the connection timeout, and a tick) and half the
            // timeout before `stop_acting`: an eighth of it stays.
            return now.timeout / 8;
        }
        if status.changed().await.is_err() {
            return Duration::ZERO;
        }
    }
}

/// Kills COMMAND's process group.
fn kill_group(child: &tokio::process::Child) {
    if let Some(pid) = child.id() {
        // SAFETY: kill(2) on the process group we created for the command.
        unsafe {
            libc::kill(-(pid as i32), libc::SIGKILL);
        }
    }
}

/// Says that `item`'s claim may be lost and sends its command's process group SIGTERM; the
/// caller kills it `within` from now.
fn stop_at_risk(child: &tokio::process::Child, item: &str, within: Duration) {
    eprintln!(
        "zooid: {item}: the claim may be lost (no contact with ZooKeeper): stopping the command within {within:?}"
    );
    if let Some(pid) = child.id() {
        // SAFETY: kill(2) on the process group we created for the command.
        unsafe {
            libc::kill(-(pid as i32), libc::SIGTERM);
        }
    }
}

/// Runs COMMAND on one claimed item; returns whether a stop signal arrived. A command whose
/// claim may be lost (see [`claim_at_risk`]) gets SIGTERM at once and SIGKILL within the grace
/// period and an eighth of the session's timeout later, before the servers could hand the item
/// to another worker; its item is then released (or already lost).
async fn run_one(
    claim: Claim,
    zk: &Zk,
    command: &[String],
    grace: Duration,
    stop: &mut Stop,
) -> zooid::Result<bool> {
    let mut cmd = tokio::process::Command::new(&command[0]);
    cmd.args(&command[1..])
        .env("ZOOID_QUEUE_ITEM", claim.item())
        .stdin(Stdio::piped())
        // Its own process group: a terminal's Ctrl-C reaches the worker only, which lets the
        // command finish; past the grace period the whole group is killed.
        .process_group(0)
        .kill_on_drop(true);
    // It dies with the worker (SIGKILL when the thread that started it ends: this one, the
    // thread `block_on` runs the worker on, which ends only with the process). Otherwise a
    // worker killed mid-item leaves it running while, once the worker's session expired,
    // another worker runs a second command on the same item.
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        let parent = libc::getpid();
        cmd.pre_exec(move || crate::child::die_with(parent));
    }
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            // Hand the item back before reporting that the command cannot run.
            let _ = claim.release().await;
            return Err(io_error(&format!("cannot run {:?}", command[0]), e));
        }
    };
    if let Some(mut stdin) = child.stdin.take() {
        let data = claim.data().to_vec();
        tokio::spawn(async move {
            // A command that does not read its input closes the pipe: that is its business.
            let _ = stdin.write_all(&data).await;
        });
    }
    let mut stopping = false;
    let mut at_risk = None;
    let status = tokio::select! {
        status = child.wait() => Some(status),
        _ = stop.recv() => { stopping = true; None }
        left = claim_at_risk(&claim, zk) => { at_risk = Some(left); None }
    };
    let status = match status {
        Some(status) => Some(status),
        None => {
            let deadline = match at_risk {
                Some(left) => {
                    stop_at_risk(&child, claim.item(), grace.min(left));
                    tokio::time::Instant::now() + grace.min(left)
                }
                None => {
                    eprintln!(
                        "zooid: stopping: letting {} finish for up to {grace:?}",
                        claim.item()
                    );
                    tokio::time::Instant::now() + grace
                }
            };
            // While a stopping worker lets its command finish, it still watches the claim: a
            // grace period longer than the session could otherwise outlive the claim.
            let mut deadline = std::pin::pin!(tokio::time::sleep_until(deadline));
            let mut watching = at_risk.is_none();
            loop {
                tokio::select! {
                    status = child.wait() => break Some(status),
                    () = &mut deadline => {
                        kill_group(&child);
                        let _ = child.kill().await;
                        break None;
                    }
                    left = claim_at_risk(&claim, zk), if watching => {
                        watching = false;
                        let now = tokio::time::Instant::now();
                        let sooner = deadline.deadline().min(now + left);
                        stop_at_risk(&child, claim.item(), sooner - now);
                        deadline.as_mut().reset(sooner);
                    }
                }
            }
        }
    };
    let item = claim.item().to_string();
    let outcome = match status {
        Some(Ok(s)) if s.success() => claim.complete().await.map(|()| "completed"),
        Some(Ok(s)) => {
            eprintln!("zooid: {item}: command failed ({s}); releasing the item");
            claim.release().await.map(|()| "released")
        }
        Some(Err(e)) => {
            eprintln!("zooid: {item}: cannot wait for the command ({e}); releasing the item");
            claim.release().await.map(|()| "released")
        }
        None => {
            eprintln!("zooid: {item}: grace period over; command killed, releasing the item");
            claim.release().await.map(|()| "released")
        }
    };
    match outcome {
        Ok(what) => eprintln!("zooid: {item} {what}"),
        // A lost claim is redelivered elsewhere; the worker goes on.
        Err(e @ ZooidError::SessionLost { .. }) => eprintln!("zooid: {e}"),
        Err(e) => return Err(e),
    }
    Ok(stopping)
}
