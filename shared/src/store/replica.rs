//! S3 replication of one SQLite database (a tenant's, or the registry): S3 is the source of
//! truth, the local file a cache. The full protocol, with the object layout, is in
//! docs/storage.md; this is the contract the code keeps.
//!
//! Objects, under `<SANDBOX_S3_PREFIX>/<root>/` (root is `registry` or `tenants/<id>`):
//! - `log/<seq, 20 digits>.json`: the [`Changeset`] of the transaction that made version
//!   `seq` (1, 2, ...). Created only with `If-None-Match: *`, never overwritten, never deleted
//!   by the protocol: the existence of key `n` is what decides who wrote version `n`.
//! - `snapshots/<seq, 20 digits>.db`: the whole database file at version `seq` (compaction,
//!   or a copy S3 made of a restored checkpoint). The key names the version; a cold start
//!   writes it into the downloaded file's header.
//! - `restores/<uuid>.db`: the database a restore entry (see [`RestoreRef`]) names; written
//!   before the entry, never changed, deleted only with the tenant. A fork's first entry
//!   names another database's object instead (its source's checkpoint file, with
//!   [`RestoreRef::owner`]), held for the fork by a marker `<object>.refs/<fork root>` beside
//!   it: [`Replica::erase`] never deletes an object that has markers (docs/storage.md,
//!   "Shared checkpoint files"). Forks made by earlier builds name
//!   `snapshots/<1>.base.db`, their own copy, which is never pruned.
//!
//! Invariants:
//! 1. The local database never holds a version S3 does not have: a write's local transaction
//!    stays open while its log entry is PUT and commits only after S3 accepted it. A crash at
//!    any point leaves the local file at an acknowledged version (or before it), and the
//!    cache is thrown away at process start anyway.
//! 2. Version `n` is written by exactly one writer: the one whose conditional PUT of
//!    `log/n` succeeded. A loser (412/409) rolls back, catches up and re-runs its closure on the
//!    new state; after [`MAX_WRITE_ATTEMPTS`] lost races the write fails as unavailable (503).
//! 3. A write is acknowledged only once S3 holds its entry. Each entry carries the id of the
//!    attempt that wrote it, so a writer whose PUT answer was lost (an SDK retry meeting 412)
//!    recognizes its own entry instead of taking it for a lost race and applying it twice.
//!    A PUT whose outcome is unknown (timeout, network error, 5xx) may still land later, so
//!    the writer settles its slot before answering: it creates the slot itself with a
//!    no-op "aborted" entry (a fence) of the same attempt. Fence won: nothing was applied
//!    (503 [`Error::Unavailable`]). Fence lost: the entry says ours (success) or another's
//!    (lost race). Unsettled by the deadline: 503 [`Error::OutcomeUnknown`], never "nothing
//!    was applied". Replay applies a fence as an empty change that advances the version.
//! 4. Every write has one total deadline (`S3Config::write_deadline`): two thirds for
//!    catch-up, closure and PUT, the rest for settling; every S3 call inside it is bounded by
//!    it (`s3::with_deadline`).
//! 5. Every read and every write first GETs `log/<local+1>` and applies entries until one is
//!    missing (404: up to date, S3 being strongly consistent), so it sees every write
//!    acknowledged before it began; an up-to-date read costs one GET and no LIST.
//!    Log keys are never deleted (a deleted key would read as "up to date" to an environment
//!    behind it): erasing a deleted tenant overwrites them with tombstones.
//! 6. An entry is checked before it is applied: a tombstone (the tenant was deleted) stops
//!    this replica for good (not found); an entry written by a newer schema version than the
//!    local database's answers [`Error::NewerSchema`] (503 naming both versions) until this
//!    build is replaced; an unreadable or inapplicable entry is a 503, never a 500.
//! 7. A restore is a write like any other (same loop, races, fencing, deadline): its entry
//!    names a database file instead of row changes, and replaying it replaces every row in
//!    one transaction. Restore entries have format 2, which builds that predate them refuse.
//! 8. Snapshots are an optimization for cold starts: made in the background after a write
//!    once `compact_every` entries accumulated since the last one; only older snapshots are
//!    ever deleted, after a newer one is fully uploaded.

use super::capture::{self, Changeset};
use super::s3::{self, Bucket, S3Error};
use crate::{Error, Result};
use rusqlite::{Connection, Transaction};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Conditional PUTs a write may lose before it answers 503.
pub const MAX_WRITE_ATTEMPTS: u32 = 12;

