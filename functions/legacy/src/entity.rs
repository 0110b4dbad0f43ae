//! The read side every Surface A entity shares: a declarative [`Entity`] (the domain's
//! records it reads, its query keys, and a field table that both renders a record and
//! declares the element in the XSD), the paged collection GET and the GET by eid. The SQL
//! is the domain's (`shared::domain::lists`: each entity's `RECORDS` list source, read by
//! `shared::domain::lists::records`); what stays here is Surface A's wire: its element and
//! attribute names, the XSD types, and its query keys, each the Surface A spelling of a
//! named filter of the records' source (as B's and C's named filters are), narrowing by the
//! condition that filter declares. A key's value is read by Surface A's conventions
//! (`shared::web::listing::filter_value`: an eid is a 64-bit integer, an enumerated key
//! takes one of its values). The eid of every entity is the row id in the tenant database,
//! so one record has one identity on every surface. Collections page through the shared
//! engine (`shared::query::PageQuery`, in eid order) under Surface A's paging convention
//! (`shared::web::listing::LEGACY_PAGING`); the counts go in the page element's attributes.

use crate::fault::Fault;
use crate::request::{BasicAuth, Eid, Query};
use crate::xml::Node;
use crate::xml_answer;
use crate::xml_schema::{Kind, PAGE_ATTRIBUTES};
use axum::http::StatusCode;
use axum::response::Response;
use chrono_tz::Tz;
use rusqlite::Connection;
use shared::domain::lists::records::{self, Record, Value};
use shared::query::{FieldSpec, ListSource, Page};
use shared::web::listing::{filter_value, read_page, LEGACY_PAGING};
use shared::web::Surface;
use shared::{Error, Result};
use std::collections::HashMap;

/// One attribute of an entity: its name, the record field it shows and its values. An
/// attribute whose value is NULL is left out, except a boolean, which reads NULL as
/// `false`.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// Attribute name.
    pub name: &'static str,
    /// The field of the entity's records it shows.
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

    /// A boolean attribute.
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

    /// The attribute's text in `record` (None: left out).
    fn value(&self, record: &Record, tz: Tz) -> Option<String> {
        match record.get(self.column) {
            Value::Null => matches!(self.kind, Kind::Boolean).then(|| false.to_string()),
            value => text(value, tz),
        }
    }
}

/// A record's value as attribute text: a decimal in its canonical text, an instant with the
/// tenant's offset (None: NULL).
fn text(value: &Value, tz: Tz) -> Option<String> {
    Some(match value {
        Value::Null => return None,
        Value::Integer(v) => v.to_string(),
        Value::Text(v) => v.clone(),
        Value::Decimal(d) => shared::money::canonical(*d),
        Value::Bool(b) => b.to_string(),
        Value::Instant(t) => shared::time::render(t, tz),
    })
}

/// A child element of an entity, after its attributes.
#[derive(Debug, Clone, Copy)]
pub enum Child {
    /// A reference to another object, `<element eid="" .../>`, left out when its eid is
    /// NULL.
    Ref {
        /// Element name.
        element: &'static str,
        /// The record field holding the referenced object's eid.
        eid: &'static str,
        /// What else the reference shows of the object.
        fields: &'static [Field],
    },
    /// An empty element whose name is the field's value, one of `elements` (a payment's
    /// method); left out when NULL.
    Named {
        /// The record field holding the element name.
        column: &'static str,
        /// The names it takes.
        elements: &'static [&'static str],
    },
}

/// A query key of a collection: Surface A's spelling of a named filter of the entity's
/// records.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    /// The key as the query string spells it, e.g. `billingAccountEid`.
    pub name: &'static str,
    /// The named filter of the entity's records it sets, e.g. `billing_account_id`.
    pub filter: &'static str,
}

impl Key {
    /// `name` spelled on Surface A, narrowing by the records' named filter `filter`.
    pub const fn new(name: &'static str, filter: &'static str) -> Key {
        Key { name, filter }
    }
}

/// One Surface A entity: the domain's records it reads and the field table that both
/// renders them and declares the element in the XSD (`crate::xml_schema`).
pub struct Entity {
    /// Collection name in paths, e.g. `billingAccounts`; also the page wrapper element.
    pub collection: &'static str,
    /// Element name of one object, e.g. `billingAccount`.
    pub element: &'static str,
    /// Its attributes, `eid` first.
    pub fields: &'static [Field],
    /// Its child elements, in document order.
    pub children: &'static [Child],
    /// The domain's records of the entity (`shared::domain::lists::*::RECORDS`).
    pub records: &'static ListSource,
    /// Query keys of the collection GET besides pageNumber and pageSize: `key=value` keeps
    /// the records whose named filter equals the value (text, a 64-bit integer (an eid),
    /// or one of an enumeration's values).
    pub keys: &'static [Key],
}

