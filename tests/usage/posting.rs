//! Usage events, posting: request validation, per-event validation, rating of every rate kind
//! with exact decimals, erred codes, duplicates and overwrites, pending charges.

use e2e::billing::{call, post_ok, post_raw, USAGE_BULK, USAGE_SIMULATE};
use e2e::{error_body, TestServer, TestTenant};
use rust_decimal::Decimal;
use serde_json::{json, Value};
use shared::domain::catalog;

/// Where hand-built requests (other credentials, malformed bodies) post.
const BULK: &str = "/billing/2/usage-events/bulk";

/// Posts `events` in `mode` and answers the 200 body.
async fn bulk(s: &TestServer, t: &TestTenant, mode: &str, events: Value) -> Value {
    let body = json!({"mode": mode, "usage_events": events});
    post_ok(s, t, USAGE_BULK, &body).await
}

/// A JSON number as an exact decimal (the server writes canonical decimal text).
fn dec(v: &Value) -> Decimal {
    assert!(v.is_number(), "not a number: {v}");
    v.to_string().parse().unwrap()
}

fn d(s: &str) -> Decimal {
    s.parse().unwrap()
}

fn ev(srid: &str, uom: &str, amount: Value, start: &str) -> Value {
    json!({"service_resource_identifier": srid, "usage_uom": uom, "usage_amount": amount, "start_time": start})
}

