//! Change capture for replication: which rows a transaction touched, turned into a
//! [`Changeset`] of their final states, and the replay of a changeset on another copy.
//!
//! How: every user table of the database gets three TEMP triggers (after insert, update,
//! delete) that record `(table, rowid)` in the TEMP table `sbx_changes`. TEMP objects live only
//! in the writer connection: nothing is added to the database file, readers pay nothing, and
//! the triggers are installed after migrations each time a database is opened, so tables
//! added by any later migration are covered with no extra step. (SQLite's own session
//! extension would do the same job, but rusqlite's `session` feature needs bindgen and
//! libclang at build time; see docs/storage.md.)
//!
//! At commit the touched rows are read back: a row that still exists is shipped with all of
//! its columns (by name, rowid included); a row that is gone is shipped as a delete. Replay
//! deletes every touched rowid, then inserts the final rows, with foreign keys off (the
//! changeset is the complete net effect, cascades included). Replaying is therefore
//! idempotent, independent of statement order, and never trips over a unique constraint
//! that was only violated mid-transaction.
//!
//! Values keep their SQLite type: integer and real as JSON numbers (`1.0` stays real), text
//! as strings, blobs as `{"blob": "<hex>"}`, NULL as null.
//!
//! The sequence number of the newest applied log entry is kept in the database header
//! (`PRAGMA application_id`), so it commits or rolls back with the data it describes.

use super::sqlite;
use crate::{Error, Result};
use rusqlite::types::Value;
use rusqlite::{params_from_iter, Connection, Transaction};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::path::Path;

/// Version of the changeset format written by this build.
const FORMAT: u32 = 1;

/// The net effect of one transaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Changeset {
    /// Changeset format version.
    pub format: u32,
    /// Unique id of the write attempt that produced it: lets a writer whose PUT outcome was
    /// unknown (a timeout, an SDK retry answered 412) recognize its own entry.
    #[serde(default)]
    pub attempt: String,
    /// A fence: the writer `attempt` could not learn whether its PUT of this slot landed, so
    /// it took the slot itself with this no-op entry. Replay treats it as an empty change
    /// that still advances the version. Absent (false) in ordinary entries and older ones.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub aborted: bool,
    /// Schema version (`PRAGMA user_version`) of the database that produced it.
    pub schema: i64,
    /// Touched tables, by name.
    pub tables: Vec<TableChanges>,
}

/// The touched rows of one table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableChanges {
    /// Table name.
    pub name: String,
    /// Column names of `rows`, after the leading rowid.
    pub columns: Vec<String>,
    /// Rows as they are after the transaction: rowid, then one value per column.
    pub rows: Vec<Vec<Json>>,
    /// Rowids of rows the transaction deleted.
    pub deleted: Vec<i64>,
}

impl Changeset {
    /// Whether the transaction changed nothing.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// The fence entry of write attempt `attempt` on a database of schema `schema`: no
    /// change, marked aborted (see [`Changeset::aborted`]).
    pub fn fence(attempt: &str, schema: i64) -> Changeset {
        Changeset {
            format: FORMAT,
            attempt: attempt.to_string(),
            aborted: true,
            schema,
            tables: Vec::new(),
        }
    }
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Creates the TEMP change table and the capture triggers on every user table of `conn`.
/// Call once per writer connection, after migrations.
pub fn install(conn: &Connection) -> Result<()> {
    conn.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS sbx_changes (
             tbl TEXT NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY (tbl, rid)
         ) WITHOUT ROWID;",
    )?;
    for table in sqlite::user_tables(conn)? {
        let without_rowid: bool = conn.query_row(
            "SELECT sql LIKE '%WITHOUT ROWID%' FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [&table],
            |r| r.get(0),
        )?;
        if without_rowid {
            return Err(Error::Internal(format!(
                "table {table} is WITHOUT ROWID; the S3 store replicates rows by rowid"
            )));
        }
        let t = quote_ident(&table);
        let lit = quote_literal(&table);
        let name = |kind: &str| quote_ident(&format!("sbx_capture_{kind}_{table}"));
        conn.execute_batch(&format!(
            "CREATE TEMP TRIGGER IF NOT EXISTS {ins} AFTER INSERT ON {t} BEGIN
                 INSERT OR IGNORE INTO sbx_changes VALUES ({lit}, NEW.rowid);
             END;
             CREATE TEMP TRIGGER IF NOT EXISTS {upd} AFTER UPDATE ON {t} BEGIN
                 INSERT OR IGNORE INTO sbx_changes VALUES ({lit}, OLD.rowid);
                 INSERT OR IGNORE INTO sbx_changes VALUES ({lit}, NEW.rowid);
             END;
             CREATE TEMP TRIGGER IF NOT EXISTS {del} AFTER DELETE ON {t} BEGIN
                 INSERT OR IGNORE INTO sbx_changes VALUES ({lit}, OLD.rowid);
             END;",
            ins = name("ins"),
            upd = name("upd"),
            del = name("del"),
        ))?;
    }
    Ok(())
}

