//! One SQLite database as the store uses it: a writer connection behind a lock ([`writer`]:
//! a wait for it ends at a deadline without polling), a small pool of read connections, and,
//! in S3 mode, a [`Replica`] that makes S3 the source of truth.
//! Tenant databases and the registry are both built on it, so both replicate the same way.
//!
//! Memo: answers derived from the database can be kept per *version*, a counter
//! bumped after every write transaction (committed or not) and every catch-up from S3, so an
//! identical read at the same version is answered without running again. Invariants:
//! - An entry is made under the version read *before* its read transaction began: if a
//!   write commits meanwhile, the bump that follows its commit retires the entry, so an
//!   entry is never served after a write that could change it has been acknowledged.
//! - Local mode only: there this process's store is the only writer of its files, so the
//!   counter sees every change without I/O. In S3 mode another environment may have written
//!   to the bucket, which only a request to S3 can tell: [`Database::memo_version`] is `None`
//!   and nothing is remembered.
//! - The memo keeps the entries of one version, at most [`MAX_MEMO_ENTRIES`]; a full memo
//!   is emptied rather than managed (a read that misses is only as slow as without memo).
//! - Answers that depend on the [`WATCHED_TABLES`] alone (the sandbox's fault rules, which
//!   every request of a tenant reads) are kept in a second memo ([`MemoScope::Watched`])
//!   under a second counter, bumped only after a write that changed a row of those tables:
//!   a stream of usage posts no longer retires them at every call. The writer connection
//!   carries TEMP triggers on those tables that call a function setting a flag; the flag is
//!   read and cleared where the version is bumped (after the write, under the writer lock),
//!   so the same invariant holds. A trigger on a table also turns off SQLite's truncate
//!   optimisation, so a `DELETE` without `WHERE` (a reset) is seen row by row too. A write
//!   that rolls back may set the flag: it only retires the entries early.
//! - The rating catalogue ([`MemoScope::Catalogue`], the rows posting usage reads to rate an
//!   event: [`CATALOGUE_COLUMNS`]) is watched the same way, under a third counter, so the
//!   catalogue a posting call loaded serves the next calls until one of those rows changes.
//!   Posting reads it *inside* its write ([`write_memo`]): the writer lock is held there, so
//!   no other write can move the counter; a write that has changed a watched row itself (the
//!   flag is set) gets no entry, since the entry does not show its own uncommitted change.
//!
//! Group commit (S3 mode): [`Database::write_grouped`] queues a write; the first write that
//! finds nobody leading takes the writer and the writes queued by then (at most
//! [`MAX_GROUP`]) and writes them as one log entry ([`Replica::write_group`]); the others
//! wait for the answer it gives them, or lead the next group. Invariants: only the leader
//! takes writes out of the queue; leadership is given back however the leader ends (a
//! panicking closure included: the members it took are answered, never left waiting); a
//! write still queued at its deadline answers "nothing was applied" and leaves the queue;
//! one taken into a group waits for the group's answer, which the write deadline bounds.
//!
//! WAL checkpoints of local mode: see [`wal`].

use super::idempotency::KeyScope;
use super::replica::{self, Member, Replica, RestoreRef};
use super::{capture, lock, sqlite};
use crate::{Error, Result};
use rusqlite::{Connection, Transaction};
use std::any::Any;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Most idle read connections kept per database.
const MAX_IDLE_READERS: usize = 4;

/// Most answers the memo keeps (see the module doc).
const MAX_MEMO_ENTRIES: usize = 512;

/// Tables whose rows [`MemoScope::Watched`] entries may depend on (see the module doc).
const WATCHED_TABLES: &[&str] = &["sandbox_faults"];

/// What [`MemoScope::Catalogue`] entries may depend on: each table posting reads to rate an
/// event (`domain::usage::post::catalogue`), with the columns whose update retires them
/// (`None`: any; a row inserted or deleted always does). billing_accounts is read for its
/// currency only: its pending charges move with every post and must not retire the entries.
const CATALOGUE_COLUMNS: &[(&str, Option<&str>)] = &[
    ("service_resources", None),
    ("services", None),
    ("agreement_services", None),
    ("billing_accounts", Some("id, currency_code")),
    ("service_periods", None),
    ("usage_rules", None),
    ("lookup_table_rows", None),
    ("charge_categories", None),
];

