//! The rules of every surface, one module per business object: [`accounts`] (with their
//! categories, bill cycles and status commands; the other account commands are in
//! [`account_commands`]), [`invoices`], [`payments`], [`adjustments`], [`actions`],
//! [`agreements`] (with their services and true-ups), [`bill_batches`], [`catalog`]
//! (products, prices, usage rules), [`usage`] (posting, rate plans, reads), [`ledgers`],
//! [`calendars`], [`collect`] (collector runs and their catalogue), [`glrun`] (ledger runs),
//! [`chargeinfo`], [`replication`], [`policy`] (the tenant's billing policy) and
//! [`transitions`] (what the test clock drives when it advances); [`lists`] holds the read
//! models of Surfaces A's and B's lists (reads only). Functions take typed inputs (never HTTP
//! requests or query maps) and the connection or transaction of a
//! [`crate::store::TenantDb`] call; [`require`] is the one "does this row exist" check.
//!
//! Each create function takes a `New*` value, checks it, and answers the new record's id;
//! an edit checks its fields with the same rules as the create. The API handlers and the
//! seed loader call the same functions, so seeded data obeys the rules API data obeys.

pub mod account_commands;
pub mod accounts;
pub mod actions;
pub mod adjustments;
pub mod agreements;
pub mod bill_batch_membership;
pub mod bill_batches;
pub mod billing;

pub mod analytics_export;
pub mod calendars;
pub mod catalog;
pub mod chargeinfo;
pub mod collect;
pub mod enum_schemas;
pub mod glrun;
pub mod invoices;
pub mod ledgers;
pub mod lists;
pub mod payments;
pub mod policy;
pub mod run_progress;
pub mod status;
pub mod transitions;
pub mod usage;

use crate::{Error, Result};
use rusqlite::types::ToSql;
use rusqlite::Transaction;

/// The longest identifier (numbers, names, codes, references, statuses...), in characters.
pub const MAX_IDENTIFIER_CHARS: usize = 255;
/// The longest free text (descriptions, reasons, messages, attribute matches), in characters.
pub const MAX_FREE_TEXT_CHARS: usize = 4000;
/// The text columns holding free text; every other text column holds an identifier.
const FREE_TEXT_COLUMNS: &[&str] = &[
    "description",
    "reason",
    "secondary_reason",
    "error_message",
    "error_msg",
    "attribute_match",
    "note",
];
/// Columns holding a JSON document the domain has parsed and checked by its structure
/// (charge info values, rate definitions, collector operations): bounded by the body limit,
/// not by a text length.
const STRUCTURED_COLUMNS: &[&str] = &["ci_values", "rate", "collector_operations"];

/// Whether XML 1.0 can carry `c` (its `Char` production): tab, newline, carriage return and
/// everything from U+0020 except U+FFFE and U+FFFF (surrogates are not `char`s at all).
pub fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && c != '\u{FFFE}' && c != '\u{FFFF}')
}

/// The first character of `value` that XML 1.0 cannot carry, if any.
pub fn first_non_xml_char(value: &str) -> Option<char> {
    value.chars().find(|c| !is_xml_char(*c))
}

/// `value` with every character XML 1.0 cannot carry replaced by U+FFFD: for text written
/// into XML that may predate the rule or echo a client (a stored row, a fault message
/// quoting a decoded path); the replacement shows that something was there.
pub fn xml_safe(value: &str) -> std::borrow::Cow<'_, str> {
    if first_non_xml_char(value).is_none() {
        return std::borrow::Cow::Borrowed(value);
    }
    let replaced = value.chars().map(|c| {
        if is_xml_char(c) {
            c
        } else {
            char::REPLACEMENT_CHARACTER
        }
    });
    std::borrow::Cow::Owned(replaced.collect())
}

/// The character rule for text on every surface, as a message naming `field`: text holds
/// only what XML 1.0 can carry, so that whatever one surface stores, Surface A can answer.
pub fn text_chars_error(field: &str, value: &str) -> Option<String> {
    let c = first_non_xml_char(value)?;
    Some(format!(
        "{} must not contain the character U+{:04X} (control characters other than tab, newline and carriage return, U+FFFE and U+FFFF cannot be carried by XML 1.0)",
        shown_name(field),
        c as u32
    ))
}

