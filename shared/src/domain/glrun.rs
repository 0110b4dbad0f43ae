//! Ledger runs (`/glruns`): post a ledger's charge info as journal entries. The run modes
//! a run names are created here too.
//!
//! A run for ledger L up to `run_to_date` takes every charge info record that
//! - belongs to a billing account whose category is one of L's categories,
//! - is a leaf (a USAGE_EVENT parent is posted through its USAGE children),
//! - is dated before `run_to_date` (a date alone means through the end of that day in L's
//!   time zone), and
//! - is not yet POSTED (or SKIPPED) in L,
//!
//! and posts it into the accounting period holding its date in L's time zone. A closed
//! period moves the posting to the next open period (the posting date becomes that period's
//! first day); no period covering the date, or no open period after a closed one, is a run
//! error for that record, whose state in L becomes ERROR (a later run retries it).
//!
//! A run's life: [`create_run`] stores it NOT_STARTED (after the checks that answer 4xx),
//! [`start_run`] moves it to RUNNING, [`finish_run`] posts and ends it COMPLETE, or ERROR when
//! any record failed. Under the tenant policy's AT_ONCE the three happen in the POST's one
//! transaction ([`run_ledger`]); under WITH_CLOCK the clock takes the last two
//! (`domain::run_progress`), and the run posts what it finds when it finishes.
//!
//! Invariants: a ledger has at most one run NOT_STARTED or RUNNING (a second POST is 409);
//! a run's journal entries, errors and charge info states exist only once it has ended;
//! `next_step_at` is set exactly while a run progresses with the clock.

use super::chargeinfo::{
    delete_run_postings, post_entry, set_state, NewJournalEntry, STATE_ERROR, STATE_POSTED,
    STATE_SKIPPED,
};
use super::status::status_enum;
use super::status::LedgerStatus;
use super::{check_enum, insert, require};
use crate::money::Number;
use crate::query::{FieldKind, FieldSpec, ListSource, Page, Paged, Selection};
use crate::time::{render, to_storage};
use crate::{Error, Result};
use chrono::{NaiveDate, TimeZone};
use chrono_tz::Tz;
use rusqlite::{Connection, OptionalExtension, Transaction};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

status_enum! {
    /// A ledger or collector run's status (platform-facts.md: a run starts NOT_STARTED and
    /// ends COMPLETE or ERROR). Stored as its name, so the SQL reads the same text the API
    /// shows.
    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "SCREAMING_SNAKE_CASE")]
    pub enum RunStatus {
        /// Created, not started.
        NotStarted = "NOT_STARTED",
        /// Started, not ended.
        Running = "RUNNING",
        /// Ended with run errors (`num_errors` > 0).
        Error = "ERROR",
        /// Ended without errors.
        Complete = "COMPLETE",
    }
}

/// Statuses of ledger runs and collector runs, as the wire and the database spell them (the
/// names of [`RunStatus`], in its order).
pub const RUN_STATUSES: &[&str] = RunStatus::NAMES;

impl RunStatus {
    /// How a run with `errors` run errors ends.
    pub fn ended(errors: i64) -> RunStatus {
        if errors > 0 {
            RunStatus::Error
        } else {
            RunStatus::Complete
        }
    }
}

/// Types of a GL run mode.
pub const RUN_MODE_TYPES: &[&str] = &["ACTUALS", "COLLECTOR_AUTO"];

/// A GL run mode.
#[derive(Debug, Clone, Deserialize)]
pub struct NewRunMode {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// Name.
    pub name: String,
    /// One of [`RUN_MODE_TYPES`].
    pub run_type: String,
}

/// Creates a GL run mode.
pub fn create_run_mode(tx: &Transaction<'_>, m: &NewRunMode) -> Result<i64> {
    check_enum("run_type", &m.run_type, RUN_MODE_TYPES)?;
    insert(
        tx,
        "gl_run_modes",
        &[("id", &m.id), ("name", &m.name), ("run_type", &m.run_type)],
    )
}

/// The body of `POST /glruns`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct NewGlRun {
    /// Run mode (default: the ledger's actuals run mode).
    pub gl_run_mode_id: Option<i64>,
    /// The ledger to post.
    pub ledger_id: i64,
    /// Post charges dated up to this date or date-time.
    pub run_to_date: String,
}

