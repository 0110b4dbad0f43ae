//! WAL checkpoints of a local database, off the write path. SQLite's automatic checkpoint runs on the
//! writer right after the commit that takes the WAL past 1000 pages, so one write in every
//! few dozen also copied the WAL into the database file and synced both before its answer.
//! Here the writer's automatic checkpoint is off and a WAL hook records how many pages each
//! commit left in the WAL (the file's size says nothing: SQLite rewrites a checkpointed WAL
//! from its start without shrinking it). After a write, a WAL of [`CHECKPOINT_PAGES`] or
//! more starts a PASSIVE checkpoint on a read connection in a thread of its own (one at a
//! time per database), which never blocks the writer or readers. SQLite rewrites the WAL from
//! its start only when every frame in it is in the database file, which a background pass
//! under a steady stream of writes never achieves (frames keep arriving while it copies): the
//! WAL then grew to the inline bound, and every commit started another pass. So the
//! background thread makes up to [`BACKGROUND_PASSES`] passes, each copying the frames written
//! during the one before, and stops once every frame is copied (the next write then restarts
//! the WAL); if writes kept ahead of it, the next write that finds the WAL still past the
//! threshold copies the few frames left itself (PASSIVE, on the writer, between
//! transactions), and the write after it starts the WAL again from its beginning. A WAL of
//! [`INLINE_CHECKPOINT_PAGES`] (readers keep the passes from finishing) is checkpointed on the
//! writer again, so the WAL stays bounded. What a crash may lose is unchanged: see
//! "Durability" in docs/storage.md. S3 mode keeps SQLite's own checkpoints (its writes wait
//! for S3, not for the disk).

use super::{lock, sqlite, Database, MAX_IDLE_READERS};
use crate::Result;
use rusqlite::Connection;
use std::sync::atomic::Ordering;

/// WAL pages that start a background checkpoint: SQLite's own automatic threshold.
const CHECKPOINT_PAGES: i32 = 1000;

/// WAL pages at which the writer checkpoints itself again (see the module doc).
const INLINE_CHECKPOINT_PAGES: i32 = 16 * CHECKPOINT_PAGES;

thread_local! {
    /// Pages in the WAL after the last commit on this thread's writer connection, as the WAL
    /// hook reports them (the hook is a plain function, so it reports through the thread
    /// that committed; -1: no commit reported).
    static WAL_PAGES: std::cell::Cell<i32> = const { std::cell::Cell::new(-1) };
}

/// The writer's WAL hook: records the pages the commit left in the WAL.
pub(super) fn record_pages(
    _: &rusqlite::hooks::Wal,
    pages: std::ffi::c_int,
) -> rusqlite::Result<()> {
    WAL_PAGES.with(|p| p.set(pages));
    Ok(())
}

/// Forgets the pages last reported on this thread (before a write: a commit reports again).
pub(super) fn forget_pages() {
    WAL_PAGES.with(|p| p.set(-1));
}

impl Database {
    /// Local mode, after a write, under the writer lock: starts a background checkpoint when
    /// the commit left [`CHECKPOINT_PAGES`] or more in the WAL, copies the rest on the writer
    /// once one has finished, or checkpoints on the writer at [`INLINE_CHECKPOINT_PAGES`]
    /// (see the module doc). A failed checkpoint loses nothing
    /// (the WAL still holds every commit) and is tried again after a later write, so it is
    /// only logged.
    pub(super) fn checkpoint_if_due(&self, writer: &Connection) {
        let pages = WAL_PAGES.with(|p| p.replace(-1));
        if pages >= INLINE_CHECKPOINT_PAGES {
            if let Err(e) = checkpoint(writer) {
                tracing::warn!(error = %e, "WAL checkpoint on the writer failed");
            }
            return;
        }
        if pages < CHECKPOINT_PAGES || self.inner.checkpointing.load(Ordering::SeqCst) {
            return;
        }
        if self.inner.backfilled.swap(false, Ordering::SeqCst) {
            // A background pass copied the WAL as it was when it began; the frames written
            // since are few. Copying them here lets the next write restart the WAL.
            if let Err(e) = checkpoint(writer) {
                tracing::warn!(error = %e, "WAL checkpoint on the writer failed");
            }
            return;
        }
        if self.inner.checkpointing.swap(true, Ordering::SeqCst) {
            return;
        }
        let db = self.clone();
        let spawned = std::thread::Builder::new()
            .name("wal-checkpoint".into())
            .spawn(move || {
                let done = (|| {
                    let conn = match lock(&db.inner.readers).pop() {
                        Some(c) => c,
                        None => sqlite::open(&db.inner.path)?,
                    };
                    let mut done = Ok(false);
                    for _ in 0..BACKGROUND_PASSES {
                        done = checkpoint(&conn);
                        if !matches!(done, Ok(false)) {
                            break;
                        }
                    }
                    let mut pool = lock(&db.inner.readers);
                    if pool.len() < MAX_IDLE_READERS {
                        pool.push(conn);
                    }
                    done
                })();
                match done {
                    // Every frame copied: the next write restarts the WAL by itself.
                    Ok(true) => {}
                    Ok(false) => db.inner.backfilled.store(true, Ordering::SeqCst),
                    Err(e) => tracing::warn!(error = %e, "background WAL checkpoint failed"),
                }
                db.inner.checkpointing.store(false, Ordering::SeqCst);
            });
        if let Err(e) = spawned {
            self.inner.checkpointing.store(false, Ordering::SeqCst);
            tracing::warn!(error = %e, "could not start a WAL checkpoint thread");
        }
    }
}

/// One PASSIVE checkpoint: whether every frame of the WAL is now in the database file.
fn checkpoint(conn: &Connection) -> Result<bool> {
    // (busy, frames in the WAL, frames copied)
    let (_, frames, copied): (i64, i64, i64) =
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?;
    Ok(frames == copied)
}

/// Passes a background checkpoint makes at most, each copying the frames written during the
/// one before (see the module doc).
const BACKGROUND_PASSES: usize = 3;
