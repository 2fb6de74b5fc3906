//! The library-owned tokio runtime behind every blocking entry point (Rust, C and Java).

use std::future::Future;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, Ordering};
use std::ops::{Deref, DerefMut};

use once_cell::sync::Lazy;
use tokio::runtime::{Builder, Handle, Runtime};

use crate::error::{Result, ZooidError};

/// Set in a process forked (without `exec`) from one that started zooid's runtime, by a
/// `pthread_atfork` child handler: one load tells every fast path (an ID from a prefetched batch,
/// any C call) that what it would hand out is the parent's too.
static FORKED: AtomicBool = AtomicBool::new(false);

extern "C" fn mark_forked() {
    FORKED.store(true, Ordering::Relaxed);
}

/// The runtime and the process it was started in.
static RUNTIME: Lazy<std::result::Result<(Runtime, u32), String>> = Lazy::new(|| {
    // SAFETY: registers a handler that only stores to an atomic (async-signal-safe), once.
    unsafe { libc::pthread_atfork(None, None, Some(mark_forked)) };
    Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("zooid-runtime")
        .enable_all()
        .build()
        .map(|runtime| (runtime, std::process::id()))
        .map_err(|e| e.to_string())
});

/// The shared runtime, created on first use.
///
/// In a process forked (without `exec`) after the runtime started, its threads are not there:
/// every call would wait for them for ever, and the sessions they served belong to the parent.
/// So a forked child gets [`ZooidError::Forked`] instead, whatever it calls (one check, here,
/// where every blocking call and every binding passes).
pub(crate) fn runtime() -> Result<&'static Runtime> {
    let (runtime, parent) = RUNTIME.as_ref().map_err(|e| ZooidError::Store {
        path: String::new(),
        reason: format!("cannot start the zooid runtime: {e}"),
    })?;
    let child = std::process::id();
    if child != *parent {
        return Err(ZooidError::Forked {
            parent: *parent,
            child,
        });
    }
    Ok(runtime)
}

/// `Forked` in a process forked from the one that started zooid's runtime, without touching the
/// runtime: for the paths that hand out what the parent holds too (IDs a prefetching source
/// took, a C call on anything inherited), which must refuse in the child before they look.
#[inline(always)]
pub(crate) fn refuse_in_forked_child() -> Result<()> {
    if !FORKED.load(Ordering::Relaxed) {
        return Ok(());
    }
    Err(ZooidError::Forked {
        parent: RUNTIME.as_ref().map_or(0, |(_, parent)| *parent),
        child: std::process::id(),
    })
}

/// Whether this process was forked from the one that started zooid's runtime: what it inherited
/// (sessions, services, recipe handles) is the parent's, and dropping it here must not send,
/// spawn or wait for anything.
pub(crate) fn in_forked_child() -> bool {
    matches!(runtime(), Err(ZooidError::Forked { .. }))
}

/// Runs `future` to completion on the shared runtime, from a thread that is not a runtime thread.
///
/// The future is boxed first: a take's or a push's state machine is 5 to 8 KB, and the runtime's
/// `block_on` passes its future down by value through several frames, each a copy (a profile of
/// the Java binding under contention showed those copies as 2 % of the client's CPU).
pub(crate) fn block_on<F: Future>(future: F) -> Result<F::Output> {
    if Handle::try_current().is_ok() {
        return Err(ZooidError::RuntimeThread);
    }
    Ok(runtime()?.block_on(Box::pin(future)))
}

/// A value that is dropped inside zooid's runtime context: objects holding a ZooKeeper client (a
/// session, a service, a recipe handle) spawn tasks when dropped, which needs a runtime, while
/// the blocking facades are dropped on ordinary threads.
pub(crate) struct DropInRuntime<T>(ManuallyDrop<T>);

impl<T> DropInRuntime<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(ManuallyDrop::new(value))
    }
}

impl<T> Deref for DropInRuntime<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for DropInRuntime<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<T: Clone> Clone for DropInRuntime<T> {
    fn clone(&self) -> Self {
        Self::new((*self.0).clone())
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for DropInRuntime<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl<T> Drop for DropInRuntime<T> {
    fn drop(&mut self) {
        // SAFETY: the value is taken exactly once, here, and never used again.
        drop_in_runtime(unsafe { ManuallyDrop::take(&mut self.0) });
    }
}

/// Drops `value` inside zooid's runtime context (see [`DropInRuntime`]); without a runtime (it
/// failed to start) it is dropped on the calling thread. In a forked child it is not dropped at
/// all but leaked: it is the parent's (a close sent from here would end the parent's session).
pub(crate) fn drop_in_runtime<T>(value: T) {
    match runtime() {
        Ok(rt) => {
            let _guard = rt.enter();
            drop(value);
        }
        Err(ZooidError::Forked { .. }) => std::mem::forget(value),
        Err(_) => drop(value),
    }
}
