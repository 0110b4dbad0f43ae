//! Invoices reaching their due date, automatic payments that succeed or are declined, and
//! accounts leaving dunning.
//!
//! - An account with `automaticRecurringPayment` pays each OPEN invoice in full on its due
//!   date ([`autopay`]): a COMPLETED payment of the amount to pay, with a credit card as its
//!   payment method, applied to the invoice, which closes with that date as its paid date.
//! - Unless its chosen outcome declines the attempt, as payment platforms' test cards do
//!   (`billing_accounts.autopay_outcome`, [`AUTOPAY_OUTCOMES`]): SUCCEED (or none) pays,
//!   DECLINE declines every attempt, DECLINE_THEN_SUCCEED declines the first
//!   `autopay_declines` attempts of each invoice. A declined attempt is recorded as a CANCELED
//!   payment of the amount (`payments::create_declined_payment`: nothing received or
//!   applied), and is tried again on each day of the policy's `autopay_retry_days` after the
//!   due date, at the due date's local time ([`retries_between`], [`retry`]). When the last
//!   attempt (the due date's, with no retry days) is declined, the account moves from ACTIVE
//!   to COLLECTION, as an unpaid invoice past due does; until then it keeps its status.
//!   Attempts stop once the invoice is paid by any means; the count of declines is the
//!   count of the invoice's CANCELED automatic payments, so no counter can drift.
//! - Any payment or credit that leaves an account in COLLECTION with nothing overdue (no OPEN
//!   invoice with an amount to pay whose due date has come) brings it back to ACTIVE
//!   (`invoices::clear_collection`, called wherever an invoice is paid down: the settlement
//!   rule lives with the invoices, so payments and invoices need nothing from here).

use super::{Due, Ran, AUTOPAY_RETRY};
use crate::domain::accounts::{move_status, status_of, AccountStatus};
use crate::domain::invoices::InvoiceStatus;
use crate::domain::payments::PaymentStatus;
use crate::domain::payments::{
    apply_payment, create_declined_payment, create_payment, NewPayment, PaymentTarget,
};
use crate::money::from_sql_text;
use crate::time::{from_storage, to_storage};
use crate::Result;
use chrono::{DateTime, Days, TimeZone, Utc};
use chrono_tz::Tz;
use rusqlite::{OptionalExtension, Transaction};
use rust_decimal::Decimal;
use std::collections::BTreeSet;
use std::ops::RangeInclusive;

/// The outcomes of an account's automatic payments a test may choose (default SUCCEED).
pub const AUTOPAY_OUTCOMES: &[&str] = &["SUCCEED", "DECLINE", "DECLINE_THEN_SUCCEED"];
/// How many attempts per invoice DECLINE_THEN_SUCCEED declines (`autopay_declines`).
pub const AUTOPAY_DECLINES: RangeInclusive<i64> = 1..=10;

/// Whether an attempt is the last one (no retry left after it): a declined last attempt
/// moves the account to COLLECTION.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// On the due date, or a retry day that is not the last.
    More,
    /// The due date's when the policy has no retry days, or the last retry day's.
    Last,
}

/// Tries to pay invoice `invoice_id` (of `account_id`, `to_pay` left to pay) in full at
/// `at` (its due date or a retry day) when the account pays automatically; `None` when it
/// does not. A declined attempt is recorded (module doc); a declined `Attempt::Last` moves
/// the account to COLLECTION.
pub fn autopay(
    tx: &Transaction<'_>,
    invoice_id: i64,
    account_id: i64,
    to_pay: Decimal,
    at: &str,
    tz: Tz,
    attempt: Attempt,
) -> Result<Option<Vec<Ran>>> {
    type Row = (bool, AccountStatus, String, Option<String>, Option<i64>);
    let (automatic, status, invoice_num, outcome, declines): Row = tx
        .prepare_cached(
            "SELECT a.automatic_recurring_payment, a.status, i.invoice_num, a.autopay_outcome,
                    a.autopay_declines
             FROM billing_accounts a JOIN invoices i ON i.billing_account_id = a.id
             WHERE i.id = ?1",
        )?
        .query_row([invoice_id], |r| r.try_into())?;
    if !automatic || to_pay <= Decimal::ZERO {
        return Ok(None);
    }
    let reference = format!("AUTOPAY-{invoice_num}");
    let declined_before: i64 = tx
        .prepare_cached(
            "SELECT COUNT(*) FROM payments
             WHERE billing_account_id = ?1 AND reference = ?2 AND status = ?3",
        )?
        .query_row(
            rusqlite::params![account_id, reference, PaymentStatus::Canceled],
            |r| r.get(0),
        )?;
    let declines_now = match outcome.as_deref() {
        Some("DECLINE") => true,
        Some("DECLINE_THEN_SUCCEED") => declined_before < declines.unwrap_or(1),
        _ => false,
    };
    let new = NewPayment {
        id: None,
        billing_account_id: account_id,
        amount: to_pay,
        description: Some(format!("Automatic payment of invoice {invoice_num}")),
        reference: Some(reference),
        occurred_on: at.to_string(),
        payment_method: Some("creditCardPayment".into()),
    };
    if declines_now {
        let payment = create_declined_payment(tx, &new, tz)?;
        let amount = crate::money::canonical(to_pay);
        let nth = declined_before.saturating_add(1);
        let detail =
            if attempt == Attempt::Last {
                let moved = move_status(
                    tx,
                    account_id,
                    AccountStatus::Active,
                    AccountStatus::Collection,
                )?;
                format!(
                "automatic payment {payment} ({amount}) declined (decline {nth}), no retry left: \
                 billing account {account_id} {}",
                if moved { "moved to COLLECTION" } else { "kept its status" }
            )
            } else {
                format!(
                    "automatic payment {payment} ({amount}) declined (decline {nth}); tried again \
                 on the policy's next retry day"
                )
            };
        return Ok(Some(vec![("invoice.autopay_declined", invoice_id, detail)]));
    }
    let payment = create_payment(tx, &new, tz)?;
    apply_payment(tx, payment, &PaymentTarget::Invoice(invoice_id), at)?;
    let mut ran = vec![(
        "invoice.autopaid",
        invoice_id,
        format!(
            "paid in full by automatic payment {payment} ({}), invoice CLOSED",
            crate::money::canonical(to_pay)
        ),
    )];
    if status == AccountStatus::Collection && status_of(tx, account_id)? == AccountStatus::Active {
        ran.push(cleared(account_id));
    }
    Ok(Some(ran))
}

