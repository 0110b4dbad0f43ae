//! Checkpoints, restores and forks of a tenant's data (docs/storage.md, "Checkpoints").
//!
//! A checkpoint is a manifest (`checkpoints/<name>.json`: name, version, creation time,
//! schema version, file) plus the file it names (`checkpoints/files/<uuid>.db`, a whole
//! SQLite database at that version), under the tenant's place: `<data_dir>/tenants/<id>/`
//! locally, `<prefix>/tenants/<id>/` in S3 mode. Invariants:
//! - A manifest is created once, never rewritten: locally by a hard link of a complete
//!   temporary file, in S3 by `If-None-Match: *`. Two checkpoints of one name race on it;
//!   the loser deletes its own file and answers 409. The file key is unique per attempt, so
//!   a loser never touches the winner's file.
//! - The file is consistent: SQLite writes it (`VACUUM INTO` under the writer lock, after a
//!   catch-up in S3 mode), or S3 copies the snapshot of exactly that version.
//! - A restore never rewrites history: locally it is one transaction replacing every row;
//!   in S3 mode it is one more log entry, written with the conditional PUT of any write, that
//!   names a copy of the checkpoint file (`restores/<uuid>.db`) made for that entry and never
//!   deleted while the tenant lives, so the log stays replayable even after the checkpoint
//!   is deleted.
//! - A fork writes the new tenant's data (locally its database file; in S3 its first log
//!   entry, a restore naming the checkpoint's file) before the registry makes it reachable,
//!   so nobody ever sees it empty. Its credentials are its own. A fork refused at its
//!   registration leaves nothing (it was never reachable, so its entry is deleted, not
//!   tombstoned).
//! - At most [`MAX_CHECKPOINTS`] are kept: a creation counts again once its manifest is in
//!   and withdraws it past the cap (the last one in sees every other).
//! - S3 mode: a checkpoint file is shared, never copied, by the forks made from it. Each
//!   fork holds it with a marker `<file>.refs/tenants/<fork id>` (see
//!   [`super::replica::holder_key`]), put before the fork checks that the manifest still
//!   names the file. The file is deleted only by [`collect`], when its manifest no longer
//!   names it (checkpoint or source deleted) and no marker is left: deleting a checkpoint or
//!   a tenant never deletes a file a fork still names (docs/storage.md, "Shared checkpoint
//!   files", has the argument).

use super::idempotency::KeyScope;
use super::replica::{self, Replica, RestoreRef};
use super::Store;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Longest checkpoint name accepted.
pub const MAX_NAME_LEN: usize = crate::names::MAX_LEN;
/// Most checkpoints one tenant may keep (delete one to make room).
pub const MAX_CHECKPOINTS: usize = 100;

/// A checkpoint as the admin API shows it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct Checkpoint {
    /// Unique per tenant.
    pub name: String,
    /// The tenant's version it holds: its log version in S3 mode, its count of writes
    /// locally.
    pub version: u64,
    /// RFC 3339 creation time (UTC).
    #[schema(format = DateTime)]
    pub created_at: String,
}

/// What is stored for a checkpoint.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Manifest {
    name: String,
    version: u64,
    created_at: String,
    /// Schema version (`PRAGMA user_version`) of the file.
    schema: i64,
    /// The file, relative to the tenant's place (`checkpoints/files/<uuid>.db`).
    file: String,
    /// The `Idempotency-Key` and request fingerprint of the admin request that made it: a
    /// retry of that request finds its checkpoint here (see
    /// [`Store::create_checkpoint_keyed`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    made_by: Option<MadeBy>,
}

/// The keyed request that made a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct MadeBy {
    key: String,
    fingerprint: String,
}

impl MadeBy {
    fn of(key: Option<&KeyScope>) -> Option<MadeBy> {
        key.map(|k| MadeBy {
            key: k.shown().to_string(),
            fingerprint: k.fingerprint().to_string(),
        })
    }
}

