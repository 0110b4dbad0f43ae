//! Updates in place: a record of an applied document whose `id` already exists in its kind is
//! an update of that record, not a create. The record is read back as the export renders it,
//! the document's fields are laid over it, and the result must be a record its kind's create
//! would accept: it is created under a fresh id inside a savepoint (the existing record's
//! unique number set aside), its stored columns read, and the savepoint rolled back. The
//! fields that differ from the stored record are then written to the existing row from those
//! stored values (canonical amounts, absolute instants).
//!
//! Invariants: only a field that is a column of the kind's own table changes in place; a
//! nested list (SRIDs, rows, operations, items, product ids, ...) or a field another table
//! derives from (a service's start date) that differs is refused with its path; a record of
//! a kind not updated in place (`NOT_IN_PLACE`) may only restate what is stored. Nothing is
//! deleted. The caller's transaction makes the whole document all or nothing.

use super::document::at;
use crate::{Error, Result};
use rusqlite::types::Value as Sql;
use rusqlite::Transaction;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Each kind's table (where its ids live) and the unique text column a copy must not reuse.
const TABLES: &[(&str, &str, Option<&str>)] = &[
    (
        "billing_account_categories",
        "billing_account_categories",
        None,
    ),
    ("bill_cycles", "bill_cycles", None),
    ("billing_accounts", "billing_accounts", Some("account_num")),
    ("products", "products", None),
    ("product_prices", "product_prices", None),
    ("charge_categories", "charge_categories", None),
    ("reasons", "reasons", None),
    ("lookup_tables", "lookup_tables", None),
    ("usage_rules", "usage_rules", None),
    ("agreements", "agreements", None),
    ("services", "agreement_services", None),
    ("actions", "actions", None),
    ("bill_batches", "bill_batches", None),
    ("bill_batch_runs", "bill_batch_runs", None),
    ("invoices", "invoices", Some("invoice_num")),
    ("payments", "payments", None),
    ("payment_applications", "payment_applications", None),
    ("adjustments", "account_adjustments", None),
    ("charts_of_accounts", "chart_of_accounts", None),
    ("rule_sets", "rule_sets", None),
    ("run_modes", "gl_run_modes", None),
    ("ledgers", "ledgers", Some("name")),
    ("calendar_years", "calendar_nodes", None),
    ("collectors", "collectors", Some("name")),
];

/// Kinds whose existing records a document cannot update, and why.
const NOT_IN_PLACE: &[(&str, &str)] = &[
    (
        "payment_applications",
        "an application is not updated in place (apply or cancel payments on Surface A)",
    ),
    (
        "calendar_years",
        "a calendar year is not updated in place (edit it and its periods on Surface C)",
    ),
];

/// Fields that are columns of their kind's table but that other rows derive from.
const FIXED: &[(&str, &str)] = &[("services", "start_date")];

/// A record of the document that names an existing id.
#[derive(Debug, Clone)]
pub struct Update {
    member: String,
    index: usize,
    id: i64,
    record: Map<String, Value>,
}

impl Update {
    /// The kind (the document's member) of the record.
    pub fn member(&self) -> &str {
        &self.member
    }
}

/// Where each created record stood in the document (`member` -> original indices), so
/// refusals name the document's paths after updates are taken out.
pub type Indices = HashMap<String, Vec<usize>>;

