//! S3 replication of one SQLite database (a tenant's, or the registry): S3 is the source of
//! truth, the local file a cache. The full protocol, with the object layout, is in
//! docs/storage.md; this is the contract the code keeps.
//!
//! Objects, under `<SANDBOX_S3_PREFIX>/<root>/` (root is `registry` or `tenants/<id>`):
//! - `log/<seq, 20 digits>.json`: the [`Changeset`](capture::Changeset) of the transaction
//!   that made version `seq` (1, 2, ...). Created only with `If-None-Match: *`, never
//!   overwritten, never deleted by the protocol: the existence of key `n` is what decides who
//!   wrote version `n`.
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
//!    `log/n` succeeded. A write runs its closure on the local copy without asking S3 first:
//!    the PUT of `log/<local+1>` succeeds only if nobody wrote that version, so it is the
//!    freshness check (one request per uncontended write). A loser (412/409) rolls back,
//!    catches up and re-runs its closure on the new state, after a jittered pause, until the
//!    settling third of its deadline (then 503, nothing applied). An answer that is not a
//!    landed PUT (the closure refused, or changed nothing) is given only on a copy shown
//!    current (one GET of `log/<local+1>` answering 404, or a check earlier in the request).
//! 3. A write is acknowledged only once S3 holds its entry. Each entry carries the id of the
//!    attempt that wrote it, so a writer whose PUT answer was lost (an SDK retry meeting 412)
//!    recognizes its own entry instead of taking it for a lost race and applying it twice.
//!    A PUT whose outcome is unknown (timeout, network error, 5xx) may still land later, so
//!    the writer settles its slot before answering: it creates the slot itself with a
//!    no-op "aborted" entry (a fence) of the same attempt. Fence won: nothing was applied
//!    (503 [`Error::Unavailable`]). Fence lost: the entry says ours (success) or another's
//!    (lost race). Unsettled by the deadline: 503 [`Error::OutcomeUnknown`], never "nothing
//!    was applied". Replay applies a fence as an empty change that advances the version.
//! 4. Every write has one total deadline (`S3Config::write_deadline`, or the request's when
//!    it comes first: `store/request.rs`): two thirds for
//!    catch-up, closure and PUT, the rest for settling; every S3 call inside it is bounded by
//!    it (`s3::with_deadline`).
//! 5. Every read and every write first GETs `log/<local+1>` and applies entries until one is
//!    missing (404: up to date, S3 being strongly consistent), so it sees every write
//!    acknowledged before it began; an up-to-date read costs one GET and no LIST.
//!    Log keys are never deleted (a deleted key would read as "up to date" to an environment
//!    behind it, and be a free slot to its conditional PUT: snapshots never prune the log):
//!    erasing a deleted tenant overwrites them with tombstones. The one
//!    exception is a log nobody can be behind on: a fork refused before it was registered
//!    ([`Replica::discard`]).
//! 6. An entry is checked before it is applied: a tombstone (the tenant was deleted) stops
//!    this replica for good (not found); an entry written by a newer schema version than the
//!    local database's answers [`Error::NewerSchema`] (503 naming both versions) until this
//!    build is replaced; an unreadable or inapplicable entry is a 503, never a 500.
//! 7. A restore is a write of the same protocol (conditional PUT, races, fencing, deadline):
//!    its entry names a database file instead of row changes, and replaying it replaces every
//!    row in one transaction. The entry depends on the state it replaces only through the id
//!    sequences it carries, so a lost race costs a catch-up and a PUT; the restoring writer
//!    replaces its rows once, after S3 holds the entry, exactly as a replay would; it catches
//!    up before every try (it is rare, and big).
//!    Restore entries have format 2, which builds that predate them refuse.
//! 8. Snapshots are an optimization for cold starts: made in the background after a write
//!    once `compact_every` entries accumulated since the last one; only older snapshots are
//!    ever deleted, after a newer one is fully uploaded.
//! 9. Group commit: [`Replica::write_group`] runs several writes of this process in one local
//!    transaction, each inside its own savepoint (a refusal rolls back only its member, which
//!    is then not in the entry), and makes their net changes one entry with one PUT; every
//!    member is answered after that PUT is settled, as a single write is, and a lost race
//!    re-runs every member on the caught-up copy. A single write is a group of one.
//! 10. Reads share their freshness checks ([`Replica::current_since`]): a check sent after a
//!     read began that found nothing proves the read current; a read never holds the writer
//!     across a request to S3 (it applies what a check found, then checks again).
//!
//! Where each part lives: this file holds the replica's state, the object layout and the
//! entry formats; `replica/write.rs` the write loop and its fencing, `replica/replay.rs` cold
//! starts and the catch-up, `replica/snapshot.rs` compaction, `replica/erase.rs` tombstones
//! and erasing a deleted database.

