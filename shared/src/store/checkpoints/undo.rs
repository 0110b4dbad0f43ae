//! Automatic checkpoints ("images"): the copies of a tenant the sandbox keeps before each
//! clock advance so that the advance can be undone (`crate::sandbox::undo` keeps the list of
//! them in the tenant's own data and decides which are kept). Here only their files: made,
//! restored and deleted by the same code as a checkpoint's (the parent module's
//! `write_image` and `restore_file`), so an undo is a restore in every respect (one new
//! version, ids never given out again, S3 mode's restore entry naming its own copy).
//!
//! Invariants:
//! - An image is a file (local) or an object (S3) `undo/<made at, ms>-<uuid>.db` under the
//!   tenant's place, written once, never changed: no manifest, no name a user gives, so
//!   images are never listed among the checkpoints nor counted against
//!   [`super::MAX_CHECKPOINTS`], and no fork can name one.
//! - The time in its name is when it was made (real time): [`Store::collect_undo_images`]
//!   deletes an image the tenant's list does not name only once it is older than the grace
//!   it is given, so an image made for an advance still running is never taken from it.
//! - Deleting the tenant deletes its images with its place (local) or its objects (S3).

use crate::store::idempotency::KeyScope;
use crate::store::Store;
use crate::Result;
use std::time::Duration;

/// Where a tenant's images are, relative to its place.
const DIR: &str = "undo/";

/// An image just made: its file (relative to the tenant's place) and the tenant's version
/// it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// `undo/<made at, ms>-<uuid>.db`.
    pub file: String,
    /// The tenant's version the image holds (as a checkpoint's `version`).
    pub version: u64,
}

/// The time (ms since the epoch) an image's file name says it was made, when `file` is the
/// name of an image at all (anything else, such as a name from a tampered row, is never
/// used as a path).
fn made_at(file: &str) -> Option<i64> {
    let rest = file.strip_prefix(DIR)?.strip_suffix(".db")?;
    let (ms, id) = rest.split_once('-')?;
    let plain = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    (ms.chars().all(|c| c.is_ascii_digit()) && plain(id))
        .then(|| ms.parse().ok())
        .flatten()
}

impl Store {
    /// Makes an image of the tenant's newest version (see the module doc).
    pub fn keep_undo_image(&self, tenant_id: &str) -> Result<Image> {
        let made = crate::time::now().timestamp_millis();
        let file = format!("{DIR}{made:013}-{}.db", uuid::Uuid::new_v4());
        let (version, _schema) = self.write_image(tenant_id, &file)?;
        Ok(Image { file, version })
    }

    /// Restores image `file` (made at the tenant's `version`) as the tenant's data, as a
    /// checkpoint is restored: answers the new version, or `None` when no such image is
    /// kept (deleted, or a name that is not an image's), with nothing changed.
    pub fn restore_undo_image(
        &self,
        tenant_id: &str,
        file: &str,
        version: u64,
        key: Option<&KeyScope>,
    ) -> Result<Option<u64>> {
        if made_at(file).is_none() || !self.undo_images(tenant_id)?.iter().any(|f| f == file) {
            return Ok(None);
        }
        self.restore_file(tenant_id, file, file, version, key)
            .map(Some)
    }

    /// The tenant's images, oldest first.
    pub fn undo_images(&self, tenant_id: &str) -> Result<Vec<String>> {
        let mut files: Vec<String> = match self.tenant_replica(tenant_id) {
            None => super::local_names(&self.local_place(tenant_id).join(DIR))?
                .into_iter()
                .map(|name| format!("{DIR}{name}"))
                .collect(),
            Some(replica) => {
                let dir = replica.object_key(DIR);
                let keys = replica.bucket().list_after(&dir, &dir, usize::MAX)?;
                keys.iter()
                    .filter_map(|k| k.strip_prefix(&dir))
                    .map(|name| format!("{DIR}{name}"))
                    .collect()
            }
        };
        files.retain(|f| made_at(f).is_some());
        files.sort();
        Ok(files)
    }

    /// Deletes image `file` (an image already gone, or a name that is not an image's, is not
    /// an error).
    pub fn delete_undo_image(&self, tenant_id: &str, file: &str) -> Result<()> {
        if made_at(file).is_none() {
            return Ok(());
        }
        match self.tenant_replica(tenant_id) {
            None => crate::store::replica::remove_database_files(
                &self.local_place(tenant_id).join(file),
            ),
            Some(replica) => Ok(replica.bucket().delete(&replica.object_key(file))?),
        }
    }

    /// Deletes every image of the tenant that `named` does not name and that is older than
    /// `grace` (an image made for an advance still running is younger); answers the images
    /// left that `named` names.
    pub fn collect_undo_images(
        &self,
        tenant_id: &str,
        named: &[String],
        grace: Duration,
    ) -> Result<Vec<String>> {
        let grace_ms = i64::try_from(grace.as_millis()).unwrap_or(i64::MAX);
        let before = crate::time::now()
            .timestamp_millis()
            .saturating_sub(grace_ms);
        let mut kept = Vec::new();
        for file in self.undo_images(tenant_id)? {
            if named.contains(&file) {
                kept.push(file);
            } else if made_at(&file).is_some_and(|at| at < before) {
                self.delete_undo_image(tenant_id, &file)?;
            }
        }
        Ok(kept)
    }
}

#[cfg(test)]
mod tests {
    use super::made_at;

    #[test]
    fn only_image_names_are_images() {
        assert_eq!(
            made_at("undo/1700000000000-0b7e4c1e-8a55-4d0a-9a7c-3f1e2d4c5b6a.db"),
            Some(1_700_000_000_000)
        );
        for bad in [
            "undo/../x.db",
            "undo/1700000000000-../../x.db",
            "checkpoints/1-ab.db",
            "undo/x-ab.db",
            "undo/1-ab.db.tmp",
            "undo/1-.db",
        ] {
            assert_eq!(made_at(bad), None, "{bad}");
        }
    }
}
