//! Revenue management records: charts of accounts, rule sets, run modes, AR ledgers with
//! their accounting calendars, and the collector catalogue.

use super::{check_currency, check_enum, insert, require};
use crate::{Error, Result};
use chrono::{Datelike, Months, NaiveDate};
use rusqlite::Transaction;
use serde::Deserialize;

/// Ledger statuses.
pub const LEDGER_STATUSES: &[&str] = &["ACTIVE", "INACTIVE"];
/// Ledger currency conversion modes.
pub const CONVERT_CURRENCY: &[&str] = &["NONE", "GL", "ACCOUNT_CATEGORY"];

/// A named reference record (chart of accounts, rule set).
#[derive(Debug, Clone, Deserialize)]
pub struct NewNamed {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// Name.
    pub name: String,
}

/// Creates a chart of accounts.
pub fn create_chart_of_accounts(tx: &Transaction<'_>, c: &NewNamed) -> Result<i64> {
    insert(tx, "chart_of_accounts", &[("id", &c.id), ("name", &c.name)])
}

/// Creates a rule set.
pub fn create_rule_set(tx: &Transaction<'_>, c: &NewNamed) -> Result<i64> {
    insert(tx, "rule_sets", &[("id", &c.id), ("name", &c.name)])
}

/// A GL run mode.
#[derive(Debug, Clone, Deserialize)]
pub struct NewRunMode {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// Name.
    pub name: String,
    /// ACTUALS or COLLECTOR_AUTO.
    pub run_type: String,
}

/// Creates a GL run mode.
pub fn create_run_mode(tx: &Transaction<'_>, m: &NewRunMode) -> Result<i64> {
    check_enum("run_type", &m.run_type, &["ACTUALS", "COLLECTOR_AUTO"])?;
    insert(
        tx,
        "gl_run_modes",
        &[("id", &m.id), ("name", &m.name), ("run_type", &m.run_type)],
    )
}

/// An AR ledger to create.
#[derive(Debug, Clone, Deserialize)]
pub struct NewLedger {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// Unique name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// One of [`LEDGER_STATUSES`], default ACTIVE.
    pub status: Option<String>,
    /// One of [`CONVERT_CURRENCY`], default NONE.
    pub convert_currency: Option<String>,
    /// Conversion currency.
    pub conversion_currency: Option<String>,
    /// Chart of accounts.
    pub chart_of_account_id: Option<i64>,
    /// Rule set.
    pub rule_set_id: Option<i64>,
    /// Actuals run mode.
    pub run_mode_actuals_id: Option<i64>,
    /// Conversion rate set.
    pub conversion_rate_set_id: Option<String>,
    /// Currency exchange version.
    pub currency_exchange_version: Option<String>,
    /// Billing account categories the ledger posts for.
    #[serde(default)]
    pub billing_account_category_ids: Vec<i64>,
    /// Expected customer lifetime (months).
    pub expected_customer_lifetime: Option<i64>,
    /// Create zero-amount journal entries.
    #[serde(default)]
    pub create_zero_amount_entries: bool,
    /// IANA time zone of the ledger, default UTC.
    pub timezone_name: Option<String>,
}

