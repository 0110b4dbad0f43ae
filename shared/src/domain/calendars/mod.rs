//! Accounting calendars of AR ledgers: years and their periods, created (by hand or generated
//! monthly), replaced and deleted, period open/close commands and their history. How a
//! calendar is read and rendered is in [`view`].
//!
//! Invariants: the years of a calendar do not overlap; the periods of a year lie inside it,
//! in order, without overlapping; every change of a period's open state (and every open or
//! close command, even one that changes nothing) appends to its history; periods that hold
//! journal entries are not deleted.
//!
//! This module is the one writer of `calendar_nodes` and `period_history`: a ledger's
//! create and rename make and name its calendar through [`create_ledger_calendar`] and
//! [`rename_ledger_calendar`].

pub mod view;

use super::{insert, require};
use crate::query::{Page, Paged, Selection};
use crate::time::render;
use crate::{Error, Result};
use chrono::{Datelike, Months, NaiveDate};
use chrono_tz::Tz;
use rusqlite::{Connection, OptionalExtension, Transaction};
use serde::Deserialize;
use view::{HistoryEntry, Year};

/// An accounting period of a year.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[schema(as = NewAccountingPeriod)]
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
    #[schema(minimum = 1, maximum = 4)]
    pub quarter: Option<i64>,
    /// First day.
    #[serde(deserialize_with = "calendar_date")]
    #[schema(value_type = String, format = Date)]
    pub start_date: NaiveDate,
    /// Last day (inclusive).
    #[serde(deserialize_with = "calendar_date")]
    #[schema(value_type = String, format = Date)]
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
    parse_calendar_date(&text)
        .ok_or_else(|| serde::de::Error::custom(crate::time::not_a_date(&text)))
}

/// Makes the calendar of new ledger `ledger_id`, named as the ledger.
pub(crate) fn create_ledger_calendar(
    tx: &Transaction<'_>,
    ledger_id: i64,
    name: &str,
) -> Result<()> {
    insert(
        tx,
        "calendar_nodes",
        &[
            ("ledger_id", &ledger_id),
            ("type", &"CALENDAR"),
            ("name", &name),
        ],
    )?;
    Ok(())
}

/// Renames the calendar of ledger `ledger_id` with the ledger.
pub(crate) fn rename_ledger_calendar(
    tx: &Transaction<'_>,
    ledger_id: i64,
    name: &str,
) -> Result<()> {
    super::check_text("name", name)?;
    tx.execute(
        "UPDATE calendar_nodes SET name = ?2 WHERE ledger_id = ?1 AND type = 'CALENDAR'",
        rusqlite::params![ledger_id, name],
    )?;
    Ok(())
}

/// Parses `YYYY-MM-DD` or an RFC 3339 date-time into its calendar day; `None` outside years
/// [`crate::time::MIN_YEAR`]..=[`crate::time::MAX_YEAR`].
pub fn parse_calendar_date(text: &str) -> Option<NaiveDate> {
    let t = text.trim();
    NaiveDate::parse_from_str(t, "%Y-%m-%d")
        .ok()
        .or_else(|| {
            chrono::DateTime::parse_from_rfc3339(t)
                .ok()
                .map(|d| d.date_naive())
        })
        .filter(|d| crate::time::within_years(*d))
}

