//! Posting a bulk call: each event validated, checked against earlier events of the call
//! and live events of the tenant, resolved to its agreement service and the service period
//! holding its start, rated under its product's rate plan, and stored (an overwritten event
//! voided); the billing accounts' pending charges move once per call by the difference.
//! Simulation is the same inside a savepoint that is rolled back.
//!
//! Where each part lives: this file holds the entry points and the per-call loop;
//! `post/parse.rs` reads and checks one submitted event, `post/services.rs` finds the
//! agreement service and billing period it rates against, `post/store.rs` rates and stores
//! it, and `post/answer.rs` renders the call's answer from what was stored.

mod answer;
mod catalogue;
mod parse;
mod services;
mod store;

use crate::domain::accounts::add_to_pending_charges;
pub use answer::Stored;
use answer::StoredEvent;
use catalogue::Catalogue;
pub(super) use parse::parse_event;
use parse::Parsed;
#[cfg(test)]
pub(super) use store::LIVE_EVENTS_SQL;
#[cfg(feature = "test-support")]
pub use store::{event_columns, insert_statement};
use store::{insert_events, live_events, rate_and_store};

use super::{BulkOutcome, BulkRequest, ErredCode};
use crate::{Error, Result};
use chrono_tz::Tz;
use rusqlite::Transaction;
use rust_decimal::Decimal;
use std::collections::{HashMap, HashSet};

/// Posts a bulk call: rates and stores every event that can be rated. Run it inside
/// [`crate::store::TenantDb::write`]; a re-run is harmless (the request id is new each time).
pub fn post(tx: &Transaction<'_>, req: &BulkRequest, tz: Tz) -> Result<BulkOutcome> {
    let events = check_events(req, tz)?;
    Ok(post_checked(tx, req, &events)?.render(req, &events, tz))
}

/// Simulates a bulk call: the same processing as [`post`] inside a savepoint that is rolled
/// back, answered without request ids and with simulated ids: the n-th rated event of the
/// answer is `-n`, and the answer's charges are numbered `-1`, `-2`, ... likewise. Stored ids
/// are positive, so a simulated id is int64 text that never names a stored record.
pub fn simulate(tx: &Transaction<'_>, req: &BulkRequest, tz: Tz) -> Result<BulkOutcome> {
    let events = check_events(req, tz)?;
    Ok(simulate_checked(tx, req, &events)?.render(req, &events, tz))
}

/// The events of a bulk call as [`check_events`] found them, in submission order: each
/// validated, or erred (invalid, or a pair an earlier event of the call has).
pub struct CheckedEvents(Vec<std::result::Result<Parsed, Erred>>);

/// Validates a bulk call's limits (a 400 when broken) and each of its events, and checks the
/// events against each other: the part of posting that reads nothing stored, so the serving
/// layer runs it before the write, without holding the tenant's writer.
pub fn check_events(req: &BulkRequest, tz: Tz) -> Result<CheckedEvents> {
    req.check()?;
    let mut events: Vec<_> = req
        .usage_events
        .iter()
        .map(|raw| parse_event(raw, tz))
        .collect();
    // The pairs an earlier event of the call has: found first (borrowing the events' own
    // texts), then erred.
    let mut seen: HashSet<(&str, &str)> = HashSet::with_capacity(events.len());
    let repeated: Vec<(usize, String)> = events
        .iter()
        .enumerate()
        .filter_map(|(i, ev)| {
            let (r, s) = ev.as_ref().ok()?.pair()?;
            (!seen.insert((r, s))).then(|| {
                let message = format!(
                    "an earlier event of this call has reference_id '{r}' and sequence_id '{s}'"
                );
                (i, message)
            })
        })
        .collect();
    for (i, message) in repeated {
        events[i] = Err((ErredCode::DuplicateInRequest, message));
    }
    Ok(CheckedEvents(events))
}

/// [`post`] of events checked before the write ([`check_events`] of the same `req`); the
/// answer is [`Stored::render`] of what it returns, with the same `req` and `events`.
pub fn post_checked(
    tx: &Transaction<'_>,
    req: &BulkRequest,
    events: &CheckedEvents,
) -> Result<Stored> {
    // A UUID, as the spec says; version 7 (time first, then random): each call's 50 entries
    // of the request-id index go to its last page instead of a random one, which kept a
    // random leaf of a growing index in the page cache (and in the WAL) per call.
    let request_id = uuid::Uuid::now_v7().to_string();
    let events = process(tx, req, events, &request_id)?;
    Ok(Stored {
        request_id: Some(request_id),
        events,
    })
}

/// [`simulate`] of events checked before the write, as [`post_checked`].
pub fn simulate_checked(
    tx: &Transaction<'_>,
    req: &BulkRequest,
    events: &CheckedEvents,
) -> Result<Stored> {
    tx.execute_batch("SAVEPOINT usage_simulation")?;
    let outcome = process(tx, req, events, "simulation");
    tx.execute_batch("ROLLBACK TO usage_simulation; RELEASE usage_simulation")?;
    Ok(Stored {
        request_id: None,
        events: outcome?,
    })
}

/// Why an event was erred: its code and message.
type Erred = (ErredCode, String);

/// What one call has looked up already.
struct Caches<'c> {
    /// The rating catalogue: kept across calls while it is unchanged (`post/catalogue.rs`).
    catalogue: &'c mut Catalogue,
    /// Stored pending charges per billing account: they change only at the end of the call
    /// ([`add_to_pending_charges`]), so one read per account serves every event.
    pending_totals: HashMap<i64, Decimal>,
}

fn process(
    tx: &Transaction<'_>,
    req: &BulkRequest,
    events: &CheckedEvents,
    request_id: &str,
) -> Result<Vec<std::result::Result<StoredEvent, Erred>>> {
    if events.0.len() != req.usage_events.len() {
        return Err(Error::Internal(
            "the checked events are not those of the bulk call".into(),
        ));
    }
    let now = crate::time::to_storage(crate::time::now_for(tx)?);
    let catalogue = catalogue::for_this_write();
    let mut catalogue = catalogue::lock_for_call(&catalogue);
    let mut caches = Caches {
        catalogue: &mut catalogue,
        pending_totals: HashMap::new(),
    };
    let valid: Vec<&Parsed> = events.0.iter().filter_map(|e| e.as_ref().ok()).collect();
    let live = live_events(tx, &valid)?;
    let mut pending: HashMap<i64, Decimal> = HashMap::new();
    let mut stored = Vec::with_capacity(events.0.len());
    let mut unstored = Vec::with_capacity(events.0.len());
    for checked in &events.0 {
        stored.push(match checked {
            Ok(ev) => {
                match rate_and_store(tx, &mut caches, ev, req.mode, &live, &now, &mut pending)? {
                    Ok((answer, row)) => {
                        unstored.push((stored.len(), row));
                        Ok(answer)
                    }
                    Err(erred) => Err(erred),
                }
            }
            Err(e) => Err(e.clone()),
        });
    }
    insert_events(tx, request_id, &now, &unstored, &mut stored)?;
    for (account, delta) in pending {
        add_to_pending_charges(tx, account, delta)?;
    }
    Ok(stored)
}
