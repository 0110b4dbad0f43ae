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
//! | INVOICE    | invoices (by occurred_on)                | INVOICE          |
//! | PAYMENT    | payments (by occurred_on)                | PAYMENT          |
//! | ADJUSTMENT | account adjustments (by occurred_on)     | ADJUSTMENT       |
//!
//! `UNIQUE(source_kind, source_id)` keeps a source record from being collected twice, so
//! overlapping windows are harmless. A record that cannot be collected (a usage event without
//! a billing account) and a collector without a known source each add a run error; the run
//! then ends ERROR, everything else it could collect is kept.
//!
//! The run executes inside the request's write transaction: it is stored NOT_STARTED, moves
//! to RUNNING and ends COMPLETE or ERROR before the response is sent.

use super::revenue::{paged_query, params, Where};
use super::{check_enum, insert, parse_time, require};
use crate::money::{canonical, Number};
use crate::paging::{Page, Paged};
use crate::time::{render, to_storage};
use crate::{Error, Result};
use chrono_tz::Tz;
use rusqlite::{Connection, OptionalExtension, Transaction};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// Collector run types.
pub const COLLECTOR_RUN_TYPES: &[&str] = &["AUTO", "MANUAL"];
/// Longest accepted overlap_fetch_time: 31 days, in seconds.
pub const MAX_OVERLAP_SECONDS: i64 = 31 * 24 * 3600;
/// Run statuses.
pub const RUN_STATUSES: &[&str] = &["NOT_STARTED", "RUNNING", "ERROR", "COMPLETE"];

/// The body of `POST /collector-runs`.
#[derive(Debug, Clone, Deserialize)]
pub struct NewCollectorRun {
    /// AUTO or MANUAL.
    #[serde(rename = "type")]
    pub run_type: String,
    /// Names of catalogue collectors to run; empty runs them all.
    #[serde(default)]
    pub collector_operations: Vec<String>,
    /// Start of the window (default: the end of the previous run's window, else the epoch).
    pub data_fetch_from_date: Option<String>,
    /// End of the window, exclusive (default: now).
    pub data_fetch_to_date: Option<String>,
    /// Seconds by which the window's start is moved back, 0..=[`MAX_OVERLAP_SECONDS`].
    #[serde(default)]
    pub overlap_fetch_time: i64,
}

/// A collector run as rendered.
#[derive(Debug, Clone, Serialize)]
pub struct CollectorRun {
    /// Id.
    pub id: i64,
    /// The sandbox tenant id.
    pub tenant_id: String,
    /// The COLLECTOR_AUTO run mode, when the tenant has one.
    pub gl_run_mode_id: Option<i64>,
    /// When it started.
    pub date_started: Option<String>,
    /// When it ended.
    pub date_ended: Option<String>,
    /// NOT_STARTED, RUNNING, ERROR or COMPLETE.
    pub status: String,
    /// ON_DEMAND for runs started over the API.
    pub run_trigger_type: String,
    /// Number of run errors.
    pub num_errors: i64,
    /// AUTO or MANUAL.
    #[serde(rename = "type")]
    pub run_type: String,
    /// The collectors run.
    pub collector_operations: Vec<String>,
    /// Window start as requested.
    pub data_fetch_from_date: Option<String>,
    /// Window end, exclusive.
    pub data_fetch_to_date: Option<String>,
    /// Seconds the window start was moved back.
    pub overlap_fetch_time: i64,
}

/// A collector of the catalogue as rendered.
#[derive(Debug, Clone, Serialize)]
pub struct Collector {
    /// Unique name (what `collector_operations` names).
    pub name: String,
    /// Display name.
    pub friendly_name: String,
    /// Description.
    pub description: Option<String>,
    /// Group.
    pub group: String,
    /// Category: picks the source the collector reads.
    pub category: String,
}

/// One page of the collector catalogue, optionally of one group and/or category.
pub fn list_collectors(
    conn: &Connection,
    group: Option<String>,
    category: Option<String>,
    page: Page,
) -> Result<Paged<Collector>> {
    let mut w = Where::default();
    w.opt("\"group\" = ?", group);
    w.opt("category = ?", category);
    paged_query(
        conn,
        "name, friendly_name, description, \"group\", category",
        "collectors",
        &w,
        "id",
        page,
        |r| {
            Ok(Collector {
                name: r.get(0)?,
                friendly_name: r.get(1)?,
                description: r.get(2)?,
                group: r.get(3)?,
                category: r.get(4)?,
            })
        },
    )
}

/// A run error record (ledger run or collector run).
#[derive(Debug, Clone, Serialize)]
pub struct RunError {
    /// Id.
    pub id: i64,
    /// The collector run, for collector run errors.
    pub collector_run_id: Option<i64>,
    /// The ledger run, for ledger run errors.
    pub gl_run_id: Option<i64>,
    /// What went wrong.
    pub error_message: String,
}