/// Creates an AR ledger with its (empty) calendar; the name must be unused.
pub fn create_ledger(tx: &Transaction<'_>, l: &NewLedger) -> Result<i64> {
    let status = l.status.clone().unwrap_or_else(|| "ACTIVE".into());
    let convert = l.convert_currency.clone().unwrap_or_else(|| "NONE".into());
    let tz = l.timezone_name.clone().unwrap_or_else(|| "UTC".into());
    LedgerChecks {
        name: Some(&l.name),
        ledger_id: None,
        status: Some(&status),
        convert_currency: Some(&convert),
        conversion_currency: l.conversion_currency.as_deref(),
        timezone_name: Some(&tz),
        chart_of_account_id: l.chart_of_account_id,
        rule_set_id: l.rule_set_id,
        run_mode_actuals_id: l.run_mode_actuals_id,
    }
    .check(tx)?;
    let id = insert(
        tx,
        "ledgers",
        &[
            ("id", &l.id),
            ("name", &l.name),
            ("description", &l.description),
            ("status", &status),
            ("convert_currency", &convert),
            ("conversion_currency", &l.conversion_currency),
            ("chart_of_account_id", &l.chart_of_account_id),
            ("rule_set_id", &l.rule_set_id),
            ("run_mode_actuals_id", &l.run_mode_actuals_id),
            ("conversion_rate_set_id", &l.conversion_rate_set_id),
            ("currency_exchange_version", &l.currency_exchange_version),
            ("expected_customer_lifetime", &l.expected_customer_lifetime),
            ("create_zero_amount_entries", &l.create_zero_amount_entries),
            ("timezone_name", &tz),
        ],
    )?;
    for cat in &l.billing_account_category_ids {
        require(
            tx,
            "billing_account_categories",
            "billing account category",
            *cat,
        )?;
        insert(
            tx,
            "ledger_categories",
            &[("ledger_id", &id), ("billing_account_category_id", cat)],
        )?;
    }
    insert(
        tx,
        "calendar_nodes",
        &[("ledger_id", &id), ("type", &"CALENDAR"), ("name", &l.name)],
    )?;
    Ok(id)
}

/// The ledger fields that create and update check alike; `None` skips a field.
pub(crate) struct LedgerChecks<'a> {
    /// Must be non-empty and unused by other ledgers.
    pub name: Option<&'a str>,
    /// The ledger being updated (its own name is no conflict).
    pub ledger_id: Option<i64>,
    /// One of [`LEDGER_STATUSES`].
    pub status: Option<&'a str>,
    /// One of [`CONVERT_CURRENCY`].
    pub convert_currency: Option<&'a str>,
    /// A currency code.
    pub conversion_currency: Option<&'a str>,
    /// An IANA zone.
    pub timezone_name: Option<&'a str>,
    /// Must exist.
    pub chart_of_account_id: Option<i64>,
    /// Must exist.
    pub rule_set_id: Option<i64>,
    /// Must exist.
    pub run_mode_actuals_id: Option<i64>,
}

impl LedgerChecks<'_> {
    /// 400 for a bad value, 404 for an unknown reference, 409 for a name in use.
    pub(crate) fn check(&self, tx: &Transaction<'_>) -> Result<()> {
        if let Some(s) = self.status {
            check_enum("status", s, LEDGER_STATUSES)?;
        }
        if let Some(c) = self.convert_currency {
            check_enum("convert_currency", c, CONVERT_CURRENCY)?;
        }
        if let Some(c) = self.conversion_currency {
            check_currency("conversion_currency", c)?;
        }
        if let Some(tz) = self.timezone_name {
            if crate::time::parse_tz(tz).is_none() {
                return Err(Error::bad_request(format!(
                    "timezone_name: '{tz}' is not an IANA time zone"
                )));
            }
        }
        if let Some(name) = self.name {
            if name.trim().is_empty() {
                return Err(Error::bad_request("name must not be empty"));
            }
            let taken = tx
                .prepare_cached(
                    "SELECT 1 FROM ledgers WHERE name = ?1 AND (?2 IS NULL OR id <> ?2)",
                )?
                .exists(rusqlite::params![name, self.ledger_id])?;
            if taken {
                return Err(Error::conflict(format!(
                    "a ledger named '{name}' already exists"
                )));
            }
        }
        if let Some(id) = self.chart_of_account_id {
            require(tx, "chart_of_accounts", "chart of accounts", id)?;
        }
        if let Some(id) = self.rule_set_id {
            require(tx, "rule_sets", "rule set", id)?;
        }
        if let Some(id) = self.run_mode_actuals_id {
            require(tx, "gl_run_modes", "run mode", id)?;
        }
        Ok(())
    }
}

