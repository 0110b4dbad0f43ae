//! Storing the checked events of a call: the live events of all its pairs looked up at once,
//! each event rated under its product's plan (a live pair answered DUPLICATE_EVENT under
//! FAIL_ON_EXISTING), the account's pending total kept within bounds, an overwritten event
//! voided (OVERWRITE_ON_EXISTING); then the call's rated events inserted together, each with
//! its one charge, and the pending charges moved once per call.
//!
//! Why the events are inserted together at the end of the call, not one by one: usage_events
//! is an AUTOINCREMENT table (ids are never handed out again after a restore), and SQLite
//! reads and writes the table's row of sqlite_sequence on every execution of an INSERT. One
//! statement of many rows pays that once; an event's id is known once the statement ran
//! (ids ascend in the order of the rows). Nothing in the call reads an inserted event back
//! before then: a pair appears at most once per call (`DUPLICATE_IN_REQUEST`), and overwritten
//! events are voided before the insert, so the pair index never meets the new row.

use super::catalogue::Catalogue;
use super::parse::Parsed;
use super::services::{resolve_service, service_period};
use super::{Caches, Erred, StoredEvent};
use crate::domain::usage::{ChargeCategoryRef, ErredCode, Mode};
use crate::money::{canonical, push_canonical};
use crate::rating::{self, Attributes, RatingError, Usage};
use crate::{Error, Result};
use rusqlite::types::ToSql;
use rusqlite::{params, Transaction};
use rust_decimal::Decimal;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

/// A [`LiveEvent`] from a row whose first four columns are [`LIVE_EVENTS_SQL`]'s.
fn live_event_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<LiveEvent> {
    Ok(LiveEvent {
        id: r.get(0)?,
        overwrite_counter: r.get(1)?,
        billing_account_id: r.get(2)?,
        total_charge: crate::money::from_sql_text(r.get_ref(3)?)?,
    })
}

/// The rows a statement of the call's inserts or lookups holds at most; a call's rows go in
/// chunks of these sizes, largest first (50 events: 32 + 16 + 2), so that a handful of
/// statement texts, each prepared once per connection, serve every number of events.
const CHUNKS: [usize; 6] = [32, 16, 8, 4, 2, 1];

/// The columns of an event's row, in the order of [`Unstored::bind`].
const EVENT_COLUMNS: &str = "request_id, service_resource_identifier, service_resource_id,
    agreement_service_id, billing_account_id, service_period_id, start_time, end_time,
    usage_uom, usage_amount, reference_id, sequence_id, total_charge, overwrite_counter, voided,
    created_at, usage_rule_id, charge_category_id, charge_rate, charge_usage_uom,
    charge_usage_amount";

/// Parameters per event row (`voided` is the literal 0).
const EVENT_PARAMS: usize = 20;

/// The texts of the insert of `n` rows, one per size of [`CHUNKS`].
///
/// `OR FAIL`, not the default ABORT: an ABORT statement of many rows keeps a statement
/// journal (every page it touches copied first, to undo the rows before a failing one),
/// which cost a bulk post more than the inserts saved. Nothing is to fail here (the pairs
/// were looked up, the values checked); if a row did, the call's error rolls its whole
/// transaction back, the rows before it included. The ids are not returned (`RETURNING`
/// collects the rows in a table of its own): an AUTOINCREMENT table numbers the rows of one
/// statement one after another, so they are the `n` ids ending at the last one inserted.
static INSERT_SQL: LazyLock<Vec<String>> = LazyLock::new(|| {
    CHUNKS
        .iter()
        .map(|&n| {
            let row = |i: usize| {
                let p: Vec<String> = (1..=EVENT_PARAMS)
                    .map(|k| format!("?{}", i * EVENT_PARAMS + k))
                    .collect();
                // voided (0) sits between overwrite_counter (the 14th) and created_at.
                format!("({}, 0, {})", p[..14].join(", "), p[14..].join(", "))
            };
            let rows: Vec<String> = (0..n).map(row).collect();
            format!(
                "INSERT OR FAIL INTO usage_events ({EVENT_COLUMNS}) VALUES {}",
                rows.join(", ")
            )
        })
        .collect()
});