/// A billing account's pending charges, read from the store.
async fn pending(s: &TestServer, t: &TestTenant, account: i64) -> Decimal {
    let db = s.state.store.tenant_db(&t.id).unwrap();
    let text: String = db
        .read(move |c| {
            Ok(c.query_row(
                "SELECT pending_charges_total FROM billing_accounts WHERE id = ?1",
                [account],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    d(&text)
}

/// Checks the pending charges of each `(billing account, amount)`.
async fn assert_pending(s: &TestServer, t: &TestTenant, cases: &[(i64, Decimal)]) {
    for (account, amount) in cases {
        assert_eq!(pending(s, t, *account).await, *amount, "account {account}");
    }
}

#[tokio::test]
async fn whole_request_problems_are_400() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let one = ev("srv-compute-0001", "HOUR", json!(1), "2026-02-01");
    let fifty_one: Vec<Value> = (0..51).map(|_| one.clone()).collect();
    for (label, body) in [
        ("no mode", json!({"usage_events": [one]})),
        (
            "bad mode",
            json!({"mode": "REPLACE", "usage_events": [one]}),
        ),
        ("no events", json!({"mode": "FAIL_ON_EXISTING"})),
        (
            "zero events",
            json!({"mode": "FAIL_ON_EXISTING", "usage_events": []}),
        ),
        (
            "51 events",
            json!({"mode": "FAIL_ON_EXISTING", "usage_events": fifty_one}),
        ),
        (
            "events not an array",
            json!({"mode": "FAIL_ON_EXISTING", "usage_events": one}),
        ),
        (
            "unknown field",
            json!({"mode": "FAIL_ON_EXISTING", "usage_events": [one], "x": 1}),
        ),
    ] {
        for path in [USAGE_BULK, USAGE_SIMULATE] {
            let a = call(&s, &t, reqwest::Method::POST, path, Some(&body)).await;
            let (code, message) = a.error();
            let status = a.status;
            assert_eq!(
                (status, code.as_str()),
                (400, "BAD_REQUEST"),
                "{label} {path}: {message}"
            );
        }
    }
    let r = s
        .client
        .post(s.url(BULK))
        .header("X-Api-Key", &t.api_key)
        .header("Content-Type", "application/json")
        .body("{\"mode\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(error_body(r).await.0, 400);
    // exactly 50 is fine
    let fifty: Vec<Value> = (0..50).map(|_| one.clone()).collect();
    let v = bulk(&s, &t, "FAIL_ON_EXISTING", json!(fifty)).await;
    assert_eq!(v["rated_events"].as_array().unwrap().len(), 50);
    // no credential
    let r = s
        .client
        .post(s.url(BULK))
        .json(&json!({"mode": "FAIL_ON_EXISTING", "usage_events": [one]}))
        .send()
        .await
        .unwrap();
    assert_eq!(error_body(r).await.0, 401);
}

#[tokio::test]
async fn every_rate_kind_charges_exact_decimals() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    // (event; charge, usage rule id, rated uom, rated amount)
    let cases = [
        // FLAT 0.12 per HOUR; 10.375 h = 1.245 -> 1.25 (half-up, banker's would say 1.24)
        (
            ev(
                "srv-compute-0001",
                "HOUR",
                json!(10.375),
                "2026-02-01T10:00:00-06:00",
            ),
            ("1.25", "1", "HOUR", "10.375"),
        ),
        // converted: 90 MINUTE = 1.5 HOUR
        (
            ev(
                "srv-compute-0001",
                "MINUTE",
                json!(90),
                "2026-02-01T11:00:00Z",
            ),
            ("0.18", "1", "HOUR", "1.5"),
        ),
        // TIERED GIGABYTE: 100*0.09 + 50*0.07
        (
            ev("srv-transfer-0001", "GIGABYTE", json!(150), "2026-02-02"),
            ("12.5", "2", "GIGABYTE", "150"),
        ),
        // 1500000 MEGABYTE = 1500 GB: 100*0.09 + 900*0.07 + 500*0.05
        (
            ev(
                "srv-transfer-0001",
                "MEGABYTE",
                json!(1500000),
                "2026-02-02",
            ),
            ("97", "2", "GIGABYTE", "1500"),
        ),
        // TABLE kWh (EUR account): 2026 row 0.2375 -> 2.375 -> 2.38
        (
            ev("meter-0001", "KILOWATTS_PER_HOUR", json!(10), "2026-02-03"),
            ("2.38", "3", "KILOWATTS_PER_HOUR", "10"),
        ),
        // 2025 row 0.21, 1500 Wh = 1.5 kWh -> 0.315 -> 0.32
        (
            ev("meter-0001", "WATTS_PER_HOUR", json!(1500), "2025-06-03"),
            ("0.32", "3", "KILOWATTS_PER_HOUR", "1.5"),
        ),
        // PASS_THROUGH CURRENCY (GBP account): 19.999 -> 20.00
        (
            ev("mkt-0001", "CURRENCY", json!(19.999), "2026-02-04"),
            ("20", "4", "CURRENCY", "19.999"),
        ),
        // COUNT rules by amount window: below 1000 at 0.002, from 1000 at 0.001
        (
            ev("api-0001", "COUNT", json!(999), "2026-02-05"),
            ("2", "5", "COUNT", "999"),
        ),
        (
            ev("api-0001", "COUNT", json!(1000), "2026-02-05"),
            ("1", "6", "COUNT", "1000"),
        ),
    ];
    let events: Vec<Value> = cases.iter().map(|(event, _)| event.clone()).collect();
    let v = bulk(&s, &t, "FAIL_ON_EXISTING", json!(events)).await;
    assert_eq!(v["erred_events"], json!([]), "{v}");
    let rated = v["rated_events"].as_array().unwrap();
    assert_eq!(rated.len(), cases.len());
    for (e, (event, (charge, rule, uom, amount))) in rated.iter().zip(&cases) {
        let case = format!("{event} -> {charge}: {e}");
        assert_eq!(dec(&e["total_charge"]), d(charge), "{case}");
        let charges = e["event_charges"].as_array().unwrap();
        assert_eq!(charges.len(), 1, "{case}");
        let c = &charges[0];
        assert_eq!(dec(&c["charge"]), d(charge), "{case}");
        assert_eq!(c["usage_rule"]["id"], *rule, "{case}");
        assert_eq!(c["usage_uom"], *uom, "{case}");
        assert_eq!(dec(&c["usage_amount"]), d(amount), "{case}");
        assert!(c["id"].is_string(), "{case}");
        assert!(c["charge_category"]["name"].is_string(), "{case}");
        assert_eq!(e["overwrite_counter"], 0, "{case}");
        assert_eq!(e["voided"], false, "{case}");
        assert!(e["id"].is_string(), "{case}");
    }
    // the table row applied is shown as the rate
    assert_eq!(dec(&rated[4]["event_charges"][0]["rate"]), d("0.2375"));
    assert_eq!(dec(&rated[5]["event_charges"][0]["rate"]), d("0.21"));
    assert_eq!(
        rated[6]["event_charges"][0]["charge_category"],
        json!({"charge_category_type": "Adhoc", "id": "4", "name": "Resale"})
    );
    // one request id for the whole call, a UUID
    let request_id = rated[0]["request_id"].as_str().unwrap();
    assert_eq!(request_id.len(), 36);
    assert!(rated.iter().all(|e| e["request_id"] == request_id));
    // echoes, times with the tenant's offset; end_time defaults to start_time
    // (event, field, value)
    for (i, field, value) in [
        (0, "start_time", json!("2026-02-01T10:00:00-06:00")),
        (1, "start_time", json!("2026-02-01T05:00:00-06:00")),
        (2, "start_time", json!("2026-02-02T00:00:00-06:00")),
        (2, "end_time", json!("2026-02-02T00:00:00-06:00")),
        (5, "start_time", json!("2025-06-03T00:00:00-05:00")),
        (1, "usage_uom", json!("MINUTE")),
        (1, "reference_id", Value::Null),
    ] {
        assert_eq!(rated[i][field], value, "event {i} {field}");
    }
    assert_eq!(dec(&rated[1]["usage_amount"]), d("90"));

    // pending charges rose by the account's charges (account 1: compute and transfer)
    let account1: Decimal = ["1.25", "0.18", "12.5", "97"].iter().map(|x| d(x)).sum();
    assert_pending(
        &s,
        &t,
        &[(1, account1), (4, d("2.70")), (6, d("20")), (2, d("3"))],
    )
    .await;
}

#[tokio::test]
async fn service_period_holds_the_start() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    // Periods are calendar months of the tenant's zone: 00:30 local on March 1st is March.
    let v = bulk(
        &s,
        &t,
        "FAIL_ON_EXISTING",
        json!([
            ev(
                "srv-compute-0001",
                "HOUR",
                json!(1),
                "2026-03-01T00:30:00-06:00"
            ),
            ev(
                "srv-compute-0001",
                "HOUR",
                json!(1),
                "2026-02-28T23:30:00-06:00"
            ),
        ]),
    )
    .await;
    let db = s.state.store.tenant_db(&t.id).unwrap();
    for (e, month_start) in v["rated_events"]
        .as_array()
        .unwrap()
        .iter()
        .zip(["2026-03-01T06:00:00.000Z", "2026-02-01T06:00:00.000Z"])
    {
        let period: i64 = e["service_period"]["id"].as_str().unwrap().parse().unwrap();
        let start: String = db
            .read(move |c| {
                Ok(c.query_row(
                    "SELECT start_date FROM service_periods WHERE id = ?1 AND service_id = 1",
                    [period],
                    |r| r.get(0),
                )?)
            })
            .await
            .unwrap();
        assert_eq!(start, month_start, "{e}");
    }
}

/// Adds, through the domain functions, a product whose rules exercise the rarer outcomes,
/// sold to a new JPY account: srid `lab-0001`.
async fn add_lab_service(s: &TestServer, t: &TestTenant) {
    let db = s.state.store.tenant_db(&t.id).unwrap();
    let tz = shared::time::parse_tz("America/Chicago").unwrap();
    db.write(move |tx| {
        let account: shared::domain::accounts::NewAccount = serde_json::from_value(json!({
            "id": 50, "account_num": "ACC-JPY", "name": "Yen Co", "currency_code": "JPY"
        }))?;
        shared::domain::accounts::create_account(tx, &account, tz)?;
        catalog::create_product(tx, &serde_json::from_value(json!({"id": 50, "name": "Lab"}))?)?;
        catalog::create_lookup_table(
            tx,
            &serde_json::from_value(json!({"id": 50, "name": "2027 only", "rows": [
                {"key": "LAB", "value": 3, "valid_from": "2027-01-01"}
            ]}))?,
            tz,
        )?;
        for rule in [
            json!({"product_id": 50, "position": 1, "name": "roaming seconds", "charge_category_id": 1, "uom": "SECOND", "attribute_match": "reference_id LIKE 'roam%'", "rate_kind": "FLAT", "rate": {"rate": 1.5}}),
            json!({"product_id": 50, "position": 2, "name": "lab table", "charge_category_id": 1, "uom": "EVENT", "rate_kind": "TABLE", "rate": {"lookup_table_id": 50, "key": "LAB"}}),
            json!({"product_id": 50, "position": 4, "name": "yen per kilobyte", "charge_category_id": 1, "uom": "KILOBYTE", "rate_kind": "FLAT", "rate": {"rate": 0.5}}),
        ] {
            catalog::create_usage_rule(tx, &serde_json::from_str(&rule.to_string())?, tz)?;
        }
        let bad: catalog::NewUsageRule = serde_json::from_str(
            r#"{"product_id": 50, "position": 9, "name": "bad", "charge_category_id": 1, "uom": "COUNT", "rate_kind": "FLAT", "rate": {"rate": "cheap"}}"#,
        )?;
        assert!(
            matches!(catalog::create_usage_rule(tx, &bad, tz), Err(shared::Error::BadRequest(_))),
            "a rate that is not a number is refused when the rule is created"
        );
        // create_usage_rule refuses a bad rate definition, so a rule that went bad (stored
        // before validation existed, or edited in the database) is written directly.
        tx.execute(
            "INSERT INTO usage_rules (product_id, position, name, charge_category_id, uom, rate_kind, rate)
             VALUES (50, 3, 'broken', 1, 'COUNT', 'FLAT', '{\"rate\": \"cheap\"}')",
            [],
        )?;
        super::sell::sell_product(tx, "Lab", 50, 50, "lab-0001")
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_bulk_call_mixes_rated_erred_and_duplicate_events() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    add_lab_service(&s, &t).await;
    // an earlier posting makes ("ref-1", "1") live
    let mut first = ev("srv-compute-0001", "HOUR", json!(1), "2026-02-01");
    first["reference_id"] = json!("ref-1");
    first["sequence_id"] = json!("1");
    bulk(&s, &t, "FAIL_ON_EXISTING", json!([first.clone()])).await;

    let mut pair2 = ev("srv-compute-0001", "HOUR", json!(2), "2026-02-01");
    pair2["reference_id"] = json!("ref-1");
    pair2["sequence_id"] = json!("2");
    let mut roaming = ev("lab-0001", "MINUTE", json!(1), "2026-02-01");
    roaming["reference_id"] = json!("roam-7");
    let mut home = ev("lab-0001", "MINUTE", json!(1), "2026-02-01");
    home["reference_id"] = json!("home-7");
    let mut missing = ev("srv-compute-0001", "HOUR", json!(1), "2026-02-01");
    missing.as_object_mut().unwrap().remove("usage_amount");
    let mut unknown_field = ev("srv-compute-0001", "HOUR", json!(1), "2026-02-01");
    unknown_field["usage_ammount"] = json!(1);
    let mut end_before = ev("srv-compute-0001", "HOUR", json!(1), "2026-02-01T10:00:00Z");
    end_before["end_time"] = json!("2026-02-01T09:00:00Z");

    let cases: Vec<(Value, Option<&str>)> = vec![
        (pair2.clone(), None),                         // rated
        (first.clone(), Some("DUPLICATE_EVENT")),      // live pair
        (pair2.clone(), Some("DUPLICATE_IN_REQUEST")), // same call
        (
            ev("srv-compute-0001", "HOUR", json!(0.5), "2026-02-01"),
            None,
        ), // rated
        (
            ev("nope-0001", "HOUR", json!(1), "2026-02-01"),
            Some("UNKNOWN_SERVICE_RESOURCE"),
        ),
        (
            ev("srv-compute-0002", "HOUR", json!(1), "2026-02-01"),
            Some("INACTIVE_SERVICE_RESOURCE"),
        ),
        (
            ev("srv-transfer-0002", "GIGABYTE", json!(1), "2025-06-01"),
            Some("INACTIVE_SERVICE_RESOURCE"),
        ),
        (
            ev("api-0001", "COUNT", json!(1), "2025-01-10"),
            Some("BEFORE_SERVICE_START"),
        ),
        (
            ev("lab-0001", "KILOBYTE", json!(1), "2026-07-01"),
            Some("AFTER_SERVICE_END"),
        ),
        (
            ev("srv-compute-0001", "HOUR", json!(1), "2028-01-15"),
            Some("NO_SERVICE_PERIOD"),
        ),
        (
            ev("srv-compute-0001", "GIGABYTE", json!(1), "2026-02-01"),
            Some("UOM_NOT_CONVERTIBLE"),
        ),
        (roaming, None), // 60 s * 1.5 = 90 JPY
        (home, Some("NO_MATCHING_RULE")),
        (
            ev("lab-0001", "EVENT", json!(1), "2026-02-01"),
            Some("RATE_NOT_FOUND"),
        ),
        (
            ev("lab-0001", "COUNT", json!(1), "2026-02-01"),
            Some("RULE_MISCONFIGURED"),
        ),
        (ev("lab-0001", "BYTE", json!(1001), "2026-02-01"), None), // 0.5005 JPY -> 1
        (missing, Some("MISSING_FIELD")),
        (unknown_field, Some("INVALID_FIELD")),
        (end_before, Some("INVALID_FIELD")),
        (
            ev("srv-compute-0001", "FURLONG", json!(1), "2026-02-01"),
            Some("INVALID_FIELD"),
        ),
        (
            ev("srv-compute-0001", "HOUR", json!("1"), "2026-02-01"),
            Some("INVALID_FIELD"),
        ),
        (
            ev("srv-compute-0001", "HOUR", json!(-1), "2026-02-01"),
            Some("INVALID_FIELD"),
        ),
        (
            ev("srv-compute-0001", "HOUR", json!(1), "yesterday"),
            Some("INVALID_FIELD"),
        ),
        (json!(42), Some("INVALID_FIELD")),
    ];
    let events: Vec<Value> = cases.iter().map(|(e, _)| e.clone()).collect();
    let v = bulk(&s, &t, "FAIL_ON_EXISTING", json!(events)).await;
    let rated = v["rated_events"].as_array().unwrap();
    let erred = v["erred_events"].as_array().unwrap();
    let want_erred: Vec<(&Value, &str)> = cases
        .iter()
        .filter_map(|(e, c)| c.map(|c| (e, c)))
        .collect();
    assert_eq!(rated.len(), cases.len() - want_erred.len(), "{v:#}");
    assert_eq!(erred.len(), want_erred.len());
    for (got, (submitted, code)) in erred.iter().zip(&want_erred) {
        assert_eq!(got["code"], *code, "{got}");
        assert_eq!(&got["unrated_event"], *submitted);
        assert!(!got["message"].as_str().unwrap().is_empty());
        assert_eq!(got.as_object().unwrap().len(), 3);
    }
    // (rated event, JSON pointer, exact decimal)
    for (i, pointer, value) in [
        (0, "/total_charge", "0.24"),
        (1, "/total_charge", "0.06"),
        (2, "/total_charge", "90"),
        (2, "/event_charges/0/usage_amount", "60"),
        (3, "/total_charge", "1"),
        (3, "/event_charges/0/usage_amount", "1.001"),
    ] {
        let got = rated[i].pointer(pointer).unwrap_or(&Value::Null);
        assert_eq!(dec(got), d(value), "rated event {i} {pointer}");
    }
    // erred events touched nothing: only the rated ones moved pending charges
    assert_pending(&s, &t, &[(1, d("0.42")), (50, d("91"))]).await;
}

#[tokio::test]
async fn three_successive_overwrites() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let posting = |hours: i64| {
        let mut e = ev("srv-compute-0001", "HOUR", json!(hours), "2026-02-01");
        e["reference_id"] = json!("batch-9");
        e["sequence_id"] = json!("17");
        e
    };
    let mut ids = Vec::new();
    for (i, hours) in [10, 20, 30, 40].into_iter().enumerate() {
        let v = bulk(&s, &t, "OVERWRITE_ON_EXISTING", json!([posting(hours)])).await;
        assert_eq!(v["erred_events"], json!([]));
        let e = &v["rated_events"][0];
        assert_eq!(e["overwrite_counter"], i as i64, "{e}");
        assert_eq!(e["voided"], false);
        ids.push(e["id"].as_str().unwrap().to_string());
        // pending charges hold only the live event's charge: 0.12 per hour
        assert_eq!(pending(&s, &t, 1).await, d("0.12") * Decimal::from(hours));
    }
    // FAIL_ON_EXISTING still refuses the pair
    let v = bulk(&s, &t, "FAIL_ON_EXISTING", json!([posting(50)])).await;
    assert_eq!(v["erred_events"][0]["code"], "DUPLICATE_EVENT");
    // by the pair: the three voided events and the live one
    let r = s
        .get_with_key(
            "/billing/2/usage-events?reference_id=batch-9&sequence_id=17",
            &t.api_key,
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-total-count"], "4");
    let list: Value = r.json().await.unwrap();
    let got: Vec<(String, bool, i64)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["id"].as_str().unwrap().to_string(),
                e["voided"].as_bool().unwrap(),
                e["overwrite_counter"].as_i64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, bool, i64)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.clone(), i < 3, i as i64))
        .collect();
    assert_eq!(got, want);
    // a voided event stays readable by id
    let r = s
        .get_with_key(&format!("/billing/2/usage-events/{}", ids[0]), &t.api_key)
        .await;
    let e: Value = r.json().await.unwrap();
    assert_eq!(
        (e["voided"].as_bool(), dec(&e["total_charge"])),
        (Some(true), d("1.2"))
    );
}

#[tokio::test]
async fn events_without_a_full_pair_are_never_duplicates() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let mut only_ref = ev("srv-compute-0001", "HOUR", json!(1), "2026-02-01");
    only_ref["reference_id"] = json!("r");
    let plain = ev("srv-compute-0001", "HOUR", json!(1), "2026-02-01");
    let events = json!([only_ref, only_ref, plain, plain]);
    for mode in ["FAIL_ON_EXISTING", "OVERWRITE_ON_EXISTING"] {
        let v = bulk(&s, &t, mode, events.clone()).await;
        assert_eq!(v["rated_events"].as_array().unwrap().len(), 4, "{mode}");
        assert!(v["rated_events"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["overwrite_counter"] == 0));
    }
    assert_eq!(pending(&s, &t, 1).await, d("0.96"));
}