/// The SQL function the watch triggers call with their scope's number (see the module doc).
const WATCH_FUNCTION: &str = "sbx_watched_table_changed";

/// What a memo entry depends on (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoScope {
    /// Any table: retired by every write.
    Data,
    /// The [`WATCHED_TABLES`] alone: retired by a write that changed one of their rows.
    Watched,
    /// The rating catalogue ([`CATALOGUE_COLUMNS`]): retired by a write that changed one of
    /// its rows.
    Catalogue,
}

impl MemoScope {
    fn index(self) -> usize {
        match self {
            MemoScope::Data => 0,
            MemoScope::Watched => 1,
            MemoScope::Catalogue => 2,
        }
    }
}

/// A memo scope's state: its counter, its memo, and (scopes other than `Data`) the flag the
/// watch triggers set.
#[derive(Default)]
struct Scoped {
    version: AtomicU64,
    touched: Arc<AtomicBool>,
    memo: Mutex<Memo>,
}

thread_local! {
    /// The database whose local-mode write closure runs on this thread (see [`write_memo`]).
    static WRITING: std::cell::RefCell<Option<Database>> = const { std::cell::RefCell::new(None) };
}

/// Inside a write's closure: the entry of `scope` kept under `key`, made by `make` when
/// there is none for the scope's current version. `None` when no entry can be trusted: in S3
/// mode (see the module doc), outside a write, or once the running write has changed a row
/// the scope depends on. The caller holds the writer, so the version cannot move while it
/// uses the entry; an entry holding interior state (a cache filled as it goes) must only be
/// filled from the writer's own transaction, which sees exactly that version.
pub fn write_memo<T: Any + Send + Sync>(
    scope: MemoScope,
    key: &str,
    make: impl FnOnce() -> T,
) -> Option<Arc<T>> {
    let db = WRITING.with(|w| w.borrow().clone())?;
    let state = db.scoped(scope);
    if state.touched.load(Ordering::SeqCst) {
        return None;
    }
    let version = db.scoped_version(scope)?;
    if let Some(hit) = db.recall_scoped::<T>(scope, key) {
        return Some(hit);
    }
    let made = Arc::new(make());
    db.remember_scoped(scope, version, key.to_string(), made.clone());
    Some(made)
}

/// Marks `db` as the database whose write runs on this thread until dropped.
struct Writing(Option<Database>);

impl Writing {
    fn begin(db: &Database) -> Writing {
        Writing(WRITING.with(|w| w.replace(Some(db.clone()))))
    }
}

impl Drop for Writing {
    fn drop(&mut self) {
        let before = self.0.take();
        WRITING.with(|w| *w.borrow_mut() = before);
    }
}

/// A local or replicated SQLite database. Cloning shares it.
#[derive(Clone)]
pub(crate) struct Database {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    writer: Writer,
    readers: Mutex<Vec<Connection>>,
    replica: Option<Replica>,
    /// By [`MemoScope::index`]: each scope's counter, bumped after every write and catch-up
    /// (`Data`) or after one that changed a row the scope watches (the others, whose flag
    /// the watch triggers set during a write and which is cleared where the counters are
    /// bumped); and its memo (see the module doc).
    scopes: [Scoped; 3],
    /// Writes waiting to share the next log entry, and whether one of them leads (S3 mode;
    /// see [`Database::write_grouped`]).
    group: Mutex<Queue>,
    /// Signalled when a group's answers are in, or nobody leads any more.
    group_done: Condvar,
    /// Whether a background WAL checkpoint is running (local mode; see [`wal`]).
    checkpointing: AtomicBool,
    /// Whether a background checkpoint finished since the writer last checkpointed: the
    /// writer then copies the rest itself (see [`wal`]).
    backfilled: AtomicBool,
}

/// Answers kept for one version of the database, by key.
#[derive(Default)]
struct Memo {
    version: u64,
    entries: HashMap<String, Arc<dyn Any + Send + Sync>>,
}