/// The columns of an event's row as posting inserts them ([`EVENT_COLUMNS`]; `voided` is
/// the one not bound), for the bulk bench's storage limit (`functions/usage/benches/bulk.rs`),
/// which stores a posted call's rows again with posting's own statements.
#[cfg(feature = "test-support")]
pub fn event_columns() -> &'static str {
    EVENT_COLUMNS
}

/// Posting's insert of `rows` event rows ([`INSERT_SQL`]), for the same bench: `None` for a
/// number of rows that is not one of its chunk sizes ([`CHUNKS`]).
#[cfg(feature = "test-support")]
pub fn insert_statement(rows: usize) -> Option<&'static str> {
    let at = CHUNKS.iter().position(|&n| n == rows)?;
    INSERT_SQL.get(at).map(String::as_str)
}

/// The texts of the lookup of the live events of `n` pairs, one per size of [`CHUNKS`]: each
/// pair met through the whole key of usage_events_pair (its third key is the CASE of
/// migration 0007, written the same so that SQLite looks the event up through it).
pub(in crate::domain::usage) static LIVE_EVENTS_SQL: LazyLock<Vec<String>> = LazyLock::new(|| {
    CHUNKS
        .iter()
        .map(|&n| {
            let pairs: Vec<String> = (0..n)
                .map(|i| format!("(?{}, ?{})", 2 * i + 1, 2 * i + 2))
                .collect();
            format!(
                "SELECT e.id, e.overwrite_counter, e.billing_account_id, e.total_charge,
                        e.reference_id, e.sequence_id
                 FROM (VALUES {}) AS p
                 JOIN usage_events e ON e.reference_id = p.column1 AND e.sequence_id = p.column2
                   AND (CASE WHEN e.voided = 0 THEN 0 ELSE e.id END) = 0",
                pairs.join(", ")
            )
        })
        .collect()
});

/// Splits `len` items into chunks of the sizes of [`CHUNKS`]: (size index, start) of each.
fn chunks(len: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, &n) in CHUNKS.iter().enumerate() {
        while len - start >= n {
            out.push((i, start));
            start += n;
        }
    }
    out
}

/// The live events of a call's pairs: by reference_id, then sequence_id (looked up with the
/// event's own texts, no key made per event).
pub(super) type LiveByPair = HashMap<String, HashMap<String, LiveEvent>>;

/// The live events of the pairs of `events`, looked up once per call before any is rated.
/// Each pair appears at most once per call (`DUPLICATE_IN_REQUEST`), so an event's live event
/// is the same whether looked up now or when it is rated: voiding an earlier event of the call
/// (OVERWRITE_ON_EXISTING) only ever touches that event's own pair.
pub(super) fn live_events(tx: &Transaction<'_>, events: &[&Parsed]) -> Result<LiveByPair> {
    let pairs: Vec<(&str, &str)> = events.iter().filter_map(|ev| ev.pair()).collect();
    let mut live = LiveByPair::new();
    for (size, start) in chunks(pairs.len()) {
        let chunk = &pairs[start..start + CHUNKS[size]];
        let params: Vec<&dyn ToSql> = chunk
            .iter()
            .flat_map(|(r, s)| [r as &dyn ToSql, s as &dyn ToSql])
            .collect();
        let mut stmt = tx.prepare_cached(&LIVE_EVENTS_SQL[size])?;
        let mut rows = stmt.query(params.as_slice())?;
        while let Some(row) = rows.next()? {
            live.entry(row.get(4)?)
                .or_default()
                .insert(row.get(5)?, live_event_of(row)?);
        }
    }
    Ok(live)
}

/// A rated event not inserted yet: what its row holds besides the event and its answer.
pub(super) struct Unstored<'e> {
    ev: &'e Parsed,
    service_resource_id: i64,
    agreement_service_id: i64,
    billing_account_id: i64,
}

