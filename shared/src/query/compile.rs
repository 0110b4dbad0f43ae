//! Compiling a filter into SQL against a per-resource whitelist of fields. The output holds
//! only SQL text from the whitelist and fixed keywords; every value travels as a bound
//! parameter, converted to the type of its field first (so a wrong type is a 400, not a
//! silent mismatch).

use super::ast::{CmpOp, Expr, Field, Value};
use super::QueryError;
use crate::money::{canonical, parse_decimal};
use chrono_tz::Tz;
use rusqlite::types::Value as SqlValue;

/// The type of a filterable field: what its values must look like and which operators fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// Free text: every operator, LIKE included.
    Text,
    /// A whole number (identifiers, counts, int32/int64 fields); bound as an integer.
    Integer,
    /// An exact decimal (amounts); bound as canonical text, compared with COLLATE DECIMAL.
    Decimal,
    /// `true` or `false` (any case); EQ, NEQ and IN only.
    Bool,
    /// A date or date-time, read in the tenant's zone, compared as stored UTC text.
    DateTime,
    /// One of a fixed set (matched in any case, bound in its canonical spelling); EQ, NEQ,
    /// IN and LIKE.
    Enum(&'static [&'static str]),
}

impl FieldKind {
    fn describe(self) -> &'static str {
        match self {
            FieldKind::Text => "text",
            FieldKind::Integer => "whole-number",
            FieldKind::Decimal => "number",
            FieldKind::Bool => "boolean",
            FieldKind::DateTime => "date-time",
            FieldKind::Enum(_) => "enumerated",
        }
    }

    fn allows(self, op: CmpOp) -> bool {
        match self {
            FieldKind::Text => true,
            FieldKind::Integer | FieldKind::Decimal | FieldKind::DateTime => op != CmpOp::Like,
            FieldKind::Bool => matches!(op, CmpOp::Eq | CmpOp::Neq),
            FieldKind::Enum(_) => matches!(op, CmpOp::Eq | CmpOp::Neq | CmpOp::Like),
        }
    }
}

/// One whitelisted field of a resource: the name clients write, the SQL it maps to.
#[derive(Debug, Clone, Copy)]
pub struct FieldSpec {
    /// Name in filters and sorts, e.g. `status` or `agreement.id`.
    pub name: &'static str,
    /// SQL expression over the resource's FROM clause (a compile-time constant).
    pub sql: &'static str,
    /// Value type.
    pub kind: FieldKind,
    /// Whether `sort` may name it.
    pub sortable: bool,
    /// For a field with many values per record: `<table> WHERE <correlation>`; a predicate
    /// on it holds when some related row satisfies it (`EXISTS`).
    pub via: Option<&'static str>,
    /// As a named filter (`name=value`), the condition it narrows by when that is not
    /// "the field equals the value" (a range bound, one of two columns, an `EXISTS`): SQL
    /// over the list's FROM clause whose every `?` binds the value.
    pub condition: Option<&'static str>,
    /// What an API description says of it as a named filter, if anything.
    pub description: Option<&'static str>,
}

impl FieldSpec {
    /// A filterable, not sortable field.
    pub const fn new(name: &'static str, sql: &'static str, kind: FieldKind) -> FieldSpec {
        FieldSpec {
            name,
            sql,
            kind,
            sortable: false,
            via: None,
            condition: None,
            description: None,
        }
    }

    /// The same field, sortable too.
    pub const fn sortable(mut self) -> FieldSpec {
        self.sortable = true;
        self
    }

    /// The same field, many-valued through `via` (`<table> WHERE <correlation>`).
    pub const fn via(mut self, via: &'static str) -> FieldSpec {
        self.via = Some(via);
        self
    }

    /// The same field, narrowing by `condition` as a named filter (see
    /// [`FieldSpec::condition`]).
    pub const fn narrows_by(mut self, condition: &'static str) -> FieldSpec {
        self.condition = Some(condition);
        self
    }

    /// The same field, described as a named filter by `text`.
    pub const fn described(mut self, text: &'static str) -> FieldSpec {
        self.description = Some(text);
        self
    }

    /// The condition this field narrows by as a named filter: its own, else the field
    /// equal to the value; every `?` binds the value.
    pub fn named_condition(&self) -> std::borrow::Cow<'static, str> {
        match self.condition {
            Some(c) => c.into(),
            None => format!("{} = ?", self.sql).into(),
        }
    }

    /// The SQL this field sorts and compares with (decimal fields carry their collation).
    fn operand(&self) -> String {
        match self.kind {
            FieldKind::Decimal => format!("{} COLLATE DECIMAL", self.sql),
            _ => self.sql.to_string(),
        }
    }
}

/// SQL text plus the parameters its `?` marks bind, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SqlFragment {
    /// SQL with anonymous `?` parameters.
    pub sql: String,
    /// Parameter values, in the order of the marks.
    pub params: Vec<SqlValue>,
}

