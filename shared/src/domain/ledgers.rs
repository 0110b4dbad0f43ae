//! AR ledgers as Surface C shows them: the ledger with its accounting calendar (years and
//! periods), reads, lists, updates and deletes, and the open/close history of periods.
//! Creation lives in [`super::revenue`] (shared with the seed loader).

use super::revenue::{
    check_periods, check_year_free, insert_period, params, record_period_state, LedgerChecks,
    Where, CONVERT_CURRENCY, LEDGER_STATUSES,
};
use super::{check_currency, check_enum, require};
use crate::paging::{Page, Paged};
use crate::time::render;
use crate::{Error, Result};
use chrono::NaiveDate;
use chrono_tz::Tz;
use rusqlite::{Connection, OptionalExtension, Transaction};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// An accounting period as rendered.
#[derive(Debug, Clone, Serialize)]
pub struct Period {
    /// Always `PERIOD`.
    pub r#type: &'static str,
    /// Id.
    pub id: i64,
    /// Name.
    pub name: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Ids from the calendar down to this period.
    pub path: Vec<i64>,
    /// Quarter 1..4.
    pub quarter: Option<i64>,
    /// First day (`YYYY-MM-DD`, in `time_zone`).
    pub start_date: String,
    /// Last day, inclusive.
    pub end_date: String,
    /// The ledger's time zone.
    pub time_zone: String,
    /// Open for postings.
    pub open: bool,
    /// The year.
    pub parent_id: i64,
}

/// An accounting year as rendered.
#[derive(Debug, Clone, Serialize)]
pub struct Year {
    /// Always `YEAR`.
    pub r#type: &'static str,
    /// Id.
    pub id: i64,
    /// Name.
    pub name: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Ids from the calendar down to this year.
    pub path: Vec<i64>,
    /// First day.
    pub start_date: String,
    /// Last day, inclusive.
    pub end_date: String,
    /// The ledger's time zone.
    pub time_zone: String,
    /// The calendar.
    pub parent_id: i64,
    /// True while any of its periods is open.
    pub open: bool,
    /// True when its periods cover the year day by day without gaps.
    pub complete: bool,
    /// Its periods in date order.
    #[serde(rename = "accounting-periods")]
    pub accounting_periods: Vec<Period>,
}

/// A ledger's accounting calendar as rendered.
#[derive(Debug, Clone, Serialize)]
pub struct Calendar {
    /// Always `CALENDAR`.
    pub r#type: &'static str,
    /// Id.
    pub id: i64,
    /// `[id]`.
    pub path: Vec<i64>,
    /// First day of the first year (null without years).
    pub start_date: Option<String>,
    /// Last day of the last year.
    pub end_date: Option<String>,
    /// The ledger's time zone.
    pub time_zone: String,
    /// True when it has years, they follow each other without gaps and each is complete.
    pub complete: bool,
    /// Its years in date order.
    pub years: Vec<Year>,
}

/// An AR ledger as rendered.
#[derive(Debug, Clone, Serialize)]
pub struct Ledger {
    /// Id.
    pub id: i64,
    /// Unique name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// ACTIVE or INACTIVE.
    pub status: String,
    /// NONE, GL or ACCOUNT_CATEGORY.
    pub convert_currency: String,
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
    pub billing_account_category_ids: Vec<i64>,
    /// Expected customer lifetime (months).
    pub expected_customer_lifetime: Option<i64>,
    /// Create zero-amount journal entries.
    pub create_zero_amount_entries: bool,
    /// IANA time zone.
    pub timezone_name: String,
    /// True when the ledger can run: chart of accounts, rule set and at least one year.
    pub valid: bool,
    /// The accounting calendar.
    pub calendar: Calendar,
}

/// A ledger as the list renders it: with the names of what it references.
#[derive(Debug, Clone, Serialize)]
pub struct ListedLedger {
    /// The ledger.
    #[serde(flatten)]
    pub ledger: Ledger,
    /// Name of the chart of accounts.
    pub chart_of_account_name: Option<String>,
    /// Name of the rule set.
    pub rule_set_name: Option<String>,
    /// Name of the accounting calendar.
    pub accounting_calendar_name: Option<String>,
}

/// A period history entry: one span during which the period was open or closed.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryEntry {
    /// Id.
    pub id: i64,
    /// The state during the span.
    pub open: bool,
    /// When the state began.
    pub start_date: String,
    /// When it ended (null for the current state).
    pub end_date: Option<String>,
}

