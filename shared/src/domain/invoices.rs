//! Invoices and their lines: edits, and the rules of paying them down. An invoice takes payments (and
//! credits) only while OPEN and only from its own account; a payment lowers its amount to
//! pay and the account balance, and an invoice with nothing left to pay closes with a paid
//! date (an account in COLLECTION with nothing overdue left is ACTIVE again). A new
//! invoice ([`create_invoice`]) needs an unused invoice number and an existing account; an
//! open one adds its amount to the account balance. Cancelling ([`cancel_invoice`]) takes an
//! unpaid invoice off the balance and returns the pending usage charges a bill on demand or
//! a bill run had put on it.
//!
//! Lines: every invoice holds its lines (`invoice_lines`, numbered 1.. in the order given),
//! written with it by [`create_invoice`]: the parts a bill run or `billOnDemand` computed
//! (`billing::invoicing`), the lines of a fixture document, or, for an invoice made with its
//! amount only (Surface A's create), one AMOUNT line of the whole amount. Invariant: an
//! invoice's amount is the sum of its lines (checked arithmetic; a document whose lines add
//! up to another amount is refused), and lines never change after the invoice is made (a
//! cancel keeps them, as it keeps the amount).

use super::accounts::AccountStatus;
use super::status::status_enum;
use super::{check_enum, insert, parse_opt_time, parse_time, require, update};
use crate::money::{canonical, from_sql_text};
use crate::{Error, Result};
use chrono_tz::Tz;
use rusqlite::{OptionalExtension, Transaction};
use rust_decimal::Decimal;
use serde::Deserialize;

status_enum! {
    /// The status of an invoice: created OPEN (or PROCESSING, or CLOSED when paid before it
    /// was recorded), CLOSED when nothing is left to pay ([`settle_invoice`]), CANCELED only
    /// by [`cancel_invoice`].
    pub enum InvoiceStatus {
        /// Being prepared; not yet to pay, may be canceled.
        Processing = "PROCESSING",
        /// To pay.
        Open = "OPEN",
        /// Paid.
        Closed = "CLOSED",
        /// Canceled; nothing to pay.
        Canceled = "CANCELED",
    }
}
/// Invoice statuses ([`InvoiceStatus`]'s names).
pub const INVOICE_STATUSES: &[&str] = InvoiceStatus::NAMES;

/// The kinds of invoice line: a recurring price of a service for a part of its period, a
/// one-time price of a service, the rated usage of one charge category, pending charges no
/// rated usage event carries (fixture data), an invoice made with its amount only, and what
/// cumulative usage tiers change of a rule's per-event charges.
pub const INVOICE_LINE_TYPES: &[&str] = &[
    LINE_RECURRING,
    LINE_ONE_TIME,
    LINE_USAGE,
    LINE_USAGE_TIERS,
    LINE_PENDING,
    LINE_AMOUNT,
];
/// A recurring price of a service, for `[period_start_date, period_end_date)`.
pub const LINE_RECURRING: &str = "RECURRING";
/// A one-time price of a service.
pub const LINE_ONE_TIME: &str = "ONE_TIME";
/// The rated usage of one charge category (`charge_category_id`).
pub const LINE_USAGE: &str = "USAGE";
/// With the policy's cumulative usage tiers: what pricing a TIERED rule's bill-period
/// quantity at once changes of the per-event charges its USAGE lines bill (usually a
/// negative amount: later units fall in cheaper tiers).
pub const LINE_USAGE_TIERS: &str = "USAGE_TIERS";
/// Pending charges that no rated usage event carries (set by fixture data).
pub const LINE_PENDING: &str = "PENDING";
/// The whole amount of an invoice made with its amount only.
pub const LINE_AMOUNT: &str = "AMOUNT";
/// The description of the one AMOUNT line an invoice created with just an amount gets.
pub const IMPLIED_LINE_DESCRIPTION: &str = "Invoice amount";

/// Most lines one invoice holds (a fixture document's bound, as its records per kind; a
/// run writes one line per price of each service and one per charge category).
pub const MAX_INVOICE_LINES: usize = 10_000;

