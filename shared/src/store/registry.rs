//! The registry: which tenants exist and which credentials open them. Secrets are stored only
//! as SHA-256 hashes (they are long random strings, so a fast hash is enough) and compared in
//! constant time. No clear secret is stored here: the token signing secret comes from the
//! configuration (see `config::Config::token_secret`), never from the registry or the bucket.
//!
//! The registry is a SQLite database like a tenant's and replicates to S3 the same way, so in
//! S3 mode every process sees the same tenants and credentials (writes may re-run their
//! closure after a lost race; reads first catch up with S3).
//!
//! Known tenants (S3 mode): credentials never change after a tenant is created (a reset keeps
//! them), so once this process has seen a tenant's credentials it keeps them in memory and
//! authenticates that tenant with no S3 request. A deletion elsewhere becomes visible through
//! the tenant's tombstone (its next read or write), which makes the store [`Registry::forget`]
//! it. Unknown credentials cost one registry read (one GET when the registry is current).
//!
//! Schema versions: the registry's schema is a list of migrations ([`MIGRATIONS`]), run
//! like the tenant schema's under `sqlite::exclusively` (servers opening one data directory
//! together apply each once), with `PRAGMA user_version` counting them; a registry of a
//! newer version than this build knows is refused, as a tenant's is. A registry made before
//! there were versions is recognised by its tables and stamped ([`UNVERSIONED`]). Log
//! entries name the schema version that wrote them; a migration keeps the tables and
//! columns older entries name, so they replay.

use super::database::Database;
use super::idempotency::{self, Answer, Found, KeyScope};
use super::replica::Replica;
use super::sqlite;
use crate::auth::{self, Credentials};
use crate::{Error, Result};
use rusqlite::{params, OptionalExtension};
use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A tenant as the registry knows it (no secrets).
#[derive(Debug, Clone, Serialize, PartialEq, Eq, utoipa::ToSchema)]
#[schema(as = Tenant)]
pub struct TenantRecord {
    /// Stable identifier, e.g. `t_5f2c...`.
    pub id: String,
    /// Unique, human-chosen name; also the HTTP Basic username.
    pub name: String,
    /// IANA time zone the tenant's date-times are rendered in.
    pub time_zone: String,
    /// RFC 3339 creation time (UTC).
    #[schema(format = DateTime)]
    pub created_at: String,
}

/// The registry database.
pub struct Registry {
    db: Database,
    /// Tenants whose credentials this process has seen (S3 mode only; `None` locally, where a
    /// lookup is a local SQLite query anyway).
    known: Option<Mutex<Known>>,
    /// Most tenants registered at once (see [`Registry::register`]).
    max_tenants: AtomicUsize,
}

/// Most tenants the sandbox holds unless `SANDBOX_MAX_TENANTS` says otherwise: far above a
/// team's use, low enough that the registry and its list stay small.
pub const DEFAULT_MAX_TENANTS: usize = 1000;

/// Credentials seen before, by what a request presents.
#[derive(Default)]
struct Known {
    /// By API key hash.
    by_key: HashMap<String, TenantRecord>,
    /// By Basic username: the password hash and the tenant.
    by_user: HashMap<String, (String, TenantRecord)>,
    /// By tenant id (bearer tokens name it).
    by_id: HashMap<String, TenantRecord>,
}

/// The registry's schema migrations, applied in order by [`sqlite::migrate_with`] (`PRAGMA
/// user_version` records how many ran). Append new files; never edit one that has shipped.
const MIGRATIONS: &[(&str, &str)] = &[
    (
        "registry_0001_tenants",
        include_str!("migrations/registry/0001_tenants.sql"),
    ),
    // Idempotency keys of the admin API's registry writes (a tenant's creation, fork or
    // deletion): the tenant schema's table, one declaration for both, kept here by the
    // server's clock. The answer's body is sealed (`web::idempotency`): a creation's answer
    // holds the tenant's clear credentials.
    (
        "registry_0002_idempotency_keys",
        include_str!("migrations/0010_idempotency_keys.sql"),
    ),
    (
        "registry_0003_idempotency_keys_tenant",
        include_str!("migrations/registry/0003_idempotency_keys_tenant.sql"),
    ),
];

