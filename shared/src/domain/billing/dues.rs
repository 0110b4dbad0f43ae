//! Invoices reaching their due date, and accounts leaving dunning.
//!
//! - An account with `automaticRecurringPayment` pays each OPEN invoice in full on its due
//!   date ([`autopay`]): a COMPLETED payment of the amount to pay, with a credit card as its
//!   payment method, applied to the invoice, which closes with that date as its paid date.
//! - Any payment or credit that leaves an account in COLLECTION with nothing overdue (no OPEN
//!   invoice with an amount to pay whose due date has come) brings it back to ACTIVE
//!   (`invoices::clear_collection`, called wherever an invoice is paid down: the settlement
//!   rule lives with the invoices, so payments and invoices need nothing from here).

use super::Ran;
use crate::domain::payments::{apply_payment, create_payment, NewPayment, PaymentTarget};
use crate::Result;
use chrono_tz::Tz;
use rusqlite::Transaction;
use rust_decimal::Decimal;

/// Pays invoice `invoice_id` (of `account_id`, `to_pay` left to pay) in full at its due
/// date `at` when the account pays automatically; `None` when it does not.
pub fn autopay(
    tx: &Transaction<'_>,
    invoice_id: i64,
    account_id: i64,
    to_pay: Decimal,
    at: &str,
    tz: Tz,
) -> Result<Option<Vec<Ran>>> {
    let (automatic, status, invoice_num): (bool, String, String) = tx
        .prepare_cached(
            "SELECT a.automatic_recurring_payment, a.status, i.invoice_num
             FROM billing_accounts a JOIN invoices i ON i.billing_account_id = a.id
             WHERE i.id = ?1",
        )?
        .query_row([invoice_id], |r| r.try_into())?;
    if !automatic || to_pay <= Decimal::ZERO {
        return Ok(None);
    }
    let payment = create_payment(
        tx,
        &NewPayment {
            id: None,
            billing_account_id: account_id,
            amount: to_pay,
            description: Some(format!("Automatic payment of invoice {invoice_num}")),
            reference: Some(format!("AUTOPAY-{invoice_num}")),
            occurred_on: at.to_string(),
            payment_method: Some("creditCardPayment".into()),
        },
        tz,
    )?;
    apply_payment(tx, payment, &PaymentTarget::Invoice(invoice_id), at)?;
    let mut ran = vec![(
        "invoice.autopaid",
        invoice_id,
        format!(
            "paid in full on its due date by automatic payment {payment} ({}), invoice CLOSED",
            crate::money::canonical(to_pay)
        ),
    )];
    if status == "COLLECTION" && account_status(tx, account_id)? == "ACTIVE" {
        ran.push(cleared(account_id));
    }
    Ok(Some(ran))
}

/// The transition of an account leaving COLLECTION.
pub fn cleared(account_id: i64) -> Ran {
    (
        "account.collection_cleared",
        account_id,
        "nothing overdue any more: billing account back to ACTIVE".into(),
    )
}

fn account_status(tx: &Transaction<'_>, account_id: i64) -> Result<String> {
    Ok(tx
        .prepare_cached("SELECT status FROM billing_accounts WHERE id = ?1")?
        .query_row([account_id], |r| r.get(0))?)
}