impl Entity {
    /// Each query key with the named filter it sets (a key whose filter the records lack
    /// is left out; the crate's tests check there is none).
    pub fn filters(&self) -> impl Iterator<Item = (&'static str, &'static FieldSpec)> + '_ {
        self.keys.iter().filter_map(|key| {
            self.records
                .field(key.filter)
                .filter(|_| self.records.named_filters.contains(&key.filter))
                .map(|spec| (key.name, spec))
        })
    }

    /// Renders one record.
    fn render(&self, r: &Record, tz: Tz) -> Node {
        let mut node = Node::new(self.element);
        for field in self.fields {
            node = node.opt_attr(field.name, field.value(r, tz));
        }
        for child in self.children {
            match child {
                Child::Ref {
                    element,
                    eid,
                    fields,
                } => {
                    if let Value::Integer(eid) = r.get(eid) {
                        let mut reference = Node::new(*element).attr("eid", eid);
                        for field in *fields {
                            reference = reference.opt_attr(field.name, field.value(r, tz));
                        }
                        node = node.child(reference);
                    }
                }
                Child::Named { column, .. } => {
                    if let Value::Text(name) = r.get(column) {
                        node = node.child(Node::new(name.as_str()));
                    }
                }
            }
        }
        node
    }
}

/// Reads one object by eid (404 when it does not exist).
pub fn find(entity: &Entity, conn: &Connection, eid: i64, tz: Tz) -> Result<Node> {
    records::find(entity.records, conn, eid)?
        .map(|r| entity.render(&r, tz))
        .ok_or_else(|| Error::not_found(format!("{} {eid} does not exist", entity.element)))
}

/// Reads one page of the collection under the query parameters (and `parent`, the
/// condition of a sub-collection with its parent's eid).
fn page(
    entity: &Entity,
    conn: &Connection,
    params: &HashMap<String, String>,
    parent: Option<(&str, i64)>,
    tz: Tz,
) -> Result<Node> {
    let page = read_page(params, &LEGACY_PAGING)?;
    let mut selection = records::select_all(entity.records);
    if let Some((condition, eid)) = parent {
        selection = selection.scope(condition, vec![eid.into()]);
    }
    let mut keys: Vec<&String> = params.keys().collect();
    keys.sort();
    for key in keys {
        // JAX-RS ignores query parameters a resource does not declare (cache busters such
        // as `_=1700000000`, tracing parameters), so an unknown key narrows nothing.
        let Some((name, filter)) = entity.filters().find(|(name, _)| *name == key) else {
            continue;
        };
        let value = filter_value(Surface::Legacy, name, filter.kind, &params[key], tz)?;
        selection = selection.narrow(entity.records, filter.name, Some(value))?;
    }
    let paged = records::page(entity.records, conn, selection, page)?;
    let items = paged.items.iter().map(|r| entity.render(r, tz)).collect();
    Ok(page_node(entity.collection, page, paged.total, items))
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
        .read(move |conn| page(entity, conn, &params, None, tz))
        .await?;
    Ok(xml_answer(StatusCode::OK, node))
}

/// The parent of a sub-collection (`billingAccounts/{eid}/notes`, `invoices/{eid}/lines`):
/// the domain's parent (its table, its noun for the 404, the condition tying the records
/// to it) and the query key the path sets in its place (a client's value of that key is
/// ignored, as the path decides).
pub struct Parent {
    /// The query key of the sub-collection's entity the path's eid sets.
    pub key: &'static str,
    /// The parent in the domain's read model.
    pub of: shared::domain::lists::Parent,
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
    params.remove(parent.key);
    let tz = tenant.tz;
    let node = tenant
        .db
        .read(move |conn| {
            let of = parent.of;
            shared::domain::require(conn, of.table, of.noun, eid)?;
            page(entity, conn, &params, Some((of.condition, eid)), tz)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routes::{table, QueryKeys};
    use crate::xml_schema::Body;

    /// Every entity the route table serves or reads.
    fn entities() -> Vec<&'static Entity> {
        let mut out: Vec<&'static Entity> = Vec::new();
        for route in table() {
            let bodies = [Some(route.response), route.request];
            for body in bodies.into_iter().flatten() {
                if let Body::Entity(e) | Body::Page(e) = body {
                    out.push(e);
                }
            }
            if let Some(QueryKeys::Of(e)) = route.lists {
                out.push(e);
            }
        }
        out.sort_by_key(|e| e.element);
        out.dedup_by_key(|e| e.element);
        out
    }

    /// A name the records lack would render nothing (or narrow nothing) without an error,
    /// so each is checked here: every attribute, reference and named child shows a field of
    /// the entity's records, and every query key sets one of their named filters.
    #[test]
    fn every_name_an_entity_shows_or_filters_by_is_a_field_of_its_records() {
        let all = entities();
        assert_eq!(
            all.len(),
            10,
            "{:?}",
            all.iter().map(|e| e.element).collect::<Vec<_>>()
        );
        for e in all {
            let records = e.records;
            let mut shown: Vec<&str> = e.fields.iter().map(|f| f.column).collect();
            for child in e.children {
                match child {
                    Child::Ref { eid, fields, .. } => {
                        shown.push(eid);
                        shown.extend(fields.iter().map(|f| f.column));
                    }
                    Child::Named { column, .. } => shown.push(column),
                }
            }
            for name in shown {
                assert!(
                    records.field(name).is_some(),
                    "{}: no field {name}",
                    e.element
                );
            }
            assert_eq!(
                e.filters().count(),
                e.keys.len(),
                "{}: a key without its filter",
                e.element
            );
        }
    }
}