/// The values shown in a charge info's `ci_values`.
#[derive(Debug, Clone, Serialize)]
struct CiValues {
    created_date: String,
    transaction_type: String,
    charge_category: Option<String>,
    billing_account_num: String,
    order_id: Option<String>,
    service_id: Option<i64>,
    invoice_number: Option<String>,
    charge_amount: Number,
    order_amount: Option<Number>,
    product_id: Option<i64>,
    product_name: Option<String>,
    currency_code: Option<String>,
}

/// One charge info record to store.
struct Collected<'a> {
    source_kind: &'a str,
    source_id: i64,
    charge_info_type: &'a str,
    parent_id: Option<i64>,
    billing_account_id: i64,
    billing_account_num: String,
    charge_date: String,
    amount: Decimal,
    currency_code: Option<String>,
    charge_category: Option<String>,
    invoice_number: Option<String>,
    service_id: Option<i64>,
    product_id: Option<i64>,
    product_name: Option<String>,
}

/// What one run shares with all its collectors.
struct RunContext<'a> {
    tx: &'a Transaction<'a>,
    run_id: i64,
    now: String,
    from: String,
    to: String,
    tz: Tz,
}

impl RunContext<'_> {
    fn error(&self, message: String) -> Result<()> {
        insert(
            self.tx,
            "run_errors",
            &[
                ("collector_run_id", &self.run_id),
                ("error_message", &message),
            ],
        )?;
        Ok(())
    }

    /// Stores a charge info unless its source was collected before; answers its id either way.
    fn store(&self, c: &Collected<'_>) -> Result<i64> {
        if let Some(id) = self
            .tx
            .prepare_cached(
                "SELECT id FROM charge_infos WHERE source_kind = ?1 AND source_id = ?2",
            )?
            .query_row(rusqlite::params![c.source_kind, c.source_id], |r| r.get(0))
            .optional()?
        {
            return Ok(id);
        }
        let values = CiValues {
            created_date: render(&c.charge_date, self.tz),
            transaction_type: c.charge_info_type.to_string(),
            charge_category: c.charge_category.clone(),
            billing_account_num: c.billing_account_num.clone(),
            order_id: None,
            service_id: c.service_id,
            invoice_number: c.invoice_number.clone(),
            charge_amount: Number(c.amount),
            order_amount: None,
            product_id: c.product_id,
            product_name: c.product_name.clone(),
            currency_code: c.currency_code.clone(),
        };
        let created_by = format!("collector-run-{}", self.run_id);
        let core_id = format!(
            "core:{}:{}",
            c.source_kind.to_ascii_lowercase(),
            c.source_id
        );
        // Cached: a run stores one statement's worth of rows per source record.
        self.tx
            .prepare_cached(
                "INSERT INTO charge_infos (created_on, updated_on, created_by, updated_by,
                    billing_account_num, core_id, charge_info_type, source_kind, source_id,
                    parent_id, collector_run_id, ci_values, billing_account_id, charge_date,
                    amount, currency_code, charge_category, invoice_number, service_id,
                    product_id)
                 VALUES (?1, ?1, ?2, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,
                    ?15, ?16, ?17, ?18)",
            )?
            .execute(rusqlite::params![
                self.now,
                created_by,
                c.billing_account_num,
                core_id,
                c.charge_info_type,
                c.source_kind,
                c.source_id,
                c.parent_id,
                self.run_id,
                serde_json::to_string(&values)?,
                c.billing_account_id,
                c.charge_date,
                canonical(c.amount),
                c.currency_code,
                c.charge_category,
                c.invoice_number,
                c.service_id,
                c.product_id,
            ])?;
        Ok(self.tx.last_insert_rowid())
    }
}

fn decimal(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Decimal> {
    r.get_ref(i).and_then(|v| {
        crate::money::from_sql_text(v)
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, v.data_type(), Box::new(e)))
    })
}

struct UsageEvent {
    id: i64,
    account: Option<(i64, String, String)>,
    start_time: String,
    total: Decimal,
    service_id: Option<i64>,
    product: Option<(i64, String)>,
}

/// How one pass over usage events turns them into charge info.
struct UsagePass {
    /// Which events, with `?1..?2` the window.
    condition: &'static str,
    /// Source kinds of the parent and of the children.
    kinds: (&'static str, &'static str),
    /// +1 for charges, -1 for reversals.
    negate: bool,
}

/// Live events, by start_time.
const LIVE_USAGE: UsagePass = UsagePass {
    condition: "e.voided = 0 AND e.start_time >= ?1 AND e.start_time < ?2",
    kinds: ("USAGE_EVENT", "USAGE_CHARGE"),
    negate: false,
};

