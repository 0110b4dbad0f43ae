//! Collector runs: turn the tenant's billing activity into charge info records.
//!
//! A run executes its collectors (named from the catalogue; all of them when none are named)
//! over the data fetch window `[data_fetch_from_date - overlap_fetch_time,
//! data_fetch_to_date)`. Each collector's catalogue `category` picks its source:
//!
//! | category   | source                                   | charge info type |
//! |------------|------------------------------------------|------------------|
//! | USAGE      | usage events not voided (by start_time)  | USAGE_EVENT (parent) with one USAGE child per event charge |
//! | USAGE      | collected events voided since (by voided_at) | the same, negated (a reversal, dated as the event) |
//! | INVOICE    | invoices not CANCELED (by occurred_on)   | INVOICE          |
//! | INVOICE    | collected invoices canceled since (by canceled_at) | INVOICE, negated (a reversal, dated as the invoice) |
//! | PAYMENT    | payments (by occurred_on)                | PAYMENT          |
//! | ADJUSTMENT | account adjustments (by occurred_on)     | ADJUSTMENT       |
//!
//! `collector_operations` names catalogue collectors or, as the platform names its
//! operations, one of [`PLATFORM_OPERATIONS`] (INSERT_SERVICES, ...), which collects the
//! source of its category whatever the catalogue holds; the run keeps the names as sent.
//! `GET /collectors` lists both kinds, so every name a run accepts is listed.
//!
//! `UNIQUE(source_kind, source_id)` keeps a source record from being collected twice, so
//! overlapping windows are harmless. A record that cannot be collected (a usage event without
//! a billing account) and a collector without a known source each add a run error; the run
//! then ends ERROR, everything else it could collect is kept.
//!
//! The run executes inside the request's write transaction: it is stored NOT_STARTED, moves
//! to RUNNING and ends COMPLETE or ERROR before the response is sent.

//!
//! The catalogue of collectors is [`catalogue`]; what each category reads and how a source
//! record becomes charge info is [`sources`].

pub mod catalogue;
mod sources;

use super::{check_enum, insert, parse_time, require};
use crate::query::{Page, Paged, Selection};
use crate::time::{render, to_storage};
use crate::{Error, Result};
use chrono_tz::Tz;
use rusqlite::{Connection, OptionalExtension, Transaction};
use serde::{Deserialize, Serialize};
use sources::{collect_category, RunContext};

/// Collector run types.
pub const COLLECTOR_RUN_TYPES: &[&str] = &["AUTO", "MANUAL"];
/// A collector operation of the platform (`INSERT_SERVICES`, ...): a built-in collector of
/// every tenant, listed by `GET /collectors` after the tenant's catalogue (group
/// [`PLATFORM_GROUP`]) and accepted by `collector_operations`; it collects the source of its
/// category whatever the catalogue holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlatformOperation {
    /// The name runs give in `collector_operations`.
    pub name: &'static str,
    /// The category whose source it collects.
    pub category: &'static str,
    /// Display name.
    pub friendly_name: &'static str,
    /// What it collects.
    pub description: &'static str,
}

/// The `group` the platform operations are listed under.
pub const PLATFORM_GROUP: &str = "PLATFORM";

/// The platform's collector operations. Only INSERT_SERVICES is documented
/// (platform-facts.md); the others follow its pattern (our reading). The sandbox's services
/// are charged by rated usage, so INSERT_SERVICES and INSERT_USAGE both collect USAGE.
pub const PLATFORM_OPERATIONS: &[PlatformOperation] = &[
    PlatformOperation {
        name: "INSERT_SERVICES",
        category: "USAGE",
        friendly_name: "Insert services",
        description: "Platform operation: the services' rated usage charges",
    },
    PlatformOperation {
        name: "INSERT_USAGE",
        category: "USAGE",
        friendly_name: "Insert usage",
        description: "Platform operation: rated usage event charges",
    },
    PlatformOperation {
        name: "INSERT_INVOICES",
        category: "INVOICE",
        friendly_name: "Insert invoices",
        description: "Platform operation: issued invoices",
    },
    PlatformOperation {
        name: "INSERT_PAYMENTS",
        category: "PAYMENT",
        friendly_name: "Insert payments",
        description: "Platform operation: received payments",
    },
    PlatformOperation {
        name: "INSERT_ADJUSTMENTS",
        category: "ADJUSTMENT",
        friendly_name: "Insert adjustments",
        description: "Platform operation: account adjustments",
    },
];
/// Longest accepted overlap_fetch_time: 31 days, in seconds.
pub const MAX_OVERLAP_SECONDS: i64 = 31 * 24 * 3600;
/// Most names in one run's `collector_operations` (duplicates count): a catalogue holds a
/// handful of collectors and the platform five operations.
pub const MAX_OPERATIONS: usize = 100;

