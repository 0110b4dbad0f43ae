//! Usage events: bulk posting and simulation, and reading rated events back.
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

use super::catalog::USAGE_UOMS;
use crate::money::{canonical, serialize_number};
use crate::query::{FieldKind, FieldSpec, ListParams, ListSource};
use crate::rating::{self, Attributes, Condition, LookupRow, Rate, RatingError, Rule, Usage};
use crate::{Error, Result};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use rusqlite::types::ToSql;
use rusqlite::{params, Connection, OptionalExtension, Transaction};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

/// Most usage events one bulk call may carry.
pub const MAX_EVENTS_PER_CALL: usize = 50;
/// Longest SRID, reference_id or sequence_id accepted.
pub const MAX_ID_LEN: usize = 255;
/// Agreement service statuses whose SRIDs are rated.
pub const RATEABLE_STATUSES: &[&str] = &["ACTIVE", "TRIAL"];
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Mode {
    /// The event is erred with `DUPLICATE_EVENT`.
    FailOnExisting,
    /// The live event is voided and the new one stored with `overwrite_counter` one higher.
    OverwriteOnExisting,
}

/// The body of a bulk call. Events stay raw JSON so that each is checked, and echoed in
/// `erred_events`, on its own, with its numbers' exact digits.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BulkRequest {
    /// FAIL_ON_EXISTING or OVERWRITE_ON_EXISTING.
    pub mode: Mode,
    /// 1 to [`MAX_EVENTS_PER_CALL`] events.
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

/// Why an event was not rated: the `code` of an erred event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
pub struct ErredEvent {
    /// The event as submitted.
    pub unrated_event: Box<RawValue>,
    /// Why, as a stable code.
    pub code: ErredCode,
    /// Why, in words.
    pub message: String,
}

/// `{id}` reference.
#[derive(Debug, Clone, Serialize)]
pub struct IdRef {
    /// The id.
    pub id: String,
}

/// A charge category as embedded in an event charge.
#[derive(Debug, Clone, Serialize)]
pub struct ChargeCategoryRef {
    /// Its type (Usage, Adhoc...).
    pub charge_category_type: String,
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
}

/// One charge of a rated event.
#[derive(Debug, Clone, Serialize)]
pub struct EventCharge {
    /// Id (absent in simulations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The charge, rounded to the account's currency.
    #[serde(serialize_with = "serialize_number")]
    pub charge: Decimal,
    /// The per-unit rate applied.
    #[serde(serialize_with = "serialize_number")]
    pub rate: Decimal,
    /// The rule that produced it.
    pub usage_rule: IdRef,
    /// The rule's charge category.
    pub charge_category: ChargeCategoryRef,
    /// The rule's unit.
    pub usage_uom: String,
    /// The event's amount converted into the rule's unit.
    #[serde(serialize_with = "serialize_number")]
    pub usage_amount: Decimal,
}

