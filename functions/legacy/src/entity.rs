//! The read side every Surface A entity shares: a declarative [`Entity`] (its SQL, its query
//! keys, how a row renders), the paged collection GET and the GET by eid. The eid of every
//! entity is the row id in the tenant database, so one record has one identity on every
//! surface. Collections page through the shared engine (`shared::query::PageQuery`) under
//! Surface A's paging convention (`shared::web::listing::LEGACY_PAGING`); the counts go in
//! the page element's attributes.

use crate::fault::Fault;
use crate::request::{BasicAuth, Eid, Query};
use crate::xml::Node;
use crate::xml_answer;
use axum::http::StatusCode;
use axum::response::Response;
use chrono_tz::Tz;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, Row};
use shared::query::Selection;
use shared::web::listing::{read_page, LEGACY_PAGING};
use shared::{Error, Result};
use std::collections::HashMap;

/// What values a query key takes.
#[derive(Debug, Clone, Copy)]
pub enum FilterKind {
    /// Any text, compared for equality.
    Text,
    /// A 64-bit integer (an eid).
    Integer,
    /// One of the listed values.
    OneOf(&'static [&'static str]),
}

/// A per-entity query key of the collection GET: `key=value` keeps rows whose `column`
/// equals the value.
#[derive(Debug, Clone, Copy)]
pub struct Filter {
    /// The query key.
    pub key: &'static str,
    /// The SQL column it compares (a compile-time constant, never input).
    pub column: &'static str,
    /// Accepted values.
    pub kind: FilterKind,
}

impl Filter {
    /// A text key.
    pub const fn text(key: &'static str, column: &'static str) -> Filter {
        Filter {
            key,
            column,
            kind: FilterKind::Text,
        }
    }

    /// An integer (eid) key.
    pub const fn integer(key: &'static str, column: &'static str) -> Filter {
        Filter {
            key,
            column,
            kind: FilterKind::Integer,
        }
    }

    /// A key taking one of `values`.
    pub const fn one_of(
        key: &'static str,
        column: &'static str,
        values: &'static [&'static str],
    ) -> Filter {
        Filter {
            key,
            column,
            kind: FilterKind::OneOf(values),
        }
    }
}