/// The one rule for text fields on every surface: only characters XML 1.0 can carry
/// ([`text_chars_error`]); an identifier has at most [`MAX_IDENTIFIER_CHARS`] characters,
/// free text at most [`MAX_FREE_TEXT_CHARS`]. `field` is the column name (the name Surface
/// B uses); the message also gives Surface A's camelCase spelling when it differs.
/// [`insert`] and [`update`] apply it to every text value they write, so each create and
/// edit obeys it without a check of its own.
pub fn check_text(field: &str, value: &str) -> Result<()> {
    if let Some(message) = text_chars_error(field, value) {
        return Err(Error::bad_request(message));
    }
    if STRUCTURED_COLUMNS.contains(&field) {
        return Ok(());
    }
    let max = if FREE_TEXT_COLUMNS.contains(&field) {
        MAX_FREE_TEXT_CHARS
    } else {
        MAX_IDENTIFIER_CHARS
    };
    let found = value.chars().count();
    if found <= max {
        return Ok(());
    }
    Err(Error::bad_request(format!(
        "{} must be at most {max} characters, found {found}",
        shown_name(field)
    )))
}

/// `field` as messages show it: with Surface A's camelCase spelling when it differs.
fn shown_name(field: &str) -> String {
    let camel = camel_case(field);
    if camel == field {
        field.to_string()
    } else {
        format!("{field} ({camel})")
    }
}

