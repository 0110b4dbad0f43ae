//! The registry's schema in versioned migrations: a registry file made by the builds before
//! versions (one unversioned `CREATE TABLE IF NOT EXISTS` script run at every open, frozen
//! below as they shipped it) opens, is stamped at the version its tables stand at, and works:
//! its tenants authenticate, new tenants are created, idempotency keys are kept and
//! replayed, and its tables are those of a registry made fresh. A registry of a newer
//! version than this build knows is refused, as a tenant database is.

use super::idempotency::admin_keyed;
use e2e::ADMIN_KEY;
use reqwest::Method;
use rusqlite::Connection;
use serde_json::json;
use shared::config::Config;
use shared::store::{Registry, Store};
use shared::web::AppState;
use std::path::Path;

/// The registry's schema as the builds before versions declared it, verbatim but for a
/// tracker reference in one comment (frozen: never edit its statements; they are what
/// registries in the field were made by).
const UNVERSIONED_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS tenants (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    time_zone   TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS credentials (
    tenant_id            TEXT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    api_key_hash         TEXT NOT NULL UNIQUE,
    basic_username       TEXT NOT NULL UNIQUE,
    basic_password_hash  TEXT NOT NULL
);
-- No longer read or written (the token secret comes from the configuration); kept so that
-- older registry log entries, which inserted into it, still replay.
CREATE TABLE IF NOT EXISTS server_secrets (
    name   TEXT PRIMARY KEY,
    value  BLOB NOT NULL
);
-- Idempotency keys of the admin API's registry writes (create, fork, delete of a tenant):
-- the columns of a tenant's table (migration 0010), kept by the server's clock,
-- plus the tenant the write made or deleted. The answer's body is sealed (see
-- `web::idempotency::registry`): a creation's answer holds the tenant's clear credentials.
CREATE TABLE IF NOT EXISTS idempotency_keys (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    fingerprint TEXT NOT NULL,
    request_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    status INTEGER,
    content_type TEXT,
    headers TEXT,
    body BLOB,
    tenant_id TEXT
);
CREATE INDEX IF NOT EXISTS idempotency_keys_created ON idempotency_keys (created_at, id);
";
/// The registry's newest version (its migrations' count).
const NEWEST: i64 = 3;

const OLD_KEY: &str = "sbx_made_before_versions";
const OLD_PASSWORD: &str = "old-password";

/// A registry at `dir/registry.db` made by `schema`, holding tenant `old` (its credentials
/// [`OLD_KEY`], `old:`[`OLD_PASSWORD`]).
fn unversioned_registry(dir: &Path, schema: &str) {
    let conn = Connection::open(dir.join("registry.db")).expect("registry file");
    conn.execute_batch(schema).expect("the frozen schema");
    conn.execute(
        "INSERT INTO tenants (id, name, time_zone, created_at)
         VALUES ('t_old', 'old', 'UTC', '2026-01-01T00:00:00Z')",
        [],
    )
    .expect("tenant");
    conn.execute(
        "INSERT INTO credentials (tenant_id, api_key_hash, basic_username, basic_password_hash)
         VALUES ('t_old', ?1, 'old', ?2)",
        [
            shared::auth::hash_secret(OLD_KEY),
            shared::auth::hash_secret(OLD_PASSWORD),
        ],
    )
    .expect("credentials");
}

fn user_version(path: &Path) -> i64 {
    Connection::open(path)
        .expect("open")
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .expect("user_version")
}

