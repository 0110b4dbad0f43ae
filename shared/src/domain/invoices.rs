//! Invoices: edits, and the rules of paying them down. An invoice takes payments (and
//! credits) only while OPEN and only from its own account; a payment lowers its amount to
//! pay and the account balance, and an invoice with nothing left to pay closes with a paid
//! date. Invoices are created by `billing::create_invoice` (Surface B's records), which
//! checks the invoice number is unused.

use super::billing::add_to_balance;
use super::{parse_opt_time, require, update};
use crate::money::{canonical, from_sql_text};
use crate::{Error, Result};
use chrono_tz::Tz;
use rusqlite::{OptionalExtension, Transaction};
use rust_decimal::Decimal;

/// An invoice as the payment rules see it.
pub(crate) struct InvoiceState {
    pub(crate) id: i64,
    pub(crate) invoice_num: String,
    pub(crate) account_id: i64,
    pub(crate) amount_to_pay: Decimal,
    pub(crate) status: String,
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
    let to_pay = invoice.amount_to_pay - amount;
    let (status, paid_date) = if to_pay.is_zero() {
        ("CLOSED", Some(applied_on))
    } else {
        ("OPEN", None)
    };
    tx.execute(
        "UPDATE invoices SET amount_to_pay = ?1, status = ?2, paid_date = COALESCE(?3, paid_date) WHERE id = ?4",
        rusqlite::params![canonical(to_pay), status, paid_date, invoice_id],
    )?;
    add_to_balance(tx, invoice.account_id, -amount)
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
    if invoice.status != "OPEN" {
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
        "{INVOICE_COLUMNS} WHERE billing_account_id = ?1 AND status = 'OPEN' ORDER BY occurred_on, id"
    ))?;
    let rows = stmt
        .query_map([account_id], invoice_row)?
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