/// One replicated database's place in the bucket and what this process knows of it.
pub struct Replica {
    bucket: Bucket,
    root: String,
    compact_every: u64,
    /// Newest version applied to the local file.
    seq: AtomicU64,
    /// Newest snapshot known to exist.
    snapshot_seq: AtomicU64,
    compacting: AtomicBool,
    /// The tombstone was seen (or written here): nothing is served or appended any more.
    deleted: AtomicBool,
    /// The entry the last freshness check found (`seq`, body), so that the catch-up that
    /// follows does not GET it a second time. Log entries are immutable once written.
    probed: std::sync::Mutex<Option<(u64, Vec<u8>)>>,
}

/// What a log entry says about itself before it is applied. Every field has a default, so
/// that entries of any age parse.
#[derive(Deserialize)]
struct EntryHead {
    /// A tenant deletion marker instead of a change.
    #[serde(default)]
    tombstone: bool,
    /// Schema version (`PRAGMA user_version`) of the database that wrote the entry.
    #[serde(default)]
    schema: i64,
    /// A restore entry: the rows of this object replace the database's (see [`RestoreRef`]).
    #[serde(default)]
    restore: Option<RestoreRef>,
    /// A restore entry's id sequences after the restore (table, highest id ever used): the
    /// object's own are older and lower, and ids are never reused.
    #[serde(default)]
    sequences: Vec<(String, i64)>,
}

/// What a restore entry points at: a database file in the bucket, written once before the
/// entry and never changed or deleted while the database lives (the log must stay
/// replayable from its first entry). Usually under this database's root; a fork's first
/// entry names its source's checkpoint file, under the source's root (`owner`), held for
/// the fork by a marker (see [`holder_key`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreRef {
    /// Key of the database file, relative to its owner's root (`restores/<uuid>.db`,
    /// `checkpoints/files/<uuid>.db`).
    pub object: String,
    /// The checkpoint it is a copy of: its name under the owner's root.
    pub checkpoint: String,
    /// The version of the checkpointed database (in its own log).
    pub version: u64,
    /// Root of the database that owns `object` (`tenants/<source id>`), when it is not this
    /// one (a fork). Absent in every other entry, and in forks made by earlier builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// How a fork base of an earlier build is named in `snapshots/`: `<seq 1>.base.db`. It
/// parses as snapshot 1 for cold starts and is never pruned (restore entry 1 of that fork
/// names it). Forks are no longer made this way (they name their source's checkpoint
/// file), but buckets written before keep them.
const FORK_BASE_SUFFIX: &str = ".base.db";

/// What marks a shared object as held: keys `<object>.refs/<holder root>`.
const HOLDERS: &str = ".refs/";

/// The key of the marker by which database `holder_root` holds `object` (relative to the
/// prefix): `<object>.refs/<holder root>`. While a marker exists, nothing deletes the
/// object.
pub fn holder_key(object: &str, holder_root: &str) -> String {
    format!("{object}{HOLDERS}{holder_root}")
}

/// The prefix of every holder marker of `object`.
pub fn holders_prefix(object: &str) -> String {
    format!("{object}{HOLDERS}")
}

/// Format of restore entries: 2, so that a build that predates them refuses the entry (503,
/// "unreadable") instead of replaying it as an empty change and serving stale rows.
const RESTORE_FORMAT: u32 = 2;

/// The body of a restore entry: no row changes, the reference, the attempt id, and the id
/// sequences after the restore (none for a fork: its ids are the checkpoint's).
fn restore_body(
    reference: &RestoreRef,
    attempt: &str,
    schema: i64,
    sequences: &[(String, i64)],
) -> Vec<u8> {
    serde_json::json!({
        "format": RESTORE_FORMAT,
        "attempt": attempt,
        "schema": schema,
        "tables": [],
        "restore": reference,
        "sequences": sequences,
    })
    .to_string()
    .into_bytes()
}

/// What a write appends: the captured changes of its transaction, or a restore entry.
enum Entry<'a> {
    Changes,
    Restore(&'a RestoreRef),
}

/// The body of a tombstone entry: an empty change set (so that a build that does not know
/// tombstones replays it as nothing) marked `"tombstone": true`.
fn tombstone_body() -> Vec<u8> {
    serde_json::json!({
        "format": 1,
        "attempt": format!("tombstone-{}", uuid::Uuid::new_v4()),
        "schema": 0,
        "tables": [],
        "tombstone": true,
    })
    .to_string()
    .into_bytes()
}

fn seq_name(seq: u64) -> String {
    format!("{seq:020}")
}

fn parse_seq(key: &str) -> Option<u64> {
    let name = key.rsplit('/').next()?;
    name.split('.').next()?.parse().ok()
}

