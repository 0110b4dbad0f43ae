//! The tenant store: one SQLite database per tenant, plus the registry of tenants and
//! credentials.
//!
//! Invariants:
//! - A tenant's data lives in exactly one database file, `<data_dir>/tenants/<id>.db`, shared by
//!   all three surfaces.
//! - Every write runs through [`TenantDb::write`]: a closure executed inside one transaction.
//!   The closure may run more than once (a replicated store re-runs it after losing a race),
//!   so it must keep all of its effects inside the transaction and derive everything it
//!   returns from it.
//! - Writes to one tenant are serialized by that tenant's writer lock; reads use their own
//!   connections (WAL lets them proceed beside a writer). Tenants never share a lock.
//! - With `SANDBOX_S3_BUCKET` set, S3 is the source of truth for every tenant database and
//!   for the registry, and the local files are a cache private to each store (`cache.rs` says
//!   who owns which directory, [`replica`] states the protocol, [`capture`] how changes are
//!   recorded, [`s3`] the bucket calls).

mod cache;
pub mod capture;
mod database;
pub mod registry;
pub mod replica;
pub mod s3;
pub mod sqlite;

use crate::{Error, Result};
use database::Database;
pub use registry::{Registry, TenantRecord};
use replica::Replica;
use rusqlite::{Connection, Transaction};
pub use s3::S3Config;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The store: the registry and a cache of open tenant databases.
#[derive(Clone)]
pub struct Store {
    inner: Arc<StoreInner>,
}

struct StoreInner {
    data_dir: PathBuf,
    /// Where the SQLite files are: the data dir, or in S3 mode this process's cache in it.
    files_dir: PathBuf,
    registry: Registry,
    bucket: Option<(s3::Bucket, u64)>,
    open: Mutex<HashMap<String, Arc<TenantDb>>>,
    /// S3 mode: this process's claim on `files_dir`; declared last so that it is released
    /// (and the directory removed) after every database in it was closed.
    _cache: Option<cache::CacheDir>,
}

impl Store {
    /// Opens the store in `data_dir`, creating the directory and registry when absent. When
    /// `SANDBOX_S3_BUCKET` is set the store is S3-backed (see [`Store::open_with`]).
    pub fn open(data_dir: &Path) -> Result<Store> {
        Store::open_with(data_dir, S3Config::from_env())
    }

    /// Opens the store: local files only with `s3 = None`; otherwise S3 is the source of
    /// truth and a directory of `data_dir/s3-cache/` private to this store holds its cache,
    /// built from S3 (see `cache.rs` for who owns which directory, [`replica`] for the
    /// protocol). Two stores never share a cache, even in one process.
    pub fn open_with(data_dir: &Path, s3: Option<S3Config>) -> Result<Store> {
        let (files_dir, bucket, cache) = match s3 {
            None => (data_dir.to_path_buf(), None, None),
            Some(config) => {
                let cache = cache::CacheDir::claim(&data_dir.join("s3-cache"))?;
                let compact_every = config.compact_every;
                (
                    cache.path().to_path_buf(),
                    Some((s3::Bucket::connect(config)?, compact_every)),
                    Some(cache),
                )
            }
        };
        std::fs::create_dir_all(files_dir.join("tenants"))?;
        let registry_replica = bucket
            .as_ref()
            .map(|(b, every)| Replica::new(b.clone(), "registry", *every));
        let registry = Registry::open_with(&files_dir.join("registry.db"), registry_replica)?;
        Ok(Store {
            inner: Arc::new(StoreInner {
                data_dir: data_dir.to_path_buf(),
                files_dir,
                registry,
                bucket,
                open: Mutex::new(HashMap::new()),
                _cache: cache,
            }),
        })
    }

    /// The registry of tenants and credentials.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The data directory this store lives in.
    pub fn data_dir(&self) -> &Path {
        &self.inner.data_dir
    }

    /// Whether S3 is the source of truth.
    pub fn is_replicated(&self) -> bool {
        self.inner.bucket.is_some()
    }

    fn tenant_path(&self, tenant_id: &str) -> PathBuf {
        self.inner
            .files_dir
            .join("tenants")
            .join(format!("{tenant_id}.db"))
    }

    fn tenant_replica(&self, tenant_id: &str) -> Option<Replica> {
        self.inner
            .bucket
            .as_ref()
            .map(|(b, every)| Replica::new(b.clone(), &format!("tenants/{tenant_id}"), *every))
    }