/// Forgets captured changes (at the start and the end of each replicated transaction).
pub fn clear(conn: &Connection) -> Result<()> {
    // Cached, as the read of `seq` below: every write runs these, and parsing them each time
    // was about 0.5% of the local server's profile under bulk posting, all under the writer.
    conn.prepare_cached("DELETE FROM temp.sbx_changes")?
        .execute([])?;
    Ok(())
}

/// The sequence number of the newest log entry this database contains.
pub fn seq(conn: &Connection) -> Result<u64> {
    let id: i64 = conn
        .prepare_cached("PRAGMA application_id")?
        .query_row([], |r| r.get(0))?;
    Ok(u64::try_from(id).unwrap_or(0))
}

/// Records `seq` as applied, inside the caller's transaction.
pub fn set_seq(conn: &Connection, seq: u64) -> Result<()> {
    let id = i32::try_from(seq)
        .map_err(|_| Error::Internal(format!("sequence number {seq} out of range")))?;
    conn.pragma_update(None, "application_id", id)?;
    Ok(())
}

fn columns(conn: &Connection, table: &str) -> Result<Vec<String>> {
    columns_in(conn, "main", table)
}

/// The visible columns of `table` in the attached database `schema`.
fn columns_in(conn: &Connection, schema: &str, table: &str) -> Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT name FROM pragma_table_xinfo({}, {}) WHERE hidden = 0 ORDER BY cid",
        quote_literal(table),
        quote_literal(schema)
    ))?;
    let names = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(names)
}

fn to_json(v: Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Integer(i) => Json::from(i),
        Value::Real(f) => serde_json::Number::from_f64(f).map_or(Json::Null, Json::Number),
        Value::Text(s) => Json::String(s),
        Value::Blob(b) => serde_json::json!({ "blob": hex::encode(b) }),
    }
}

fn from_json(v: &Json) -> Result<Value> {
    let bad = || Error::Internal(format!("changeset: unreadable value {v}"));
    Ok(match v {
        Json::Null => Value::Null,
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::Integer(i),
            None => Value::Real(n.as_f64().ok_or_else(bad)?),
        },
        Json::String(s) => Value::Text(s.clone()),
        Json::Object(o) => match o.get("blob").and_then(Json::as_str) {
            Some(h) => Value::Blob(hex::decode(h).map_err(|_| bad())?),
            None => return Err(bad()),
        },
        Json::Bool(_) | Json::Array(_) => return Err(bad()),
    })
}