/// The version a registry made before its schema had versions stands at. Such a registry
/// (`user_version` 0, with an `idempotency_keys` table) ran at every open one unversioned
/// script holding every table of versions 1 to 3, as they declare them; it is stamped at 3
/// and later migrations run on it as on any other. One older than idempotency keys (no such
/// table) runs them all: version 1 creates only what it lacks.
const UNVERSIONED: usize = 3;

/// Brings the registry on `conn` to the newest version of [`MIGRATIONS`].
fn migrate(conn: &mut rusqlite::Connection) -> Result<()> {
    sqlite::exclusively(conn, |tx| {
        let version: usize = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
        let unversioned = version == 0
            && tx
                .prepare(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'idempotency_keys'",
                )?
                .exists([])?;
        if unversioned {
            tx.pragma_update(None, "user_version", UNVERSIONED)?;
        }
        Ok(())
    })?;
    sqlite::migrate_with(conn, MIGRATIONS)
}

/// Inserts `key`'s row (if any) in a registry write about tenant `tenant_id`.
fn insert_key(
    tx: &rusqlite::Transaction<'_>,
    key: Option<&KeyScope>,
    tenant_id: &str,
) -> Result<()> {
    let Some(key) = key else { return Ok(()) };
    idempotency::insert_at(tx, key, crate::time::now())?;
    tx.execute(
        "UPDATE idempotency_keys SET tenant_id = ?1 WHERE key = ?2 AND request_id = ?3",
        params![tenant_id, key.key(), key.request_id()],
    )?;
    Ok(())
}

/// Removes tenant `id` and its credentials in a registry write; whether it existed.
fn remove_tenant(tx: &rusqlite::Transaction<'_>, id: &str) -> Result<bool> {
    tx.execute("DELETE FROM credentials WHERE tenant_id = ?1", [id])?;
    Ok(tx.execute("DELETE FROM tenants WHERE id = ?1", [id])? > 0)
}

const TENANT_COLUMNS: &str = "t.id, t.name, t.time_zone, t.created_at";

fn tenant_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<TenantRecord> {
    Ok(TenantRecord {
        id: r.get(0)?,
        name: r.get(1)?,
        time_zone: r.get(2)?,
        created_at: r.get(3)?,
    })
}

impl Registry {
    /// Opens (creating if needed) the registry database at `path`.
    pub fn open(path: &Path) -> Result<Registry> {
        Registry::open_with(path, None)
    }

    /// Opens the registry at `path`, replicated to S3 when `replica` is given.
    pub(crate) fn open_with(path: &Path, replica: Option<Replica>) -> Result<Registry> {
        let known = replica.is_some().then(|| Mutex::new(Known::default()));
        let db = Database::open(path, migrate, replica)?;
        Ok(Registry {
            db,
            known,
            max_tenants: AtomicUsize::new(DEFAULT_MAX_TENANTS),
        })
    }

    /// Registers a tenant with fresh credentials; the clear-text secrets are returned once
    /// and never stored. A name already in use is a conflict.
    pub fn create_tenant(
        &self,
        name: &str,
        time_zone: &str,
    ) -> Result<(TenantRecord, Credentials)> {
        self.create_tenant_keyed(name, time_zone, None)
    }

    /// [`Registry::create_tenant`] of an admin request with an idempotency key (see
    /// [`Registry::register_keyed`]).
    pub fn create_tenant_keyed(
        &self,
        name: &str,
        time_zone: &str,
        key: Option<&KeyScope>,
    ) -> Result<(TenantRecord, Credentials)> {
        let (record, creds) = Registry::new_tenant(name, time_zone);
        self.register_keyed(&record, &creds, key)?;
        Ok((record, creds))
    }

