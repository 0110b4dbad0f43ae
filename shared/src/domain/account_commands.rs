//! The billing account commands beyond the status changes: `addNote` (a dated note kept on
//! the account), `billOnDemand` (the account's pending charges become one invoice now) and
//! `moveToBillCycle` (the account bills on another cycle from its next invoice date).
//!
//! Invariants: a bill on demand moves exactly the stored `pending_charges_total` into a new
//! OPEN invoice (the balance rises by it, the pending charges drop to zero) and records the
//! amount on the invoice (`billed_pending_charges`), so that cancelling that invoice
//! ([`super::invoices::cancel_invoice`]) gives the charges back. A move sets the account's
//! next invoice date to the new cycle's next billing day, never today.

use super::accounts::{status_of, AccountStatus};
use super::billing::invoicing::{gather, issue, Issue, Prices, Window};
use super::billing::next_cycle_day;
use super::{insert, parse_opt_time, parse_time, require};
use crate::money::{canonical, from_sql_text};
use crate::{Error, Result};
use chrono::{NaiveDate, TimeZone};
use chrono_tz::Tz;
use rusqlite::{OptionalExtension, Transaction};
use rust_decimal::Decimal;

/// Adds `note` to billing account `account_id` at the stored instant `at`; answers the
/// note's id. 404 for an unknown account, 400 for a blank note (its length is bounded as
/// free text). Any status takes notes: they annotate, they change nothing.
pub fn add_note(
    tx: &Transaction<'_>,
    account_id: i64,
    note: &str,
    created_by: Option<&str>,
    at: &str,
) -> Result<i64> {
    require(tx, "billing_accounts", "billing account", account_id)?;
    if note.trim().is_empty() {
        return Err(Error::bad_request("note must not be empty"));
    }
    insert(
        tx,
        "account_notes",
        &[
            ("billing_account_id", &account_id),
            ("note", &note),
            ("created_on", &at),
            ("created_by", &created_by),
        ],
    )
}

/// Statuses that end billing for good: no bill on demand, no move.
const CLOSED: &[AccountStatus] = &[AccountStatus::Closed];
/// Statuses whose account no longer moves between bill cycles.
const ENDED: &[AccountStatus] = &[
    AccountStatus::Deactivated,
    AccountStatus::FinalBill,
    AccountStatus::Closed,
];

/// What a `billOnDemand` may say about the invoice it makes.
#[derive(Debug, Clone, Default)]
pub struct OnDemandBill {
    /// Invoice description.
    pub description: Option<String>,
    /// Invoice date (date or date-time); default now.
    pub occurred_on: Option<String>,
    /// Due date (date or date-time); default the invoice date (due on receipt).
    pub due_date: Option<String>,
}

/// Bills billing account `account_id` now (`now` is the stored instant): its pending charges
/// become one OPEN invoice of type ON_DEMAND, numbered `<accountNum>-OD-<n>`. Answers the
/// invoice's id. 404 unknown account; 409 a CLOSED account or nothing pending; 400 bad dates.
pub fn bill_on_demand(
    tx: &Transaction<'_>,
    account_id: i64,
    bill: &OnDemandBill,
    now: &str,
    tz: Tz,
) -> Result<i64> {
    let status = status_of(tx, account_id)?;
    if CLOSED.contains(&status) {
        return Err(Error::conflict(format!(
            "cannot bill billing account {account_id} on demand: its status is {status}"
        )));
    }
    let (account_num, pending): (String, Decimal) = tx.query_row(
        "SELECT account_num, pending_charges_total FROM billing_accounts WHERE id = ?1",
        [account_id],
        |r| Ok((r.get(0)?, from_sql_text(r.get_ref(1)?)?)),
    )?;
    if pending <= Decimal::ZERO {
        return Err(Error::conflict(format!(
            "billing account {account_id} has no pending charges to bill (pendingChargesTotal is {})",
            canonical(pending)
        )));
    }
    let occurred = match &bill.occurred_on {
        Some(v) => parse_time("occurredOn", v, tz)?,
        None => now.to_string(),
    };
    let due = parse_opt_time("dueDate", &bill.due_date, tz)?.unwrap_or_else(|| occurred.clone());
    if due < occurred {
        return Err(Error::bad_request(
            "dueDate must not be before the invoice date",
        ));
    }
    let invoice_num = next_on_demand_number(tx, account_id, &account_num)?;
    // The invoicing code the bill runs use, for all pending usage and nothing else.
    let window = Window {
        usage_until: None,
        period: None,
    };
    let charges = gather(tx, account_id, &window, tz, &mut Prices::default())?;
    issue(
        tx,
        account_id,
        &window,
        &charges,
        &Issue {
            invoice_num,
            invoice_type: "ON_DEMAND",
            occurred_on: occurred,
            due_date: due,
            bill_batch_run_id: None,
            description: bill.description.clone(),
        },
        tz,
    )
}