/// `account_num` -> `accountNum`.
fn camel_case(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut upper = false;
    for c in field.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// [`check_text`] on a column value, when it is text.
fn check_value(field: &str, value: &dyn ToSql) -> Result<()> {
    use rusqlite::types::{ToSqlOutput, Value, ValueRef};
    match value.to_sql()? {
        ToSqlOutput::Borrowed(ValueRef::Text(t)) => check_text(field, &String::from_utf8_lossy(t)),
        ToSqlOutput::Owned(Value::Text(s)) => check_text(field, &s),
        _ => Ok(()),
    }
}

/// Inserts one row and answers its rowid, after [`check_text`] on every text value. Column
/// names are compile-time constants of the callers, never input.
pub(crate) fn insert(
    tx: &Transaction<'_>,
    table: &str,
    cols: &[(&str, &dyn ToSql)],
) -> Result<i64> {
    for (name, value) in cols {
        check_value(name, *value)?;
    }
    let names = cols
        .iter()
        .map(|(n, _)| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let marks = (1..=cols.len())
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let values: Vec<&dyn ToSql> = cols.iter().map(|(_, v)| *v).collect();
    // Cached: a seed or a run inserts many rows of one shape, and SQLite would otherwise
    // parse the statement again for every row.
    tx.prepare_cached(&format!(
        "INSERT INTO \"{table}\" ({names}) VALUES ({marks})"
    ))?
    .execute(values.as_slice())?;
    Ok(tx.last_insert_rowid())
}

/// `UPDATE table SET col = value, ... WHERE id = ?` for the columns whose value is `Some`,
/// after [`check_text`] on every text value. Column names are compile-time constants of the
/// callers, never input.
pub(crate) fn update(
    tx: &Transaction<'_>,
    table: &str,
    id: i64,
    cols: &[(&str, &dyn OptionalValue)],
) -> Result<()> {
    let present: Vec<(&str, &dyn ToSql)> = cols
        .iter()
        .filter_map(|(name, v)| v.value().map(|v| (*name, v)))
        .collect();
    if present.is_empty() {
        return Ok(());
    }
    for (name, value) in &present {
        check_value(name, *value)?;
    }
    let sets = present
        .iter()
        .enumerate()
        .map(|(i, (name, _))| format!("\"{name}\" = ?{}", i + 1))
        .collect::<Vec<_>>()
        .join(", ");
    let mut values: Vec<&dyn ToSql> = present.iter().map(|(_, v)| *v).collect();
    values.push(&id);
    tx.execute(
        &format!(
            "UPDATE \"{table}\" SET {sets} WHERE id = ?{}",
            present.len() + 1
        ),
        values.as_slice(),
    )?;
    Ok(())
}

/// Column values a fixture document writes to an existing row, already in stored form:
/// the state fields no create takes (`fixtures::state`: balances, statuses reached by time)
/// and fields updated in place (`fixtures::update`). Column names are the loader's constants
/// or columns it read from the row, never input. Each owner takes those of its own tables in
/// a `write_fixture_columns` ([`fixture_columns_writer`], so every table keeps one writer),
/// answering `None` for a table it does not own; [`fixture_columns`] views them as
/// [`update`]'s columns.
pub type FixtureColumns<'a> = &'a [(&'a str, rusqlite::types::Value)];

/// `cols` as [`update`] takes them: every value present (a null stores NULL).
pub(crate) fn fixture_columns<'a>(
    cols: FixtureColumns<'a>,
) -> Vec<(&'a str, &'a dyn OptionalValue)> {
    cols.iter()
        .map(|(name, value)| (*name, value as &dyn OptionalValue))
        .collect()
}

/// Declares an owner's `write_fixture_columns` for the tables it names (its own): a
/// fixture document's columns of one row (state fields, fields updated in place:
/// [`FixtureColumns`]), written with [`update`]; `None` for another module's table.
/// `shared/tests/owners.rs` reads the named tables as written by the calling module.
macro_rules! fixture_columns_writer {
    ($($table:literal),+ $(,)?) => {
        /// A fixture document's columns of one row of this module's tables (state fields,
        /// fields updated in place: [`crate::domain::FixtureColumns`]); `None` when `table`
        /// is another module's.
        pub fn write_fixture_columns(
            tx: &rusqlite::Transaction<'_>,
            table: &str,
            id: i64,
            cols: $crate::domain::FixtureColumns<'_>,
        ) -> Option<$crate::Result<()>> {
            let cols = $crate::domain::fixture_columns(cols);
            Some(match table {
                $($table => $crate::domain::update(tx, $table, id, &cols),)+
                _ => return None,
            })
        }
    };
}
pub(crate) use fixture_columns_writer;

/// Declares a run table's `run_step` and `start_run` for the table it names (its own): the
/// ledger runs and the collector runs keep the same status and clock columns
/// (`status`, `date_started`, `next_step_at`; statuses [`glrun::RunStatus`]) and progress
/// with the clock the same way. `shared/tests/owners.rs` reads the named table as written by
/// the calling module.
macro_rules! run_progress_ops {
    ($table:literal) => {
        /// A run's status and, while it progresses with the clock, the stored instant of its
        /// next step; None when the run does not exist.
        pub fn run_step(
            conn: &rusqlite::Connection,
            id: i64,
        ) -> $crate::Result<Option<($crate::domain::glrun::RunStatus, Option<String>)>> {
            use rusqlite::OptionalExtension;
            Ok(conn
                .prepare_cached(concat!(
                    "SELECT status, next_step_at FROM ",
                    $table,
                    " WHERE id = ?1"
                ))?
                .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?)
        }

        /// Starts NOT_STARTED run `id` at stored instant `at` (RUNNING, `date_started`);
        /// `next_step_at`: when the clock ends it (None: the caller ends it at once). False
        /// when the run is gone or not NOT_STARTED.
        pub fn start_run(
            tx: &rusqlite::Transaction<'_>,
            id: i64,
            at: &str,
            next_step_at: Option<&str>,
        ) -> $crate::Result<bool> {
            use $crate::domain::glrun::RunStatus;
            let changed = tx.execute(
                concat!(
                    "UPDATE ",
                    $table,
                    " SET status = ?2, date_started = ?3, next_step_at = ?4
                     WHERE id = ?1 AND status = ?5"
                ),
                rusqlite::params![
                    id,
                    RunStatus::Running,
                    at,
                    next_step_at,
                    RunStatus::NotStarted
                ],
            )?;
            Ok(changed > 0)
        }
    };
}
pub(crate) use run_progress_ops;

impl OptionalValue for rusqlite::types::Value {
    fn value(&self) -> Option<&dyn ToSql> {
        Some(self)
    }
}

/// An optional column value: `None` leaves the column as it is.
pub(crate) trait OptionalValue {
    /// The value to store, or `None` to keep the column.
    fn value(&self) -> Option<&dyn ToSql>;
}

impl<T: ToSql> OptionalValue for Option<T> {
    fn value(&self) -> Option<&dyn ToSql> {
        self.as_ref().map(|v| v as &dyn ToSql)
    }
}

/// Deserializes a body member that may be absent (`None`, with `#[serde(default)]`), null
/// (`Some(None)`) or a value (`Some(Some(v))`): an update keeps an absent member and clears
/// a null one, which plain `Option` cannot tell apart.
pub fn nullable<'de, T, D>(d: D) -> std::result::Result<Option<Option<T>>, D::Error>
where
    T: serde::Deserialize<'de>,
    D: serde::Deserializer<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(d).map(Some)
}

/// Fails with 404 unless `table` has a row with `id` (inside a write transaction or a read).
pub fn require(conn: &rusqlite::Connection, table: &str, what: &str, id: i64) -> Result<()> {
    let found = conn
        .prepare_cached(&format!("SELECT 1 FROM \"{table}\" WHERE id = ?1"))?
        .exists([id])?;
    if found {
        Ok(())
    } else {
        Err(Error::not_found(format!("{what} {id} does not exist")))
    }
}

/// Checks that `value` is one of `allowed`, naming the field otherwise.
pub fn check_enum(field: &str, value: &str, allowed: &[&str]) -> Result<()> {
    if allowed.contains(&value) {
        Ok(())
    } else {
        Err(not_one_of(field, value, allowed))
    }
}

/// The 400 of a value of `field` outside its closed set `allowed` (`check_enum`, and the
/// status enums' `parse_field`).
pub(crate) fn not_one_of(field: &str, value: &str, allowed: &[&str]) -> Error {
    Error::bad_request(format!(
        "{field}: {} is not one of {}",
        crate::error::quoted(value),
        allowed.join(", ")
    ))
}

/// ISO 4217 codes the platform accepts wherever a currency appears (kept with the amounts,
/// below the rating rules that round to them).
pub use crate::money::CURRENCY_CODES;

/// Checks a currency code against [`CURRENCY_CODES`].
pub fn check_currency(field: &str, value: &str) -> Result<()> {
    check_enum(field, value, CURRENCY_CODES)
}

/// A stored date-time from input text (date or date-time), naming the field when invalid
/// or outside years [`crate::time::MIN_YEAR`]..=[`crate::time::MAX_YEAR`].
pub fn parse_time(field: &str, value: &str, tz: chrono_tz::Tz) -> Result<String> {
    crate::time::parse_date_or_datetime(value, tz)
        .map(crate::time::to_storage)
        .ok_or_else(|| Error::bad_request(format!("{field}: {}", crate::time::not_a_date(value))))
}

/// [`parse_time`] for an optional field.
pub fn parse_opt_time(
    field: &str,
    value: &Option<String>,
    tz: chrono_tz::Tz,
) -> Result<Option<String>> {
    value
        .as_deref()
        .map(|v| parse_time(field, v, tz))
        .transpose()
}

#[cfg(test)]
mod text_length_tests {
    use super::*;

    #[test]
    fn identifiers_and_free_text_have_their_maximum() {
        assert!(check_text("account_num", &"a".repeat(255)).is_ok());
        let e = check_text("account_num", &"a".repeat(256)).unwrap_err();
        assert!(
            e.to_string()
                .contains("account_num (accountNum) must be at most 255"),
            "{e}"
        );
        assert!(check_text("description", &"é".repeat(4000)).is_ok());
        let e = check_text("description", &"é".repeat(4001)).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("description must be at most 4000"),
            "{e}"
        );
        assert!(check_text("ci_values", &"1".repeat(10_000)).is_ok());
    }

    #[test]
    fn text_holds_only_what_xml_can_carry() {
        assert!(check_text("note", "tab\tnewline\ncr\r é \u{7f} \u{85} \u{10FFFF}").is_ok());
        for (bad, code) in [
            ('\0', "U+0000"),
            ('\u{1}', "U+0001"),
            ('\u{1b}', "U+001B"),
            ('\u{FFFE}', "U+FFFE"),
            ('\u{FFFF}', "U+FFFF"),
        ] {
            let e = check_text("account_num", &format!("a{bad}b"))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("account_num (accountNum) must not contain") && e.contains(code),
                "{e}"
            );
            assert!(check_text("ci_values", &format!("{bad}")).is_err());
        }
    }
}
