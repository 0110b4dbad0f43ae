//! Snapshots of a replica (invariant 8 of the parent module): made in the background after a
//! write once `compact_every` entries accumulated since the last one, uploaded whole, and
//! only older ones deleted once a newer one is fully in the bucket. A cold start reads the
//! newest one (see `replay.rs`).

use super::{capture, parse_seq, Replica, FORK_BASE_SUFFIX};
use crate::Result;
use rusqlite::Connection;
use std::path::Path;
use std::sync::atomic::Ordering;

impl Replica {
    /// Claims the right to compact; false when a compaction is already running.
    pub fn begin_compaction(&self) -> bool {
        !self.compacting.swap(true, Ordering::SeqCst)
    }

    /// Whether a compaction is claimed and not over: a snapshot being made, uploaded, or
    /// its older ones deleted. A write that makes one due claims it before it returns, so
    /// once this is false after the last write, the bucket's snapshots stay as they are; a
    /// process about to stop can wait for it so as not to leave a snapshot half done.
    pub fn is_compacting(&self) -> bool {
        self.compacting.load(Ordering::SeqCst)
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
        // The simulation's deliberately wrong protocol (object_store.rs), in test builds
        // only: log keys are what refuses a stale writer its slot, so they are never deleted.
        if cfg!(test) && self.bucket.mutation() == Some(crate::store::s3::Mutation::PruneLog) {
            for key in self
                .bucket
                .list_after(&self.log_dir(), &self.log_dir(), usize::MAX)?
            {
                if parse_seq(&key).is_some_and(|s| s <= seq) {
                    self.bucket.delete(&key)?;
                }
            }
        }
        Ok(())
    }

    /// Releases the compaction claim without compacting.
    pub fn abandon_compaction(&self) {
        self.compacting.store(false, Ordering::SeqCst);
    }
}

/// Makes the header of the snapshot file at `path` say version `seq`, the version its key
/// names. A snapshot made here by `VACUUM INTO` says so already; one copied by S3 from a
/// checkpoint (after a restore or a fork) still carries the checkpointed database's version.
/// Answers whether it had to (the file is such a copy).
pub(super) fn stamp_version(path: &Path, seq: u64) -> Result<bool> {
    let conn = Connection::open(path)?;
    let copied = capture::seq(&conn)? != seq;
    if copied {
        capture::set_seq(&conn, seq)?;
    }
    Ok(copied)
}