/// A ledger run as rendered.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct GlRun {
    /// Id.
    pub id: i64,
    /// When it started.
    #[schema(format = DateTime, required = true)]
    pub date_started: Option<String>,
    /// When it ended.
    #[schema(format = DateTime, required = true)]
    pub date_ended: Option<String>,
    /// NOT_STARTED, RUNNING, ERROR or COMPLETE.
    #[schema(schema_with = run_status)]
    pub status: RunStatus,
    /// Number of run errors.
    pub num_errors: i64,
    /// ON_DEMAND for runs started over the API.
    pub run_trigger_type: String,
    /// Run mode.
    #[schema(required = true)]
    pub gl_run_mode_id: Option<i64>,
    /// Ledger.
    pub ledger_id: i64,
    /// Upper bound (exclusive) of the charge dates posted.
    #[schema(format = DateTime)]
    pub run_to_date: String,
}

/// A journal entry as rendered (a sandbox extension: the platform shows them elsewhere).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct JournalEntry {
    /// Id.
    pub id: i64,
    /// The run that posted it.
    pub gl_run_id: i64,
    /// Ledger.
    pub ledger_id: i64,
    /// The charge info posted.
    pub charge_info_id: i64,
    /// The accounting period posted into.
    pub period_id: i64,
    /// Posting day (`YYYY-MM-DD`, ledger time zone).
    #[schema(schema_with = crate::json_schema::date)]
    pub posting_date: String,
    /// Amount (positive; the accounts carry the direction).
    #[schema(schema_with = crate::json_schema::decimal)]
    pub amount: Number,
    /// Account debited.
    #[schema(required = true)]
    pub debit_account: Option<String>,
    /// Account credited.
    #[schema(required = true)]
    pub credit_account: Option<String>,
}

/// Unbilled Receivables: usage rated and not yet invoiced.
pub const UNBILLED: &str = "1200 Unbilled Receivables";
/// Accounts Receivable: what invoices ask and payments have not paid.
pub const RECEIVABLE: &str = "1100 Accounts Receivable";

/// The accounts a positive amount of a charge info type moves between (debit, credit); a
/// negative amount swaps them (docs/revenue.md, "Posting rules"). Usage accrues to Unbilled
/// Receivables when rated and an invoice's usage lines clear it; recurring and one-time lines
/// are revenue when invoiced (docs/revenue.md says why, also for prices billed in advance);
/// a payment's amount is negative (it lowers the receivable), so it debits Cash and credits
/// Receivable. An invoice without lines (written by an older schema) is one AMOUNT line.
fn accounts_for(charge_info_type: &str) -> (&'static str, &'static str) {
    match charge_info_type {
        "USAGE" => (UNBILLED, "4000 Usage Revenue"),
        "INVOICE_USAGE" => (RECEIVABLE, UNBILLED),
        "INVOICE_RECURRING" => (RECEIVABLE, "4010 Subscription Revenue"),
        "INVOICE_ONE_TIME" => (RECEIVABLE, "4020 One-time Revenue"),
        "INVOICE_PENDING" => (RECEIVABLE, "4000 Usage Revenue"),
        // Cumulative tiers' change of per-event charges: usage revenue, not the accrual
        // (which the USAGE lines clear at the per-event charges it accrued).
        "INVOICE_USAGE_TIERS" => (RECEIVABLE, "4000 Usage Revenue"),
        "PAYMENT" => (RECEIVABLE, "1000 Cash"),
        "ADJUSTMENT" => (RECEIVABLE, "4900 Revenue Adjustments"),
        // INVOICE_AMOUNT, INVOICE (no lines), anything else.
        _ => (RECEIVABLE, "4100 Other Revenue"),
    }
}

#[derive(Debug)]
struct PeriodSpan {
    id: i64,
    start: NaiveDate,
    end: NaiveDate,
    open: bool,
}