/// The kinds `updates` touch (what an update reads of the tenant).
pub fn members(updates: &[Update]) -> Vec<&str> {
    let mut out: Vec<&str> = updates.iter().map(|u| u.member.as_str()).collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn table(member: &str) -> Option<(&'static str, Option<&'static str>)> {
    TABLES
        .iter()
        .find(|(m, _, _)| *m == member)
        .map(|(_, t, u)| (*t, *u))
}

fn exists(tx: &Transaction<'_>, member: &str, id: i64) -> Result<bool> {
    let Some((table, _)) = table(member) else {
        return Ok(false);
    };
    let year = if member == "calendar_years" {
        " AND type = 'YEAR'"
    } else {
        ""
    };
    let sql = format!("SELECT EXISTS(SELECT 1 FROM {table} WHERE id = ?1{year})");
    Ok(tx.prepare_cached(&sql)?.query_row([id], |r| r.get(0))?)
}

/// Takes the records whose id exists out of `doc` and answers them with the original index of
/// every record left.
pub fn take(tx: &Transaction<'_>, doc: &mut Value) -> Result<(Vec<Update>, Indices)> {
    let mut updates = Vec::new();
    let mut indices = Indices::new();
    let Value::Object(members) = doc else {
        return Ok((updates, indices));
    };
    for (member, value) in members.iter_mut() {
        let Value::Array(items) = value else {
            continue;
        };
        let mut kept = Vec::new();
        let mut left = Vec::new();
        for (index, item) in std::mem::take(items).into_iter().enumerate() {
            let id = item.get("id").and_then(Value::as_i64);
            match (id, item) {
                (Some(id), Value::Object(record)) if exists(tx, member, id)? => {
                    updates.push(Update {
                        member: member.clone(),
                        index,
                        id,
                        record,
                    });
                }
                (_, item) => {
                    kept.push(item);
                    left.push(index);
                }
            }
        }
        *items = kept;
        indices.insert(member.clone(), left);
    }
    Ok((updates, indices))
}

/// The stored row `id` of `table`, by column.
fn row(tx: &Transaction<'_>, table: &str, id: i64) -> Result<HashMap<String, Sql>> {
    let mut stmt = tx.prepare_cached(&format!("SELECT * FROM \"{table}\" WHERE id = ?1"))?;
    let names: Vec<String> = stmt.column_names().iter().map(|s| s.to_string()).collect();
    let mut rows = stmt.query([id])?;
    let Some(r) = rows.next()? else {
        return Err(Error::Internal(format!("{table} {id} vanished")));
    };
    let mut out = HashMap::new();
    for (i, name) in names.into_iter().enumerate() {
        out.insert(name, r.get::<_, Sql>(i)?);
    }
    Ok(out)
}

/// Applies `updates` (after the document's creates): see the module doc. `current` is the
/// tenant as an export renders it (the kinds of [`members`] at least); `create` loads a one-record document of a member (with
/// the record's original index for paths).
pub fn apply(
    tx: &Transaction<'_>,
    updates: &[Update],
    current: &Value,
    create: impl Fn(&Value, &Indices) -> Result<()>,
) -> Result<()> {
    // The stored records by kind and id, indexed once (a large export applied back to its
    // tenant updates every record: a scan per record would be quadratic).
    let mut index: HashMap<(&str, i64), &Map<String, Value>> = HashMap::new();
    if let Value::Object(members) = current {
        for (member, records) in members {
            for r in records.as_array().into_iter().flatten() {
                if let (Some(id), Some(r)) = (r["id"].as_i64(), r.as_object()) {
                    index.insert((member.as_str(), id), r);
                }
            }
        }
    }
    for u in updates {
        let path = format!("{}[{}]", u.member, u.index);
        let (table, unique) = table(&u.member).unwrap_or_default();
        let stored = index
            .get(&(u.member.as_str(), u.id))
            .copied()
            .ok_or_else(|| {
                Error::Internal(format!("{path}: {} {} not exported", u.member, u.id))
            })?;
        // The row's columns, read only when a field differs.
        let mut columns: Option<HashMap<String, Sql>> = None;
        let state: Vec<&str> = super::state::fields(&u.member)
            .into_iter()
            .map(|(f, _, _)| f)
            .collect();
        let mut merged: Map<String, Value> = stored
            .iter()
            .filter(|(k, _)| !state.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut changed = Vec::new();
        for (field, value) in &u.record {
            if field == "id" || stored.get(field) == Some(value) {
                continue;
            }
            // A record of these kinds may be restated as it is (an export applied back), not
            // changed.
            if let Some((_, why)) = NOT_IN_PLACE.iter().find(|(m, _)| *m == u.member) {
                return Err(Error::bad_request(format!(
                    "{path}: {} {} exists; {why}",
                    u.member, u.id
                )));
            }
            let fixed = FIXED.contains(&(u.member.as_str(), field.as_str()));
            let columns = match &mut columns {
                Some(c) => c,
                None => columns.insert(row(tx, table, u.id)?),
            };
            if fixed || !columns.contains_key(field) {
                return Err(Error::bad_request(format!(
                    "{path}.{field}: cannot be changed in place ({} {} keeps the {field} it \
                     was created with; nothing is deleted, so create a new record instead)",
                    u.member, u.id
                )));
            }
            merged.insert(field.clone(), value.clone());
            changed.push(field.clone());
        }
        if changed.is_empty() {
            continue;
        }
        // The merged record, created under a fresh id in a savepoint, checks every rule of
        // the kind's create and gives the stored form of each changed field.
        let fresh: i64 = tx.query_row(
            &format!(
                "SELECT MAX((SELECT COALESCE(MAX(id), 0) FROM \"{table}\"),
                            (SELECT COALESCE(MAX(id), 0) FROM services)) + 1"
            ),
            [],
            |r| r.get(0),
        )?;
        merged.insert("id".into(), Value::from(fresh));
        tx.execute_batch("SAVEPOINT fixture_update")?;
        let checked = (|| {
            if let Some(col) = unique {
                tx.execute(
                    &format!(
                        "UPDATE \"{table}\" SET \"{col}\" = 'fixture-update-' || id WHERE id = ?1"
                    ),
                    [u.id],
                )?;
            }
            let one = Value::Object(Map::from_iter([(
                u.member.clone(),
                Value::Array(vec![Value::Object(merged)]),
            )]));
            create(&one, &Indices::from([(u.member.clone(), vec![u.index])]))?;
            row(tx, table, fresh)
        })();
        tx.execute_batch("ROLLBACK TO fixture_update; RELEASE fixture_update")?;
        let checked = checked?;
        let mut sets = Vec::new();
        let mut values = Vec::new();
        for field in &changed {
            values.push(checked.get(field).cloned().unwrap_or(Sql::Null));
            sets.push(format!("\"{field}\" = ?{}", values.len()));
        }
        values.push(Sql::Integer(u.id));
        let sql = format!(
            "UPDATE \"{table}\" SET {} WHERE id = ?{}",
            sets.join(", "),
            values.len()
        );
        tx.execute(&sql, rusqlite::params_from_iter(values))
            .map_err(|e| at(path.clone())(e.into()))?;
    }
    Ok(())
}
