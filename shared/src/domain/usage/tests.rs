//! Posting rules on a real tenant database (in memory, migrated, with the demo seed in
//! America/Chicago): which service period an event is rated in, and the overwrite chain.
//! The demo SRID `srv-compute-0001` is service 1 of account 1, rated 0.12 per HOUR.

use super::*;
use crate::testing::demo_db;
use rusqlite::{Connection, Transaction};
use serde_json::json;

const SRID: &str = "srv-compute-0001";

fn tz() -> chrono_tz::Tz {
    "America/Chicago".parse().unwrap()
}

fn request(mode: &str, events: serde_json::Value) -> BulkRequest {
    serde_json::from_str(&json!({"mode": mode, "usage_events": events}).to_string()).unwrap()
}

fn hours(amount: u32, start: &str) -> serde_json::Value {
    json!({"service_resource_identifier": SRID, "usage_uom": "HOUR",
           "usage_amount": amount, "start_time": start,
           "reference_id": "ref-1", "sequence_id": "1"})
}

fn pending(tx: &Transaction<'_>) -> Decimal {
    let text: String = tx
        .query_row(
            "SELECT pending_charges_total FROM billing_accounts WHERE id = 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    crate::money::parse_decimal(&text).unwrap()
}

fn period_start(conn: &Connection, event: &RatedEvent) -> String {
    conn.query_row(
        "SELECT start_date FROM service_periods WHERE id = ?1 AND service_id = 1",
        [event.service_period.id.parse::<i64>().unwrap()],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
fn an_event_is_rated_in_the_period_holding_its_start_in_the_tenant_zone() {
    let mut conn = demo_db(tz());
    let tx = conn.transaction().unwrap();
    let mut events = Vec::new();
    for (i, start) in [
        "2026-02-28T23:59:59-06:00",
        "2026-03-01T00:00:00-06:00",
        "2026-03-01T05:59:59Z",
    ]
    .into_iter()
    .enumerate()
    {
        let mut event = hours(1, start);
        event["sequence_id"] = json!(i.to_string());
        events.push(event);
    }
    let outcome = post(&tx, &request("FAIL_ON_EXISTING", json!(events)), tz()).unwrap();
    assert!(
        outcome.erred_events.is_empty(),
        "{:?}",
        outcome.erred_events
    );
    let starts: Vec<String> = outcome
        .rated_events
        .iter()
        .map(|e| period_start(&tx, e))
        .collect();
    // Periods are local calendar months: March starts at local midnight (06:00 UTC), the
    // start is inclusive and the end exclusive, whatever offset the event was written in.
    assert_eq!(
        starts,
        [
            "2026-02-01T06:00:00.000Z",
            "2026-03-01T06:00:00.000Z",
            "2026-02-01T06:00:00.000Z"
        ]
    );
}

#[test]
fn two_successive_overwrites_void_both_earlier_events_and_move_pending_charges() {
    let mut conn = demo_db(tz());
    let tx = conn.transaction().unwrap();
    let before = pending(&tx);
    let start = "2026-03-10T10:00:00-05:00";
    let mut ids = Vec::new();
    for (mode, amount) in [
        ("FAIL_ON_EXISTING", 1),
        ("OVERWRITE_ON_EXISTING", 2),
        ("OVERWRITE_ON_EXISTING", 5),
    ] {
        let outcome = post(&tx, &request(mode, json!([hours(amount, start)])), tz()).unwrap();
        assert!(
            outcome.erred_events.is_empty(),
            "{:?}",
            outcome.erred_events
        );
        let event = &outcome.rated_events[0];
        assert_eq!(event.overwrite_counter, i64::try_from(ids.len()).unwrap());
        ids.push(event.id.clone().unwrap().parse::<i64>().unwrap());
    }
    let stored = fetch_by_ids(&tx, &ids, tz()).unwrap();
    let voided: Vec<bool> = stored.iter().map(|e| e.voided).collect();
    assert_eq!(voided, [true, true, false]);
    // Only the live event counts: 5 hours at 0.12.
    assert_eq!(pending(&tx) - before, Decimal::new(60, 2));

    let again = post(
        &tx,
        &request("FAIL_ON_EXISTING", json!([hours(1, start)])),
        tz(),
    )
    .unwrap();
    assert!(again.rated_events.is_empty());
    assert_eq!(again.erred_events[0].code, ErredCode::DuplicateEvent);
    assert!(
        again.erred_events[0]
            .message
            .starts_with(&format!("usage event {} already has", ids[2])),
        "the refusal names the live event: {}",
        again.erred_events[0].message
    );
}

#[test]
fn a_simulation_stores_nothing() {
    let mut conn = demo_db(tz());
    let tx = conn.transaction().unwrap();
    let before = pending(&tx);
    let req = request("FAIL_ON_EXISTING", json!([hours(3, "2026-03-10")]));
    let outcome = simulate(&tx, &req, tz()).unwrap();
    assert_eq!(outcome.rated_events[0].total_charge, Decimal::new(36, 2));
    // simulated ids name nothing stored: -1, -2, ... in answer order; no request id
    let event = &outcome.rated_events[0];
    assert_eq!(event.id.as_deref(), Some("-1"));
    assert_eq!(event.event_charges[0].id.as_deref(), Some("-1"));
    assert_eq!(event.request_id, None);
    let stored: i64 = tx
        .query_row("SELECT COUNT(*) FROM usage_events", [], |r| r.get(0))
        .unwrap();
    assert_eq!((stored, pending(&tx)), (0, before));
}

#[test]
fn pending_charges_never_leave_the_bound_on_amounts() {
    let mut conn = demo_db(tz());
    let tx = conn.transaction().unwrap();
    let before = pending(&tx);
    // 999999999999999999 HOUR at 0.12 = 119999999999999999.88 each: eight fit under 10^18,
    // the ninth would not and errs; an amount of 19 integer digits errs as a field
    let events: Vec<serde_json::Value> = (0..9)
        .map(|i| {
            let mut e = hours(1, "2026-02-10");
            e["usage_amount"] = json!(999_999_999_999_999_999_u64);
            e["sequence_id"] = json!(i.to_string());
            e
        })
        .chain([{
            let mut e = hours(1, "2026-02-10");
            e["usage_amount"] = json!(1_000_000_000_000_000_000_u64);
            e["sequence_id"] = json!("too-big");
            e
        }])
        .collect();
    let outcome = post(&tx, &request("FAIL_ON_EXISTING", json!(events)), tz()).unwrap();
    assert_eq!(outcome.rated_events.len(), 8);
    assert_eq!(outcome.erred_events.len(), 2);
    assert!(outcome
        .erred_events
        .iter()
        .all(|e| e.code == ErredCode::InvalidField));
    let charge: Decimal = "119999999999999999.88".parse().unwrap();
    assert_eq!(pending(&tx) - before, charge * Decimal::from(8));
}

#[test]
fn the_answer_of_a_post_is_exactly_the_events_read_back() {
    // The answer is built from the values inserted, not read back: it must equal, field by
    // field and digit by digit, what reading the same events back by id answers.
    let mut conn = demo_db(tz());
    let tx = conn.transaction().unwrap();
    let kinds = [
        ("srv-compute-0001", "MINUTE", json!(90.5)),
        ("srv-transfer-0001", "MEGABYTE", json!(150000)),
        ("meter-0001", "WATTS_PER_HOUR", json!(2500)),
        ("mkt-0001", "CURRENCY", json!(12.345)),
        ("api-0001", "COUNT", json!(1500)),
        (SRID, "HOUR", json!(0.0000001)),
    ];
    let events: Vec<serde_json::Value> = kinds
        .iter()
        .enumerate()
        .map(|(i, (srid, uom, amount))| {
            let mut e = json!({"service_resource_identifier": srid, "usage_uom": uom,
                "usage_amount": amount, "start_time": "2026-02-01T10:00:00-06:00",
                "end_time": "2026-02-01T17:30:00.25Z"});
            if i % 2 == 0 {
                e["reference_id"] = json!("same");
                e["sequence_id"] = json!(i.to_string());
            }
            e
        })
        .collect();
    for mode in ["FAIL_ON_EXISTING", "OVERWRITE_ON_EXISTING"] {
        let outcome = post(&tx, &request(mode, json!(events)), tz()).unwrap();
        assert!(
            outcome.erred_events.is_empty(),
            "{:?}",
            outcome.erred_events
        );
        let ids: Vec<i64> = outcome
            .rated_events
            .iter()
            .map(|e| e.id.as_deref().unwrap().parse().unwrap())
            .collect();
        let stored = fetch_by_ids(&tx, &ids, tz()).unwrap();
        assert_eq!(
            serde_json::to_string(&outcome.rated_events).unwrap(),
            serde_json::to_string(&stored).unwrap()
        );
    }
}

#[test]
fn the_database_keeps_one_live_event_per_pair_and_posting_finds_it_through_the_index() {
    let mut conn = demo_db(tz());
    let tx = conn.transaction().unwrap();
    post(
        &tx,
        &request("FAIL_ON_EXISTING", json!([hours(1, "2026-02-01")])),
        tz(),
    )
    .unwrap();
    for _ in 0..2 {
        let out = post(
            &tx,
            &request("OVERWRITE_ON_EXISTING", json!([hours(2, "2026-02-01")])),
            tz(),
        )
        .unwrap();
        assert_eq!(out.rated_events.len(), 1);
    }
    let (live, voided): (i64, i64) = tx
        .query_row(
            "SELECT SUM(voided = 0), SUM(voided = 1) FROM usage_events
             WHERE reference_id = 'ref-1' AND sequence_id = '1'",
            [],
            |r| r.try_into(),
        )
        .unwrap();
    assert_eq!((live, voided), (1, 2));
    // a second live event of the pair is refused by the database itself
    let copy = "INSERT INTO usage_events (request_id, service_resource_identifier, start_time,
            end_time, usage_uom, usage_amount, reference_id, sequence_id, total_charge,
            voided, created_at)
        SELECT request_id, service_resource_identifier, start_time, end_time, usage_uom,
            usage_amount, reference_id, sequence_id, total_charge, ?1, created_at
        FROM usage_events WHERE reference_id = 'ref-1' LIMIT 1";
    let refused = tx.execute(copy, [0]).unwrap_err().to_string();
    assert!(refused.contains("UNIQUE"), "{refused}");
    // voided ones, and events without both ids, never collide
    tx.execute(copy, [1]).unwrap();
    tx.execute(copy, [1]).unwrap();
    tx.execute_batch(
        "INSERT INTO usage_events (request_id, service_resource_identifier, start_time,
            end_time, usage_uom, usage_amount, reference_id, total_charge, created_at)
         VALUES ('r', 's', 't', 't', 'HOUR', '1', 'ref-2', '0', 't'),
                ('r', 's', 't', 't', 'HOUR', '1', 'ref-2', '0', 't')",
    )
    .unwrap();
    // The lookup of one pair (the last of the chunk sizes).
    let one_pair = super::post::LIVE_EVENTS_SQL.last().unwrap();
    let plan: String = tx
        .prepare(&format!("EXPLAIN QUERY PLAN {one_pair}"))
        .unwrap()
        .query_map(["ref-1", "1"], |r| r.get::<_, String>(3))
        .unwrap()
        .collect::<rusqlite::Result<Vec<_>>>()
        .unwrap()
        .join("; ");
    assert!(
        plan.contains("usage_events_pair (reference_id=? AND sequence_id=? AND <expr>=?)"),
        "{plan}"
    );
}

#[test]
fn an_event_is_read_field_by_field_in_one_pass() {
    let parse = |text: &str| {
        let raw: Box<serde_json::value::RawValue> = serde_json::from_str(text).unwrap();
        super::post::parse_event(&raw, tz())
    };
    // a key written with an escape is the same key; a repeated key is refused (request
    // bodies never get here with one: `web::parse_json` refuses it first); null is absent
    let ev = parse(
        r#"{"service_resource_identifier": "a", "usage\u005fuom": "HOUR", "usage_amount": 2,
            "start_time": "2026-02-01", "reference_id": null}"#,
    )
    .unwrap();
    assert_eq!((ev.uom.as_str(), ev.amount), ("HOUR", Decimal::from(2)));
    assert_eq!(ev.reference_id, None);
    let (code, message) = parse(
        r#"{"service_resource_identifier": "a", "usage_uom": "HOUR", "usage_amount": 1,
            "usage_amount": 2, "start_time": "2026-02-01"}"#,
    )
    .unwrap_err();
    assert_eq!(
        (code, message.as_str()),
        (ErredCode::InvalidField, "duplicate field 'usage_amount'")
    );
    let (code, message) = parse(r#"{"usage_uom": "HOUR", "colour": 1, "size": 2}"#).unwrap_err();
    assert_eq!(code, ErredCode::InvalidField);
    assert!(
        message.starts_with("unknown field 'colour'; a usage event has"),
        "{message}"
    );
    let (code, message) = parse(r#"{"usage_uom": "HOUR"}"#).unwrap_err();
    assert_eq!(
        (code, message.as_str()),
        (ErredCode::MissingField, "start_time is required")
    );
    for not_an_object in ["42", "[1]", "\"x\"", "null"] {
        let (code, message) = parse(not_an_object).unwrap_err();
        assert_eq!(
            (code, message.as_str()),
            (
                ErredCode::InvalidField,
                "a usage event must be a JSON object"
            ),
            "{not_an_object}"
        );
    }
}

#[test]
fn a_live_duplicate_is_reported_before_any_other_reason_the_event_errs() {
    // FAIL_ON_EXISTING finds a live pair through the insert (migration 0008's row, the pair
    // index); an event that errs before reaching the insert must still be DUPLICATE_EVENT.
    let mut conn = demo_db(tz());
    let tx = conn.transaction().unwrap();
    let first = post(
        &tx,
        &request("FAIL_ON_EXISTING", json!([hours(1, "2026-02-01")])),
        tz(),
    )
    .unwrap();
    let live_id = first.rated_events[0].id.clone().unwrap();
    let mut unknown = hours(1, "2026-02-01");
    unknown["service_resource_identifier"] = json!("no-such-srid");
    let mut early = hours(1, "2001-01-01");
    early["sequence_id"] = json!("1");
    let fresh = {
        let mut e = unknown.clone();
        e["reference_id"] = json!("ref-fresh");
        e
    };
    let out = post(
        &tx,
        &request(
            "FAIL_ON_EXISTING",
            json!([hours(2, "2026-02-02"), unknown, early, fresh]),
        ),
        tz(),
    )
    .unwrap();
    assert!(out.rated_events.is_empty(), "{:?}", out.rated_events);
    let codes: Vec<ErredCode> = out.erred_events.iter().map(|e| e.code).collect();
    assert_eq!(
        codes,
        vec![
            ErredCode::DuplicateEvent,
            ErredCode::DuplicateInRequest,
            ErredCode::DuplicateInRequest,
            ErredCode::UnknownServiceResource,
        ]
    );
    assert!(
        out.erred_events[0]
            .message
            .contains(&format!("usage event {live_id} ")),
        "{}",
        out.erred_events[0].message
    );
    // The same events one per call: each meets the live pair, whatever else is wrong.
    for event in [
        {
            let mut e = hours(1, "2026-02-01");
            e["service_resource_identifier"] = json!("no-such-srid");
            e
        },
        hours(1, "2001-01-01"),
        hours(3, "2026-02-03"),
    ] {
        let out = post(&tx, &request("FAIL_ON_EXISTING", json!([event])), tz()).unwrap();
        assert_eq!(out.erred_events.len(), 1, "{:?}", out.rated_events);
        assert_eq!(out.erred_events[0].code, ErredCode::DuplicateEvent);
        assert!(out.erred_events[0].message.contains(&live_id));
    }
    let stored: i64 = tx
        .query_row(
            "SELECT COUNT(*) FROM usage_events WHERE reference_id = 'ref-1'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stored, 1, "a refused insert leaves nothing behind");
    assert_eq!(pending(&tx), first.rated_events[0].total_charge);
}

#[test]
fn a_call_is_named_by_a_time_ordered_uuid() {
    // The spec's request_id is a UUID; version 7 puts a call's index entries at the end of the
    // request-id index instead of a random page of it.
    let mut conn = demo_db(tz());
    let tx = conn.transaction().unwrap();
    let out = post(
        &tx,
        &request("FAIL_ON_EXISTING", json!([hours(1, "2026-02-01")])),
        tz(),
    )
    .unwrap();
    let id = out.rated_events[0].request_id.clone().unwrap();
    let parsed = uuid::Uuid::parse_str(&id).unwrap();
    assert_eq!(parsed.get_version_num(), 7, "{id}");
    assert_eq!(parsed.to_string(), id, "hyphenated lower-case form");
}

/// A call's rated events are inserted together, in chunks of 32, 16, 8, 4, 2 and 1 rows:
/// for calls of every size, each answered id reads back its own event (the ids ascend in the
/// order of the call), erred events between them take no id, and under FAIL_ON_EXISTING a
/// pair already live is answered DUPLICATE_EVENT, found by the call's one lookup of its pairs
/// (chunked the same way), while its neighbours are stored.
#[test]
fn events_inserted_together_keep_their_order_ids_and_duplicates_for_every_call_size() {
    let mut conn = demo_db(tz());
    let tx = conn.transaction().unwrap();
    let event = |call: usize, i: usize| {
        let mut e = json!({"service_resource_identifier": SRID, "usage_uom": "HOUR",
            "usage_amount": i + 1, "start_time": "2026-02-01T10:00:00-06:00"});
        if i.is_multiple_of(3) {
            // Erred: no such resource.
            e["service_resource_identifier"] = json!("no-such-resource");
        }
        if i.is_multiple_of(2) {
            e["reference_id"] = json!(format!("call-{call}"));
            e["sequence_id"] = json!(i.to_string());
        }
        e
    };
    for (call, n) in [1, 2, 3, 7, 31, 33, 49, 50].into_iter().enumerate() {
        let events: Vec<serde_json::Value> = (0..n).map(|i| event(call, i)).collect();
        let first = post(&tx, &request("FAIL_ON_EXISTING", json!(events)), tz()).unwrap();
        let expected_rated = (0..n).filter(|i| !i.is_multiple_of(3)).count();
        assert_eq!(first.rated_events.len(), expected_rated, "{n} events");
        let ids: Vec<i64> = first
            .rated_events
            .iter()
            .map(|e| e.id.as_deref().unwrap().parse().unwrap())
            .collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{n} events: {ids:?}");
        let stored = fetch_by_ids(&tx, &ids, tz()).unwrap();
        assert_eq!(
            serde_json::to_string(&first.rated_events).unwrap(),
            serde_json::to_string(&stored).unwrap(),
            "{n} events"
        );
        // The same call again: every paired event that was stored is now a live duplicate.
        let again = post(&tx, &request("FAIL_ON_EXISTING", json!(events)), tz()).unwrap();
        let duplicates = again
            .erred_events
            .iter()
            .filter(|e| e.code == ErredCode::DuplicateEvent)
            .count();
        let paired_and_rated = (0..n).filter(|i| i % 3 != 0 && i % 2 == 0).count();
        assert_eq!(duplicates, paired_and_rated, "{n} events");
        assert_eq!(
            again.rated_events.len(),
            expected_rated - paired_and_rated,
            "{n} events"
        );
    }
}
