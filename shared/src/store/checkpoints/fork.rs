//! Forks: a new tenant holding a copy of another's checkpoint (the parent module's
//! invariants: its data is written before the registry makes it reachable, a refused fork
//! leaves nothing, and in S3 mode it shares the checkpoint file, held by a marker).

use super::{not_found, release, Manifest};
use crate::auth::Credentials;
use crate::store::replica::{self, Replica, RestoreRef};
use crate::store::{Registry, Store, TenantRecord};
use crate::{Error, Result};

impl Store {
    /// Creates tenant `name` (the source's time zone, fresh credentials) holding a copy of
    /// checkpoint `checkpoint` of `source`; 404 for an unknown source or checkpoint, 409 for
    /// a name in use. In S3 mode the fork's first entry names the checkpoint's file (no copy).
    pub fn fork_tenant(
        &self,
        source: &TenantRecord,
        checkpoint: &str,
        name: &str,
    ) -> Result<(TenantRecord, Credentials)> {
        self.fork_tenant_keyed(source, checkpoint, name, None)
    }

    /// [`Store::fork_tenant`] whose registration inserts `key`'s row too (an admin request's).
    pub fn fork_tenant_keyed(
        &self,
        source: &TenantRecord,
        checkpoint: &str,
        name: &str,
        key: Option<&crate::store::idempotency::KeyScope>,
    ) -> Result<(TenantRecord, Credentials)> {
        let manifest = self.manifest(&source.id, checkpoint)?;
        // A name in use is found by the registration below (409; no look-up first), and what
        // was written under the unregistered id is then undone.
        let (record, creds) = Registry::new_tenant(name, &source.time_zone);
        // The argument: whether the registration may have landed (its outcome is unknown).
        let undo: Box<dyn Fn(bool)> = match self.tenant_replica(&record.id) {
            None => {
                let from = self.local_place(&source.id).join(&manifest.file);
                let to = self.tenant_path(&record.id);
                std::fs::copy(&from, &to)?;
                Box::new(move |_| {
                    let _ = replica::remove_database_files(&to);
                })
            }
            Some(replica) => {
                let source_root = format!("tenants/{}", source.id);
                let reference = RestoreRef {
                    object: manifest.file.clone(),
                    checkpoint: checkpoint.to_string(),
                    version: manifest.version,
                    owner: Some(source_root),
                };
                let started = self.start_s3_fork(&replica, &reference, &manifest);
                // Never registered, so never reachable: its objects go without a trace. A
                // registration that may have landed gets the tombstones of a deletion.
                let scratch = self.inner.files_dir.clone();
                let undo = move |maybe_registered: bool| {
                    let _ = match maybe_registered {
                        true => replica.erase(&scratch),
                        false => replica.discard(),
                    };
                    let _ = release(&replica, &reference);
                };
                if let Err(e) = started {
                    undo(false);
                    return Err(e);
                }
                Box::new(undo)
            }
        };
        if let Err(e) = self.registry().register_keyed(&record, &creds, key) {
            undo(matches!(e, Error::OutcomeUnknown(_)));
            return Err(e);
        }
        Ok((record, creds))
    }

    /// S3 mode, a fork's data: the marker holding the checkpoint file and the fork's entry 1
    /// naming it (both at once: nobody reaches the fork before it is registered), then the
    /// check that the manifest still names the file. That check comes after the marker is
    /// in: a deletion that removed the manifest before it is refused here (404), one that
    /// removes it after it finds the marker and keeps the file.
    fn start_s3_fork(
        &self,
        fork: &Replica,
        reference: &RestoreRef,
        manifest: &Manifest,
    ) -> Result<()> {
        let file = fork.reference_key(reference);
        let (held, entry) = std::thread::scope(|scope| {
            let held = scope.spawn(|| hold(fork, &file));
            let entry = fork.start_fork(reference, manifest.schema);
            let held = held
                .join()
                .unwrap_or_else(|_| Err(Error::Internal("the marker thread panicked".into())));
            (held, entry)
        });
        held?;
        entry?;
        let source_id = reference
            .owner
            .as_deref()
            .and_then(|o| o.strip_prefix("tenants/"))
            .unwrap_or_default();
        match self.manifest(source_id, &reference.checkpoint) {
            Ok(now) if now.file == manifest.file => Ok(()),
            Ok(_) | Err(Error::NotFound(_)) => Err(not_found(source_id, &reference.checkpoint)),
            Err(e) => Err(e),
        }
    }
}

/// Puts the marker by which fork `fork` holds the file at bucket key `file`.
fn hold(fork: &Replica, file: &str) -> Result<()> {
    let marker = replica::holder_key(file, fork.root());
    match fork.bucket().put_if_absent(&marker, Vec::new()) {
        Ok(()) | Err(crate::store::s3::S3Error::Exists) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