    /// The database of a registered tenant, opened and migrated on first use.
    pub fn tenant_db(&self, tenant_id: &str) -> Result<Arc<TenantDb>> {
        let mut open = lock(&self.inner.open);
        if let Some(db) = open.get(tenant_id) {
            return Ok(db.clone());
        }
        let db = Arc::new(TenantDb {
            id: tenant_id.to_string(),
            db: Database::open(
                &self.tenant_path(tenant_id),
                sqlite::migrate,
                self.tenant_replica(tenant_id),
            )?,
        });
        open.insert(tenant_id.to_string(), db.clone());
        Ok(db)
    }

    /// Stores a file that belongs to a tenant beside its database (e.g. an analytics export):
    /// `<data_dir>/tenants/<id>/<name>` locally, `<prefix>/tenants/<id>/<name>` in S3 mode.
    /// `name` is a relative path of `A-Z a-z 0-9 - _ . /` not under `log/` or `snapshots/`.
    pub fn put_tenant_file(&self, tenant_id: &str, name: &str, body: &[u8]) -> Result<()> {
        let valid = !name.is_empty()
            && !name.starts_with('/')
            && !name.split('/').any(|part| part.is_empty() || part == "..")
            && !name.starts_with("log/")
            && !name.starts_with("snapshots/")
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
        if !valid {
            return Err(Error::Internal(format!(
                "invalid tenant file name {name:?}"
            )));
        }
        match &self.inner.bucket {
            Some((bucket, _)) => {
                let tmp = self
                    .inner
                    .files_dir
                    .join(format!("upload-{}", uuid::Uuid::new_v4()));
                std::fs::write(&tmp, body)?;
                let sent = bucket.put_file(&format!("tenants/{tenant_id}/{name}"), &tmp);
                let _ = std::fs::remove_file(&tmp);
                Ok(sent?)
            }
            None => {
                let path = self
                    .inner
                    .data_dir
                    .join("tenants")
                    .join(tenant_id)
                    .join(name);
                // The folder is this tenant's storage: failing to reach it is an outage of
                // storage (503, retry later), as an S3 error is in S3 mode.
                let unavailable =
                    |e: std::io::Error| Error::Unavailable(format!("{}: {e}", path.display()));
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(unavailable)?;
                }
                std::fs::write(&path, body).map_err(unavailable)
            }
        }
    }

    /// Closes and deletes a tenant's database files (the registry entry is the caller's);
    /// in S3 mode its objects too.
    pub fn drop_tenant_db(&self, tenant_id: &str) -> Result<()> {
        let open = lock(&self.inner.open).remove(tenant_id);
        match open {
            Some(db) => db.db.destroy(),
            None => match self.tenant_replica(tenant_id) {
                Some(r) => {
                    if let Err(e) = r.delete_all() {
                        tracing::warn!(error = %e, "could not delete a tenant's S3 objects");
                    }
                    replica::remove_database_files(&self.tenant_path(tenant_id))
                }
                None => replica::remove_database_files(&self.tenant_path(tenant_id)),
            },
        }
    }
}

/// One tenant's database: a writer connection and a pool of readers (see [`Database`]).
pub struct TenantDb {
    id: String,
    db: Database,
}

impl TenantDb {
    /// The tenant this database belongs to.
    pub fn tenant_id(&self) -> &str {
        &self.id
    }

    /// Runs `f` inside one write transaction and commits it; on error nothing is applied.
    /// `f` may be called more than once (see the module invariants).
    pub async fn write<T, F>(self: &Arc<Self>, f: F) -> Result<T>
    where
        F: Fn(&Transaction<'_>) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let db = self.clone();
        run_blocking(move || db.write_blocking(f)).await
    }

    /// [`TenantDb::write`] for callers already off the async runtime (seeding, benchmarks).
    pub fn write_blocking<T, F>(&self, f: F) -> Result<T>
    where
        F: Fn(&Transaction<'_>) -> Result<T>,
    {
        self.db.write(f)
    }

    /// Runs `f` on a read connection; it sees every write committed before it started.
    pub async fn read<T, F>(self: &Arc<Self>, f: F) -> Result<T>
    where
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let db = self.clone();
        run_blocking(move || db.read_blocking(f)).await
    }

    /// [`TenantDb::read`] for callers already off the async runtime.
    pub fn read_blocking<T, F>(&self, f: F) -> Result<T>
    where
        F: FnOnce(&Connection) -> Result<T>,
    {
        self.db.read(f)
    }
}

/// Runs blocking database work on tokio's blocking pool.
async fn run_blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Internal(format!("database task failed: {e}")))?
}

/// Locks a mutex, recovering from poisoning: every critical section here leaves the guarded
/// value consistent (SQLite rolls back an unfinished transaction when its guard drops).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
