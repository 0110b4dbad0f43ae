//! Bill runs driven by the clock: the run of a bill cycle on its day, and the run of a bill
//! batch on its `invoice_date` (docs/billing-lifecycle.md).
//!
//! A cycle run at instant D bills, one invoice each, the accounts of the cycle whose next
//! invoice date is D or earlier (or, with none set, every one when D is the cycle's day):
//! ACTIVE and COLLECTION ones (dunning does not stop billing), and FINAL_BILL ones, which
//! close after this last invoice. SUSPENDED, PENDING, DEACTIVATED and CLOSED accounts are
//! skipped and keep their dates. Billed accounts move their next invoice date to the next
//! cycle day. The run is recorded as a run of the cycle's own bill batch (made on its first
//! run, bill batch type `on-demand monthly`, auto-approved), and only there: actions are the
//! platform's read-only definitions of events (a `bill-cycle-run` action says a cycle's run
//! is an event a workflow can hang on), not a log, so a run adds none.
//!
//! A bill batch of the tenant (not a cycle's) with an `invoice_date` runs once when the
//! clock passes that date: it bills its accounts (with none listed, every account in its
//! currency) up to that date, the same way, without moving their next invoice dates. Its run
//! closes when the batch has `auto_approve`, else it stays OPEN at its APPROVE step.
//!
//! A run's steps: INVOICE (the invoices are made, OPEN), then APPROVE: `COMPLETE` and the
//! run CLOSED when approved automatically, `WAITING` with the run OPEN otherwise. The
//! invoices are OPEN either way (nothing in the interfaces approves a run).
//!
//! Invariants: an account is billed at most once per run; an account with nothing to bill
//! gets no invoice (the platform makes none at zero); invoice numbers continue the tenant's
//! `INV-nnnn` series; an account the run cannot bill (a refusal: a balance past 18 digits)
//! is skipped with its writes rolled back (a savepoint), recorded in the run's detail and
//! `error_msg`, so one account never stops the clock.

use super::invoicing::{gather, issue, mark_one_time_billed, Issue, Period, Prices, Window};
use super::{local_date, local_midnight, next_cycle_day, previous_cycle_day};
use super::{Due, Ran, BILL_BATCH_RUN, BILL_CYCLE_RUN, INVOICE_DUE};
use crate::domain::accounts::{self, AccountStatus};
use crate::domain::bill_batches::{
    self, create_bill_batch, BatchRunStatus, BillBatchStatus, NewBillBatch, RunStepStatus,
};
use crate::domain::status::sql_list;
use crate::money::{canonical, checked_add};
use crate::time::{from_storage, to_storage};
use crate::{Error, Result};
use chrono::{DateTime, Datelike, Months, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use rusqlite::{params, OptionalExtension, Transaction};
use rust_decimal::Decimal;
use std::collections::BTreeSet;
use std::sync::LazyLock;

/// Account statuses a run bills.
const BILLED: &[&str] = &[
    AccountStatus::Active.as_str(),
    AccountStatus::Collection.as_str(),
    AccountStatus::FinalBill.as_str(),
];

/// [`BILLED`] as the SQL list its statements name.
static BILLED_SQL: LazyLock<String> = LazyLock::new(|| sql_list(BILLED));

/// Queues the cycle runs and bill batch runs due in `(from, to]`.
pub fn enqueue(
    tx: &Transaction<'_>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    tz: Tz,
    queue: &mut BTreeSet<Due>,
) -> Result<()> {
    let (from_s, to_s) = (to_storage(from), to_storage(to));
    let mut cycles = tx.prepare("SELECT id, day_of_month FROM bill_cycles")?;
    for row in cycles.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, u32>(1)?)))? {
        let (cycle, day) = row?;
        for at in super::cycle_days_between(from, to, day, tz) {
            queue.insert((to_storage(at), BILL_CYCLE_RUN, cycle));
        }
    }
    // Accounts whose next invoice date is set off their cycle's day run on it.
    let billed = &*BILLED_SQL;
    let mut dated = tx.prepare(&format!(
        "SELECT DISTINCT next_invoice_date, bill_cycle_id FROM billing_accounts
         WHERE next_invoice_date > ?1 AND next_invoice_date <= ?2
           AND bill_cycle_id IS NOT NULL AND status IN ({billed})"
    ))?;
    for row in dated.query_map([&from_s, &to_s], |r| {
        Ok((r.get(0)?, BILL_CYCLE_RUN, r.get(1)?))
    })? {
        queue.insert(row?);
    }
    let mut batches = tx.prepare(
        "SELECT invoice_date, id FROM bill_batches
         WHERE invoice_date > ?1 AND invoice_date <= ?2 AND status = ?3
           AND bill_cycle_id IS NULL",
    )?;
    for row in batches.query_map(params![&from_s, &to_s, BillBatchStatus::Active], |r| {
        Ok((r.get(0)?, BILL_BATCH_RUN, r.get(1)?))
    })? {
        queue.insert(row?);
    }
    Ok(())
}