fn ledger_periods(tx: &Transaction<'_>, ledger_id: i64) -> Result<Vec<PeriodSpan>> {
    let mut stmt = tx.prepare_cached(
        "SELECT id, start_date, end_date, open FROM calendar_nodes
         WHERE ledger_id = ?1 AND type = 'PERIOD' ORDER BY start_date",
    )?;
    let rows = stmt
        .query_map([ledger_id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, bool>(3)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows
        .into_iter()
        .filter_map(|(id, s, e, open)| {
            Some(PeriodSpan {
                id,
                start: NaiveDate::parse_from_str(&s, "%Y-%m-%d").ok()?,
                end: NaiveDate::parse_from_str(&e, "%Y-%m-%d").ok()?,
                open,
            })
        })
        .collect())
}

/// Where a charge dated `day` posts: the period holding it when open, else the next open one.
fn posting_period(
    periods: &[PeriodSpan],
    day: NaiveDate,
) -> std::result::Result<(&PeriodSpan, NaiveDate), String> {
    let Some(home) = periods.iter().find(|p| p.start <= day && day <= p.end) else {
        return Err(format!("no accounting period covers {day}"));
    };
    if home.open {
        return Ok((home, day));
    }
    periods
        .iter()
        .find(|p| p.open && p.start > home.end)
        .map(|p| (p, p.start))
        .ok_or_else(|| {
            format!(
                "the period holding {day} ({} .. {}) is closed and no later period is open",
                home.start, home.end
            )
        })
}

/// The exclusive upper bound of a run: a date alone covers that whole day in the ledger's zone.
fn run_bound(text: &str, ledger_tz: Tz) -> Result<String> {
    if let Ok(day) = NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d") {
        if !crate::time::within_years(day) {
            return Err(Error::bad_request(format!(
                "run_to_date: {} is outside years {:04}..{}",
                crate::error::quoted(text),
                crate::time::MIN_YEAR,
                crate::time::MAX_YEAR
            )));
        }
        let next = day
            .succ_opt()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .and_then(|t| ledger_tz.from_local_datetime(&t).earliest())
            .ok_or_else(|| {
                Error::bad_request(format!(
                    "run_to_date: {} is out of range",
                    crate::error::quoted(text)
                ))
            })?
            .with_timezone(&chrono::Utc);
        // The end of 9999-12-31 lies in year 10000, which no stored text names (its `+10000`
        // sorts before every stored instant, so such a run posted nothing): the bound is then
        // the last instant a stored text can name, past every stored date.
        if !crate::time::within_years(next.date_naive()) {
            return Ok(crate::time::LATEST_STORED.to_string());
        }
        return Ok(to_storage(next));
    }
    super::parse_time("run_to_date", text, ledger_tz)
}

/// Creates and executes a ledger run at the clock's reading (the policy's AT_ONCE); answers
/// its id. The errors of [`create_run`].
pub fn run_ledger(tx: &Transaction<'_>, r: &NewGlRun) -> Result<i64> {
    let now = to_storage(crate::time::now_for(tx)?);
    let run_id = create_run(tx, r, None)?;
    start_run(tx, run_id, &now, None)?;
    finish_run(tx, run_id, &now)?;
    Ok(run_id)
}

/// Creates a ledger run, NOT_STARTED; answers its id. `next_step_at`: when the clock starts
/// it (None: the caller starts it at once). 404 unknown ledger or run mode, 400 bad input, 409
/// another run of the ledger under way, 412 an INACTIVE ledger or one whose calendar has no
/// open period.
pub fn create_run(tx: &Transaction<'_>, r: &NewGlRun, next_step_at: Option<&str>) -> Result<i64> {
    require(tx, "ledgers", "ledger", r.ledger_id)?;
    let (status, tz_name, actuals): (LedgerStatus, String, Option<i64>) = tx.query_row(
        "SELECT status, timezone_name, run_mode_actuals_id FROM ledgers WHERE id = ?1",
        [r.ledger_id],
        |row| row.try_into(),
    )?;
    if let Some(mode) = r.gl_run_mode_id {
        require(tx, "gl_run_modes", "run mode", mode)?;
    }
    let tz = crate::time::parse_tz(&tz_name).unwrap_or(chrono_tz::UTC);
    let bound = run_bound(&r.run_to_date, tz)?;
    if status != LedgerStatus::Active {
        return Err(Error::PreconditionFailed(format!(
            "ledger {} is {status}; only ACTIVE ledgers run",
            r.ledger_id
        )));
    }
    let periods = ledger_periods(tx, r.ledger_id)?;
    if !periods.iter().any(|p| p.open) {
        return Err(Error::PreconditionFailed(format!(
            "the calendar of ledger {} has no open accounting period",
            r.ledger_id
        )));
    }
    if let Some(id) = tx
        .prepare_cached("SELECT id FROM gl_runs WHERE ledger_id = ?1 AND status IN (?2, ?3)")?
        .query_row(
            rusqlite::params![r.ledger_id, RunStatus::NotStarted, RunStatus::Running],
            |row| row.get::<_, i64>(0),
        )
        .optional()?
    {
        return Err(Error::conflict(format!(
            "ledger run {id} of ledger {} has not finished",
            r.ledger_id
        )));
    }
    insert(
        tx,
        "gl_runs",
        &[
            ("status", &RunStatus::NotStarted),
            ("run_trigger_type", &"ON_DEMAND"),
            ("gl_run_mode_id", &r.gl_run_mode_id.or(actuals)),
            ("ledger_id", &r.ledger_id),
            ("run_to_date", &bound),
            ("next_step_at", &next_step_at),
        ],
    )
}

