//! Storing one checked event: the live event of its pair looked up (OVERWRITE_ON_EXISTING) or
//! met by the pair index on insert (FAIL_ON_EXISTING), the event rated under its product's
//! plan, the account's pending total kept within bounds, an overwritten event voided and the
//! event inserted with its one charge; and the pending charges moved once per call.

use super::parse::Parsed;
use super::services::{resolve_service, service_period};
use super::{Caches, Erred, StoredEvent};
use crate::domain::usage::{ChargeCategoryRef, ErredCode, Mode};
use crate::money::canonical;
use crate::rating::{self, Attributes, RatingError, Usage};
use crate::Result;
use rusqlite::{params, CachedStatement, OptionalExtension, Transaction};
use rust_decimal::Decimal;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::Arc;

/// The statements posting runs for every event, prepared once per call (the statement
/// cache would otherwise hash each statement's text for every event).
pub(super) struct Statements<'t> {
    live_event: CachedStatement<'t>,
    insert_event: CachedStatement<'t>,
}

impl<'t> Statements<'t> {
    pub(super) fn prepare(tx: &'t Transaction<'_>) -> Result<Statements<'t>> {
        Ok(Statements {
            live_event: tx.prepare_cached(LIVE_EVENT_SQL)?,
            // One row per event, its one charge included (migration 0008): the charge is
            // total_charge, its id the event's.
            insert_event: tx.prepare_cached(
                "INSERT INTO usage_events (request_id, service_resource_identifier,
                    service_resource_id, agreement_service_id, billing_account_id,
                    service_period_id, start_time, end_time, usage_uom, usage_amount,
                    reference_id, sequence_id, total_charge, overwrite_counter, voided,
                    created_at, usage_rule_id, charge_category_id, charge_rate,
                    charge_usage_uom, charge_usage_amount)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, 0, ?15,
                    ?16, ?17, ?18, ?19, ?20)",
            )?,
        })
    }

    /// The live event of a pair.
    fn live_event(&mut self, reference_id: &str, sequence_id: &str) -> Result<Option<LiveEvent>> {
        Ok(self
            .live_event
            .query_row([reference_id, sequence_id], |r| {
                Ok(LiveEvent {
                    id: r.get(0)?,
                    overwrite_counter: r.get(1)?,
                    billing_account_id: r.get(2)?,
                    total_charge: crate::money::from_sql_text(r.get_ref(3)?)?,
                })
            })
            .optional()?)
    }
}

/// Why an event with a live pair is refused under FAIL_ON_EXISTING.
fn duplicate_event(live: &LiveEvent, ev: &Parsed) -> Erred {
    (
        ErredCode::DuplicateEvent,
        format!(
            "usage event {} already has reference_id '{}' and sequence_id '{}'; post with mode OVERWRITE_ON_EXISTING to replace it",
            live.id,
            ev.reference_id.as_deref().unwrap_or_default(),
            ev.sequence_id.as_deref().unwrap_or_default()
        ),
    )
}

/// Whether a storage error is the pair index refusing a second live event of a pair.
fn is_pair_conflict(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _)
            if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
    )
}