struct Node {
    id: i64,
    kind: String,
    parent_id: Option<i64>,
    name: Option<String>,
    description: Option<String>,
    quarter: Option<i64>,
    start: Option<String>,
    end: Option<String>,
    open: bool,
}

/// Whether `periods` (in order) tile `start..=end` day by day.
fn tiles(start: &str, end: &str, periods: &[Period]) -> bool {
    let day = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").ok();
    let mut expected = day(start);
    for p in periods {
        if day(&p.start_date) != expected {
            return false;
        }
        expected = day(&p.end_date).and_then(|d| d.succ_opt());
    }
    !periods.is_empty() && expected == day(end).and_then(|d| d.succ_opt())
}

fn load_calendar(conn: &Connection, ledger_id: i64, tz: &str) -> Result<Calendar> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, type, parent_id, name, description, quarter, start_date, end_date, open
         FROM calendar_nodes WHERE ledger_id = ?1 ORDER BY start_date, id",
    )?;
    let nodes = stmt
        .query_map([ledger_id], |r| {
            Ok(Node {
                id: r.get(0)?,
                kind: r.get(1)?,
                parent_id: r.get(2)?,
                name: r.get(3)?,
                description: r.get(4)?,
                quarter: r.get(5)?,
                start: r.get(6)?,
                end: r.get(7)?,
                open: r.get(8)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let calendar_id = nodes
        .iter()
        .find(|n| n.kind == "CALENDAR")
        .map(|n| n.id)
        .ok_or_else(|| Error::Internal(format!("ledger {ledger_id} has no calendar")))?;
    let mut years: Vec<Year> = nodes
        .iter()
        .filter(|n| n.kind == "YEAR")
        .map(|y| Year {
            r#type: "YEAR",
            id: y.id,
            name: y.name.clone(),
            description: y.description.clone(),
            path: vec![calendar_id, y.id],
            start_date: y.start.clone().unwrap_or_default(),
            end_date: y.end.clone().unwrap_or_default(),
            time_zone: tz.to_string(),
            parent_id: calendar_id,
            open: false,
            complete: false,
            accounting_periods: Vec::new(),
        })
        .collect();
    for year in &mut years {
        year.accounting_periods = nodes
            .iter()
            .filter(|n| n.kind == "PERIOD" && n.parent_id == Some(year.id))
            .map(|p| Period {
                r#type: "PERIOD",
                id: p.id,
                name: p.name.clone(),
                description: p.description.clone(),
                path: vec![calendar_id, year.id, p.id],
                quarter: p.quarter,
                start_date: p.start.clone().unwrap_or_default(),
                end_date: p.end.clone().unwrap_or_default(),
                time_zone: tz.to_string(),
                open: p.open,
                parent_id: year.id,
            })
            .collect();
        year.open = year.accounting_periods.iter().any(|p| p.open);
        year.complete = tiles(&year.start_date, &year.end_date, &year.accounting_periods);
    }
    let contiguous = years.windows(2).all(|w| {
        NaiveDate::parse_from_str(&w[0].end_date, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.succ_opt())
            == NaiveDate::parse_from_str(&w[1].start_date, "%Y-%m-%d").ok()
    });
    Ok(Calendar {
        r#type: "CALENDAR",
        id: calendar_id,
        path: vec![calendar_id],
        start_date: years.first().map(|y| y.start_date.clone()),
        end_date: years.last().map(|y| y.end_date.clone()),
        time_zone: tz.to_string(),
        complete: !years.is_empty() && contiguous && years.iter().all(|y| y.complete),
        years,
    })
}

const LEDGER_COLUMNS: &str = "l.id, l.name, l.description, l.status, l.convert_currency,
    l.conversion_currency, l.chart_of_account_id, l.rule_set_id, l.run_mode_actuals_id,
    l.conversion_rate_set_id, l.currency_exchange_version, l.expected_customer_lifetime,
    l.create_zero_amount_entries, l.timezone_name";

fn ledger_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Ledger> {
    let tz: String = r.get(13)?;
    Ok(Ledger {
        id: r.get(0)?,
        name: r.get(1)?,
        description: r.get(2)?,
        status: r.get(3)?,
        convert_currency: r.get(4)?,
        conversion_currency: r.get(5)?,
        chart_of_account_id: r.get(6)?,
        rule_set_id: r.get(7)?,
        run_mode_actuals_id: r.get(8)?,
        conversion_rate_set_id: r.get(9)?,
        currency_exchange_version: r.get(10)?,
        billing_account_category_ids: Vec::new(),
        expected_customer_lifetime: r.get(11)?,
        create_zero_amount_entries: r.get(12)?,
        valid: false,
        calendar: Calendar {
            r#type: "CALENDAR",
            id: 0,
            path: Vec::new(),
            start_date: None,
            end_date: None,
            time_zone: tz.clone(),
            complete: false,
            years: Vec::new(),
        },
        timezone_name: tz,
    })
}

/// Fills what a ledger row does not carry: categories, calendar, validity.
fn complete_ledger(conn: &Connection, mut l: Ledger) -> Result<Ledger> {
    let mut stmt = conn.prepare_cached(
        "SELECT billing_account_category_id FROM ledger_categories WHERE ledger_id = ?1
         ORDER BY billing_account_category_id",
    )?;
    l.billing_account_category_ids = stmt
        .query_map([l.id], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    l.calendar = load_calendar(conn, l.id, &l.timezone_name)?;
    l.valid =
        l.chart_of_account_id.is_some() && l.rule_set_id.is_some() && !l.calendar.years.is_empty();
    Ok(l)
}

/// Reads one ledger with its calendar; 404 when it does not exist.
pub fn get_ledger(conn: &Connection, id: i64) -> Result<Ledger> {
    let row = conn
        .query_row(
            &format!("SELECT {LEDGER_COLUMNS} FROM ledgers l WHERE l.id = ?1"),
            [id],
            ledger_row,
        )
        .optional()?
        .ok_or_else(|| Error::not_found(format!("ledger {id} does not exist")))?;
    complete_ledger(conn, row)
}

/// The filters of the ledger list.
#[derive(Debug, Default, Clone)]
pub struct LedgerFilter {
    id: Option<i64>,
    name: Option<String>,
    status: Option<String>,
    convert_currency: Option<String>,
    conversion_currency: Option<String>,
    chart_of_account_id: Option<i64>,
    rule_set_id: Option<i64>,
}

impl LedgerFilter {
    /// Reads and checks the list's query parameters.
    pub fn from_params(p: &HashMap<String, String>) -> Result<LedgerFilter> {
        let f = LedgerFilter {
            id: params::int(p, "id")?,
            name: params::text(p, "name"),
            status: params::text(p, "status"),
            convert_currency: params::text(p, "convert_currency"),
            conversion_currency: params::text(p, "conversion_currency"),
            chart_of_account_id: params::int(p, "chart_of_account_id")?,
            rule_set_id: params::int(p, "rule_set_id")?,
        };
        if let Some(s) = &f.status {
            check_enum("status", s, LEDGER_STATUSES)?;
        }
        if let Some(c) = &f.convert_currency {
            check_enum("convert_currency", c, CONVERT_CURRENCY)?;
        }
        if let Some(c) = &f.conversion_currency {
            check_currency("conversion_currency", c)?;
        }
        Ok(f)
    }
}

/// One page of ledgers matching `f`, by id.
pub fn list_ledgers(
    conn: &Connection,
    f: &LedgerFilter,
    page: Page,
) -> Result<Paged<ListedLedger>> {
    let mut w = Where::default();
    w.opt("l.id = ?", f.id);
    w.opt("l.name = ?", f.name.clone());
    w.opt("l.status = ?", f.status.clone());
    w.opt("l.convert_currency = ?", f.convert_currency.clone());
    w.opt("l.conversion_currency = ?", f.conversion_currency.clone());
    w.opt("l.chart_of_account_id = ?", f.chart_of_account_id);
    w.opt("l.rule_set_id = ?", f.rule_set_id);
    let rows = super::revenue::paged_query(
        conn,
        &format!("{LEDGER_COLUMNS}, c.name, r.name"),
        "ledgers l LEFT JOIN chart_of_accounts c ON c.id = l.chart_of_account_id
         LEFT JOIN rule_sets r ON r.id = l.rule_set_id",
        &w,
        "l.id",
        page,
        |r| {
            Ok((
                ledger_row(r)?,
                r.get::<_, Option<String>>(14)?,
                r.get::<_, Option<String>>(15)?,
            ))
        },
    )?;
    let mut items = Vec::with_capacity(rows.items.len());
    for (ledger, chart, rules) in rows.items {
        let ledger = complete_ledger(conn, ledger)?;
        let calendar_name: Option<String> = conn.query_row(
            "SELECT name FROM calendar_nodes WHERE id = ?1",
            [ledger.calendar.id],
            |r| r.get(0),
        )?;
        items.push(ListedLedger {
            ledger,
            chart_of_account_name: chart,
            rule_set_name: rules,
            accounting_calendar_name: calendar_name,
        });
    }
    Ok(Paged {
        items,
        total: rows.total,
        page,
    })
}

/// A ledger update: present fields replace the stored ones, absent (or null) ones are kept.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct LedgerUpdate {
    /// Must equal the path's id when given.
    pub id: Option<i64>,
    /// New unique name.
    pub name: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// ACTIVE or INACTIVE.
    pub status: Option<String>,
    /// NONE, GL or ACCOUNT_CATEGORY.
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
    /// Replaces the category set when given.
    pub billing_account_category_ids: Option<Vec<i64>>,
    /// Expected customer lifetime.
    pub expected_customer_lifetime: Option<i64>,
    /// Create zero-amount entries.
    pub create_zero_amount_entries: Option<bool>,
    /// IANA time zone.
    pub timezone_name: Option<String>,
}

/// Applies `u` to ledger `id`: 404 unknown ledger or reference, 400 bad value, 409 name in use.
pub fn update_ledger(tx: &Transaction<'_>, id: i64, u: &LedgerUpdate) -> Result<()> {
    require(tx, "ledgers", "ledger", id)?;
    if let Some(body_id) = u.id {
        if body_id != id {
            return Err(Error::bad_request(format!(
                "id: {body_id} does not match the ledger {id} of the path"
            )));
        }
    }
    LedgerChecks {
        name: u.name.as_deref(),
        ledger_id: Some(id),
        status: u.status.as_deref(),
        convert_currency: u.convert_currency.as_deref(),
        conversion_currency: u.conversion_currency.as_deref(),
        timezone_name: u.timezone_name.as_deref(),
        chart_of_account_id: u.chart_of_account_id,
        rule_set_id: u.rule_set_id,
        run_mode_actuals_id: u.run_mode_actuals_id,
    }
    .check(tx)?;
    tx.execute(
        "UPDATE ledgers SET
            name = COALESCE(?2, name),
            description = COALESCE(?3, description),
            status = COALESCE(?4, status),
            convert_currency = COALESCE(?5, convert_currency),
            conversion_currency = COALESCE(?6, conversion_currency),
            chart_of_account_id = COALESCE(?7, chart_of_account_id),
            rule_set_id = COALESCE(?8, rule_set_id),
            run_mode_actuals_id = COALESCE(?9, run_mode_actuals_id),
            conversion_rate_set_id = COALESCE(?10, conversion_rate_set_id),
            currency_exchange_version = COALESCE(?11, currency_exchange_version),
            expected_customer_lifetime = COALESCE(?12, expected_customer_lifetime),
            create_zero_amount_entries = COALESCE(?13, create_zero_amount_entries),
            timezone_name = COALESCE(?14, timezone_name)
         WHERE id = ?1",
        rusqlite::params![
            id,
            u.name,
            u.description,
            u.status,
            u.convert_currency,
            u.conversion_currency,
            u.chart_of_account_id,
            u.rule_set_id,
            u.run_mode_actuals_id,
            u.conversion_rate_set_id,
            u.currency_exchange_version,
            u.expected_customer_lifetime,
            u.create_zero_amount_entries,
            u.timezone_name,
        ],
    )?;
    if let Some(name) = &u.name {
        tx.execute(
            "UPDATE calendar_nodes SET name = ?2 WHERE ledger_id = ?1 AND type = 'CALENDAR'",
            rusqlite::params![id, name],
        )?;
    }
    if let Some(categories) = &u.billing_account_category_ids {
        tx.execute("DELETE FROM ledger_categories WHERE ledger_id = ?1", [id])?;
        for cat in categories {
            require(
                tx,
                "billing_account_categories",
                "billing account category",
                *cat,
            )?;
            tx.execute(
                "INSERT OR IGNORE INTO ledger_categories (ledger_id, billing_account_category_id)
                 VALUES (?1, ?2)",
                rusqlite::params![id, cat],
            )?;
        }
    }
    Ok(())
}

/// Deletes a ledger with its calendar, its ledger runs and everything they posted.
pub fn delete_ledger(tx: &Transaction<'_>, id: i64) -> Result<()> {
    require(tx, "ledgers", "ledger", id)?;
    tx.execute("DELETE FROM journal_entries WHERE ledger_id = ?1", [id])?;
    tx.execute("DELETE FROM charge_info_states WHERE ledger_id = ?1", [id])?;
    tx.execute(
        "DELETE FROM run_errors WHERE gl_run_id IN (SELECT id FROM gl_runs WHERE ledger_id = ?1)",
        [id],
    )?;
    tx.execute("DELETE FROM gl_runs WHERE ledger_id = ?1", [id])?;
    tx.execute("DELETE FROM ledgers WHERE id = ?1", [id])?;
    Ok(())
}

/// Fails with 404 unless `node_id` is a node of `kind` under `parent_id` in the ledger.
fn require_node(
    conn: &Connection,
    ledger_id: i64,
    kind: &str,
    node_id: i64,
    parent_id: Option<i64>,
) -> Result<()> {
    let found = conn
        .prepare_cached(
            "SELECT 1 FROM calendar_nodes WHERE id = ?1 AND ledger_id = ?2 AND type = ?3
             AND (?4 IS NULL OR parent_id = ?4)",
        )?
        .exists(rusqlite::params![node_id, ledger_id, kind, parent_id])?;
    if found {
        Ok(())
    } else {
        let what = if kind == "YEAR" {
            "accounting year"
        } else {
            "accounting period"
        };
        Err(Error::not_found(format!(
            "{what} {node_id} does not exist in ledger {ledger_id}"
        )))
    }
}

/// Reads one accounting year of a ledger.
pub fn get_year(conn: &Connection, ledger_id: i64, year_id: i64) -> Result<Year> {
    let ledger = get_ledger(conn, ledger_id)?;
    ledger
        .calendar
        .years
        .into_iter()
        .find(|y| y.id == year_id)
        .ok_or_else(|| {
            Error::not_found(format!(
                "accounting year {year_id} does not exist in ledger {ledger_id}"
            ))
        })
}

/// Fails with 409 when journal entries were posted into any of `period_ids`.
fn check_no_postings(tx: &Transaction<'_>, period_ids: &[i64]) -> Result<()> {
    let mut stmt = tx.prepare_cached("SELECT 1 FROM journal_entries WHERE period_id = ?1")?;
    for id in period_ids {
        if stmt.exists([id])? {
            return Err(Error::conflict(format!(
                "accounting period {id} holds journal entries; delete the ledger runs that posted them first"
            )));
        }
    }
    Ok(())
}

fn period_ids(tx: &Transaction<'_>, year_id: i64) -> Result<Vec<i64>> {
    let mut stmt = tx.prepare_cached(
        "SELECT id FROM calendar_nodes WHERE parent_id = ?1 AND type = 'PERIOD' ORDER BY start_date",
    )?;
    let ids = stmt
        .query_map([year_id], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    Ok(ids)
}

/// Replaces a year's name, description and dates, and, when `periods` is given, its periods:
/// a period with an `id` of this year is updated in place (keeping its history), one without
/// is created, and the year's periods not named are deleted. 409 when the new dates overlap
/// another year or a deleted period holds journal entries.
pub fn update_year(
    tx: &Transaction<'_>,
    ledger_id: i64,
    year_id: i64,
    y: &super::revenue::NewYear,
    periods_given: bool,
) -> Result<()> {
    require(tx, "ledgers", "ledger", ledger_id)?;
    require_node(tx, ledger_id, "YEAR", year_id, None)?;
    if y.end_date < y.start_date {
        return Err(Error::bad_request("end_date must not be before start_date"));
    }
    check_year_free(tx, ledger_id, y.start_date, y.end_date, Some(year_id))?;
    tx.execute(
        "UPDATE calendar_nodes SET name = ?2, description = ?3, start_date = ?4, end_date = ?5
         WHERE id = ?1",
        rusqlite::params![
            year_id,
            y.name,
            y.description,
            y.start_date.to_string(),
            y.end_date.to_string()
        ],
    )?;
    let existing = period_ids(tx, year_id)?;
    if periods_given {
        check_periods(y)?;
        for p in &y.accounting_periods {
            if let Some(pid) = p.id {
                if !existing.contains(&pid) {
                    return Err(Error::bad_request(format!(
                        "accounting-periods: period {pid} is not a period of year {year_id}"
                    )));
                }
            }
        }
        let kept: Vec<i64> = y.accounting_periods.iter().filter_map(|p| p.id).collect();
        let dropped: Vec<i64> = existing
            .iter()
            .copied()
            .filter(|id| !kept.contains(id))
            .collect();
        check_no_postings(tx, &dropped)?;
        for id in &dropped {
            tx.execute("DELETE FROM calendar_nodes WHERE id = ?1", [id])?;
        }
        for p in &y.accounting_periods {
            match p.id {
                Some(pid) => {
                    let was_open: bool = tx.query_row(
                        "SELECT open FROM calendar_nodes WHERE id = ?1",
                        [pid],
                        |r| r.get(0),
                    )?;
                    tx.execute(
                        "UPDATE calendar_nodes SET name = ?2, description = ?3, quarter = ?4,
                         start_date = ?5, end_date = ?6, open = ?7 WHERE id = ?1",
                        rusqlite::params![
                            pid,
                            p.name,
                            p.description,
                            p.quarter,
                            p.start_date.to_string(),
                            p.end_date.to_string(),
                            p.open
                        ],
                    )?;
                    if was_open != p.open {
                        record_period_state(tx, pid, p.open)?;
                    }
                }
                None => {
                    insert_period(tx, ledger_id, year_id, p)?;
                }
            }
        }
    } else {
        let outside = tx
            .prepare_cached(
                "SELECT 1 FROM calendar_nodes WHERE parent_id = ?1 AND type = 'PERIOD'
                 AND (start_date < ?2 OR end_date > ?3)",
            )?
            .exists(rusqlite::params![
                year_id,
                y.start_date.to_string(),
                y.end_date.to_string()
            ])?;
        if outside {
            return Err(Error::bad_request(
                "the new dates leave periods of the year outside it; send accounting-periods too",
            ));
        }
    }
    Ok(())
}

/// Deletes a year and its periods (409 when a period holds journal entries).
pub fn delete_year(tx: &Transaction<'_>, ledger_id: i64, year_id: i64) -> Result<()> {
    require(tx, "ledgers", "ledger", ledger_id)?;
    require_node(tx, ledger_id, "YEAR", year_id, None)?;
    check_no_postings(tx, &period_ids(tx, year_id)?)?;
    tx.execute("DELETE FROM calendar_nodes WHERE id = ?1", [year_id])?;
    Ok(())
}

/// Opens or closes a period and appends the change to its history (also when the state
/// does not change: the call is recorded as the platform's audit trail would).
pub fn set_period_open(
    tx: &Transaction<'_>,
    ledger_id: i64,
    year_id: i64,
    period_id: i64,
    open: bool,
) -> Result<()> {
    require(tx, "ledgers", "ledger", ledger_id)?;
    require_node(tx, ledger_id, "YEAR", year_id, None)?;
    require_node(tx, ledger_id, "PERIOD", period_id, Some(year_id))?;
    tx.execute(
        "UPDATE calendar_nodes SET open = ?2 WHERE id = ?1",
        rusqlite::params![period_id, open],
    )?;
    record_period_state(tx, period_id, open)
}

/// One page of a period's history, oldest first.
pub fn period_history(
    conn: &Connection,
    ledger_id: i64,
    year_id: i64,
    period_id: i64,
    page: Page,
    tz: Tz,
) -> Result<Paged<HistoryEntry>> {
    require(conn, "ledgers", "ledger", ledger_id)?;
    require_node(conn, ledger_id, "YEAR", year_id, None)?;
    require_node(conn, ledger_id, "PERIOD", period_id, Some(year_id))?;
    let mut w = Where::default();
    w.opt("period_id = ?", Some(period_id));
    super::revenue::paged_query(
        conn,
        "id, open, start_date, end_date",
        "period_history",
        &w,
        "id",
        page,
        |r| {
            Ok(HistoryEntry {
                id: r.get(0)?,
                open: r.get(1)?,
                start_date: render(&r.get::<_, String>(2)?, tz),
                end_date: r.get::<_, Option<String>>(3)?.map(|e| render(&e, tz)),
            })
        },
    )
}