super::run_progress_ops!("gl_runs");

/// How a run ended: its status, what it made (journal entries posted, charge info records
/// collected) and its run errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    /// COMPLETE or ERROR.
    pub status: RunStatus,
    /// Journal entries posted (a ledger run) or charge info records collected (a collector
    /// run).
    pub made: i64,
    /// Run errors.
    pub errors: i64,
}

/// Posts RUNNING run `id` at stored instant `at` (module doc) and ends it: COMPLETE, or ERROR
/// with its run errors. What it posts is the charge info as it stands now, within the bound
/// fixed when it was created; a ledger no longer ACTIVE posts nothing and ends ERROR with one
/// run error saying so. None when the run is gone or not RUNNING.
pub fn finish_run(tx: &Transaction<'_>, run_id: i64, at: &str) -> Result<Option<Ended>> {
    let row: Option<(i64, String, RunStatus)> = tx
        .query_row(
            "SELECT ledger_id, run_to_date, status FROM gl_runs WHERE id = ?1",
            [run_id],
            |r| r.try_into(),
        )
        .optional()?;
    let Some((ledger_id, bound, RunStatus::Running)) = row else {
        return Ok(None);
    };
    let ledger: Option<(LedgerStatus, String, bool)> = tx
        .query_row(
            "SELECT status, timezone_name, create_zero_amount_entries FROM ledgers WHERE id = ?1",
            [ledger_id],
            |row| row.try_into(),
        )
        .optional()?;
    let (errors, made) = match ledger {
        Some((status, _, _)) if status != LedgerStatus::Active => {
            add_run_error(
                tx,
                "gl_run_id",
                run_id,
                &format!("ledger {ledger_id} is {status}; only ACTIVE ledgers post"),
            )?;
            (1, 0)
        }
        Some((_, tz_name, zero_entries)) => {
            let tz = crate::time::parse_tz(&tz_name).unwrap_or(chrono_tz::UTC);
            post_run(tx, run_id, ledger_id, &bound, tz, zero_entries, at)?
        }
        None => {
            add_run_error(
                tx,
                "gl_run_id",
                run_id,
                &format!("ledger {ledger_id} does not exist"),
            )?;
            (1, 0)
        }
    };
    let status = RunStatus::ended(errors);
    tx.execute(
        "UPDATE gl_runs SET status = ?2, num_errors = ?3, date_ended = ?4, next_step_at = NULL
         WHERE id = ?1",
        rusqlite::params![run_id, status, errors, at],
    )?;
    Ok(Some(Ended {
        status,
        made,
        errors,
    }))
}