/// The policy's retry days, or none.
pub fn retry_days(tx: &Transaction<'_>) -> Result<Vec<i64>> {
    Ok(crate::domain::policy::get(tx)?.autopay_retry_days)
}

/// The instant `days` days after the stored instant `due`, at the same local time of `tz`
/// (the earlier instant when it occurs twice).
fn days_after(due: &str, days: i64, tz: Tz) -> Option<DateTime<Utc>> {
    let local = from_storage(due)?.with_timezone(&tz).naive_local();
    let later = local.checked_add_days(Days::new(u64::try_from(days).ok()?))?;
    tz.from_local_datetime(&later)
        .earliest()
        .map(|t| t.with_timezone(&Utc))
}

/// Queues the retries of invoice `invoice_id`, due at `due`, that fall in `(from, to]`.
pub fn queue_retries(
    invoice_id: i64,
    due: &str,
    days: &[i64],
    tz: Tz,
    (from, to): (&str, &str),
    queue: &mut BTreeSet<Due>,
) {
    for d in days {
        if let Some(at) = days_after(due, *d, tz).map(to_storage) {
            if at.as_str() > from && at.as_str() <= to {
                queue.insert((at, AUTOPAY_RETRY, invoice_id));
            }
        }
    }
}

/// Queues the retries in `(from, to]` of every OPEN invoice of an automatically paying
/// account that fell due at or before `from` (those falling due inside the interval queue
/// theirs when their first attempt is declined).
pub fn retries_between(
    tx: &Transaction<'_>,
    from: &str,
    to: &str,
    tz: Tz,
    queue: &mut BTreeSet<Due>,
) -> Result<()> {
    let days = retry_days(tx)?;
    let Some(last) = days.last() else {
        return Ok(());
    };
    // The earliest due date whose last retry can still be ahead (a day of slack for DST).
    let Some(earliest) = from_storage(from)
        .and_then(|f| f.checked_sub_days(Days::new(u64::try_from(*last).unwrap_or(0) + 1)))
        .map(to_storage)
    else {
        return Ok(());
    };
    let mut open = tx.prepare(
        "SELECT i.id, i.due_date FROM invoices i
         JOIN billing_accounts a ON a.id = i.billing_account_id
         WHERE i.status = ?3 AND a.automatic_recurring_payment = 1
           AND i.due_date > ?1 AND i.due_date <= ?2",
    )?;
    let rows = open
        .query_map(
            rusqlite::params![earliest, from.to_string(), InvoiceStatus::Open],
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)),
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    for (id, due) in rows {
        queue_retries(id, &due, &days, tz, (from, to), queue);
    }
    Ok(())
}

/// What the due-date work reads of an invoice: its status, due date, amount still to pay
/// and account.
pub(crate) type InvoiceDues = (InvoiceStatus, Option<String>, Decimal, i64);

/// [`InvoiceDues`] of invoice `invoice_id` (None: no such invoice).
pub(crate) fn invoice_dues(tx: &Transaction<'_>, invoice_id: i64) -> Result<Option<InvoiceDues>> {
    Ok(tx
        .query_row(
            "SELECT status, due_date, amount_to_pay, billing_account_id FROM invoices WHERE id = ?1",
            [invoice_id],
            |r| {
                Ok((
                    r.get::<_, InvoiceStatus>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    from_sql_text(r.get_ref(2)?)?,
                    r.get::<_, i64>(3)?,
                ))
            },
        )
        .optional()?)
}

/// A retry day `at` of invoice `invoice_id`: tries the automatic payment again when the
/// invoice is still OPEN with an amount to pay and `at` is one of its retry days.
pub fn retry(tx: &Transaction<'_>, invoice_id: i64, at: &str, tz: Tz) -> Result<Vec<Ran>> {
    let Some((status, Some(due), to_pay, account)) = invoice_dues(tx, invoice_id)? else {
        return Ok(Vec::new());
    };
    if status != InvoiceStatus::Open || to_pay <= Decimal::ZERO {
        return Ok(Vec::new());
    }
    let days = retry_days(tx)?;
    let Some(index) = days
        .iter()
        .position(|d| days_after(&due, *d, tz).map(to_storage).as_deref() == Some(at))
    else {
        return Ok(Vec::new());
    };
    let attempt = if index + 1 == days.len() {
        Attempt::Last
    } else {
        Attempt::More
    };
    Ok(autopay(tx, invoice_id, account, to_pay, at, tz, attempt)?.unwrap_or_default())
}

/// The transition of an account leaving COLLECTION.
pub fn cleared(account_id: i64) -> Ran {
    (
        "account.collection_cleared",
        account_id,
        "nothing overdue any more: billing account back to ACTIVE".into(),
    )
}
