//! The paged-query engine: which rows of a list source match (named filters, `filter`, any
//! fixed scope), in which order (`sort` plus the primary key as tiebreak), one page of them
//! and the count of all. SQL and paging math only: reading a request off HTTP and answering
//! with headers and ETags is the web glue's job (a layer above).
//!
//! Two steps, so that callers keep their own order of validation: [`Selection::compile`]
//! turns typed [`Criteria`] (texts as the client wrote them) into a WHERE condition and an
//! ORDER BY list; [`PageQuery`] adds the page and whether to count, and fetches. A list
//! read through typed filters (Surface C's, not the query language) declares them in the
//! same [`ListSource`] (its named filters: name, kind, the condition each narrows by) and
//! builds its [`Selection`] with [`Selection::new`] and [`Selection::narrow`] (one named
//! filter, its value already read by the surface's conventions), then pages through the
//! same [`PageQuery`]. Either way a named filter narrows by the one condition its field
//! declares ([`FieldSpec::named_condition`]).
//!
//! Choice where the interface is silent: a page of size 0 reads no rows but still counts.

use super::ast::{CmpOp, Expr, Field, Value as AstValue};
use super::compile::{compile_filter, compile_sort, SqlFragment};
use super::page::{Page, Paged};
use super::{parse, FieldSpec, QueryError};
use crate::{Error, Result};
use chrono_tz::Tz;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, Row};

/// Most objects of a nested collection rendered inside one record (and so the most a
/// nested collection may hold when written).
pub const MAX_NESTED: usize = 50;

/// What a resource's list reads from, and which of its fields are named filters.
#[derive(Debug, Clone, Copy)]
pub struct ListSource {
    /// What messages call the resource, e.g. `agreement service`.
    pub noun: &'static str,
    /// The filter/sort whitelist.
    pub fields: &'static [FieldSpec],
    /// Fields also accepted as query parameters (`name=value` means `name EQ 'value'`).
    pub named_filters: &'static [&'static str],
    /// `FROM` clause (tables and joins), a compile-time constant.
    pub from: &'static str,
    /// The primary key expression: the default sort and the tiebreak.
    pub id: &'static str,
}

impl ListSource {
    /// The names usable as named filters: `id`, then [`ListSource::named_filters`].
    pub fn filter_names(&self) -> impl Iterator<Item = &'static str> {
        std::iter::once("id").chain(self.named_filters.iter().copied().filter(|n| *n != "id"))
    }

    /// The field named `name` (exactly as declared), if the source has one.
    pub fn field(&self, name: &str) -> Option<&'static FieldSpec> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Whether record `id` of this source exists inside `scope` (the conditions a surface
    /// narrows every read of the resource with, e.g. a nested collection's parent).
    pub fn contains(&self, conn: &Connection, id: i64, scope: &Selection) -> Result<bool> {
        let sql = format!(
            "SELECT 1 FROM {} WHERE {} = ? AND ({})",
            self.from, self.id, scope.condition.sql
        );
        let mut params = vec![SqlValue::Integer(id)];
        params.extend(scope.condition.params.iter().cloned());
        Ok(conn
            .prepare_cached(&sql)?
            .exists(rusqlite::params_from_iter(params.iter()))?)
    }
}

/// What a client asked to select, as written: typed input of [`Selection::compile`].
#[derive(Debug, Clone, Default)]
pub struct Criteria {
    /// A filter in the query language, when given (blank means none).
    pub filter: Option<String>,
    /// A sort (`a,-b`), when given.
    pub sort: Option<String>,
    /// Named-filter values (`name`, `value`): each means `name EQ 'value'`.
    pub named: Vec<(String, String)>,
}

/// Which rows, in which order: a compiled WHERE condition and ORDER BY list.
#[derive(Debug, Clone)]
pub struct Selection {
    /// The WHERE condition (named filters AND filter AND any scope).
    pub condition: SqlFragment,
    /// The ORDER BY list (always ends with the primary key).
    pub order_by: String,
}

/// Converts a [`QueryError`] of a parameter into a 400 naming the parameter.
fn param_error(param: &str, e: QueryError) -> Error {
    Error::bad_request(format!("{param}: {e}"))
}

