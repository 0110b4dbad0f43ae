//! Idempotency keys as the store keeps them (docs/storage.md, "Idempotency keys").
//! The store knows no HTTP: the web layer runs a request inside [`scope`] with a [`KeyScope`]
//! (the tenant, the key, the request's fingerprint), and every [`super::TenantDb::write`] of
//! that tenant inside the scope also inserts the key's row in its own transaction, so the row
//! travels in the same S3 log entry as the data it guards: whatever became of the write, the
//! row says so. The write's result (the value its transaction answered, as JSON) rides on
//! the row ([`keep_result`], same transaction), so any process that sees the row can render
//! the answer from it ([`KeyScope::resume_of`]). The rendered answer is recorded by a
//! follow-up write ([`record_answer`], which drops the result: [`drop_result`]).
//!
//! Invariants:
//! - A key's row exists iff a write of its request committed (same transaction).
//! - In a tenant's database a row written by `TenantDb::write` holds its first write's
//!   result from the moment it exists until its answer is recorded (same transaction both
//!   times): a row never exists without a way to its answer.
//! - A second write of the same request finds its own row (`request_id`); a write of another
//!   request that finds the key taken fails with a conflict and applies nothing, which is
//!   what settles two environments racing with one key.
//! - Rows older than [`KEEP_HOURS`] by the tenant clock are gone for every reader (a lookup
//!   ignores them, the next insert deletes them), and at most [`MAX_KEYS`] rows are kept (the
//!   oldest deleted by the insert that passes the bound).

use crate::{Error, Result};
use chrono::{DateTime, SecondsFormat, Utc};
use rusqlite::{params, Connection, OptionalExtension, Transaction};
use serde::de::DeserializeOwned;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Longest key, in characters (visible ASCII only, so bytes too).
pub const MAX_KEY_CHARS: usize = 255;

/// How long a key is kept, by the tenant clock.
pub const KEEP_HOURS: i64 = 24;

/// Most keys kept per tenant; the oldest are deleted past it.
pub const MAX_KEYS: i64 = 10_000;

/// The "tenant id" of a key kept by the registry (an admin API write that creates, forks or
/// deletes a tenant; see `Registry::register_keyed`): no tenant id looks like it (ids are
/// `t_...`), so a registry key never joins a tenant's write.
pub const REGISTRY: &str = "(registry)";

/// The namespace of the keys of tenant `tenant_id`'s own requests (see
/// [`KeyScope::namespaced`]).
pub fn tenant_namespace(tenant_id: &str) -> String {
    tenant_id.to_string()
}

/// The namespace of the keys of the admin API's writes inside tenant `tenant_id`.
pub fn admin_namespace(tenant_id: &str) -> String {
    format!("admin@{tenant_id}")
}

/// A stored key as its request's header gave it (the part after its namespace).
fn shown(stored: &str) -> &str {
    stored.split_once(' ').map_or(stored, |(_, key)| key)
}

/// Whether `key` is a valid key: 1 to [`MAX_KEY_CHARS`] visible ASCII characters (`!`..`~`).
pub fn valid_key(key: &str) -> bool {
    (1..=MAX_KEY_CHARS).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic())
}

/// One keyed request as the write path sees it.
pub struct KeyScope {
    tenant_id: String,
    /// The key as stored: the header's key after its namespace (see [`KeyScope::namespaced`]).
    key: String,
    /// The key as the request's header gave it.
    shown: String,
    fingerprint: String,
    request_id: String,
    written: AtomicBool,
    /// Set on a request that renders the answer of a write already applied under the key
    /// (see [`KeyScope::resume_of`]): the result that write stored on the key's row (JSON),
    /// taken once by the first write of the scope, which answers it instead of running.
    resumed: Mutex<Option<String>>,
    resuming: AtomicBool,
}

impl KeyScope {
    /// The key `key` of a request of `tenant_id` whose fingerprint is `fingerprint`.
    pub fn new(tenant_id: &str, key: &str, fingerprint: &str) -> Arc<KeyScope> {
        Self::stored_as(tenant_id, key.to_string(), key, fingerprint)
    }

