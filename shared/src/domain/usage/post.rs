//! Posting a bulk call: each event validated, checked against earlier events of the call
//! and live events of the tenant, resolved to its agreement service and the service period
//! holding its start, rated under its product's rate plan, and stored (an overwritten event
//! voided); the billing accounts' pending charges move once per call by the difference.
//! Simulation is the same inside a savepoint that is rolled back.

use super::rate_plan::RatePlans;
use super::{
    BulkOutcome, BulkRequest, ChargeCategoryRef, ErredCode, ErredEvent, EventCharge, IdRef, Mode,
    RatedEvent, EVENT_FIELDS, MAX_ID_LEN, RATEABLE_STATUSES,
};
use crate::domain::catalog::USAGE_UOMS;
use crate::money::canonical;
use crate::rating::{self, Attributes, RatingError, Usage};
use crate::{Error, Result};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use rusqlite::{params, CachedStatement, OptionalExtension, Transaction};
use rust_decimal::Decimal;
use serde_json::value::RawValue;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;

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
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut events = Vec::with_capacity(req.usage_events.len());
    for raw in &req.usage_events {
        events.push(parse_event(raw, tz).and_then(|ev| {
            if let Some((r, s)) = ev.pair() {
                if !seen.insert((r.to_string(), s.to_string())) {
                    return Err((
                        ErredCode::DuplicateInRequest,
                        format!("an earlier event of this call has reference_id '{r}' and sequence_id '{s}'"),
                    ));
                }
            }
            Ok(ev)
        }));
    }
    Ok(CheckedEvents(events))
}

/// What a bulk call stored (or, simulated, would have), event by event in submission order:
/// the write's part of the answer. [`Stored::render`] makes the answer from it after the
/// write, so rendering (times in the tenant's zone, texts copied into every event) does not
/// hold the tenant's writer.
pub struct Stored {
    /// The call's request id; none in a simulation, whose ids are then numbered `-n`.
    request_id: Option<String>,
    events: Vec<std::result::Result<StoredEvent, Erred>>,
}

/// One rated event as stored: what the answer needs beyond the submitted event.
struct StoredEvent {
    id: i64,
    period_id: i64,
    overwrite_counter: i64,
    charge: rating::Charge,
    category: Arc<ChargeCategoryRef>,
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
        let start_time = crate::time::render(&ev.stored_start, tz);
        let end_time = match &ev.stored_end {
            Some(end) => crate::time::render(end, tz),
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
                charge_category: (*self.category).clone(),
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

/// A validated event.
#[derive(Debug)]
pub(super) struct Parsed {
    pub(super) start: DateTime<Utc>,
    /// `start` as stored, and the end when it differs (made here, before the write).
    stored_start: String,
    stored_end: Option<String>,
    /// `amount`'s canonical text, as stored.
    amount_text: String,
    pub(super) srid: String,
    pub(super) uom: String,
    pub(super) amount: Decimal,
    pub(super) reference_id: Option<String>,
    pub(super) sequence_id: Option<String>,
}

impl Parsed {
    fn pair(&self) -> Option<(&str, &str)> {
        Some((self.reference_id.as_deref()?, self.sequence_id.as_deref()?))
    }
}

/// Why an event was erred: its code and message.
type Erred = (ErredCode, String);

/// The service an SRID rates against.
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
    /// Shared, so that an event takes its service without copying its texts.
    services: HashMap<String, std::result::Result<Vec<Rc<ServiceRef>>, Erred>>,
    plans: RatePlans,
    /// The billing period holding a start (stored text) per service, or none.
    periods: HashMap<(i64, String), Option<i64>>,
    /// Stored pending charges per billing account: they change only at the end of the call
    /// ([`add_to_pending_charges`]), so one read per account serves every event.
    pending_totals: HashMap<i64, Decimal>,
    /// Charge categories by id, as a rated event's charges embed them.
    categories: HashMap<i64, Arc<ChargeCategoryRef>>,
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
    let mut caches = Caches::default();
    let mut stmts = Statements::prepare(tx)?;
    let mut pending: HashMap<i64, Decimal> = HashMap::new();
    let mut stored = Vec::with_capacity(events.0.len());
    for checked in &events.0 {
        stored.push(match checked {
            Ok(ev) => rate_and_store(
                tx,
                &mut stmts,
                &mut caches,
                ev,
                req.mode,
                request_id,
                &now,
                &mut pending,
            )?,
            Err(e) => Err(e.clone()),
        });
    }
    for (account, delta) in pending {
        add_to_pending_charges(tx, account, delta)?;
    }
    Ok(stored)
}

/// The fields of one submitted event, as raw JSON borrowed from the request: read in one
/// pass into fixed slots (no per-field map), the first unknown name kept for the error. A
/// repeated name keeps its last value, as a JSON object read into a map would.
#[derive(Default)]
struct EventFields<'a> {
    /// By position in [`EVENT_FIELDS`].
    slots: [Option<&'a RawValue>; EVENT_FIELDS.len()],
    unknown: Option<String>,
}

impl<'de> serde::Deserialize<'de> for EventFields<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_map(FieldsVisitor)
    }
}

