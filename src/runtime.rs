//! The library-owned tokio runtime behind every blocking entry point (Rust, C and Java).

use std::future::Future;

use once_cell::sync::Lazy;
use tokio::runtime::{Builder, Handle, Runtime};

use crate::error::{Result, ZooidError};

static RUNTIME: Lazy<std::result::Result<Runtime, String>> = Lazy::new(|| {
    Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("zooid-runtime")
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
});

/// The shared runtime, created on first use.
pub(crate) fn runtime() -> Result<&'static Runtime> {
    RUNTIME.as_ref().map_err(|e| ZooidError::Store {
        path: String::new(),
        reason: format!("cannot start the zooid runtime: {e}"),
    })
}

/// Runs `future` to completion on the shared runtime, from a thread that is not a runtime thread.
pub(crate) fn block_on<F: Future>(future: F) -> Result<F::Output> {
    if Handle::try_current().is_ok() {
        return Err(ZooidError::RuntimeThread);
    }
    Ok(runtime()?.block_on(future))
}