/// An accounting period of a year.
#[derive(Debug, Clone, Deserialize)]
pub struct NewPeriod {
    /// The period being kept, when a year update names an existing one.
    #[serde(default)]
    pub id: Option<i64>,
    /// Name, e.g. `2025-01`.
    pub name: String,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// Quarter 1..4.
    pub quarter: Option<i64>,
    /// First day.
    #[serde(deserialize_with = "calendar_date")]
    pub start_date: NaiveDate,
    /// Last day (inclusive).
    #[serde(deserialize_with = "calendar_date")]
    pub end_date: NaiveDate,
    /// Open for postings.
    #[serde(default = "open_default")]
    pub open: bool,
}

fn open_default() -> bool {
    true
}

/// A calendar day from `YYYY-MM-DD` or from a date-time (its own calendar day), since Surface C
/// clients send calendar bounds either way.
fn calendar_date<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<NaiveDate, D::Error> {
    let text = String::deserialize(d)?;
    parse_calendar_date(&text).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "'{text}' is not a date (YYYY-MM-DD) or an RFC 3339 date-time"
        ))
    })
}

/// Parses `YYYY-MM-DD` or an RFC 3339 date-time into its calendar day.
pub fn parse_calendar_date(text: &str) -> Option<NaiveDate> {
    let t = text.trim();
    NaiveDate::parse_from_str(t, "%Y-%m-%d").ok().or_else(|| {
        chrono::DateTime::parse_from_rfc3339(t)
            .ok()
            .map(|d| d.date_naive())
    })
}

/// An accounting year to add to a ledger's calendar.
#[derive(Debug, Clone, Deserialize)]
pub struct NewYear {
    /// Name, e.g. `FY2025`.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// First day.
    #[serde(deserialize_with = "calendar_date")]
    pub start_date: NaiveDate,
    /// Last day (inclusive).
    #[serde(deserialize_with = "calendar_date")]
    pub end_date: NaiveDate,
    /// The periods; ignored when generating.
    #[serde(default, rename = "accounting-periods")]
    pub accounting_periods: Vec<NewPeriod>,
}

/// Monthly periods (with quarters counted from the year's start) covering a year that starts
/// on the first of a month and ends the day before the same date one or two years later.
pub fn generate_monthly_periods(start: NaiveDate, end: NaiveDate) -> Result<Vec<NewPeriod>> {
    if start.day() != 1 {
        return Err(Error::bad_request(
            "with generate-periods, start_date must be the first day of a month",
        ));
    }
    let one = start
        .checked_add_months(Months::new(12))
        .and_then(|d| d.pred_opt());
    let two = start
        .checked_add_months(Months::new(24))
        .and_then(|d| d.pred_opt());
    if Some(end) != one && Some(end) != two {
        return Err(Error::bad_request(
            "with generate-periods, end_date must end one or two years after start_date (the day before the anniversary)",
        ));
    }
    let mut periods = Vec::new();
    let mut month = 0u32;
    loop {
        let (Some(from), Some(next)) = (
            start.checked_add_months(Months::new(month)),
            start.checked_add_months(Months::new(month + 1)),
        ) else {
            return Err(Error::bad_request("dates out of range"));
        };
        if from > end {
            break;
        }
        let to = next.pred_opt().unwrap_or(next);
        periods.push(NewPeriod {
            id: None,
            name: from.format("%Y-%m").to_string(),
            description: None,
            quarter: Some(i64::from((month % 12) / 3 + 1)),
            start_date: from,
            end_date: to,
            open: true,
        });
        month += 1;
    }
    Ok(periods)
}