    /// [`KeyScope::new`] for a key kept in `namespace` of a tenant's database: stored as
    /// `<namespace> <key>`. A header's key has no space, so no header names a namespaced
    /// row, and keys of two namespaces never meet: a tenant's requests use the tenant's id
    /// ([`tenant_namespace`]), the admin API's writes inside the tenant
    /// [`admin_namespace`], and a fork (another id) does not see its source's keys.
    pub fn namespaced(
        tenant_id: &str,
        namespace: &str,
        key: &str,
        fingerprint: &str,
    ) -> Arc<KeyScope> {
        Self::stored_as(tenant_id, format!("{namespace} {key}"), key, fingerprint)
    }

    fn stored_as(tenant_id: &str, stored: String, key: &str, fingerprint: &str) -> Arc<KeyScope> {
        Arc::new(KeyScope {
            tenant_id: tenant_id.to_string(),
            key: stored,
            shown: key.to_string(),
            fingerprint: fingerprint.to_string(),
            request_id: uuid::Uuid::new_v4().to_string(),
            written: AtomicBool::new(false),
            resumed: Mutex::new(None),
            resuming: AtomicBool::new(false),
        })
    }

    /// The scope in which this request (a retry) renders the answer of the write `applied`
    /// found under its key (same key, same fingerprint): the row's request id, so that the
    /// answer is recorded on that row, and the result that write stored there, which the
    /// first write of the scope answers instead of running (see docs/storage.md,
    /// "Idempotency keys": nothing is applied twice).
    pub fn resume_of(&self, applied: &Applied, result: String) -> Arc<KeyScope> {
        Arc::new(KeyScope {
            tenant_id: self.tenant_id.clone(),
            key: self.key.clone(),
            shown: self.shown.clone(),
            fingerprint: self.fingerprint.clone(),
            request_id: applied.request_id.clone(),
            written: AtomicBool::new(false),
            resumed: Mutex::new(Some(result)),
            resuming: AtomicBool::new(true),
        })
    }

    /// Whether this request renders the answer of a write already applied (see
    /// [`KeyScope::resume_of`]).
    pub fn resuming(&self) -> bool {
        self.resuming.load(Ordering::SeqCst)
    }

    /// The applied write's result as a `T`, taken once: `None` after the first take, or when
    /// it does not read as a `T` (the retry's handler is not the one that wrote it).
    pub(crate) fn take_result<T: DeserializeOwned>(&self) -> Option<T> {
        let result = super::lock(&self.resumed).take()?;
        serde_json::from_str(&result).ok()
    }

    /// Whether a write of this request inserted the key's row and was acknowledged.
    pub fn written(&self) -> bool {
        self.written.load(Ordering::SeqCst)
    }

    pub(crate) fn mark_written(&self) {
        self.written.store(true, Ordering::SeqCst);
    }

    /// The key as stored (its namespace first, if any).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The key as the request's header gave it.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The request's fingerprint.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The random id of this request (unique per request; the registry seals answers with
    /// it as the nonce).
    pub fn request_id(&self) -> &str {
        &self.request_id
    }
}

/// A recorded answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// The headers that matter to a client (content type, Location, ETag, ...), in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

/// What the store holds for a key.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// No live row: the request runs.
    Nothing,
    /// The same request was applied and its answer recorded.
    Answer(Answer),
    /// The same request was applied (or is being applied elsewhere); no answer recorded.
    Unrecorded,
    /// The key was used by a different request.
    Mismatch,
}

tokio::task_local! {
    static KEY: Arc<KeyScope>;
}

/// Runs `request` with `key` as its idempotency key (see the module doc).
pub async fn scope<F: std::future::Future>(key: Arc<KeyScope>, request: F) -> F::Output {
    KEY.scope(key, request).await
}

/// The key of the current scope, when it belongs to `tenant_id`.
pub(crate) fn current_for(tenant_id: &str) -> Option<Arc<KeyScope>> {
    KEY.try_with(|k| k.clone())
        .ok()
        .filter(|k| k.tenant_id == tenant_id)
}

fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// The oldest `created_at` still live at `now`.
fn live_from(now: DateTime<Utc>) -> String {
    stamp(now - chrono::Duration::hours(KEEP_HOURS))
}

/// What the tenant's store holds for `key`, compared with `fingerprint`.
pub fn lookup(conn: &Connection, key: &str, fingerprint: &str) -> Result<Found> {
    lookup_at(conn, key, fingerprint, crate::time::now_for(conn)?)
}

