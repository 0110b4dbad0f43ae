//! Bill batches: a batch of billing accounts billed together, with its runs. Creation (by
//! Surface B's POST and by the seed), the accounts of a batch and the runs.

use super::status::status_enum;
use super::{check_currency, check_enum, insert, parse_opt_time, require};
use crate::{Error, Result};
use chrono_tz::Tz;
use rusqlite::Transaction;
use serde::Deserialize;

/// Bill batch types, as the interface lists them.
pub const BILL_BATCH_TYPES: &[&str] = &["reissue", "reverse", "adhoc", "on-demand monthly"];
pub use super::status::BillBatchStatus;
/// Bill batch statuses ([`BillBatchStatus`]'s names).
pub const BILL_BATCH_STATUSES: &[&str] = BillBatchStatus::NAMES;
status_enum! {
    /// Where the step of a bill batch run the clock opened stands (a fixture's runs may
    /// carry any text; the clock writes only these).
    pub enum RunStepStatus {
        /// Invoicing.
        Running = "RUNNING",
        /// Invoiced, waiting for an approval.
        Waiting = "WAITING",
        /// Invoiced and approved by itself.
        Complete = "COMPLETE",
    }
}
status_enum! {
    /// Whether a bill batch run the clock opened is still open.
    pub enum BatchRunStatus {
        /// Not closed yet (running, or waiting for an approval).
        Open = "OPEN",
        /// Done.
        Closed = "CLOSED",
    }
}

/// A bill batch to create.
#[derive(Debug, Clone, Deserialize)]
pub struct NewBillBatch {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// One of [`BILL_BATCH_TYPES`].
    pub bill_batch_type: String,
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// End date.
    pub end_date: Option<String>,
    /// Approve automatically.
    #[serde(default)]
    pub auto_approve: bool,
    /// Use the payment term.
    #[serde(default)]
    pub use_payment_term: bool,
    /// Render internally.
    #[serde(default)]
    pub internal_render: bool,
    /// Currency, default USD.
    pub currency_code: Option<String>,
    /// One of [`BILL_BATCH_STATUSES`], default ACTIVE.
    pub status: Option<String>,
    /// Category of the accounts billed.
    pub billing_account_category_id: Option<i64>,
    /// Invoice date.
    pub invoice_date: Option<String>,
    /// Invoice due date.
    pub invoice_due_date: Option<String>,
    /// Accounts in the batch.
    #[serde(default)]
    pub billing_account_ids: Vec<i64>,
}

/// Creates a bill batch (status ACTIVE and currency USD unless given) and links its
/// accounts: 400 for a bad date, a due date before the invoice date (checked first), a type
/// or status outside its set, or an empty name.
pub fn create_bill_batch(tx: &Transaction<'_>, b: &NewBillBatch, tz: Tz) -> Result<i64> {
    let invoice_date = parse_opt_time("invoice_date", &b.invoice_date, tz)?;
    let due = parse_opt_time("invoice_due_date", &b.invoice_due_date, tz)?;
    if let (Some(i), Some(d)) = (&invoice_date, &due) {
        if d < i {
            return Err(Error::bad_request(
                "invoice_due_date must not be before invoice_date",
            ));
        }
    }
    check_enum("bill_batch_type", &b.bill_batch_type, BILL_BATCH_TYPES)?;
    let status = match &b.status {
        Some(text) => BillBatchStatus::parse_field("status", text)?,
        None => BillBatchStatus::Active,
    };
    let currency = b.currency_code.clone().unwrap_or_else(|| "USD".into());
    check_currency("currency_code", &currency)?;
    if b.name.trim().is_empty() {
        return Err(Error::bad_request("name must not be empty"));
    }
    if let Some(id) = b.billing_account_category_id {
        require(
            tx,
            "billing_account_categories",
            "billing account category",
            id,
        )?;
    }
    let end = parse_opt_time("end_date", &b.end_date, tz)?;
    let id = insert(
        tx,
        "bill_batches",
        &[
            ("id", &b.id),
            ("bill_batch_type", &b.bill_batch_type),
            ("name", &b.name),
            ("description", &b.description),
            ("end_date", &end),
            ("auto_approve", &b.auto_approve),
            ("use_payment_term", &b.use_payment_term),
            ("internal_render", &b.internal_render),
            ("currency_code", &currency),
            ("status", &status),
            (
                "billing_account_category_id",
                &b.billing_account_category_id,
            ),
            ("invoice_date", &invoice_date),
            ("invoice_due_date", &due),
        ],
    )?;
    for account in &b.billing_account_ids {
        add_account_to_bill_batch(tx, id, *account)?;
    }
    Ok(id)
}

