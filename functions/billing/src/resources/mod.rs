//! Surface B's resources: for each, the filter/sort whitelist, the list source, the parents
//! it is listed under, the request bodies it accepts, and the functions that read records
//! into their representations. Writes and their rules live in `shared::domain`; nothing here
//! knows about HTTP routing or responses.

pub mod actions;
pub mod adjustment_applications;
pub mod adjustment_categories;
pub mod agreement_services;
pub mod agreements;
pub mod bill_batches;
pub mod true_ups;

use chrono_tz::Tz;
use rusqlite::{Connection, Row};
use serde::Serialize;
use shared::money::{parse_decimal, Number};
use shared::query::list::MAX_NESTED;
use shared::Result;
use std::collections::HashMap;

/// What rendering needs besides the rows: the tenant's zone and which sub-entities to
/// expand.
#[derive(Debug, Clone, Copy)]
pub struct RenderContext {
    /// The tenant's time zone (date-times are rendered with its offset).
    pub tz: Tz,
    /// Bill batches: render runs in full.
    pub expand_runs: bool,
    /// Bill batches: render the invoices inside runs in full.
    pub expand_invoices: bool,
}

impl RenderContext {
    /// No expansions.
    pub fn plain(tz: Tz) -> RenderContext {
        RenderContext {
            tz,
            expand_runs: false,
            expand_invoices: false,
        }
    }
}

/// A parent that a nested collection of a resource hangs off: the parent's table and noun
/// (it must exist, else 404) and the condition tying children to it, written over the
/// child's list source (`?` is the parent's id). Declared beside the list source whose
/// aliases the condition uses.
#[derive(Debug, Clone, Copy)]
pub struct Parent {
    /// The parent's table.
    pub table: &'static str,
    /// What messages call the parent.
    pub noun: &'static str,
    /// The condition over the child's `ListSource::from`.
    pub condition: &'static str,
}

/// A nested reference: `{id}`.
#[derive(Debug, Clone, Serialize)]
pub struct IdRef {
    /// Identifier.
    pub id: String,
}

/// A nested reference with a name: `{name, id}`.
#[derive(Debug, Clone, Serialize)]
pub struct NamedRef {
    /// Display name.
    pub name: Option<String>,
    /// Identifier.
    pub id: String,
}

/// A charge category reference: `{charge_category_type, name, id}`.
#[derive(Debug, Clone, Serialize)]
pub struct CategoryRef {
    /// Charge category type.
    pub charge_category_type: Option<String>,
    /// Name.
    pub name: Option<String>,
    /// Identifier.
    pub id: String,
}

/// A billing account reference.
#[derive(Debug, Clone, Serialize)]
pub struct AccountRef {
    /// Account number.
    pub account_num: String,
    /// External account number.
    pub external_account_num: Option<String>,
    /// CPQ discounts (the sandbox keeps none).
    pub cpq_discounts: Vec<serde_json::Value>,
    /// Identifier.
    pub id: String,
}

/// The string form of an identifier.
pub fn id_text(id: i64) -> String {
    id.to_string()
}

/// A stored decimal column as an exact JSON number.
pub fn number(r: &Row<'_>, column: &str) -> rusqlite::Result<Option<Number>> {
    Ok(r.get::<_, Option<String>>(column)?
        .as_deref()
        .and_then(parse_decimal)
        .map(Number))
}

/// A stored date-time column rendered with the tenant's offset.
pub fn time(r: &Row<'_>, column: &str, tz: Tz) -> rusqlite::Result<Option<String>> {
    Ok(r.get::<_, Option<String>>(column)?
        .map(|t| shared::time::render(&t, tz)))
}

/// `{name, id}` from an id column and a name column, null when the id is.
pub fn named_ref(r: &Row<'_>, id: &str, name: &str) -> rusqlite::Result<Option<NamedRef>> {
    Ok(match r.get::<_, Option<i64>>(id)? {
        Some(i) => Some(NamedRef {
            name: r.get(name)?,
            id: id_text(i),
        }),
        None => None,
    })
}

/// `{charge_category_type, name, id}` from columns `<prefix>id`, `<prefix>type`,
/// `<prefix>name`, null when the id is.
pub fn category_ref(r: &Row<'_>, prefix: &str) -> rusqlite::Result<Option<CategoryRef>> {
    Ok(
        match r.get::<_, Option<i64>>(format!("{prefix}id").as_str())? {
            Some(i) => Some(CategoryRef {
                charge_category_type: r.get(format!("{prefix}type").as_str())?,
                name: r.get(format!("{prefix}name").as_str())?,
                id: id_text(i),
            }),
            None => None,
        },
    )
}

/// Runs `select` (a constant ending in `WHERE <key>`) for `ids` and answers the records in
/// the order of `ids`; ids without a row are skipped.
pub fn load_in_order<T>(
    conn: &Connection,
    select: &str,
    ids: &[i64],
    mut map: impl FnMut(&Row<'_>) -> rusqlite::Result<(i64, T)>,
) -> Result<Vec<T>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let marks = vec!["?"; ids.len()].join(", ");
    let mut stmt = conn.prepare(&format!("{select} IN ({marks})"))?;
    let mut found: HashMap<i64, T> = HashMap::with_capacity(ids.len());
    let mut rows = stmt.query(rusqlite::params_from_iter(ids.iter()))?;
    while let Some(row) = rows.next()? {
        let (id, record) = map(row)?;
        found.insert(id, record);
    }
    Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
}

/// Runs `select` (a constant ending in `WHERE <parent key>`) for `parents` and groups the
/// children by parent, at most [`MAX_NESTED`] each, in the select's order.
pub fn load_children<T>(
    conn: &Connection,
    select: &str,
    order_by: &str,
    parents: &[i64],
    mut map: impl FnMut(&Row<'_>) -> rusqlite::Result<(i64, T)>,
) -> Result<HashMap<i64, Vec<T>>> {
    let mut out: HashMap<i64, Vec<T>> = HashMap::new();
    if parents.is_empty() {
        return Ok(out);
    }
    let marks = vec!["?"; parents.len()].join(", ");
    let mut stmt = conn.prepare(&format!("{select} IN ({marks}) ORDER BY {order_by}"))?;
    let mut rows = stmt.query(rusqlite::params_from_iter(parents.iter()))?;
    while let Some(row) = rows.next()? {
        let (parent, child) = map(row)?;
        let list = out.entry(parent).or_default();
        if list.len() < MAX_NESTED {
            list.push(child);
        }
    }
    Ok(out)
}
