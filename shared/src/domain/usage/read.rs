//! Reading rated events back: by ids (with their charges), one by id, and a page of the
//! usage event list through the paged-query engine ([`crate::query::list`]).

use super::{ChargeCategoryRef, EventCharge, IdRef, RatedEvent, MAX_EVENTS_PER_CALL};
use crate::domain::catalog::USAGE_UOMS;
use crate::query::{FieldKind, FieldSpec, ListSource, PageQuery};
use crate::{Error, Result};
use chrono_tz::Tz;
use rusqlite::types::ToSql;
use rusqlite::Connection;
use rust_decimal::Decimal;
use std::collections::HashMap;

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
         FROM usage_charges c JOIN charge_categories cc ON cc.id = c.charge_category_id
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
                charge_category: std::sync::Arc::new(ChargeCategoryRef {
                    charge_category_type: r.get(5)?,
                    id: r.get::<_, i64>(6)?.to_string(),
                    name: r.get(7)?,
                }),
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

/// Fails with 400 unless the names of the parameters `given` hold at least one of
/// [`NARROWING_PARAMETERS`].
pub fn require_narrowing<'a>(given: impl IntoIterator<Item = &'a str>) -> Result<()> {
    if given
        .into_iter()
        .any(|name| NARROWING_PARAMETERS.contains(&name))
    {
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
    .via("usage_charges c WHERE c.usage_event_id = e.id"),
    FieldSpec::new(
        "event_charges.usage_rule.id",
        "c.usage_rule_id",
        FieldKind::Integer,
    )
    .via("usage_charges c WHERE c.usage_event_id = e.id"),
    FieldSpec::new(
        "event_charges.charge_category.id",
        "c.charge_category_id",
        FieldKind::Integer,
    )
    .via("usage_charges c WHERE c.usage_event_id = e.id"),
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
    query: &PageQuery,
    tz: Tz,
) -> Result<(Vec<RatedEvent>, Option<i64>)> {
    let (ids, total) = query.fetch_ids(conn, &EVENT_LIST)?;
    Ok((fetch_by_ids(conn, &ids, tz)?, total))
}