/// Test hook: `SANDBOX_S3_CRASH_AT=before-put|after-put` aborts the process at that step of
/// a write, to show what a crash there leaves behind.
fn crash_point(stage: &str) {
    if std::env::var("SANDBOX_S3_CRASH_AT").as_deref() == Ok(stage) {
        tracing::error!(stage, "SANDBOX_S3_CRASH_AT: aborting the process");
        std::process::abort();
    }
}

impl Replica {
    /// The replica of the database stored under `root` (e.g. `tenants/t_1`).
    pub fn new(bucket: Bucket, root: &str, compact_every: u64) -> Replica {
        Replica {
            bucket,
            root: root.trim_matches('/').to_string(),
            compact_every: compact_every.max(1),
            seq: AtomicU64::new(0),
            snapshot_seq: AtomicU64::new(0),
            compacting: AtomicBool::new(false),
            deleted: AtomicBool::new(false),
            probed: std::sync::Mutex::new(None),
        }
    }

    /// When a write starting now must have answered.
    pub fn write_deadline(&self) -> Instant {
        Instant::now() + self.bucket.write_deadline()
    }

    fn log_dir(&self) -> String {
        format!("{}/log/", self.root)
    }

    fn log_key(&self, seq: u64) -> String {
        format!("{}/log/{}.json", self.root, seq_name(seq))
    }

    fn snapshot_dir(&self) -> String {
        format!("{}/snapshots/", self.root)
    }

    fn snapshot_key(&self, seq: u64) -> String {
        format!("{}/snapshots/{}.db", self.root, seq_name(seq))
    }

    /// Cold start: replaces the local files at `path` with the newest snapshot, or with
    /// nothing when there is none (the log then rebuilds everything).
    pub fn restore(&self, path: &Path) -> Result<()> {
        remove_database_files(path)?;
        // A compaction elsewhere may delete the snapshot between our LIST and our GET (it
        // only does so once a newer one is up): list again and take the newer one.
        for _ in 0..3 {
            let snapshots =
                self.bucket
                    .list_after(&self.snapshot_dir(), &self.snapshot_dir(), usize::MAX)?;
            let Some((key, seq)) = snapshots
                .iter()
                .filter_map(|k| parse_seq(k).map(|s| (k, s)))
                .max_by_key(|(_, s)| *s)
            else {
                return self.restore_first_entry(path);
            };
            let tmp = path.with_extension("download");
            match self.bucket.get_to_file(key, &tmp) {
                Ok(()) => {}
                Err(S3Error::NotFound) => continue,
                Err(e) => return Err(e.into()),
            }
            std::fs::rename(&tmp, path)?;
            if stamp_version(path, seq)? {
                self.settle_copied_snapshot(path, seq)?;
            }
            self.snapshot_seq.store(seq, Ordering::SeqCst);
            tracing::info!(root = %self.root, seq, "restored snapshot");
            return Ok(());
        }
        Err(Error::Unavailable(format!(
            "{}: snapshots kept disappearing during a cold start",
            self.root
        )))
    }

