//! Deleting a replicated database: a tombstone appended after the newest log entry (so that
//! no environment serves or extends the log again), then its objects erased with the log
//! keys overwritten by tombstones, never deleted (invariant 5 of the parent module), and
//! objects another database holds kept for it. A database that was never reachable (a
//! refused fork) is discarded instead, without tombstones.

use super::write::{race_pause, DEFAULT_PUT};
use super::{capture, Replica, HOLDERS, MAX_WRITE_ATTEMPTS};
use crate::store::s3::S3Error;
use crate::{Error, Result};
use rusqlite::Connection;
use std::path::Path;
use std::sync::atomic::Ordering;

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

impl Replica {
    /// Appends the tombstone after the newest entry (a conditional PUT like any write; after
    /// a lost race it catches up and tries the next slot). A tombstone already there (a retried
    /// deletion) is success. From then on no environment serves or extends this log.
    pub fn write_tombstone(&self, conn: &mut Connection) -> Result<()> {
        for _ in 0..MAX_WRITE_ATTEMPTS {
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
                Err(S3Error::Exists) => {
                    self.bucket
                        .pause(race_pause(std::time::Duration::ZERO, DEFAULT_PUT));
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(Error::Unavailable(format!(
            "{}: lost {MAX_WRITE_ATTEMPTS} races while writing a tombstone",
            self.root
        )))
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

    /// Deletes every object of a database that was never reachable (a fork whose
    /// registration was refused: name taken, tenant cap), its log keys included. Unlike
    /// [`Replica::erase`], no tombstone is left: no environment can be behind on a log that
    /// nobody could read (the id is fresh and was never registered), so a missing key cannot
    /// be misread as "up to date", and a refused fork leaves nothing in the bucket.
    pub fn discard(&self) -> Result<()> {
        let prefix = format!("{}/", self.root);
        for key in self.bucket.list_after(&prefix, &prefix, usize::MAX)? {
            self.bucket.delete(&key)?;
        }
        Ok(())
    }
}
