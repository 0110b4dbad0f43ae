//! Surface B single records and writes over HTTP: every read endpoint's representation,
//! agreement service updates, true-up relations and bill batch creation, with the 400/404
//! shapes they refuse with.

use e2e::billing::{assert_refused, get, send, setup, B};
use e2e::{body_refusals, Refusal};
use reqwest::Method;
use serde_json::{json, Value};

#[tokio::test]
async fn every_read_endpoint_renders_its_representation() {
    let (s, t) = setup().await;
    // (path, then JSON pointers into its body with the value there)
    let cases: Vec<(&str, Vec<(&str, Value)>)> = vec![
        (
            "/actions/1",
            vec![
                ("/action_type", json!("service")),
                ("/supports_approval", json!(true)),
            ],
        ),
        ("/bill-cycles/1/actions/3", vec![("/id", json!("3"))]),
        (
            "/adjustment-applications/3",
            vec![
                ("/account_adjustment/id", json!("3")),
                ("/account_adjustment/amount", json!(10)),
                ("/account_adjustment/unapplied_amount", json!(4.25)),
                (
                    "/account_adjustment/billing_account/account_num",
                    json!("ACC-1004"),
                ),
                (
                    "/account_adjustment/items/0/category/charge_category_type",
                    json!("Adjustment"),
                ),
                (
                    "/account_adjustment/occurred_on",
                    json!("2026-11-03T06:00:00-06:00"),
                ),
            ],
        ),
        (
            "/agreements/1",
            vec![
                (
                    "/true_up_adjustment_reason/name",
                    json!("Minimum commitment true-up"),
                ),
                ("/termination_flat_charge", json!(100)),
                ("/agreement_period", json!(12)),
            ],
        ),
        (
            "/bill-batches/1",
            vec![("/bill_batch_runs", json!([{"id": "1"}, {"id": "2"}]))],
        ),
        (
            "/bill-batches/1?expand=bill_batch_runs",
            vec![
                ("/bill_batch_runs/0/status", json!("CLOSED")),
                ("/bill_batch_runs/0/invoices/0", json!({"id": "1"})),
            ],
        ),
        (
            "/bill-batches/1?expand=bill_batch_runs.invoices",
            vec![
                (
                    "/bill_batch_runs/0/invoices/0/invoice_num",
                    json!("INV-0001"),
                ),
                ("/bill_batch_runs/0/invoices/0/amount", json!(310.5)),
            ],
        ),
        (
            "/bill-batches/1/billing-accounts?sort=-account_num",
            vec![("/0/cpq_discounts", json!([]))],
        ),
    ];
    for (path, fields) in &cases {
        let a = get(&s, &t, path, &[]).await;
        assert_eq!(a.status, 200, "{path}: {}", a.body);
        for (pointer, expected) in fields {
            assert_eq!(a.body.pointer(pointer), Some(expected), "{path} {pointer}");
        }
    }
    let action = get(&s, &t, "/actions/1", &[]).await.body;
    assert!(action["operations"][0]["id"].is_string(), "{action}");
    let cycle = get(&s, &t, "/bill-cycles/1/actions", &[]).await;
    assert!(
        cycle.items().iter().all(|a| a["id"] == "3"),
        "{}",
        cycle.body
    );

    let cats = get(&s, &t, "/adjustment-categories", &[("sort", "-priority")]).await;
    assert!(cats
        .items()
        .iter()
        .all(|c| c["charge_category_type"] == "Adjustment"));
    let priorities: Vec<i64> = cats
        .items()
        .iter()
        .map(|c| c["priority"].as_i64().unwrap())
        .collect();
    assert!(priorities.windows(2).all(|w| w[0] >= w[1]) && priorities.len() == 4);

    let batches = get(&s, &t, "/bill-batches", &[]).await;
    assert!(
        batches.items().iter().all(|b| b["status"] == "ACTIVE"),
        "status defaults to ACTIVE"
    );
    assert_eq!(batches.items().len(), 2);
    let all = get(
        &s,
        &t,
        "/bill-batches",
        &[("filter", "status IN ('ACTIVE','SUSPENDED','CANCELED')")],
    )
    .await;
    assert_eq!(
        all.items().len(),
        4,
        "a status named in filter replaces the default"
    );
    assert_eq!(
        get(&s, &t, "/bill-batches/1", &[("expand", "everything")])
            .await
            .status,
        400
    );
    let by_num = [("sort", "-account_num")];
    let accounts = get(&s, &t, "/bill-batches/1/billing-accounts", &by_num).await;
    let nums: Vec<&str> = accounts
        .items()
        .iter()
        .map(|a| a["account_num"].as_str().unwrap())
        .collect();
    assert_eq!(nums, ["ACC-1005", "ACC-1002", "ACC-1001"]);
}

