//! Usage events: bulk posting and simulation, and reading rated events back. One module per
//! job: [`post`] (validate, rate and store a bulk call), [`rate_plan`] (load a product's rate
//! plan for [`crate::rating`]) and [`read`] (rated events back, one by id or a list page).
//! The types of a bulk call and of a rated event are here.
//!
//! One bulk call is processed in one transaction, event by event in submission order:
//! 1. the submitted JSON object is validated field by field (a bad event is *erred*, the
//!    others go on);
//! 2. the (reference_id, sequence_id) pair, when both are present, is checked against earlier
//!    events of the same call and against the tenant's live (not voided) events;
//! 3. the SRID leads to its active agreement service, the service period holding the start,
//!    and the product's rate plan, which [`crate::rating`] applies;
//! 4. the event and its charge are stored; an overwritten event is voided; the billing
//!    account's pending charges move by the difference.
//!
//! Simulation runs exactly this inside a savepoint that is rolled back, so it reports what
//! posting would do while storing nothing (SQLite rowids are max+1, so no id is consumed).
//! Erred events are never stored. See docs/usage.md for the codes and the choices made.
//!
//! This module is the one writer of `usage_events`: bill runs and invoice cancels mark and
//! unmark the events an invoice billed through [`mark_invoiced`] and [`unmark_invoiced`].

mod post;
mod rate_plan;
mod read;
#[cfg(test)]
mod tests;

pub use post::{
    check_events, post, post_checked, simulate, simulate_checked, CheckedEvents, Stored,
};
#[cfg(feature = "test-support")]
pub use post::{event_columns, insert_statement};
pub use read::{
    fetch_by_ids, get, list, require_narrowing, EVENT_FIELDS_WHITELIST, EVENT_LIST,
    NARROWING_PARAMETERS,
};

use crate::domain::agreements::AgreementServiceStatus;
use crate::money::serialize_number;
use crate::{Error, Result};
use rusqlite::Transaction;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Marks the live events of billing account `account_id` not invoiced yet (those starting
/// before `until`, when given) as billed by invoice `invoice_id`.
pub(crate) fn mark_invoiced(
    tx: &Transaction<'_>,
    account_id: i64,
    invoice_id: i64,
    until: Option<&str>,
) -> Result<()> {
    let marked = "UPDATE usage_events SET invoice_id = ?1
                  WHERE billing_account_id = ?2 AND voided = 0 AND invoice_id IS NULL";
    match until {
        Some(until) => tx
            .prepare_cached(&format!("{marked} AND start_time < ?3"))?
            .execute(rusqlite::params![invoice_id, account_id, until])?,
        None => tx
            .prepare_cached(marked)?
            .execute(rusqlite::params![invoice_id, account_id])?,
    };
    Ok(())
}

/// Makes the events invoice `invoice_id` billed pending again (the invoice was canceled).
pub(crate) fn unmark_invoiced(
    tx: &Transaction<'_>,
    account_id: i64,
    invoice_id: i64,
) -> Result<()> {
    tx.prepare_cached(
        "UPDATE usage_events SET invoice_id = NULL WHERE billing_account_id = ?1 AND invoice_id = ?2",
    )?
    .execute([account_id, invoice_id])?;
    Ok(())
}

/// Most usage events one bulk call may carry.
pub const MAX_EVENTS_PER_CALL: usize = 50;
/// Longest SRID, reference_id or sequence_id accepted.
pub const MAX_ID_LEN: usize = 255;
/// Agreement service statuses whose SRIDs are rated.
pub const RATEABLE_STATUSES: &[&str] = &[
    AgreementServiceStatus::Active.as_str(),
    AgreementServiceStatus::Trial.as_str(),
];
/// Fields a usage event may carry.
pub const EVENT_FIELDS: &[&str] = &[
    "start_time",
    "end_time",
    "service_resource_identifier",
    "usage_uom",
    "usage_amount",
    "reference_id",
    "sequence_id",
];

/// What happens when an event's (reference_id, sequence_id) pair is already live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Mode {
    /// The event is erred with `DUPLICATE_EVENT`.
    FailOnExisting,
    /// The live event is voided and the new one stored with `overwrite_counter` one higher.
    OverwriteOnExisting,
}

