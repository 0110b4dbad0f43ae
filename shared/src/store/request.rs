//! What the store knows of the HTTP request it serves: a request scope (a task-local around
//! one request's handling) holding the tenants whose copy the request has brought up to date,
//! the request's deadline (`SANDBOX_REQUEST_TIMEOUT_MS`) and its [`Premise`], if any; and
//! [`blocking`], which hands blocking store work to tokio's blocking pool with that deadline
//! in a thread-local.
//!
//! Invariants: the deadline a blocking task sees is its request's or none (a thread of the
//! pool never keeps a finished task's deadline: a guard restores it, panics included); work
//! outside any request (seeding, benches, background threads) has none. A premise is
//! confirmed only by a write whose transaction checked it and whose answer stands on a copy
//! S3 proved current (a landed PUT, or a refusal after the freshness GET); once tripped,
//! every later write of the request refuses without running.

use super::lock;
use crate::{Error, Result};
use rusqlite::Connection;
use std::cell::Cell;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
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
    /// What the request assumed of one tenant's state without asking S3 (see [`Premise`]).
    premise: Mutex<Option<Premise>>,
}

/// A condition on one tenant's state that a request's answer rests on, evaluated on the
/// local copy without a freshness check (S3 mode: the check would be a GET before the
/// request's write, whose conditional PUT proves the copy current anyway). The request's
/// first write re-evaluates it inside its own transaction, before its closure: the entry
/// that lands was computed on a state where it holds, and the PUT's precondition proves that
/// state was the newest (docs/storage.md, "Why the PUT is the freshness check"). The serving
/// layer uses it for "no fault rule matches this request" (`web::powers`).
pub struct Premise {
    tenant: String,
    holds: PremiseCheck,
    state: PremiseState,
}

/// A premise's condition, evaluated on a connection holding the tenant's state.
pub type PremiseCheck = Arc<dyn Fn(&Connection) -> Result<bool> + Send + Sync>;

/// Where a request's premise stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PremiseState {
    /// No write of the request settled it: only a check of a current copy can tell.
    Pending,
    /// A write's transaction found it true, and that write's answer stood on a copy S3
    /// proved current (its PUT landed, or its refusal followed a freshness GET).
    Confirmed,
    /// A write's transaction found it false: that write refused (nothing applied) and so
    /// does every later write of the request.
    Tripped,
    /// A write that checked it ended with its outcome unknown (it may have landed).
    Unsettled,
}

