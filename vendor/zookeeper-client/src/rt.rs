//! zooid patch: the socket and the timers on tokio, the runtime zooid runs every session on,
//! instead of async-io's reactor thread: every read and timer then wakes the session task
//! directly, not through another thread (vendor/README.md).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio_util::compat::{Compat, TokioAsyncReadCompatExt};

/// A TCP connection, read and written through `futures::io`.
pub type TcpStream = Compat<tokio::net::TcpStream>;

/// Connects to `host:port`, with `TCP_NODELAY` as the Java client sets it (a request written
/// while the previous one is unacknowledged is not held back).
pub async fn connect(host: &str, port: u16) -> std::io::Result<TcpStream> {
    let stream = tokio::net::TcpStream::connect((host, port)).await?;
    stream.set_nodelay(true)?;
    Ok(stream.compat())
}

/// Completes after `duration`.
pub fn after(duration: Duration) -> tokio::time::Sleep {
    tokio::time::sleep(duration)
}

/// A timer that fires at `deadline` (never, when `None`), as `async_io::Timer::at`/`never`.
pub struct Timer {
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Timer {
    pub fn at(deadline: Instant) -> Self {
        Self { sleep: Some(Box::pin(tokio::time::sleep_until(deadline.into()))) }
    }

    pub fn never() -> Self {
        Self { sleep: None }
    }
}

impl Future for Timer {
    type Output = Instant;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Instant> {
        match self.sleep.as_mut() {
            None => Poll::Pending,
            Some(sleep) => sleep.as_mut().poll(cx).map(|()| Instant::now()),
        }
    }
}

/// Fires every `period`, yielding the time it fired, as `async_io::Timer::interval` polled as a
/// future again and again.
pub struct Interval {
    interval: tokio::time::Interval,
}

impl Interval {
    pub fn new(period: Duration) -> Self {
        let start = tokio::time::Instant::now() + period;
        let mut interval = tokio::time::interval_at(start, period);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Self { interval }
    }
}

impl Future for Interval {
    type Output = Instant;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Instant> {
        self.interval.poll_tick(cx).map(|_| Instant::now())
    }
}

/// zooid patch: where a client spawns its tasks (the session task at connect, the background
/// deletes of a dropped lock). With a runtime named by the connector (`Connector::with_runtime`),
/// on that runtime; otherwise through `asyncs::spawn`, which finds tokio through a linkme
/// registration that a static library's link may leave out ("no spawner").
#[derive(Clone, Debug, Default)]
pub struct Spawner(Option<tokio::runtime::Handle>);

impl Spawner {
    pub fn new(handle: tokio::runtime::Handle) -> Self {
        Self(Some(handle))
    }

    /// Spawns `future`, detached.
    pub fn spawn<F>(&self, future: F)
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match &self.0 {
            Some(handle) => drop(handle.spawn(future)),
            None => drop(asyncs::spawn(future)),
        }
    }
}