#[tokio::test]
async fn agreement_service_update() {
    let (s, t) = setup().await;
    let path = format!("{B}/agreement-services/2");
    let body = json!({
        "next_service_pay_on_purchase": true,
        "accumulated_charges_amount": 0,
        "end_date": "2026-12-31",
        "end_action": "END",
        "next_agreement": {"id": "3"},
        "next_end_action": "RENEW",
        "next_service_product": {"id": "1"},
        "next_service_product_price": {"id": "1"},
        "preserve_service_price": true,
        "next_preserve_service_price": true,
        "minimum_amount": 99.99,
        "minimum_amount_currency_code": "EUR",
        "omit_minimum_amount": true,
        "true_up_charge_types": ["USAGE", "RECURRING", "USAGE"]
    });
    // serde_json's json! would round the amount through f64; send its exact text.
    let body = body.to_string().replace(
        "\"accumulated_charges_amount\":0",
        "\"accumulated_charges_amount\":1234.5600000000000000001",
    );
    let r = s
        .client
        .put(s.url(&path))
        .header("X-Api-Key", &t.api_key)
        .header("Prefer", "return=representation")
        .header("Content-Type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["preference-applied"], "return=representation");
    let text = r.text().await.unwrap();
    assert!(
        text.contains("\"accumulated_charges_amount\":1234.5600000000000000001"),
        "exact: {text}"
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["end_date"], "2026-12-31T00:00:00-06:00");
    assert_eq!(
        v["next_agreement"],
        json!({"name": "Marketplace monthly", "id": "3"})
    );
    assert_eq!(v["next_service_product"]["sku"], "CMP-100");
    assert_eq!(
        v["next_service_product_price"]["product_price_type"],
        "RECURRING"
    );
    assert_eq!(v["true_up_charge_types"], json!(["USAGE", "RECURRING"]));
    assert_eq!(
        get(&s, &t, "/agreement-services/2", &[]).await.body,
        v,
        "stored as answered"
    );

    // Partial: null clears, absent stays; Prefer minimal answers the SIMPLE form.
    let r = send(
        s.client
            .put(s.url(&path))
            .header("Prefer", "return=minimal")
            .json(&json!({"next_agreement": null, "true_up_charge_types": []})),
        &t,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("preference-applied"), Some("return=minimal"));
    assert!(r.body["next_agreement"].is_null());
    assert_eq!(r.body["next_service_product"], json!({"id": "1"}));
    assert_eq!(r.body["end_action"], "END");

    // Bad input is a 400 and applies nothing; on an unknown id the unknown field is checked
    // first (400), a valid body is a 404.
    let (known, unknown) = ("/agreement-services/2", "/agreement-services/99999");
    let cases: Vec<Refusal> = [
        (
            known,
            json!({"minimum_amount_currency_code": "XYZ", "end_action": "RENEW"}),
            400,
        ),
        (known, json!({"minimum_amount": -1}), 400),
        (known, json!({"minimum_amount": "12"}), 400),
        (known, json!({"end_date": "2024-01-01"}), 400),
        (known, json!({"end_date": "someday"}), 400),
        (known, json!({"agreement": {"id": "999"}}), 400),
        (
            known,
            json!({"next_service_product_price": {"id": "3"}}),
            400,
        ),
        (known, json!({"id": "7"}), 400),
        (known, json!({"status": "CANCELED"}), 400),
        (unknown, json!({"renewed_by_mistake": true}), 400),
        (unknown, json!({"omit_minimum_amount": true}), 404),
    ]
    .into_iter()
    .map(|(path, body, status)| (Method::PUT, path, Some(body), status, ""))
    .collect();
    assert_refused(&s, &t, &cases).await;
    assert_eq!(
        get(&s, &t, "/agreement-services/2", &[]).await.body["end_action"],
        "END"
    );
}

#[tokio::test]
async fn true_up_relations_lifecycle() {
    let (s, t) = setup().await;
    let base = format!("{B}/agreement-services/3/true-up-charge-type-relations");
    let list = send(s.client.get(s.url(&base)), &t).await;
    assert_eq!(list.total(), 2);
    let created = send(
        s.client
            .post(s.url(&base))
            .header("Prefer", "return=representation")
            .json(&json!({"true_up_charge_type": "ONE_TIME"})),
        &t,
    )
    .await;
    assert_eq!(created.status, 201);
    assert_eq!(
        created.header("preference-applied"),
        Some("return=representation")
    );
    assert_eq!(created.body["agreement_service"], json!({"id": "3"}));
    let id = created.body["id"].as_str().unwrap().to_string();
    let one = send(s.client.get(s.url(&format!("{base}/{id}"))), &t).await;
    assert_eq!(one.body, created.body);
    // A duplicate or blank type, another service's relation and an unknown service.
    let relations = "/agreement-services/3/true-up-charge-type-relations";
    let (dup, blank) = (
        json!({"true_up_charge_type": "ONE_TIME"}),
        json!({"true_up_charge_type": " "}),
    );
    let other = format!("/agreement-services/1/true-up-charge-type-relations/{id}");
    let unknown = "/agreement-services/99999/true-up-charge-type-relations";
    let x = json!({"true_up_charge_type": "X"});
    assert_refused(
        &s,
        &t,
        &[
            (Method::POST, relations, Some(dup), 400, ""),
            (Method::POST, relations, Some(blank), 400, ""),
            (Method::DELETE, &other, None, 404, ""),
            (Method::POST, unknown, Some(x), 404, ""),
        ],
    )
    .await;
    let filtered = send(
        s.client
            .get(s.url(&base))
            .query(&[("filter", "true_up_charge_type LIKE 'one%'")]),
        &t,
    )
    .await;
    assert_eq!(filtered.ids(), vec![id.parse::<i64>().unwrap()]);
    let service = get(&s, &t, "/agreement-services/3", &[]).await;
    assert!(service.body["true_up_charge_types"]
        .as_array()
        .unwrap()
        .contains(&json!("ONE_TIME")));
    let deleted = send(s.client.delete(s.url(&format!("{base}/{id}"))), &t).await;
    assert_eq!(deleted.status, 204);
    assert_eq!(
        send(s.client.get(s.url(&format!("{base}/{id}"))), &t)
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn bill_batch_creation() {
    let (s, t) = setup().await;
    let body = json!({"bill_batch_type": "adhoc", "name": "December run", "description": "made by a test",
        "invoice_date": "2026-12-01", "invoice_due_date": "2026-12-31T00:00:00Z", "auto_approve": true, "use_payment_term": true});
    let created = send(
        s.client
            .post(s.url(&format!("{B}/bill-batches")))
            .header("Prefer", "return=representation")
            .json(&body),
        &t,
    )
    .await;
    assert_eq!(
        created.status, 200,
        "the interface's table says 200: {}",
        created.body
    );
    assert_eq!(
        created.header("preference-applied"),
        Some("return=representation")
    );
    assert_eq!(created.body["status"], "ACTIVE");
    assert_eq!(created.body["currency_code"], "USD");
    assert_eq!(created.body["auto_approve"], json!(true));
    let id = created.body["id"].as_str().unwrap();
    assert_eq!(
        get(&s, &t, &format!("/bill-batches/{id}"), &[]).await.body,
        created.body
    );
    let listed = get(&s, &t, "/bill-batches", &[("name", "December run")]).await;
    assert_eq!(listed.ids(), vec![id.parse::<i64>().unwrap()]);
    let bodies = [
        json!({"bill_batch_type": "weekly", "name": "x"}),
        json!({"bill_batch_type": "adhoc", "name": " "}),
        json!({"bill_batch_type": "adhoc"}),
        json!({"bill_batch_type": "adhoc", "name": "x", "invoice_date": "2026-12-02", "invoice_due_date": "2026-12-01"}),
        json!({"bill_batch_type": "adhoc", "name": "x", "status": "CANCELED"}),
    ];
    let bodies = bodies.into_iter().map(|bad| (bad, 400)).collect();
    let cases = body_refusals(Method::POST, "/bill-batches", bodies);
    assert_refused(&s, &t, &cases).await;
}

/// The spec lists Preference-Applied on every PUT/POST answer: without a Prefer header it
/// names the representation answered (`return=representation`, or `return=minimal` when
/// `return=SIMPLE` asked for the SIMPLE form).
#[tokio::test]
async fn writes_answer_preference_applied_without_prefer() {
    let (s, t) = setup().await;
    let put = send(
        s.client
            .put(s.url(&format!("{B}/agreement-services/2")))
            .json(&json!({"end_action": "END"})),
        &t,
    )
    .await;
    assert_eq!(put.status, 200, "{}", put.body);
    assert_eq!(
        put.header("preference-applied"),
        Some("return=representation")
    );
    let simple = send(
        s.client
            .put(s.url(&format!("{B}/agreement-services/2?return=SIMPLE")))
            .json(&json!({"end_action": "END"})),
        &t,
    )
    .await;
    assert_eq!(simple.status, 200, "{}", simple.body);
    assert_eq!(simple.header("preference-applied"), Some("return=minimal"));
    let relation = send(
        s.client
            .post(s.url(&format!(
                "{B}/agreement-services/3/true-up-charge-type-relations"
            )))
            .json(&json!({"true_up_charge_type": "ONE_TIME"})),
        &t,
    )
    .await;
    assert_eq!(relation.status, 201, "{}", relation.body);
    assert_eq!(
        relation.header("preference-applied"),
        Some("return=representation")
    );
    let batch = send(
        s.client
            .post(s.url(&format!("{B}/bill-batches")))
            .json(&json!({"bill_batch_type": "adhoc", "name": "No prefer"})),
        &t,
    )
    .await;
    assert_eq!(batch.status, 200, "{}", batch.body);
    assert_eq!(
        batch.header("preference-applied"),
        Some("return=representation")
    );
}

/// A path with one trailing slash is the same resource as without it (reads and writes),
/// query string kept.
#[tokio::test]
async fn a_trailing_slash_serves_the_same_resource() {
    let (s, t) = setup().await;
    let plain = get(&s, &t, "/agreements", &[("page_size", "2")]).await;
    let slashed = get(&s, &t, "/agreements/", &[("page_size", "2")]).await;
    assert_eq!(slashed.status, 200, "{}", slashed.body);
    assert_eq!(slashed.body, plain.body);
    let put = send(
        s.client
            .put(s.url(&format!("{B}/agreement-services/2/")))
            .json(&json!({"end_action": "END"})),
        &t,
    )
    .await;
    assert_eq!(put.status, 200, "{}", put.body);
    assert_eq!(put.body["id"], "2");
}