impl Selection {
    /// Every row, in `order_by` (a compile-time constant ending with a unique key).
    pub fn new(order_by: &str) -> Selection {
        Selection {
            condition: SqlFragment::always(),
            order_by: order_by.to_string(),
        }
    }

    /// Compiles `criteria` against `source`; date-times are read in `tz`. `defaults` are
    /// named-filter values applied when the client names neither the filter nor the field
    /// in `filter` (e.g. bill batches: status ACTIVE). Errors name the parameter.
    pub fn compile(
        criteria: &Criteria,
        source: &ListSource,
        tz: Tz,
        defaults: &[(&str, &str)],
    ) -> Result<Selection> {
        let filter = match criteria.filter.as_deref().map(str::trim) {
            Some(f) if !f.is_empty() => Some(parse(f).map_err(|e| param_error("filter", e))?),
            _ => None,
        };
        let mut condition = SqlFragment::always();
        for name in source.filter_names() {
            let given = criteria
                .named
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str());
            let value = match given {
                Some(v) => v,
                None => match defaults.iter().find(|(n, _)| *n == name) {
                    Some((_, v)) if !filter.as_ref().is_some_and(|f| f.mentions(name)) => v,
                    _ => continue,
                },
            };
            let expr = Expr::Compare {
                field: Field {
                    name: name.to_string(),
                    pos: 1,
                },
                op: CmpOp::Eq,
                value: AstValue {
                    text: value.to_string(),
                    pos: 1,
                },
            };
            let mut fragment = compile_filter(&expr, source.fields, tz)
                .map_err(|e| Error::bad_request(format!("{name}: {}", e.message)))?;
            if let Some(own) = source.field(name).and_then(|f| f.condition) {
                // The value as the field's kind read it, bound to each mark of the
                // condition the field declares instead of the plain comparison.
                let value = fragment.params.pop().unwrap_or(SqlValue::Null);
                fragment = SqlFragment {
                    sql: own.to_string(),
                    params: vec![value; own.matches('?').count()],
                };
            }
            condition = condition.and(fragment);
        }
        if let Some(f) = &filter {
            condition = condition
                .and(compile_filter(f, source.fields, tz).map_err(|e| param_error("filter", e))?);
        }
        let order_by = compile_sort(
            criteria.sort.as_deref().unwrap_or(""),
            source.fields,
            source.id,
        )
        .map_err(|e| param_error("sort", e))?;
        Ok(Selection {
            condition,
            order_by,
        })
    }

    /// Narrows the selection to a fixed scope (e.g. the parent of a nested collection);
    /// `sql` is a compile-time constant with `?` marks for `params`.
    pub fn scope(mut self, sql: &str, params: Vec<SqlValue>) -> Selection {
        self.condition = self.condition.and(SqlFragment {
            sql: sql.to_string(),
            params,
        });
        self
    }

    /// Narrows the selection by `sql` only when `value` is given (an optional filter of a
    /// surface's own), binding the value to every `?` mark of `sql`.
    pub fn scope_if<V: Into<SqlValue>>(self, sql: &str, value: Option<V>) -> Selection {
        match value {
            Some(v) => {
                let params = vec![v.into(); sql.matches('?').count()];
                self.scope(sql, params)
            }
            None => self,
        }
    }

    /// Narrows the selection by named filter `name` of `source` when `value` is given (a
    /// typed filter, read by the surface's own conventions), by the condition its field
    /// declares. An internal error when `source` declares no such named filter: the caller
    /// names its own source's filters.
    pub fn narrow<V: Into<SqlValue>>(
        self,
        source: &ListSource,
        name: &str,
        value: Option<V>,
    ) -> Result<Selection> {
        let field = source
            .field(name)
            .filter(|_| source.named_filters.contains(&name))
            .ok_or_else(|| {
                Error::Internal(format!(
                    "the {} list has no named filter {name}",
                    source.noun
                ))
            })?;
        Ok(self.scope_if(&field.named_condition(), value))
    }

    /// One counted page of this selection.
    pub fn page(self, page: Page) -> PageQuery {
        PageQuery {
            selection: self,
            page,
            count_total: true,
        }
    }
}