/// The refusal of a write whose request's premise does not hold on the state it ran on.
fn tripped() -> Error {
    Error::Conflict(
        "the tenant changed under this request's assumptions; nothing was applied".into(),
    )
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
        premise: Mutex::default(),
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

/// Makes `holds` the current request's premise about tenant `id` (replacing any earlier
/// one), pending. Outside a request scope it does nothing (and [`settle_premise`] then
/// answers `None`).
pub fn assume(id: &str, holds: PremiseCheck) {
    let _ = REQUEST.try_with(|scope| {
        *lock(&scope.premise) = Some(Premise {
            tenant: id.to_string(),
            holds,
            state: PremiseState::Pending,
        });
    });
}

/// Removes the current request's premise and answers where it stood (`None` without one).
/// Writes after this are not checked against it.
pub fn settle_premise() -> Option<PremiseState> {
    REQUEST
        .try_with(|scope| lock(&scope.premise).take().map(|p| p.state))
        .ok()
        .flatten()
}

/// How a write of tenant `id` in the current request stands towards the request's premise.
pub(super) enum Guard {
    /// Nothing to check: no premise about this tenant, or one already confirmed or
    /// unsettled.
    Free,
    /// The premise was tripped: refuse without running.
    Refuse(Error),
    /// Check it in the write's transaction (see [`Guarded`]).
    Check(Guarded),
}

/// A pending premise as a write checks it: its condition, and whether the last run of the
/// write's closure found it false.
pub(super) struct Guarded {
    holds: PremiseCheck,
    tripped: Arc<AtomicBool>,
}

impl Guarded {
    /// Runs before the write's closure, in its transaction: refuses (nothing of the write
    /// applied) when the premise does not hold on this state. The closure may run again on a
    /// fresher state after a lost race; the last run decides.
    pub(super) fn check(&self, conn: &Connection) -> Result<()> {
        let holds = (self.holds)(conn)?;
        self.tripped.store(!holds, Ordering::SeqCst);
        if holds {
            Ok(())
        } else {
            Err(tripped())
        }
    }
}

/// The guard of a write of tenant `id` in the current request.
pub(super) fn guard(id: &str) -> Guard {
    REQUEST
        .try_with(|scope| match &*lock(&scope.premise) {
            Some(p) if p.tenant == id => match p.state {
                PremiseState::Pending => Guard::Check(Guarded {
                    holds: p.holds.clone(),
                    tripped: Arc::default(),
                }),
                PremiseState::Tripped => Guard::Refuse(tripped()),
                PremiseState::Confirmed | PremiseState::Unsettled => Guard::Free,
            },
            _ => Guard::Free,
        })
        .unwrap_or(Guard::Free)
}

/// Records what a write that checked the premise (`guarded`) came to (`refused`: its error,
/// if any): success or a refusal of its own confirms it (either answer stood on a copy S3 proved current, see
/// `Replica::write_group`), unless its last run tripped it; "outcome unknown" leaves it
/// unsettled; "nothing was applied" leaves it pending (nothing was proved).
pub(super) fn record_guarded(guarded: &Guarded, refused: Option<&Error>) {
    let state = if guarded.tripped.load(Ordering::SeqCst) {
        PremiseState::Tripped
    } else {
        match refused {
            None => PremiseState::Confirmed,
            Some(Error::OutcomeUnknown(_)) => PremiseState::Unsettled,
            Some(Error::Unavailable(_) | Error::NewerSchema(_) | Error::Internal(_)) => {
                PremiseState::Pending
            }
            Some(_) => PremiseState::Confirmed,
        }
    };
    let _ = REQUEST.try_with(|scope| {
        if let Some(p) = lock(&scope.premise).as_mut() {
            if p.state == PremiseState::Pending {
                p.state = state;
            }
        }
    });
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Store, TenantDb};
    use std::sync::atomic::AtomicUsize;

    fn rules(db: &TenantDb) -> i64 {
        db.read_blocking(|c| {
            Ok(c.query_row("SELECT COUNT(*) FROM sandbox_faults", [], |r| r.get(0))?)
        })
        .expect("count")
    }

    fn new_rule(tx: &rusqlite::Transaction<'_>) -> Result<()> {
        let rule = serde_json::from_value(serde_json::json!({"path": "/x", "status": 503}))
            .map_err(|e| Error::Internal(e.to_string()))?;
        crate::sandbox::faults::create(tx, &rule).map(|_| ())
    }

    /// How the first write of a request settles its premise (local mode here; in S3 mode the
    /// same check runs in the same place, and the PUT proves the state it ran on current):
    /// true there and applied, confirmed; false there, the write and every later one refuse
    /// without applying anything, tripped; no write, pending; a write refused by its own
    /// closure on a state where the premise held, confirmed.
    #[test]
    fn a_premise_is_settled_by_the_first_write_that_checks_it() {
        let dir = std::env::temp_dir().join(format!("premise-test-{}", uuid::Uuid::new_v4()));
        let store = Store::open_with(&dir, None).expect("store");
        let (record, _) = store
            .registry()
            .create_tenant("premise", "UTC")
            .expect("tenant");
        let db = store.tenant_db(&record.id).expect("db");
        let id = record.id.clone();
        let no_rule: PremiseCheck = Arc::new(|c| {
            Ok(c.query_row("SELECT COUNT(*) = 0 FROM sandbox_faults", [], |r| r.get(0))?)
        });
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let ran = Arc::new(AtomicUsize::new(0));
        let (a, b) = rt.block_on(request_scope(async {
            assume(&id, no_rule.clone());
            let first = db.write(new_rule).await;
            let a = (first.is_ok(), settle_premise());
            assume(&id, no_rule.clone());
            let refused = db.write(new_rule).await;
            let counted = ran.clone();
            let again = db
                .write(move |tx| {
                    counted.fetch_add(1, Ordering::SeqCst);
                    new_rule(tx)
                })
                .await;
            let b = (refused.is_err(), again.is_err(), settle_premise());
            (a, b)
        }));
        assert_eq!(a, (true, Some(PremiseState::Confirmed)));
        assert_eq!(b, (true, true, Some(PremiseState::Tripped)));
        assert_eq!(ran.load(Ordering::SeqCst), 0, "a write after the trip ran");
        assert_eq!(
            rules(&db),
            1,
            "a write on a premise found false was applied"
        );

        let pending = rt.block_on(request_scope(async {
            assume(&id, no_rule.clone());
            settle_premise()
        }));
        assert_eq!(pending, Some(PremiseState::Pending));
        let holds: PremiseCheck = Arc::new(|_| Ok(true));
        let own_refusal = rt.block_on(request_scope(async {
            assume(&id, holds);
            let refused = db
                .write(|_| -> Result<()> { Err(Error::BadRequest("no".into())) })
                .await;
            (refused.is_err(), settle_premise())
        }));
        assert_eq!(own_refusal, (true, Some(PremiseState::Confirmed)));
        assert_eq!(settle_premise(), None, "outside a request");
        drop(db);
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