/// One line of an invoice to create (the fixture document's `invoices[].lines[]`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewInvoiceLine {
    /// One of [`INVOICE_LINE_TYPES`].
    pub line_type: String,
    /// Amount.
    #[serde(deserialize_with = "crate::money::deserialize_number")]
    pub amount: Decimal,
    /// What it bills, in words.
    #[serde(default)]
    pub description: Option<String>,
    /// The service billed (recurring and one-time lines).
    #[serde(default)]
    pub service_id: Option<i64>,
    /// The service's product.
    #[serde(default)]
    pub product_id: Option<i64>,
    /// The product price billed (recurring and one-time lines).
    #[serde(default)]
    pub product_price_id: Option<i64>,
    /// The charge category of the usage billed (usage lines).
    #[serde(default)]
    pub charge_category_id: Option<i64>,
    /// Start of the service period billed (recurring lines; date or date-time).
    #[serde(default)]
    pub period_start_date: Option<String>,
    /// End (exclusive) of the service period billed.
    #[serde(default)]
    pub period_end_date: Option<String>,
}

/// An invoice to create.
#[derive(Debug, Clone, Deserialize)]
pub struct NewInvoice {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// Unique invoice number.
    pub invoice_num: String,
    /// The account billed.
    pub billing_account_id: i64,
    /// The run that produced it.
    pub bill_batch_run_id: Option<i64>,
    /// Invoice type, default STANDARD.
    pub invoice_type: Option<String>,
    /// Amount.
    #[serde(deserialize_with = "crate::money::deserialize_number")]
    pub amount: Decimal,
    /// Description.
    pub description: Option<String>,
    /// Invoice date.
    pub occurred_on: String,
    /// Due date.
    pub due_date: Option<String>,
    /// One of [`INVOICE_STATUSES`], default OPEN. A CLOSED invoice is fully paid.
    pub status: Option<String>,
    /// Its lines, adding up to `amount`; None: one AMOUNT line of the whole amount.
    #[serde(default)]
    pub lines: Option<Vec<NewInvoiceLine>>,
}

/// Creates an invoice (409 when its number is taken); an open one adds its amount to the
/// account balance.
pub fn create_invoice(tx: &Transaction<'_>, i: &NewInvoice, tz: Tz) -> Result<i64> {
    check_invoice_num_free(tx, &i.invoice_num)?;
    require(
        tx,
        "billing_accounts",
        "billing account",
        i.billing_account_id,
    )?;
    let status = match &i.status {
        Some(text) => InvoiceStatus::parse_field("status", text)?,
        None => InvoiceStatus::Open,
    };
    if status == InvoiceStatus::Canceled {
        return Err(Error::bad_request(
            "status: an invoice is not created CANCELED; cancel it with invoices/{eid}/cancel",
        ));
    }
    let occurred = parse_time("occurredOn", &i.occurred_on, tz)?;
    let due = parse_opt_time("dueDate", &i.due_date, tz)?;
    let one_line;
    let lines = match &i.lines {
        Some(lines) => lines.as_slice(),
        None => {
            one_line = [NewInvoiceLine {
                line_type: LINE_AMOUNT.into(),
                amount: i.amount,
                description: Some(IMPLIED_LINE_DESCRIPTION.into()),
                ..NewInvoiceLine::default()
            }];
            &one_line
        }
    };
    let lines = check_lines(lines, i.amount, tz)?;
    let closed = status == InvoiceStatus::Closed;
    let to_pay = if closed { Decimal::ZERO } else { i.amount };
    let paid_date = closed.then(|| due.clone().unwrap_or_else(|| occurred.clone()));
    let id = insert(
        tx,
        "invoices",
        &[
            ("id", &i.id),
            ("invoice_num", &i.invoice_num),
            ("billing_account_id", &i.billing_account_id),
            ("original_billing_account_id", &i.billing_account_id),
            ("bill_batch_run_id", &i.bill_batch_run_id),
            (
                "invoice_type",
                &i.invoice_type.clone().unwrap_or_else(|| "STANDARD".into()),
            ),
            ("amount", &canonical(i.amount)),
            ("amount_to_pay", &canonical(to_pay)),
            ("description", &i.description),
            ("occurred_on", &occurred),
            ("due_date", &due),
            ("paid_date", &paid_date),
            ("status", &status),
        ],
    )?;
    write_lines(tx, id, &lines)?;
    if !closed {
        super::accounts::add_to_balance(tx, i.billing_account_id, i.amount)?;
    }
    Ok(id)
}