#[tokio::test]
async fn in_request_duplicates_err_in_overwrite_mode_too() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let mut a = ev("srv-compute-0001", "HOUR", json!(1), "2026-02-01");
    a["reference_id"] = json!("r");
    a["sequence_id"] = json!("1");
    let mut b = a.clone();
    b["usage_amount"] = json!(2);
    let v = bulk(&s, &t, "OVERWRITE_ON_EXISTING", json!([a, b])).await;
    assert_eq!(v["rated_events"].as_array().unwrap().len(), 1);
    assert_eq!(dec(&v["rated_events"][0]["usage_amount"]), d("1"));
    assert_eq!(v["erred_events"][0]["code"], "DUPLICATE_IN_REQUEST");
    assert_eq!(v["erred_events"][0]["unrated_event"], b);
}

#[tokio::test]
async fn bearer_tokens_post_too() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let token = s.token(&t, 60).await;
    let r = s
        .client
        .post(s.url(BULK))
        .bearer_auth(token)
        .json(&json!({"mode": "FAIL_ON_EXISTING", "usage_events": [ev("api-0001", "COUNT", json!(10), "2026-01-01")]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(dec(&v["rated_events"][0]["total_charge"]), d("0.02"));
}

#[tokio::test]
async fn child_srids_rate_on_their_service() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let v = bulk(
        &s,
        &t,
        "FAIL_ON_EXISTING",
        json!([
            ev("srv-compute-0001-vm-a", "DAY", json!(1), "2026-02-01"),
            ev("srv-compute-0001", "DAY", json!(1), "2026-02-01"),
        ]),
    )
    .await;
    let rated = v["rated_events"].as_array().unwrap();
    assert_eq!(rated.len(), 2, "{v}");
    // 1 DAY = 24 HOUR at 0.12
    assert_eq!(dec(&rated[0]["total_charge"]), d("2.88"));
    assert_eq!(
        rated[0]["service_resource_identifier"],
        "srv-compute-0001-vm-a"
    );
    assert_eq!(rated[0]["service_period"], rated[1]["service_period"]);
    assert_eq!(pending(&s, &t, 1).await, d("5.76"));
}

fn raw_events(amounts: &[&str]) -> String {
    let events: Vec<String> = amounts
        .iter()
        .map(|a| {
            format!(
                r#"{{"service_resource_identifier": "mkt-0001", "usage_uom": "CURRENCY", "usage_amount": {a}, "start_time": "2026-02-04"}}"#
            )
        })
        .collect();
    format!(
        r#"{{"mode": "FAIL_ON_EXISTING", "usage_events": [{}]}}"#,
        events.join(",")
    )
}

#[tokio::test]
async fn amounts_beyond_18_integer_digits_are_erred_never_500() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let max = "79228162514264337593543950335"; // rust_decimal's maximum
    for path in [USAGE_BULK, USAGE_SIMULATE] {
        let started = std::time::Instant::now();
        let r = post_raw(&s, &t, path, raw_events(&[max, max])).await;
        println!(
            "{path} with two usage_amount {max}: {} (both erred INVALID_FIELD) in {:?}",
            r.status(),
            started.elapsed()
        );
        assert_eq!(r.status(), 200, "{path}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["rated_events"], json!([]), "{path}: {v}");
        let erred = v["erred_events"].as_array().unwrap();
        assert_eq!(erred.len(), 2, "both events are erred: {v}");
        for e in erred {
            assert_eq!(e["code"], "INVALID_FIELD", "{v}");
            assert!(
                e["message"].as_str().unwrap().contains("18 integer digits"),
                "{v}"
            );
        }
    }
    // 18 digits are accepted; a second such event in the same call would take the account's
    // pending charges beyond the bound: that event (only) errs
    let big = "999999999999999999";
    let v: Value = post_raw(&s, &t, USAGE_BULK, raw_events(&[big, big]))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["rated_events"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["erred_events"][0]["code"], "INVALID_FIELD", "{v}");
    // and the stored state does not break later posts: a small event still rates
    let v = bulk(
        &s,
        &t,
        "FAIL_ON_EXISTING",
        json!([ev("srv-compute-0001", "HOUR", json!(1), "2026-02-01")]),
    )
    .await;
    assert_eq!(v["rated_events"].as_array().unwrap().len(), 1, "{v}");
    let v = bulk(
        &s,
        &t,
        "FAIL_ON_EXISTING",
        json!([ev("mkt-0001", "CURRENCY", json!(1), "2026-02-04")]),
    )
    .await;
    assert_eq!(v["erred_events"][0]["code"], "INVALID_FIELD", "{v}");
}

/// Posting keeps the rating catalogue across calls while its rows are unchanged
/// (`usage/post/catalogue.rs`): a change of any row it was loaded from shows in the next
/// call, whether another write made it, the posting write itself before it posts, or a
/// restore.
#[tokio::test]
async fn a_kept_catalogue_shows_every_change_of_its_rows() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let db = s.state.store.tenant_db(&t.id).unwrap();
    let at = "2026-02-01T10:00:00-06:00";
    let one = || json!([ev("srv-compute-0001", "HOUR", json!(2), at)]);
    let rated = |v: &Value| v["rated_events"][0]["event_charges"][0].clone();

    let first = rated(&bulk(&s, &t, "FAIL_ON_EXISTING", one()).await);
    let rule: i64 = first["usage_rule"]["id"].as_str().unwrap().parse().unwrap();
    s.state.store.create_checkpoint(&t.id, "rated").unwrap();
    // Loaded by the first call, kept for the second: the same charge, another event.
    let without_id = |mut c: Value| {
        c["id"] = Value::Null;
        c
    };
    let second = rated(&bulk(&s, &t, "FAIL_ON_EXISTING", one()).await);
    assert_ne!(second["id"], first["id"]);
    assert_eq!(without_id(second), without_id(first.clone()));

    let set_rate = |rate: u32| {
        format!("UPDATE usage_rules SET rate_kind = 'FLAT', rate = '{{\"rate\": {rate}}}' WHERE id = {rule}")
    };
    // Another write changes the rule: the next call rates with the new rate.
    let sql = set_rate(7);
    db.write(move |tx| Ok(tx.execute(&sql, [])?)).await.unwrap();
    let seven = rated(&bulk(&s, &t, "FAIL_ON_EXISTING", one()).await);
    assert_eq!(dec(&seven["rate"]), d("7"), "{seven}");
    assert_eq!(dec(&seven["charge"]), dec(&seven["usage_amount"]) * d("7"));

    // The posting write changes it itself before it posts: the call sees its own change.
    let sql = set_rate(9);
    let tz = shared::time::parse_tz("America/Chicago").unwrap();
    let req: shared::domain::usage::BulkRequest =
        serde_json::from_value(json!({"mode": "FAIL_ON_EXISTING", "usage_events": one()})).unwrap();
    let nine = db
        .write(move |tx| {
            tx.execute(&sql, [])?;
            Ok(serde_json::to_value(shared::domain::usage::post(
                tx, &req, tz,
            )?)?)
        })
        .await
        .unwrap();
    assert_eq!(dec(&rated(&nine)["rate"]), d("9"), "{nine}");

    // A restore replaces every row: the next call rates as at the checkpoint.
    s.state.store.restore_checkpoint(&t.id, "rated").unwrap();
    let restored = rated(&bulk(&s, &t, "FAIL_ON_EXISTING", one()).await);
    assert_eq!(restored["rate"], first["rate"], "{restored}");

    // The service ends before the event: the next call errs it.
    db.write(|tx| {
        Ok(tx.execute(
            "UPDATE agreement_services SET end_date = '2026-01-01T06:00:00.000Z'
             WHERE service_id = (SELECT service_id FROM service_resources
                                 WHERE identifier = 'srv-compute-0001')",
            [],
        )?)
    })
    .await
    .unwrap();
    let ended = bulk(&s, &t, "FAIL_ON_EXISTING", one()).await;
    assert_eq!(
        ended["erred_events"][0]["code"], "AFTER_SERVICE_END",
        "{ended}"
    );
}
