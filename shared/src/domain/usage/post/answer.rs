//! The answer of a bulk call, made after the write from what it stored: every rated event as
//! reading it back by id would answer it, every erred one as submitted, in submission order.
//! Rendering (times in the tenant's zone, texts copied into every event) runs outside the
//! tenant's writer.

use super::{CheckedEvents, Erred, Parsed};
use crate::domain::usage::{
    BulkOutcome, BulkRequest, ChargeCategoryRef, ErredEvent, EventCharge, IdRef, RatedEvent,
};
use crate::rating;
use chrono_tz::Tz;
use std::sync::Arc;

/// What a bulk call stored (or, simulated, would have), event by event in submission order:
/// the write's part of the answer. [`Stored::render`] makes the answer from it after the
/// write, so rendering (times in the tenant's zone, texts copied into every event) does not
/// hold the tenant's writer. Serializable: a keyed call's write stores it with its key
/// (`TenantDb::write`), so the answer renders again from it on any environment.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Stored {
    /// The call's request id; none in a simulation, whose ids are then numbered `-n`.
    pub(super) request_id: Option<String>,
    pub(super) events: Vec<std::result::Result<StoredEvent, Erred>>,
}

/// One rated event as stored: what the answer needs beyond the submitted event.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct StoredEvent {
    pub(super) id: i64,
    pub(super) period_id: i64,
    pub(super) overwrite_counter: i64,
    pub(super) charge: rating::Charge,
    pub(super) category: Arc<ChargeCategoryRef>,
}

impl Stored {
    /// The answer of the call: every rated event as reading it back by id would answer it
    /// (the stored texts: times rendered from their stored form, decimals canonical as
    /// stored), every erred one as submitted. `req` and `events` are those the call was
    /// stored from.
    pub fn render(self, req: &BulkRequest, events: &CheckedEvents, tz: Tz) -> BulkOutcome {
        let mut rated_events = Vec::new();
        let mut erred_events = Vec::new();
        let submitted = req.usage_events.iter().zip(&events.0);
        for ((raw, checked), stored) in submitted.zip(self.events) {
            match (stored, checked) {
                (Ok(stored), Ok(ev)) => {
                    let n = rated_events.len() + 1;
                    rated_events.push(stored.render(ev, self.request_id.as_deref(), n, tz));
                }
                (Err((code, message)), _) => erred_events.push(ErredEvent {
                    unrated_event: raw.clone(),
                    code,
                    message,
                }),
                // `process` rates checked events only.
                (Ok(_), Err((code, message))) => erred_events.push(ErredEvent {
                    unrated_event: raw.clone(),
                    code: *code,
                    message: message.clone(),
                }),
            }
        }
        BulkOutcome {
            rated_events,
            erred_events,
        }
    }
}

impl StoredEvent {
    /// The rated event answered for `ev`, the `n`-th rated one of its call (its id in a
    /// simulation, which has no `request_id`: `-n`, and so is its one charge's).
    fn render(self, ev: &Parsed, request_id: Option<&str>, n: usize, tz: Tz) -> RatedEvent {
        let id = match request_id {
            Some(_) => self.id.to_string(),
            None => format!("-{n}"),
        };
        // From the parsed instants, as their stored texts would render.
        let start_time = crate::time::render_as_stored(ev.start, tz);
        let end_time = match &ev.stored_end {
            Some(_) => crate::time::render_as_stored(ev.end, tz),
            None => start_time.clone(),
        };
        RatedEvent {
            id: Some(id.clone()),
            total_charge: self.charge.charge,
            start_time,
            end_time,
            service_resource_identifier: ev.srid.clone(),
            usage_uom: ev.uom.clone(),
            usage_amount: ev.amount,
            reference_id: ev.reference_id.clone(),
            sequence_id: ev.sequence_id.clone(),
            request_id: request_id.map(str::to_string),
            event_charges: vec![EventCharge {
                // A charge is numbered by its event (migration 0008).
                id: Some(id),
                charge: self.charge.charge,
                rate: self.charge.rate,
                usage_rule: IdRef {
                    id: self.charge.usage_rule_id.to_string(),
                },
                charge_category: self.category,
                usage_uom: self.charge.usage_uom,
                usage_amount: self.charge.usage_amount,
            }],
            service_period: IdRef {
                id: self.period_id.to_string(),
            },
            overwrite_counter: self.overwrite_counter,
            voided: false,
        }
    }
}