/// The body of `POST /collector-runs`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct NewCollectorRun {
    /// AUTO or MANUAL.
    #[serde(rename = "type")]
    #[schema(schema_with = collector_run_type)]
    pub run_type: String,
    /// Names of catalogue collectors to run; empty runs them all.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub collector_operations: Vec<String>,
    /// Start of the window (default: the end of the previous run's window, else the epoch).
    pub data_fetch_from_date: Option<String>,
    /// End of the window, exclusive (default: now).
    pub data_fetch_to_date: Option<String>,
    /// Seconds by which the window's start is moved back, 0 to 31 days (`MAX_OVERLAP_SECONDS`).
    #[serde(default)]
    #[schema(minimum = 0, maximum = 2678400)]
    pub overlap_fetch_time: i64,
}

/// A collector run as rendered.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CollectorRun {
    /// Id.
    pub id: i64,
    /// The tenant's number: a stable int64 derived from the tenant's id.
    pub tenant_id: i64,
    /// The COLLECTOR_AUTO run mode, when the tenant has one.
    #[schema(required = true)]
    pub gl_run_mode_id: Option<i64>,
    /// When it started.
    #[schema(format = DateTime, required = true)]
    pub date_started: Option<String>,
    /// When it ended.
    #[schema(format = DateTime, required = true)]
    pub date_ended: Option<String>,
    /// NOT_STARTED, RUNNING, ERROR or COMPLETE.
    #[schema(schema_with = crate::domain::glrun::run_status)]
    pub status: String,
    /// ON_DEMAND for runs started over the API.
    pub run_trigger_type: String,
    /// Number of run errors.
    pub num_errors: i64,
    /// AUTO or MANUAL.
    #[serde(rename = "type")]
    #[schema(schema_with = collector_run_type)]
    pub run_type: String,
    /// The collectors run.
    pub collector_operations: Vec<String>,
    /// Window start as requested.
    #[schema(format = DateTime, required = true)]
    pub data_fetch_from_date: Option<String>,
    /// Window end, exclusive.
    #[schema(format = DateTime, required = true)]
    pub data_fetch_to_date: Option<String>,
    /// Seconds the window start was moved back.
    pub overlap_fetch_time: i64,
}

/// A run error record (ledger run or collector run).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RunError {
    /// Id.
    pub id: i64,
    /// The collector run, for collector run errors.
    #[schema(required = true)]
    pub collector_run_id: Option<i64>,
    /// The ledger run, for ledger run errors.
    #[schema(required = true)]
    pub gl_run_id: Option<i64>,
    /// What went wrong.
    pub error_message: String,
}

