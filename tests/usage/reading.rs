//! Usage events, simulation and reading back: simulation stores nothing (content hash of the
//! whole database unchanged, no id consumed) yet answers what posting answers; the list needs
//! a narrowing parameter and pages; single events by id.

use e2e::billing::{assert_refused, get, post_ok, post_raw, USAGE_BULK, USAGE_SIMULATE};
use e2e::{get_refusals, TestServer, TestTenant};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// SHA-256 over every row of every table of the tenant's database, in rowid order.
async fn content_hash(s: &TestServer, t: &TestTenant) -> String {
    let db = s.state.store.tenant_db(&t.id).unwrap();
    db.read(|c| {
        let mut hash = Sha256::new();
        for table in shared::store::sqlite::user_tables(c)? {
            hash.update(table.as_bytes());
            let mut stmt = c.prepare(&format!("SELECT * FROM \"{table}\" ORDER BY rowid"))?;
            let n = stmt.column_count();
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                for i in 0..n {
                    let v: rusqlite::types::Value = row.get(i)?;
                    hash.update(format!("{v:?}|").as_bytes());
                }
                hash.update(b"\n");
            }
        }
        Ok(hex(&hash.finalize()))
    })
    .await
    .unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn mixed_events() -> Value {
    json!([
        {"service_resource_identifier": "srv-compute-0001", "usage_uom": "HOUR", "usage_amount": 3, "start_time": "2026-02-01", "reference_id": "sim", "sequence_id": "1"},
        {"service_resource_identifier": "srv-transfer-0001", "usage_uom": "GIGABYTE", "usage_amount": 250, "start_time": "2026-02-01"},
        {"service_resource_identifier": "meter-0001", "usage_uom": "KILOWATTS_PER_HOUR", "usage_amount": 4, "start_time": "2026-02-01"},
        {"service_resource_identifier": "mkt-0001", "usage_uom": "CURRENCY", "usage_amount": 12.345, "start_time": "2026-02-01"},
        {"service_resource_identifier": "api-0001", "usage_uom": "COUNT", "usage_amount": 2500, "start_time": "2026-02-01"},
        {"service_resource_identifier": "nope", "usage_uom": "COUNT", "usage_amount": 1, "start_time": "2026-02-01"}
    ])
}

/// A rated event without its ids and request id (which differ between posting and simulation).
fn without_ids(e: &Value) -> Value {
    let mut e = e.clone();
    let o = e.as_object_mut().unwrap();
    o.remove("id");
    o.remove("request_id");
    for c in o["event_charges"].as_array_mut().unwrap() {
        c.as_object_mut().unwrap().remove("id");
    }
    e
}

