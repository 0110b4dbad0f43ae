//! GET-modify-PUT on Surface B: every PUT accepts the representation its GET returns.
//! A client reads a record, changes one writable field, sends the whole body back and reads
//! it again: only that field (and what the spec derives from it) changed. Read-only fields
//! echoed back unchanged are accepted; nested references are accepted as the full objects
//! GET renders (their `id` is used). The only PUT of Surface B is
//! `PUT /agreement-services/{id}`.

use e2e::billing::{all_ids, assert_refused, call, get, setup, Answer};
use e2e::{union_keys, Refusal, TestServer, TestTenant};
use reqwest::Method;
use serde_json::{json, Value};

/// GET `path`, asserting 200.
async fn read(s: &TestServer, t: &TestTenant, path: &str) -> Value {
    let a = get(s, t, path, &[]).await;
    assert_eq!(a.status, 200, "GET {path}: {}", a.body);
    a.body
}

/// PUT `body` to `path`.
async fn put(s: &TestServer, t: &TestTenant, path: &str, body: &Value) -> Answer {
    call(s, t, Method::PUT, path, Some(body)).await
}

/// Whether `got` is what a client that sent `sent` expects to read back: a nested reference
/// by its `id` (the other members are the referenced record's), anything else as sent.
fn matches_sent(got: &Value, sent: &Value) -> bool {
    match sent.get("id") {
        Some(id) if sent.is_object() => got.get("id") == Some(id),
        _ => got == sent,
    }
}

/// GET `path`, set `field` to `value`, PUT the whole body back (200, answering the record),
/// GET again: `field` reads back as sent, the fields of `derived` may differ, every other
/// field is unchanged. Answers the record after.
async fn change_one(
    s: &TestServer,
    t: &TestTenant,
    path: &str,
    field: &str,
    value: Value,
    derived: &[&str],
) -> Value {
    let before = read(s, t, path).await;
    assert!(
        !matches_sent(&before[field], &value),
        "{path} {field}: the case must change the field (it is {})",
        before[field]
    );
    let mut body = before.clone();
    body[field] = value.clone();
    let answer = put(s, t, path, &body).await;
    assert_eq!(
        answer.status, 200,
        "PUT {path} with {field} changed: {}",
        answer.body
    );
    let after = read(s, t, path).await;
    assert_eq!(
        answer.body, after,
        "PUT {path} answers the record as stored"
    );
    for key in union_keys(&before, &after) {
        if key == field {
            assert!(
                matches_sent(&after[&key], &value),
                "{path} {field}: sent {value}, read back {}",
                after[&key]
            );
        } else if !derived.contains(&key.as_str()) {
            assert_eq!(
                after[&key], before[&key],
                "{path}: changing {field} changed {key}"
            );
        }
    }
    after
}

#[tokio::test]
async fn an_unchanged_agreement_service_put_back_changes_nothing() {
    let (s, t) = setup().await;
    let ids = all_ids(&s, &t, "/agreement-services", &[], 50).await;
    assert_eq!(ids.len(), 120, "every demo agreement service");
    for id in ids {
        let path = format!("/agreement-services/{id}");
        let before = read(&s, &t, &path).await;
        let answer = put(&s, &t, &path, &before).await;
        assert_eq!(answer.status, 200, "PUT {path} as read: {}", answer.body);
        assert_eq!(read(&s, &t, &path).await, before, "PUT {path} as read");
    }
}

#[tokio::test]
async fn an_agreement_service_put_back_with_one_field_changed_changes_that_field() {
    let (s, t) = setup().await;
    // Nested references as GET renders them: the full records, names and all.
    let agreement_2 = read(&s, &t, "/agreements/2").await;
    let agreement_3 = read(&s, &t, "/agreements/3").await;
    let product = json!({"name": "Data Transfer", "sku": "DTX-200",
                         "external_product_number": "P-200", "id": "2"});
    let price = json!({"product_price_type": "RECURRING", "price_type": "FLAT", "id": "2"});
    let cases: Vec<(&str, Value)> = vec![
        ("next_service_pay_on_purchase", json!(true)),
        ("accumulated_charges_amount", json!(42.5)),
        ("end_date", json!("2030-06-30T00:00:00-05:00")),
        ("end_action", json!("RENEW")),
        ("next_agreement", agreement_3.clone()),
        ("next_end_action", json!("END")),
        ("next_service_product", product),
        ("next_service_product_price", price),
        ("preserve_service_price", json!(true)),
        ("next_preserve_service_price", json!(true)),
        ("minimum_amount", json!(99.99)),
        ("minimum_amount_currency_code", json!("EUR")),
        ("omit_minimum_amount", json!(true)),
        ("true_up_charge_types", json!(["USAGE", "ONE_TIME"])),
    ];
    for id in [5, 104] {
        let path = format!("/agreement-services/{id}");
        for (field, value) in &cases {
            change_one(&s, &t, &path, field, value.clone(), &[]).await;
        }
        // Another agreement brings its period; that is the one derived field.
        let after = change_one(
            &s,
            &t,
            &path,
            "agreement",
            agreement_2.clone(),
            &["agreement_period"],
        )
        .await;
        assert_eq!(after["agreement_period"], agreement_2["agreement_period"]);
    }
    // Clearing a nullable field by sending null back.
    change_one(
        &s,
        &t,
        "/agreement-services/5",
        "end_action",
        Value::Null,
        &[],
    )
    .await;
}