/// Adds a billing account to a bill batch (idempotent).
pub fn add_account_to_bill_batch(
    tx: &Transaction<'_>,
    bill_batch_id: i64,
    billing_account_id: i64,
) -> Result<()> {
    require(tx, "bill_batches", "bill batch", bill_batch_id)?;
    require(
        tx,
        "billing_accounts",
        "billing account",
        billing_account_id,
    )?;
    super::bill_batch_membership::add_account(tx, bill_batch_id, billing_account_id)
}

/// A run of a bill batch.
#[derive(Debug, Clone, Deserialize)]
pub struct NewBillBatchRun {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// The batch.
    pub bill_batch_id: i64,
    /// Run type.
    pub bill_run_type: String,
    /// Sequence in the batch.
    pub sequence: i64,
    /// Step.
    pub step: Option<String>,
    /// Step status.
    pub step_status: Option<String>,
    /// Status.
    pub status: String,
    /// Open date.
    pub open_date: Option<String>,
    /// Close date.
    pub close_date: Option<String>,
    /// Scheduled run date.
    pub scheduled_run_date: Option<String>,
    /// Invoice date.
    pub invoice_date: Option<String>,
    /// Invoice due date.
    pub invoice_due_date: Option<String>,
}

/// Creates a bill batch run.
pub fn create_bill_batch_run(tx: &Transaction<'_>, r: &NewBillBatchRun, tz: Tz) -> Result<i64> {
    require(tx, "bill_batches", "bill batch", r.bill_batch_id)?;
    let open = parse_opt_time("open_date", &r.open_date, tz)?;
    insert(
        tx,
        "bill_batch_runs",
        &[
            ("id", &r.id),
            ("bill_batch_id", &r.bill_batch_id),
            ("bill_run_type", &r.bill_run_type),
            ("sequence", &r.sequence),
            ("step", &r.step),
            ("step_status", &r.step_status),
            ("status", &r.status),
            ("status_date", &open),
            ("open_date", &open),
            (
                "close_date",
                &parse_opt_time("close_date", &r.close_date, tz)?,
            ),
            (
                "scheduled_run_date",
                &parse_opt_time("scheduled_run_date", &r.scheduled_run_date, tz)?,
            ),
            (
                "invoice_date",
                &parse_opt_time("invoice_date", &r.invoice_date, tz)?,
            ),
            (
                "invoice_due_date",
                &parse_opt_time("invoice_due_date", &r.invoice_due_date, tz)?,
            ),
        ],
    )
}