/// `lines` checked (at least one, at most [`MAX_INVOICE_LINES`], known types, text and dates
/// valid, adding up to `amount`) with their dates as stored instants.
fn check_lines(lines: &[NewInvoiceLine], amount: Decimal, tz: Tz) -> Result<Vec<NewInvoiceLine>> {
    if lines.is_empty() || lines.len() > MAX_INVOICE_LINES {
        return Err(Error::bad_request(format!(
            "lines: an invoice holds 1 to {MAX_INVOICE_LINES} lines, not {}",
            lines.len()
        )));
    }
    let mut sum = Decimal::ZERO;
    let mut checked = Vec::with_capacity(lines.len());
    for (n, line) in lines.iter().enumerate() {
        let field = |name: &str| format!("lines[{n}].{name}");
        check_enum(&field("line_type"), &line.line_type, INVOICE_LINE_TYPES)?;
        if let Some(d) = &line.description {
            super::check_text("description", d)?;
        }
        sum = crate::money::checked_add(sum, line.amount, "the sum of the invoice's lines")?;
        checked.push(NewInvoiceLine {
            period_start_date: parse_opt_time(
                &field("period_start_date"),
                &line.period_start_date,
                tz,
            )?,
            period_end_date: parse_opt_time(&field("period_end_date"), &line.period_end_date, tz)?,
            ..line.clone()
        });
    }
    if sum != amount {
        return Err(Error::bad_request(format!(
            "lines: they add up to {}, not to the invoice's amount {}",
            canonical(sum),
            canonical(amount)
        )));
    }
    Ok(checked)
}

/// Stores the checked `lines` of invoice `invoice_id`, numbered 1.. in order (one cached
/// statement: a bill run writes a few lines for each of thousands of invoices).
fn write_lines(tx: &Transaction<'_>, invoice_id: i64, lines: &[NewInvoiceLine]) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO invoice_lines (invoice_id, line_num, line_type, amount, description,
                service_id, product_id, product_price_id, charge_category_id,
                period_start_date, period_end_date)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    for (n, l) in lines.iter().enumerate() {
        stmt.execute(rusqlite::params![
            invoice_id,
            n as i64 + 1,
            l.line_type,
            canonical(l.amount),
            l.description,
            l.service_id,
            l.product_id,
            l.product_price_id,
            l.charge_category_id,
            l.period_start_date,
            l.period_end_date,
        ])?;
    }
    Ok(())
}

/// Fails with a conflict when an invoice already has `invoice_num`.
fn check_invoice_num_free(tx: &Transaction<'_>, invoice_num: &str) -> Result<()> {
    let taken = tx
        .prepare_cached("SELECT 1 FROM invoices WHERE invoice_num = ?1")?
        .exists([invoice_num])?;
    if taken {
        return Err(Error::conflict(format!(
            "an invoice with invoiceNum '{invoice_num}' already exists"
        )));
    }
    Ok(())
}

/// Records how much of invoice `id` was the account's pending charges (what a cancel gives
/// back).
pub(crate) fn set_billed_pending_charges(
    tx: &Transaction<'_>,
    id: i64,
    billed: Decimal,
) -> Result<()> {
    tx.prepare_cached("UPDATE invoices SET billed_pending_charges = ?1 WHERE id = ?2")?
        .execute(rusqlite::params![canonical(billed), id])?;
    Ok(())
}