impl SqlFragment {
    /// A fragment that always holds.
    pub fn always() -> SqlFragment {
        SqlFragment {
            sql: "1".into(),
            params: Vec::new(),
        }
    }

    /// `self AND other`.
    pub fn and(mut self, other: SqlFragment) -> SqlFragment {
        self.sql = format!("({}) AND ({})", self.sql, other.sql);
        self.params.extend(other.params);
        self
    }
}

/// Whether a name as a client wrote it names the field `name`: the platform spells field
/// names without underscores and in camel case (`accountnum GT '15'` in its own filter
/// example, `accountNum` in its objects) where we write `account_num`, so names match when
/// they are equal ignoring ASCII case and underscores. This is the one rule of name
/// resolution: filters, sorts and `Expr::mentions` all use it, and
/// [`name_collisions`] keeps it unambiguous.
pub fn same_name(written: &str, name: &str) -> bool {
    // Compared byte by byte as the keys are made: `find_field` runs this against every field
    // of a whitelist for every name of a filter or sort, so nothing is allocated.
    fn key(s: &str) -> impl Iterator<Item = u8> + '_ {
        s.bytes()
            .filter(|b| *b != b'_')
            .map(|b| b.to_ascii_lowercase())
    }
    key(written).eq(key(name))
}

/// The pairs of fields of a whitelist that [`same_name`] cannot tell apart (a whitelist must
/// have none: a name written by a client must resolve to one field).
pub fn name_collisions(fields: &[FieldSpec]) -> Vec<(&'static str, &'static str)> {
    let mut out = Vec::new();
    for (i, a) in fields.iter().enumerate() {
        for b in &fields[i + 1..] {
            if same_name(a.name, b.name) {
                out.push((a.name, b.name));
            }
        }
    }
    out
}

/// Looks a field up in the whitelist (names match by [`same_name`]).
pub fn find_field<'a>(fields: &'a [FieldSpec], field: &Field) -> Result<&'a FieldSpec, QueryError> {
    fields
        .iter()
        .find(|f| same_name(&field.name, f.name))
        .ok_or_else(|| {
            let known: Vec<&str> = fields.iter().map(|f| f.name).collect();
            QueryError::at(
                field.pos,
                format!(
                    "unknown field '{}' (fields: {})",
                    field.name,
                    known.join(", ")
                ),
            )
        })
}

/// Compiles a filter into a WHERE fragment under the field whitelist `fields`; date-times
/// without an offset are read in `tz`.
pub fn compile_filter(
    expr: &Expr,
    fields: &[FieldSpec],
    tz: Tz,
) -> Result<SqlFragment, QueryError> {
    let mut out = SqlFragment::default();
    emit(expr, fields, tz, &mut out)?;
    Ok(out)
}

fn emit(
    expr: &Expr,
    fields: &[FieldSpec],
    tz: Tz,
    out: &mut SqlFragment,
) -> Result<(), QueryError> {
    match expr {
        Expr::And(a, b) | Expr::Or(a, b) => {
            let joiner = if matches!(expr, Expr::And(..)) {
                " AND "
            } else {
                " OR "
            };
            out.sql.push('(');
            emit(a, fields, tz, out)?;
            out.sql.push_str(joiner);
            emit(b, fields, tz, out)?;
            out.sql.push(')');
        }
        Expr::Not(e) => {
            out.sql.push_str("(NOT ");
            emit(e, fields, tz, out)?;
            out.sql.push(')');
        }
        Expr::Compare { field, op, value } => {
            let spec = find_field(fields, field)?;
            if !spec.kind.allows(*op) {
                return Err(QueryError::at(
                    field.pos,
                    format!(
                        "operator {} does not apply to the {} field '{}'",
                        op.keyword(),
                        spec.kind.describe(),
                        spec.name
                    ),
                ));
            }
            let bound = if *op == CmpOp::Like {
                SqlValue::Text(value.text.clone())
            } else {
                bind(spec, value, tz)?
            };
            let sql_op = match op {
                CmpOp::Eq => "=",
                CmpOp::Neq => "<>",
                CmpOp::Lt => "<",
                CmpOp::Lte => "<=",
                CmpOp::Gt => ">",
                CmpOp::Gte => ">=",
                CmpOp::Like => "LIKE",
            };
            let predicate = format!("{} {sql_op} ?", spec.operand());
            push_predicate(spec, &predicate, out);
            out.params.push(bound);
        }
        Expr::IsNull { field, negated } => {
            let spec = find_field(fields, field)?;
            match spec.via {
                // A many-valued field is null when no related row has a value.
                Some(via) => {
                    let not = if *negated { "" } else { "NOT " };
                    out.sql.push_str(&format!(
                        "({not}EXISTS (SELECT 1 FROM {via} AND {} IS NOT NULL))",
                        spec.sql
                    ));
                }
                None => {
                    let not = if *negated { "NOT " } else { "" };
                    out.sql.push_str(&format!("({} IS {not}NULL)", spec.sql));
                }
            }
        }
        Expr::In { field, values } => {
            let spec = find_field(fields, field)?;
            if !spec.kind.allows(CmpOp::Eq) {
                return Err(QueryError::at(
                    field.pos,
                    format!("IN does not apply to the field '{}'", spec.name),
                ));
            }
            let marks = vec!["?"; values.len()].join(", ");
            push_predicate(spec, &format!("{} IN ({marks})", spec.operand()), out);
            for v in values {
                out.params.push(bind(spec, v, tz)?);
            }
        }
    }
    Ok(())
}