/// The final state of every row the current transaction touched.
pub fn collect(conn: &Connection) -> Result<Changeset> {
    let mut touched: Vec<(String, i64)> = {
        let mut stmt = conn.prepare("SELECT tbl, rid FROM temp.sbx_changes ORDER BY tbl, rid")?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        rows
    };
    let mut tables: Vec<TableChanges> = Vec::new();
    for (table, rowid) in touched.drain(..) {
        if tables.last().map(|t| &t.name) != Some(&table) {
            tables.push(TableChanges {
                columns: columns(conn, &table)?,
                name: table.clone(),
                rows: Vec::new(),
                deleted: Vec::new(),
            });
        }
        let Some(entry) = tables.last_mut() else {
            continue;
        };
        let select = format!(
            "SELECT {} FROM {} WHERE rowid = ?1",
            entry
                .columns
                .iter()
                .map(|c| quote_ident(c))
                .collect::<Vec<_>>()
                .join(", "),
            quote_ident(&table)
        );
        let width = entry.columns.len();
        let row: Option<Vec<Value>> = {
            let mut stmt = conn.prepare_cached(&select)?;
            let mut rows = stmt.query([rowid])?;
            match rows.next()? {
                Some(r) => Some(
                    (0..width)
                        .map(|i| r.get::<_, Value>(i))
                        .collect::<rusqlite::Result<_>>()?,
                ),
                None => None,
            }
        };
        match row {
            Some(values) => entry.rows.push(
                std::iter::once(Json::from(rowid))
                    .chain(values.into_iter().map(to_json))
                    .collect(),
            ),
            None => entry.deleted.push(rowid),
        }
    }
    let schema: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    Ok(Changeset {
        format: FORMAT,
        attempt: uuid::Uuid::new_v4().to_string(),
        aborted: false,
        schema,
        tables,
    })
}

/// Applies `changes` as log entry `seq` in one transaction (which also records `seq`).
pub fn apply(conn: &mut Connection, changes: &Changeset, seq: u64) -> Result<()> {
    let schema: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if changes.format != FORMAT || changes.schema > schema {
        return Err(Error::Internal(format!(
            "log entry {seq} has format {} and schema {}; this build reads format {FORMAT} up to schema {schema}",
            changes.format, changes.schema
        )));
    }
    // Foreign keys can only be switched outside a transaction; the changeset already holds
    // every cascaded change, so checks and actions would only get in the way.
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    let applied = apply_in_transaction(conn, changes, seq);
    conn.pragma_update(None, "foreign_keys", "ON")?;
    applied
}

fn apply_in_transaction(conn: &mut Connection, changes: &Changeset, seq: u64) -> Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    // A fence carries no change by construction; ignoring its tables keeps it a no-op even
    // if one were ever written with some.
    let tables: &[TableChanges] = if changes.aborted {
        &[]
    } else {
        &changes.tables
    };
    let known = sqlite::user_tables(&tx)?;
    for table in tables {
        if !known.contains(&table.name) {
            return Err(Error::Internal(format!(
                "log entry {seq} names unknown table {}",
                table.name
            )));
        }
        let delete = format!("DELETE FROM {} WHERE rowid = ?1", quote_ident(&table.name));
        let rowids = table.deleted.iter().copied().chain(
            table
                .rows
                .iter()
                .filter_map(|r| r.first().and_then(Json::as_i64)),
        );
        for rowid in rowids {
            tx.prepare_cached(&delete)?.execute([rowid])?;
        }
    }
    for table in tables {
        let insert = format!(
            "INSERT INTO {} (rowid{}) VALUES (?1{})",
            quote_ident(&table.name),
            table
                .columns
                .iter()
                .map(|c| format!(", {}", quote_ident(c)))
                .collect::<String>(),
            (2..=table.columns.len() + 1)
                .map(|i| format!(", ?{i}"))
                .collect::<String>()
        );
        for row in &table.rows {
            if row.len() != table.columns.len() + 1 {
                return Err(Error::Internal(format!(
                    "log entry {seq}: a row of {} has {} values for {} columns",
                    table.name,
                    row.len(),
                    table.columns.len()
                )));
            }
            let values = row.iter().map(from_json).collect::<Result<Vec<_>>>()?;
            tx.prepare_cached(&insert)?
                .execute(params_from_iter(values))?;
        }
    }
    clear(&tx)?;
    set_seq(&tx, seq)?;
    tx.commit()?;
    Ok(())
}

/// The schema name a checkpoint is attached under while a restore replaces the rows with
/// its rows.
pub const SOURCE: &str = "sbx_source";
/// The schema name of a restore entry's file during its replay. Not [`SOURCE`]: a restore's
/// catch-up may replay another restore entry while its own checkpoint is attached.
pub const REPLAYED: &str = "sbx_replayed";

