//! Records: a read model whose list source is also its column list, read row by row into
//! named, typed values. Surface A's entities read through these: the domain declares each
//! record's columns, joins, named filters and order (its [`ListSource`]), and the surface
//! maps a [`Record`]'s values to its own element and attribute names, so the surface holds
//! no SQL.
//!
//! Invariants: every field of a record source is a column of its FROM (none reads `via` a
//! subquery), and the record holds one value per field, in the source's order; a value is
//! read by its field's kind (an enumeration as text, a boolean from 0/1, a decimal exactly,
//! a date-time as stored); a list is ordered by the source's primary key.

use crate::money::parse_decimal;
use crate::query::{FieldKind, ListSource, PageQuery, Paged, Selection};
use crate::Result;
use rusqlite::{Connection, OptionalExtension, Row};
use rust_decimal::Decimal;

/// One value of a record.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// The column is NULL.
    Null,
    /// A whole number (an identifier, a count).
    Integer(i64),
    /// Text (an enumeration's value included); also a stored decimal that does not parse,
    /// kept as written.
    Text(String),
    /// An exact decimal.
    Decimal(Decimal),
    /// A flag stored as 0/1.
    Bool(bool),
    /// An instant as stored (UTC text); the surface renders it in the tenant's zone.
    Instant(String),
}

/// One row of a record source: a value per field of the source.
#[derive(Debug, Clone)]
pub struct Record {
    source: &'static ListSource,
    values: Vec<Value>,
}

impl Record {
    /// The value of field `name` ([`Value::Null`] when the source has no such field; a
    /// surface checks its names against the source in its tests).
    pub fn get(&self, name: &str) -> &Value {
        self.source
            .fields
            .iter()
            .position(|f| f.name == name)
            .and_then(|at| self.values.get(at))
            .unwrap_or(&Value::Null)
    }
}

/// The record of `id` in `source`, when it exists.
pub fn find(source: &'static ListSource, conn: &Connection, id: i64) -> Result<Option<Record>> {
    let sql = format!(
        "SELECT {} FROM {} WHERE {} = ?1",
        columns(source),
        source.from,
        source.id
    );
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([id], |r| read(source, r))
        .optional()?)
}

/// Every record of `source` in `selection` (narrowed by the source's named filters), one
/// counted page of them, in the source's primary key order.
pub fn page(
    source: &'static ListSource,
    conn: &Connection,
    selection: Selection,
    page: crate::query::Page,
) -> Result<Paged<Record>> {
    let query: PageQuery = selection.page(page);
    query.fetch_paged(conn, &columns(source), source.from, |r| read(source, r))
}

/// A selection of every record of `source`, in its primary key order, to be narrowed by
/// its named filters ([`Selection::narrow`]).
pub fn select_all(source: &ListSource) -> Selection {
    Selection::new(source.id)
}

/// The SELECT list: every field's column, in the source's order.
fn columns(source: &ListSource) -> String {
    source
        .fields
        .iter()
        .map(|f| f.sql)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads one row of [`columns`].
fn read(source: &'static ListSource, r: &Row<'_>) -> rusqlite::Result<Record> {
    let mut values = Vec::with_capacity(source.fields.len());
    for (at, field) in source.fields.iter().enumerate() {
        let value = match field.kind {
            FieldKind::Integer => r.get::<_, Option<i64>>(at)?.map(Value::Integer),
            FieldKind::Text | FieldKind::Enum(_) => {
                r.get::<_, Option<String>>(at)?.map(Value::Text)
            }
            FieldKind::Decimal => {
                r.get::<_, Option<String>>(at)?
                    .map(|v| match parse_decimal(&v) {
                        Some(d) => Value::Decimal(d),
                        None => Value::Text(v),
                    })
            }
            FieldKind::Bool => r.get::<_, Option<i64>>(at)?.map(|v| Value::Bool(v != 0)),
            FieldKind::DateTime => r.get::<_, Option<String>>(at)?.map(Value::Instant),
        };
        values.push(value.unwrap_or(Value::Null));
    }
    Ok(Record { source, values })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::{FieldKind as K, FieldSpec as F, Page};

    static SOURCE: ListSource = ListSource {
        noun: "thing",
        fields: &[
            F::new("id", "t.id", K::Integer),
            F::new("amount", "t.amount", K::Decimal),
            F::new("flag", "t.flag", K::Bool),
            F::new("color", "t.color", K::Text),
        ],
        named_filters: &["color"],
        from: "t",
        id: "t.id",
    };

    fn db() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, amount TEXT, flag INTEGER, color TEXT);
             INSERT INTO t VALUES (2, '1.50', 1, 'RED'), (1, 'x', NULL, 'BLUE'), (3, NULL, 0, 'RED');",
        )
        .unwrap();
        c
    }

    #[test]
    fn values_are_read_by_their_fields_kind() {
        let c = db();
        let two = find(&SOURCE, &c, 2).unwrap().unwrap();
        assert_eq!(two.get("amount"), &Value::Decimal(Decimal::new(150, 2)));
        assert_eq!(two.get("flag"), &Value::Bool(true));
        assert_eq!(two.get("nope"), &Value::Null);
        let one = find(&SOURCE, &c, 1).unwrap().unwrap();
        assert_eq!(one.get("amount"), &Value::Text("x".into()));
        assert_eq!(one.get("flag"), &Value::Null);
        assert!(find(&SOURCE, &c, 9).unwrap().is_none());
    }

    #[test]
    fn a_page_is_narrowed_by_named_filters_in_primary_key_order() {
        let c = db();
        let red = select_all(&SOURCE)
            .narrow(&SOURCE, "color", Some("RED".to_string()))
            .unwrap();
        let paged = page(&SOURCE, &c, red, Page { number: 1, size: 9 }).unwrap();
        let ids: Vec<&Value> = paged.items.iter().map(|r| r.get("id")).collect();
        assert_eq!(ids, [&Value::Integer(2), &Value::Integer(3)]);
        assert_eq!(paged.total, 2);
    }
}