/// A rated event as Surface B renders it (times in the tenant's zone, with offsets).
#[derive(Debug, Clone, Serialize)]
pub struct RatedEvent {
    /// Id (absent in simulations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Sum of the event charges.
    #[serde(serialize_with = "serialize_number")]
    pub total_charge: Decimal,
    /// Start, with offset.
    pub start_time: String,
    /// End, with offset.
    pub end_time: String,
    /// Echoed.
    pub service_resource_identifier: String,
    /// Echoed.
    pub usage_uom: String,
    /// Echoed.
    #[serde(serialize_with = "serialize_number")]
    pub usage_amount: Decimal,
    /// Echoed (null when not sent).
    pub reference_id: Option<String>,
    /// Echoed (null when not sent).
    pub sequence_id: Option<String>,
    /// The posting call's id (absent in simulations).
    #[serde(skip_serializing_if = "Option::is_none")]
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
#[derive(Debug, Clone, Serialize)]
pub struct BulkOutcome {
    /// Events rated (and, when posting, stored), in submission order.
    pub rated_events: Vec<RatedEvent>,
    /// Events not rated, in submission order.
    pub erred_events: Vec<ErredEvent>,
}

/// Posts a bulk call: rates and stores every event that can be rated. Run it inside
/// [`crate::store::TenantDb::write`]; a re-run is harmless (the request id is new each time).
pub fn post(tx: &Transaction<'_>, req: &BulkRequest, tz: Tz) -> Result<BulkOutcome> {
    req.check()?;
    let request_id = uuid::Uuid::new_v4().to_string();
    process(tx, req, tz, &request_id)
}

/// Simulates a bulk call: the same processing as [`post`] inside a savepoint that is rolled
/// back, answered without ids and request ids.
pub fn simulate(tx: &Transaction<'_>, req: &BulkRequest, tz: Tz) -> Result<BulkOutcome> {
    req.check()?;
    tx.execute_batch("SAVEPOINT usage_simulation")?;
    let outcome = process(tx, req, tz, "simulation");
    tx.execute_batch("ROLLBACK TO usage_simulation; RELEASE usage_simulation")?;
    let mut outcome = outcome?;
    for e in &mut outcome.rated_events {
        e.id = None;
        e.request_id = None;
        for c in &mut e.event_charges {
            c.id = None;
        }
    }
    Ok(outcome)
}

/// A validated event.
struct Parsed {
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    srid: String,
    uom: String,
    amount: Decimal,
    reference_id: Option<String>,
    sequence_id: Option<String>,
}

impl Parsed {
    fn pair(&self) -> Option<(&str, &str)> {
        Some((self.reference_id.as_deref()?, self.sequence_id.as_deref()?))
    }
}

type Erred = (ErredCode, String);

/// The service an SRID rates against.
#[derive(Clone)]
struct ServiceRef {
    service_id: i64,
    agreement_service_id: i64,
    service_resource_id: i64,
    billing_account_id: i64,
    product_id: i64,
    currency: String,
    start: String,
    end: Option<String>,
}

/// What one call has looked up already.
#[derive(Default)]
struct Caches {
    services: HashMap<String, std::result::Result<Vec<ServiceRef>, Erred>>,
    plans: HashMap<i64, Vec<Rule>>,
    tables: HashMap<i64, Vec<LookupRow>>,
    /// Billing periods per service: (start, end, id), stored text.
    periods: HashMap<i64, Vec<(String, String, i64)>>,
}

fn process(
    tx: &Transaction<'_>,
    req: &BulkRequest,
    tz: Tz,
    request_id: &str,
) -> Result<BulkOutcome> {
    let now = crate::time::to_storage(crate::time::now());
    let mut caches = Caches::default();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut pending: HashMap<i64, Decimal> = HashMap::new();
    let mut stored = Vec::new();
    let mut erred_events = Vec::new();
    for raw in &req.usage_events {
        let result = parse_event(raw, tz).and_then(|ev| {
            if let Some((r, s)) = ev.pair() {
                if !seen.insert((r.to_string(), s.to_string())) {
                    return Err((
                        ErredCode::DuplicateInRequest,
                        format!("an earlier event of this call has reference_id '{r}' and sequence_id '{s}'"),
                    ));
                }
            }
            Ok(ev)
        });
        let outcome = match result {
            Ok(ev) => rate_and_store(
                tx,
                &mut caches,
                &ev,
                req.mode,
                request_id,
                &now,
                &mut pending,
            )?,
            Err(e) => Err(e),
        };
        match outcome {
            Ok(id) => stored.push(id),
            Err((code, message)) => erred_events.push(ErredEvent {
                unrated_event: raw.clone(),
                code,
                message,
            }),
        }
    }
    for (account, delta) in pending {
        add_to_pending_charges(tx, account, delta)?;
    }
    let rated_events = fetch_by_ids(tx, &stored, tz)?;
    Ok(BulkOutcome {
        rated_events,
        erred_events,
    })
}

/// Validates one submitted event.
fn parse_event(raw: &RawValue, tz: Tz) -> std::result::Result<Parsed, Erred> {
    let invalid = |m: String| (ErredCode::InvalidField, m);
    let fields: HashMap<String, Box<RawValue>> = serde_json::from_str(raw.get())
        .map_err(|_| invalid("a usage event must be a JSON object".into()))?;
    if let Some(unknown) = fields.keys().find(|k| !EVENT_FIELDS.contains(&k.as_str())) {
        return Err(invalid(format!(
            "unknown field '{unknown}'; a usage event has {}",
            EVENT_FIELDS.join(", ")
        )));
    }
    let present = |name: &str| fields.get(name).filter(|v| v.get() != "null");
    let required = |name: &str| {
        present(name).ok_or_else(|| (ErredCode::MissingField, format!("{name} is required")))
    };
    let string = |name: &str, v: &RawValue| {
        serde_json::from_str::<String>(v.get())
            .map_err(|_| invalid(format!("{name} must be a string, found {}", v.get())))
    };
    let bounded = |name: &str, v: &RawValue| {
        let s = string(name, v)?;
        if s.is_empty() || s.chars().count() > MAX_ID_LEN {
            return Err(invalid(format!(
                "{name} must be 1 to {MAX_ID_LEN} characters"
            )));
        }
        Ok(s)
    };
    let time = |name: &str, v: &RawValue| {
        let s = string(name, v)?;
        crate::time::parse_date_or_datetime(&s, tz).ok_or_else(|| {
            invalid(format!(
                "{name}: '{s}' is not a date (YYYY-MM-DD) or an RFC 3339 date-time"
            ))
        })
    };

    let start = time("start_time", required("start_time")?)?;
    let srid = bounded(
        "service_resource_identifier",
        required("service_resource_identifier")?,
    )?;
    let uom = string("usage_uom", required("usage_uom")?)?;
    if !USAGE_UOMS.contains(&uom.as_str()) {
        return Err(invalid(format!(
            "usage_uom: '{uom}' is not one of {}",
            USAGE_UOMS.join(", ")
        )));
    }
    let amount_raw = required("usage_amount")?;
    let amount = serde_json::from_str::<crate::money::Number>(amount_raw.get())
        .map_err(|_| {
            invalid(format!(
                "usage_amount must be a number, found {}",
                amount_raw.get()
            ))
        })?
        .0;
    if amount.is_sign_negative() && !amount.is_zero() {
        return Err(invalid(format!(
            "usage_amount must not be negative, found {}",
            amount_raw.get()
        )));
    }
    let end = match present("end_time") {
        Some(v) => time("end_time", v)?,
        None => start,
    };
    if end < start {
        return Err(invalid("end_time must not be before start_time".into()));
    }
    let reference_id = present("reference_id")
        .map(|v| bounded("reference_id", v))
        .transpose()?;
    let sequence_id = present("sequence_id")
        .map(|v| bounded("sequence_id", v))
        .transpose()?;
    Ok(Parsed {
        start,
        end,
        srid,
        uom,
        amount,
        reference_id,
        sequence_id,
    })
}

/// Rates one valid event and stores it; the inner error is the event's erred reason, the
/// outer one a storage failure that aborts the call.
fn rate_and_store(
    tx: &Transaction<'_>,
    caches: &mut Caches,
    ev: &Parsed,
    mode: Mode,
    request_id: &str,
    now: &str,
    pending: &mut HashMap<i64, Decimal>,
) -> Result<std::result::Result<i64, Erred>> {
    let live = match ev.pair() {
        Some((r, s)) => live_event(tx, r, s)?,
        None => None,
    };
    if let (Some(l), Mode::FailOnExisting) = (&live, mode) {
        return Ok(Err((
            ErredCode::DuplicateEvent,
            format!(
                "usage event {} already has reference_id '{}' and sequence_id '{}'; post with mode OVERWRITE_ON_EXISTING to replace it",
                l.id,
                ev.reference_id.as_deref().unwrap_or_default(),
                ev.sequence_id.as_deref().unwrap_or_default()
            ),
        )));
    }
    let service = match resolve_service(tx, caches, &ev.srid, ev.start)? {
        Ok(s) => s,
        Err(e) => return Ok(Err(e)),
    };
    let start = crate::time::to_storage(ev.start);
    let Some(period_id) = service_period(tx, caches, service.service_id, &start)? else {
        return Ok(Err((
            ErredCode::NoServicePeriod,
            format!(
                "the service of '{}' has no billing period holding {start}",
                ev.srid
            ),
        )));
    };
    let plan = plan(tx, caches, service.product_id)?;
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

    let counter = match &live {
        Some(l) => {
            tx.prepare_cached("UPDATE usage_events SET voided = 1, voided_at = ?1 WHERE id = ?2")?
                .execute(params![now, l.id])?;
            if let Some(account) = l.billing_account_id {
                *pending.entry(account).or_default() -= l.total_charge;
            }
            l.overwrite_counter + 1
        }
        None => 0,
    };
    tx.prepare_cached(
        "INSERT INTO usage_events (request_id, service_resource_identifier, service_resource_id,
            agreement_service_id, billing_account_id, service_period_id, start_time, end_time,
            usage_uom, usage_amount, reference_id, sequence_id, total_charge, overwrite_counter,
            voided, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, 0, ?15)",
    )?
    .execute(params![
        request_id,
        ev.srid,
        service.service_resource_id,
        service.agreement_service_id,
        service.billing_account_id,
        period_id,
        start,
        crate::time::to_storage(ev.end),
        ev.uom,
        canonical(ev.amount),
        ev.reference_id,
        ev.sequence_id,
        canonical(charge.charge),
        counter,
        now,
    ])?;
    let event_id = tx.last_insert_rowid();
    tx.prepare_cached(
        "INSERT INTO usage_event_charges (usage_event_id, usage_rule_id, charge_category_id,
            charge, rate, usage_uom, usage_amount)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        event_id,
        charge.usage_rule_id,
        charge.charge_category_id,
        canonical(charge.charge),
        canonical(charge.rate),
        charge.usage_uom,
        canonical(charge.usage_amount),
    ])?;
    *pending.entry(service.billing_account_id).or_default() += charge.charge;
    Ok(Ok(event_id))
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