/// Attaches the SQLite file at `path` as `alias` ([`SOURCE`] or [`REPLAYED`]) on `conn` (outside any transaction, as
/// SQLite requires) and refuses a file written by a newer schema version than `conn`'s
/// (see "Schema versions" in docs/storage.md). Pair with [`detach`].
pub fn attach(conn: &Connection, path: &Path, alias: &str) -> Result<()> {
    let target = path
        .to_str()
        .ok_or_else(|| Error::Internal(format!("path {} is not UTF-8", path.display())))?;
    conn.execute(&format!("ATTACH DATABASE ?1 AS {alias}"), [target])?;
    let theirs: i64 = conn.query_row(&format!("PRAGMA {alias}.user_version"), [], |r| r.get(0))?;
    let mine: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if theirs > mine {
        detach(conn, alias);
        return Err(Error::NewerSchema(format!(
            "This checkpoint was written by a newer deployment with schema version {theirs}; \
             this function runs schema version {mine} and serves it again once it is deployed \
             at schema version {theirs} or later. Retry later."
        )));
    }
    Ok(())
}

/// Detaches `alias` (best effort: a failure only leaves the file attached until the
/// connection closes).
pub fn detach(conn: &Connection, alias: &str) {
    if let Err(e) = conn.execute(&format!("DETACH DATABASE {alias}"), []) {
        tracing::warn!(error = %e, "could not detach a restore source");
    }
}

/// Replaces every row of every user table of `main` with the rows of the attached
/// database `alias`, inside the caller's transaction: rowids are kept, columns are matched by name
/// (columns the source does not have get their defaults, as in replay). A table of the
/// source that `main` does not have is refused (migrations are additive, so a source of an
/// older or equal schema never has one). Foreign keys are deferred to the commit, where the
/// copy is as consistent as its source was.
///
/// Ids are never reused across a restore: every id sequence (`sqlite_sequence`) ends at the
/// highest of its value before, its value in the source and the largest id copied, so an id
/// a client saw before the restore is never given to another record after it.
pub fn replace_rows(tx: &rusqlite::Transaction<'_>, alias: &str) -> Result<()> {
    let before = sequences(tx, "main")?;
    let source = sequences(tx, alias)?;
    sqlite::clear_all(tx)?;
    let mine = sqlite::user_tables(tx)?;
    for table in sqlite_tables(tx, alias)? {
        if !mine.contains(&table) {
            return Err(Error::Internal(format!(
                "the restore source has table {table}, which this database does not have"
            )));
        }
        let here = columns_in(tx, "main", &table)?;
        let common: Vec<String> = columns_in(tx, alias, &table)?
            .into_iter()
            .filter(|c| here.contains(c))
            .map(|c| quote_ident(&c))
            .collect();
        let list: String = common.iter().map(|c| format!(", {c}")).collect();
        tx.execute(
            &format!(
                "INSERT INTO main.{t} (rowid{list}) SELECT rowid{list} FROM {alias}.{t}",
                t = quote_ident(&table)
            ),
            [],
        )?;
    }
    raise_sequences(tx, &before)?;
    raise_sequences(tx, &source)
}

/// The id sequences (`sqlite_sequence`: table name, highest id ever used) of database
/// `alias`; none when it has no `AUTOINCREMENT` table.
pub fn sequences(conn: &Connection, alias: &str) -> Result<Vec<(String, i64)>> {
    let exists = conn
        .prepare(&format!(
            "SELECT 1 FROM {alias}.sqlite_master WHERE type = 'table' AND name = 'sqlite_sequence'"
        ))?
        .exists([])?;
    if !exists {
        return Ok(Vec::new());
    }
    let mut stmt = conn.prepare(&format!(
        "SELECT name, seq FROM {alias}.sqlite_sequence ORDER BY name"
    ))?;
    let out = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(out)
}