mod erase;
mod replay;
mod snapshot;
mod write;

pub use write::{Group, Member};

use super::capture;
use super::idempotency::{self, KeyRow};
use super::s3::{Bucket, S3Error};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// Conditional PUTs a tombstone may lose before the deletion answers 503 (writes retry
/// until their deadline instead).
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
    /// This environment's run of back-to-back writes won at the first try: when it yields
    /// the slot to environments waiting for it (`replica/write.rs`, [`write::Streak`]).
    streak: std::sync::Mutex<write::Streak>,
    /// The freshness checks of this process's reads, shared (see [`Replica::current_since`]).
    checks: std::sync::Mutex<Checks>,
    /// Signalled when a check ends.
    checked: std::sync::Condvar,
}

/// The freshness checks of one replica's reads (see [`Replica::current_since`]).
#[derive(Default)]
struct Checks {
    /// When the newest check that found the copy current was sent: the copy holds every
    /// version acknowledged anywhere before then.
    current_from: Option<Instant>,
    /// When the check in flight, if any, was sent.
    running: Option<Instant>,
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
    /// A keyed restore's idempotency-key row, inserted by the restore's own transaction on
    /// every environment (a restore is not a row change, so its entry carries the row).
    #[serde(default)]
    key: Option<KeyRow>,
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
    key: Option<&KeyRow>,
) -> Vec<u8> {
    let mut body = serde_json::json!({
        "format": RESTORE_FORMAT,
        "attempt": attempt,
        "schema": schema,
        "tables": [],
        "restore": reference,
        "sequences": sequences,
    });
    if let Some(key) = key {
        body["key"] = serde_json::json!(key);
    }
    body.to_string().into_bytes()
}

/// What a restore entry writes after replacing the rows: its key's row, if keyed (never
/// refused: S3 holds the entry, so it must apply on every environment; see
/// [`idempotency::insert_row`]).
fn insert_key(key: Option<&KeyRow>) -> impl FnOnce(&rusqlite::Transaction<'_>) -> Result<()> + '_ {
    move |tx| match key {
        Some(row) => idempotency::insert_row(tx, row, false),
        None => Ok(()),
    }
}

fn seq_name(seq: u64) -> String {
    format!("{seq:020}")
}

fn parse_seq(key: &str) -> Option<u64> {
    let name = key.rsplit('/').next()?;
    name.split('.').next()?.parse().ok()
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
            streak: std::sync::Mutex::new(write::Streak::default()),
            checks: std::sync::Mutex::default(),
            checked: std::sync::Condvar::new(),
        }
    }

    /// When a write starting now must have answered.
    pub fn write_deadline(&self) -> Instant {
        self.bucket.now() + self.bucket.write_deadline()
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
            restore_body(reference, &attempt, schema, &[], None),
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

    /// Whether the local copy holds every version acknowledged anywhere before `began` (a
    /// read's start), asking S3 as little as that allows: a check (one GET of
    /// `log/<local+1>`, [`Replica::has_newer`]) sent after `began` that found nothing proves
    /// it, whichever read sent it, since the copy only moves forward. So a read waits for the
    /// check in flight when that one was sent after it began, and sends one itself otherwise
    /// (after the one in flight, if any): concurrent reads of a process share their checks,
    /// two per burst at most instead of one each. False: a newer entry was found (kept for
    /// [`Replica::apply_probed`]); apply it, then ask again.
    pub fn current_since(&self, began: Instant) -> Result<bool> {
        let mut checks = super::lock(&self.checks);
        loop {
            self.refuse_if_deleted()?;
            if checks.current_from.is_some_and(|t| t > began) {
                return Ok(true);
            }
            match checks.running {
                // Sent after the read began: its answer is this read's too.
                Some(sent) if sent > began => {}
                // Sent before: wait for it to end, then send one.
                Some(_) => {}
                None => {
                    let sent = Instant::now();
                    checks.running = Some(sent);
                    drop(checks);
                    let newer = self.has_newer();
                    checks = super::lock(&self.checks);
                    checks.running = None;
                    if let Ok(false) = newer {
                        checks.current_from = checks.current_from.max(Some(sent));
                    }
                    self.checked.notify_all();
                    return newer.map(|found| !found);
                }
            }
            checks = self
                .checked
                .wait(checks)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
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
