//! The time-driven transitions of a tenant, run when its test clock advances: everything the
//! platform does by itself when time passes, in the order it would happen. Advancing from
//! `from` to `to` runs every transition due in `(from, to]`, earliest first (ties: agreement
//! services before invoices, then by id); a transition that makes another one due inside the
//! interval (a renewed term that ends again) runs it in its turn.
//!
//! What the clock drives (docs/sandbox.md states it for users):
//! - An agreement service of a live status (ACTIVE, SUSPENDED, TRIAL) reaching its
//!   `end_date` takes its end action: its own `end_action`, else its agreement's, else END.
//!   `RENEW` (any case) starts a new term: the end date moves by the term's months (the next
//!   agreement's period when one is set, else the service's `agreement_period`, at least 1)
//!   in the tenant's time zone, `renewed` becomes true, and a planned next agreement, next end
//!   action and next preserve-price flag take effect and are cleared. Any other action ends
//!   the service: status DEACTIVATED, and its service and the service's resources INACTIVE
//!   when no other live agreement service holds that service.
//! - An OPEN invoice with an amount to pay passing its `due_date` stays OPEN (the platform's
//!   invoice statuses are PROCESSING, OPEN, CLOSED: there is no overdue status); its billing
//!   account, when ACTIVE, moves to COLLECTION (the platform's dunning status; `resume` takes
//!   it back to ACTIVE). An account that pays automatically pays it instead, unless its
//!   chosen autopay outcome declines: then the payment is tried again on the policy's retry
//!   days, and the account moves to COLLECTION when the last attempt is declined
//!   ([`super::billing::dues`]).
//! - Bill cycles run on their day and bill batches on their invoice date
//!   ([`super::billing::runs`]); the invoices they make fall due in their turn.
//! - Collector and ledger runs started under the policy's WITH_CLOCK start and then end
//!   ([`super::run_progress`]); a step a running clock passed before the advance is taken
//!   first, at its own instant.
//!
//! Ties at one instant: agreement services, invoices due, cycle runs, bill batch runs,
//! autopay retries, collector run steps, ledger run steps.
//! Everything runs in the caller's one transaction, so an advance is all or nothing. Each
//! invoice a run makes counts toward [`MAX_TRANSITIONS`] like a transition.

use crate::time::{from_storage, to_storage};
use crate::{Error, Result};
use chrono::{DateTime, Months, Utc};
use chrono_tz::Tz;
use rusqlite::{OptionalExtension, Transaction};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

use super::agreements::LIVE_SERVICE_STATUSES;
use super::invoices::InvoiceStatus;
use super::run_progress::{self, RunKind, Step};

/// Most transitions one advance may run; past it the advance is refused (400) and nothing
/// changes: advance in smaller steps.
pub const MAX_TRANSITIONS: usize = 10_000;

/// The kinds of transition ([`Transition::kind`]).
pub const TRANSITION_KINDS: &[&str] = &[
    "agreement_service.renewed",
    "agreement_service.ended",
    "invoice.past_due",
    "invoice.autopaid",
    "invoice.autopay_declined",
    "account.collection_cleared",
    "bill_cycle.run",
    "bill_batch.run",
    "collector_run.started",
    "collector_run.ended",
    "gl_run.started",
    "gl_run.ended",
];

fn transition_kinds() -> utoipa::openapi::Object {
    crate::json_schema::enumeration(TRANSITION_KINDS)
}

/// One transition that ran.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Transition {
    /// When it happened (the tenant's offset).
    #[schema(format = DateTime)]
    pub at: String,
    /// What ran (`TRANSITION_KINDS`).
    #[schema(schema_with = transition_kinds)]
    #[serde(deserialize_with = "crate::json_schema::static_word")]
    pub kind: crate::json_schema::Word,
    /// The id of the agreement service, invoice, billing account, bill cycle, bill batch,
    /// collector run or ledger run.
    pub id: i64,
    /// What changed, in words.
    pub detail: String,
}

pub use super::billing::{Due, Ran, AUTOPAY_RETRY, BILL_BATCH_RUN, BILL_CYCLE_RUN, INVOICE_DUE};
/// An agreement service reaching its end date (id: the agreement service).
const SERVICE_END: u8 = 0;
/// A collector run's next step (id: the run). After every billing kind at one instant, so a
/// run ending then collects what the bill runs made.
const COLLECTOR_RUN_STEP: u8 = 100;
/// A ledger run's next step (id: the run), after the collector runs' steps.
const GL_RUN_STEP: u8 = 101;