impl From<Manifest> for Checkpoint {
    fn from(m: Manifest) -> Self {
        Checkpoint {
            name: m.name,
            version: m.version,
            created_at: m.created_at,
        }
    }
}

/// Checks a checkpoint name: [`crate::names::is_plain`], starting with a letter or digit
/// (it becomes part of a file name and an S3 key).
pub fn check_name(name: &str) -> Result<()> {
    let starts_well = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric());
    if crate::names::is_plain(name) && starts_well {
        Ok(())
    } else {
        Err(Error::bad_request(format!(
            "checkpoint name must be {}, starting with a letter or digit",
            crate::names::RULE
        )))
    }
}

/// Whether bucket key `key`, listed under `dir` (a tenant's `checkpoints/`), is a manifest
/// (`<name>.json` right in it; files and their markers are under `files/`).
fn is_manifest(dir: &str, key: &str) -> bool {
    key.strip_prefix(dir)
        .is_some_and(|rest| !rest.contains('/') && rest.ends_with(".json"))
}

fn manifest_rel(name: &str) -> String {
    format!("checkpoints/{name}.json")
}

fn not_found(tenant_id: &str, name: &str) -> Error {
    Error::not_found(format!(
        "checkpoint '{name}' of tenant {tenant_id} does not exist"
    ))
}

fn duplicate(tenant_id: &str, name: &str) -> Error {
    Error::conflict(format!(
        "tenant {tenant_id} already has a checkpoint named '{name}'"
    ))
}

impl Store {
    /// Local mode: the directory of a tenant's objects (exports, checkpoints).
    fn local_place(&self, tenant_id: &str) -> PathBuf {
        self.inner.data_dir.join("tenants").join(tenant_id)
    }