/// [`lookup`] with `now` given (the registry has no tenant clock: it keeps keys by the
/// server's clock).
pub fn lookup_at(
    conn: &Connection,
    key: &str,
    fingerprint: &str,
    now: DateTime<Utc>,
) -> Result<Found> {
    let from = live_from(now);
    let row = conn
        .query_row(
            "SELECT fingerprint, status, headers, body FROM idempotency_keys
             WHERE key = ?1 AND created_at >= ?2",
            params![key, from],
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<u16>>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, Option<Vec<u8>>>(3)?,
                ))
            },
        )
        .optional()?;
    Ok(match row {
        None => Found::Nothing,
        Some((f, _, _, _)) if f != fingerprint => Found::Mismatch,
        Some((_, Some(status), headers, body)) => Found::Answer(Answer {
            status,
            headers: serde_json::from_str(headers.as_deref().unwrap_or("[]"))?,
            body: body.unwrap_or_default(),
        }),
        Some(_) => Found::Unrecorded,
    })
}

/// The write applied under a key whose answer is not recorded (a tenant's row only; the
/// registry's rows have no result).
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The id of the request whose write inserted the row.
    pub request_id: String,
    /// The value that write's transaction answered, as JSON, stored on the row by the same
    /// transaction ([`keep_result`]); `None` on a row written without it (by an earlier build,
    /// or by a restore, whose entry carries the row alone).
    pub result: Option<String>,
}

/// The write applied under the live row of `key`, if any (see [`Applied`]).
pub fn applied(conn: &Connection, key: &str) -> Result<Option<Applied>> {
    let from = live_from(crate::time::now_for(conn)?);
    Ok(conn
        .query_row(
            "SELECT request_id, result FROM idempotency_keys WHERE key = ?1 AND created_at >= ?2",
            params![key, from],
            |r| {
                Ok(Applied {
                    request_id: r.get(0)?,
                    result: r.get(1)?,
                })
            },
        )
        .optional()?)
}

/// Inside the write of `scope`'s request, right after [`insert`]: stores `result` (the
/// transaction's answer, JSON) on the key's row, in the same transaction, so that whoever
/// sees the row can render the request's answer. The first write of the request stores it
/// (the one a resumed request answers with it); a later write of the same request leaves it.
pub(crate) fn keep_result(tx: &Transaction<'_>, scope: &KeyScope, result: &str) -> Result<()> {
    tx.execute(
        "UPDATE idempotency_keys SET result = ?1
         WHERE key = ?2 AND request_id = ?3 AND result IS NULL",
        params![result, scope.key, scope.request_id],
    )?;
    Ok(())
}

/// Clears the result of `scope`'s row once its answer is recorded (in the same write as the
/// answer): the answer replays from then on, and the row keeps no second copy.
pub fn drop_result(tx: &Transaction<'_>, scope: &KeyScope) -> Result<()> {
    tx.execute(
        "UPDATE idempotency_keys SET result = NULL WHERE key = ?1 AND request_id = ?2",
        params![scope.key, scope.request_id],
    )?;
    Ok(())
}

/// Inside a write of `scope`'s request: inserts the key's row (expired and surplus rows
/// pruned first). A row of another request under the key fails the write with a conflict.
pub(crate) fn insert(tx: &Transaction<'_>, scope: &KeyScope) -> Result<()> {
    insert_at(tx, scope, crate::time::now_for(tx)?)
}

/// [`insert`] with `now` given (see [`lookup_at`]).
pub(crate) fn insert_at(tx: &Transaction<'_>, scope: &KeyScope, now: DateTime<Utc>) -> Result<()> {
    insert_row(tx, &scope.row_at(now), true)
}

/// A key's row as a write inserts it, carried whole by an S3 log entry that is not a row
/// change (a restore's, whose replay on every environment inserts the same row).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KeyRow {
    pub key: String,
    pub fingerprint: String,
    pub request_id: String,
    /// The tenant clock when the write ran (stored form, see [`stamp`]).
    pub created_at: String,
}

impl KeyScope {
    /// This request's row, created at `now`.
    pub(crate) fn row_at(&self, now: DateTime<Utc>) -> KeyRow {
        KeyRow {
            key: self.key.clone(),
            fingerprint: self.fingerprint.clone(),
            request_id: self.request_id.clone(),
            created_at: stamp(now),
        }
    }

    /// This request's row, created now by the tenant clock of the database `conn` is.
    pub(crate) fn row_for(&self, conn: &Connection) -> Result<KeyRow> {
        Ok(self.row_at(crate::time::now_for(conn)?))
    }
}