/// Raises the id sequence of each named table of `main` to at least the given value (never
/// lowers one). Tables `main` does not have, or a `main` without `AUTOINCREMENT` tables,
/// are skipped.
pub fn raise_sequences(conn: &Connection, sequences: &[(String, i64)]) -> Result<()> {
    if sequences.is_empty() {
        return Ok(());
    }
    let has_table = conn
        .prepare(
            "SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = 'sqlite_sequence'",
        )?
        .exists([])?;
    if !has_table {
        return Ok(());
    }
    let tables = sqlite::user_tables(conn)?;
    for (name, seq) in sequences.iter().filter(|(n, _)| tables.contains(n)) {
        let raised = conn.execute(
            "UPDATE main.sqlite_sequence SET seq = ?2 WHERE name = ?1 AND seq < ?2",
            rusqlite::params![name, seq],
        )?;
        if raised == 0 {
            conn.execute(
                "INSERT INTO main.sqlite_sequence (name, seq)
                 SELECT ?1, ?2 WHERE NOT EXISTS (SELECT 1 FROM main.sqlite_sequence WHERE name = ?1)",
                rusqlite::params![name, seq],
            )?;
        }
    }
    Ok(())
}

/// Replays a restore entry: the rows of the database file at `path` replace the current ones
/// in one transaction that also records `seq` (readers see the old state or the new one) and
/// raises the id sequences to at least the entry's (`sequences`, the writer's after the
/// restore), so every environment numbers new rows alike; `then` writes what else the entry
/// carries (a keyed restore's idempotency-key row) in the same transaction.
pub fn apply_file(
    conn: &mut Connection,
    path: &Path,
    seq: u64,
    sequences: &[(String, i64)],
    then: impl FnOnce(&Transaction<'_>) -> Result<()>,
) -> Result<()> {
    attach(conn, path, REPLAYED)?;
    let applied = apply_attached(conn, REPLAYED, seq, sequences, then);
    detach(conn, REPLAYED);
    applied
}

/// [`apply_file`] with the file already attached as `alias`: the replay of a restore entry,
/// also run by the writer whose restore entry S3 just accepted.
pub fn apply_attached(
    conn: &mut Connection,
    alias: &str,
    seq: u64,
    sequences: &[(String, i64)],
    then: impl FnOnce(&Transaction<'_>) -> Result<()>,
) -> Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    replace_rows(&tx, alias)?;
    raise_sequences(&tx, sequences)?;
    then(&tx)?;
    clear(&tx)?;
    set_seq(&tx, seq)?;
    tx.commit()?;
    Ok(())
}

/// What [`replace_rows`] from the attached database `alias` contributes to the id sequences
/// of `main`, whatever `main` holds: `alias`'s own sequences, and the largest id it holds in
/// each of `main`'s `AUTOINCREMENT` tables (copying a row raises the sequence to its id).
/// Merged with `main`'s sequences before the restore ([`merge_sequences`]), that is the
/// sequences after it, known without replacing a row.
pub fn restored_sequences(conn: &Connection, alias: &str) -> Result<Vec<(String, i64)>> {
    let mut out = sequences(conn, alias)?;
    let tables: Vec<String> = {
        let mut stmt = conn.prepare(
            "SELECT m.name FROM main.sqlite_master m WHERE m.type = 'table'
             AND m.sql LIKE '%AUTOINCREMENT%' ORDER BY m.name",
        )?;
        let names = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        names
    };
    let theirs = sqlite_tables(conn, alias)?;
    for table in tables.into_iter().filter(|t| theirs.contains(t)) {
        let max: Option<i64> = conn.query_row(
            &format!("SELECT max(rowid) FROM {alias}.{}", quote_ident(&table)),
            [],
            |r| r.get(0),
        )?;
        if let Some(max) = max {
            out = merge_sequences(&out, &[(table, max)]);
        }
    }
    Ok(out)
}

/// The tables of the attached database `alias`, by name.
fn sqlite_tables(conn: &Connection, alias: &str) -> Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT name FROM {alias}.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
    ))?;
    let names = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(names)
}

/// Per table, the highest of the two lists' values; sorted by table name.
pub fn merge_sequences(a: &[(String, i64)], b: &[(String, i64)]) -> Vec<(String, i64)> {
    let mut merged: std::collections::BTreeMap<String, i64> = a.iter().cloned().collect();
    for (table, seq) in b {
        let entry = merged.entry(table.clone()).or_insert(*seq);
        *entry = (*entry).max(*seq);
    }
    merged.into_iter().collect()
}

#[cfg(test)]
mod tests;
