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
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use shared::money::{parse_decimal, Number};
use shared::query::list::MAX_NESTED;
use shared::{Error, Result};
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
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct IdRef {
    /// Identifier.
    #[schema(schema_with = shared::json_schema::identifier)]
    pub id: String,
}

/// A nested reference with a name: `{name, id}`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct NamedRef {
    /// Display name.
    #[schema(required = true)]
    pub name: Option<String>,
    /// Identifier.
    #[schema(schema_with = shared::json_schema::identifier)]
    pub id: String,
}

/// A charge category reference: `{charge_category_type, name, id}`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CategoryRef {
    /// Charge category type.
    #[schema(required = true)]
    pub charge_category_type: Option<String>,
    /// Name.
    #[schema(required = true)]
    pub name: Option<String>,
    /// Identifier.
    #[schema(schema_with = shared::json_schema::identifier)]
    pub id: String,
}

/// A billing account reference.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = BillingAccountRef)]
pub struct AccountRef {
    /// Account number.
    pub account_num: String,
    /// External account number.
    #[schema(required = true)]
    pub external_account_num: Option<String>,
    /// CPQ discounts (the sandbox keeps none).
    #[schema(schema_with = cpq_discounts)]
    pub cpq_discounts: Vec<serde_json::Value>,
    /// Identifier.
    #[schema(schema_with = shared::json_schema::identifier)]
    pub id: String,
}

/// `cpq_discounts` of a billing account reference: `CpqDiscount`s (documented by the document,
/// `openapi::cpq_discount`: the sandbox keeps none, so no type renders one).
fn cpq_discounts() -> utoipa::openapi::Array {
    utoipa::openapi::ArrayBuilder::new()
        .items(utoipa::openapi::Ref::from_schema_name("CpqDiscount"))
        .build()
}

/// A nested reference in a request body: the object GET renders (`{"id": "2", "name": ...}`)
/// or just `{"id": 2}`. Its `id` (a string or a number) is what is used; the other members
/// describe the referenced record and are ignored, so a client may send back what it read.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[schema(
    description = "A nested reference: its id is used; the other members of the object GET renders (name, sku, ...) may be sent back and are ignored."
)]
pub struct RefIn {
    #[schema(value_type = IdIn)]
    id: IdIn,
}

impl RefIn {
    /// The referenced id: 400 naming `field` when it is not an identifier.
    pub fn value(&self, field: &str) -> Result<i64> {
        self.id.value(field)
    }
}

/// An identifier written as a string or a number.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
enum IdIn {
    Text(String),
    Number(i64),
}

impl IdIn {
    fn value(&self, field: &str) -> Result<i64> {
        match self {
            IdIn::Number(n) => Ok(*n),
            IdIn::Text(t) => t.trim().parse().map_err(|_| {
                Error::bad_request(format!(
                    "{field}.id: {} is not an identifier",
                    shared::error::quoted(t)
                ))
            }),
        }
    }
}

/// Deserializes a read-only member a PUT body echoes back: present (null included) is
/// `Some`, absent is `None` (with `#[serde(default)]`).
pub fn echo<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Whether a read-only member sent back says the same as the stored record's rendering:
/// equal JSON, the same instant written with another offset, an id as a number or a
/// string, or a reference with the same `id`.
fn same(sent: &Value, stored: &Value) -> bool {
    match (sent, stored) {
        _ if sent == stored => true,
        (Value::String(a), Value::String(b)) => {
            let instant = |t: &str| chrono::DateTime::parse_from_rfc3339(t.trim()).ok();
            instant(a).is_some() && instant(a) == instant(b)
        }
        (Value::Number(n), Value::String(s)) | (Value::String(s), Value::Number(n)) => {
            s.trim() == n.to_string()
        }
        (Value::Object(a), Value::Object(b)) => a
            .get("id")
            .zip(b.get("id"))
            .is_some_and(|(x, y)| same(x, y)),
        _ => false,
    }
}

/// Surface B's rule for the read-only members of a PUT body (the members GET renders that
/// no PUT sets): each one sent back must say what the stored record says (`stored`, its
/// FULL rendering; see [`same`]), else 400 naming it. Equal ones are ignored, so a client
/// may PUT back the whole body it read; a different one is refused rather than dropped,
/// since the client evidently meant to change something a PUT cannot change.
pub fn check_echoed(echoed: &[(&str, &Value)], stored: &Value) -> Result<()> {
    for (name, sent) in echoed {
        let current = stored.get(*name).unwrap_or(&Value::Null);
        if !same(sent, current) {
            return Err(Error::bad_request(format!(
                "{name} is read-only: it is {current}, a PUT cannot change it to {sent}"
            )));
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use shared::query::compile::name_collisions;
    use shared::query::ListSource;

    /// Every list source of the service (Surface B's lists here, the usage event list of
    /// `shared`): filters and sorts resolve names ignoring ASCII case and underscores, so no
    /// two fields of one resource may differ only in those.
    #[test]
    fn no_two_fields_of_a_resource_share_a_name_in_the_platform_spelling() {
        let sources: [&ListSource; 9] = [
            &actions::SOURCE,
            &adjustment_applications::SOURCE,
            &adjustment_categories::SOURCE,
            &agreements::SOURCE,
            &agreement_services::SOURCE,
            &bill_batches::SOURCE,
            &bill_batches::ACCOUNTS_SOURCE,
            &true_ups::SOURCE,
            &shared::domain::usage::EVENT_LIST,
        ];
        for source in sources {
            assert!(!source.fields.is_empty(), "{}", source.noun);
            assert_eq!(name_collisions(source.fields), [], "{}", source.noun);
        }
    }
}