#[tokio::test]
async fn simulation_stores_nothing_and_answers_like_posting() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    // a live pair, so that the simulation also simulates an overwrite
    let first = post_ok(
        &s,
        &t,
        USAGE_BULK,
        &json!({"mode": "FAIL_ON_EXISTING", "usage_events": [mixed_events()[0]]}),
    )
    .await;
    let first_id: i64 = first["rated_events"][0]["id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();

    let before = content_hash(&s, &t).await;
    let body = json!({"mode": "OVERWRITE_ON_EXISTING", "usage_events": mixed_events()});
    let sim = post_ok(&s, &t, USAGE_SIMULATE, &body).await;
    let sim_again = post_ok(&s, &t, USAGE_SIMULATE, &body).await;
    assert_eq!(
        content_hash(&s, &t).await,
        before,
        "simulation changed the database"
    );
    assert_eq!(sim, sim_again);

    let rated = sim["rated_events"].as_array().unwrap();
    assert_eq!(rated.len(), 5);
    assert_eq!(sim["erred_events"][0]["code"], "UNKNOWN_SERVICE_RESOURCE");
    // Simulated events and charges carry ids (the spec leaves out only request_id): -1, -2,
    // ... in answer order, int64 text that no stored record ever has.
    let mut charge_ids = Vec::new();
    for (n, e) in rated.iter().enumerate() {
        let o = e.as_object().unwrap();
        assert!(!o.contains_key("request_id"), "{e}");
        assert_eq!(e["id"], json!(format!("-{}", n + 1)), "{e}");
        for c in e["event_charges"].as_array().unwrap() {
            charge_ids.push(c["id"].as_str().unwrap().to_string());
        }
    }
    let expected: Vec<String> = (1..=charge_ids.len()).map(|n| format!("-{n}")).collect();
    assert_eq!(charge_ids, expected);
    assert_eq!(rated[0]["overwrite_counter"], 1);
    // a simulated id names no stored event
    let r = s
        .client
        .get(s.url("/billing/2/usage-events/-1"))
        .header("X-Api-Key", &t.api_key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);

    // posting the same call answers the same events, with stored ids and one request id
    let posted = post_ok(&s, &t, USAGE_BULK, &body).await;
    assert_eq!(posted["erred_events"], sim["erred_events"]);
    let posted_rated = posted["rated_events"].as_array().unwrap();
    let stripped: Vec<Value> = posted_rated.iter().map(without_ids).collect();
    let sim_stripped: Vec<Value> = rated.iter().map(without_ids).collect();
    assert_eq!(stripped, sim_stripped);
    // no id was consumed by the simulations: ids continue right after the first posting
    let ids: Vec<i64> = posted_rated
        .iter()
        .map(|e| e["id"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(ids, ((first_id + 1)..=(first_id + 5)).collect::<Vec<_>>());
    assert_ne!(content_hash(&s, &t).await, before);
}

#[tokio::test]
async fn list_needs_a_narrowing_parameter_and_pages() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let refusals = get_refusals(&[
        ("/usage-events", 400),
        ("/usage-events?sequence_id=1", 400),
        ("/usage-events?page_size=5", 400),
        ("/usage-events?billing_account_id=x", 400),
        ("/usage-events?account_num=ACC-1001&page_size=51", 400),
        ("/usage-events?account_num=ACC-1001&page_number=-1", 400),
    ]);
    assert_refused(&s, &t, &refusals).await;
    let events: Vec<Value> = (0..7)
        .map(|i| json!({"service_resource_identifier": if i < 5 { "srv-compute-0001" } else { "api-0001" }, "usage_uom": "HOUR", "usage_amount": i, "start_time": "2026-02-01"}))
        .map(|mut e| {
            if e["service_resource_identifier"] == "api-0001" {
                e["usage_uom"] = json!("COUNT");
            }
            e
        })
        .collect();
    let posted = post_ok(
        &s,
        &t,
        USAGE_BULK,
        &json!({"mode": "FAIL_ON_EXISTING", "usage_events": events}),
    )
    .await;
    let request_id = posted["rated_events"][0]["request_id"]
        .as_str()
        .unwrap()
        .to_string();
    let period = posted["rated_events"][0]["service_period"]["id"]
        .as_str()
        .unwrap()
        .to_string();

    // (query; X-Total-Count, X-Element-Count, X-Total-Pages, items)
    for (query, want) in [
        (format!("request_id={request_id}"), ("7", "7", "1", 7)),
        ("account_num=ACC-1001".to_string(), ("5", "5", "1", 5)),
        ("billing_account_id=2".to_string(), ("2", "2", "1", 2)),
        (format!("service_period_id={period}"), ("5", "5", "1", 5)),
        ("account_num=ACC-9999".to_string(), ("0", "0", "0", 0)),
        (
            format!("request_id={request_id}&page_size=3&page_number=3"),
            ("7", "1", "3", 1),
        ),
        (
            format!("request_id={request_id}&page_size=0"),
            ("7", "0", "0", 0),
        ),
    ] {
        let a = get(&s, &t, &format!("/usage-events?{query}"), &[]).await;
        assert_eq!(a.status, 200, "{query}");
        let header = |name| a.header(name).unwrap_or("");
        let got = (
            header("x-total-count"),
            header("x-element-count"),
            header("x-total-pages"),
            a.items().len(),
        );
        assert_eq!(got, want, "{query}");
    }

    // pages are in id order and do not overlap
    let r = s
        .get_with_key(
            &format!("/billing/2/usage-events?request_id={request_id}&page_size=3&page_number=2"),
            &t.api_key,
        )
        .await;
    let page: Value = r.json().await.unwrap();
    let want: Vec<&Value> = posted["rated_events"].as_array().unwrap()[3..6]
        .iter()
        .map(|e| &e["id"])
        .collect();
    let got: Vec<&Value> = page.as_array().unwrap().iter().map(|e| &e["id"]).collect();
    assert_eq!(got, want);
}

#[tokio::test]
async fn single_event_by_id() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let other = s.create_tenant("other", "demo").await;
    let posted = post_ok(
        &s,
        &t,
        USAGE_BULK,
        &json!({"mode": "FAIL_ON_EXISTING", "usage_events": [mixed_events()[1]]}),
    )
    .await;
    let e = &posted["rated_events"][0];
    let id = e["id"].as_str().unwrap();
    let r = s
        .get_with_key(&format!("/billing/2/usage-events/{id}"), &t.api_key)
        .await;
    assert_eq!(r.status(), 200);
    let got: Value = r.json().await.unwrap();
    assert_eq!(&got, e);
    // another tenant's event, an unknown and a malformed id
    let theirs = format!("/usage-events/{id}");
    assert_refused(&s, &other, &get_refusals(&[(&theirs, 404)])).await;
    let refusals = get_refusals(&[("/usage-events/999999", 404), ("/usage-events/abc", 404)]);
    assert_refused(&s, &t, &refusals).await;
}