struct FieldsVisitor;

impl<'de> serde::de::Visitor<'de> for FieldsVisitor {
    type Value = EventFields<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a usage event object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut fields = EventFields::default();
        while let Some(key) = map.next_key::<FieldName>()? {
            let value: &'de RawValue = map.next_value()?;
            match key {
                FieldName::Known(i) => fields.slots[i] = Some(value),
                FieldName::Unknown(name) => {
                    fields.unknown.get_or_insert(name);
                }
            }
        }
        Ok(fields)
    }
}

/// A key of a submitted event: its position in [`EVENT_FIELDS`], or the unknown name.
enum FieldName {
    Known(usize),
    Unknown(String),
}

impl<'de> serde::Deserialize<'de> for FieldName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct KeyVisitor;
        impl serde::de::Visitor<'_> for KeyVisitor {
            type Value = FieldName;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<FieldName, E> {
                Ok(match EVENT_FIELDS.iter().position(|f| *f == v) {
                    Some(i) => FieldName::Known(i),
                    None => FieldName::Unknown(v.to_string()),
                })
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

impl<'a> EventFields<'a> {
    /// The value of `name` (one of [`EVENT_FIELDS`]) unless absent or null.
    fn present(&self, name: &str) -> Option<&'a RawValue> {
        let i = EVENT_FIELDS.iter().position(|f| *f == name)?;
        self.slots[i].filter(|v| v.get() != "null")
    }
}

/// Validates one submitted event.
pub(super) fn parse_event(raw: &RawValue, tz: Tz) -> std::result::Result<Parsed, Erred> {
    let invalid = |m: String| (ErredCode::InvalidField, m);
    let fields: EventFields<'_> = serde_json::from_str(raw.get())
        .map_err(|_| invalid("a usage event must be a JSON object".into()))?;
    if let Some(unknown) = &fields.unknown {
        return Err(invalid(format!(
            "unknown field '{unknown}'; a usage event has {}",
            EVENT_FIELDS.join(", ")
        )));
    }
    let present = |name: &str| fields.present(name);
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
        crate::time::parse_date_or_datetime(&s, tz)
            .ok_or_else(|| invalid(format!("{name}: {}", crate::time::not_a_date(&s))))
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
    let amount_text = amount_raw.get();
    if !amount_text.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        return Err(invalid(format!(
            "usage_amount must be a number, found {amount_text}"
        )));
    }
    let amount = crate::money::parse_amount(amount_text)
        .map_err(|e| invalid(format!("usage_amount: {e}")))?;
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
        stored_start: crate::time::to_storage(start),
        stored_end: (end != start).then(|| crate::time::to_storage(end)),
        amount_text: canonical(amount),
        start,
        srid,
        uom,
        amount,
        reference_id,
        sequence_id,
    })
}