/// Rates one valid event and stores it, answering it as stored (what reading it back by id
/// would answer: the answer is built from the values just inserted instead of read back);
/// the inner error is the event's erred reason, the outer one a storage failure that aborts
/// the call.
///
/// Under FAIL_ON_EXISTING the pair is not looked up first: the insert itself meets a live
/// event of the pair in the unique index usage_events_pair (the lookup cost an index probe
/// per event, and a client rarely resends). A refused insert changes nothing (SQLite undoes
/// the one statement), and the event is answered DUPLICATE_EVENT as before. An event that
/// errs for another reason is checked against the live events first, so that a duplicate is
/// reported as one whatever else is wrong with it, as when the lookup came first.
#[allow(clippy::too_many_arguments)]
pub(super) fn rate_and_store(
    tx: &Transaction<'_>,
    stmts: &mut Statements<'_>,
    caches: &mut Caches,
    ev: &Parsed,
    mode: Mode,
    request_id: &str,
    now: &str,
    pending: &mut HashMap<i64, Decimal>,
) -> Result<std::result::Result<StoredEvent, Erred>> {
    let live = match (ev.pair(), mode) {
        (Some((r, s)), Mode::OverwriteOnExisting) => stmts.live_event(r, s)?,
        _ => None,
    };
    let outcome = rate_and_store_found(tx, stmts, caches, ev, live, request_id, now, pending)?;
    match (outcome, ev.pair(), mode) {
        (Err(erred), Some((r, s)), Mode::FailOnExisting) => {
            Ok(Err(match stmts.live_event(r, s)? {
                Some(l) => duplicate_event(&l, ev),
                None => erred,
            }))
        }
        (outcome, _, _) => Ok(outcome),
    }
}

/// [`rate_and_store`] once the live event of the pair is known (under OVERWRITE_ON_EXISTING)
/// or left to the insert to find (FAIL_ON_EXISTING, `live` None).
#[allow(clippy::too_many_arguments)]
fn rate_and_store_found(
    tx: &Transaction<'_>,
    stmts: &mut Statements<'_>,
    caches: &mut Caches,
    ev: &Parsed,
    live: Option<LiveEvent>,
    request_id: &str,
    now: &str,
    pending: &mut HashMap<i64, Decimal>,
) -> Result<std::result::Result<StoredEvent, Erred>> {
    let start = &ev.stored_start;
    let service = match resolve_service(tx, caches, &ev.srid, start)? {
        Ok(s) => s,
        Err(e) => return Ok(Err(e)),
    };
    let Some(period_id) = service_period(tx, caches, service.service_id, start)? else {
        return Ok(Err((
            ErredCode::NoServicePeriod,
            format!(
                "the service of '{}' has no billing period holding {start}",
                ev.srid
            ),
        )));
    };
    let plan = caches.plans.get(tx, service.product_id)?;
    let usage = Usage {
        uom: &ev.uom,
        amount: ev.amount,
        start: ev.start,
        attributes: Attributes {
            reference_id: ev.reference_id.as_deref(),
            sequence_id: ev.sequence_id.as_deref(),
            service_resource_identifier: &ev.srid,
            usage_uom: &ev.uom,
        },
    };
    let charge = match rating::rate(plan, &usage, &service.currency) {
        Ok(c) => c,
        Err(e) => return Ok(Err(rating_erred(e))),
    };
    // The account's pending total after this event (the stored total, what this call added
    // so far, and this charge) must stay within the bound: refused here, as this event's
    // error, so that nothing out of bounds is ever stored.
    let account_total = match caches.pending_totals.entry(service.billing_account_id) {
        Entry::Occupied(e) => *e.get(),
        Entry::Vacant(e) => *e.insert(crate::domain::accounts::pending_charges(
            tx,
            service.billing_account_id,
        )?),
    };
    let so_far = pending
        .get(&service.billing_account_id)
        .copied()
        .unwrap_or_default();
    let replaced = match &live {
        Some(l) if l.billing_account_id == Some(service.billing_account_id) => l.total_charge,
        _ => Decimal::ZERO,
    };
    let within = account_total
        .checked_add(so_far)
        .and_then(|t| t.checked_sub(replaced))
        .and_then(|t| t.checked_add(charge.charge))
        .is_some_and(crate::money::within_bounds);
    if !within || !crate::money::within_bounds(charge.charge) {
        return Ok(Err((
            ErredCode::InvalidField,
            format!(
                "the charge {} would take the pending charges of billing account {} beyond {} integer digits",
                canonical(charge.charge),
                service.billing_account_id,
                crate::money::MAX_INTEGER_DIGITS
            ),
        )));
    }

    let counter = match &live {
        Some(l) => {
            tx.prepare_cached("UPDATE usage_events SET voided = 1, voided_at = ?1 WHERE id = ?2")?
                .execute(params![now, l.id])?;
            l.overwrite_counter + 1
        }
        None => 0,
    };
    let total = canonical(charge.charge);
    let inserted = stmts.insert_event.execute(params![
        request_id,
        ev.srid,
        service.service_resource_id,
        service.agreement_service_id,
        service.billing_account_id,
        period_id,
        start,
        ev.stored_end.as_deref().unwrap_or(start),
        ev.uom,
        ev.amount_text,
        ev.reference_id,
        ev.sequence_id,
        total,
        counter,
        now,
        charge.usage_rule_id,
        charge.charge_category_id,
        canonical(charge.rate),
        charge.usage_uom,
        canonical(charge.usage_amount),
    ]);
    match inserted {
        Ok(_) => {}
        // FAIL_ON_EXISTING and the pair is live: rate_and_store answers DUPLICATE_EVENT.
        Err(e) if live.is_none() && is_pair_conflict(&e) => {
            return Ok(Err((
                ErredCode::DuplicateEvent,
                "a live usage event already has this reference_id and sequence_id".into(),
            )));
        }
        Err(e) => return Err(e.into()),
    }
    let event_id = tx.last_insert_rowid();
    if let Some(l) = &live {
        if let Some(account) = l.billing_account_id {
            let entry = pending.entry(account).or_default();
            // Within bounds: both are totals of accepted charges.
            *entry = entry.saturating_sub(l.total_charge);
        }
    }
    let entry = pending.entry(service.billing_account_id).or_default();
    // Checked above: the sum is within bounds.
    *entry = entry.saturating_add(charge.charge);
    let category = charge_category(tx, caches, charge.charge_category_id)?;
    Ok(Ok(StoredEvent {
        id: event_id,
        period_id,
        overwrite_counter: counter,
        charge,
        category,
    }))
}