/// A selection, one page of it, and whether to count all matching rows.
#[derive(Debug, Clone)]
pub struct PageQuery {
    /// Which rows, in which order.
    pub selection: Selection,
    /// The page asked for.
    pub page: Page,
    /// Whether to count every matching row (a second query).
    pub count_total: bool,
}

impl PageQuery {
    /// Narrows the selection to a fixed scope (see [`Selection::scope`]).
    pub fn scope(mut self, sql: &str, params: Vec<SqlValue>) -> PageQuery {
        self.selection = self.selection.scope(sql, params);
        self
    }

    /// Reads one page of `select` (columns over `from`, both compile-time constants)
    /// mapped by `map`, and the total unless not asked for.
    pub fn fetch<T>(
        &self,
        conn: &Connection,
        select: &str,
        from: &str,
        map: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<(Vec<T>, Option<i64>)> {
        let Selection {
            condition,
            order_by,
        } = &self.selection;
        let (limit, offset) = self.page.limit_offset();
        let rows = if limit == 0 {
            Vec::new()
        } else {
            let sql = format!(
                "SELECT {select} FROM {from} WHERE {} ORDER BY {order_by} LIMIT ? OFFSET ?",
                condition.sql
            );
            let mut params = condition.params.clone();
            params.push(limit.into());
            params.push(offset.into());
            let mut stmt = conn.prepare_cached(&sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(params.iter()), map)?;
            rows.collect::<rusqlite::Result<Vec<T>>>()?
        };
        let total = if self.count_total {
            let sql = format!("SELECT COUNT(*) FROM {from} WHERE {}", condition.sql);
            let mut stmt = conn.prepare_cached(&sql)?;
            Some(
                stmt.query_row(rusqlite::params_from_iter(condition.params.iter()), |r| {
                    r.get(0)
                })?,
            )
        } else {
            None
        };
        Ok((rows, total))
    }

    /// Reads one page of ids of `source` and the total unless not asked for. Callers load
    /// the full records of those ids.
    pub fn fetch_ids(
        &self,
        conn: &Connection,
        source: &ListSource,
    ) -> Result<(Vec<i64>, Option<i64>)> {
        self.fetch(conn, source.id, source.from, |r| r.get(0))
    }

    /// [`PageQuery::fetch`] for surfaces that always count: a [`Paged`] page.
    pub fn fetch_paged<T>(
        &self,
        conn: &Connection,
        select: &str,
        from: &str,
        map: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Paged<T>> {
        let counted = PageQuery {
            count_total: true,
            ..self.clone()
        };
        let (items, total) = counted.fetch(conn, select, from, map)?;
        Ok(Paged {
            items,
            total: total.unwrap_or_default(),
            page: self.page,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::{FieldKind, FieldSpec};

    static FIELDS: &[FieldSpec] = &[
        FieldSpec::new("id", "t.id", FieldKind::Integer).sortable(),
        FieldSpec::new("color", "t.color", FieldKind::Text).sortable(),
        FieldSpec::new("min_id", "t.id", FieldKind::Integer).narrows_by("t.id >= ?"),
    ];
    static SOURCE: ListSource = ListSource {
        noun: "thing",
        fields: FIELDS,
        named_filters: &["color", "min_id"],
        from: "t",
        id: "t.id",
    };

    fn db() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, color TEXT);
             INSERT INTO t VALUES (1, 'RED'), (2, 'BLUE'), (3, 'RED'), (4, 'RED'), (5, 'RED');",
        )
        .unwrap();
        c
    }

    fn query(criteria: &Criteria, defaults: &[(&str, &str)], page: Page) -> PageQuery {
        PageQuery {
            selection: Selection::compile(criteria, &SOURCE, chrono_tz::UTC, defaults).unwrap(),
            page,
            count_total: true,
        }
    }

    #[test]
    fn named_filters_defaults_sort_and_paging() {
        let c = db();
        let page = Page { number: 2, size: 2 };
        let sorted = Criteria {
            sort: Some("-id".into()),
            ..Criteria::default()
        };
        let q = query(&sorted, &[("color", "RED")], page);
        assert_eq!(q.fetch_ids(&c, &SOURCE).unwrap(), (vec![3, 1], Some(4)));
        // A filter naming the field switches the default off.
        let blue = Criteria {
            filter: Some("color EQ 'BLUE'".into()),
            ..Criteria::default()
        };
        let q = query(&blue, &[("color", "RED")], Page { number: 1, size: 9 });
        assert_eq!(q.fetch_ids(&c, &SOURCE).unwrap(), (vec![2], Some(1)));
        let named = Criteria {
            named: vec![
                ("color".into(), "BLUE".into()),
                ("ignored".into(), "x".into()),
            ],
            ..Criteria::default()
        };
        let q = query(&named, &[], Page { number: 1, size: 0 });
        assert_eq!(q.fetch_ids(&c, &SOURCE).unwrap(), (vec![], Some(1)));
        let uncounted = PageQuery {
            count_total: false,
            ..q.scope("t.id > ?", vec![SqlValue::Integer(2)])
        };
        assert_eq!(uncounted.fetch_ids(&c, &SOURCE).unwrap(), (vec![], None));
    }

    #[test]
    fn errors_name_the_parameter() {
        let bad = |c: Criteria| {
            Selection::compile(&c, &SOURCE, chrono_tz::UTC, &[])
                .unwrap_err()
                .to_string()
        };
        let filter = bad(Criteria {
            filter: Some("size EQ '1'".into()),
            ..Criteria::default()
        });
        assert!(
            filter.starts_with("filter: unknown field 'size'"),
            "{filter}"
        );
        let named = bad(Criteria {
            named: vec![("id".into(), "x".into())],
            ..Criteria::default()
        });
        assert!(
            named.starts_with("id: 'x' is not a whole number"),
            "{named}"
        );
        let sort = bad(Criteria {
            sort: Some("nope".into()),
            ..Criteria::default()
        });
        assert!(sort.starts_with("sort: unknown field 'nope'"), "{sort}");
    }

    #[test]
    fn a_named_filter_narrows_by_the_condition_its_field_declares() {
        let c = db();
        let page = Page { number: 1, size: 9 };
        // Typed (a value the surface read): bound to each mark of the declared condition.
        let typed = Selection::new("t.id")
            .narrow(&SOURCE, "min_id", Some(4))
            .unwrap()
            .narrow(&SOURCE, "color", None::<String>)
            .unwrap()
            .page(page)
            .fetch_paged(&c, "t.id", "t", |r| r.get::<_, i64>(0))
            .unwrap();
        assert_eq!((typed.items, typed.total), (vec![4, 5], 2));
        // Through the query language's named filters: the same condition.
        let named = Criteria {
            named: vec![("min_id".into(), "4".into())],
            ..Criteria::default()
        };
        let q = query(&named, &[], page);
        assert_eq!(q.fetch_ids(&c, &SOURCE).unwrap(), (vec![4, 5], Some(2)));
        // A name the source does not declare as a named filter is the caller's mistake.
        let undeclared = Selection::new("t.id").narrow(&SOURCE, "size", Some(1));
        assert!(matches!(undeclared, Err(Error::Internal(_))));
    }

    #[test]
    fn paged_rows_for_surfaces_with_their_own_filters() {
        let c = db();
        let q = PageQuery {
            selection: Selection::new("t.id DESC")
                .scope("t.color = ?", vec![SqlValue::Text("RED".into())]),
            page: Page { number: 1, size: 3 },
            count_total: false,
        };
        let paged = q
            .fetch_paged(&c, "t.id, t.color", "t", |r| r.get::<_, i64>(0))
            .unwrap();
        assert_eq!((paged.items, paged.total), (vec![5, 4, 3], 4));
        // Optional filters narrow only when given; a value binds every mark of its clause.
        let narrowed = Selection::new("t.id")
            .scope_if("(t.id > ? AND t.id <> ?)", Some(3))
            .scope_if("t.color = ?", None::<String>)
            .page(Page { number: 1, size: 9 })
            .fetch_paged(&c, "t.id", "t", |r| r.get::<_, i64>(0))
            .unwrap();
        assert_eq!((narrowed.items, narrowed.total), (vec![4, 5], 2));
    }
}