/// Every table's columns (name, type, not null, default, primary key) and indexes.
fn shape(path: &Path) -> Vec<String> {
    let conn = Connection::open(path).expect("open");
    let mut out = Vec::new();
    let mut tables = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .expect("tables");
    let names: Vec<String> = tables
        .query_map([], |r| r.get(0))
        .expect("tables")
        .map(|n| n.expect("name"))
        .collect();
    for table in names {
        let mut columns = conn
            .prepare(&format!("PRAGMA table_info(\"{table}\")"))
            .expect("columns");
        let rows = columns
            .query_map([], |r| {
                Ok(format!(
                    "{table}.{}: {} notnull={} default={:?} pk={}",
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, i64>(5)?
                ))
            })
            .expect("columns");
        out.extend(rows.map(|r| r.expect("column")));
        let mut indexes = conn
            .prepare(&format!("PRAGMA index_list(\"{table}\")"))
            .expect("indexes");
        let rows = indexes
            .query_map([], |r| {
                Ok(format!(
                    "{table} index {} unique={}",
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?
                ))
            })
            .expect("indexes");
        out.extend(rows.map(|r| r.expect("index")));
    }
    out.sort();
    out
}

/// A server on `dir` whose registry was made by `schema` works, and its registry stands at
/// the newest version with the tables of a fresh one.
async fn opens_and_works(schema: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    unversioned_registry(dir.path(), schema);
    let path = dir.path().to_path_buf();
    let store = tokio::task::spawn_blocking(move || Store::open_with(&path, None))
        .await
        .expect("join")
        .expect("a registry made before versions opens");
    let state = AppState::from_parts(store, Config::new(dir.path(), Some(ADMIN_KEY.into())));
    let base = e2e::listen(state.clone()).await;

    // Its tenant authenticates as before.
    let registry = state.store.registry();
    assert_eq!(
        registry
            .find_by_api_key(OLD_KEY)
            .expect("lookup")
            .map(|t| t.name),
        Some("old".to_string())
    );
    assert!(registry
        .find_by_basic("old", OLD_PASSWORD)
        .expect("lookup")
        .is_some());

    // A keyed creation is registered, and its retry replayed (the key kept by the registry).
    let body = json!({"name": "new", "seed": "empty"});
    let first = admin_keyed(
        &base,
        Method::POST,
        "/sandbox/v1/tenants",
        &body,
        "create-new",
    )
    .await;
    assert_eq!((first.0, first.1), (201, false), "{}", first.2);
    let again = admin_keyed(
        &base,
        Method::POST,
        "/sandbox/v1/tenants",
        &body,
        "create-new",
    )
    .await;
    assert_eq!((again.0, again.1, &again.2), (201, true, &first.2));
    let names: Vec<String> = registry
        .list()
        .expect("list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["old", "new"]);
    let r = reqwest::Client::new()
        .get(format!("{base}/revenue/3/collectors?page_size=1"))
        .header("X-Api-Key", first.2["api_key"].as_str().expect("api key"))
        .send()
        .await
        .expect("collectors");
    assert_eq!(r.status(), 200, "the new tenant's key opens it");

    // The registry stands at the newest version, with a fresh registry's tables.
    let file = dir.path().join("registry.db");
    assert_eq!(user_version(&file), NEWEST);
    let fresh = tempfile::tempdir().expect("temp dir");
    Registry::open(&fresh.path().join("registry.db")).expect("a fresh registry");
    assert_eq!(shape(&file), shape(&fresh.path().join("registry.db")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_made_before_schema_versions_opens_and_works() {
    opens_and_works(UNVERSIONED_SCHEMA).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_older_than_idempotency_keys_gains_them_and_works() {
    let before_keys = UNVERSIONED_SCHEMA
        .split("-- Idempotency keys")
        .next()
        .expect("the schema before its idempotency keys");
    opens_and_works(before_keys).await;
}

#[test]
fn a_registry_of_a_newer_schema_version_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("registry.db");
    drop(Registry::open(&file).expect("a fresh registry"));
    assert_eq!(user_version(&file), NEWEST);
    Connection::open(&file)
        .expect("open")
        .pragma_update(None, "user_version", NEWEST + 1)
        .expect("a newer version");
    let refused = Registry::open(&file).err().map(|e| e.to_string());
    assert!(
        refused
            .as_deref()
            .is_some_and(|m| m.contains("newer deployment")),
        "{refused:?}"
    );
}