/// Posts the charge info run `run_id` of ledger `ledger_id` takes (module doc) at stored
/// instant `now`; answers (run errors, journal entries posted).
fn post_run(
    tx: &Transaction<'_>,
    run_id: i64,
    ledger_id: i64,
    bound: &str,
    tz: Tz,
    zero_entries: bool,
    now: &str,
) -> Result<(i64, i64)> {
    let periods = ledger_periods(tx, ledger_id)?;
    let mut stmt = tx.prepare(
        "SELECT ci.id, ci.charge_info_type, ci.charge_date, ci.amount FROM charge_infos ci
         JOIN billing_accounts a ON a.id = ci.billing_account_id
         WHERE a.billing_account_category_id IN
               (SELECT billing_account_category_id FROM ledger_categories WHERE ledger_id = ?1)
           AND NOT EXISTS (SELECT 1 FROM charge_infos k WHERE k.parent_id = ci.id)
           AND ci.charge_date < ?2
           AND NOT EXISTS (SELECT 1 FROM charge_info_states s WHERE s.ledger_id = ?1
                           AND s.charge_info_id = ci.id AND s.state IN (?3, ?4))
         ORDER BY ci.charge_date, ci.id",
    )?;
    let candidates = stmt
        .query_map(
            rusqlite::params![ledger_id, bound, STATE_POSTED, STATE_SKIPPED],
            |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, String>(3)?,
                ))
            },
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let (mut errors, mut posted) = (0i64, 0i64);
    for (ci_id, ci_type, charge_date, amount_text) in candidates {
        let amount = crate::money::parse_decimal(&amount_text).unwrap_or(Decimal::ZERO);
        let day =
            crate::time::from_storage(&charge_date).map(|t| t.with_timezone(&tz).date_naive());
        let placed = match day {
            Some(day) => posting_period(&periods, day),
            None => Err(format!(
                "its charge date '{charge_date}' is not a date-time"
            )),
        };
        let state = match placed {
            Err(why) => {
                errors += 1;
                add_run_error(
                    tx,
                    "gl_run_id",
                    run_id,
                    &format!("charge info {ci_id}: {why}"),
                )?;
                STATE_ERROR
            }
            Ok(_) if amount.is_zero() && !zero_entries => STATE_SKIPPED,
            Ok((period, posting_day)) => {
                let (debit, credit) = accounts_for(&ci_type);
                let (debit, credit) = if amount.is_sign_negative() {
                    (credit, debit)
                } else {
                    (debit, credit)
                };
                post_entry(
                    tx,
                    &NewJournalEntry {
                        gl_run_id: run_id,
                        ledger_id,
                        charge_info_id: ci_id,
                        period_id: period.id,
                        posting_date: posting_day.to_string(),
                        amount: amount.abs(),
                        debit_account: debit,
                        credit_account: credit,
                    },
                )?;
                posted += 1;
                STATE_POSTED
            }
        };
        set_state(tx, ledger_id, ci_id, state, run_id, now)?;
    }
    Ok((errors, posted))
}

/// Adds an error to a run: `run_column` is `gl_run_id` (a ledger run) or `collector_run_id`.
fn add_run_error(tx: &Transaction<'_>, run_column: &str, run_id: i64, message: &str) -> Result<()> {
    insert(
        tx,
        "run_errors",
        &[(run_column, &run_id), ("error_message", &message)],
    )?;
    Ok(())
}

/// Adds an error to collector run `run_id` (run errors of both kinds of runs are kept here).
pub(crate) fn add_collector_run_error(
    tx: &Transaction<'_>,
    run_id: i64,
    message: &str,
) -> Result<()> {
    add_run_error(tx, "collector_run_id", run_id, message)
}

/// Deletes the runs of ledger `ledger_id` with what they posted and their errors (the
/// ledger is being deleted).
pub(crate) fn delete_ledger_runs(tx: &Transaction<'_>, ledger_id: i64) -> Result<()> {
    super::chargeinfo::delete_ledger_postings(tx, ledger_id)?;
    tx.execute(
        "DELETE FROM run_errors WHERE gl_run_id IN (SELECT id FROM gl_runs WHERE ledger_id = ?1)",
        [ledger_id],
    )?;
    tx.execute("DELETE FROM gl_runs WHERE ledger_id = ?1", [ledger_id])?;
    Ok(())
}

const RUN_COLUMNS: &str =
    "id, date_started, date_ended, status, num_errors, run_trigger_type, gl_run_mode_id, ledger_id, run_to_date";

fn run_row(r: &rusqlite::Row<'_>, tz: Tz) -> rusqlite::Result<GlRun> {
    let time = |i: usize| -> rusqlite::Result<Option<String>> {
        Ok(r.get::<_, Option<String>>(i)?.map(|t| render(&t, tz)))
    };
    Ok(GlRun {
        id: r.get(0)?,
        date_started: time(1)?,
        date_ended: time(2)?,
        status: r.get(3)?,
        num_errors: r.get(4)?,
        run_trigger_type: r.get(5)?,
        gl_run_mode_id: r.get(6)?,
        ledger_id: r.get(7)?,
        run_to_date: render(&r.get::<_, String>(8)?, tz),
    })
}