impl Database {
    /// Opens the database at `path` and brings its schema up to date with `prepare`. With a
    /// replica, the local file is first replaced by the newest snapshot, then the log after it
    /// is applied: a cache left by an earlier process is never trusted.
    pub fn open(
        path: &Path,
        prepare: impl FnOnce(&mut Connection) -> Result<()>,
        replica: Option<Replica>,
    ) -> Result<Database> {
        if let Some(r) = &replica {
            r.restore(path)?;
        }
        let mut writer = sqlite::open(path)?;
        prepare(&mut writer)?;
        sqlite::interrupt_at_deadlines(&writer);
        let scopes: [Scoped; 3] = Default::default();
        if let Some(r) = &replica {
            capture::install(&writer)?;
            r.catch_up(&mut writer)?;
        } else {
            // Checkpoints run off the write path (see [`wal`]). The pragma replaces the
            // WAL hook, so it comes first.
            writer.pragma_update(None, "wal_autocheckpoint", 0)?;
            writer.wal_hook(Some(wal::record_pages));
            watch_tables(&writer, &scopes)?;
        }
        Ok(Database {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                writer: Writer::new(writer),
                readers: Mutex::new(Vec::new()),
                replica,
                scopes,
                group: Mutex::new(Queue::default()),
                group_done: Condvar::new(),
                checkpointing: AtomicBool::new(false),
                backfilled: AtomicBool::new(false),
            }),
        })
    }

    /// Runs `f` in one write transaction; in S3 mode it returns only after S3 holds the change
    /// (and `f` may run more than once).
    pub fn write<T>(&self, f: impl Fn(&Transaction<'_>) -> Result<T>) -> Result<T> {
        self.write_checking(true, f)
    }

    /// [`Database::write`], skipping the catch-up before the first attempt unless `check` (a
    /// caller that knows the copy was brought up to date since its request began passes false).
    pub fn write_checking<T>(
        &self,
        check: bool,
        f: impl Fn(&Transaction<'_>) -> Result<T>,
    ) -> Result<T> {
        // A request's deadline bounds the wait for the writer and the closure (see
        // `sqlite::until_deadline`): a cut-off request stops holding the writer.
        let deadline = self.deadline();
        let Some(replica) = &self.inner.replica else {
            let mut conn = self.writer_until(deadline)?;
            wal::forget_pages();
            let out = (|| {
                let tx =
                    conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                let before = tx.total_changes();
                let writing = Writing::begin(self);
                let out = sqlite::until_deadline(deadline, || f(&tx));
                drop(writing);
                let out = out?;
                if tx.total_changes() != before {
                    // Local mode has no log; the header still counts the writes that changed
                    // something, so that a checkpoint can name the version it was taken at.
                    capture::set_seq(&tx, capture::seq(&tx)? + 1)?;
                }
                tx.commit()?;
                Ok(out)
            })();
            // Under the writer lock, before the write is acknowledged: retires the memo.
            self.bump();
            self.checkpoint_if_due(&conn);
            return out;
        };
        // One deadline for the whole write, the wait for the writer lock included: a write
        // stuck behind a slow one answers 503 in time instead of queueing without bound.
        let deadline = deadline.unwrap_or_else(|| replica.write_deadline());
        let mut conn = self.writer_until(Some(deadline))?;
        let cut_off = super::request::deadline();
        let f = |tx: &Transaction<'_>| sqlite::until_deadline(cut_off, || f(tx));
        let written = replica.write(&mut conn, &f, deadline, check);
        self.bump();
        let (out, snapshot_due) = written?;
        drop(conn);
        if snapshot_due && replica.begin_compaction() {
            let db = self.clone();
            std::thread::spawn(move || db.compact());
        }
        Ok(out)
    }

    /// [`Database::write_checking`] for a write that may share its log entry with other
    /// writes of this process (group commit, S3 mode; local mode runs it alone). The write
    /// queues; if no write of the database is leading a group, this one leads: it takes the
    /// writer, takes every write queued by then (at most [`MAX_GROUP`]), runs them in order
    /// in one transaction, each in a savepoint of its own, PUTs their changes as one entry
    /// and answers them all once the PUT's outcome is settled ([`Replica::write_group`]).
    /// Otherwise it waits for the answer its leader gives, or, once no group leads, leads the
    /// next itself. So writes that arrive while a group's PUT is in flight share the next
    /// PUT, and a process's writes to one tenant take one S3 round trip per group instead of
    /// one each. `f` runs on the leader's thread, with this write's own deadlines.
    pub fn write_grouped<T, F>(&self, check: bool, f: F) -> Result<T>
    where
        F: Fn(&Transaction<'_>) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let Some(replica) = &self.inner.replica else {
            return self.write_checking(check, f);
        };
        let kept: Arc<Mutex<Option<T>>> = Arc::default();
        let job = self.job(replica, !check, {
            let kept = kept.clone();
            move |tx: &Transaction<'_>| {
                let out = f(tx)?;
                *lock(&kept) = Some(out);
                Ok(())
            }
        });
        let deadline = job.deadline;
        let id = self.enqueue(job);
        self.answer_of(replica, id, deadline)?;
        let out = lock(&kept).take();
        out.ok_or_else(|| Error::Internal("an applied write kept no result".into()))
    }

    /// The simulation's group: `writes` queued together, then answered in order (the first
    /// answer's wait leads one group with all of them, as when they arrive while another
    /// group's PUT is in flight), on this thread, so that the seeded scheduler orders every
    /// request. Test builds only.
    #[cfg(test)]
    pub(crate) fn write_together<T: Send + 'static>(
        &self,
        writes: Vec<GroupWrite<T>>,
    ) -> Vec<Result<T>> {
        let Some(replica) = &self.inner.replica else {
            return writes.into_iter().map(|f| self.write(f)).collect();
        };
        let tickets: Vec<_> = writes
            .into_iter()
            .map(|f| {
                let kept: Arc<Mutex<Option<T>>> = Arc::default();
                let keep = kept.clone();
                let job = self.job(replica, false, move |tx: &Transaction<'_>| {
                    *lock(&keep) = Some(f(tx)?);
                    Ok(())
                });
                let deadline = job.deadline;
                (self.enqueue(job), deadline, kept)
            })
            .collect();
        tickets
            .into_iter()
            .map(|(id, deadline, kept)| {
                self.answer_of(replica, id, deadline)?;
                let out = lock(&kept).take();
                out.ok_or_else(|| Error::Internal("an applied write kept no result".into()))
            })
            .collect()
    }

    /// A write of a group: `run` under the request's cut-off (its statements interrupted
    /// past it), with the write's deadline; `fresh` when its request already brought the
    /// copy up to date.
    fn job(
        &self,
        replica: &Replica,
        fresh: bool,
        run: impl Fn(&Transaction<'_>) -> Result<()> + Send + 'static,
    ) -> Job {
        let cut_off = super::request::deadline();
        Job {
            run: Box::new(move |tx| sqlite::until_deadline(cut_off, || run(tx))),
            deadline: self.deadline().unwrap_or_else(|| replica.write_deadline()),
            fresh,
        }
    }

    /// Queues `job` for the next group: its ticket.
    fn enqueue(&self, job: Job) -> u64 {
        let mut queue = lock(&self.inner.group);
        let id = queue.next;
        queue.next += 1;
        queue.waiting.push_back((id, job));
        id
    }

    /// Waits for the answer of queued write `id` (leading a group when nobody does): a write
    /// still queued at its `deadline` leaves the queue and answers 503 "nothing was applied";
    /// one taken into a group waits for the group's answer (given before that group's
    /// deadline, the earliest of its members').
    fn answer_of(&self, replica: &Replica, id: u64, deadline: Instant) -> Result<()> {
        let mut queue = lock(&self.inner.group);
        loop {
            if let Some(answer) = queue.answers.remove(&id) {
                return answer;
            }
            if !queue.leading {
                queue.leading = true;
                drop(queue);
                self.lead(replica);
                queue = lock(&self.inner.group);
                continue;
            }
            let now = replica.bucket().now();
            if now >= deadline {
                if let Some(at) = queue.waiting.iter().position(|(i, _)| *i == id) {
                    queue.waiting.remove(at);
                    return Err(busy());
                }
            }
            let wait = deadline
                .saturating_duration_since(now)
                .max(Duration::from_millis(10));
            queue = self
                .inner
                .group_done
                .wait_timeout(queue, wait)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }

    /// Leads one group: takes the writer, then the writes queued by then, writes them as one
    /// entry, and answers each. Leadership is given back however this ends (a closure that
    /// panics included: the members taken are then answered with an internal error).
    fn lead(&self, replica: &Replica) {
        let mut turn = Turn {
            db: self,
            taken: Vec::new(),
        };
        let earliest = lock(&self.inner.group)
            .waiting
            .iter()
            .map(|(_, job)| job.deadline)
            .min();
        let Some(earliest) = earliest else { return };
        let Ok(mut conn) = self.writer_until(Some(earliest)) else {
            // The writer stayed busy (a compaction's copy, a restore): the writes whose
            // deadline passed are refused; the others stay queued for the next leader.
            let now = replica.bucket().now();
            let mut queue = lock(&self.inner.group);
            let (late, rest) = std::mem::take(&mut queue.waiting)
                .into_iter()
                .partition(|(_, job)| job.deadline <= now);
            queue.waiting = rest;
            for (id, _) in late {
                queue.answers.insert(id, Err(busy()));
            }
            return;
        };
        let batch: Vec<(u64, Job)> = {
            let mut queue = lock(&self.inner.group);
            let take = queue.waiting.len().min(MAX_GROUP);
            // A write whose deadline passed while it queued never runs (and does not cut
            // the group's deadline short for the others).
            let now = replica.bucket().now();
            let (late, batch): (Vec<_>, Vec<_>) = queue
                .waiting
                .drain(..take)
                .partition(|(_, job)| job.deadline <= now);
            for (id, _) in late {
                queue.answers.insert(id, Err(busy()));
            }
            batch
        };
        if batch.is_empty() {
            return;
        }
        turn.taken = batch.iter().map(|(id, _)| *id).collect();
        let deadline = batch
            .iter()
            .map(|(_, job)| job.deadline)
            .min()
            .unwrap_or(earliest);
        let fresh = batch.iter().all(|(_, job)| job.fresh);
        let runs: Vec<Member<'_>> = batch
            .iter()
            .map(|(_, job)| &*job.run as Member<'_>)
            .collect();
        let group = replica.write_group(&mut conn, &runs, deadline, fresh);
        // Under the writer lock, before the writes are acknowledged: retires the memo.
        self.bump();
        drop(conn);
        {
            let mut queue = lock(&self.inner.group);
            for (id, answer) in turn.taken.drain(..).zip(group.answers) {
                queue.answers.insert(id, answer);
            }
        }
        drop(turn);
        if group.snapshot_due && replica.begin_compaction() {
            let db = self.clone();
            std::thread::spawn(move || db.compact());
        }
    }

    /// Runs `f` in a write transaction that is always rolled back: what a write would do,
    /// rehearsed (a dry run). In S3 mode the copy first catches up, so `f` sees every write
    /// acknowledged before the call; nothing is logged, and no version is spent.
    pub fn rehearse<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let deadline = self.deadline();
        let mut conn = self.writer_until(deadline)?;
        if let Some(replica) = &self.inner.replica {
            replica.catch_up(&mut conn)?;
        }
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let out = sqlite::until_deadline(deadline, || f(&tx));
        tx.rollback()?;
        out
    }

    /// Runs `f` on a read connection inside one read transaction. In S3 mode it first applies
    /// any newer log entries, so `f` sees every write acknowledged before the call began.
    pub fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        self.read_checking(true, f)
    }

    /// [`Database::read`], looking for newer log entries only when `check` (a caller that
    /// knows the copy was brought up to date since its request began passes false).
    pub fn read_checking<T>(
        &self,
        check: bool,
        f: impl FnOnce(&Connection) -> Result<T>,
    ) -> Result<T> {
        if let Some(replica) = self.inner.replica.as_ref().filter(|_| check) {
            // Check, apply what was found under the writer, check again, until a check finds
            // nothing: the GETs run without holding the writer, so reads that find the
            // entry of a group this process is committing wait for that group only, not
            // for each other's requests to S3 (they queued behind one another's catch-up
            // GETs before, and with them the next group). Concurrent reads share their
            // checks ([`Replica::current_since`]).
            let began = Instant::now();
            while !replica.current_since(began)? {
                let applied = replica.apply_probed(&mut self.inner.writer.lock());
                self.bump();
                applied?;
            }
        }
        let conn = match lock(&self.inner.readers).pop() {
            Some(c) => c,
            None => sqlite::open(&self.inner.path)?,
        };
        // A read transaction gives the closure one consistent snapshot across its queries.
        conn.execute_batch("BEGIN DEFERRED")?;
        let out = f(&conn);
        let _ = conn.execute_batch("COMMIT");
        let mut pool = lock(&self.inner.readers);
        if pool.len() < MAX_IDLE_READERS {
            pool.push(conn);
        }
        out
    }

    /// Marks a change of the database's content: memo entries made before are retired.
    fn bump(&self) {
        for scope in &self.inner.scopes[1..] {
            if scope.touched.swap(false, Ordering::SeqCst) {
                scope.version.fetch_add(1, Ordering::SeqCst);
            }
        }
        self.scoped(MemoScope::Data)
            .version
            .fetch_add(1, Ordering::SeqCst);
    }

    fn scoped(&self, scope: MemoScope) -> &Scoped {
        &self.inner.scopes[scope.index()]
    }

    /// The version a memo entry made now would be valid for: `Some` in local mode only (see
    /// the module doc). Read it before the read transaction whose answer is remembered.
    pub fn memo_version(&self) -> Option<u64> {
        self.scoped_version(MemoScope::Data)
    }

    /// [`Database::memo_version`] for entries of `scope`.
    pub fn scoped_version(&self, scope: MemoScope) -> Option<u64> {
        let counter = &self.scoped(scope).version;
        self.inner
            .replica
            .is_none()
            .then(|| counter.load(Ordering::SeqCst))
    }

    fn memo_of(&self, scope: MemoScope) -> &Mutex<Memo> {
        &self.scoped(scope).memo
    }

    /// The answer remembered under `key` at the current version, if any (never blocks on I/O:
    /// fit for async code).
    pub fn recall<T: Any + Send + Sync>(&self, key: &str) -> Option<Arc<T>> {
        self.recall_scoped(MemoScope::Data, key)
    }

    /// [`Database::recall`] among the entries of `scope`.
    pub fn recall_scoped<T: Any + Send + Sync>(
        &self,
        scope: MemoScope,
        key: &str,
    ) -> Option<Arc<T>> {
        let version = self.scoped_version(scope)?;
        let memo = lock(self.memo_of(scope));
        if memo.version != version {
            return None;
        }
        memo.entries.get(key)?.clone().downcast::<T>().ok()
    }

    /// Remembers `value` under `key` for `version` (from [`Database::memo_version`], read
    /// before the read that made `value`); ignored when the database has moved on since.
    pub fn remember<T: Any + Send + Sync>(&self, version: u64, key: String, value: Arc<T>) {
        self.remember_scoped(MemoScope::Data, version, key, value)
    }

    /// [`Database::remember`] among the entries of `scope` (`version` from
    /// [`Database::scoped_version`] of the same scope).
    pub fn remember_scoped<T: Any + Send + Sync>(
        &self,
        scope: MemoScope,
        version: u64,
        key: String,
        value: Arc<T>,
    ) {
        let mut memo = lock(self.memo_of(scope));
        if self.scoped_version(scope) != Some(version) {
            return;
        }
        if memo.version != version || memo.entries.len() >= MAX_MEMO_ENTRIES {
            memo.entries.clear();
            memo.version = version;
        }
        memo.entries.insert(key, value);
    }

    /// Makes a snapshot: SQLite writes a copy of the database (`VACUUM INTO`, on the writer
    /// connection under the writer lock, so the copy is exactly one version and no file is
    /// ever copied by path while someone writes it), then the copy is uploaded without
    /// holding any lock. The copy keeps the header, hence the version (`application_id`).
    pub(crate) fn compact(&self) {
        let Some(replica) = &self.inner.replica else {
            return;
        };
        let copy = self.inner.path.with_extension("snapshot");
        let copied = (|| -> Result<u64> {
            let conn = self.inner.writer.lock();
            replica::remove_database_files(&copy)?;
            let target = copy.to_str().ok_or_else(|| {
                Error::Internal(format!("cache path {} is not UTF-8", copy.display()))
            })?;
            conn.execute("VACUUM main INTO ?1", [target])?;
            capture::seq(&conn)
        })();
        let result = match copied {
            Ok(seq) => replica.finish_compaction(&copy, seq).map(|()| seq),
            Err(e) => {
                replica.abandon_compaction();
                Err(e)
            }
        };
        let _ = replica::remove_database_files(&copy);
        match result {
            Ok(seq) => tracing::info!(path = %self.inner.path.display(), seq, "snapshot uploaded"),
            Err(e) => tracing::warn!(error = %e, "snapshot failed; the log still holds everything"),
        }
    }

    /// Writes a consistent copy of the database at its newest version into the new file
    /// `target` (`VACUUM INTO` on the writer connection under the writer lock; in S3 mode
    /// after catching up, so the copy holds every write acknowledged anywhere before the
    /// call). Answers the version copied and its schema version.
    pub fn copy_into(&self, target: &Path) -> Result<(u64, i64)> {
        let mut conn = self.writer_until(self.deadline())?;
        if let Some(replica) = &self.inner.replica {
            replica.catch_up(&mut conn)?;
        }
        let path = target
            .to_str()
            .ok_or_else(|| Error::Internal(format!("path {} is not UTF-8", target.display())))?;
        conn.execute("VACUUM main INTO ?1", [path])?;
        let schema: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        Ok((capture::seq(&conn)?, schema))
    }

    /// Replaces every row with those of the SQLite file `source` (a checkpoint), in one
    /// transaction: readers see the old state or the new one. Local mode: a new local
    /// version. S3 mode: a restore entry naming `reference` (whose object must hold the
    /// same file), written like any write (see [`Replica::write_restore`]). With `key` (an
    /// admin request's `Idempotency-Key`), the key's row joins the restore: inserted by its
    /// transaction, carried by its S3 entry. Answers the new version.
    pub fn replace_with(
        &self,
        source: &Path,
        reference: Option<&RestoreRef>,
        key: Option<&KeyScope>,
    ) -> Result<u64> {
        let deadline = self.deadline();
        let mut conn = self.writer_until(deadline)?;
        // The key's row is stamped by the tenant clock before the restore replaces it.
        let key = key.map(|k| k.row_for(&conn)).transpose()?;
        capture::attach(&conn, source, capture::SOURCE)?;
        let replaced = match (&self.inner.replica, reference, deadline) {
            (Some(replica), Some(reference), Some(deadline)) => {
                replica.write_restore(&mut conn, reference, deadline, key.as_ref())
            }
            (Some(_), _, _) => Err(Error::Internal(
                "a restore in S3 mode needs its bucket object".into(),
            )),
            (None, _, _) => (|| {
                let tx =
                    conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                capture::replace_rows(&tx, capture::SOURCE)?;
                if let Some(row) = &key {
                    super::idempotency::insert_row(&tx, row, true)?;
                }
                let seq = capture::seq(&tx)? + 1;
                capture::set_seq(&tx, seq)?;
                tx.commit()?;
                Ok(seq)
            })(),
        };
        // Under the writer lock, before the restore is acknowledged: retires the memo.
        self.bump();
        capture::detach(&conn, capture::SOURCE);
        replaced
    }

    /// When a write starting now must have answered: S3 mode's write deadline, or the
    /// request's (see `request.rs`) when it comes first; none for a local write outside a
    /// request (seeding, benches).
    fn deadline(&self) -> Option<Instant> {
        let request = super::request::deadline();
        match &self.inner.replica {
            Some(replica) => Some(request.map_or(replica.write_deadline(), |r| {
                r.min(replica.write_deadline())
            })),
            None => request,
        }
    }

    /// The writer connection, waited for until `deadline`, or for as long as it takes
    /// without one.
    fn writer_until(&self, deadline: Option<Instant>) -> Result<WriterGuard<'_>> {
        match deadline {
            None => Ok(self.inner.writer.lock()),
            Some(deadline) => self.inner.writer.lock_until(deadline).ok_or_else(busy),
        }
    }

    /// The S3 replica, in S3 mode.
    pub fn replica(&self) -> Option<&Replica> {
        self.inner.replica.as_ref()
    }

    /// Appends this database's tombstone to its S3 log (no-op without a replica).
    pub fn tombstone(&self) -> Result<()> {
        match &self.inner.replica {
            Some(replica) => replica.write_tombstone(&mut self.inner.writer.lock()),
            None => Ok(()),
        }
    }

    /// Whether this database's tombstone was seen: it must not be served any more.
    pub fn is_deleted(&self) -> bool {
        self.inner.replica.as_ref().is_some_and(Replica::is_deleted)
    }
}

