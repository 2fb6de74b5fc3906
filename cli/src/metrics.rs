//! `--metrics-addr`: long-running commands (`elect`, later `queue work` and the keeper) serve
//! their metrics as Prometheus text over HTTP. One call from a command wires it:
//!
//! ```ignore
//! metrics::serve(args.metrics_addr)?;
//! ```

use std::net::SocketAddr;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
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
    // The library's latency buckets (zooid::stats::LATENCY_BUCKETS_US), as a real histogram
    // rather than the exporter's default summary, so that it aggregates across processes.
    let buckets: Vec<f64> = zooid::stats::LATENCY_BUCKETS_US
        .iter()
        .map(|&us| us as f64 / 1e6)
        .collect();
    PrometheusBuilder::new()
        .with_http_listener(addr)
        .set_buckets_for_metric(Matcher::Full("zooid_op_duration_seconds".into()), &buckets)
        .map_err(|err| ZooidError::InvalidArgument(format!("--metrics-addr {addr}: {err}")))?
        .install()
        .map_err(|err| ZooidError::InvalidArgument(format!("--metrics-addr {addr}: {err}")))?;
    tracing::info!(%addr, "serving Prometheus metrics");
    Ok(())
}