impl Unstored<'_> {
    /// Its row's values, in the order of [`EVENT_COLUMNS`] (without `voided`), with its
    /// charge's decimals rendered into `texts` (total, rate, amount) first.
    fn bind<'a>(
        &'a self,
        stored: &'a StoredEvent,
        texts: &'a [&'a str],
        request_id: &'a &'a str,
        now: &'a &'a str,
    ) -> [&'a dyn ToSql; EVENT_PARAMS] {
        let ev = self.ev;
        [
            request_id,
            &ev.srid,
            &self.service_resource_id,
            &self.agreement_service_id,
            &self.billing_account_id,
            &stored.period_id,
            &ev.stored_start,
            match &ev.stored_end {
                Some(end) => end as &dyn ToSql,
                None => &ev.stored_start,
            },
            &ev.uom,
            &ev.amount_text,
            &ev.reference_id,
            &ev.sequence_id,
            &texts[0],
            &stored.overwrite_counter,
            now,
            &stored.charge.usage_rule_id,
            &stored.charge.charge_category_id,
            &texts[1],
            &stored.charge.usage_uom,
            &texts[2],
        ]
    }
}

/// Inserts the call's rated events, in chunks ([`CHUNKS`]), and gives each answer in
/// `stored` its id: `unstored` pairs each row with the place of its answer in `stored`.
pub(super) fn insert_events(
    tx: &Transaction<'_>,
    request_id: &str,
    now: &str,
    unstored: &[(usize, Unstored<'_>)],
    stored: &mut [std::result::Result<StoredEvent, Erred>],
) -> Result<()> {
    for (size, start) in chunks(unstored.len()) {
        let chunk = &unstored[start..start + CHUNKS[size]];
        let inserted = {
            let answers = chunk
                .iter()
                .map(|(at, _)| match stored.get(*at) {
                    Some(Ok(s)) => Ok(s),
                    _ => Err(Error::Internal("a rated event has no stored answer".into())),
                })
                .collect::<Result<Vec<&StoredEvent>>>()?;
            // The charges' decimals as stored (total, rate, amount per row), written into one
            // buffer, then borrowed by the statement's parameters.
            let mut buffer = String::with_capacity(chunk.len() * 24);
            let mut ends = Vec::with_capacity(chunk.len() * 3);
            for c in answers.iter().map(|a| &a.charge) {
                for d in [c.charge, c.rate, c.usage_amount] {
                    push_canonical(&mut buffer, d);
                    ends.push(buffer.len());
                }
            }
            let mut start = 0;
            let texts: Vec<&str> = ends
                .iter()
                .map(|&end| {
                    let text = buffer.get(start..end).unwrap_or_default();
                    start = end;
                    text
                })
                .collect();
            let mut params: Vec<&dyn ToSql> = Vec::with_capacity(chunk.len() * EVENT_PARAMS);
            for (((_, u), answer), texts) in chunk.iter().zip(&answers).zip(texts.chunks(3)) {
                params.extend(u.bind(answer, texts, &request_id, &now));
            }
            tx.prepare_cached(&INSERT_SQL[size])?
                .execute(params.as_slice())?
        };
        let last = tx.last_insert_rowid();
        let first = i64::try_from(chunk.len())
            .ok()
            .and_then(|n| last.checked_sub(n - 1))
            .filter(|_| inserted == chunk.len())
            .ok_or_else(|| {
                Error::Internal(format!(
                    "{inserted} usage events inserted of {}",
                    chunk.len()
                ))
            })?;
        for (id, (at, _)) in (first..).zip(chunk) {
            if let Some(Ok(s)) = stored.get_mut(*at) {
                s.id = id;
            }
        }
    }
    Ok(())
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

/// Rates one valid event, answering it as it will be stored (what reading it back by id
/// would answer, its id given by [`insert_events`] at the end of the call) with the row to
/// insert, or its erred reason; the outer error is a storage failure that aborts the call.
///
/// The live event of its pair comes from the call's one lookup (`live`, from
/// [`live_events`]): under FAIL_ON_EXISTING an event whose pair is live is answered
/// DUPLICATE_EVENT, whatever else is wrong with it; under OVERWRITE_ON_EXISTING that event is
/// voided if this one is rated.
pub(super) fn rate_and_store<'e>(
    tx: &Transaction<'_>,
    caches: &mut Caches<'_>,
    ev: &'e Parsed,
    mode: Mode,
    live: &LiveByPair,
    now: &str,
    pending: &mut HashMap<i64, Decimal>,
) -> Result<std::result::Result<(StoredEvent, Unstored<'e>), Erred>> {
    let found = ev
        .pair()
        .and_then(|(r, s)| live.get(r).and_then(|by_sequence| by_sequence.get(s)));
    let overwritten = match (found, mode) {
        (Some(l), Mode::FailOnExisting) => return Ok(Err(duplicate_event(l, ev))),
        (found, Mode::OverwriteOnExisting) => found,
        (None, Mode::FailOnExisting) => None,
    };
    rate_and_store_found(tx, caches, ev, overwritten, now, pending)
}

/// [`rate_and_store`] once the live event the event overwrites (if any) is known.
fn rate_and_store_found<'e>(
    tx: &Transaction<'_>,
    caches: &mut Caches<'_>,
    ev: &'e Parsed,
    live: Option<&LiveEvent>,
    now: &str,
    pending: &mut HashMap<i64, Decimal>,
) -> Result<std::result::Result<(StoredEvent, Unstored<'e>), Erred>> {
    let start = &ev.stored_start;
    let service = match resolve_service(tx, caches.catalogue, &ev.srid, start)? {
        Ok(s) => s,
        Err(e) => return Ok(Err(e)),
    };
    let Some(period_id) = service_period(tx, caches.catalogue, service.service_id, start)? else {
        return Ok(Err((
            ErredCode::NoServicePeriod,
            format!(
                "the service of '{}' has no billing period holding {start}",
                ev.srid
            ),
        )));
    };
    let plan = caches.catalogue.plans.get(tx, service.product_id)?;
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
    let replaced = match live {
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

    let counter = match live {
        Some(l) => {
            tx.prepare_cached("UPDATE usage_events SET voided = 1, voided_at = ?1 WHERE id = ?2")?
                .execute(params![now, l.id])?;
            l.overwrite_counter + 1
        }
        None => 0,
    };
    if let Some(l) = live {
        if let Some(account) = l.billing_account_id {
            let entry = pending.entry(account).or_default();
            // Within bounds: both are totals of accepted charges.
            *entry = entry.saturating_sub(l.total_charge);
        }
    }
    let entry = pending.entry(service.billing_account_id).or_default();
    // Checked above: the sum is within bounds.
    *entry = entry.saturating_add(charge.charge);
    let category = charge_category(tx, caches.catalogue, charge.charge_category_id)?;
    let row = Unstored {
        ev,
        service_resource_id: service.service_resource_id,
        agreement_service_id: service.agreement_service_id,
        billing_account_id: service.billing_account_id,
    };
    Ok(Ok((
        StoredEvent {
            // Given by insert_events.
            id: 0,
            period_id,
            overwrite_counter: counter,
            charge,
            category,
        },
        row,
    )))
}

/// A charge category as a rated event's charges embed it; loaded into the catalogue once.
fn charge_category(
    tx: &Transaction<'_>,
    catalogue: &mut Catalogue,
    id: i64,
) -> Result<Arc<ChargeCategoryRef>> {
    if let Some(c) = catalogue.categories.get(&id) {
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
    catalogue.categories.insert(id, found.clone());
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
pub(super) struct LiveEvent {
    id: i64,
    overwrite_counter: i64,
    billing_account_id: Option<i64>,
    total_charge: Decimal,
}
