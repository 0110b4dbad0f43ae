//! Writes and reads of platform records shared by every surface. Each create function takes
//! the transaction of a [`crate::store::TenantDb::write`] closure and a `New*` value, checks
//! it, and answers the new record's id. The API handlers and the seed loader call the same
//! functions, so seeded data obeys the rules API data obeys.

pub mod account_adjustments;
pub mod account_status;
pub mod accounts;
pub mod agreements;
pub mod bill_batch_membership;
pub mod bill_batches;
pub mod billing;
pub mod catalog;
pub mod chargeinfo;
pub mod collect;
pub mod edits;
pub mod glrun;
pub mod ledgers;
pub mod payments;
pub mod replication;
pub mod revenue;
pub mod usage;

#[cfg(test)]
mod test_support;

use crate::{Error, Result};
use rusqlite::types::ToSql;
use rusqlite::Transaction;

/// Inserts one row and answers its rowid. Column names are compile-time constants of the
/// callers, never input.
pub(crate) fn insert(
    tx: &Transaction<'_>,
    table: &str,
    cols: &[(&str, &dyn ToSql)],
) -> Result<i64> {
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
    tx.execute(
        &format!("INSERT INTO \"{table}\" ({names}) VALUES ({marks})"),
        values.as_slice(),
    )?;
    Ok(tx.last_insert_rowid())
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
        Err(Error::bad_request(format!(
            "{field}: '{value}' is not one of {}",
            allowed.join(", ")
        )))
    }
}

/// ISO 4217 codes the platform accepts wherever a currency appears.
pub const CURRENCY_CODES: &[&str] = &[
    "USD", "GBP", "EUR", "SEK", "NOK", "DKK", "CAD", "AUD", "ZAR", "NZD", "MXN", "INR", "JPY",
    "SAR", "QAR", "EGP", "AED", "BHD", "KWD", "OMR", "HKD", "CHF", "ILS", "CNY", "BRL", "PLN",
    "COP", "PEN", "RUB", "SGD", "IDR", "MYR", "KRW", "TWD", "PKR", "ARS", "CLP", "CRC", "CZK",
    "HUF", "ISK", "PHP", "RON", "THB", "TRY", "BWP", "NGN",
];

/// Checks a currency code against [`CURRENCY_CODES`].
pub fn check_currency(field: &str, value: &str) -> Result<()> {
    check_enum(field, value, CURRENCY_CODES)
}

/// A stored date-time from input text (date or date-time), naming the field when invalid.
pub fn parse_time(field: &str, value: &str, tz: chrono_tz::Tz) -> Result<String> {
    crate::time::parse_date_or_datetime(value, tz)
        .map(crate::time::to_storage)
        .ok_or_else(|| {
            Error::bad_request(format!(
                "{field}: '{value}' is not a date (YYYY-MM-DD) or an RFC 3339 date-time"
            ))
        })
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