#[tokio::test]
async fn list_filters_sorts_and_shapes() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let posting = |hours: i64, seq: &str| {
        json!({"service_resource_identifier": "srv-compute-0001", "usage_uom": "HOUR", "usage_amount": hours,
               "start_time": format!("2026-02-{:02}", hours), "reference_id": "f", "sequence_id": seq})
    };
    let body = |events: Value| json!({"mode": "OVERWRITE_ON_EXISTING", "usage_events": events});
    post_ok(
        &s,
        &t,
        USAGE_BULK,
        &body(json!([posting(5, "a"), posting(20, "b"), posting(10, "c")])),
    )
    .await;
    post_ok(&s, &t, USAGE_BULK, &body(json!([posting(15, "a")]))).await; // voids the 5-hour event

    // (query after reference_id=f, the total charges listed in order)
    for (query, want) in [
        ("", &["0.6", "2.4", "1.2", "1.8"][..]),
        (
            "filter=voided EQ 'false'&sort=-total_charge",
            &["2.4", "1.8", "1.2"],
        ),
        (
            "filter=total_charge GT '1.5' AND NOT voided EQ 'true'&sort=total_charge",
            &["1.8", "2.4"],
        ),
        ("filter=event_charges.charge LT '1'", &["0.6"]),
        (
            "filter=start_time GTE '2026-02-15'&sort=-start_time",
            &["2.4", "1.8"],
        ),
        (
            "filter=sequence_id IN ('a', 'c') AND voided EQ 'false'",
            &["1.2", "1.8"],
        ),
    ] {
        let a = get(
            &s,
            &t,
            &format!("/usage-events?reference_id=f&{query}"),
            &[],
        )
        .await;
        assert_eq!(a.status, 200, "{query}: {}", a.body);
        let got: Vec<String> = a
            .items()
            .iter()
            .map(|e| e["total_charge"].to_string())
            .collect();
        assert_eq!(got, want, "{query}");
    }
    let query = [
        ("account_num", "ACC-1001"),
        ("filter", "reference_id LIKE '%'"),
        ("sort", "-id"),
        ("page_size", "2"),
    ];
    let a = get(&s, &t, "/usage-events", &query).await;
    let got: Vec<String> = a
        .items()
        .iter()
        .map(|e| e["total_charge"].to_string())
        .collect();
    assert_eq!(got, ["1.8", "1.2"]);
    let refusals = get_refusals(&[
        ("/usage-events?reference_id=f&filter=price%20EQ%20'1'", 400),
        (
            "/usage-events?reference_id=f&filter=voided%20EQ%20'maybe'",
            400,
        ),
        (
            "/usage-events?reference_id=f&sort=event_charges.charge",
            400,
        ),
        (
            "/usage-events?reference_id=f&filter=(usage_uom%20EQ%20'HOUR'",
            400,
        ),
    ]);
    assert_refused(&s, &t, &refusals).await;

    let q = |rest: &str| format!("/billing/2/usage-events?reference_id=f&{rest}");
    // SIMPLE drops the nested collections, keeps references as {id}; ETag revalidates
    let r = s
        .get_with_key(&q("return=SIMPLE&page_size=1"), &t.api_key)
        .await;
    let etag = r.headers()["etag"].clone();
    let v: Value = r.json().await.unwrap();
    assert!(v[0].get("event_charges").is_none());
    assert!(v[0]["service_period"]["id"].is_string());
    let r = s
        .client
        .get(s.url(&q("return=SIMPLE&page_size=1")))
        .header("X-Api-Key", &t.api_key)
        .header("If-None-Match", etag)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 304);
    let id = v[0]["id"].as_str().unwrap();
    let r = s
        .client
        .get(s.url(&format!("/billing/2/usage-events/{id}")))
        .header("X-Api-Key", &t.api_key)
        .header("Prefer", "return=minimal")
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["preference-applied"], "return=minimal");
    let one: Value = r.json().await.unwrap();
    assert_eq!(one, v[0]);
}

#[tokio::test]
async fn amounts_keep_their_digits_when_read_back() {
    let s = TestServer::start().await;
    let t = s.create_tenant("acme", "demo").await;
    let exact = "12.3456789012345678901234567";
    let body = format!(
        r#"{{"mode": "FAIL_ON_EXISTING", "usage_events": [{{"service_resource_identifier": "mkt-0001", "usage_uom": "CURRENCY", "usage_amount": {exact}, "start_time": "2026-02-01", "reference_id": "exact"}}]}}"#
    );
    let posted = post_raw(&s, &t, USAGE_BULK, body)
        .await
        .text()
        .await
        .unwrap();
    assert!(
        posted.contains(&format!("\"usage_amount\":{exact}")),
        "{posted}"
    );
    assert!(posted.contains("\"total_charge\":12.35"), "{posted}");
    for path in [
        "/billing/2/usage-events?reference_id=exact",
        "/billing/2/usage-events?reference_id=exact&return=SIMPLE",
    ] {
        let text = s.get_with_key(path, &t.api_key).await.text().await.unwrap();
        assert!(
            text.contains(&format!("\"usage_amount\":{exact}")),
            "{path}: {text}"
        );
    }
}