/// Runs every transition due in `(from, to]` in order (see the module doc) and answers them.
pub fn run_due(
    tx: &Transaction<'_>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    tz: Tz,
) -> Result<Vec<Transition>> {
    let (from_s, to_s) = (to_storage(from), to_storage(to));
    let mut queue: BTreeSet<Due> = BTreeSet::new();
    let live = LIVE_SERVICE_STATUSES
        .iter()
        .map(|s| format!("'{s}'"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut services = tx.prepare(&format!(
        "SELECT end_date, id FROM agreement_services
         WHERE end_date > ?1 AND end_date <= ?2 AND status IN ({live})"
    ))?;
    for row in services.query_map([&from_s, &to_s], |r| {
        Ok((r.get(0)?, SERVICE_END, r.get(1)?))
    })? {
        queue.insert(row?);
    }
    let mut invoices = tx.prepare(
        "SELECT due_date, id FROM invoices
         WHERE due_date > ?1 AND due_date <= ?2 AND status = ?3",
    )?;
    for row in invoices.query_map(
        rusqlite::params![&from_s, &to_s, InvoiceStatus::Open],
        |r| Ok((r.get(0)?, INVOICE_DUE, r.get(1)?)),
    )? {
        queue.insert(row?);
    }
    drop((services, invoices));
    super::billing::runs::enqueue(tx, from, to, tz, &mut queue)?;
    super::billing::dues::retries_between(tx, &from_s, &to_s, tz, &mut queue)?;
    for step in run_progress::due(tx, to)? {
        queue.insert((to_storage(step.at), run_step_kind(step.kind), step.id));
    }
    let mut done = Vec::new();
    // Transitions run plus invoices made: what MAX_TRANSITIONS bounds.
    let mut work = 0usize;
    while let Some(due) = queue.pop_first() {
        if work >= MAX_TRANSITIONS {
            return Err(Error::bad_request(format!(
                "this advance runs more than {MAX_TRANSITIONS} transitions; advance in smaller steps"
            )));
        }
        let (at, kind, id) = due;
        let ran: Vec<Ran> = match kind {
            SERVICE_END => end_service(tx, id, &at, tz, &to_s, &mut queue)?
                .map(|(k, d)| vec![(k, id, d)])
                .unwrap_or_default(),
            INVOICE_DUE => invoice_due(tx, id, &at, tz, (&from_s, &to_s), &mut queue)?,
            AUTOPAY_RETRY => super::billing::dues::retry(tx, id, &at, tz)?,
            COLLECTOR_RUN_STEP | GL_RUN_STEP => run_step(tx, kind, id, &at, tz, to, &mut queue)?,
            _ => {
                use super::billing::runs::{run_batch, run_cycle};
                let outcome = if kind == BILL_CYCLE_RUN {
                    run_cycle(tx, id, &at, tz, &to_s, &mut queue)?
                } else {
                    run_batch(tx, id, &at, tz, &to_s, &mut queue)?
                };
                outcome.map_or_else(Vec::new, |o| {
                    work = work.saturating_add(o.invoices);
                    o.ran
                })
            }
        };
        work = work.saturating_add(ran.len());
        for (kind, id, detail) in ran {
            done.push(Transition {
                at: crate::time::render(&at, tz),
                kind,
                id,
                detail,
            });
        }
    }
    if work > MAX_TRANSITIONS {
        return Err(Error::bad_request(format!(
            "this advance runs more than {MAX_TRANSITIONS} transitions; advance in smaller steps"
        )));
    }
    Ok(done)
}

fn run_step_kind(kind: RunKind) -> u8 {
    match kind {
        RunKind::Collector => COLLECTOR_RUN_STEP,
        RunKind::Ledger => GL_RUN_STEP,
    }
}

/// A collector or ledger run's step due at `at` ([`run_progress::take`]); its next step joins
/// the queue when it falls inside the advance.
fn run_step(
    tx: &Transaction<'_>,
    kind: u8,
    id: i64,
    at: &str,
    tz: Tz,
    to: DateTime<Utc>,
    queue: &mut BTreeSet<Due>,
) -> Result<Vec<Ran>> {
    let step = Step {
        at: from_storage(at).ok_or_else(|| Error::Internal(format!("run step at {at:?}")))?,
        kind: if kind == COLLECTOR_RUN_STEP {
            RunKind::Collector
        } else {
            RunKind::Ledger
        },
        id,
    };
    let Some(taken) = run_progress::take(tx, step, tz)? else {
        return Ok(Vec::new());
    };
    if let Some(next) = taken.next.filter(|n| n.at <= to) {
        queue.insert((to_storage(next.at), kind, next.id));
    }
    Ok(vec![(taken.kind, id, taken.detail)])
}

/// An agreement service reaching `at`, its end date: renews or ends (module doc). `None`
/// when it no longer ends then (changed by an earlier transition).
fn end_service(
    tx: &Transaction<'_>,
    id: i64,
    at: &str,
    tz: Tz,
    to: &str,
    queue: &mut BTreeSet<Due>,
) -> Result<Option<(&'static str, String)>> {
    type Row = (
        String,
        Option<String>,
        Option<String>,
        i64,
        Option<i64>,
        i64,
    );
    let row: Option<Row> = tx
        .query_row(
            "SELECT s.status, s.end_date, COALESCE(s.end_action, a.end_action), s.agreement_period,
                    s.next_agreement_id, s.service_id
             FROM agreement_services s JOIN agreements a ON a.id = s.agreement_id
             WHERE s.id = ?1",
            [id],
            |r| r.try_into(),
        )
        .optional()?;
    let Some((status, end_date, action, period, next_agreement, service_id)) = row else {
        return Ok(None);
    };
    // Instants compare as instants, whatever form their stored texts take.
    let ends_then = end_date.as_deref().and_then(from_storage) == from_storage(at);
    if !LIVE_SERVICE_STATUSES.contains(&status.as_str()) || !ends_then {
        return Ok(None);
    }
    let action = action.unwrap_or_else(|| "END".into());
    if !action.trim().eq_ignore_ascii_case("RENEW") {
        super::agreements::end_term(tx, id, service_id)?;
        return Ok(Some((
            "agreement_service.ended",
            format!("end action {action}: status DEACTIVATED"),
        )));
    }
    let months = match next_agreement {
        Some(next) => tx
            .query_row(
                "SELECT agreement_period FROM agreements WHERE id = ?1",
                [next],
                |r| r.get::<_, i64>(0),
            )
            .optional()?
            .unwrap_or(period),
        None => period,
    };
    let months = u32::try_from(months.clamp(1, 1200)).unwrap_or(1);
    let end = from_storage(at)
        .ok_or_else(|| Error::Internal(format!("agreement service {id}: end date {at:?}")))?;
    let new_end = end
        .with_timezone(&tz)
        .naive_local()
        .checked_add_months(Months::new(months))
        .and_then(|local| {
            crate::time::parse_date_or_datetime(
                &local.format("%Y-%m-%dT%H:%M:%S%.f").to_string(),
                tz,
            )
        })
        .ok_or_else(|| {
            Error::bad_request(format!(
                "agreement service {id}: the renewed term ends out of range"
            ))
        })?;
    let new_end = to_storage(new_end);
    super::agreements::renew_term(tx, id, &new_end, months)?;
    if from_storage(&new_end)
        .zip(from_storage(to))
        .is_some_and(|(e, to)| e <= to)
    {
        queue.insert((new_end.clone(), SERVICE_END, id));
    }
    Ok(Some((
        "agreement_service.renewed",
        format!(
            "renewed for {months} months: ends {}",
            crate::time::render(&new_end, tz)
        ),
    )))
}

/// An invoice passing its due date `at` (module doc). Nothing when it is no longer OPEN with
/// an amount to pay, or no longer due then.
fn invoice_due(
    tx: &Transaction<'_>,
    id: i64,
    at: &str,
    tz: Tz,
    interval: (&str, &str),
    queue: &mut BTreeSet<Due>,
) -> Result<Vec<Ran>> {
    let Some((status, due, to_pay, account)) = super::billing::dues::invoice_dues(tx, id)? else {
        return Ok(Vec::new());
    };
    let due_then = due.as_deref().and_then(from_storage) == from_storage(at);
    if status != super::invoices::InvoiceStatus::Open || !due_then || to_pay.is_zero() {
        return Ok(Vec::new());
    }
    use super::billing::dues::{autopay, queue_retries, retry_days, Attempt};
    let days = retry_days(tx)?;
    let attempt = if days.is_empty() {
        Attempt::Last
    } else {
        Attempt::More
    };
    if let Some(ran) = autopay(tx, id, account, to_pay, at, tz, attempt)? {
        if ran
            .iter()
            .any(|(kind, ..)| *kind == "invoice.autopay_declined")
        {
            queue_retries(id, at, &days, tz, interval, queue);
        }
        return Ok(ran);
    }
    use super::accounts::AccountStatus::{Active, Collection};
    let moved = super::accounts::move_status(tx, account, Active, Collection)?;
    let detail = if moved {
        format!("unpaid past its due date: billing account {account} moved to COLLECTION")
    } else {
        format!("unpaid past its due date: billing account {account} kept its status")
    };
    Ok(vec![("invoice.past_due", id, detail)])
}