    /// The manifests of a tenant's checkpoints, oldest first.
    fn manifests(&self, tenant_id: &str) -> Result<Vec<Manifest>> {
        let mut out = Vec::new();
        for name in self.manifest_names(tenant_id)? {
            match self.manifest(tenant_id, &name) {
                Ok(m) => out.push(m),
                // Deleted between the listing and the read.
                Err(Error::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        out.sort_by(|a, b| (&a.created_at, &a.name).cmp(&(&b.created_at, &b.name)));
        Ok(out)
    }

    /// One manifest, or 404.
    fn manifest(&self, tenant_id: &str, name: &str) -> Result<Manifest> {
        check_name(name)?;
        let body = match self.tenant_replica(tenant_id) {
            None => match std::fs::read(self.local_place(tenant_id).join(manifest_rel(name))) {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(not_found(tenant_id, name))
                }
                Err(e) => return Err(e.into()),
            },
            Some(replica) => match replica
                .bucket()
                .get(&replica.object_key(&manifest_rel(name)))
            {
                Ok(b) => b,
                Err(super::s3::S3Error::NotFound) => return Err(not_found(tenant_id, name)),
                Err(e) => return Err(e.into()),
            },
        };
        Ok(serde_json::from_slice(&body)?)
    }

    /// The checkpoints of a tenant, oldest first.
    pub fn list_checkpoints(&self, tenant_id: &str) -> Result<Vec<Checkpoint>> {
        Ok(self
            .manifests(tenant_id)?
            .into_iter()
            .map(Checkpoint::from)
            .collect())
    }

    /// One checkpoint, or 404.
    pub fn get_checkpoint(&self, tenant_id: &str, name: &str) -> Result<Checkpoint> {
        self.manifest(tenant_id, name).map(Checkpoint::from)
    }

    /// The names of a tenant's checkpoints, from a listing alone (no manifest is read).
    fn manifest_names(&self, tenant_id: &str) -> Result<Vec<String>> {
        let names = match self.tenant_replica(tenant_id) {
            None => local_names(&self.local_place(tenant_id).join("checkpoints"))?
                .into_iter()
                .filter_map(|file| file.strip_suffix(".json").map(str::to_string))
                .collect(),
            Some(replica) => {
                let dir = replica.object_key("checkpoints/");
                let keys = replica.bucket().list_after(&dir, &dir, usize::MAX)?;
                keys.iter()
                    .filter(|k| is_manifest(&dir, k))
                    .filter_map(|k| k.strip_prefix(&dir)?.strip_suffix(".json"))
                    .map(str::to_string)
                    .collect()
            }
        };
        Ok(names)
    }

    /// The most checkpoints a tenant keeps: [`MAX_CHECKPOINTS`], the documented bound.
    pub fn max_checkpoints(&self) -> usize {
        self.inner
            .max_checkpoints
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Lowers (or raises) the most checkpoints a tenant keeps, for this process. Only tests
    /// call it: a race at the cap is the same race at 10 as at 100, without 90 more
    /// checkpoints written first (on S3, a minute of a test).
    pub fn set_max_checkpoints(&self, most: usize) {
        self.inner
            .max_checkpoints
            .store(most, std::sync::atomic::Ordering::Relaxed);
    }

    /// Checkpoints the tenant's current state as `name` (400 for a bad name, 409 when the
    /// name is taken or [`MAX_CHECKPOINTS`] exist). Blocking.
    ///
    /// The count is checked twice: before (a cheap refusal) and after the manifest is in.
    /// Concurrent creations (in this process or any environment) all pass the first check;
    /// the second one is what holds: a creation that finds more than [`MAX_CHECKPOINTS`]
    /// manifests once its own is in withdraws its own and answers 409. Whichever manifest
    /// went in last sees all the others, so more than the cap are never kept (several may
    /// withdraw at once, leaving room: a refusal, never an excess).
    pub fn create_checkpoint(&self, tenant_id: &str, name: &str) -> Result<Checkpoint> {
        self.create_checkpoint_keyed(tenant_id, name, None)
    }

    /// [`Store::create_checkpoint`] of an admin request with an idempotency key: the
    /// manifest names the key and the request's fingerprint, and a retry of the same request
    /// that finds the name taken by its own checkpoint gets that checkpoint instead of a 409
    /// (a checkpoint is bucket objects, not a row: the web layer's look-up misses a retry
    /// until the key's row is written after the creation; see docs/storage.md).
    pub fn create_checkpoint_keyed(
        &self,
        tenant_id: &str,
        name: &str,
        key: Option<&KeyScope>,
    ) -> Result<Checkpoint> {
        check_name(name)?;
        let most = self.max_checkpoints();
        let full = || {
            Error::conflict(format!(
                "tenant {tenant_id} has {most} checkpoints, the most it may keep; delete one first"
            ))
        };
        let existing = self.manifest_names(tenant_id)?;
        if existing.iter().any(|n| n == name) {
            let made_by = MadeBy::of(key);
            return match self.manifest(tenant_id, name) {
                Ok(m) if made_by.is_some() && m.made_by == made_by => Ok(m.into()),
                _ => Err(duplicate(tenant_id, name)),
            };
        }
        if existing.len() >= most {
            return Err(full());
        }
        let made = self.make_checkpoint(tenant_id, name, MadeBy::of(key))?;
        match self.manifest_names(tenant_id) {
            Ok(names) if names.len() <= most => Ok(made),
            counted => {
                self.delete_checkpoint(tenant_id, name)?;
                counted.and(Err(full()))
            }
        }
    }

    /// Writes checkpoint `name` (its file, then its manifest, which claims the name).
    fn make_checkpoint(
        &self,
        tenant_id: &str,
        name: &str,
        made_by: Option<MadeBy>,
    ) -> Result<Checkpoint> {
        let file = format!("checkpoints/files/{}.db", uuid::Uuid::new_v4());
        let created_at = crate::time::to_storage(crate::time::now());
        let (version, schema) = self.write_image(tenant_id, &file)?;
        let manifest = Manifest {
            name: name.to_string(),
            version,
            created_at,
            schema,
            file: file.clone(),
            made_by,
        };
        match self.tenant_replica(tenant_id) {
            None => {
                let place = self.local_place(tenant_id);
                let claimed = link_new(&place.join(manifest_rel(name)), &manifest);
                if claimed.is_err() {
                    let _ = super::replica::remove_database_files(&place.join(&file));
                }
                match claimed {
                    Ok(()) => Ok(manifest.into()),
                    Err(Error::Conflict(_)) => Err(duplicate(tenant_id, name)),
                    Err(e) => Err(e),
                }
            }
            Some(replica) => {
                let body = serde_json::to_vec(&manifest)?;
                let key = replica.object_key(&manifest_rel(name));
                let Err(e) = replica.bucket().put_if_absent(&key, body) else {
                    return Ok(manifest.into());
                };
                // The manifest's PUT may have landed all the same (an answer lost, an SDK
                // retry meeting its own PUT, a PUT held past its timeout): the file is deleted
                // only once the manifest is known to name another file, never while it may
                // name this one (found by the S3 simulation: a checkpoint answered 503 whose
                // manifest names a deleted file, and whose forks can never be read).
                let found = replica
                    .bucket()
                    .get(&key)
                    .ok()
                    .and_then(|b| serde_json::from_slice::<Manifest>(&b).ok());
                match found {
                    Some(m) if m.file == file => Ok(manifest.into()),
                    Some(_) => {
                        let _ = replica.bucket().delete(&replica.object_key(&file));
                        Err(duplicate(tenant_id, name))
                    }
                    None => Err(Error::OutcomeUnknown(format!(
                        "checkpoint '{name}' of tenant {tenant_id}: S3 did not confirm its manifest ({e}); it may or may not exist"
                    ))),
                }
            }
        }
    }

    /// Writes the tenant's newest version as the database file `file` (relative to the
    /// tenant's place: a local file, or an S3 object) and answers that version and its
    /// schema: the one way a checkpoint's file, or an automatic checkpoint's, is made.
    fn write_image(&self, tenant_id: &str, file: &str) -> Result<(u64, i64)> {
        let db = self.tenant_db(tenant_id)?;
        match self.tenant_replica(tenant_id) {
            None => {
                let place = self.local_place(tenant_id);
                let path = place.join(file);
                let parent = path.parent().unwrap_or(&place).to_path_buf();
                std::fs::create_dir_all(&parent)?;
                db.db.copy_into(&path)
            }
            Some(replica) => self.upload_current(&db, &replica, file),
        }
    }

    /// S3 mode: puts the tenant's newest version at `file` (relative to its root) and
    /// answers that version and its schema. The snapshot of that version, when it is the
    /// newest one, is copied by S3 (no byte passes through here); otherwise SQLite writes a
    /// copy (`VACUUM INTO`), which is uploaded once as the snapshot of its version (a
    /// compaction cold starts profit from) and copied from there by S3.
    fn upload_current(
        &self,
        db: &super::TenantDb,
        replica: &Replica,
        file: &str,
    ) -> Result<(u64, i64)> {
        let bucket = replica.bucket();
        let target = replica.object_key(file);
        let (current, schema) = db.read_blocking(|conn| {
            let seq = super::capture::seq(conn)?;
            let schema: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
            Ok((seq, schema))
        })?;
        // The open database's replica knows the newest snapshot this process made or loaded.
        let replica = db.db.replica().unwrap_or(replica);
        if current > 0 && replica.snapshot_seq() == current {
            match bucket.copy(&replica.snapshot_object(current), &target) {
                Ok(()) => return Ok((current, schema)),
                // Pruned by a newer compaction meanwhile: make our own copy.
                Err(super::s3::S3Error::NotFound) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let tmp = self
            .inner
            .files_dir
            .join(format!("checkpoint-{}.db", uuid::Uuid::new_v4()));
        let uploaded = (|| {
            let (version, schema) = db.db.copy_into(&tmp)?;
            let snapshot = replica.snapshot_object(version);
            bucket.put_file(&snapshot, &tmp)?;
            if let Err(e) = replica.prune_snapshots(version) {
                tracing::warn!(tenant = %db.tenant_id(), error = %e, "older snapshots not pruned");
            }
            bucket.copy(&snapshot, &target)?;
            Ok((version, schema))
        })();
        let _ = super::replica::remove_database_files(&tmp);
        uploaded
    }

    /// Deletes a checkpoint (404 when it does not exist). Restores made from it keep
    /// their own copy.
    pub fn delete_checkpoint(&self, tenant_id: &str, name: &str) -> Result<()> {
        let manifest = self.manifest(tenant_id, name)?;
        match self.tenant_replica(tenant_id) {
            None => {
                let place = self.local_place(tenant_id);
                std::fs::remove_file(place.join(manifest_rel(name)))?;
                super::replica::remove_database_files(&place.join(&manifest.file))
            }
            Some(replica) => {
                // The manifest first: from now on no fork can take hold of the file, and the
                // file goes once no fork holds it.
                replica
                    .bucket()
                    .delete(&replica.object_key(&manifest_rel(name)))?;
                collect(replica.bucket(), &replica.object_key(&manifest.file), None)
            }
        }
    }

    /// Restores checkpoint `name`: every row of the tenant becomes the checkpoint's, as one
    /// new version (credentials are the registry's and stay). Answers the checkpoint and the
    /// tenant's new version. In S3 mode every environment sees it at its next request.
    pub fn restore_checkpoint(&self, tenant_id: &str, name: &str) -> Result<(Checkpoint, u64)> {
        self.restore_checkpoint_keyed(tenant_id, name, None)
    }

    /// [`Store::restore_checkpoint`] of an admin request with an idempotency key: the key's
    /// row is inserted by the restore itself (the restored image holds the checkpoint's keys,
    /// not this one; see `Database::replace_with`), and the key is marked written once the
    /// restore is acknowledged, so that its answer is recorded and replayed.
    pub fn restore_checkpoint_keyed(
        &self,
        tenant_id: &str,
        name: &str,
        key: Option<&KeyScope>,
    ) -> Result<(Checkpoint, u64)> {
        let manifest = self.manifest(tenant_id, name)?;
        let version = self.restore_file(tenant_id, &manifest.file, name, manifest.version, key)?;
        Ok((manifest.into(), version))
    }

    /// Makes the rows of the database file `file` (relative to the tenant's place; a copy of
    /// the tenant at its `version`, called `label` in an S3 restore entry) the tenant's, as
    /// one new version: the restore of a checkpoint and of an automatic one. Ids stay unique
    /// (`Database::replace_with`); with `key`, the key's row joins the restore and the key
    /// is marked written once it is acknowledged. Answers the new version.
    fn restore_file(
        &self,
        tenant_id: &str,
        file: &str,
        label: &str,
        version: u64,
        key: Option<&KeyScope>,
    ) -> Result<u64> {
        let db = self.tenant_db(tenant_id)?;
        let version = match self.tenant_replica(tenant_id) {
            None => {
                let file = self.local_place(tenant_id).join(file);
                db.db.replace_with(&file, None, key)?
            }
            Some(replica) => {
                let bucket = replica.bucket();
                let object = format!("restores/{}.db", uuid::Uuid::new_v4());
                bucket.copy(&replica.object_key(file), &replica.object_key(&object))?;
                let tmp = self
                    .inner
                    .files_dir
                    .join(format!("restore-{}.db", uuid::Uuid::new_v4()));
                let reference = RestoreRef {
                    object: object.clone(),
                    checkpoint: label.to_string(),
                    version,
                    owner: None,
                };
                let restored = bucket
                    .get_to_file(&replica.object_key(&object), &tmp)
                    .map_err(Error::from)
                    .and_then(|()| db.db.replace_with(&tmp, Some(&reference), key));
                let _ = super::replica::remove_database_files(&tmp);
                // Nothing applied: no entry names the copy (its slot was taken or fenced), so
                // it can go. Outcome unknown: an entry naming it may still land; it stays.
                if let Err(e) = &restored {
                    if !matches!(e, Error::OutcomeUnknown(_)) {
                        let _ = bucket.delete(&replica.object_key(&object));
                    }
                }
                restored?
            }
        };
        if let Some(key) = key {
            key.mark_written();
        }
        Ok(version)
    }

    /// S3 mode: deletes tenant `replica`'s objects after its tombstone (see
    /// [`Replica::erase`]). A fork first lets go of the checkpoint file its first entry
    /// names; then the tenant's checkpoint manifests go, before the listing that decides
    /// which files forks still hold (a fork that took hold after that listing finds its
    /// manifest gone and gives up).
    pub(super) fn erase_tenant_objects(&self, replica: &Replica) -> Result<()> {
        if let Some(reference) = replica.shared_reference()? {
            release(replica, &reference)?;
        }
        let bucket = replica.bucket();
        let dir = replica.object_key("checkpoints/");
        for key in bucket.list_after(&dir, &dir, usize::MAX)? {
            if is_manifest(&dir, &key) {
                bucket.delete(&key)?;
            }
        }
        replica.erase(&self.inner.files_dir)
    }
}

/// Fork `fork` lets go of the file `reference` names: its marker goes, and the file too
/// when its manifest no longer names it and no other fork holds it.
fn release(fork: &Replica, reference: &RestoreRef) -> Result<()> {
    let Some(owner) = reference.owner.as_deref() else {
        return Ok(());
    };
    let bucket = fork.bucket();
    let file = fork.reference_key(reference);
    bucket.delete(&replica::holder_key(&file, fork.root()))?;
    let manifest = format!("{owner}/{}", manifest_rel(&reference.checkpoint));
    collect(bucket, &file, Some((&manifest, owner)))
}

/// Deletes the checkpoint file at bucket key `file` unless the manifest at bucket key
/// `manifest` (when given) still names it or a fork holds it. Runs after whatever let go of
/// it (its manifest deleted, a marker deleted), so the last one to let go deletes it.
fn collect(bucket: &super::s3::Bucket, file: &str, manifest: Option<(&str, &str)>) -> Result<()> {
    if let Some((key, owner)) = manifest {
        let named = match bucket.get(key) {
            Ok(body) => serde_json::from_slice::<Manifest>(&body)
                .map(|m| format!("{owner}/{}", m.file) == file)
                .unwrap_or(false),
            Err(super::s3::S3Error::NotFound) => false,
            Err(e) => return Err(e.into()),
        };
        if named {
            return Ok(());
        }
    }
    let holders = replica::holders_prefix(file);
    if bucket.list_after(&holders, &holders, 1)?.is_empty() {
        bucket.delete(file)?;
    }
    Ok(())
}

/// The names of the entries of local directory `dir` (none when it does not exist).
fn local_names(dir: &Path) -> Result<Vec<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut out = Vec::new();
    for entry in entries {
        out.push(entry?.file_name().to_string_lossy().into_owned());
    }
    Ok(out)
}

/// Creates `path` holding `manifest`, only if it does not exist (a complete temporary file
/// hard-linked into place: readers never see half a manifest). Taken: a conflict.
fn link_new(path: &Path, manifest: &Manifest) -> Result<()> {
    let tmp = path.with_extension(format!("tmp-{}", uuid::Uuid::new_v4()));
    std::fs::write(&tmp, serde_json::to_vec(manifest)?)?;
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Err(Error::conflict("taken".to_string()))
        }
        Err(e) => Err(e.into()),
    }
}

mod fork;
pub mod undo;