/// Installs the watch triggers on the tables of [`WATCHED_TABLES`] and [`CATALOGUE_COLUMNS`]
/// the database has (a tenant's; the registry has none): each changed row calls
/// [`WATCH_FUNCTION`] with its scope's number, which sets that scope's flag.
fn watch_tables(writer: &Connection, scopes: &[Scoped; 3]) -> Result<()> {
    let flags: Vec<Arc<AtomicBool>> = scopes.iter().map(|s| s.touched.clone()).collect();
    writer.create_scalar_function(
        WATCH_FUNCTION,
        1,
        rusqlite::functions::FunctionFlags::SQLITE_UTF8,
        move |ctx| {
            let scope: usize = ctx.get(0)?;
            if let Some(flag) = flags.get(scope) {
                flag.store(true, Ordering::SeqCst);
            }
            Ok(0)
        },
    )?;
    let watched = WATCHED_TABLES
        .iter()
        .map(|t| (MemoScope::Watched, *t, None))
        .chain(
            CATALOGUE_COLUMNS
                .iter()
                .map(|(t, columns)| (MemoScope::Catalogue, *t, *columns)),
        );
    let tables = sqlite::user_tables(writer)?;
    for (scope, table, columns) in watched {
        if !tables.iter().any(|t| t == table) {
            continue;
        }
        let update = match columns {
            Some(columns) => format!("UPDATE OF {columns}"),
            None => "UPDATE".to_string(),
        };
        for (kind, event) in [
            ("insert", "INSERT"),
            ("update", &update),
            ("delete", "DELETE"),
        ] {
            let n = scope.index();
            writer.execute_batch(&format!(
                "CREATE TEMP TRIGGER IF NOT EXISTS sbx_watch{n}_{kind}_{table}
                 AFTER {event} ON main.{table} BEGIN SELECT {WATCH_FUNCTION}({n}); END;"
            ))?;
        }
    }
    Ok(())
}