/// Adds a year (and its periods) to a ledger's calendar; periods must lie inside the year,
/// in order, without overlapping. Answers the year's id.
pub fn create_year(
    tx: &Transaction<'_>,
    ledger_id: i64,
    y: &NewYear,
    generate: bool,
) -> Result<i64> {
    require(tx, "ledgers", "ledger", ledger_id)?;
    if y.end_date < y.start_date {
        return Err(Error::bad_request("end_date must not be before start_date"));
    }
    let periods = if generate {
        generate_monthly_periods(y.start_date, y.end_date)?
    } else {
        check_periods(y)?;
        y.accounting_periods.clone()
    };
    check_year_free(tx, ledger_id, y.start_date, y.end_date, None)?;
    let calendar_id: i64 = tx.query_row(
        "SELECT id FROM calendar_nodes WHERE ledger_id = ?1 AND type = 'CALENDAR'",
        [ledger_id],
        |r| r.get(0),
    )?;
    let year_id = insert(
        tx,
        "calendar_nodes",
        &[
            ("ledger_id", &ledger_id),
            ("type", &"YEAR"),
            ("parent_id", &calendar_id),
            ("name", &y.name),
            ("description", &y.description),
            ("start_date", &y.start_date.to_string()),
            ("end_date", &y.end_date.to_string()),
            ("open", &true),
        ],
    )?;
    for p in &periods {
        insert_period(tx, ledger_id, year_id, p)?;
    }
    Ok(year_id)
}

/// Inserts one period of a year and opens its history with its initial state.
pub fn insert_period(
    tx: &Transaction<'_>,
    ledger_id: i64,
    year_id: i64,
    p: &NewPeriod,
) -> Result<i64> {
    let id = insert(
        tx,
        "calendar_nodes",
        &[
            ("ledger_id", &ledger_id),
            ("type", &"PERIOD"),
            ("parent_id", &year_id),
            ("name", &p.name),
            ("description", &p.description),
            ("quarter", &p.quarter),
            ("start_date", &p.start_date.to_string()),
            ("end_date", &p.end_date.to_string()),
            ("open", &p.open),
        ],
    )?;
    record_period_state(tx, id, p.open)?;
    Ok(id)
}

/// Closes the period's current history entry and appends one for its new state.
pub fn record_period_state(tx: &Transaction<'_>, period_id: i64, open: bool) -> Result<()> {
    let now = crate::time::to_storage(crate::time::now());
    tx.execute(
        "UPDATE period_history SET end_date = ?2 WHERE period_id = ?1 AND end_date IS NULL",
        rusqlite::params![period_id, now],
    )?;
    insert(
        tx,
        "period_history",
        &[
            ("period_id", &period_id),
            ("open", &open),
            ("start_date", &now),
        ],
    )?;
    Ok(())
}

/// Fails with 409 when `start..=end` overlaps a year of the ledger's calendar other than
/// `except`.
pub fn check_year_free(
    tx: &Transaction<'_>,
    ledger_id: i64,
    start: NaiveDate,
    end: NaiveDate,
    except: Option<i64>,
) -> Result<()> {
    let overlaps = tx
        .prepare_cached(
            "SELECT 1 FROM calendar_nodes WHERE ledger_id = ?1 AND type = 'YEAR'
             AND start_date <= ?3 AND end_date >= ?2 AND (?4 IS NULL OR id <> ?4)",
        )?
        .exists(rusqlite::params![
            ledger_id,
            start.to_string(),
            end.to_string(),
            except
        ])?;
    if overlaps {
        return Err(Error::conflict(
            "the year overlaps a year already in the calendar",
        ));
    }
    Ok(())
}