/// Cancels invoice `id` at the stored instant `at`: it becomes CANCELED with nothing to pay
/// (`canceled_at` = `at`, when collectors reverse it if they had collected it), its amount
/// to pay leaves
/// the account balance, and the pending charges a bill on demand moved onto it are pending
/// again (its amount stays as billed). 404 unknown; 409 when it is CLOSED or already
/// CANCELED, or when a payment or credit was applied to it (the platform cancels only
/// untouched invoices; a paid one is corrected with an adjustment).
pub fn cancel_invoice(tx: &Transaction<'_>, id: i64, at: &str) -> Result<()> {
    let invoice = load_invoice(tx, id)?;
    if !matches!(
        invoice.status,
        InvoiceStatus::Open | InvoiceStatus::Processing
    ) {
        return Err(Error::conflict(format!(
            "invoice {} is {}; only OPEN or PROCESSING invoices can be canceled",
            invoice.invoice_num, invoice.status
        )));
    }
    let applied = tx
        .prepare_cached(
            "SELECT 1 FROM payment_applications WHERE invoice_id = ?1 \
             UNION ALL SELECT 1 FROM adjustment_applications WHERE invoice_id = ?1",
        )?
        .exists([id])?;
    if applied {
        return Err(Error::conflict(format!(
            "invoice {} has payments or credits applied; only an invoice nothing was applied to can be canceled",
            invoice.invoice_num
        )));
    }
    let billed: Option<String> = tx.query_row(
        "SELECT billed_pending_charges FROM invoices WHERE id = ?1",
        [id],
        |r| r.get(0),
    )?;
    tx.execute(
        "UPDATE invoices SET status = ?4, amount_to_pay = ?1, canceled_at = ?2 WHERE id = ?3",
        rusqlite::params![canonical(Decimal::ZERO), at, id, InvoiceStatus::Canceled],
    )?;
    super::accounts::add_to_balance(tx, invoice.account_id, -invoice.amount_to_pay)?;
    // Its usage events are pending again, for the next run or bill on demand.
    super::usage::unmark_invoiced(tx, invoice.account_id, id)?;
    if let Some(billed) = billed.as_deref().and_then(crate::money::parse_decimal) {
        super::accounts::add_to_pending_charges(tx, invoice.account_id, billed)?;
    }
    Ok(())
}

/// An invoice as the payment rules see it.
pub(crate) struct InvoiceState {
    pub(crate) id: i64,
    pub(crate) invoice_num: String,
    pub(crate) account_id: i64,
    pub(crate) amount_to_pay: Decimal,
    pub(crate) status: InvoiceStatus,
}

/// Changes to an invoice. Amounts and status move only through payments.
#[derive(Debug, Clone, Default)]
pub struct InvoiceEdit {
    /// Description.
    pub description: Option<String>,
    /// Due date (date or date-time).
    pub due_date: Option<String>,
    /// External invoice number.
    pub external_invoice_num: Option<String>,
}

/// Applies `e` to invoice `id`.
pub fn edit_invoice(tx: &Transaction<'_>, id: i64, e: &InvoiceEdit, tz: Tz) -> Result<()> {
    require(tx, "invoices", "invoice", id)?;
    let due = parse_opt_time("dueDate", &e.due_date, tz)?;
    update(
        tx,
        "invoices",
        id,
        &[
            ("description", &e.description),
            ("due_date", &due),
            ("external_invoice_num", &e.external_invoice_num),
        ],
    )
}

/// Lowers an invoice's amount to pay and its account's balance by `amount` (which the caller
/// has bounded by the amount to pay); an invoice with nothing left to pay closes with
/// `applied_on` as its paid date.
pub fn settle_invoice(
    tx: &Transaction<'_>,
    invoice_id: i64,
    amount: Decimal,
    applied_on: &str,
) -> Result<()> {
    let invoice = load_invoice(tx, invoice_id)?;
    let to_pay = crate::money::checked_add(
        invoice.amount_to_pay,
        -amount,
        &format!("the amount to pay of invoice {invoice_id}"),
    )?;
    let (status, paid_date) = if to_pay.is_zero() {
        (InvoiceStatus::Closed, Some(applied_on))
    } else {
        (InvoiceStatus::Open, None)
    };
    tx.execute(
        "UPDATE invoices SET amount_to_pay = ?1, status = ?2, paid_date = COALESCE(?3, paid_date) WHERE id = ?4",
        rusqlite::params![canonical(to_pay), status, paid_date, invoice_id],
    )?;
    super::accounts::add_to_balance(tx, invoice.account_id, -amount)?;
    clear_collection(tx, invoice.account_id, applied_on).map(drop)
}

