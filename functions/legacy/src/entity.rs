//! The read side every Surface A entity shares: a declarative [`Entity`] (its table, its query
//! keys, and a field table that both renders a row and declares the entity in the XSD), the
//! paged collection GET and the GET by eid. A query key is declared as the other surfaces
//! declare their lists' named filters, a `shared::query::FieldSpec` (name, column, kind), and
//! narrows by the condition the field declares (`FieldSpec::named_condition`); its value is
//! read by Surface A's conventions (`shared::web::listing::filter_value`: an eid is a 64-bit
//! integer, an enumerated key takes one of its values). The eid of every
//! entity is the row id in the tenant database, so one record has one identity on every
//! surface. Collections page through the shared engine (`shared::query::PageQuery`) under
//! Surface A's paging convention (`shared::web::listing::LEGACY_PAGING`); the counts go in
//! the page element's attributes.

use crate::fault::Fault;
use crate::request::{BasicAuth, Eid, Query};
use crate::xml::Node;
use crate::xml_answer;
use crate::xml_schema::{Kind, PAGE_ATTRIBUTES};
use axum::http::StatusCode;
use axum::response::Response;
use chrono_tz::Tz;
use rusqlite::{Connection, OptionalExtension, Row};
use shared::query::{FieldSpec, Page, Selection};
use shared::web::listing::{filter_value, read_page, LEGACY_PAGING};
use shared::web::Surface;
use shared::{Error, Result};
use std::collections::HashMap;

/// One attribute of an entity: its name, the SQL expression it reads (a compile-time
/// constant, never input) and its values. An attribute whose column is NULL is left out,
/// except a boolean, which reads NULL as `false`.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// Attribute name.
    pub name: &'static str,
    /// SQL expression of its value.
    pub column: &'static str,
    /// Its values (also its type in the XSD).
    pub kind: Kind,
}

impl Field {
    /// A 64-bit integer attribute.
    pub const fn long(name: &'static str, column: &'static str) -> Field {
        Field::of(name, column, Kind::Long)
    }

    /// A text attribute.
    pub const fn text(name: &'static str, column: &'static str) -> Field {
        Field::of(name, column, Kind::Text)
    }

    /// An exact decimal attribute, written in its canonical text.
    pub const fn money(name: &'static str, column: &'static str) -> Field {
        Field::of(name, column, Kind::Decimal)
    }

    /// A boolean attribute (0/1 in the column).
    pub const fn boolean(name: &'static str, column: &'static str) -> Field {
        Field::of(name, column, Kind::Boolean)
    }

    /// An instant, written with the tenant's offset.
    pub const fn time(name: &'static str, column: &'static str) -> Field {
        Field::of(name, column, Kind::DateTime)
    }

    /// An attribute taking one of `values`.
    pub const fn one_of(
        name: &'static str,
        column: &'static str,
        values: &'static [&'static str],
    ) -> Field {
        Field::of(name, column, Kind::OneOf(values))
    }

    const fn of(name: &'static str, column: &'static str, kind: Kind) -> Field {
        Field { name, column, kind }
    }

    /// The attribute's text in the row's column `at` (None: left out).
    fn value(&self, r: &Row<'_>, at: usize, tz: Tz) -> rusqlite::Result<Option<String>> {
        Ok(match self.kind {
            Kind::Long => r.get::<_, Option<i64>>(at)?.map(|v| v.to_string()),
            Kind::Text | Kind::OneOf(_) => r.get(at)?,
            Kind::Decimal => col::money(r, at)?,
            Kind::Boolean => Some(col::boolean(r, at)?.to_string()),
            Kind::DateTime => col::time(r, at, tz)?,
        })
    }
}

/// A child element of an entity, after its attributes.
#[derive(Debug, Clone, Copy)]
pub enum Child {
    /// A reference to another object, `<element eid="" .../>`, left out when its eid is
    /// NULL.
    Ref {
        /// Element name.
        element: &'static str,
        /// SQL expression of the referenced object's eid.
        eid: &'static str,
        /// What else the reference shows of the object.
        fields: &'static [Field],
    },
    /// An empty element whose name is the column's value, one of `elements` (a payment's
    /// method); left out when NULL.
    Named {
        /// SQL expression of the element name.
        column: &'static str,
        /// The names it takes.
        elements: &'static [&'static str],
    },
}

/// One Surface A entity's read model: a field table that both renders rows and declares the
/// element in the XSD (`crate::xml_schema`).
pub struct Entity {
    /// Collection name in paths, e.g. `billingAccounts`; also the page wrapper element.
    pub collection: &'static str,
    /// Element name of one object, e.g. `billingAccount`.
    pub element: &'static str,
    /// Its attributes, `eid` first.
    pub fields: &'static [Field],
    /// Its child elements, in document order.
    pub children: &'static [Child],
    /// The table, aliased `t`, with any joins (no WHERE).
    pub from: &'static str,
    /// Query keys of the collection GET besides pageNumber and pageSize: `key=value` keeps
    /// the rows whose column equals the value (text, a 64-bit integer (an eid), or one of
    /// an enumeration's values).
    pub filters: &'static [FieldSpec],
}