/// Creates and executes a collector run; answers its id. 400 bad input, 409 another
/// collector run unfinished, 412 an empty collector catalogue and no collector named.
pub fn run_collectors(tx: &Transaction<'_>, r: &NewCollectorRun, tz: Tz) -> Result<i64> {
    check_enum("type", &r.run_type, COLLECTOR_RUN_TYPES)?;
    if !(0..=MAX_OVERLAP_SECONDS).contains(&r.overlap_fetch_time) {
        return Err(Error::bad_request(format!(
            "overlap_fetch_time: {} is out of range 0..{MAX_OVERLAP_SECONDS} (seconds)",
            r.overlap_fetch_time
        )));
    }
    let catalogue: Vec<(String, String)> = tx
        .prepare("SELECT name, category FROM collectors ORDER BY id")?
        .query_map([], |row| row.try_into())?
        .collect::<rusqlite::Result<_>>()?;
    // A run naming platform operations needs no catalogue; one naming nothing runs the
    // catalogue, so there must be one.
    if catalogue.is_empty() && r.collector_operations.is_empty() {
        return Err(Error::PreconditionFailed(
            "the collector catalogue is empty, so a run naming no collector has nothing to run \
             (name platform operations such as INSERT_SERVICES in collector_operations)"
                .into(),
        ));
    }
    if r.collector_operations.len() > MAX_OPERATIONS {
        return Err(Error::bad_request(format!(
            "collector_operations: at most {MAX_OPERATIONS} names, found {}",
            r.collector_operations.len()
        )));
    }
    let mut chosen: Vec<(String, String)> = Vec::new();
    for name in &r.collector_operations {
        let entry = catalogue
            .iter()
            .find(|(n, _)| n == name)
            .cloned()
            .or_else(|| {
                PLATFORM_OPERATIONS
                    .iter()
                    .find(|op| op.name == name)
                    .map(|op| (op.name.to_string(), op.category.to_string()))
            });
        let Some(entry) = entry else {
            return Err(Error::bad_request(format!(
                "collector_operations: {} is not a collector of the catalogue ({}) nor a platform operation ({})",
                crate::error::quoted(name),
                catalogue
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                PLATFORM_OPERATIONS
                    .iter()
                    .map(|op| op.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        if !chosen.contains(&entry) {
            chosen.push(entry);
        }
    }
    if chosen.is_empty() {
        chosen = catalogue;
    }
    let unfinished = tx
        .prepare_cached("SELECT id FROM collector_runs WHERE status IN ('NOT_STARTED', 'RUNNING')")?
        .query_row([], |row| row.get::<_, i64>(0))
        .optional()?;
    if let Some(id) = unfinished {
        return Err(Error::conflict(format!(
            "collector run {id} has not finished; start another one when it has"
        )));
    }
    let now = crate::time::now_for(tx)?;
    let to = match &r.data_fetch_to_date {
        Some(v) => parse_time("data_fetch_to_date", v, tz)?,
        None => to_storage(now),
    };
    let from = match &r.data_fetch_from_date {
        Some(v) => parse_time("data_fetch_from_date", v, tz)?,
        None => tx
            .query_row(
                "SELECT data_fetch_to_date FROM collector_runs ORDER BY id DESC LIMIT 1",
                [],
                |row| row.get::<_, Option<String>>(0),
            )
            .optional()?
            .flatten()
            .unwrap_or_else(|| "1970-01-01T00:00:00.000Z".to_string())
            // a previous window reaching past `to` leaves this one empty, not invalid
            .min(to.clone()),
    };
    if to < from {
        return Err(Error::bad_request(
            "data_fetch_to_date must not be before data_fetch_from_date",
        ));
    }
    let widened = crate::time::from_storage(&from)
        .map(|t| to_storage(t - chrono::Duration::seconds(r.overlap_fetch_time)))
        .unwrap_or_else(|| from.clone());
    let run_mode: Option<i64> = tx
        .query_row(
            "SELECT id FROM gl_run_modes WHERE run_type = 'COLLECTOR_AUTO' ORDER BY id LIMIT 1",
            [],
            |row| row.get(0),
        )
        .optional()?;
    let operations: Vec<&str> = chosen.iter().map(|(n, _)| n.as_str()).collect();
    let now_text = to_storage(now);
    let run_id = insert(
        tx,
        "collector_runs",
        &[
            ("gl_run_mode_id", &run_mode),
            ("status", &"NOT_STARTED"),
            ("run_trigger_type", &"ON_DEMAND"),
            ("type", &r.run_type),
            ("collector_operations", &serde_json::to_string(&operations)?),
            ("data_fetch_from_date", &from),
            ("data_fetch_to_date", &to),
            ("overlap_fetch_time", &r.overlap_fetch_time),
        ],
    )?;
    tx.execute(
        "UPDATE collector_runs SET status = 'RUNNING', date_started = ?2 WHERE id = ?1",
        rusqlite::params![run_id, now_text],
    )?;
    let ctx = RunContext {
        tx,
        run_id,
        now: now_text.clone(),
        from: widened,
        to,
        tz,
    };
    let mut collected: Vec<&str> = Vec::new();
    for (name, category) in &chosen {
        // Two names of one category (a catalogue name and a platform name) read it once.
        if collected.contains(&category.as_str()) {
            continue;
        }
        collected.push(category);
        if !collect_category(&ctx, category)? {
            ctx.error(format!(
                "collector '{name}': category '{category}' has no source in this sandbox (USAGE, INVOICE, PAYMENT, ADJUSTMENT)"
            ))?;
        }
    }
    let errors: i64 = tx.query_row(
        "SELECT COUNT(*) FROM run_errors WHERE collector_run_id = ?1",
        [run_id],
        |row| row.get(0),
    )?;
    tx.execute(
        "UPDATE collector_runs SET status = ?2, num_errors = ?3, date_ended = ?4 WHERE id = ?1",
        rusqlite::params![
            run_id,
            if errors > 0 { "ERROR" } else { "COMPLETE" },
            errors,
            now_text
        ],
    )?;
    Ok(run_id)
}

const RUN_COLUMNS: &str = "id, gl_run_mode_id, date_started, date_ended, status, run_trigger_type,
    num_errors, type, collector_operations, data_fetch_from_date, data_fetch_to_date,
    overlap_fetch_time";

fn run_row(r: &rusqlite::Row<'_>, tenant_id: i64, tz: Tz) -> rusqlite::Result<CollectorRun> {
    let ops: String = r.get(8)?;
    let time = |i: usize| -> rusqlite::Result<Option<String>> {
        Ok(r.get::<_, Option<String>>(i)?.map(|t| render(&t, tz)))
    };
    Ok(CollectorRun {
        id: r.get(0)?,
        tenant_id,
        gl_run_mode_id: r.get(1)?,
        date_started: time(2)?,
        date_ended: time(3)?,
        status: r.get(4)?,
        run_trigger_type: r.get(5)?,
        num_errors: r.get(6)?,
        run_type: r.get(7)?,
        collector_operations: serde_json::from_str(&ops).unwrap_or_default(),
        data_fetch_from_date: time(9)?,
        data_fetch_to_date: time(10)?,
        overlap_fetch_time: r.get(11)?,
    })
}

/// Reads one collector run.
pub fn get_collector_run(
    conn: &Connection,
    id: i64,
    tenant_id: i64,
    tz: Tz,
) -> Result<CollectorRun> {
    conn.query_row(
        &format!("SELECT {RUN_COLUMNS} FROM collector_runs WHERE id = ?1"),
        [id],
        |r| run_row(r, tenant_id, tz),
    )
    .optional()?
    .ok_or_else(|| Error::not_found(format!("collector run {id} does not exist")))
}

/// One page of collector runs, newest first.
pub fn list_collector_runs(
    conn: &Connection,
    page: Page,
    tenant_id: i64,
    tz: Tz,
) -> Result<Paged<CollectorRun>> {
    Selection::new("id DESC")
        .page(page)
        .fetch_paged(conn, RUN_COLUMNS, "collector_runs", |r| {
            run_row(r, tenant_id, tz)
        })
}

/// One page of the errors of a collector run (`collector`) or ledger run; 404 unknown run.
pub fn list_run_errors(
    conn: &Connection,
    run_id: i64,
    collector: bool,
    page: Page,
) -> Result<Paged<RunError>> {
    let (table, column, what) = if collector {
        ("collector_runs", "collector_run_id", "collector run")
    } else {
        ("gl_runs", "gl_run_id", "ledger run")
    };
    require(conn, table, what, run_id)?;
    Selection::new("id")
        .scope(&format!("{column} = ?"), vec![run_id.into()])
        .page(page)
        .fetch_paged(
            conn,
            "id, collector_run_id, gl_run_id, error_message",
            "run_errors",
            |r| {
                Ok(RunError {
                    id: r.get(0)?,
                    collector_run_id: r.get(1)?,
                    gl_run_id: r.get(2)?,
                    error_message: r.get(3)?,
                })
            },
        )
}

/// A collector run's type: its JSON Schema, for the OpenAPI derives.
pub fn collector_run_type() -> utoipa::openapi::Object {
    crate::json_schema::enumeration(COLLECTOR_RUN_TYPES)
}

super::fixture_columns_writer!("collectors");