/// The first free `<accountNum>-OD-<n>` (n counting the account's on-demand invoices), or
/// `OD-<account id>-<n>` when the account number is too long to carry a suffix.
fn next_on_demand_number(
    tx: &Transaction<'_>,
    account_id: i64,
    account_num: &str,
) -> Result<String> {
    let billed: i64 = tx.query_row(
        "SELECT COUNT(*) FROM invoices WHERE billing_account_id = ?1 AND invoice_type = 'ON_DEMAND'",
        [account_id],
        |r| r.get(0),
    )?;
    let mut taken = tx.prepare_cached("SELECT 1 FROM invoices WHERE invoice_num = ?1")?;
    // Numbers taken by hand-made invoices are skipped; a thousand in a row is not a sequence.
    for n in (billed + 1)..(billed + 1000) {
        let mut candidate = format!("{account_num}-OD-{n:04}");
        if candidate.chars().count() > super::MAX_IDENTIFIER_CHARS {
            candidate = format!("OD-{account_id}-{n:04}");
        }
        if !taken.exists([&candidate])? {
            return Ok(candidate);
        }
    }
    Err(Error::conflict(format!(
        "no free on-demand invoice number for billing account {account_id}"
    )))
}

/// Moves billing account `account_id` to bill cycle `bill_cycle_id`, as of `today` (the
/// tenant's local date): the account's next invoice date becomes the cycle's next billing
/// day after today. 404 unknown account or cycle; 409 the account already on that cycle or
/// ended (DEACTIVATED, FINAL_BILL, CLOSED).
pub fn move_to_bill_cycle(
    tx: &Transaction<'_>,
    account_id: i64,
    bill_cycle_id: i64,
    today: NaiveDate,
    tz: Tz,
) -> Result<()> {
    let status = status_of(tx, account_id)?;
    let day: u32 = tx
        .query_row(
            "SELECT day_of_month FROM bill_cycles WHERE id = ?1",
            [bill_cycle_id],
            |r| r.get(0),
        )
        .optional()?
        .ok_or_else(|| Error::not_found(format!("bill cycle {bill_cycle_id} does not exist")))?;
    if ENDED.contains(&status) {
        return Err(Error::conflict(format!(
            "cannot move billing account {account_id} to another bill cycle: its status is {status}"
        )));
    }
    let current: Option<i64> = tx.query_row(
        "SELECT bill_cycle_id FROM billing_accounts WHERE id = ?1",
        [account_id],
        |r| r.get(0),
    )?;
    if current == Some(bill_cycle_id) {
        return Err(Error::conflict(format!(
            "billing account {account_id} is already on bill cycle {bill_cycle_id}"
        )));
    }
    let next = next_cycle_day(today, day)
        .and_then(|d| tz.from_local_datetime(&d.and_hms_opt(0, 0, 0)?).earliest())
        .map(|t| crate::time::to_storage(t.with_timezone(&chrono::Utc)))
        .ok_or_else(|| Error::bad_request("the next billing day is out of range"))?;
    super::accounts::set_bill_cycle(tx, account_id, bill_cycle_id, &next)
}