    /// A new tenant's record (fresh id, created now) and fresh credentials, not registered
    /// yet: a fork writes the tenant's data under its id before [`Registry::register`]
    /// makes it reachable.
    pub fn new_tenant(name: &str, time_zone: &str) -> (TenantRecord, Credentials) {
        let record = TenantRecord {
            id: auth::new_tenant_id(),
            name: name.to_string(),
            time_zone: time_zone.to_string(),
            created_at: crate::time::to_storage(crate::time::now()),
        };
        let creds = Credentials::generate(name);
        (record, creds)
    }

    /// Sets the most tenants [`Registry::register`] admits (the configured bound).
    pub fn set_max_tenants(&self, max: usize) {
        self.max_tenants.store(max, Ordering::Relaxed);
    }

    /// Registers `record` with `creds` (only their hashes are stored). A name already in
    /// use is a conflict, and so is a tenant beyond the configured most (counted on the
    /// write's transaction, so concurrent creations cannot pass it together).
    pub fn register(&self, record: &TenantRecord, creds: &Credentials) -> Result<()> {
        self.register_keyed(record, creds, None)
    }

    /// [`Registry::register`] of an admin request with an idempotency key: the key's row is
    /// inserted by the registration's own transaction (so it is replicated in the same log
    /// entry), naming the tenant; `key` is then marked written.
    pub fn register_keyed(
        &self,
        record: &TenantRecord,
        creds: &Credentials,
        key: Option<&KeyScope>,
    ) -> Result<()> {
        let name = record.name.as_str();
        let max = self.max_tenants.load(Ordering::Relaxed);
        self.db.write(|tx| {
            let count: i64 = tx.query_row("SELECT COUNT(*) FROM tenants", [], |r| r.get(0))?;
            if usize::try_from(count).unwrap_or(usize::MAX) >= max {
                return Err(Error::conflict(format!(
                    "the sandbox holds its most tenants ({max}, SANDBOX_MAX_TENANTS): delete one first"
                )));
            }
            let taken: bool = tx
                .query_row("SELECT 1 FROM tenants WHERE name = ?1", [name], |_| {
                    Ok(true)
                })
                .optional()?
                .unwrap_or(false);
            if taken {
                return Err(Error::conflict(format!(
                    "a tenant named '{name}' already exists"
                )));
            }
            tx.execute(
                "INSERT INTO tenants (id, name, time_zone, created_at) VALUES (?1, ?2, ?3, ?4)",
                params![record.id, record.name, record.time_zone, record.created_at],
            )?;
            tx.execute(
                "INSERT INTO credentials (tenant_id, api_key_hash, basic_username, basic_password_hash)
                 VALUES (?1, ?2, ?3, ?4)",
                params![
                    record.id,
                    auth::hash_secret(&creds.api_key),
                    creds.username,
                    auth::hash_secret(&creds.password)
                ],
            )?;
            insert_key(tx, key, &record.id)
        })?;
        if let Some(key) = key {
            key.mark_written();
        }
        Ok(())
    }

