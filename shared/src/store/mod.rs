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
//! - Tenants are opened one slot each ([`Store::tenant_db`]): a slow cold start blocks only
//!   its own tenant; concurrent first requests share one open; a failed open is answered 503
//!   for [`OPEN_RETRY_AFTER`] without retrying. Every call into the store blocks (SQLite,
//!   S3), so async code goes through [`blocking`].
//! - Deleting a tenant: [`Store::tombstone_tenant`], then the registry entry, then
//!   [`Store::drop_tenant_db`] (see docs/storage.md, "Deleting a tenant").
//! - The store reads no environment: its settings ([`S3Config`], `None` for local files
//!   only) are passed to [`Store::open_with`] by whoever composes the process (the config).
//! - With an S3 bucket configured, S3 is the source of truth for every tenant database and
//!   for the registry, and the local files are a cache private to each store (`cache.rs` says
//!   who owns which directory, [`replica`] states the protocol, [`capture`] how changes are
//!   recorded, [`s3`] the bucket calls).

mod aws;
mod bucket_access;
mod cache;
pub mod capture;
pub mod checkpoints;
mod database;
pub mod idempotency;
/// The in-memory bucket: for the simulation (`cfg(test)`) and other crates' tests (feature
/// `test-support`, which the end-to-end tests enable); never in a build that serves.
#[cfg(any(test, feature = "test-support"))]
pub mod memory;
pub mod object_store;
pub use database::{write_memo, MemoScope};
pub mod registry;
pub mod replica;
mod request;
pub use request::{
    assume, blocking, request_scope, request_scope_until, settle_premise, PremiseCheck,
    PremiseState,
};
pub mod s3;
#[cfg(test)]
mod simulation;
pub mod sqlite;

use crate::{Error, Result};
use database::Database;
pub use registry::{Registry, TenantRecord};
use replica::Replica;
use rusqlite::{Connection, Transaction};
pub use s3::S3Config;
use serde::{de::DeserializeOwned, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// How long a failed tenant open is remembered (answered 503 without trying again).
pub const OPEN_RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(5);

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
    /// Brings a tenant database to the schema this build serves ([`sqlite::migrate`]).
    tenant_schema: TenantSchema,
    /// Tenants this process has opened (or failed to open). The map's lock is only held to
    /// find or insert a slot; opening runs under the slot's own lock (see [`Store::tenant_db`]).
    open: Mutex<HashMap<String, Arc<Slot>>>,
    /// The token secret kept in the data dir, once read (see [`Store::local_token_secret`]).
    token_secret: OnceLock<Vec<u8>>,
    /// The most checkpoints a tenant keeps ([`checkpoints::MAX_CHECKPOINTS`] unless a test
    /// lowered it: [`Store::set_max_checkpoints`]).
    max_checkpoints: std::sync::atomic::AtomicUsize,
    /// S3 mode: this process's claim on `files_dir`; declared last so that it is released
    /// (and the directory removed) after every database in it was closed.
    _cache: Option<cache::CacheDir>,
}

/// What brings a tenant database to the schema a store serves.
pub(crate) type TenantSchema = fn(&mut rusqlite::Connection) -> Result<()>;

/// One tenant's place in the open map. Its mutex serializes the opening of that tenant only:
/// concurrent first requests for one tenant wait for (and share) one open, while requests for
/// other tenants never touch it.
#[derive(Default)]
struct Slot {
    state: Mutex<SlotState>,
}

#[derive(Default)]
enum SlotState {
    #[default]
    Closed,
    Open(Arc<TenantDb>),
    /// The last open failed at `at`; until [`OPEN_RETRY_AFTER`] has passed, requests get the
    /// same error at once instead of downloading the snapshot again.
    Failed {
        at: Instant,
        error: Error,
    },
}

/// The file of the token secret generated for a data dir without `SANDBOX_TOKEN_SECRET`. It
/// lives beside `registry.db`/`s3-cache`, never in the bucket.
pub const TOKEN_SECRET_FILE: &str = "token-secret";

impl Store {
    /// Opens the store: local files only with `s3 = None`; otherwise S3 is the source of
    /// truth and a directory of `data_dir/s3-cache/` private to this store holds its cache,
    /// built from S3 (see `cache.rs` for who owns which directory, [`replica`] for the
    /// protocol). Two stores never share a cache, even in one process.
    pub fn open_with(data_dir: &Path, s3: Option<S3Config>) -> Result<Store> {
        let bucket = match s3 {
            None => None,
            Some(config) => {
                let compact_every = config.compact_every;
                Some((s3::Bucket::connect(config)?, compact_every))
            }
        };
        Store::open_on(data_dir, bucket)
    }

