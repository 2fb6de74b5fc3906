//! What the long-running commands (`queue work`, `elect`, `keeper`) share: the signals they stop
//! on, and the one mapping of the CLI's own I/O failures (signal handlers, logs, child
//! processes) to an error, hence to an exit code. They run on zooid's own runtime
//! ([`zooid::blocking::block_on`]), the one every blocking call of the library uses.

use tokio::signal::unix::{signal, Signal, SignalKind};
use zooid::ZooidError;

/// A failure of the CLI's own I/O, as an error naming `what` failed.
pub fn io_error(what: &str, e: std::io::Error) -> ZooidError {
    ZooidError::InvalidArgument(format!("{what}: {e}"))
}

/// SIGTERM and SIGINT, either of which asks a long-running command to stop.
pub struct Stop {
    term: Signal,
    int: Signal,
}

impl Stop {
    /// Installs the handlers; call it on the runtime (inside [`zooid::blocking::block_on`]).
    pub fn new() -> zooid::Result<Self> {
        Ok(Self {
            term: signal(SignalKind::terminate()).map_err(|e| io_error("SIGTERM handler", e))?,
            int: signal(SignalKind::interrupt()).map_err(|e| io_error("SIGINT handler", e))?,
        })
    }

    /// Resolves when SIGTERM or SIGINT arrives. Cancel-safe: a signal that arrives while it is
    /// not polled is kept for the next call.
    pub async fn recv(&mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
    }
}