    /// All tenants, oldest first.
    pub fn list(&self) -> Result<Vec<TenantRecord>> {
        self.db.read(|conn| {
            let mut stmt = conn.prepare(&format!(
                "SELECT {TENANT_COLUMNS} FROM tenants t ORDER BY t.created_at, t.id"
            ))?;
            let rows = stmt
                .query_map([], tenant_from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    /// One tenant by id.
    pub fn get(&self, id: &str) -> Result<Option<TenantRecord>> {
        self.db.read(|conn| {
            Ok(conn
                .query_row(
                    &format!("SELECT {TENANT_COLUMNS} FROM tenants t WHERE t.id = ?1"),
                    [id],
                    tenant_from_row,
                )
                .optional()?)
        })
    }

    /// Removes a tenant and its credentials. Returns whether it existed.
    pub fn delete(&self, id: &str) -> Result<bool> {
        self.delete_keyed(id, None)
    }

    /// [`Registry::delete`] of an admin request with an idempotency key (its row inserted by
    /// the same transaction, as [`Registry::register_keyed`] does). The keys of the tenant's
    /// creation stay: a retried creation still gets its first answer.
    pub fn delete_keyed(&self, id: &str, key: Option<&KeyScope>) -> Result<bool> {
        let existed = self.db.write(|tx| {
            let existed = remove_tenant(tx, id)?;
            insert_key(tx, key, id)?;
            Ok(existed)
        })?;
        if let Some(key) = key {
            key.mark_written();
        }
        self.forget(id);
        Ok(existed)
    }

    /// Undoes a creation that failed after its registration (its seed was refused): the
    /// tenant and the keys naming it, so that a retry with the key runs anew.
    pub fn unregister(&self, id: &str) -> Result<bool> {
        let existed = self.db.write(|tx| {
            tx.execute("DELETE FROM idempotency_keys WHERE tenant_id = ?1", [id])?;
            remove_tenant(tx, id)
        })?;
        self.forget(id);
        Ok(existed)
    }

    /// What the registry holds for idempotency key `key` (see [`idempotency::lookup`]); the
    /// body of a recorded answer as it was recorded (sealed).
    pub fn lookup_key(&self, key: &str, fingerprint: &str) -> Result<Found> {
        self.db
            .read(|conn| idempotency::lookup_at(conn, key, fingerprint, crate::time::now()))
    }

    /// Records the answer of `key`'s request on its row (see [`idempotency::record_answer`]).
    pub fn record_key_answer(&self, key: &KeyScope, answer: &Answer) -> Result<()> {
        self.db
            .write(|tx| idempotency::record_answer(tx, key, answer))
    }

    /// Forgets the cached credentials of a tenant (deleted here, or its tombstone was seen).
    pub fn forget(&self, id: &str) {
        if let Some(known) = &self.known {
            let mut k = super::lock(known);
            k.by_key.retain(|_, t| t.id != id);
            k.by_user.retain(|_, (_, t)| t.id != id);
            k.by_id.remove(id);
        }
    }

    fn remember(&self, update: impl FnOnce(&mut Known)) {
        if let Some(known) = &self.known {
            update(&mut super::lock(known));
        }
    }

    fn recall<T>(&self, look: impl FnOnce(&Known) -> Option<T>) -> Option<T> {
        self.known.as_ref().and_then(|k| look(&super::lock(k)))
    }

    /// The tenant a bearer token names, for verifying it: from the known tenants, else one
    /// registry read (remembered when found).
    pub fn tenant_for_token(&self, id: &str) -> Result<Option<TenantRecord>> {
        if let Some(t) = self.recall(|k| k.by_id.get(id).cloned()) {
            return Ok(Some(t));
        }
        let found = self.get(id)?;
        if let Some(t) = &found {
            self.remember(|k| {
                k.by_id.insert(t.id.clone(), t.clone());
            });
        }
        Ok(found)
    }

    /// The tenant an API key opens when this process can tell without I/O or waiting (a key
    /// seen before: in S3 mode among the known tenants, locally in the registry's memo at its
    /// current version); `None` means ask [`Registry::find_by_api_key`].
    pub fn recall_api_key(&self, api_key: &str) -> Option<TenantRecord> {
        let hash = auth::hash_secret(api_key);
        if let Some(t) = self.recall(|k| k.by_key.get(&hash).cloned()) {
            return Some(t);
        }
        self.db
            .recall::<TenantRecord>(&api_key_memo(&hash))
            .map(|t| (*t).clone())
    }

    /// The tenant an API key opens. The lookup is by the key's hash, so timing reveals
    /// nothing about stored keys; the final comparison is constant-time all the same.
    pub fn find_by_api_key(&self, api_key: &str) -> Result<Option<TenantRecord>> {
        let hash = auth::hash_secret(api_key);
        if let Some(t) = self.recall(|k| k.by_key.get(&hash).cloned()) {
            return Ok(Some(t));
        }
        // Read before the lookup (see the memo's invariants in database.rs).
        let version = self.db.memo_version();
        let found = self.db.read(|conn| {
            Ok(conn
                .query_row(
                    &format!(
                        "SELECT {TENANT_COLUMNS}, c.api_key_hash FROM tenants t
                         JOIN credentials c ON c.tenant_id = t.id WHERE c.api_key_hash = ?1"
                    ),
                    [&hash],
                    |r| Ok((tenant_from_row(r)?, r.get::<_, String>(4)?)),
                )
                .optional()?)
        })?;
        let found = found.and_then(|(t, stored)| auth::ct_eq(&stored, &hash).then_some(t));
        if let (Some(t), Some(version)) = (&found, version) {
            self.db
                .remember(version, api_key_memo(&hash), Arc::new(t.clone()));
        }
        if let Some(t) = &found {
            self.remember(|k| {
                k.by_key.insert(hash, t.clone());
            });
        }
        Ok(found)
    }

    /// The tenant HTTP Basic credentials open when this process can tell without I/O or
    /// waiting (as [`Registry::recall_api_key`]); `None` means ask
    /// [`Registry::find_by_basic`]. A known username with a wrong password is not answered
    /// here: the lookup refuses it.
    pub fn recall_basic(&self, username: &str, password: &str) -> Option<TenantRecord> {
        let given = auth::hash_secret(password);
        if let Some((stored, t)) = self.recall(|k| k.by_user.get(username).cloned()) {
            return auth::ct_eq(&stored, &given).then_some(t);
        }
        self.db
            .recall::<TenantRecord>(&basic_memo(username, &given))
            .map(|t| (*t).clone())
    }

    /// The tenant HTTP Basic credentials open. An unknown username still costs one hash
    /// comparison, so response time does not tell which usernames exist.
    pub fn find_by_basic(&self, username: &str, password: &str) -> Result<Option<TenantRecord>> {
        let given = auth::hash_secret(password);
        if let Some((stored, t)) = self.recall(|k| k.by_user.get(username).cloned()) {
            // A known username: its password hash never changes, so no S3 request is needed
            // to accept or refuse.
            return Ok(auth::ct_eq(&stored, &given).then_some(t));
        }
        // Read before the lookup (see the memo's invariants in database.rs).
        let version = self.db.memo_version();
        let found = self.db.read(|conn| {
            Ok(conn
                .query_row(
                    &format!(
                        "SELECT {TENANT_COLUMNS}, c.basic_password_hash FROM tenants t
                         JOIN credentials c ON c.tenant_id = t.id WHERE c.basic_username = ?1"
                    ),
                    [username],
                    |r| Ok((tenant_from_row(r)?, r.get::<_, String>(4)?)),
                )
                .optional()?)
        })?;
        match found {
            Some((t, stored)) => {
                let accepted = auth::ct_eq(&stored, &given).then(|| t.clone());
                if let (Some(t), Some(version)) = (&accepted, version) {
                    self.db
                        .remember(version, basic_memo(username, &given), Arc::new(t.clone()));
                }
                self.remember(|k| {
                    k.by_user.insert(username.to_string(), (stored, t));
                });
                Ok(accepted)
            }
            None => {
                let _ = auth::ct_eq(&auth::hash_secret(""), &given);
                Ok(None)
            }
        }
    }
}

/// The registry memo's key of the tenant a Basic username and password (by its hash) open.
fn basic_memo(username: &str, password_hash: &str) -> String {
    format!("basic {password_hash} {username}")
}

/// The registry memo's key of the tenant an API key (by its hash) opens.
fn api_key_memo(hash: &str) -> String {
    format!("api-key {hash}")
}
