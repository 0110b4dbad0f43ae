//! A ledger's accounting calendar as Surface C renders it: the calendar, its years and
//! their periods, read from `calendar_nodes` in date order, with the derived flags (a year
//! is open while any period is, complete when its periods tile it day by day).

use crate::{Error, Result};
use chrono::NaiveDate;
use rusqlite::Connection;
use serde::Serialize;

/// An accounting period as rendered.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = AccountingPeriod)]
pub struct Period {
    /// Always `PERIOD`.
    #[schema(schema_with = crate::domain::enum_schemas::period_type)]
    pub r#type: &'static str,
    /// Id.
    pub id: i64,
    /// Name.
    #[schema(required = true)]
    pub name: Option<String>,
    /// Description.
    #[schema(required = true)]
    pub description: Option<String>,
    /// Ids from the calendar down to this period.
    pub path: Vec<i64>,
    /// Quarter 1..4.
    #[schema(required = true)]
    pub quarter: Option<i64>,
    /// First day (`YYYY-MM-DD`, in `time_zone`).
    #[schema(schema_with = crate::json_schema::date)]
    pub start_date: String,
    /// Last day, inclusive.
    #[schema(schema_with = crate::json_schema::date)]
    pub end_date: String,
    /// The ledger's time zone.
    pub time_zone: String,
    /// Open for postings.
    pub open: bool,
    /// The year.
    pub parent_id: i64,
}

/// An accounting year as rendered.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = AccountingYear)]
pub struct Year {
    /// Always `YEAR`.
    #[schema(schema_with = crate::domain::enum_schemas::year_type)]
    pub r#type: &'static str,
    /// Id.
    pub id: i64,
    /// Name.
    #[schema(required = true)]
    pub name: Option<String>,
    /// Description.
    #[schema(required = true)]
    pub description: Option<String>,
    /// Ids from the calendar down to this year.
    pub path: Vec<i64>,
    /// First day.
    #[schema(schema_with = crate::json_schema::date)]
    pub start_date: String,
    /// Last day, inclusive.
    #[schema(schema_with = crate::json_schema::date)]
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
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Calendar {
    /// Always `CALENDAR`.
    #[schema(schema_with = crate::domain::enum_schemas::calendar_type)]
    pub r#type: &'static str,
    /// Id.
    pub id: i64,
    /// `[id]`.
    pub path: Vec<i64>,
    /// First day of the first year (null without years).
    #[schema(schema_with = crate::json_schema::date_or_null, required = true)]
    pub start_date: Option<String>,
    /// Last day of the last year.
    #[schema(schema_with = crate::json_schema::date_or_null, required = true)]
    pub end_date: Option<String>,
    /// The ledger's time zone.
    pub time_zone: String,
    /// True when it has years, they follow each other without gaps and each is complete.
    pub complete: bool,
    /// Its years in date order.
    pub years: Vec<Year>,
}

/// A period history entry: one span during which the period was open or closed.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = PeriodHistoryEntry)]
pub struct HistoryEntry {
    /// Id.
    pub id: i64,
    /// The state during the span.
    pub open: bool,
    /// When the state began.
    #[schema(format = DateTime)]
    pub start_date: String,
    /// When it ended (null for the current state).
    #[schema(format = DateTime, required = true)]
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

pub(crate) fn load_calendar(conn: &Connection, ledger_id: i64, tz: &str) -> Result<Calendar> {
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
