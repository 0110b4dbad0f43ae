//! What the store knows of the HTTP request it serves: a request scope (a task-local around
//! one request's handling) holding the tenants whose copy the request has brought up to date
//! and the request's deadline (`SANDBOX_REQUEST_TIMEOUT_MS`), and [`blocking`], which hands
//! blocking store work to tokio's blocking pool with that deadline in a thread-local.
//!
//! Invariants: the deadline a blocking task sees is its request's or none (a thread of the
//! pool never keeps a finished task's deadline: a guard restores it, panics included); work
//! outside any request (seeding, benches, background threads) has none.

use super::lock;
use crate::{Error, Result};
use std::cell::Cell;
use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Instant;

tokio::task_local! {
    /// What one request's store calls share (see [`request_scope`]).
    static REQUEST: RequestScope;
}

/// One request's scope.
struct RequestScope {
    /// Tenants whose copy this request has brought up to date.
    fresh: Mutex<HashSet<String>>,
    /// When the request is cut off.
    deadline: Option<Instant>,
}

/// Runs `request` (the handling of one HTTP request) so that each tenant's S3 log is checked
/// for newer entries by its first read only: later reads of the same request see every write
/// acknowledged before the request began, which is what a client can tell apart (a write
/// acknowledged meanwhile is concurrent with the request). Outside a scope every read checks.
/// This keeps a read request at one GET-class request when the sandbox layer reads the
/// tenant's fault rules before the handler reads its data.
pub async fn request_scope<F: std::future::Future>(request: F) -> F::Output {
    request_scope_until(None, request).await
}

/// [`request_scope`] for a request cut off at `deadline`: its blocking store work knows the
/// deadline, waits for a writer lock no longer than it, and a write closure still running
/// when it passes is interrupted at SQLite's next safe point and rolled back (see
/// `database.rs`), so a cut-off request stops holding the writer.
pub async fn request_scope_until<F: std::future::Future>(
    deadline: Option<Instant>,
    request: F,
) -> F::Output {
    let scope = RequestScope {
        fresh: Mutex::default(),
        deadline,
    };
    REQUEST.scope(scope, request).await
}

/// Whether the current request scope has brought tenant `id`'s copy up to date.
pub(super) fn is_fresh(id: &str) -> bool {
    REQUEST
        .try_with(|scope| lock(&scope.fresh).contains(id))
        .unwrap_or(false)
}

/// Records that the current request scope (if any) brought tenant `id`'s copy up to date.
pub(super) fn mark_fresh(id: &str) {
    let _ = REQUEST.try_with(|scope| lock(&scope.fresh).insert(id.to_string()));
}

thread_local! {
    /// The deadline of the request whose blocking work this thread runs (see [`blocking`]).
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The deadline of the request whose blocking work runs on this thread, if any.
pub(crate) fn deadline() -> Option<Instant> {
    DEADLINE.with(Cell::get)
}

/// Restores the thread's deadline when the task ends, however it ends.
struct Restore(Option<Instant>);

impl Drop for Restore {
    fn drop(&mut self) {
        DEADLINE.with(|d| d.set(self.0));
    }
}

/// Runs blocking store work (SQLite, S3, tenant opening, registry lookups) on tokio's
/// blocking pool, so that it never occupies an async worker. Inside a request scope with a
/// deadline, the work runs with that deadline ([`deadline`]).
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    let deadline = REQUEST.try_with(|s| s.deadline).ok().flatten();
    tokio::task::spawn_blocking(move || {
        let _restore = Restore(DEADLINE.with(|d| d.replace(deadline)));
        f()
    })
    .await
    .map_err(|e| Error::Internal(format!("database task failed: {e}")))?
}