/// The body of a bulk call. Events stay raw JSON so that each is checked, and echoed in
/// `erred_events`, on its own, with its numbers' exact digits.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkRequest {
    /// FAIL_ON_EXISTING or OVERWRITE_ON_EXISTING.
    #[schema(schema_with = <Mode as utoipa::PartialSchema>::schema)]
    pub mode: Mode,
    /// 1 to [`MAX_EVENTS_PER_CALL`] events.
    #[schema(schema_with = usage_events)]
    pub usage_events: Vec<Box<RawValue>>,
}

impl BulkRequest {
    /// Checks the limits of the whole request (a 400 when broken).
    pub fn check(&self) -> Result<()> {
        let n = self.usage_events.len();
        if n == 0 || n > MAX_EVENTS_PER_CALL {
            return Err(Error::bad_request(format!(
                "usage_events must hold 1 to {MAX_EVENTS_PER_CALL} events, found {n}"
            )));
        }
        Ok(())
    }
}

/// A usage event as a bulk call carries it: the parser (`post`) reads each event from raw
/// JSON on its own, so this schema states what it takes.
pub fn usage_event() -> utoipa::openapi::Object {
    let text =
        |min: u32| serde_json::json!({ "type": "string", "minLength": min, "maxLength": 255 });
    let mut amount = crate::json_schema::decimal();
    amount.minimum = Some(0.into());
    crate::json_schema::object(serde_json::json!({
        "type": "object",
        "description": "A usage event. An event breaking these rules is not refused: it is listed in erred_events.",
        "properties": {
            "start_time": { "type": "string", "description": "Date, RFC 3339 date-time, or local date-time" },
            "end_time": { "type": "string" },
            "service_resource_identifier": text(1),
            "usage_uom": crate::domain::enum_schemas::usage_uom(),
            "usage_amount": amount,
            "reference_id": text(1),
            "sequence_id": text(1),
        },
        "required": ["start_time", "service_resource_identifier", "usage_uom", "usage_amount"],
    }))
}

fn usage_events() -> utoipa::openapi::Array {
    utoipa::openapi::ArrayBuilder::new()
        .items(utoipa::openapi::Ref::from_schema_name("UsageEvent"))
        .min_items(Some(1))
        .max_items(Some(MAX_EVENTS_PER_CALL))
        .build()
}

fn unrated_event() -> utoipa::openapi::Object {
    crate::json_schema::object(
        serde_json::json!({ "description": "The event exactly as submitted" }),
    )
}

/// Why an event was not rated: the `code` of an erred event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErredCode {
    /// A required field is absent or null.
    MissingField,
    /// A field has the wrong type or value, is unknown, or the event is not an object.
    InvalidField,
    /// An earlier event of the same call has the same (reference_id, sequence_id).
    DuplicateInRequest,
    /// FAIL_ON_EXISTING and a live event with the same pair exists.
    DuplicateEvent,
    /// No service carries the SRID.
    UnknownServiceResource,
    /// The SRID exists, but neither it nor an agreement service carrying it is active.
    InactiveServiceResource,
    /// The event starts before its service does.
    BeforeServiceStart,
    /// The event starts at or after its service's end.
    AfterServiceEnd,
    /// No billing period of the service holds the start.
    NoServicePeriod,
    /// No rule of the rate plan rates the event's unit family.
    UomNotConvertible,
    /// Rules of the family exist, but none's condition holds.
    NoMatchingRule,
    /// The matching rule has no price for the event (no lookup row valid then).
    RateNotFound,
    /// The matching rule's definition is invalid.
    RuleMisconfigured,
}