    /// A snapshot S3 copied from a checkpoint after restore entry `seq` holds the
    /// checkpoint's id sequences, older than the restore's: raise them to the entry's (one
    /// GET), so that this environment never hands out an id a client saw before the restore.
    fn settle_copied_snapshot(&self, path: &Path, seq: u64) -> Result<()> {
        let body = match self.bucket.get(&self.log_key(seq)) {
            Ok(body) => body,
            Err(S3Error::NotFound) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let sequences = serde_json::from_slice::<EntryHead>(&body)
            .map(|head| head.sequences)
            .unwrap_or_default();
        if !sequences.is_empty() {
            let conn = Connection::open(path)?;
            capture::raise_sequences(&conn, &sequences)?;
        }
        Ok(())
    }

    /// Cold start without a snapshot: when entry 1 is a restore (a fork's first entry), the
    /// file it names is the database at version 1 and becomes the local file, as a snapshot
    /// would (one download, no replay). Any other entry 1 is kept for the catch-up that
    /// follows, so it is not fetched twice.
    fn restore_first_entry(&self, path: &Path) -> Result<()> {
        let body = match self.bucket.get(&self.log_key(1)) {
            Ok(body) => body,
            Err(S3Error::NotFound) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let head = serde_json::from_slice::<EntryHead>(&body)
            .ok()
            .filter(|head| !head.tombstone);
        let Some((reference, sequences)) = head.and_then(|h| Some((h.restore?, h.sequences)))
        else {
            *super::lock(&self.probed) = Some((1, body));
            return Ok(());
        };
        let tmp = path.with_extension("download");
        self.bucket
            .get_to_file(&self.reference_key(&reference), &tmp)
            .map_err(|e| self.missing_restore(e, 1, &reference))?;
        std::fs::rename(&tmp, path)?;
        stamp_version(path, 1)?;
        // A restore made as a tenant's first write (a fork's entry carries none).
        if !sequences.is_empty() {
            capture::raise_sequences(&Connection::open(path)?, &sequences)?;
        }
        tracing::info!(root = %self.root, checkpoint = %reference.checkpoint, "cold start from the file entry 1 names");
        Ok(())
    }

    /// The bucket key (relative to the prefix) of the file a restore entry names.
    pub fn reference_key(&self, reference: &RestoreRef) -> String {
        match &reference.owner {
            Some(owner) => format!("{owner}/{}", reference.object),
            None => self.object_key(&reference.object),
        }
    }

    /// The error of a restore entry `n` whose file could not be fetched.
    fn missing_restore(&self, e: S3Error, n: u64, reference: &RestoreRef) -> Error {
        match e {
            S3Error::NotFound => Error::Unavailable(format!(
                "{}: log entry {n} restores {}, which is missing",
                self.root,
                self.reference_key(reference)
            )),
            e => e.into(),
        }
    }

    /// Applies every log entry newer than the local version, in order: GET `log/<n+1>` until
    /// one is missing. Up to date, that is one GET.
    pub fn catch_up(&self, conn: &mut Connection) -> Result<()> {
        self.refuse_if_deleted()?;
        let mut seq = capture::seq(conn)?;
        let mut probed = super::lock(&self.probed).take();
        loop {
            let next = seq + 1;
            let body = match probed.take() {
                Some((n, body)) if n == next => body,
                _ => match self.bucket.get(&self.log_key(next)) {
                    Ok(body) => body,
                    Err(S3Error::NotFound) => break,
                    Err(e) => return Err(e.into()),
                },
            };
            self.apply_entry(conn, next, &body)?;
            seq = next;
            self.seq.store(seq, Ordering::SeqCst);
        }
        self.seq.store(seq, Ordering::SeqCst);
        Ok(())
    }

    /// Checks log entry `n` (tombstone, schema version, readability) and applies it.
    fn apply_entry(&self, conn: &mut Connection, n: u64, body: &[u8]) -> Result<()> {
        let unreadable = |e: &dyn std::fmt::Display| {
            Error::Unavailable(format!("{}: log entry {n} is unreadable: {e}", self.root))
        };
        let head: EntryHead = serde_json::from_slice(body).map_err(|e| unreadable(&e))?;
        if head.tombstone {
            self.deleted.store(true, Ordering::SeqCst);
            return Err(self.deleted_error());
        }
        if let Some(reference) = head.restore {
            return self.apply_restore(conn, n, &reference, &head.sequences);
        }
        let mine: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if head.schema > mine {
            return Err(Error::NewerSchema(format!(
                "This data was written by a newer deployment with schema version {theirs} \
                 (entry {n} of {root}); this function runs schema version {mine} and serves it \
                 again once it is deployed at schema version {theirs} or later. Retry later.",
                theirs = head.schema,
                root = self.root,
            )));
        }
        let changes: Changeset = serde_json::from_slice(body).map_err(|e| unreadable(&e))?;
        capture::apply(conn, &changes, n).map_err(|e| match e {
            Error::Internal(m) => unreadable(&m),
            other => other,
        })
    }

    /// Replays restore entry `n`: downloads the database file it names beside the local
    /// file and replaces every row with its rows, in one transaction that records `n`.
    fn apply_restore(
        &self,
        conn: &mut Connection,
        n: u64,
        reference: &RestoreRef,
        sequences: &[(String, i64)],
    ) -> Result<()> {
        let local = conn
            .path()
            .map(std::path::PathBuf::from)
            .ok_or_else(|| Error::Internal(format!("{}: the cache has no file", self.root)))?;
        let tmp = local.with_extension(format!("restore-{}", uuid::Uuid::new_v4()));
        let applied = self
            .bucket
            .get_to_file(&self.reference_key(reference), &tmp)
            .map_err(|e| self.missing_restore(e, n, reference))
            .and_then(|()| capture::apply_file(conn, &tmp, n, sequences));
        let _ = remove_database_files(&tmp);
        tracing::info!(root = %self.root, seq = n, checkpoint = %reference.checkpoint, "replayed a restore");
        applied
    }

    /// The bucket key (relative to the prefix) of `relative`, an object under this root.
    pub fn object_key(&self, relative: &str) -> String {
        format!("{}/{relative}", self.root)
    }

    /// The bucket this database lives in.
    pub fn bucket(&self) -> &Bucket {
        &self.bucket
    }

    /// The newest snapshot this process knows of (0: none).
    pub fn snapshot_seq(&self) -> u64 {
        self.snapshot_seq.load(Ordering::SeqCst)
    }

    /// The key of snapshot `seq`, relative to the prefix.
    pub fn snapshot_object(&self, seq: u64) -> String {
        self.snapshot_key(seq)
    }

    /// Starts a new database's log (a fork): entry 1 is a restore entry naming `reference`
    /// (a checkpoint file of another database, which the caller holds for this one with a
    /// marker, see [`holder_key`]). No byte of the database is copied: cold starts load the
    /// file entry 1 names. A slot already taken is a conflict.
    pub fn start_fork(&self, reference: &RestoreRef, schema: i64) -> Result<()> {
        let attempt = uuid::Uuid::new_v4().to_string();
        match self.bucket.put_if_absent(
            &self.log_key(1),
            restore_body(reference, &attempt, schema, &[]),
        ) {
            Ok(()) => Ok(()),
            Err(S3Error::Exists) => {
                Err(Error::conflict(format!("{} already has a log", self.root)))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The root of this database in the bucket (`tenants/<id>`).
    pub fn root(&self) -> &str {
        &self.root
    }

    /// The file another database owns that this one's log names (a fork's entry 1), if any:
    /// one GET of `log/1`. A tombstone there (an erased database) names nothing.
    pub fn shared_reference(&self) -> Result<Option<RestoreRef>> {
        let body = match self.bucket.get(&self.log_key(1)) {
            Ok(body) => body,
            Err(S3Error::NotFound) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        Ok(serde_json::from_slice::<EntryHead>(&body)
            .ok()
            .and_then(|head| head.restore)
            .filter(|r| r.owner.is_some()))
    }

    /// Whether S3 holds a version newer than the local one (one GET of `log/<local+1>`).
    pub fn has_newer(&self) -> Result<bool> {
        self.refuse_if_deleted()?;
        let next = self.seq.load(Ordering::SeqCst) + 1;
        match self.bucket.get(&self.log_key(next)) {
            Ok(body) => {
                *super::lock(&self.probed) = Some((next, body));
                Ok(true)
            }
            Err(S3Error::NotFound) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether this database's tombstone was seen.
    pub fn is_deleted(&self) -> bool {
        self.deleted.load(Ordering::SeqCst)
    }

    fn deleted_error(&self) -> Error {
        Error::NotFound(format!("{} has been deleted", self.root))
    }

    fn refuse_if_deleted(&self) -> Result<()> {
        if self.is_deleted() {
            return Err(self.deleted_error());
        }
        Ok(())
    }

    /// Appends the tombstone after the newest entry (a conditional PUT like any write; after
    /// a lost race it catches up and tries the next slot). A tombstone already there (a retried
    /// deletion) is success. From then on no environment serves or extends this log.
    pub fn write_tombstone(&self, conn: &mut Connection) -> Result<()> {
        for attempt in 0..MAX_WRITE_ATTEMPTS {
            if let Err(e) = self.catch_up(conn) {
                return if self.is_deleted() { Ok(()) } else { Err(e) };
            }
            let next = capture::seq(conn)? + 1;
            match self
                .bucket
                .put_if_absent(&self.log_key(next), tombstone_body())
            {
                Ok(()) => {
                    self.deleted.store(true, Ordering::SeqCst);
                    tracing::info!(root = %self.root, seq = next, "tombstone written");
                    return Ok(());
                }
                Err(S3Error::Exists) => std::thread::sleep(backoff(attempt)),
                Err(e) => return Err(e.into()),
            }
        }
        Err(Error::Unavailable(format!(
            "{}: lost {MAX_WRITE_ATTEMPTS} races while writing a tombstone",
            self.root
        )))
    }

    /// Runs `f` in a transaction and makes it the next version in S3, re-running it after a
    /// lost race (see the module invariants), all before `deadline`. Answers `f`'s result and
    /// whether a snapshot is due. Errors: [`Error::Unavailable`] when nothing was applied
    /// (every slot this call tried to write is settled: taken by another writer or fenced),
    /// [`Error::OutcomeUnknown`] when S3 could not be made to say (the one honest "maybe").
    pub fn write<T>(
        &self,
        conn: &mut Connection,
        f: &dyn Fn(&Transaction<'_>) -> Result<T>,
        deadline: Instant,
        catch_up_first: bool,
    ) -> Result<(T, bool)> {
        self.write_entry(conn, f, &Entry::Changes, deadline, catch_up_first)
            .map(|(out, due, _)| (out, due))
    }

    /// Makes the rows of the database file attached as [`capture::SOURCE`] (a copy of the
    /// bucket object `reference.object`) the next version of this database: an ordinary
    /// conditional write of a restore entry (see docs/storage.md, "Checkpoints"), with the
    /// same races, fencing and deadline as any write. Answers the new version.
    pub fn write_restore(
        &self,
        conn: &mut Connection,
        reference: &RestoreRef,
        deadline: Instant,
    ) -> Result<u64> {
        let replace = |tx: &Transaction<'_>| capture::replace_rows(tx, capture::SOURCE);
        let ((), _, seq) =
            self.write_entry(conn, &replace, &Entry::Restore(reference), deadline, true)?;
        // A snapshot at the new version, copied by S3 itself: cold starts skip the replay
        // (and its download). Only a shortcut: on failure the log still has everything.
        let snapshotted = self
            .bucket
            .copy(&self.object_key(&reference.object), &self.snapshot_key(seq))
            .map_err(Error::from)
            .and_then(|()| self.prune_snapshots(seq));
        if let Err(e) = snapshotted {
            tracing::warn!(root = %self.root, seq, error = %e, "no snapshot after a restore; the log still holds it");
        }
        Ok(seq)
    }

    /// The write loop shared by ordinary writes ([`Entry::Changes`]) and restores.
    fn write_entry<T>(
        &self,
        conn: &mut Connection,
        f: &dyn Fn(&Transaction<'_>) -> Result<T>,
        entry: &Entry<'_>,
        deadline: Instant,
        catch_up_first: bool,
    ) -> Result<(T, bool, u64)> {
        // Work (catch-up, closure, PUT) must end early enough to leave a third of the time to
        // settle a PUT whose outcome is unknown.
        let now = Instant::now();
        let settle_from = deadline - deadline.saturating_duration_since(now) / 3;
        for attempt in 0..MAX_WRITE_ATTEMPTS {
            if Instant::now() >= settle_from {
                return Err(Error::Unavailable(format!(
                    "{}: write deadline passed; nothing was applied",
                    self.root
                )));
            }
            // A copy just brought up to date may skip the first catch-up: the conditional PUT
            // still refuses a slot someone else took, and the next attempt catches up.
            if attempt > 0 || catch_up_first {
                s3::with_deadline(settle_from, || self.catch_up(conn))?;
            }
            let seq = capture::seq(conn)?;
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            capture::clear(&tx)?;
            let out = f(&tx)?;
            let (body, attempt_id, schema) = match entry {
                Entry::Changes => {
                    let changes = capture::collect(&tx)?;
                    if changes.is_empty() {
                        tx.commit()?;
                        return Ok((out, false, seq));
                    }
                    (
                        serde_json::to_vec(&changes)?,
                        changes.attempt,
                        changes.schema,
                    )
                }
                Entry::Restore(reference) => {
                    let attempt_id = uuid::Uuid::new_v4().to_string();
                    let schema: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
                    let sequences = capture::sequences(&tx, "main")?;
                    (
                        restore_body(reference, &attempt_id, schema, &sequences),
                        attempt_id,
                        schema,
                    )
                }
            };
            let next = seq + 1;
            crash_point("before-put");
            let key = self.log_key(next);
            let put = s3::with_deadline(settle_from, || self.bucket.put_if_absent(&key, body));
            let slot = match put {
                Ok(()) => Slot::Ours,
                // Taken: by us (the SDK retried a PUT whose answer was lost and met our own
                // entry) or by another writer. Only the attempt id tells.
                Err(S3Error::Exists) => {
                    s3::with_deadline(deadline, || self.owner_until_known(&key, &attempt_id))
                }
                // Timeout, network error, 5xx: the PUT may still land later (a request held
                // somewhere on the way). Settle the slot before answering.
                Err(e) => {
                    tracing::warn!(root = %self.root, seq = next, error = %e, "log PUT outcome unknown; fencing the slot");
                    s3::with_deadline(deadline, || self.fence(&key, &attempt_id, schema))
                }
            };
            match slot {
                Slot::Ours => {
                    crash_point("after-put");
                    self.commit_local(tx, next);
                    let due = next.saturating_sub(self.snapshot_seq.load(Ordering::SeqCst))
                        >= self.compact_every;
                    return Ok((out, due, next));
                }
                Slot::Theirs => {
                    drop(tx);
                    tracing::debug!(root = %self.root, seq = next, attempt, "lost the race; catching up");
                    let pause =
                        backoff(attempt).min(settle_from.saturating_duration_since(Instant::now()));
                    std::thread::sleep(pause);
                }
                Slot::Fenced => {
                    drop(tx);
                    return Err(Error::Unavailable(format!(
                        "{}: S3 did not confirm log entry {next} in time; the slot was fenced, nothing was applied",
                        self.root
                    )));
                }
                Slot::Unknown(why) => {
                    drop(tx);
                    return Err(Error::OutcomeUnknown(format!(
                        "{}: log entry {next} could not be settled before the write deadline ({why}); the write may or may not have been applied",
                        self.root
                    )));
                }
            }
        }
        Err(Error::Unavailable(format!(
            "{}: lost {MAX_WRITE_ATTEMPTS} races to concurrent writers",
            self.root
        )))
    }

    /// Who holds the existing log entry at `key`, asked until S3 answers or the thread's
    /// deadline passes.
    fn owner_until_known(&self, key: &str, attempt: &str) -> Slot {
        let mut last = String::new();
        for round in 0u32.. {
            match self.bucket.get(key) {
                Ok(body) => return owner(&body, attempt),
                // Entries are never deleted by the protocol; a missing one means a tenant
                // deletion is under way. It is not ours to claim either way.
                Err(S3Error::NotFound) => {
                    return Slot::Unknown(format!("{key} disappeared after a 412"))
                }
                Err(e) if is_final(&e) => {
                    last = e.to_string();
                    break;
                }
                Err(e) => last = e.to_string(),
            }
            std::thread::sleep(settle_pause(round));
        }
        Slot::Unknown(last)
    }

    /// Settles slot `key` after a PUT of write attempt `attempt` ended without an answer:
    /// creates the slot with a no-op "aborted" entry of the same attempt, so that the lost
    /// PUT can never land afterwards. Retried until S3 answers or the thread's deadline
    /// passes. A fence that wins means nothing was applied; one that loses meets the entry
    /// that won, ours (the PUT did land) or another writer's.
    fn fence(&self, key: &str, attempt: &str, schema: i64) -> Slot {
        let body = match serde_json::to_vec(&Changeset::fence(attempt, schema)) {
            Ok(b) => b,
            Err(e) => return Slot::Unknown(e.to_string()),
        };
        let mut last = String::new();
        for round in 0u32.. {
            match self.bucket.put_if_absent(key, body.clone()) {
                Ok(()) => return Slot::Fenced,
                Err(S3Error::Exists) => match self.bucket.get(key) {
                    Ok(found) => return owner(&found, attempt),
                    Err(e) if is_final(&e) => {
                        last = e.to_string();
                        break;
                    }
                    Err(e) => last = e.to_string(),
                },
                Err(e) if is_final(&e) => {
                    last = e.to_string();
                    break;
                }
                Err(e) => last = e.to_string(),
            }
            std::thread::sleep(settle_pause(round));
        }
        Slot::Unknown(if last.is_empty() {
            "S3 did not answer".into()
        } else {
            last
        })
    }

    /// Commits a transaction whose log entry S3 already holds. The write is durable either
    /// way; if the local commit fails, the cache stays at the old version and the next catch-up
    /// brings the entry in from S3.
    fn commit_local(&self, tx: Transaction<'_>, seq: u64) {
        let committed = capture::clear(&tx)
            .and_then(|()| capture::set_seq(&tx, seq))
            .and_then(|()| tx.commit().map_err(Error::from));
        match committed {
            Ok(()) => self.seq.store(seq, Ordering::SeqCst),
            Err(e) => {
                tracing::warn!(root = %self.root, seq, error = %e, "local commit failed after S3 accepted the entry; will catch up")
            }
        }
    }

    /// Claims the right to compact; false when a compaction is already running.
    pub fn begin_compaction(&self) -> bool {
        !self.compacting.swap(true, Ordering::SeqCst)
    }

    /// Uploads `file` (the database at version `seq`) as a snapshot, deletes older
    /// snapshots, and releases the compaction claim.
    pub fn finish_compaction(&self, file: &Path, seq: u64) -> Result<()> {
        let result = (|| {
            self.bucket.put_file(&self.snapshot_key(seq), file)?;
            self.prune_snapshots(seq)
        })();
        self.compacting.store(false, Ordering::SeqCst);
        result
    }

    /// Records that snapshot `seq` is fully in the bucket and deletes the older ones.
    pub fn prune_snapshots(&self, seq: u64) -> Result<()> {
        self.snapshot_seq.fetch_max(seq, Ordering::SeqCst);
        let older =
            self.bucket
                .list_after(&self.snapshot_dir(), &self.snapshot_dir(), usize::MAX)?;
        for key in older {
            // A fork base is also what restore entry 1 names: kept for the log's sake.
            if parse_seq(&key).is_some_and(|s| s < seq) && !key.ends_with(FORK_BASE_SUFFIX) {
                self.bucket.delete(&key)?;
            }
        }
        Ok(())
    }

    /// Releases the compaction claim without compacting.
    pub fn abandon_compaction(&self) {
        self.compacting.store(false, Ordering::SeqCst);
    }

    /// Erases a tombstoned database's objects: everything under its root is deleted
    /// (snapshots, exports such as `analytics/...`) except the log keys, which are overwritten
    /// by tombstones (an environment still behind would take a missing `log/<n>` for "up to
    /// date" and serve, or append to, the deleted tenant), and except objects another
    /// database holds (a checkpoint file forks name) with their holder markers: the last
    /// holder deletes them when it lets go. `scratch` is a directory for the tombstone file
    /// being uploaded.
    pub fn erase(&self, scratch: &Path) -> Result<()> {
        let prefix = format!("{}/", self.root);
        let log_dir = self.log_dir();
        let file = scratch.join(format!("tombstone-{}", uuid::Uuid::new_v4()));
        std::fs::write(&file, tombstone_body())?;
        let result = (|| -> Result<()> {
            let keys = self.bucket.list_after(&prefix, &prefix, usize::MAX)?;
            let held: std::collections::HashSet<&str> = keys
                .iter()
                .filter_map(|k| k.split_once(HOLDERS).map(|(object, _)| object))
                .collect();
            for key in &keys {
                if key.contains(HOLDERS) || held.contains(key.as_str()) {
                    continue;
                }
                if key.starts_with(&log_dir) {
                    self.bucket.put_file(key, &file)?;
                } else {
                    self.bucket.delete(key)?;
                }
            }
            Ok(())
        })();
        let _ = std::fs::remove_file(&file);
        result
    }
}

/// Who holds a log slot, as far as one write attempt is concerned.
#[derive(Debug, PartialEq, Eq)]
enum Slot {
    /// Our change is the entry: the write is applied.
    Ours,
    /// Another writer's entry (a change or its fence): ours can no longer land there.
    Theirs,
    /// Our own fence: our change can no longer land; nothing was applied.
    Fenced,
    /// S3 did not tell before the deadline.
    Unknown(String),
}

/// Who wrote the entry `body`, seen from write attempt `attempt`.
fn owner(body: &[u8], attempt: &str) -> Slot {
    match serde_json::from_slice::<Changeset>(body) {
        Ok(c) if c.attempt == attempt && c.aborted => Slot::Fenced,
        Ok(c) if c.attempt == attempt => Slot::Ours,
        // Unreadable (a newer format) or another attempt's: not ours.
        _ => Slot::Theirs,
    }
}

/// Whether trying again cannot help: the thread's deadline passed, or S3 refuses us for good
/// (403 and the like: the next try would be refused too).
fn is_final(e: &S3Error) -> bool {
    matches!(e, S3Error::DeadlinePassed | S3Error::Refused(_))
}

/// Short jittered pause between tries to settle a slot.
fn settle_pause(round: u32) -> Duration {
    use rand::Rng;
    let base = 20 * u64::from(round.min(10) + 1);
    Duration::from_millis(rand::thread_rng().gen_range(base..=base * 2))
}

/// Jittered, growing pause after a lost race, so that racing writers spread out.
fn backoff(attempt: u32) -> Duration {
    use rand::Rng;
    let base = 5 * u64::from(attempt + 1);
    Duration::from_millis(rand::thread_rng().gen_range(base..=base * 3))
}

/// Makes the header of the snapshot file at `path` say version `seq`, the version its key
/// names. A snapshot made here by `VACUUM INTO` says so already; one copied by S3 from a
/// checkpoint (after a restore or a fork) still carries the checkpointed database's version.
/// Answers whether it had to (the file is such a copy).
fn stamp_version(path: &Path, seq: u64) -> Result<bool> {
    let conn = Connection::open(path)?;
    let copied = capture::seq(&conn)? != seq;
    if copied {
        capture::set_seq(&conn, seq)?;
    }
    Ok(copied)
}

/// Removes a database file and its WAL and shared-memory files.
pub fn remove_database_files(path: &Path) -> Result<()> {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.to_path_buf().into_os_string();
        p.push(suffix);
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_names_sort_like_numbers() {
        assert!(seq_name(9) < seq_name(10));
        assert_eq!(
            parse_seq("p/tenants/t/log/00000000000000000042.json"),
            Some(42)
        );
        assert_eq!(
            parse_seq("registry/snapshots/00000000000000000007.db"),
            Some(7)
        );
    }
}