/// An accounting year to add to a ledger's calendar, or the body of a year update. The
/// members a year renders that no body sets (`type`, `path`, `time_zone`, `parent_id`,
/// `open`, `complete`, and the like of its periods) are ignored, so a client may PUT back
/// what it read.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[schema(as = NewAccountingYear)]
pub struct NewYear {
    /// PUT: when given, must equal the path's yid (POST ignores it). Other members an
    /// AccountingYear renders are ignored.
    #[serde(default)]
    pub id: Option<i64>,
    /// Name, e.g. `FY2025`.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// First day.
    #[serde(deserialize_with = "calendar_date")]
    #[schema(value_type = String, format = Date)]
    pub start_date: NaiveDate,
    /// Last day (inclusive).
    #[serde(deserialize_with = "calendar_date")]
    #[schema(value_type = String, format = Date)]
    pub end_date: NaiveDate,
    /// The periods; ignored when generating.
    #[serde(default, rename = "accounting-periods")]
    #[schema(max_items = 1000)]
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
/// in order, without overlapping. Answers the year's id (the year's own `id` member is
/// ignored: see [`create_year_at`]).
pub fn create_year(
    tx: &Transaction<'_>,
    ledger_id: i64,
    y: &NewYear,
    generate: bool,
) -> Result<i64> {
    create_year_at(tx, None, ledger_id, y, generate)
}

/// [`create_year`] under id `id` when given (a fixture document's year keeps its id; the
/// caller makes sure no calendar node holds it, see [`move_node`]), else the next free one.
pub fn create_year_at(
    tx: &Transaction<'_>,
    id: Option<i64>,
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
            ("id", &id),
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

/// The type (`CALENDAR`, `YEAR`, `PERIOD`) of calendar node `id`, None when there is none.
pub fn node_type(tx: &Transaction<'_>, id: i64) -> Result<Option<String>> {
    use rusqlite::OptionalExtension;
    Ok(tx
        .query_row("SELECT type FROM calendar_nodes WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .optional()?)
}

/// Moves calendar node `id` (a ledger's calendar or a period) to the next free id, with
/// everything that refers to it (its children, a period's history and journal entries), so
/// that a year numbered by a fixture document can take `id`. Answers the new id.
pub fn move_node(tx: &Transaction<'_>, id: i64) -> Result<i64> {
    tx.execute(
        "INSERT INTO calendar_nodes (ledger_id, type, parent_id, name, description, quarter,
                                     start_date, end_date, open)
         SELECT ledger_id, type, parent_id, name, description, quarter, start_date, end_date, open
         FROM calendar_nodes WHERE id = ?1",
        [id],
    )?;
    let to = tx.last_insert_rowid();
    for sql in [
        "UPDATE calendar_nodes SET parent_id = ?2 WHERE parent_id = ?1",
        "UPDATE period_history SET period_id = ?2 WHERE period_id = ?1",
    ] {
        tx.execute(sql, [id, to])?;
    }
    super::chargeinfo::move_entries_to_period(tx, id, to)?;
    tx.execute("DELETE FROM calendar_nodes WHERE id = ?1", [id])?;
    Ok(to)
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
    let now = crate::time::to_storage(crate::time::now_for(tx)?);
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

/// The length rule ([`super::check_text`]) on a year's and its periods' names and
/// descriptions: [`update_year`] writes them with its own UPDATEs.
fn check_texts(y: &NewYear) -> Result<()> {
    check_period_count(y)?;
    let mut texts = vec![
        ("name", Some(&y.name)),
        ("description", y.description.as_ref()),
    ];
    for p in &y.accounting_periods {
        texts.push(("name", Some(&p.name)));
        texts.push(("description", p.description.as_ref()));
    }
    for (field, value) in texts {
        if let Some(v) = value {
            super::check_text(field, v)?;
        }
    }
    Ok(())
}

/// Most `accounting-periods` in one year body: a year of daily periods has 366, and a year
/// may span two; the bound keeps one body from writing an unbounded number of rows.
pub const MAX_PERIODS_PER_YEAR: usize = 1000;

/// 400 past [`MAX_PERIODS_PER_YEAR`].
fn check_period_count(y: &NewYear) -> Result<()> {
    let n = y.accounting_periods.len();
    if n > MAX_PERIODS_PER_YEAR {
        return Err(Error::bad_request(format!(
            "accounting-periods: at most {MAX_PERIODS_PER_YEAR} per year, found {n}"
        )));
    }
    Ok(())
}

/// Checks caller-given periods: inside the year, each well-formed, in order, not overlapping.
pub fn check_periods(y: &NewYear) -> Result<()> {
    check_period_count(y)?;
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
    // The ledger's time zone read here, not through `ledgers` (which reads its calendar from
    // this module): the two modules stay one above the other.
    let tz: String = conn
        .prepare_cached("SELECT timezone_name FROM ledgers WHERE id = ?1")?
        .query_row([ledger_id], |r| r.get(0))
        .optional()?
        .ok_or_else(|| Error::not_found(format!("ledger {ledger_id} does not exist")))?;
    view::load_calendar(conn, ledger_id, &tz)?
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
    y: &NewYear,
    periods_given: bool,
) -> Result<()> {
    require(tx, "ledgers", "ledger", ledger_id)?;
    require_node(tx, ledger_id, "YEAR", year_id, None)?;
    if let Some(body_id) = y.id.filter(|b| *b != year_id) {
        return Err(Error::bad_request(format!(
            "id: {body_id} does not match the accounting year {year_id} of the path"
        )));
    }
    if y.end_date < y.start_date {
        return Err(Error::bad_request("end_date must not be before start_date"));
    }
    check_year_free(tx, ledger_id, y.start_date, y.end_date, Some(year_id))?;
    check_texts(y)?;
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
    Selection::new("id")
        .scope("period_id = ?", vec![period_id.into()])
        .page(page)
        .fetch_paged(
            conn,
            "id, open, start_date, end_date",
            "period_history",
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

super::fixture_columns_writer!("calendar_nodes");

#[cfg(test)]
mod tests;