/// The statements posting runs for every event, prepared once per call (the statement
/// cache would otherwise hash each statement's text for every event).
struct Statements<'t> {
    live_event: CachedStatement<'t>,
    insert_event: CachedStatement<'t>,
}

impl<'t> Statements<'t> {
    fn prepare(tx: &'t Transaction<'_>) -> Result<Statements<'t>> {
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
fn rate_and_store(
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
        Entry::Vacant(e) => *e.insert(pending_total(tx, service.billing_account_id)?),
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
pub(super) const LIVE_EVENT_SQL: &str =
    "SELECT id, overwrite_counter, billing_account_id, total_charge FROM usage_events
     WHERE reference_id = ?1 AND sequence_id = ?2
       AND (CASE WHEN voided = 0 THEN 0 ELSE id END) = 0";

/// The agreement service an event of `srid` starting at `start` rates against.
fn resolve_service(
    tx: &Transaction<'_>,
    caches: &mut Caches,
    srid: &str,
    at: &str,
) -> Result<std::result::Result<Rc<ServiceRef>, Erred>> {
    if !caches.services.contains_key(srid) {
        let found = load_services(tx, srid)?;
        caches.services.insert(srid.to_string(), found);
    }
    let candidates = match caches.services.get(srid) {
        Some(Ok(c)) => c,
        Some(Err(e)) => return Ok(Err(e.clone())),
        None => return Err(Error::Internal("service cache lost an entry".into())),
    };
    let holds =
        |s: &Rc<ServiceRef>| s.start.as_str() <= at && s.end.as_deref().is_none_or(|e| at < e);
    if let Some(s) = candidates.iter().find(|s| holds(s)) {
        return Ok(Ok(s.clone()));
    }
    // Candidates are ordered by start, latest first: report against the nearest one.
    let before = candidates.iter().all(|s| at < s.start.as_str());
    let Some(nearest) = candidates
        .iter()
        .find(|s| at >= s.start.as_str())
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
) -> Result<std::result::Result<Vec<Rc<ServiceRef>>, Erred>> {
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
    let active: Vec<Rc<ServiceRef>> = rows
        .into_iter()
        .filter(|(a, _)| *a)
        .map(|(_, s)| Rc::new(s))
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

/// The billing period of a service holding `at` (stored text): the latest starting at or
/// before `at` that ends after it. One indexed lookup (service_periods_service) per service
/// and start, remembered for the call: a service may have years of periods, and a call
/// rarely needs more than a few of them.
fn service_period(
    tx: &Transaction<'_>,
    caches: &mut Caches,
    service_id: i64,
    at: &str,
) -> Result<Option<i64>> {
    if let Some(found) = caches.periods.get(&(service_id, at.to_string())) {
        return Ok(*found);
    }
    let found = tx
        .prepare_cached(
            "SELECT id FROM service_periods
             WHERE service_id = ?1 AND start_date <= ?2 AND ?2 < end_date
             ORDER BY start_date DESC LIMIT 1",
        )?
        .query_row(params![service_id, at], |r| r.get(0))
        .optional()?;
    caches.periods.insert((service_id, at.to_string()), found);
    Ok(found)
}

/// Adds `delta` (exactly) to a billing account's pending charges.
fn add_to_pending_charges(tx: &Transaction<'_>, account: i64, delta: Decimal) -> Result<()> {
    if delta.is_zero() {
        return Ok(());
    }
    let total = crate::money::checked_add(
        pending_total(tx, account)?,
        delta,
        &format!("the pending charges of billing account {account}"),
    )?;
    tx.prepare_cached("UPDATE billing_accounts SET pending_charges_total = ?1 WHERE id = ?2")?
        .execute(params![canonical(total), account])?;
    Ok(())
}

/// A billing account's stored pending charges.
fn pending_total(tx: &Transaction<'_>, account: i64) -> Result<Decimal> {
    let current: String = tx
        .prepare_cached("SELECT pending_charges_total FROM billing_accounts WHERE id = ?1")?
        .query_row([account], |r| r.get(0))?;
    Ok(crate::money::parse_decimal(&current).unwrap_or_default())
}