impl Entity {
    /// The SELECT list: every field's column, then every child's, in the order `render`
    /// reads them.
    fn select(&self) -> String {
        let mut columns: Vec<&str> = self.fields.iter().map(|f| f.column).collect();
        for child in self.children {
            match child {
                Child::Ref { eid, fields, .. } => {
                    columns.push(eid);
                    columns.extend(fields.iter().map(|f| f.column));
                }
                Child::Named { column, .. } => columns.push(column),
            }
        }
        columns.join(", ")
    }

    /// Renders one row of [`Entity::select`].
    fn render(&self, r: &Row<'_>, tz: Tz) -> rusqlite::Result<Node> {
        let mut node = Node::new(self.element);
        let mut at = 0;
        for field in self.fields {
            node = node.opt_attr(field.name, field.value(r, at, tz)?);
            at += 1;
        }
        for child in self.children {
            match child {
                Child::Ref {
                    element, fields, ..
                } => {
                    if let Some(eid) = r.get::<_, Option<i64>>(at)? {
                        let mut reference = Node::new(*element).attr("eid", eid);
                        for (i, field) in fields.iter().enumerate() {
                            reference =
                                reference.opt_attr(field.name, field.value(r, at + 1 + i, tz)?);
                        }
                        node = node.child(reference);
                    }
                    at += 1 + fields.len();
                }
                Child::Named { .. } => {
                    if let Some(name) = r.get::<_, Option<String>>(at)? {
                        node = node.child(Node::new(name));
                    }
                    at += 1;
                }
            }
        }
        Ok(node)
    }
}

/// Reads one object by eid (404 when it does not exist).
pub fn find(entity: &Entity, conn: &Connection, eid: i64, tz: Tz) -> Result<Node> {
    let sql = format!(
        "SELECT {} FROM {} WHERE t.id = ?1",
        entity.select(),
        entity.from
    );
    conn.query_row(&sql, [eid], |r| entity.render(r, tz))
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
        let Some(filter) = entity.filters.iter().find(|f| f.name == key) else {
            continue;
        };
        let value = filter_value(Surface::Legacy, filter.name, filter.kind, &params[key], tz)?;
        selection = selection.scope_if(&filter.named_condition(), Some(value));
    }
    let paged = selection
        .page(page)
        .fetch_paged(conn, &entity.select(), entity.from, |r| {
            entity.render(r, tz)
        })?;
    Ok(page_node(entity.collection, page, paged.total, paged.items))
}

/// A page wrapper `<collection pageNumber pageSize totalElements elementCount totalPages>`
/// around `items` (its attributes named by [`PAGE_ATTRIBUTES`], which the XSD declares).
pub fn page_node(collection: &str, page: Page, total: i64, items: Vec<Node>) -> Node {
    let values = [
        page.number,
        page.size,
        total,
        items.len() as i64,
        page.total_pages(total),
    ];
    PAGE_ATTRIBUTES
        .iter()
        .zip(values)
        .fold(Node::new(collection), |node, (a, v)| node.attr(a.name, v))
        .children(items)
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

/// The parent of a sub-collection (`billingAccounts/{eid}/notes`, `invoices/{eid}/lines`):
/// the query key the path sets, and the parent's table and name for its 404.
pub struct Parent {
    /// The query key of the sub-collection's entity the path's eid sets.
    pub key: &'static str,
    /// The parent's table.
    pub table: &'static str,
    /// The parent's name in the 404.
    pub what: &'static str,
}

/// `GET <parent>/{eid}/<collection>`: one page of `entity` under the parent `eid` (404 when
/// the parent does not exist); takes the collection's paging keys.
pub async fn list_under(
    entity: &'static Entity,
    parent: Parent,
    BasicAuth(tenant): BasicAuth,
    Eid(eid): Eid,
    Query(mut params): Query,
) -> Result<Response, Fault> {
    params.insert(parent.key.into(), eid.to_string());
    let tz = tenant.tz;
    let node = tenant
        .db
        .read(move |conn| {
            shared::domain::require(conn, parent.table, parent.what, eid)?;
            page(entity, conn, &params, tz)
        })
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

/// Column readers of the field kinds.
mod col {
    use chrono_tz::Tz;
    use rusqlite::{Row, RowIndex};

    /// A boolean column (0/1) rendered as `true`/`false`.
    pub fn boolean(r: &Row<'_>, name: impl RowIndex) -> rusqlite::Result<bool> {
        Ok(r.get::<_, Option<i64>>(name)?.unwrap_or(0) != 0)
    }

    /// A decimal column in its canonical text (NULL stays absent).
    pub fn money(r: &Row<'_>, name: impl RowIndex) -> rusqlite::Result<Option<String>> {
        let v: Option<String> = r.get(name)?;
        Ok(v.map(|v| match shared::money::parse_decimal(&v) {
            Some(d) => shared::money::canonical(d),
            None => v,
        }))
    }

    /// A stored instant rendered with the tenant's offset.
    pub fn time(r: &Row<'_>, name: impl RowIndex, tz: Tz) -> rusqlite::Result<Option<String>> {
        let v: Option<String> = r.get(name)?;
        Ok(v.map(|v| shared::time::render(&v, tz)))
    }
}