/// One Surface A entity's read model.
pub struct Entity {
    /// Collection name in paths, e.g. `billingAccounts`; also the page wrapper element.
    pub collection: &'static str,
    /// Element name of one object, e.g. `billingAccount`.
    pub element: &'static str,
    /// The selected columns (`t.id, ...`), read by name in `render`.
    pub columns: &'static str,
    /// The table, aliased `t`, with any joins (no WHERE).
    pub from: &'static str,
    /// Query keys of the collection GET besides pageNumber and pageSize.
    pub filters: &'static [Filter],
    /// Renders one row of `columns`.
    pub render: fn(&Row<'_>, Tz) -> rusqlite::Result<Node>,
}

/// Reads one object by eid (404 when it does not exist).
pub fn find(entity: &Entity, conn: &Connection, eid: i64, tz: Tz) -> Result<Node> {
    let sql = format!(
        "SELECT {} FROM {} WHERE t.id = ?1",
        entity.columns, entity.from
    );
    conn.query_row(&sql, [eid], |r| (entity.render)(r, tz))
        .optional()?
        .ok_or_else(|| Error::not_found(format!("{} {eid} does not exist", entity.element)))
}

/// Reads one page of the collection under the query parameters.
pub fn page(
    entity: &Entity,
    conn: &Connection,
    params: &HashMap<String, String>,
    tz: Tz,
) -> Result<Node> {
    let page = read_page(params, &LEGACY_PAGING)?;
    let mut selection = Selection::new("t.id");
    let mut keys: Vec<&String> = params.keys().collect();
    keys.sort();
    for key in keys {
        if key == "pageNumber" || key == "pageSize" {
            continue;
        }
        // JAX-RS ignores query parameters a resource does not declare (cache busters such
        // as `_=1700000000`, tracing parameters), so an unknown key narrows nothing.
        let Some(filter) = entity.filters.iter().find(|f| f.key == key) else {
            continue;
        };
        let value = filter_value(filter, &params[key])?;
        selection = selection.scope(&format!("{} = ?", filter.column), vec![value]);
    }
    let paged = selection
        .page(page)
        .fetch_paged(conn, entity.columns, entity.from, |r| {
            (entity.render)(r, tz)
        })?;
    Ok(Node::new(entity.collection)
        .attr("pageNumber", page.number)
        .attr("pageSize", page.size)
        .attr("totalElements", paged.total)
        .attr("elementCount", paged.items.len())
        .attr("totalPages", page.total_pages(paged.total))
        .children(paged.items))
}

/// The SQL value of a query key's `value`, or a 400 naming the key.
fn filter_value(filter: &Filter, value: &str) -> Result<SqlValue> {
    match filter.kind {
        FilterKind::Text => Ok(SqlValue::Text(value.to_string())),
        FilterKind::Integer => value
            .trim()
            .parse::<i64>()
            .map(SqlValue::Integer)
            .map_err(|_| {
                Error::bad_request(format!(
                    "{}: {} is not a 64-bit integer",
                    filter.key,
                    shared::error::quoted(value)
                ))
            }),
        FilterKind::OneOf(allowed) => {
            shared::domain::check_enum(filter.key, value, allowed)?;
            Ok(SqlValue::Text(value.to_string()))
        }
    }
}

/// `GET <collection>`: one page of the collection.
pub async fn list(
    entity: &'static Entity,
    BasicAuth(tenant): BasicAuth,
    Query(params): Query,
) -> Result<Response, Fault> {
    let tz = tenant.tz;
    let node = tenant
        .db
        .read(move |conn| page(entity, conn, &params, tz))
        .await?;
    Ok(xml_answer(StatusCode::OK, node))
}

/// `GET <collection>/{eid}`: one object.
pub async fn get(
    entity: &'static Entity,
    BasicAuth(tenant): BasicAuth,
    Eid(eid): Eid,
) -> Result<Response, Fault> {
    let tz = tenant.tz;
    let node = tenant
        .db
        .read(move |conn| find(entity, conn, eid, tz))
        .await?;
    Ok(xml_answer(StatusCode::OK, node))
}

/// Runs `create` in one write transaction and answers 201 with the new object's eid (the
/// answer of every create).
pub async fn create_and_answer<F>(
    entity: &'static Entity,
    tenant: &shared::web::Tenant,
    create: F,
) -> Result<Response, Fault>
where
    F: Fn(&rusqlite::Transaction<'_>, Tz) -> Result<i64> + Send + 'static,
{
    let tz = tenant.tz;
    let eid = tenant.db.write(move |tx| create(tx, tz)).await?;
    Ok(crate::created(entity.collection, eid))
}

/// Runs `change` on object `eid` in one write transaction and answers the object as it is
/// afterwards (the answer of every PUT).
pub async fn edit_and_show<F>(
    entity: &'static Entity,
    tenant: &shared::web::Tenant,
    eid: i64,
    change: F,
) -> Result<Response, Fault>
where
    F: Fn(&rusqlite::Transaction<'_>, Tz) -> Result<()> + Send + 'static,
{
    let tz = tenant.tz;
    let node = tenant
        .db
        .write(move |tx| {
            change(tx, tz)?;
            find(entity, tx, eid, tz)
        })
        .await?;
    Ok(xml_answer(StatusCode::OK, node))
}

/// Column readers shared by the renderers.
pub mod col {
    use chrono_tz::Tz;
    use rusqlite::Row;

    /// A text column that may be NULL.
    pub fn text(r: &Row<'_>, name: &str) -> rusqlite::Result<Option<String>> {
        r.get(name)
    }

    /// An integer column that may be NULL.
    pub fn int(r: &Row<'_>, name: &str) -> rusqlite::Result<Option<i64>> {
        r.get(name)
    }

    /// A boolean column (0/1) rendered as `true`/`false`.
    pub fn boolean(r: &Row<'_>, name: &str) -> rusqlite::Result<bool> {
        Ok(r.get::<_, Option<i64>>(name)?.unwrap_or(0) != 0)
    }

    /// A decimal column in its canonical text (NULL stays absent).
    pub fn money(r: &Row<'_>, name: &str) -> rusqlite::Result<Option<String>> {
        let v: Option<String> = r.get(name)?;
        Ok(v.map(|v| match shared::money::parse_decimal(&v) {
            Some(d) => shared::money::canonical(d),
            None => v,
        }))
    }

    /// A stored instant rendered with the tenant's offset.
    pub fn time(r: &Row<'_>, name: &str, tz: Tz) -> rusqlite::Result<Option<String>> {
        let v: Option<String> = r.get(name)?;
        Ok(v.map(|v| shared::time::render(&v, tz)))
    }
}