/// Fails with a conflict when another request holds `row`'s key; nothing is written. What
/// [`insert_row`] answers for a taken key, and, for a write that carries its row in an S3
/// entry (a restore), checked on the caught-up database before each attempt to claim a log
/// slot, so that a restore of another request under the key applies nothing.
pub(crate) fn check_free(conn: &Connection, row: &KeyRow) -> Result<()> {
    let owner: Option<String> = conn
        .query_row(
            "SELECT request_id FROM idempotency_keys WHERE key = ?1",
            [&row.key],
            |r| r.get(0),
        )
        .optional()?;
    match owner {
        Some(owner) if owner != row.request_id => Err(Error::Conflict(format!(
            "a request with Idempotency-Key '{}' was applied meanwhile by another request; retry to learn its answer",
            shown(&row.key)
        ))),
        _ => Ok(()),
    }
}

/// Inserts `row` (expired and surplus rows pruned first, by its own `created_at`, so that
/// every replay of the same row prunes the same rows). A row of another request under the
/// key fails the write with a conflict when `strict`; otherwise (the replay of an entry S3
/// already holds, which must apply on every environment) that row stays and this one is
/// dropped.
pub(crate) fn insert_row(tx: &Transaction<'_>, row: &KeyRow, strict: bool) -> Result<()> {
    let now = DateTime::parse_from_rfc3339(&row.created_at)
        .map_err(|e| Error::Internal(format!("key row created at {:?}: {e}", row.created_at)))?
        .with_timezone(&Utc);
    tx.execute(
        "DELETE FROM idempotency_keys WHERE created_at < ?1",
        [live_from(now)],
    )?;
    // A namespaced row names its tenant: rows of another tenant's namespaces (a fork's
    // source's, copied with its checkpoint) go, so a fork's first keyed write drops them
    // (and every replay of the same row drops the same ones).
    if let Some((namespace, _)) = row.key.split_once(' ') {
        let tenant = namespace.strip_prefix("admin@").unwrap_or(namespace);
        tx.execute(
            "DELETE FROM idempotency_keys WHERE instr(key, ' ') > 0
             AND substr(key, 1, instr(key, ' ') - 1) NOT IN (?1, ?2)",
            params![tenant_namespace(tenant), admin_namespace(tenant)],
        )?;
    }
    let inserted = tx.execute(
        "INSERT INTO idempotency_keys (key, fingerprint, request_id, created_at)
         VALUES (?1, ?2, ?3, ?4) ON CONFLICT (key) DO NOTHING",
        params![row.key, row.fingerprint, row.request_id, row.created_at],
    )?;
    if inserted == 0 {
        // The key has a row: this request's (a second write of it), or another's.
        return if strict { check_free(tx, row) } else { Ok(()) };
    }
    // The bound: keep the newest MAX_KEYS rows (ids grow with insertion).
    let edge: Option<i64> = tx
        .query_row(
            "SELECT id FROM idempotency_keys ORDER BY id DESC LIMIT 1 OFFSET ?1",
            [MAX_KEYS],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(edge) = edge {
        tx.execute("DELETE FROM idempotency_keys WHERE id <= ?1", [edge])?;
    }
    Ok(())
}

/// Records the answer of `scope`'s request on its row (a follow-up write; nothing when the
/// row is gone, e.g. pruned meanwhile).
pub fn record_answer(tx: &Transaction<'_>, scope: &KeyScope, answer: &Answer) -> Result<()> {
    tx.execute(
        "UPDATE idempotency_keys SET status = ?1, headers = ?2, body = ?3, content_type = ?4
         WHERE key = ?5 AND request_id = ?6",
        params![
            answer.status,
            serde_json::to_string(&answer.headers)?,
            answer.body,
            answer
                .headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
                .map(|(_, v)| v.as_str()),
            scope.key,
            scope.request_id
        ],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_visible_ascii_within_the_bound() {
        assert!(valid_key("a"));
        assert!(valid_key(&"k".repeat(MAX_KEY_CHARS)));
        assert!(!valid_key(""));
        assert!(!valid_key(&"k".repeat(MAX_KEY_CHARS + 1)));
        assert!(!valid_key("a b"));
        assert!(!valid_key("é"));
        assert!(!valid_key("a\tb"));
    }

    #[test]
    fn a_row_is_found_replayed_refused_and_bounded() {
        let mut conn = crate::testing::db();
        let scope = KeyScope::new("t", "k1", "fp");
        let tx = conn.transaction().unwrap();
        insert(&tx, &scope).unwrap();
        // The same request's second write finds its own row.
        insert(&tx, &scope).unwrap();
        assert_eq!(lookup(&tx, "k1", "fp").unwrap(), Found::Unrecorded);
        assert_eq!(lookup(&tx, "k1", "other").unwrap(), Found::Mismatch);
        assert_eq!(lookup(&tx, "k2", "fp").unwrap(), Found::Nothing);
        let other = KeyScope::new("t", "k1", "fp");
        assert!(matches!(insert(&tx, &other), Err(Error::Conflict(_))));
        let answer = Answer {
            status: 201,
            headers: vec![("content-type".into(), "application/json".into())],
            body: b"{}".to_vec(),
        };
        record_answer(&tx, &scope, &answer).unwrap();
        assert_eq!(lookup(&tx, "k1", "fp").unwrap(), Found::Answer(answer));
        tx.commit().unwrap();
    }

    #[test]
    fn the_first_writes_result_rides_on_the_row_until_the_answer_is_recorded() {
        let mut conn = crate::testing::db();
        let tx = conn.transaction().unwrap();
        let scope = KeyScope::new("t", "k1", "fp");
        insert(&tx, &scope).unwrap();
        keep_result(&tx, &scope, "[7,\"first\"]").unwrap();
        // A later write of the same request keeps the first write's result.
        insert(&tx, &scope).unwrap();
        keep_result(&tx, &scope, "[8,\"second\"]").unwrap();
        let found = applied(&tx, "k1").unwrap().unwrap();
        assert_eq!(found.request_id, scope.request_id());
        assert_eq!(found.result.as_deref(), Some("[7,\"first\"]"));
        // A retry resumes with it, once, on the row's request id.
        let retry = KeyScope::new("t", "k1", "fp");
        let resumed = retry.resume_of(&found, found.result.clone().unwrap());
        assert!(resumed.resuming());
        assert_eq!(resumed.request_id(), scope.request_id());
        assert_eq!(
            resumed.take_result::<(i64, String)>(),
            Some((7, "first".into()))
        );
        assert_eq!(resumed.take_result::<(i64, String)>(), None);
        // A result of another type is not taken as one.
        let other = retry.resume_of(&found, "\"text\"".into());
        assert_eq!(other.take_result::<i64>(), None);
        drop_result(&tx, &scope).unwrap();
        assert_eq!(applied(&tx, "k1").unwrap().unwrap().result, None);
        tx.commit().unwrap();
    }

    #[test]
    fn namespaces_keep_keys_apart_and_a_forks_first_write_drops_its_sources() {
        let mut conn = crate::testing::db();
        let tx = conn.transaction().unwrap();
        let legacy = KeyScope::new("t_src", "k", "fp-old");
        insert(&tx, &legacy).unwrap();
        let source = KeyScope::namespaced("t_src", &tenant_namespace("t_src"), "k", "fp");
        let admin = KeyScope::namespaced("t_src", &admin_namespace("t_src"), "k", "fp-a");
        insert(&tx, &source).unwrap();
        // The admin's key and the tenant's are two rows.
        insert(&tx, &admin).unwrap();
        assert_eq!(lookup(&tx, source.key(), "fp").unwrap(), Found::Unrecorded);
        assert_eq!(lookup(&tx, admin.key(), "fp-a").unwrap(), Found::Unrecorded);
        assert_eq!(
            applied(&tx, admin.key()).unwrap().map(|a| a.request_id),
            Some(admin.request_id().to_string())
        );
        // The fork (the same rows, another id) finds nothing under its namespace, and its
        // first keyed write drops the source's namespaced rows (an earlier build's bare
        // row stays until it expires).
        let fork = KeyScope::namespaced("t_fork", &tenant_namespace("t_fork"), "k", "fp-f");
        assert_eq!(lookup(&tx, fork.key(), "fp-f").unwrap(), Found::Nothing);
        insert(&tx, &fork).unwrap();
        let keys: Vec<String> = tx
            .prepare("SELECT key FROM idempotency_keys ORDER BY key")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(keys, vec!["k".to_string(), "t_fork k".to_string()]);
        assert!(matches!(
            check_free(&tx, &source.row_for(&tx).unwrap()),
            Ok(())
        ));
        tx.commit().unwrap();
    }
}