fn live_event(
    tx: &Transaction<'_>,
    reference_id: &str,
    sequence_id: &str,
) -> Result<Option<LiveEvent>> {
    Ok(tx
        .prepare_cached(
            "SELECT id, overwrite_counter, billing_account_id, total_charge FROM usage_events
             WHERE reference_id = ?1 AND sequence_id = ?2 AND voided = 0
             ORDER BY id DESC LIMIT 1",
        )?
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

/// The agreement service an event of `srid` starting at `start` rates against.
fn resolve_service(
    tx: &Transaction<'_>,
    caches: &mut Caches,
    srid: &str,
    start: DateTime<Utc>,
) -> Result<std::result::Result<ServiceRef, Erred>> {
    if !caches.services.contains_key(srid) {
        let found = load_services(tx, srid)?;
        caches.services.insert(srid.to_string(), found);
    }
    let candidates = match caches.services.get(srid) {
        Some(Ok(c)) => c,
        Some(Err(e)) => return Ok(Err(e.clone())),
        None => return Err(Error::Internal("service cache lost an entry".into())),
    };
    let at = crate::time::to_storage(start);
    let holds = |s: &ServiceRef| s.start <= at && s.end.as_ref().is_none_or(|e| at < *e);
    if let Some(s) = candidates.iter().find(|s| holds(s)) {
        return Ok(Ok(s.clone()));
    }
    // Candidates are ordered by start, latest first: report against the nearest one.
    let before = candidates.iter().all(|s| at < s.start);
    let Some(nearest) = candidates
        .iter()
        .find(|s| at >= s.start)
        .or(candidates.last())
    else {
        return Err(Error::Internal("no candidate service".into()));
    };
    let (code, what, when) = if before {
        (ErredCode::BeforeServiceStart, "starts", &nearest.start)
    } else {
        (
            ErredCode::AfterServiceEnd,
            "ended",
            nearest.end.as_ref().unwrap_or(&nearest.start),
        )
    };
    Ok(Err((
        code,
        format!("the event starts at {at}, but the service of '{srid}' {what} at {when}"),
    )))
}

/// Every rateable agreement service carrying `srid`, latest start first; or why none is.
fn load_services(
    tx: &Transaction<'_>,
    srid: &str,
) -> Result<std::result::Result<Vec<ServiceRef>, Erred>> {
    let mut stmt = tx.prepare_cached(
        "SELECT sr.status, a.status, s.id, a.id, sr.id, s.billing_account_id, s.product_id,
                ba.currency_code, a.start_date, a.end_date
         FROM service_resources sr
         JOIN services s ON s.id = sr.service_id
         JOIN agreement_services a ON a.service_id = s.id
         JOIN billing_accounts ba ON ba.id = s.billing_account_id
         WHERE sr.identifier = ?1
         ORDER BY a.start_date DESC, a.id DESC",
    )?;
    let rows = stmt
        .query_map([srid], |r| {
            let resource_status: String = r.get(0)?;
            let service_status: String = r.get(1)?;
            let active =
                resource_status == "ACTIVE" && RATEABLE_STATUSES.contains(&service_status.as_str());
            Ok((
                active,
                ServiceRef {
                    service_id: r.get(2)?,
                    agreement_service_id: r.get(3)?,
                    service_resource_id: r.get(4)?,
                    billing_account_id: r.get(5)?,
                    product_id: r.get(6)?,
                    currency: r.get(7)?,
                    start: r.get(8)?,
                    end: r.get(9)?,
                },
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    if rows.is_empty() {
        return Ok(Err((
            ErredCode::UnknownServiceResource,
            format!("no service carries the service_resource_identifier '{srid}'"),
        )));
    }
    let active: Vec<ServiceRef> = rows
        .into_iter()
        .filter(|(a, _)| *a)
        .map(|(_, s)| s)
        .collect();
    if active.is_empty() {
        return Ok(Err((
            ErredCode::InactiveServiceResource,
            format!(
                "the service_resource_identifier '{srid}' is inactive or its agreement service is not {}",
                RATEABLE_STATUSES.join(" or ")
            ),
        )));
    }
    Ok(Ok(active))
}

/// The billing period of a service holding `at` (stored text); periods load once per call.
fn service_period(
    tx: &Transaction<'_>,
    caches: &mut Caches,
    service_id: i64,
    at: &str,
) -> Result<Option<i64>> {
    let periods = match caches.periods.entry(service_id) {
        Entry::Occupied(e) => e.into_mut(),
        Entry::Vacant(e) => e.insert(
            tx.prepare_cached(
                "SELECT start_date, end_date, id FROM service_periods WHERE service_id = ?1
                 ORDER BY start_date DESC",
            )?
            .query_map([service_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?,
        ),
    };
    Ok(periods
        .iter()
        .find(|(start, end, _)| start.as_str() <= at && at < end.as_str())
        .map(|(_, _, id)| *id))
}

/// The rate plan of a product, loaded once per call.
fn plan<'c>(tx: &Transaction<'_>, caches: &'c mut Caches, product_id: i64) -> Result<&'c [Rule]> {
    if !caches.plans.contains_key(&product_id) {
        let mut rules = load_rules(tx, product_id)?;
        for rule in &mut rules {
            if let Ok(Rate::Table {
                lookup_table_id,
                rows,
                ..
            }) = &mut rule.rate
            {
                if !caches.tables.contains_key(lookup_table_id) {
                    let loaded = load_lookup_rows(tx, *lookup_table_id)?;
                    caches.tables.insert(*lookup_table_id, loaded);
                }
                rows.clone_from(caches.tables.get(lookup_table_id).unwrap_or(&Vec::new()));
            }
        }
        caches.plans.insert(product_id, rules);
    }
    Ok(caches
        .plans
        .get(&product_id)
        .map(Vec::as_slice)
        .unwrap_or(&[]))
}

fn load_rules(tx: &Transaction<'_>, product_id: i64) -> Result<Vec<Rule>> {
    let mut stmt = tx.prepare_cached(
        "SELECT id, name, charge_category_id, uom, min_amount, max_amount, valid_from, valid_to,
                attribute_match, rate_kind, rate
         FROM usage_rules WHERE product_id = ?1 ORDER BY position, id",
    )?;
    let rows = stmt
        .query_map([product_id], |r| {
            let decimal = |i: usize| -> rusqlite::Result<Option<Decimal>> {
                match r.get_ref(i)? {
                    rusqlite::types::ValueRef::Null => Ok(None),
                    v => crate::money::from_sql_text(v).map(Some).map_err(|e| {
                        rusqlite::Error::FromSqlConversionFailure(i, v.data_type(), Box::new(e))
                    }),
                }
            };
            let time = |i: usize| -> rusqlite::Result<Option<DateTime<Utc>>> {
                Ok(r.get::<_, Option<String>>(i)?
                    .as_deref()
                    .and_then(crate::time::from_storage))
            };
            let uom: String = r.get(3)?;
            let kind: String = r.get(9)?;
            let definition: String = r.get(10)?;
            let attribute_match: Option<String> = r.get(8)?;
            let (attribute_match, match_error) = match attribute_match.as_deref().map(str::trim) {
                None | Some("") => (None, None),
                Some(text) => match rating::condition::AttributeMatch::parse(text) {
                    Ok(m) => (Some(m), None),
                    Err(e) => (None, Some(e)),
                },
            };
            let rate = match match_error {
                Some(e) => Err(e),
                None => Rate::parse(&kind, &definition, &uom),
            };
            Ok(Rule {
                id: r.get(0)?,
                name: r.get(1)?,
                charge_category_id: r.get(2)?,
                condition: Condition {
                    uom,
                    min_amount: decimal(4)?,
                    max_amount: decimal(5)?,
                    valid_from: time(6)?,
                    valid_to: time(7)?,
                    attribute_match,
                },
                rate,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

fn load_lookup_rows(tx: &Transaction<'_>, table_id: i64) -> Result<Vec<LookupRow>> {
    let mut stmt = tx.prepare_cached(
        "SELECT key, value, valid_from, valid_to FROM lookup_table_rows
         WHERE lookup_table_id = ?1 ORDER BY id",
    )?;
    let rows = stmt
        .query_map([table_id], |r| {
            let time = |i: usize| -> rusqlite::Result<Option<DateTime<Utc>>> {
                Ok(r.get::<_, Option<String>>(i)?
                    .as_deref()
                    .and_then(crate::time::from_storage))
            };
            Ok(LookupRow {
                key: r.get(0)?,
                value: crate::money::from_sql_text(r.get_ref(1)?)?,
                valid_from: time(2)?,
                valid_to: time(3)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Adds `delta` (exactly) to a billing account's pending charges.
fn add_to_pending_charges(tx: &Transaction<'_>, account: i64, delta: Decimal) -> Result<()> {
    if delta.is_zero() {
        return Ok(());
    }
    let current: String = tx
        .prepare_cached("SELECT pending_charges_total FROM billing_accounts WHERE id = ?1")?
        .query_row([account], |r| r.get(0))?;
    let total = crate::money::parse_decimal(&current).unwrap_or_default() + delta;
    tx.prepare_cached("UPDATE billing_accounts SET pending_charges_total = ?1 WHERE id = ?2")?
        .execute(params![canonical(total), account])?;
    Ok(())
}

/// Columns of a rated event, in the order [`event_from_row`] reads them.
const EVENT_COLUMNS: &str = "e.id, e.total_charge, e.start_time, e.end_time,
    e.service_resource_identifier, e.usage_uom, e.usage_amount, e.reference_id, e.sequence_id,
    e.request_id, e.service_period_id, e.overwrite_counter, e.voided";

/// Reads a row of [`EVENT_COLUMNS`] (charges are filled separately).
fn event_from_row(r: &rusqlite::Row<'_>, tz: Tz) -> rusqlite::Result<RatedEvent> {
    let time = |i: usize| -> rusqlite::Result<String> {
        Ok(crate::time::render(&r.get::<_, String>(i)?, tz))
    };
    Ok(RatedEvent {
        id: Some(r.get::<_, i64>(0)?.to_string()),
        total_charge: crate::money::from_sql_text(r.get_ref(1)?)?,
        start_time: time(2)?,
        end_time: time(3)?,
        service_resource_identifier: r.get(4)?,
        usage_uom: r.get(5)?,
        usage_amount: crate::money::from_sql_text(r.get_ref(6)?)?,
        reference_id: r.get(7)?,
        sequence_id: r.get(8)?,
        request_id: Some(r.get(9)?),
        event_charges: Vec::new(),
        service_period: IdRef {
            id: r
                .get::<_, Option<i64>>(10)?
                .map(|i| i.to_string())
                .unwrap_or_default(),
        },
        overwrite_counter: r.get(11)?,
        voided: r.get(12)?,
    })
}

/// Fills the charges of `events` (which carry ids) from storage.
fn attach_charges(conn: &Connection, events: &mut [RatedEvent]) -> Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = events
        .iter()
        .filter_map(|e| e.id.as_deref().and_then(|i| i.parse().ok()))
        .collect();
    let marks = vec!["?"; ids.len()].join(", ");
    let sql = format!(
        "SELECT c.usage_event_id, c.id, c.charge, c.rate, c.usage_rule_id, cc.charge_category_type,
                cc.id, cc.name, c.usage_uom, c.usage_amount
         FROM usage_event_charges c JOIN charge_categories cc ON cc.id = c.charge_category_id
         WHERE c.usage_event_id IN ({marks}) ORDER BY c.id"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let values: Vec<&dyn ToSql> = ids.iter().map(|i| i as &dyn ToSql).collect();
    let mut by_event: HashMap<String, Vec<EventCharge>> = HashMap::new();
    let rows = stmt.query_map(values.as_slice(), |r| {
        Ok((
            r.get::<_, i64>(0)?.to_string(),
            EventCharge {
                id: Some(r.get::<_, i64>(1)?.to_string()),
                charge: crate::money::from_sql_text(r.get_ref(2)?)?,
                rate: match r.get_ref(3)? {
                    rusqlite::types::ValueRef::Null => Decimal::ZERO,
                    v => crate::money::from_sql_text(v)?,
                },
                usage_rule: IdRef {
                    id: r.get::<_, i64>(4)?.to_string(),
                },
                charge_category: ChargeCategoryRef {
                    charge_category_type: r.get(5)?,
                    id: r.get::<_, i64>(6)?.to_string(),
                    name: r.get(7)?,
                },
                usage_uom: r.get(8)?,
                usage_amount: crate::money::from_sql_text(r.get_ref(9)?)?,
            },
        ))
    })?;
    for row in rows {
        let (event, charge) = row?;
        by_event.entry(event).or_default().push(charge);
    }
    for e in events.iter_mut() {
        if let Some(charges) = e.id.as_ref().and_then(|id| by_event.remove(id)) {
            e.event_charges = charges;
        }
    }
    Ok(())
}

/// The stored events with `ids`, in that order, with their charges.
pub fn fetch_by_ids(conn: &Connection, ids: &[i64], tz: Tz) -> Result<Vec<RatedEvent>> {
    let mut out = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(MAX_EVENTS_PER_CALL) {
        let marks = vec!["?"; chunk.len()].join(", ");
        let sql = format!("SELECT {EVENT_COLUMNS} FROM usage_events e WHERE e.id IN ({marks})");
        let mut stmt = conn.prepare_cached(&sql)?;
        let values: Vec<&dyn ToSql> = chunk.iter().map(|i| i as &dyn ToSql).collect();
        let mut found: HashMap<String, RatedEvent> = stmt
            .query_map(values.as_slice(), |r| event_from_row(r, tz))?
            .map(|r| r.map(|e| (e.id.clone().unwrap_or_default(), e)))
            .collect::<rusqlite::Result<_>>()?;
        for id in chunk {
            if let Some(e) = found.remove(&id.to_string()) {
                out.push(e);
            }
        }
    }
    attach_charges(conn, &mut out)?;
    Ok(out)
}

/// One stored event by id (voided ones included).
pub fn get(conn: &Connection, id: i64, tz: Tz) -> Result<RatedEvent> {
    fetch_by_ids(conn, &[id], tz)?
        .pop()
        .ok_or_else(|| Error::not_found(format!("usage event {id} does not exist")))
}

/// The parameters of which the usage event list needs at least one (the platform refuses
/// to list a tenant's whole usage).
pub const NARROWING_PARAMETERS: &[&str] = &[
    "reference_id",
    "request_id",
    "service_period_id",
    "account_num",
    "billing_account_id",
];

/// Fails with 400 unless `params` names at least one of [`NARROWING_PARAMETERS`].
pub fn require_narrowing(params: &HashMap<String, String>) -> Result<()> {
    if NARROWING_PARAMETERS.iter().any(|p| params.contains_key(*p)) {
        Ok(())
    } else {
        Err(Error::bad_request(format!(
            "listing usage events needs at least one of the parameters {}",
            NARROWING_PARAMETERS.join(", ")
        )))
    }
}

/// Filterable and sortable fields of usage events.
pub const EVENT_FIELDS_WHITELIST: &[FieldSpec] = &[
    FieldSpec::new("id", "e.id", FieldKind::Integer).sortable(),
    FieldSpec::new("request_id", "e.request_id", FieldKind::Text).sortable(),
    FieldSpec::new("reference_id", "e.reference_id", FieldKind::Text).sortable(),
    FieldSpec::new("sequence_id", "e.sequence_id", FieldKind::Text).sortable(),
    FieldSpec::new(
        "service_resource_identifier",
        "e.service_resource_identifier",
        FieldKind::Text,
    )
    .sortable(),
    FieldSpec::new("usage_uom", "e.usage_uom", FieldKind::Enum(USAGE_UOMS)).sortable(),
    FieldSpec::new("usage_amount", "e.usage_amount", FieldKind::Decimal).sortable(),
    FieldSpec::new("total_charge", "e.total_charge", FieldKind::Decimal).sortable(),
    FieldSpec::new("start_time", "e.start_time", FieldKind::DateTime).sortable(),
    FieldSpec::new("end_time", "e.end_time", FieldKind::DateTime).sortable(),
    FieldSpec::new(
        "overwrite_counter",
        "e.overwrite_counter",
        FieldKind::Integer,
    )
    .sortable(),
    FieldSpec::new("voided", "e.voided", FieldKind::Bool).sortable(),
    FieldSpec::new(
        "service_period_id",
        "e.service_period_id",
        FieldKind::Integer,
    )
    .sortable(),
    FieldSpec::new(
        "service_period.id",
        "e.service_period_id",
        FieldKind::Integer,
    )
    .sortable(),
    FieldSpec::new(
        "billing_account_id",
        "e.billing_account_id",
        FieldKind::Integer,
    )
    .sortable(),
    FieldSpec::new("account_num", "ba.account_num", FieldKind::Text).sortable(),
    FieldSpec::new(
        "event_charges.charge",
        "c.charge COLLATE DECIMAL",
        FieldKind::Decimal,
    )
    .via("usage_event_charges c WHERE c.usage_event_id = e.id"),
    FieldSpec::new(
        "event_charges.usage_rule.id",
        "c.usage_rule_id",
        FieldKind::Integer,
    )
    .via("usage_event_charges c WHERE c.usage_event_id = e.id"),
    FieldSpec::new(
        "event_charges.charge_category.id",
        "c.charge_category_id",
        FieldKind::Integer,
    )
    .via("usage_event_charges c WHERE c.usage_event_id = e.id"),
];

/// What the usage event list reads: every event of the tenant, voided ones included.
pub const EVENT_LIST: ListSource = ListSource {
    noun: "usage event",
    fields: EVENT_FIELDS_WHITELIST,
    named_filters: &[
        "reference_id",
        "sequence_id",
        "request_id",
        "service_period_id",
        "account_num",
        "billing_account_id",
    ],
    from: "usage_events e LEFT JOIN billing_accounts ba ON ba.id = e.billing_account_id",
    id: "e.id",
};

/// One page of the usage event list, with the total unless omitted.
pub fn list(
    conn: &Connection,
    params: &ListParams,
    tz: Tz,
) -> Result<(Vec<RatedEvent>, Option<i64>)> {
    let (ids, total) = params.fetch_ids(conn, &EVENT_LIST)?;
    Ok((fetch_by_ids(conn, &ids, tz)?, total))
}