/// Reads one ledger run.
pub fn get_run(conn: &Connection, id: i64, tz: Tz) -> Result<GlRun> {
    conn.query_row(
        &format!("SELECT {RUN_COLUMNS} FROM gl_runs WHERE id = ?1"),
        [id],
        |r| run_row(r, tz),
    )
    .optional()?
    .ok_or_else(|| Error::not_found(format!("ledger run {id} does not exist")))
}

/// The ledger run list; its one named filter, `status`, declared once here (Surface C reads
/// and documents its query parameter from it).
pub static RUN_LIST: ListSource = ListSource {
    noun: "ledger run",
    fields: &[FieldSpec::new(
        "status",
        "status",
        FieldKind::Enum(RUN_STATUSES),
    )],
    named_filters: &["status"],
    from: "gl_runs",
    id: "id",
};

/// One page of ledger runs, optionally of one status (one of [`RUN_STATUSES`]), newest first.
pub fn list_runs(
    conn: &Connection,
    status: Option<String>,
    page: Page,
    tz: Tz,
) -> Result<Paged<GlRun>> {
    let status = status
        .map(|s| RunStatus::parse_field("status", &s).map(|s| s.as_str().to_string()))
        .transpose()?;
    Selection::new("id DESC")
        .narrow(&RUN_LIST, "status", status)?
        .page(page)
        .fetch_paged(conn, RUN_COLUMNS, RUN_LIST.from, |r| run_row(r, tz))
}

/// Every run of one ledger, newest first (404 unknown ledger).
pub fn ledger_runs(conn: &Connection, ledger_id: i64, tz: Tz) -> Result<Vec<GlRun>> {
    require(conn, "ledgers", "ledger", ledger_id)?;
    let mut stmt = conn.prepare(&format!(
        "SELECT {RUN_COLUMNS} FROM gl_runs WHERE ledger_id = ?1 ORDER BY id DESC"
    ))?;
    let runs = stmt
        .query_map([ledger_id], |r| run_row(r, tz))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(runs)
}

/// Deletes a run with all its results: journal entries, the charge info states it set and
/// its errors (the charge info records themselves stay and are posted again by a later run).
pub fn delete_run(tx: &Transaction<'_>, id: i64) -> Result<()> {
    require(tx, "gl_runs", "ledger run", id)?;
    delete_run_postings(tx, id)?;
    tx.execute("DELETE FROM run_errors WHERE gl_run_id = ?1", [id])?;
    tx.execute("DELETE FROM gl_runs WHERE id = ?1", [id])?;
    Ok(())
}

/// One page of the journal entries a run posted (404 unknown run).
pub fn run_entries(conn: &Connection, run_id: i64, page: Page) -> Result<Paged<JournalEntry>> {
    require(conn, "gl_runs", "ledger run", run_id)?;
    Selection::new("id")
        .scope("gl_run_id = ?", vec![run_id.into()])
        .page(page)
        .fetch_paged(
        conn,
        "id, gl_run_id, ledger_id, charge_info_id, period_id, posting_date, amount, debit_account, credit_account",
        "journal_entries",
        |r| {
            Ok(JournalEntry {
                id: r.get(0)?,
                gl_run_id: r.get(1)?,
                ledger_id: r.get(2)?,
                charge_info_id: r.get(3)?,
                period_id: r.get(4)?,
                posting_date: r.get(5)?,
                amount: Number(crate::money::from_sql_text(r.get_ref(6)?).unwrap_or_default()),
                debit_account: r.get(7)?,
                credit_account: r.get(8)?,
            })
        },
    )
}

/// A ledger or collector run's status: its JSON Schema, for the OpenAPI derives.
pub fn run_status() -> utoipa::openapi::Object {
    crate::json_schema::enumeration(RUN_STATUSES)
}

super::fixture_columns_writer!("gl_run_modes");

#[cfg(test)]
mod books;

#[cfg(test)]
mod tests;