/// Checks caller-given periods: inside the year, each well-formed, in order, not overlapping.
pub fn check_periods(y: &NewYear) -> Result<()> {
    let mut previous_end: Option<NaiveDate> = None;
    for (i, p) in y.accounting_periods.iter().enumerate() {
        if p.end_date < p.start_date {
            return Err(Error::bad_request(format!(
                "accounting-periods[{i}]: end_date is before start_date"
            )));
        }
        if p.start_date < y.start_date || p.end_date > y.end_date {
            return Err(Error::bad_request(format!(
                "accounting-periods[{i}]: the period lies outside the year"
            )));
        }
        if let Some(q) = p.quarter {
            if !(1..=4).contains(&q) {
                return Err(Error::bad_request(format!(
                    "accounting-periods[{i}]: quarter must be 1..4"
                )));
            }
        }
        if let Some(prev) = previous_end {
            if p.start_date <= prev {
                return Err(Error::bad_request(format!(
                    "accounting-periods[{i}]: periods must be in order and must not overlap"
                )));
            }
        }
        previous_end = Some(p.end_date);
    }
    Ok(())
}

/// A collector of the catalogue.
#[derive(Debug, Clone, Deserialize)]
pub struct NewCollector {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// Unique name.
    pub name: String,
    /// Friendly name.
    pub friendly_name: String,
    /// Description.
    pub description: Option<String>,
    /// Group.
    pub group: String,
    /// Category.
    pub category: String,
}

/// Adds a collector to the catalogue.
pub fn create_collector(tx: &Transaction<'_>, c: &NewCollector) -> Result<i64> {
    insert(
        tx,
        "collectors",
        &[
            ("id", &c.id),
            ("name", &c.name),
            ("friendly_name", &c.friendly_name),
            ("description", &c.description),
            ("group", &c.group),
            ("category", &c.category),
        ],
    )
}

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

/// Typed readers of optional query parameters; each names the parameter in its 400.
pub mod params {
    use crate::{Error, Result};
    use std::collections::HashMap;

    /// An optional int64 parameter.
    pub fn int(p: &HashMap<String, String>, name: &str) -> Result<Option<i64>> {
        p.get(name)
            .map(|raw| {
                raw.trim()
                    .parse::<i64>()
                    .map_err(|_| Error::bad_request(format!("{name}: '{raw}' is not an integer")))
            })
            .transpose()
    }

    /// An optional boolean parameter (`true` or `false`).
    pub fn boolean(p: &HashMap<String, String>, name: &str) -> Result<Option<bool>> {
        p.get(name)
            .map(|raw| match raw.trim().to_ascii_lowercase().as_str() {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => Err(Error::bad_request(format!(
                    "{name}: '{raw}' is not true or false"
                ))),
            })
            .transpose()
    }

    /// An optional text parameter.
    pub fn text(p: &HashMap<String, String>, name: &str) -> Option<String> {
        p.get(name).cloned()
    }

    /// An optional date-time parameter in stored form (a date alone is midnight in `tz`).
    pub fn time(
        p: &HashMap<String, String>,
        name: &str,
        tz: chrono_tz::Tz,
    ) -> Result<Option<String>> {
        p.get(name)
            .map(|raw| super::super::parse_time(name, raw, tz))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn generated_years_end_one_or_two_years_after_their_start() {
        let one = generate_monthly_periods(day("2026-03-01"), day("2027-02-28")).unwrap();
        assert_eq!(one.len(), 12);
        assert_eq!(one[11].end_date, day("2027-02-28"));
        let two = generate_monthly_periods(day("2027-03-01"), day("2029-02-28")).unwrap();
        assert_eq!(two.len(), 24);
        assert_eq!(two[11].end_date, day("2028-02-29"), "leap February");
        assert!(generate_monthly_periods(day("2026-03-02"), day("2027-03-01")).is_err());
        assert!(generate_monthly_periods(day("2026-03-01"), day("2027-03-01")).is_err());
        assert!(generate_monthly_periods(day("2026-03-01"), day("2028-02-28")).is_err());
    }

    #[test]
    fn calendar_dates_accept_a_date_or_a_date_time() {
        assert_eq!(parse_calendar_date("2026-01-31"), Some(day("2026-01-31")));
        assert_eq!(
            parse_calendar_date("2026-01-31T23:00:00-06:00"),
            Some(day("2026-01-31"))
        );
        assert_eq!(parse_calendar_date("31/01/2026"), None);
    }
}