/// A charge category as a rated event's charges embed it; loaded once per call.
fn charge_category(
    tx: &Transaction<'_>,
    caches: &mut Caches,
    id: i64,
) -> Result<Arc<ChargeCategoryRef>> {
    if let Some(c) = caches.categories.get(&id) {
        return Ok(c.clone());
    }
    let found = Arc::new(
        tx.prepare_cached(
            "SELECT charge_category_type, name FROM charge_categories WHERE id = ?1",
        )?
        .query_row([id], |r| {
            Ok(ChargeCategoryRef {
                charge_category_type: r.get(0)?,
                id: id.to_string(),
                name: r.get(1)?,
            })
        })?,
    );
    caches.categories.insert(id, found.clone());
    Ok(found)
}

fn rating_erred(e: RatingError) -> Erred {
    match e {
        RatingError::UomNotConvertible(m) => (ErredCode::UomNotConvertible, m),
        RatingError::NoMatchingRule(m) => (ErredCode::NoMatchingRule, m),
        RatingError::RateNotFound(m) => (ErredCode::RateNotFound, m),
        RatingError::RuleMisconfigured(m) => (ErredCode::RuleMisconfigured, m),
    }
}

/// The live event holding a (reference_id, sequence_id) pair.
struct LiveEvent {
    id: i64,
    overwrite_counter: i64,
    billing_account_id: Option<i64>,
    total_charge: Decimal,
}

/// The live event of a pair. The CASE is usage_events_pair's third key (migration 0007),
/// written the same so that SQLite looks the event up through the whole index key.
pub(in crate::domain::usage) const LIVE_EVENT_SQL: &str =
    "SELECT id, overwrite_counter, billing_account_id, total_charge FROM usage_events
     WHERE reference_id = ?1 AND sequence_id = ?2
       AND (CASE WHEN voided = 0 THEN 0 ELSE id END) = 0";