    /// [`Store::open_with`] on a bucket already built (with its snapshot interval), over any
    /// [`object_store::ObjectStore`]: the simulation's in-memory one uses this.
    pub fn open_on(data_dir: &Path, bucket: Option<(s3::Bucket, u64)>) -> Result<Store> {
        Store::open_on_schema(data_dir, bucket, sqlite::migrate)
    }

    /// [`Store::open_on`] with tenant databases brought to `tenant_schema` instead of the
    /// product's schema: the simulation's tenants hold only the tables it writes, so that a
    /// cold start parses three tables, not the product's sixty.
    pub(crate) fn open_on_schema(
        data_dir: &Path,
        bucket: Option<(s3::Bucket, u64)>,
        tenant_schema: TenantSchema,
    ) -> Result<Store> {
        let (files_dir, cache) = match &bucket {
            None => (data_dir.to_path_buf(), None),
            Some(_) => {
                let cache = cache::CacheDir::claim(&data_dir.join("s3-cache"))?;
                (cache.path().to_path_buf(), Some(cache))
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
                tenant_schema,
                open: Mutex::new(HashMap::new()),
                token_secret: OnceLock::new(),
                max_checkpoints: std::sync::atomic::AtomicUsize::new(checkpoints::MAX_CHECKPOINTS),
                _cache: cache,
            }),
        })
    }

    /// Runs `f` in a write transaction of a new tenant database that lives in memory and is
    /// dropped after: what creating a tenant would write, rehearsed (a dry run) without
    /// registering anything.
    pub async fn rehearse_new_tenant<T, F>(&self, f: F) -> Result<T>
    where
        F: FnOnce(&Transaction<'_>) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let schema = self.inner.tenant_schema;
        blocking(move || {
            let mut conn = rusqlite::Connection::open_in_memory()?;
            sqlite::configure(&conn)?;
            schema(&mut conn)?;
            let tx = conn.transaction()?;
            f(&tx)
        })
        .await
    }

    /// The registry of tenants and credentials.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The data directory this store lives in.
    pub fn data_dir(&self) -> &Path {
        &self.inner.data_dir
    }

    /// The SQLite file of tenant `tenant_id` (in S3 mode, its cached copy). Tests probe it
    /// (`e2e::wait_until_writing`) and benches weigh it; only the store opens it.
    pub fn tenant_path(&self, tenant_id: &str) -> PathBuf {
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

    /// The database of a registered tenant, opened and migrated on first use. Blocking (S3
    /// and SQLite): call it off the async workers ([`blocking`]).
    ///
    /// Only this tenant's slot is locked while it opens, so a slow cold start (a snapshot
    /// download held by S3) delays this tenant's requests and no other's. A failed open is
    /// remembered for [`OPEN_RETRY_AFTER`] and answered as unavailable (503) without trying
    /// again. A tenant whose tombstone was seen is forgotten and answered as not found.
    pub fn tenant_db(&self, tenant_id: &str) -> Result<Arc<TenantDb>> {
        let slot = lock(&self.inner.open)
            .entry(tenant_id.to_string())
            .or_default()
            .clone();
        let mut state = lock(&slot.state);
        match &*state {
            SlotState::Open(db) if db.db.is_deleted() => {
                drop(state);
                self.forget_tenant(tenant_id);
                return Err(deleted(tenant_id));
            }
            SlotState::Open(db) => return Ok(db.clone()),
            SlotState::Failed { at, error } if at.elapsed() < OPEN_RETRY_AFTER => {
                return Err(error.clone());
            }
            SlotState::Failed { .. } | SlotState::Closed => {}
        }
        let opened = Database::open(
            &self.tenant_path(tenant_id),
            self.inner.tenant_schema,
            self.tenant_replica(tenant_id),
        );
        match opened {
            Ok(db) => {
                let db = Arc::new(TenantDb {
                    id: tenant_id.to_string(),
                    db,
                });
                *state = SlotState::Open(db.clone());
                Ok(db)
            }
            Err(Error::NotFound(_)) => {
                // Only a tombstone makes an open fail as not found.
                drop(state);
                self.forget_tenant(tenant_id);
                Err(deleted(tenant_id))
            }
            Err(e) => {
                // A tenant that cannot be opened now is a storage outage (503), not a bug:
                // unreadable objects, a gap, a local file that cannot be written.
                let e = match e {
                    Error::Internal(m) => Error::Unavailable(format!("{tenant_id}: {m}")),
                    other => other,
                };
                tracing::warn!(tenant = tenant_id, error = %e, "could not open a tenant; answering 503 for a while");
                *state = SlotState::Failed {
                    at: Instant::now(),
                    error: e.clone(),
                };
                Err(e)
            }
        }
    }

    /// The database of a tenant this process has open, without waiting or I/O (fit for async
    /// code): `None` when it is not open yet, is being opened right now, failed, or its
    /// tombstone was seen; then [`Store::tenant_db`] decides, on the blocking pool.
    pub fn open_tenant_db(&self, tenant_id: &str) -> Option<Arc<TenantDb>> {
        let slot = lock(&self.inner.open).get(tenant_id)?.clone();
        let state = slot.state.try_lock().ok()?;
        match &*state {
            SlotState::Open(db) if !db.db.is_deleted() => Some(db.clone()),
            _ => None,
        }
    }

    /// Forgets an open tenant and its cached credentials, and removes its local cache files
    /// (after its tombstone was seen, or its deletion here).
    fn forget_tenant(&self, tenant_id: &str) {
        lock(&self.inner.open).remove(tenant_id);
        self.inner.registry.forget(tenant_id);
        if self.inner.bucket.is_some() {
            let _ = replica::remove_database_files(&self.tenant_path(tenant_id));
        }
    }

    /// First step of deleting a tenant: in S3 mode, appends its tombstone to its log, so that
    /// every environment stops serving it and appending to it at its next freshness check
    /// (local mode: nothing to do). Idempotent: a tenant already tombstoned is fine.
    pub fn tombstone_tenant(&self, tenant_id: &str) -> Result<()> {
        if self.inner.bucket.is_none() {
            return Ok(());
        }
        match self.tenant_db(tenant_id) {
            Ok(db) => db.db.tombstone(),
            Err(Error::NotFound(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The token signing secret kept in `<data_dir>/token-secret` (created on first use with
    /// 64 random hex digits, mode 0600), for servers run without `SANDBOX_TOKEN_SECRET`. It is
    /// never stored in the registry or the bucket. Deleting the file (and restarting) rotates
    /// it, which invalidates every token issued before.
    pub fn local_token_secret(&self) -> Result<Vec<u8>> {
        if let Some(s) = self.inner.token_secret.get() {
            return Ok(s.clone());
        }
        let secret = read_or_create_secret(&self.inner.data_dir.join(TOKEN_SECRET_FILE))?;
        Ok(self.inner.token_secret.get_or_init(|| secret).clone())
    }

    /// Stores a file that belongs to a tenant beside its database (e.g. an analytics export):
    /// `<data_dir>/tenants/<id>/<name>` locally, `<prefix>/tenants/<id>/<name>` in S3 mode.
    /// `name` is a relative path of `A-Z a-z 0-9 - _ . /` not under `log/`, `snapshots/`,
    /// `checkpoints/`, `restores/` or `undo/` (the store's own objects).
    pub fn put_tenant_file(&self, tenant_id: &str, name: &str, body: &[u8]) -> Result<()> {
        let valid = !name.is_empty()
            && !name.starts_with('/')
            && !name.split('/').any(|part| part.is_empty() || part == "..")
            && !name.starts_with("log/")
            && !name.starts_with("snapshots/")
            && !name.starts_with("checkpoints/")
            && !name.starts_with("restores/")
            && !name.starts_with("undo/")
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

    /// Closes and deletes a tenant's data (the registry entry is the caller's): the local
    /// database files and exports (`<data_dir>/tenants/<id>/`); in S3 mode every object under
    /// `tenants/<id>/`: exports and snapshots are deleted, log entries are overwritten by
    /// tombstones (a deleted log key would read as "up to date" to an environment behind it,
    /// see docs/storage.md), and checkpoint files that forks still name stay until their
    /// last fork lets go (a fork lets go of its own first). Call [`Store::tombstone_tenant`]
    /// first.
    pub fn drop_tenant_db(&self, tenant_id: &str) -> Result<()> {
        lock(&self.inner.open).remove(tenant_id);
        self.inner.registry.forget(tenant_id);
        let erased = match self.tenant_replica(tenant_id) {
            Some(r) => self.erase_tenant_objects(&r),
            None => Ok(()),
        };
        replica::remove_database_files(&self.tenant_path(tenant_id))?;
        let exports = self.inner.data_dir.join("tenants").join(tenant_id);
        match std::fs::remove_dir_all(&exports) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        erased
    }
}

/// The error of a tenant whose tombstone was seen.
fn deleted(tenant_id: &str) -> Error {
    Error::NotFound(format!("tenant {tenant_id} has been deleted"))
}

/// Reads the secret at `path`, creating it first when absent. Creation is atomic (a full
/// temporary file hard-linked into place), so concurrent first starts agree on one secret.
fn read_or_create_secret(path: &Path) -> Result<Vec<u8>> {
    let read = |path: &Path| -> Result<Option<Vec<u8>>> {
        match std::fs::read_to_string(path) {
            Ok(s) if s.trim().len() >= crate::auth::MIN_TOKEN_SECRET_LEN => {
                Ok(Some(s.trim().as_bytes().to_vec()))
            }
            Ok(_) => Err(Error::Internal(format!(
                "{} holds fewer than {} characters",
                path.display(),
                crate::auth::MIN_TOKEN_SECRET_LEN
            ))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    };
    if let Some(secret) = read(path)? {
        return Ok(secret);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp-{}", uuid::Uuid::new_v4()));
    {
        use std::io::Write;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&tmp)?;
        file.write_all(hex::encode(crate::auth::random_bytes(32)).as_bytes())?;
        file.sync_all()?;
    }
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e.into()),
    }
    read(path)?.ok_or_else(|| Error::Internal(format!("{} vanished", path.display())))
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

    /// Whether a snapshot of this database is being made or uploaded in the background (S3
    /// mode; see [`Replica::is_compacting`]): once false after the last write, the tenant's
    /// snapshots in the bucket stay as they are.
    pub fn is_compacting(&self) -> bool {
        self.db.replica().is_some_and(Replica::is_compacting)
    }

    /// Runs `f` inside one write transaction and commits it; on error nothing is applied.
    /// `f` may be called more than once (see the module invariants). Inside a
    /// [`request_scope`] that already brought the copy up to date, the first attempt skips
    /// its catch-up (the conditional PUT still refuses a slot taken meanwhile). `T` is
    /// serializable because a keyed write stores its result with its key (see
    /// `idempotency`): whoever sees the write can render its answer.
    pub async fn write<T, F>(self: &Arc<Self>, f: F) -> Result<T>
    where
        F: Fn(&Transaction<'_>) -> Result<T> + Send + 'static,
        T: Serialize + DeserializeOwned + Send + 'static,
    {
        let db = self.clone();
        let checked = self.fresh_in_request();
        // A premise the request took on the local copy is checked inside the transaction,
        // before the closure: the PUT that lands the entry proves it held on the newest
        // state (see `request::Premise`).
        let guarded = match request::guard(&self.id) {
            request::Guard::Free => None,
            request::Guard::Refuse(e) => return Err(e),
            request::Guard::Check(g) => Some(Arc::new(g)),
        };
        let f = {
            let guarded = guarded.clone();
            move |tx: &Transaction<'_>| {
                if let Some(g) = &guarded {
                    g.check(tx)?;
                }
                f(tx)
            }
        };
        let record = |refused: Option<&Error>| {
            if let Some(g) = &guarded {
                request::record_guarded(g, refused);
            }
        };
        // Inside an idempotency scope of this tenant, the key's row joins the transaction
        // (see `idempotency`): it is applied, logged and acknowledged with the data or not
        // at all.
        let Some(key) = idempotency::current_for(&self.id) else {
            let written = blocking(move || db.db.write_grouped(!checked, f)).await;
            record(written.as_ref().err());
            let out = written?;
            self.mark_fresh_in_request();
            return Ok(out);
        };
        if key.resuming() {
            // A retry rendering the answer of a write applied under its key: that write's
            // result (stored on the key's row) answers; nothing runs again.
            let out = key.take_result::<T>().ok_or_else(|| {
                Error::Conflict(format!(
                    "a request with Idempotency-Key '{}' was applied, but its answer was not recorded; it is not applied again",
                    key.shown()
                ))
            })?;
            key.mark_written();
            return Ok(out);
        }
        // The result rides on the key's row, in the same transaction (the group commit
        // member's savepoint): the row, the result and the data land together or not at all.
        let keyed = key.clone();
        let f = move |tx: &Transaction<'_>| {
            let out = f(tx)?;
            idempotency::insert(tx, &keyed)?;
            let result = serde_json::to_string(&out)
                .map_err(|e| Error::Internal(format!("a keyed write's result: {e}")))?;
            idempotency::keep_result(tx, &keyed, &result)?;
            Ok(out)
        };
        let written = blocking(move || db.db.write_grouped(!checked, f)).await;
        record(written.as_ref().err());
        let out = written?;
        self.mark_fresh_in_request();
        key.mark_written();
        Ok(out)
    }

    /// Runs `f` in a write transaction that is always rolled back (a dry run): it sees the
    /// tenant as a write would and changes nothing, its id sequences included. No
    /// idempotency key joins it: nothing is written to replay.
    pub async fn rehearse<T, F>(self: &Arc<Self>, f: F) -> Result<T>
    where
        F: FnOnce(&Transaction<'_>) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let db = self.clone();
        blocking(move || db.db.rehearse(f)).await
    }

    /// Whether the current [`request_scope`] has brought this tenant's copy up to date.
    fn fresh_in_request(&self) -> bool {
        request::is_fresh(&self.id)
    }

    /// Records that the current [`request_scope`] (if any) brought this copy up to date.
    fn mark_fresh_in_request(&self) {
        request::mark_fresh(&self.id)
    }

    /// [`TenantDb::write`] for callers already off the async runtime (seeding, benchmarks).
    pub fn write_blocking<T, F>(&self, f: F) -> Result<T>
    where
        F: Fn(&Transaction<'_>) -> Result<T>,
    {
        self.db.write(f)
    }

    /// Runs `f` on a read connection; it sees every write committed before it started, or,
    /// inside a [`request_scope`], every write acknowledged before the request began: S3
    /// is asked for newer log entries by the first read of the tenant in the request only.
    pub async fn read<T, F>(self: &Arc<Self>, f: F) -> Result<T>
    where
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let db = self.clone();
        let checked = self.fresh_in_request();
        let out = blocking(move || db.db.read_checking(!checked, f)).await?;
        self.mark_fresh_in_request();
        Ok(out)
    }

    /// The answer [`TenantDb::read_memo`] remembered under `key` at the database's current
    /// version, if any. Never blocks on I/O, so async code calls it directly (no hand-off to
    /// the blocking pool); `key` must name everything the answer depends on.
    pub fn recall<T: std::any::Any + Send + Sync>(&self, key: &str) -> Option<Arc<T>> {
        self.db.recall(key)
    }

    /// [`TenantDb::read`], remembering the answer under `key` for the database's current
    /// version (local mode; see `database.rs`): the same read at the same version is then
    /// answered by [`TenantDb::recall`]. Errors are not remembered.
    pub async fn read_memo<T, F>(self: &Arc<Self>, key: String, f: F) -> Result<Arc<T>>
    where
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
        T: std::any::Any + Send + Sync,
    {
        self.read_memo_scoped(MemoScope::Data, key, f).await
    }

    /// [`TenantDb::read_memo`] for an answer that depends on what `scope` names only (see
    /// `database.rs`): a [`MemoScope::Watched`] answer outlives writes to other tables.
    pub async fn read_memo_scoped<T, F>(
        self: &Arc<Self>,
        scope: MemoScope,
        key: String,
        f: F,
    ) -> Result<Arc<T>>
    where
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
        T: std::any::Any + Send + Sync,
    {
        if let Some(hit) = self.db.recall_scoped(scope, &key) {
            return Ok(hit);
        }
        let db = self.clone();
        // Like `read`: only the request's first read of the tenant asks S3 for newer entries.
        let checked = self.fresh_in_request();
        let value = blocking(move || {
            // Read before the read transaction begins (see the memo's invariants).
            let version = db.db.scoped_version(scope);
            let value = Arc::new(db.db.read_checking(!checked, f)?);
            if let Some(version) = version {
                db.db.remember_scoped(scope, version, key, value.clone());
            }
            Ok(value)
        })
        .await?;
        self.mark_fresh_in_request();
        Ok(value)
    }

    /// Runs `f` on the local copy as it is, without asking S3 for newer entries (in S3 mode
    /// its answer may be stale): only for an answer a later check confirms, such as a
    /// request's premise (see [`assume`]). Local mode: the same as [`TenantDb::read`].
    pub async fn read_local<T, F>(self: &Arc<Self>, f: F) -> Result<T>
    where
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let db = self.clone();
        blocking(move || db.db.read_checking(false, f)).await
    }

    /// Whether this database is replicated to S3 (S3 mode).
    pub fn is_replicated(&self) -> bool {
        self.db.replica().is_some()
    }

    /// [`TenantDb::read`] for callers already off the async runtime.
    pub fn read_blocking<T, F>(&self, f: F) -> Result<T>
    where
        F: FnOnce(&Connection) -> Result<T>,
    {
        self.db.read(f)
    }
}

/// Locks a mutex, recovering from poisoning: every critical section here leaves the guarded
/// value consistent (SQLite rolls back an unfinished transaction when its guard drops).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
