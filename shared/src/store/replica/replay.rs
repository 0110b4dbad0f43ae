//! Replaying a replica's log into the local file: a cold start (the newest snapshot, or the
//! file a fork's first entry names), and the catch-up every read and write begins with (GET
//! `log/<local+1>` until one is missing), each entry checked before it is applied
//! (invariants 5 and 6 of the parent module: a tombstone stops the replica, a newer schema
//! answers 503, an unreadable entry is a 503) and a restore entry replayed by replacing every
//! row.

use super::snapshot::stamp_version;
use super::{
    capture, insert_key, parse_seq, remove_database_files, EntryHead, KeyRow, Replica, RestoreRef,
};
use crate::store::s3::S3Error;
use crate::{Error, Result};
use capture::Changeset;
use rusqlite::Connection;
use std::path::Path;
use std::sync::atomic::Ordering;

/// Adds to the database file at `path`, the image a restore entry names (copied as a
/// snapshot, or a fork's first entry), what the entry's replay adds on top of the image:
/// id sequences raised to the entry's, and a keyed restore's key row.
fn add_to_image(path: &Path, sequences: &[(String, i64)], key: Option<&KeyRow>) -> Result<()> {
    if sequences.is_empty() && key.is_none() {
        return Ok(());
    }
    let mut conn = Connection::open(path)?;
    let tx = conn.transaction()?;
    capture::raise_sequences(&tx, sequences)?;
    insert_key(key)(&tx)?;
    tx.commit()?;
    Ok(())
}

impl Replica {
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
        let (sequences, key) = serde_json::from_slice::<EntryHead>(&body)
            .map(|head| (head.sequences, head.key))
            .unwrap_or_default();
        // The copy is the checkpoint's image: what the entry adds to it is added here.
        add_to_image(path, &sequences, key.as_ref())
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
        let Some((reference, sequences, key)) =
            head.and_then(|h| Some((h.restore?, h.sequences, h.key)))
        else {
            *crate::store::lock(&self.probed) = Some((1, body));
            return Ok(());
        };
        let tmp = path.with_extension("download");
        self.bucket
            .get_to_file(&self.reference_key(&reference), &tmp)
            .map_err(|e| self.missing_restore(e, 1, &reference))?;
        std::fs::rename(&tmp, path)?;
        stamp_version(path, 1)?;
        // A restore made as a tenant's first write (a fork's entry adds nothing).
        add_to_image(path, &sequences, key.as_ref())?;
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
        let mut probed = crate::store::lock(&self.probed).take();
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

    /// Applies the entry the last freshness check found ([`Replica::has_newer`]) when it is
    /// still the local copy's next one; no S3 request. Otherwise (the writer applied it
    /// meanwhile: often the entry of this process's own write, found between its PUT and its
    /// local commit; or another check took it) nothing: the caller checks again. So a read
    /// holds the writer only to apply what it found, never across a request to S3.
    pub fn apply_probed(&self, conn: &mut Connection) -> Result<()> {
        self.refuse_if_deleted()?;
        let seq = capture::seq(conn)?;
        let probed = crate::store::lock(&self.probed).take();
        if let Some((next, body)) = probed.filter(|(n, _)| *n == seq + 1) {
            self.apply_entry(conn, next, &body)?;
            self.seq.store(next, Ordering::SeqCst);
        }
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
            return self.apply_restore(conn, n, &reference, &head.sequences, head.key.as_ref());
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
        key: Option<&KeyRow>,
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
            .and_then(|()| capture::apply_file(conn, &tmp, n, sequences, insert_key(key)));
        let _ = remove_database_files(&tmp);
        tracing::info!(root = %self.root, seq = n, checkpoint = %reference.checkpoint, "replayed a restore");
        applied
    }
}
