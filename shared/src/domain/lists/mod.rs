//! The read models of Surface B's lists: for each resource, its list source (the filter and
//! sort whitelist, its FROM and joins, its named filters), the parents it is listed under,
//! and the loader that reads a page of ids into records as the surface renders them. A
//! resource's [`List`] puts these together with what its lists assume (a fixed condition,
//! default filter values, `expand` names, bounds on filter values); the surface reads the
//! request, pages through the query engine with the list's source and renders what the
//! loader answers, so the surface holds no SQL.
//!
//! Surface A's entities read [`records`]: a `RECORDS` list source per resource (beside
//! Surface B's where both read the table: `agreements`, `agreement_services`) whose fields
//! are the columns a record holds and whose named filters are the entity's query keys;
//! Surface A maps the record's values to its XML names.
//!
//! Reads only: each table is written by its owner (`domain::actions`, `domain::agreements`,
//! ...), whose enumerations the whitelists take their values from. Invariants: a loader
//! answers the records of the ids it was given in their order, skipping ids without a row
//! (so a page keeps the engine's order); a nested collection renders at most
//! [`MAX_NESTED`] children.

pub mod accounts;
pub mod actions;
pub mod adjustment_applications;
pub mod adjustment_categories;
pub mod agreement_services;
pub mod agreements;
pub mod bill_batches;
pub mod invoices;
pub mod notes;
pub mod payments;
pub mod products;
pub mod records;
pub mod true_ups;
pub mod usage_events;

use crate::money::{parse_decimal, Number};
use crate::query::list::MAX_NESTED;
use crate::query::ListSource;
use crate::{Error, Result};
use chrono_tz::Tz;
use rusqlite::{Connection, Row};
use serde::Serialize;
use std::collections::HashMap;

/// Reads records of a page of ids into their representations, in the order of the ids.
pub type Loader<T> = fn(&Connection, &[i64], &RenderContext) -> Result<Vec<T>>;

/// A resource's list: where it reads from, how its records load, and what its lists assume.
pub struct List<T> {
    /// The list source (filters, sort, FROM, primary key).
    pub source: &'static ListSource,
    /// Reads a page of ids into records.
    pub load: Loader<T>,
    /// A constant condition (over the source's aliases) every read of the resource carries.
    pub always: Option<&'static str>,
    /// Named-filter values assumed when the client names neither the filter nor the field.
    pub defaults: &'static [(&'static str, &'static str)],
    /// The sub-entity names `expand` takes (none: `expand` does not apply).
    pub expand: &'static [&'static str],
    /// Named filters with a length bound in characters (a longer value is a 400).
    pub max_chars: &'static [(&'static str, usize)],
}

impl<T> List<T> {
    /// A list that assumes nothing: no fixed condition, defaults, expansions or bounds.
    pub const fn plain(source: &'static ListSource, load: Loader<T>) -> List<T> {
        List {
            source,
            load,
            always: None,
            defaults: &[],
            expand: &[],
            max_chars: &[],
        }
    }

    /// 400 when a named filter's value (`value_of(name)`) is longer than its bound.
    pub fn check_bounds<'a>(&self, value_of: impl Fn(&str) -> Option<&'a str>) -> Result<()> {
        for &(name, limit) in self.max_chars {
            if value_of(name).is_some_and(|v| v.chars().count() > limit) {
                return Err(Error::bad_request(format!(
                    "{name}: at most {limit} characters are allowed"
                )));
            }
        }
        Ok(())
    }

    /// What rendering needs: the tenant's zone and, when the list takes `expand`, the
    /// sub-entities `expand` (a comma list) names; 400 on a name it does not take.
    pub fn context(&self, tz: Tz, expand: Option<&str>) -> Result<RenderContext> {
        let mut ctx = RenderContext::plain(tz);
        // The bill batches' are the one list that expands (runs, their invoices): the
        // context's switches are theirs.
        if !self.expand.is_empty() {
            bill_batches::read_expand(expand, &mut ctx)?;
        }
        Ok(ctx)
    }
}

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
    #[schema(schema_with = crate::json_schema::identifier)]
    pub id: String,
}

/// A nested reference with a name: `{name, id}`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct NamedRef {
    /// Display name.
    #[schema(required = true)]
    pub name: Option<String>,
    /// Identifier.
    #[schema(schema_with = crate::json_schema::identifier)]
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
    #[schema(schema_with = crate::json_schema::identifier)]
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
    #[schema(schema_with = crate::json_schema::identifier)]
    pub id: String,
}

/// `cpq_discounts` of a billing account reference: `CpqDiscount`s (documented by the document,
/// `openapi::cpq_discount`: the sandbox keeps none, so no type renders one).
fn cpq_discounts() -> utoipa::openapi::Array {
    utoipa::openapi::ArrayBuilder::new()
        .items(utoipa::openapi::Ref::from_schema_name("CpqDiscount"))
        .build()
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
        .map(|t| crate::time::render(&t, tz)))
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
    use crate::query::compile::name_collisions;

    /// Every list source of the service (Surface B's lists here, the usage event list,
    /// Surface C's lists): filters and sorts resolve names ignoring ASCII case and
    /// underscores, so no two fields of one resource may differ only in those.
    #[test]
    fn no_two_fields_of_a_resource_share_a_name_in_the_platform_spelling() {
        let sources: [&ListSource; 24] = [
            &accounts::RECORDS,
            &accounts::CATEGORY_RECORDS,
            &agreements::RECORDS,
            &agreement_services::RECORDS,
            &invoices::RECORDS,
            &invoices::LINE_RECORDS,
            &notes::RECORDS,
            &payments::RECORDS,
            &products::RECORDS,
            &usage_events::RECORDS,
            &actions::SOURCE,
            &adjustment_applications::SOURCE,
            &adjustment_categories::SOURCE,
            &agreements::SOURCE,
            &agreement_services::SOURCE,
            &bill_batches::SOURCE,
            &bill_batches::ACCOUNTS_SOURCE,
            &true_ups::SOURCE,
            &crate::domain::usage::EVENT_LIST,
            &crate::domain::ledgers::LEDGER_LIST,
            &crate::domain::glrun::RUN_LIST,
            &crate::domain::chargeinfo::CHARGE_INFO_LIST,
            &crate::domain::chargeinfo::MERGED_CHARGE_INFO_LIST,
            &crate::domain::chargeinfo::LEDGER_CHARGE_INFO_LIST,
        ];
        for source in sources {
            assert!(!source.fields.is_empty(), "{}", source.noun);
            assert_eq!(name_collisions(source.fields), [], "{}", source.noun);
        }
    }
}