/// Opens the next run of bill batch `batch_id` as the clock makes it: step INVOICE, RUNNING,
/// dated the stored instant `at`, its invoices due `due` (`use_payment_term`: that date is
/// the payment term's); answers its id.
pub(crate) fn open_clock_run(
    tx: &Transaction<'_>,
    batch_id: i64,
    run_type: &str,
    at: &str,
    due: &str,
    use_payment_term: bool,
) -> Result<i64> {
    let sequence: i64 = tx.query_row(
        "SELECT COALESCE(MAX(sequence), 0) + 1 FROM bill_batch_runs WHERE bill_batch_id = ?1",
        [batch_id],
        |r| r.get(0),
    )?;
    insert(
        tx,
        "bill_batch_runs",
        &[
            ("bill_batch_id", &batch_id),
            ("bill_run_type", &run_type),
            ("sequence", &sequence),
            ("step", &"INVOICE"),
            ("step_status", &RunStepStatus::Running),
            ("status", &BatchRunStatus::Open),
            ("status_date", &at),
            ("open_date", &at),
            ("scheduled_run_date", &at),
            ("invoice_date", &at),
            ("invoice_due_date", &due),
            ("use_payment_term", &use_payment_term),
        ],
    )
}

/// How a clock run's invoicing step ended.
pub(crate) struct InvoicingDone<'a> {
    /// COMPLETE (approved by itself) or WAITING (for an approval).
    pub(crate) step_status: RunStepStatus,
    /// CLOSED or OPEN.
    pub(crate) status: BatchRunStatus,
    /// When it closed, if it did.
    pub(crate) close_date: Option<&'a str>,
    /// How many invoices it made.
    pub(crate) processed_invoice_count: i64,
    /// Why accounts were skipped, if any were.
    pub(crate) error_msg: Option<String>,
}

/// Moves clock run `run_id` past its invoicing step to APPROVE, as `done` says.
pub(crate) fn finish_invoicing(
    tx: &Transaction<'_>,
    run_id: i64,
    done: &InvoicingDone<'_>,
) -> Result<()> {
    // The message quotes the errors of skipped accounts: made safe for XML rather than
    // refused, so that a skipped account never stops the clock.
    let error_msg = done.error_msg.as_deref().map(super::xml_safe);
    tx.execute(
        "UPDATE bill_batch_runs SET step = 'APPROVE', step_status = ?1, status = ?2,
             close_date = ?3, processed_invoice_count = ?4, error_msg = ?6
         WHERE id = ?5",
        rusqlite::params![
            done.step_status,
            done.status,
            done.close_date,
            done.processed_invoice_count,
            run_id,
            error_msg
        ],
    )?;
    Ok(())
}

/// Ties bill batch `id` to bill cycle `cycle_id` (the batch holding the cycle's runs).
pub(crate) fn set_bill_cycle(tx: &Transaction<'_>, id: i64, cycle_id: i64) -> Result<()> {
    tx.execute(
        "UPDATE bill_batches SET bill_cycle_id = ?1 WHERE id = ?2",
        [cycle_id, id],
    )?;
    Ok(())
}

super::fixture_columns_writer!("bill_batches", "bill_batch_runs");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::demo_db;

    fn batch(invoice_date: &str, due: &str) -> NewBillBatch {
        serde_json::from_value(serde_json::json!({
            "bill_batch_type": "adhoc", "name": "B",
            "invoice_date": invoice_date, "invoice_due_date": due
        }))
        .unwrap()
    }

    #[test]
    fn the_due_date_may_not_precede_the_invoice_date_and_is_checked_first() {
        let tz: Tz = "America/Chicago".parse().unwrap();
        let mut conn = demo_db(tz);
        let tx = conn.transaction().unwrap();
        let mut early = batch("2026-05-02", "2026-05-01");
        early.bill_batch_type = "nightly".into();
        assert!(matches!(
            create_bill_batch(&tx, &early, tz),
            Err(Error::BadRequest(m)) if m == "invoice_due_date must not be before invoice_date"
        ));
        let id = create_bill_batch(&tx, &batch("2026-05-01", "2026-05-01"), tz).unwrap();
        let (status, currency): (String, String) = tx
            .query_row(
                "SELECT status, currency_code FROM bill_batches WHERE id = ?1",
                [id],
                |r| r.try_into(),
            )
            .unwrap();
        assert_eq!((status.as_str(), currency.as_str()), ("ACTIVE", "USD"));
    }
}
