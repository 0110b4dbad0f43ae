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

pub mod registry;
pub mod sqlite;

use crate::{Error, Result};
pub use registry::{Registry, TenantRecord};
use rusqlite::{Connection, Transaction};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Most idle read connections kept per tenant.
const MAX_IDLE_READERS: usize = 4;

/// The store: the registry and a cache of open tenant databases.
#[derive(Clone)]
pub struct Store {
    inner: Arc<StoreInner>,
}

struct StoreInner {
    data_dir: PathBuf,
    registry: Registry,
    open: Mutex<HashMap<String, Arc<TenantDb>>>,
}

impl Store {
    /// Opens the store in `data_dir`, creating the directory and registry when absent.
    pub fn open(data_dir: &Path) -> Result<Store> {
        std::fs::create_dir_all(data_dir.join("tenants"))?;
        let registry = Registry::open(&data_dir.join("registry.db"))?;
        Ok(Store {
            inner: Arc::new(StoreInner {
                data_dir: data_dir.to_path_buf(),
                registry,
                open: Mutex::new(HashMap::new()),
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

    fn tenant_path(&self, tenant_id: &str) -> PathBuf {
        self.inner
            .data_dir
            .join("tenants")
            .join(format!("{tenant_id}.db"))
    }

    /// The database of a registered tenant, opened and migrated on first use.
    pub fn tenant_db(&self, tenant_id: &str) -> Result<Arc<TenantDb>> {
        let mut open = lock(&self.inner.open);
        if let Some(db) = open.get(tenant_id) {
            return Ok(db.clone());
        }
        let db = Arc::new(TenantDb::open(tenant_id, &self.tenant_path(tenant_id))?);
        open.insert(tenant_id.to_string(), db.clone());
        Ok(db)
    }

    /// Closes and deletes a tenant's database files (the registry entry is the caller's).
    pub fn drop_tenant_db(&self, tenant_id: &str) -> Result<()> {
        lock(&self.inner.open).remove(tenant_id);
        let path = self.tenant_path(tenant_id);
        for suffix in ["", "-wal", "-shm"] {
            let mut p = path.clone().into_os_string();
            p.push(suffix);
            match std::fs::remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

/// One tenant's database: a writer connection and a pool of readers.
pub struct TenantDb {
    id: String,
    path: PathBuf,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
}

impl TenantDb {
    fn open(id: &str, path: &Path) -> Result<TenantDb> {
        let mut writer = sqlite::open(path)?;
        sqlite::migrate(&mut writer)?;
        Ok(TenantDb {
            id: id.to_string(),
            path: path.to_path_buf(),
            writer: Mutex::new(writer),
            readers: Mutex::new(Vec::new()),
        })
    }

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
        let mut conn = lock(&self.writer);
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
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
        let conn = match lock(&self.readers).pop() {
            Some(c) => c,
            None => sqlite::open(&self.path)?,
        };
        // A read transaction gives the closure one consistent snapshot across its queries.
        conn.execute_batch("BEGIN DEFERRED")?;
        let out = f(&conn);
        let _ = conn.execute_batch("COMMIT");
        let mut pool = lock(&self.readers);
        if pool.len() < MAX_IDLE_READERS {
            pool.push(conn);
        }
        out
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
