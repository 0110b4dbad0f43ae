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
//! A run's life: [`create_run`] checks the body and stores the run NOT_STARTED with its
//! window and collector names, [`start_run`] moves it to RUNNING, [`finish_run`] collects and
//! ends it COMPLETE or ERROR. Under the tenant policy's AT_ONCE the three happen in the POST's
//! one transaction ([`run_collectors`]); under WITH_CLOCK the clock takes the last two
//! (`domain::run_progress`): the run collects, when it finishes, what its window holds then.
//! At most one collector run is NOT_STARTED or RUNNING (a second POST is 409).
//!
//! The catalogue of collectors is [`catalogue`]; what each category reads and how a source
//! record becomes charge info is [`sources`].

pub mod catalogue;
mod sources;

use super::glrun::{Ended, RunStatus};
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
    pub status: RunStatus,
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

/// Creates and executes a collector run at the clock's reading (the policy's AT_ONCE);
/// answers its id. The errors of [`create_run`].
pub fn run_collectors(tx: &Transaction<'_>, r: &NewCollectorRun, tz: Tz) -> Result<i64> {
    let now = to_storage(crate::time::now_for(tx)?);
    let run_id = create_run(tx, r, tz, None)?;
    start_run(tx, run_id, &now, None)?;
    finish_run(tx, run_id, &now, tz)?;
    Ok(run_id)
}

/// The catalogue's collectors: (name, category), by id.
fn catalogue_entries(tx: &Transaction<'_>) -> Result<Vec<(String, String)>> {
    Ok(tx
        .prepare_cached("SELECT name, category FROM collectors ORDER BY id")?
        .query_map([], |row| row.try_into())?
        .collect::<rusqlite::Result<_>>()?)
}

/// The (name, category) `name` stands for: a catalogue collector, else a platform operation.
fn resolve(catalogue: &[(String, String)], name: &str) -> Option<(String, String)> {
    catalogue
        .iter()
        .find(|(n, _)| n == name)
        .cloned()
        .or_else(|| {
            PLATFORM_OPERATIONS
                .iter()
                .find(|op| op.name == name)
                .map(|op| (op.name.to_string(), op.category.to_string()))
        })
}

/// Creates a collector run, NOT_STARTED, with its window fixed now; answers its id.
/// `next_step_at`: when the clock starts it (None: the caller starts it at once). 400 bad
/// input, 409 another collector run under way, 412 an empty collector catalogue and no
/// collector named.
pub fn create_run(
    tx: &Transaction<'_>,
    r: &NewCollectorRun,
    tz: Tz,
    next_step_at: Option<&str>,
) -> Result<i64> {
    check_enum("type", &r.run_type, COLLECTOR_RUN_TYPES)?;
    if !(0..=MAX_OVERLAP_SECONDS).contains(&r.overlap_fetch_time) {
        return Err(Error::bad_request(format!(
            "overlap_fetch_time: {} is out of range 0..{MAX_OVERLAP_SECONDS} (seconds)",
            r.overlap_fetch_time
        )));
    }
    let catalogue = catalogue_entries(tx)?;
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
        let Some(entry) = resolve(&catalogue, name) else {
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
        .prepare_cached("SELECT id FROM collector_runs WHERE status IN (?1, ?2)")?
        .query_row(
            rusqlite::params![RunStatus::NotStarted, RunStatus::Running],
            |row| row.get::<_, i64>(0),
        )
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
    let run_mode: Option<i64> = tx
        .query_row(
            "SELECT id FROM gl_run_modes WHERE run_type = 'COLLECTOR_AUTO' ORDER BY id LIMIT 1",
            [],
            |row| row.get(0),
        )
        .optional()?;
    let operations: Vec<&str> = chosen.iter().map(|(n, _)| n.as_str()).collect();
    insert(
        tx,
        "collector_runs",
        &[
            ("gl_run_mode_id", &run_mode),
            ("status", &RunStatus::NotStarted),
            ("run_trigger_type", &"ON_DEMAND"),
            ("type", &r.run_type),
            ("collector_operations", &serde_json::to_string(&operations)?),
            ("data_fetch_from_date", &from),
            ("data_fetch_to_date", &to),
            ("overlap_fetch_time", &r.overlap_fetch_time),
            ("next_step_at", &next_step_at),
        ],
    )
}

super::run_progress_ops!("collector_runs");

/// Collects for RUNNING run `run_id` at stored instant `at` over the window fixed when it
/// was created, and ends it COMPLETE, or ERROR with its run errors. A collector name no
/// longer in the catalogue is a run error. None when the run is gone or not RUNNING.
pub fn finish_run(tx: &Transaction<'_>, run_id: i64, at: &str, tz: Tz) -> Result<Option<Ended>> {
    type Row = (RunStatus, String, Option<String>, Option<String>, i64);
    let row: Option<Row> = tx
        .query_row(
            "SELECT status, collector_operations, data_fetch_from_date, data_fetch_to_date,
                    overlap_fetch_time
             FROM collector_runs WHERE id = ?1",
            [run_id],
            |r| r.try_into(),
        )
        .optional()?;
    let Some((RunStatus::Running, names, from, to, overlap)) = row else {
        return Ok(None);
    };
    let names: Vec<String> = serde_json::from_str(&names)?;
    let from = from.unwrap_or_else(|| "1970-01-01T00:00:00.000Z".to_string());
    let widened = crate::time::from_storage(&from)
        .map(|t| to_storage(t - chrono::Duration::seconds(overlap)))
        .unwrap_or_else(|| from.clone());
    let ctx = RunContext {
        tx,
        run_id,
        now: at.to_string(),
        from: widened,
        to: to.unwrap_or_else(|| at.to_string()),
        tz,
    };
    let catalogue = catalogue_entries(tx)?;
    let mut collected: Vec<String> = Vec::new();
    for name in &names {
        let Some((name, category)) = resolve(&catalogue, name) else {
            ctx.error(format!(
                "collector '{name}' is no longer in the catalogue nor a platform operation"
            ))?;
            continue;
        };
        // Two names of one category (a catalogue name and a platform name) read it once.
        if collected.contains(&category) {
            continue;
        }
        collected.push(category.clone());
        if !collect_category(&ctx, &category)? {
            ctx.error(format!(
                "collector '{name}': category '{category}' has no source in this sandbox (USAGE, INVOICE, PAYMENT, ADJUSTMENT)"
            ))?;
        }
    }
    let (errors, made): (i64, i64) = tx.query_row(
        "SELECT (SELECT COUNT(*) FROM run_errors WHERE collector_run_id = ?1),
                (SELECT COUNT(*) FROM charge_infos WHERE collector_run_id = ?1)",
        [run_id],
        |row| row.try_into(),
    )?;
    let status = RunStatus::ended(errors);
    tx.execute(
        "UPDATE collector_runs SET status = ?2, num_errors = ?3, date_ended = ?4,
             next_step_at = NULL
         WHERE id = ?1",
        rusqlite::params![run_id, status, errors, at],
    )?;
    Ok(Some(Ended {
        status,
        made,
        errors,
    }))
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