/// Most writes one log entry holds (see [`Database::write_grouped`]): bounds the entry,
/// and the time a group's transaction holds the writer.
pub const MAX_GROUP: usize = 32;

/// A write's closure as a group takes it: run on the leader's thread, answering `T`.
pub(crate) type GroupWrite<T> = Box<dyn Fn(&Transaction<'_>) -> Result<T> + Send>;

/// A queued write of a group (see [`Database::write_grouped`]).
struct Job {
    /// The write's closure; it keeps its own result, and answers whether it ran to its end.
    run: GroupWrite<()>,
    /// When the write must have answered.
    deadline: Instant,
    /// Its request already brought the copy up to date.
    fresh: bool,
}

/// The writes of a database waiting for a group, and the answers not yet collected.
#[derive(Default)]
struct Queue {
    waiting: std::collections::VecDeque<(u64, Job)>,
    /// A write is leading a group (it alone takes writes out of `waiting`).
    leading: bool,
    answers: HashMap<u64, Result<()>>,
    next: u64,
}

/// A group's leadership: dropped, it gives leadership back and wakes the waiting writes;
/// members still `taken` (the leader panicked) are answered with an internal error.
struct Turn<'a> {
    db: &'a Database,
    taken: Vec<u64>,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut queue = lock(&self.db.inner.group);
        for id in self.taken.drain(..) {
            queue.answers.insert(
                id,
                Err(Error::Internal(
                    "the write leading this write's group failed".into(),
                )),
            );
        }
        queue.leading = false;
        drop(queue);
        self.db.inner.group_done.notify_all();
    }
}

/// The answer of a write that never ran: the writer stayed busy until its deadline.
fn busy() -> Error {
    Error::Unavailable(
        "the database's writer stayed busy until the write deadline; nothing was applied".into(),
    )
}

mod wal;
mod writer;
use writer::{Writer, WriterGuard};

#[cfg(test)]
mod tests;
