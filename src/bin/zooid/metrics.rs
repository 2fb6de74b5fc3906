//! `--metrics-addr`: long-running commands (`elect`, later `queue work` and the keeper) serve
//! their metrics as Prometheus text over HTTP. One call from a command wires it:
//!
//! ```ignore
//! metrics::serve(args.metrics_addr)?;
//! ```

use std::net::SocketAddr;

use metrics_exporter_prometheus::PrometheusBuilder;
use zooid::ZooidError;

/// Installs the Prometheus exporter as the process's metrics recorder, listening on `addr`
/// (any path answers with the metrics; Prometheus scrapes `/metrics`). Does nothing for `None`.
/// Call it before opening the session, inside the command's tokio runtime, so that every
/// figure is recorded from the start.
pub fn serve(addr: Option<SocketAddr>) -> zooid::Result<()> {
    let Some(addr) = addr else { return Ok(()) };
    // Bind first, for a clear error when the address is taken; the exporter binds it again.
    drop(std::net::TcpListener::bind(addr).map_err(|err| {
        ZooidError::InvalidArgument(format!(
            "--metrics-addr {addr}: cannot listen there ({err}); pick a free HOST:PORT"
        ))
    })?);
    PrometheusBuilder::new()
        .with_http_listener(addr)
        .install()
        .map_err(|err| ZooidError::InvalidArgument(format!("--metrics-addr {addr}: {err}")))?;
    tracing::info!(%addr, "serving Prometheus metrics");
    Ok(())
}