/// An event that could not be rated, as answered in `erred_events`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ErredEvent {
    /// The event as submitted.
    #[schema(schema_with = unrated_event)]
    pub unrated_event: Box<RawValue>,
    /// Why, as a stable code.
    #[schema(schema_with = <ErredCode as utoipa::PartialSchema>::schema)]
    pub code: ErredCode,
    /// Why, in words.
    pub message: String,
}

/// `{id}` reference.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = RecordRef)]
pub struct IdRef {
    /// The id.
    #[schema(schema_with = crate::json_schema::identifier)]
    pub id: String,
}

/// A charge category as embedded in an event charge.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ChargeCategoryRef {
    /// Its type (Usage, Adhoc...).
    pub charge_category_type: String,
    /// Its id.
    #[schema(schema_with = crate::json_schema::identifier)]
    pub id: String,
    /// Its name.
    pub name: String,
}

/// One charge of a rated event.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct EventCharge {
    /// Id (in a simulation `-n`, naming nothing stored: see `post::simulate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, schema_with = crate::json_schema::identifier)]
    pub id: Option<String>,
    /// The charge, rounded to the account's currency.
    #[serde(serialize_with = "serialize_number")]
    #[schema(schema_with = crate::json_schema::decimal)]
    pub charge: Decimal,
    /// The per-unit rate applied.
    #[serde(serialize_with = "serialize_number")]
    #[schema(schema_with = crate::json_schema::decimal)]
    pub rate: Decimal,
    /// The rule that produced it.
    pub usage_rule: IdRef,
    /// The rule's charge category.
    // Shared: a call's events embed a few categories many times.
    #[schema(value_type = ChargeCategoryRef)]
    pub charge_category: std::sync::Arc<ChargeCategoryRef>,
    /// The rule's unit.
    #[schema(schema_with = crate::domain::enum_schemas::usage_uom)]
    pub usage_uom: String,
    /// The event's amount converted into the rule's unit.
    #[serde(serialize_with = "serialize_number")]
    #[schema(schema_with = crate::json_schema::decimal)]
    pub usage_amount: Decimal,
}

/// A rated event as Surface B renders it (times in the tenant's zone, with offsets).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RatedEvent {
    /// Id (in a simulation `-n`, naming nothing stored: see `post::simulate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, schema_with = crate::json_schema::identifier)]
    pub id: Option<String>,
    /// Sum of the event charges.
    #[serde(serialize_with = "serialize_number")]
    #[schema(schema_with = crate::json_schema::decimal)]
    pub total_charge: Decimal,
    /// Start, with offset.
    #[schema(format = DateTime)]
    pub start_time: String,
    /// End, with offset.
    #[schema(format = DateTime)]
    pub end_time: String,
    /// Echoed.
    pub service_resource_identifier: String,
    /// Echoed.
    #[schema(schema_with = crate::domain::enum_schemas::usage_uom)]
    pub usage_uom: String,
    /// Echoed.
    #[serde(serialize_with = "serialize_number")]
    #[schema(schema_with = crate::json_schema::decimal)]
    pub usage_amount: Decimal,
    /// Echoed (null when not sent).
    #[schema(required = true)]
    pub reference_id: Option<String>,
    /// Echoed (null when not sent).
    #[schema(required = true)]
    pub sequence_id: Option<String>,
    /// The posting call's id (absent in simulations).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, format = "uuid")]
    pub request_id: Option<String>,
    /// The charges.
    pub event_charges: Vec<EventCharge>,
    /// The service period holding the start.
    pub service_period: IdRef,
    /// 0 for a first posting, one more per overwrite of the pair.
    pub overwrite_counter: i64,
    /// Whether a later event overwrote this one.
    pub voided: bool,
}

/// The answer of a bulk call.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct BulkOutcome {
    /// Events rated (and, when posting, stored), in submission order.
    pub rated_events: Vec<RatedEvent>,
    /// Events not rated, in submission order.
    pub erred_events: Vec<ErredEvent>,
}