#[tokio::test]
async fn read_only_fields_are_checked_and_typos_still_refused() {
    let (s, t) = setup().await;
    let path = "/agreement-services/5";
    let before = read(&s, &t, path).await;
    let with = |field: &str, value: Value| {
        let mut body = before.clone();
        body[field] = value;
        Some(body)
    };
    // (member, value, a word of the message): read-only members changed, a typo, and a
    // reference without its id.
    let cases: Vec<Refusal> = [
        ("id", json!("6"), "id"),
        ("status", json!("CANCELED"), "status"),
        (
            "service_resource_identifier",
            json!("someone-else"),
            "service_resource_identifier",
        ),
        ("renewed", json!(true), "renewed"),
        ("agreement_period", json!(36), "agreement_period"),
        (
            "start_date",
            json!("2020-01-01T00:00:00-06:00"),
            "start_date",
        ),
        ("renewed_by_mistake", json!(true), "renewed_by_mistake"),
        ("agreement", json!({"name": "no id"}), "id"),
    ]
    .into_iter()
    .map(|(field, value, needle)| (Method::PUT, path, with(field, value), 400, needle))
    .collect();
    assert_refused(&s, &t, &cases).await;
    assert_eq!(read(&s, &t, path).await, before, "refusals change nothing");
    // The same instant written with another offset is the same start.
    let mut body = before.clone();
    body["start_date"] = json!(shift_to_utc(before["start_date"].as_str().expect("start")));
    let answer = put(&s, &t, path, &body).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.body, before);
}

/// An RFC 3339 date-time rewritten in UTC (`Z`).
fn shift_to_utc(text: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(text)
        .expect("rfc 3339")
        .with_timezone(&chrono::Utc)
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[tokio::test]
async fn agreement_services_render_the_status_and_srid_their_lists_filter_on() {
    let (s, t) = setup().await;
    let one = read(&s, &t, "/agreement-services/1").await;
    assert_eq!(one["status"], "ACTIVE");
    assert_eq!(one["service_resource_identifier"], "srv-compute-0001");
    // What a filter selected reads back on every record it answers.
    for (name, value) in [
        ("status", "SUSPENDED"),
        ("service_resource_identifier", "api-0001"),
    ] {
        let a = get(&s, &t, "/agreement-services", &[(name, value)]).await;
        assert_eq!(a.status, 200, "{}", a.body);
        assert!(!a.items().is_empty(), "{name}={value} selects something");
        for item in a.items() {
            assert_eq!(item[name], value, "{name} of {}", item["id"]);
        }
    }
}

#[tokio::test]
async fn a_bill_batch_renders_the_invoice_dates_it_was_created_with() {
    let (s, t) = setup().await;
    let body = json!({"bill_batch_type": "adhoc", "name": "Dated",
                      "invoice_date": "2026-05-01", "invoice_due_date": "2026-05-31T12:00:00Z"});
    let created = call(&s, &t, Method::POST, "/bill-batches", Some(&body)).await;
    assert_eq!(created.status, 200, "{}", created.body);
    // Dates are read in the tenant's zone (America/Chicago) and rendered with its offset.
    assert_eq!(created.body["invoice_date"], "2026-05-01T00:00:00-05:00");
    assert_eq!(
        created.body["invoice_due_date"],
        "2026-05-31T07:00:00-05:00"
    );
    let id = created.body["id"].as_str().expect("id").to_string();
    assert_eq!(
        read(&s, &t, &format!("/bill-batches/{id}")).await,
        created.body
    );
    // A batch created without them renders them as null.
    let seeded = read(&s, &t, "/bill-batches/1").await;
    let fields = seeded.as_object().expect("object");
    assert!(fields.contains_key("invoice_date") && fields.contains_key("invoice_due_date"));
}