fn push_predicate(spec: &FieldSpec, predicate: &str, out: &mut SqlFragment) {
    match spec.via {
        Some(via) => out
            .sql
            .push_str(&format!("(EXISTS (SELECT 1 FROM {via} AND {predicate}))")),
        None => out.sql.push_str(&format!("({predicate})")),
    }
}

/// Converts a quoted value to the SQL value of the field's type.
pub fn bind(spec: &FieldSpec, value: &Value, tz: Tz) -> Result<SqlValue, QueryError> {
    let text = value.text.as_str();
    let wrong = |expected: &str| {
        QueryError::at(
            value.pos,
            format!(
                "'{}' is not {expected}, as the field '{}' requires",
                text.replace('\'', "''"),
                spec.name
            ),
        )
    };
    Ok(match spec.kind {
        FieldKind::Text => SqlValue::Text(text.to_string()),
        FieldKind::Integer => text
            .trim()
            .parse::<i64>()
            .map(SqlValue::Integer)
            .map_err(|_| wrong("a whole number"))?,
        FieldKind::Decimal => parse_decimal(text)
            .map(|d| SqlValue::Text(canonical(d)))
            .ok_or_else(|| wrong("a number"))?,
        FieldKind::Bool => match text.trim().to_ascii_lowercase().as_str() {
            "true" => SqlValue::Integer(1),
            "false" => SqlValue::Integer(0),
            _ => return Err(wrong("true or false")),
        },
        FieldKind::DateTime => crate::time::parse_date_or_datetime(text, tz)
            .map(|t| SqlValue::Text(crate::time::to_storage(t)))
            .ok_or_else(|| wrong("a date (YYYY-MM-DD) or an RFC 3339 date-time"))?,
        FieldKind::Enum(allowed) => allowed
            .iter()
            .find(|a| a.eq_ignore_ascii_case(text.trim()))
            .map(|a| SqlValue::Text((*a).to_string()))
            .ok_or_else(|| wrong(&format!("one of {}", allowed.join(", "))))?,
    })
}

/// The most keys a `sort` parameter may name: more is never useful, and an unbounded list
/// reached SQLite's limit on ORDER BY terms (a 500) at 2,000 keys.
pub const MAX_SORT_KEYS: usize = 8;

/// Compiles a `sort` parameter (`a,-b`: comma list, `-` for descending) into an ORDER BY
/// list over sortable whitelisted fields; `tiebreak` (the primary key) is appended so that
/// the order is total and paging stable. At most [`MAX_SORT_KEYS`] keys, each field once.
pub fn compile_sort(
    sort: &str,
    fields: &[FieldSpec],
    tiebreak: &str,
) -> Result<String, QueryError> {
    let mut keys = Vec::new();
    let mut named: Vec<&str> = Vec::new();
    let mut column = 1;
    for raw in sort.split(',') {
        let pos = column + raw.len() - raw.trim_start().len();
        column += raw.chars().count() + 1;
        let item = raw.trim();
        if item.is_empty() {
            if sort.trim().is_empty() {
                break;
            }
            return Err(QueryError::at(pos, "empty sort key"));
        }
        let (name, descending) = match item.strip_prefix('-') {
            Some(rest) => (rest.trim(), true),
            None => (item.strip_prefix('+').unwrap_or(item).trim(), false),
        };
        let field = Field {
            name: name.to_string(),
            pos,
        };
        let spec = find_field(fields, &field)?;
        if named.contains(&spec.name) {
            return Err(QueryError::at(
                pos,
                format!("'{}' is named twice in sort", spec.name),
            ));
        }
        if named.len() == MAX_SORT_KEYS {
            return Err(QueryError::at(
                pos,
                format!("sort takes at most {MAX_SORT_KEYS} keys"),
            ));
        }
        named.push(spec.name);
        if !spec.sortable || spec.via.is_some() {
            let sortable: Vec<&str> = fields
                .iter()
                .filter(|f| f.sortable && f.via.is_none())
                .map(|f| f.name)
                .collect();
            return Err(QueryError::at(
                pos,
                format!(
                    "'{}' cannot be sorted on (sortable: {})",
                    spec.name,
                    sortable.join(", ")
                ),
            ));
        }
        keys.push(format!(
            "{} {}",
            spec.operand(),
            if descending { "DESC" } else { "ASC" }
        ));
    }
    keys.push(format!("{tiebreak} ASC"));
    Ok(keys.join(", "))
}