/// Brings billing account `account_id` from COLLECTION back to ACTIVE when, at the stored
/// instant `at`, none of its OPEN invoices with an amount to pay is due; answers whether it
/// did.
pub(crate) fn clear_collection(tx: &Transaction<'_>, account_id: i64, at: &str) -> Result<bool> {
    if super::accounts::status_of(tx, account_id)? != AccountStatus::Collection {
        return Ok(false);
    }
    let mut stmt = tx.prepare_cached(
        "SELECT amount_to_pay FROM invoices
         WHERE billing_account_id = ?1 AND status = ?3 AND due_date <= ?2",
    )?;
    let mut overdue = false;
    let open = InvoiceStatus::Open;
    for to_pay in stmt.query_map(rusqlite::params![account_id, at, open], |r| {
        from_sql_text(r.get_ref(0)?).map_err(Into::into)
    })? {
        let to_pay: Decimal = to_pay?;
        overdue |= !to_pay.is_zero();
    }
    if overdue {
        return Ok(false);
    }
    super::accounts::move_status(
        tx,
        account_id,
        AccountStatus::Collection,
        AccountStatus::Active,
    )?;
    Ok(true)
}

/// An open invoice of `account_id` with its amount to pay: 404 when unknown, 400 when it
/// belongs to another account, 409 when it is not OPEN.
pub fn open_invoice_to_pay(
    tx: &Transaction<'_>,
    invoice_id: i64,
    account_id: i64,
) -> Result<Decimal> {
    named_open_invoice(tx, invoice_id, account_id).map(|i| i.amount_to_pay)
}

/// The billing account an invoice belongs to (404 when the invoice does not exist).
pub fn invoice_account(tx: &Transaction<'_>, invoice_id: i64) -> Result<i64> {
    load_invoice(tx, invoice_id).map(|i| i.account_id)
}

const INVOICE_COLUMNS: &str =
    "SELECT id, invoice_num, billing_account_id, amount_to_pay, status FROM invoices";

fn invoice_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<InvoiceState> {
    Ok(InvoiceState {
        id: r.get(0)?,
        invoice_num: r.get(1)?,
        account_id: r.get(2)?,
        amount_to_pay: from_sql_text(r.get_ref(3)?)?,
        status: r.get(4)?,
    })
}

fn load_invoice(tx: &Transaction<'_>, id: i64) -> Result<InvoiceState> {
    tx.query_row(
        &format!("{INVOICE_COLUMNS} WHERE id = ?1"),
        [id],
        invoice_row,
    )
    .optional()?
    .ok_or_else(|| Error::not_found(format!("invoice {id} does not exist")))
}

pub(crate) fn named_open_invoice(
    tx: &Transaction<'_>,
    id: i64,
    account_id: i64,
) -> Result<InvoiceState> {
    let invoice = load_invoice(tx, id)?;
    if invoice.account_id != account_id {
        return Err(Error::bad_request(format!(
            "invoice {} belongs to billing account {}, not to the payment's account {account_id}",
            invoice.invoice_num, invoice.account_id
        )));
    }
    if invoice.status != InvoiceStatus::Open {
        return Err(Error::conflict(format!(
            "invoice {} is {}; only OPEN invoices take payments",
            invoice.invoice_num, invoice.status
        )));
    }
    Ok(invoice)
}

pub(crate) fn open_invoices_oldest_first(
    tx: &Transaction<'_>,
    account_id: i64,
) -> Result<Vec<InvoiceState>> {
    let mut stmt = tx.prepare_cached(&format!(
        "{INVOICE_COLUMNS} WHERE billing_account_id = ?1 AND status = ?2 ORDER BY occurred_on, id"
    ))?;
    let rows = stmt
        .query_map(
            rusqlite::params![account_id, InvoiceStatus::Open],
            invoice_row,
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

pub(crate) fn sort_oldest_first(
    tx: &Transaction<'_>,
    list: Vec<InvoiceState>,
) -> Result<Vec<InvoiceState>> {
    let mut keyed = list
        .into_iter()
        .map(|i| {
            let occurred: String = tx.query_row(
                "SELECT occurred_on FROM invoices WHERE id = ?1",
                [i.id],
                |r| r.get(0),
            )?;
            Ok((occurred, i))
        })
        .collect::<Result<Vec<_>>>()?;
    keyed.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.id.cmp(&b.1.id)));
    keyed.dedup_by_key(|(_, i)| i.id);
    Ok(keyed.into_iter().map(|(_, i)| i).collect())
}

super::fixture_columns_writer!("invoices");