/// An account a run bills.
struct Account {
    id: i64,
    status: AccountStatus,
    billed_through: Option<String>,
    cycle_day: Option<u32>,
    /// The account's own payment term (net days); None: the tenant policy's.
    payment_term_days: Option<i64>,
}

/// What a run did.
pub struct RunOutcome {
    /// The transitions to report.
    pub ran: Vec<Ran>,
    /// Invoices made (each counts toward the advance's bound).
    pub invoices: usize,
}

/// How a run records itself and dates its invoices.
struct RunSpec<'a> {
    batch_id: i64,
    run_type: String,
    auto_approve: bool,
    at: &'a str,
    /// The batch's own due date (used instead of the payment term).
    due_date: Option<String>,
    label: String,
}

/// Runs bill cycle `cycle_id` at the stored instant `at` (module doc). `None` when it has no
/// account to bill then.
pub fn run_cycle(
    tx: &Transaction<'_>,
    cycle_id: i64,
    at: &str,
    tz: Tz,
    to: &str,
    queue: &mut BTreeSet<Due>,
) -> Result<Option<RunOutcome>> {
    let Some((name, day)) = tx
        .query_row(
            "SELECT name, day_of_month FROM bill_cycles WHERE id = ?1",
            [cycle_id],
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, u32>(1)?)),
        )
        .optional()?
    else {
        return Ok(None);
    };
    let instant = instant(at)?;
    let local = instant.with_timezone(&tz);
    let cycle_day = super::day_in_month(local.date_naive(), day) == Some(local.date_naive())
        && local.num_seconds_from_midnight() == 0;
    let billed = &*BILLED_SQL;
    let mut stmt = tx.prepare(&format!(
        "SELECT id, status, billed_through, payment_term_days FROM billing_accounts
         WHERE bill_cycle_id = ?1 AND status IN ({billed})
           AND (next_invoice_date <= ?2 OR (next_invoice_date IS NULL AND ?3))
         ORDER BY id"
    ))?;
    let accounts = stmt
        .query_map(params![cycle_id, at, cycle_day], |r| {
            Ok(Account {
                id: r.get(0)?,
                status: r.get(1)?,
                billed_through: r.get(2)?,
                cycle_day: Some(day),
                payment_term_days: r.get(3)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    if accounts.is_empty() {
        return Ok(None);
    }
    let batch_id = cycle_batch(tx, cycle_id, &name, tz)?;
    let spec = RunSpec {
        batch_id,
        run_type: "BILL_CYCLE".into(),
        auto_approve: true,
        at,
        due_date: None,
        label: format!("bill cycle {cycle_id} ({name})"),
    };
    let outcome = run(tx, &spec, &accounts, true, tz, to, queue)?;
    Ok(Some(RunOutcome {
        ran: vec![("bill_cycle.run", cycle_id, outcome.detail)],
        invoices: outcome.invoices,
    }))
}

/// Runs bill batch `batch_id` on its invoice date `at` (module doc). `None` when it no
/// longer runs then (changed, not ACTIVE, a cycle's batch, or already run for that date).
pub fn run_batch(
    tx: &Transaction<'_>,
    batch_id: i64,
    at: &str,
    tz: Tz,
    to: &str,
    queue: &mut BTreeSet<Due>,
) -> Result<Option<RunOutcome>> {
    type Row = (
        String,
        String,
        bool,
        bool,
        Option<String>,
        String,
        Option<String>,
    );
    let row: Option<Row> = tx
        .query_row(
            "SELECT name, bill_batch_type, auto_approve, use_payment_term, invoice_due_date,
                    currency_code, invoice_date
             FROM bill_batches
             WHERE id = ?1 AND status = ?2 AND bill_cycle_id IS NULL",
            params![batch_id, BillBatchStatus::Active],
            |r| r.try_into(),
        )
        .optional()?;
    let Some((name, kind, auto_approve, use_term, due, currency, invoice_date)) = row else {
        return Ok(None);
    };
    let already = tx
        .prepare("SELECT 1 FROM bill_batch_runs WHERE bill_batch_id = ?1 AND invoice_date = ?2")?
        .exists(params![batch_id, at])?;
    // Instants compare as instants: a stored text of another form (an offset, no
    // milliseconds) names the same moment.
    let on_its_date = invoice_date.as_deref().and_then(from_storage) == Some(instant(at)?);
    if !on_its_date || already {
        return Ok(None);
    }
    let members: i64 = tx.query_row(
        "SELECT COUNT(*) FROM bill_batch_accounts WHERE bill_batch_id = ?1",
        [batch_id],
        |r| r.get(0),
    )?;
    let select = format!(
        "SELECT a.id, a.status, a.billed_through, c.day_of_month, a.payment_term_days
         FROM billing_accounts a
         LEFT JOIN bill_cycles c ON c.id = a.bill_cycle_id
         WHERE a.status IN ({billed}) AND {} ORDER BY a.id",
        if members > 0 {
            "a.id IN (SELECT billing_account_id FROM bill_batch_accounts WHERE bill_batch_id = ?1)
             AND ?2 IS NOT NULL"
        } else {
            "a.currency_code = ?2 AND ?1 IS NOT NULL"
        },
        billed = *BILLED_SQL,
    );
    let mut stmt = tx.prepare(&select)?;
    let accounts = stmt
        .query_map(params![batch_id, currency], |r| {
            Ok(Account {
                id: r.get(0)?,
                status: r.get(1)?,
                billed_through: r.get(2)?,
                cycle_day: r.get(3)?,
                payment_term_days: r.get(4)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let spec = RunSpec {
        batch_id,
        run_type: kind.to_uppercase().replace([' ', '-'], "_"),
        auto_approve,
        at,
        due_date: due.filter(|_| !use_term),
        label: format!("bill batch {batch_id} ({name})"),
    };
    let outcome = run(tx, &spec, &accounts, false, tz, to, queue)?;
    Ok(Some(RunOutcome {
        ran: vec![("bill_batch.run", batch_id, outcome.detail)],
        invoices: outcome.invoices,
    }))
}

struct Made {
    detail: String,
    invoices: usize,
}

/// Bills `accounts` at `spec.at` as one run of `spec.batch_id`; `cycle` says whether this is
/// their cycle's run (which moves their next invoice dates and closes FINAL_BILL accounts).
fn run(
    tx: &Transaction<'_>,
    spec: &RunSpec<'_>,
    accounts: &[Account],
    cycle: bool,
    tz: Tz,
    to: &str,
    queue: &mut BTreeSet<Due>,
) -> Result<Made> {
    let at = spec.at;
    let instant = instant(at)?;
    let today = local_date(instant, tz);
    // The run's due date (what its bill batch run records): the batch's own, else the
    // tenant's payment term; an account with its own term is due by it.
    let term = crate::domain::policy::get(tx)?.payment_term_days;
    let due = match &spec.due_date {
        Some(d) => d.clone(),
        None => payment_due(instant, tz, term)?,
    };
    let run_id = bill_batches::open_clock_run(
        tx,
        spec.batch_id,
        &spec.run_type,
        at,
        &due,
        spec.due_date.is_none(),
    )?;
    let mut numbers = InvoiceNumbers::read(tx)?;
    let mut prices = Prices::default();
    let mut made: Vec<String> = Vec::new();
    let mut total = Decimal::ZERO;
    let mut closed = 0usize;
    // An account the run cannot bill (its invoice breaks a rule: a balance past 18 digits,
    // say) is skipped: its writes are rolled back, the run notes why, and the others are
    // billed, so one account never stops the tenant's clock.
    let mut skipped: Vec<String> = Vec::new();
    for account in accounts {
        let due = match (&spec.due_date, account.payment_term_days) {
            (None, Some(days)) if days != term => payment_due(instant, tz, days)?,
            _ => due.clone(),
        };
        tx.execute_batch("SAVEPOINT bill_account")?;
        let billed = bill_account(
            tx,
            spec,
            account,
            &BillContext {
                run_id,
                cycle,
                today,
                instant,
                due: &due,
                total,
            },
            tz,
            &mut numbers,
            &mut prices,
        );
        let billed = match billed {
            Ok(b) => b,
            Err(e @ (Error::BadRequest(_) | Error::Conflict(_) | Error::PreconditionFailed(_))) => {
                tx.execute_batch("ROLLBACK TO bill_account; RELEASE bill_account")?;
                skipped.push(format!("skipped billing account {}: {e}", account.id));
                continue;
            }
            Err(e) => {
                tx.execute_batch("ROLLBACK TO bill_account; RELEASE bill_account")?;
                return Err(e);
            }
        };
        tx.execute_batch("RELEASE bill_account")?;
        if let Some((number, invoice, new_total)) = billed.invoice {
            if from_storage(&due)
                .zip(from_storage(to))
                .is_some_and(|(d, to)| d <= to)
            {
                queue.insert((due.clone(), INVOICE_DUE, invoice));
            }
            total = new_total;
            made.push(number);
        }
        if billed.closed {
            closed += 1;
        }
    }
    let (step_status, status, close) = if spec.auto_approve {
        (RunStepStatus::Complete, BatchRunStatus::Closed, Some(at))
    } else {
        (RunStepStatus::Waiting, BatchRunStatus::Open, None)
    };
    let error_msg = (!skipped.is_empty()).then(|| skipped.join("; "));
    bill_batches::finish_invoicing(
        tx,
        run_id,
        &bill_batches::InvoicingDone {
            step_status,
            status,
            close_date: close,
            processed_invoice_count: made.len() as i64,
            error_msg,
        },
    )?;
    let numbers = match (made.first(), made.last()) {
        (Some(a), Some(b)) if a != b => format!(" ({a} to {b})"),
        (Some(a), _) => format!(" ({a})"),
        _ => String::new(),
    };
    let mut detail = format!(
        "{}: {} accounts billed, {} invoices{numbers} totalling {}; run {run_id} of bill batch {} {status}",
        spec.label,
        accounts.len() - skipped.len(),
        made.len(),
        canonical(total),
        spec.batch_id
    );
    if closed > 0 {
        detail.push_str(&format!("; {closed} FINAL_BILL accounts CLOSED"));
    }
    for skip in &skipped {
        detail.push_str(&format!("; {skip}"));
    }
    Ok(Made {
        detail,
        invoices: made.len(),
    })
}

/// What the run at hand gives [`bill_account`].
struct BillContext<'a> {
    run_id: i64,
    cycle: bool,
    today: chrono::NaiveDate,
    instant: DateTime<Utc>,
    due: &'a str,
    /// The run's total so far.
    total: Decimal,
}

/// What billing one account made: its invoice (number, id, the run's new total) and whether
/// it closed (a FINAL_BILL account's last run).
struct Billed {
    invoice: Option<(String, i64, Decimal)>,
    closed: bool,
}

/// Bills one account in the run (see [`run`]): its invoice when it has charges, its billed
/// through date, and on its cycle's run its next invoice date or its closing. A refusal
/// leaves the caller to roll back this account's writes.
fn bill_account(
    tx: &Transaction<'_>,
    spec: &RunSpec<'_>,
    account: &Account,
    ctx: &BillContext<'_>,
    tz: Tz,
    numbers: &mut InvoiceNumbers,
    prices: &mut Prices,
) -> Result<Billed> {
    let (at, today, instant, cycle, due) = (spec.at, ctx.today, ctx.instant, ctx.cycle, ctx.due);
    let mut billed = Billed {
        invoice: None,
        closed: false,
    };
    // The cycle period the run falls in: a cycle's run closes the month before it; a
    // batch's run falls inside its account's current cycle period.
    let (start_date, end_date) = match account.cycle_day {
        Some(day) if !cycle => {
            let start = previous_cycle_day(today, day);
            (start, start.and_then(|s| next_cycle_day(s, day)))
        }
        _ => (today.checked_sub_months(Months::new(1)), Some(today)),
    };
    let midnight = |d: Option<chrono::NaiveDate>| {
        d.and_then(|d| local_midnight(d, tz))
            .map(to_storage)
            .ok_or_else(|| {
                Error::bad_request(format!("{}: the period is out of range", spec.label))
            })
    };
    let (period_start, full_end) = (midnight(start_date)?, midnight(end_date)?);
    // Billing in advance reaches the end of the cycle period the run opens (a cycle's run)
    // or falls in (a batch's); an account without a cycle: a month from the run.
    let cycle_day = account.cycle_day.unwrap_or_else(|| today.day());
    let advance_to = match account.cycle_day {
        Some(_) if !cycle => full_end.clone(),
        Some(day) => midnight(next_cycle_day(today, day))?,
        None => midnight(today.checked_add_months(Months::new(1)))?,
    };
    // A cycle's run closes its period at its instant (a next invoice date off the day).
    let full_end = if cycle { at.to_string() } else { full_end };
    let billed_through = account.billed_through.as_deref().and_then(from_storage);
    let billed_from = match billed_through {
        Some(b) if from_storage(&period_start).is_some_and(|p| b > p) => to_storage(b.min(instant)),
        _ => period_start.clone(),
    };
    let window = Window {
        usage_until: Some(at.to_string()),
        period: Some(Period {
            period_start: period_start.clone(),
            full_end,
            period_end: at.to_string(),
            billed_from: billed_from.clone(),
            advance_to,
            cycle_day,
        }),
    };
    let charges = gather(tx, account.id, &window, tz, prices)?;
    let amount = charges.total(account.id)?;
    if amount > Decimal::ZERO {
        let number = numbers.next(tx)?;
        let description = format!(
            "{}, {} to {}: {}",
            spec.label,
            local_date(instant_or(&billed_from, instant), tz),
            today,
            charges.summary()
        );
        let invoice = issue(
            tx,
            account.id,
            &window,
            &charges,
            &Issue {
                invoice_num: number.clone(),
                invoice_type: "STANDARD",
                occurred_on: at.to_string(),
                due_date: due.to_string(),
                bill_batch_run_id: Some(ctx.run_id),
                description: Some(description),
            },
            tz,
        )?;
        let total = checked_add(ctx.total, amount, "the run's total")?;
        billed.invoice = Some((number, invoice, total));
    } else {
        mark_one_time_billed(tx, &charges, at)?;
    }
    crate::domain::bill_batch_membership::add_account(tx, spec.batch_id, account.id)?;
    accounts::set_billed_through(tx, account.id, at)?;
    if cycle {
        if account.status == AccountStatus::FinalBill {
            accounts::close_after_final_bill(tx, account.id)?;
            billed.closed = true;
        } else if let Some(day) = account.cycle_day {
            let next = next_cycle_day(today, day)
                .and_then(|d| local_midnight(d, tz))
                .map(to_storage);
            accounts::set_next_invoice_date(tx, account.id, next.as_deref())?;
        }
    }
    Ok(billed)
}

/// The due date of an invoice dated `at` on a payment term of net `days`: that many days
/// later, same local time.
pub fn payment_due(at: DateTime<Utc>, tz: Tz, days: i64) -> Result<String> {
    let local = at.with_timezone(&tz).naive_local();
    let days = u64::try_from(days)
        .map_err(|_| Error::bad_request(format!("payment term: {days} days is negative")))?;
    local
        .checked_add_days(chrono::Days::new(days))
        .and_then(|d| tz.from_local_datetime(&d).earliest())
        .map(|t| to_storage(t.with_timezone(&Utc)))
        .ok_or_else(|| Error::bad_request("the invoice's due date is out of range"))
}

fn instant(at: &str) -> Result<DateTime<Utc>> {
    from_storage(at).ok_or_else(|| Error::Internal(format!("stored instant {at:?}")))
}

fn instant_or(at: &str, fallback: DateTime<Utc>) -> DateTime<Utc> {
    from_storage(at).unwrap_or(fallback)
}

/// The bill batch holding bill cycle `cycle_id`'s runs, made on its first run.
fn cycle_batch(tx: &Transaction<'_>, cycle_id: i64, name: &str, tz: Tz) -> Result<i64> {
    let found = tx
        .query_row(
            "SELECT id FROM bill_batches WHERE bill_cycle_id = ?1 ORDER BY id LIMIT 1",
            [cycle_id],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(id) = found {
        return Ok(id);
    }
    let id = create_bill_batch(
        tx,
        &NewBillBatch {
            id: None,
            bill_batch_type: "on-demand monthly".into(),
            name: format!("Bill cycle {cycle_id}: {name}"),
            description: Some(format!(
                "The runs of bill cycle {cycle_id} ({name}), made by the tenant's clock"
            )),
            end_date: None,
            auto_approve: true,
            use_payment_term: true,
            internal_render: false,
            currency_code: None,
            status: None,
            billing_account_category_id: None,
            invoice_date: None,
            invoice_due_date: None,
            billing_account_ids: Vec::new(),
        },
        tz,
    )?;
    bill_batches::set_bill_cycle(tx, id, cycle_id)?;
    Ok(id)
}

/// The tenant's invoice number series `INV-nnnn` (at least four digits), continued from
/// its highest number; numbers taken by hand are skipped.
struct InvoiceNumbers {
    next: u64,
}

impl InvoiceNumbers {
    fn read(tx: &Transaction<'_>) -> Result<InvoiceNumbers> {
        let mut stmt =
            tx.prepare("SELECT invoice_num FROM invoices WHERE invoice_num GLOB 'INV-[0-9]*'")?;
        let mut highest = 0u64;
        for num in stmt.query_map([], |r| r.get::<_, String>(0))? {
            if let Ok(n) = num?["INV-".len()..].parse::<u64>() {
                highest = highest.max(n);
            }
        }
        Ok(InvoiceNumbers {
            next: highest.saturating_add(1),
        })
    }

    fn next(&mut self, tx: &Transaction<'_>) -> Result<String> {
        let mut taken = tx.prepare_cached("SELECT 1 FROM invoices WHERE invoice_num = ?1")?;
        for _ in 0..1000 {
            let candidate = format!("INV-{:04}", self.next);
            self.next = self.next.saturating_add(1);
            if !taken.exists([&candidate])? {
                return Ok(candidate);
            }
        }
        Err(Error::conflict("no free invoice number in the INV- series"))
    }
}

#[cfg(test)]
mod tests;