/// Events voided (by an overwrite) inside the window after they were collected: their
/// charges are reversed with the event's own date, so a ledger run posts the reversal into
/// the original period (or, when that is closed, the next open one).
const VOIDED_USAGE: UsagePass = UsagePass {
    condition: "e.voided = 1 AND e.voided_at >= ?1 AND e.voided_at < ?2
                AND EXISTS (SELECT 1 FROM charge_infos x
                            WHERE x.source_kind = 'USAGE_EVENT' AND x.source_id = e.id)",
    kinds: ("USAGE_EVENT_VOID", "USAGE_CHARGE_VOID"),
    negate: true,
};

fn collect_usage(ctx: &RunContext<'_>) -> Result<()> {
    collect_usage_pass(ctx, &LIVE_USAGE)?;
    collect_usage_pass(ctx, &VOIDED_USAGE)
}

fn collect_usage_pass(ctx: &RunContext<'_>, pass: &UsagePass) -> Result<()> {
    let mut stmt = ctx.tx.prepare(&format!(
        "SELECT e.id, a.id, a.account_num, a.currency_code, e.start_time, e.total_charge,
                s.id, p.id, p.name
         FROM usage_events e
         LEFT JOIN billing_accounts a ON a.id = e.billing_account_id
         LEFT JOIN service_resources sr ON sr.id = e.service_resource_id
         LEFT JOIN agreement_services ags ON ags.id = e.agreement_service_id
         LEFT JOIN services s ON s.id = COALESCE(sr.service_id, ags.service_id)
         LEFT JOIN products p ON p.id = s.product_id
         WHERE {condition}
         ORDER BY e.id",
        condition = pass.condition,
    ))?;
    let events = stmt
        .query_map(rusqlite::params![ctx.from, ctx.to], |r| {
            let account = match r.get::<_, Option<i64>>(1)? {
                Some(id) => Some((id, r.get(2)?, r.get(3)?)),
                None => None,
            };
            let product = match r.get::<_, Option<i64>>(7)? {
                Some(id) => Some((id, r.get(8)?)),
                None => None,
            };
            Ok(UsageEvent {
                id: r.get(0)?,
                account,
                start_time: r.get(4)?,
                total: decimal(r, 5)?,
                service_id: r.get(6)?,
                product,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut charges = ctx.tx.prepare(
        "SELECT c.id, c.charge, cc.name FROM usage_event_charges c
         JOIN charge_categories cc ON cc.id = c.charge_category_id
         WHERE c.usage_event_id = ?1 ORDER BY c.id",
    )?;
    let sign = |d: Decimal| if pass.negate { -d } else { d };
    for e in events {
        let Some((account_id, account_num, currency)) = e.account else {
            ctx.error(format!(
                "usage event {}: it has no billing account, so it was not collected",
                e.id
            ))?;
            continue;
        };
        let base = |kind, id, ty, parent, amount, category| Collected {
            source_kind: kind,
            source_id: id,
            charge_info_type: ty,
            parent_id: parent,
            billing_account_id: account_id,
            billing_account_num: account_num.clone(),
            charge_date: e.start_time.clone(),
            amount,
            currency_code: Some(currency.clone()),
            charge_category: category,
            invoice_number: None,
            service_id: e.service_id,
            product_id: e.product.as_ref().map(|p| p.0),
            product_name: e.product.as_ref().map(|p| p.1.clone()),
        };
        let parent = ctx.store(&base(
            pass.kinds.0,
            e.id,
            "USAGE_EVENT",
            None,
            sign(e.total),
            None,
        ))?;
        let lines = charges
            .query_map([e.id], |r| {
                Ok((r.get::<_, i64>(0)?, decimal(r, 1)?, r.get(2)?))
            })?
            .collect::<rusqlite::Result<Vec<(i64, Decimal, String)>>>()?;
        for (charge_id, amount, category) in lines {
            ctx.store(&base(
                pass.kinds.1,
                charge_id,
                "USAGE",
                Some(parent),
                sign(amount),
                Some(category),
            ))?;
        }
    }
    Ok(())
}

/// Collects one simple source: `sql` selects (id, account id, account num, currency, date,
/// amount, category, invoice number) inside the window `?1..?2`.
fn collect_simple(ctx: &RunContext<'_>, kind: &str, sql: &str) -> Result<()> {
    let mut stmt = ctx.tx.prepare(sql)?;
    let rows = stmt
        .query_map(rusqlite::params![ctx.from, ctx.to], |r| {
            Ok(Collected {
                source_kind: kind,
                source_id: r.get(0)?,
                charge_info_type: kind,
                parent_id: None,
                billing_account_id: r.get(1)?,
                billing_account_num: r.get(2)?,
                currency_code: r.get(3)?,
                charge_date: r.get(4)?,
                amount: decimal(r, 5)?,
                charge_category: r.get(6)?,
                invoice_number: r.get(7)?,
                service_id: None,
                product_id: None,
                product_name: None,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    for c in rows {
        ctx.store(&c)?;
    }
    Ok(())
}

/// Runs the collector of `category`; false when the sandbox has no source for it.
fn collect_category(ctx: &RunContext<'_>, category: &str) -> Result<bool> {
    match category {
        "USAGE" => collect_usage(ctx)?,
        "INVOICE" => collect_simple(
            ctx,
            "INVOICE",
            "SELECT i.id, a.id, a.account_num, a.currency_code, i.occurred_on, i.amount,
                    NULL, i.invoice_num
             FROM invoices i JOIN billing_accounts a ON a.id = i.billing_account_id
             WHERE i.occurred_on >= ?1 AND i.occurred_on < ?2 ORDER BY i.id",
        )?,
        // A payment lowers the receivable: its charge amount is negative.
        "PAYMENT" => collect_simple(
            ctx,
            "PAYMENT",
            "SELECT p.id, a.id, a.account_num, a.currency_code, p.occurred_on,
                    CASE WHEN p.amount LIKE '-%' THEN substr(p.amount, 2) ELSE '-' || p.amount END,
                    'Payment', NULL
             FROM payments p JOIN billing_accounts a ON a.id = p.billing_account_id
             WHERE p.occurred_on >= ?1 AND p.occurred_on < ?2 ORDER BY p.id",
        )?,
        // A credit lowers the receivable (negative), a debit raises it.
        "ADJUSTMENT" => collect_simple(
            ctx,
            "ADJUSTMENT",
            "SELECT j.id, a.id, a.account_num, a.currency_code, j.occurred_on,
                    CASE WHEN j.adjustment_type <> 'CREDIT' THEN j.amount
                         WHEN j.amount LIKE '-%' THEN substr(j.amount, 2)
                         ELSE '-' || j.amount END,
                    COALESCE((SELECT cc.name FROM account_adjustment_items it
                              JOIN charge_categories cc ON cc.id = it.charge_category_id
                              WHERE it.adjustment_id = j.id ORDER BY it.id LIMIT 1), 'Adjustment'),
                    NULL
             FROM account_adjustments j JOIN billing_accounts a ON a.id = j.billing_account_id
             WHERE j.occurred_on >= ?1 AND j.occurred_on < ?2 ORDER BY j.id",
        )?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// Creates and executes a collector run; answers its id. 400 bad input, 409 another
/// collector run unfinished, 412 an empty collector catalogue.
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
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    if catalogue.is_empty() {
        return Err(Error::PreconditionFailed(
            "the collector catalogue is empty, so there is nothing to run".into(),
        ));
    }
    let mut chosen = Vec::new();
    for name in &r.collector_operations {
        let Some(entry) = catalogue.iter().find(|(n, _)| n == name) else {
            return Err(Error::bad_request(format!(
                "collector_operations: '{name}' is not a collector of the catalogue ({})",
                catalogue
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        if !chosen.contains(entry) {
            chosen.push(entry.clone());
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
    let now = crate::time::now();
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
    for (name, category) in &chosen {
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

fn run_row(r: &rusqlite::Row<'_>, tenant_id: &str, tz: Tz) -> rusqlite::Result<CollectorRun> {
    let ops: String = r.get(8)?;
    let time = |i: usize| -> rusqlite::Result<Option<String>> {
        Ok(r.get::<_, Option<String>>(i)?.map(|t| render(&t, tz)))
    };
    Ok(CollectorRun {
        id: r.get(0)?,
        tenant_id: tenant_id.to_string(),
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
    tenant_id: &str,
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
    tenant_id: &str,
    tz: Tz,
) -> Result<Paged<CollectorRun>> {
    paged_query(
        conn,
        RUN_COLUMNS,
        "collector_runs",
        &Where::default(),
        "id DESC",
        page,
        |r| run_row(r, tenant_id, tz),
    )
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
    let mut w = Where::default();
    w.opt(&format!("{column} = ?"), Some(run_id));
    paged_query(
        conn,
        "id, collector_run_id, gl_run_id, error_message",
        "run_errors",
        &w,
        "id",
        page,
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

/// The status filter of run lists, checked against [`RUN_STATUSES`].
pub fn status_param(p: &std::collections::HashMap<String, String>) -> Result<Option<String>> {
    let s = params::text(p, "status");
    if let Some(v) = &s {
        check_enum("status", v, RUN_STATUSES)?;
    }
    Ok(s)
}
