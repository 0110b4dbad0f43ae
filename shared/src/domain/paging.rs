//! Surface C's list engine: optional filters joined into one WHERE clause, a count and one
//! page of rows. Every Surface C list (ledgers, calendars' history, collectors, runs, charge
//! info) reads through here, so that switching them to the shared query engine touches one
//! file. Conditions are compile-time text of the callers; only values come from input.

use crate::Result;

/// A conjunction of SQL conditions with their bound values, built from optional filters.
/// Conditions are compile-time text of the callers with `?` placeholders; only values come
/// from input.
#[derive(Debug, Default)]
pub(crate) struct Where {
    clauses: Vec<String>,
    values: Vec<rusqlite::types::Value>,
}

impl Where {
    /// Adds `clause` (with one `?` per value) when `value` is present.
    pub(crate) fn opt<V: Into<rusqlite::types::Value>>(&mut self, clause: &str, value: Option<V>) {
        if let Some(v) = value {
            let v = v.into();
            let marks = clause.matches('?').count();
            self.clauses.push(clause.to_string());
            for _ in 0..marks {
                self.values.push(v.clone());
            }
        }
    }

    /// Adds a condition without values.
    pub(crate) fn always(&mut self, clause: &str) {
        self.clauses.push(clause.to_string());
    }

    /// `WHERE a AND b ...`, or nothing.
    pub(crate) fn sql(&self) -> String {
        if self.clauses.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", self.clauses.join(" AND "))
        }
    }

    /// The bound values, followed by `extra` (e.g. LIMIT and OFFSET).
    pub(crate) fn values(&self, extra: &[i64]) -> Vec<rusqlite::types::Value> {
        let mut v = self.values.clone();
        v.extend(extra.iter().map(|x| rusqlite::types::Value::Integer(*x)));
        v
    }
}

/// Counts the rows of `from` (a table or join, with `w`) and reads one page of `select`
/// ordered by `order`, mapping rows with `map`.
pub(crate) fn paged_query<T>(
    conn: &rusqlite::Connection,
    select: &str,
    from: &str,
    w: &Where,
    order: &str,
    page: crate::paging::Page,
    map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<crate::paging::Paged<T>> {
    let total: i64 = conn.query_row(
        &format!("SELECT COUNT(*) FROM {from}{}", w.sql()),
        rusqlite::params_from_iter(w.values(&[])),
        |r| r.get(0),
    )?;
    let (limit, offset) = page.limit_offset();
    let mut stmt = conn.prepare(&format!(
        "SELECT {select} FROM {from}{} ORDER BY {order} LIMIT ? OFFSET ?",
        w.sql()
    ))?;
    let items = stmt
        .query_map(rusqlite::params_from_iter(w.values(&[limit, offset])), map)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(crate::paging::Paged { items, total, page })
}
