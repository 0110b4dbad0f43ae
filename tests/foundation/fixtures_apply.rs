//! Applying a document to an existing tenant over HTTP (`POST /sandbox/v1/tenants/{id}/fixtures`):
//! records whose id exists are updated in place (fields of their own row, checked by the
//! kind's create rules), the others created, nothing deleted, all or nothing; nested lists
//! and derived fields that would change, existing ids of kinds not updated in place, and
//! unknown fields of any record are refused with their path.

use crate::fixtures::docs_example;
use crate::fixtures_export::{create_from, export, first_difference};
use e2e::billing::{post_ok, USAGE_BULK};
use e2e::legacy::{attr, read, ROOT};
use e2e::{TestServer, TestTenant};
use reqwest::Method;
use serde_json::{json, Value};

async fn apply(s: &TestServer, t: &TestTenant, doc: &Value) -> (u16, String) {
    let path = format!("/sandbox/v1/tenants/{}/fixtures", t.id);
    let r = s.admin_call(Method::POST, &path, Some(doc)).await;
    let status = r.status().as_u16();
    if status == 200 {
        return (status, String::new());
    }
    let (status, _, message) = e2e::error_body(r).await;
    (status, message)
}

/// The charge of one COUNT event of `amount` on `srid`, yesterday.
async fn charge(s: &TestServer, t: &TestTenant, srid: &str, amount: i64) -> Value {
    let day = (chrono::Utc::now() - chrono::Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    let body = json!({"mode": "FAIL_ON_EXISTING", "usage_events": [
        {"start_time": day, "service_resource_identifier": srid, "usage_uom": "COUNT",
         "usage_amount": amount}]});
    let v = post_ok(s, t, USAGE_BULK, &body).await;
    v["rated_events"][0]["total_charge"].clone()
}

#[tokio::test]
async fn records_with_existing_ids_are_updated_and_the_rest_created() {
    let s = TestServer::start().await;
    let t = create_from(&s, "apply", "UTC", &docs_example()).await;
    let before = export(&s, &t).await;
    // Applying the tenant's own export changes nothing.
    assert_eq!(apply(&s, &t, &before).await, (200, String::new()));
    assert_eq!(first_difference("", &before, &export(&s, &t).await), None);

    let doc = json!({
        "billing_accounts": [{"id": 1, "name": "Acme Two", "status": "SUSPENDED",
                              "start_date": "2025-01-01"}],
        "usage_rules": [{"id": 2, "rate": {"expression": "amount * 0.5"}}],
        "products": [{"name": "Created"}, {"id": 1, "sku": "MSG-2"}],
        "invoices": [{"id": 7, "invoice_num": "INV-7", "billing_account_id": 1, "amount": 12.5,
                      "occurred_on": "now-1d", "due_date": "now+14d", "amount_to_pay": 2.5}]
    });
    assert_eq!(apply(&s, &t, &doc).await, (200, String::new()));
    let after = export(&s, &t).await;
    let account = &after["billing_accounts"][0];
    assert_eq!(
        (&account["name"], &account["status"], &account["start_date"]),
        (
            &json!("Acme Two"),
            &json!("SUSPENDED"),
            &json!("2025-01-01T00:00:00.000Z")
        )
    );
    assert_eq!(
        account["account_num"], "ACME-1",
        "fields not given are kept"
    );
    assert_eq!(after["products"][0]["sku"], "MSG-2");
    assert_eq!(after["products"][0]["name"], "Messaging");
    assert_eq!(after["products"][1]["name"], "Created");
    assert_eq!(after["products"][1]["id"], 2);
    assert_eq!(
        after["usage_rules"][1]["rate"]["expression"],
        "amount * 0.5"
    );
    assert_eq!(
        after["usage_rules"][1]["name"],
        before["usage_rules"][1]["name"]
    );
    assert_eq!(after["invoices"][0]["amount_to_pay"], 2.5);
    // Surface A reads the updated account; the updated rule rates by its new expression.
    let r = s
        .get_with_basic(&format!("{ROOT}/billingAccounts/1"), &t)
        .await;
    let a = read(r).await;
    assert_eq!(attr(a.el(), "name"), "Acme Two", "{}", a.body);
    assert_eq!(charge(&s, &t, "acme-msg-2", 10).await, json!(5));
    // An update of an invoice's own fields keeps the state it is not given.
    let doc = json!({"invoices": [{"id": 7, "description": "Edited"}]});
    assert_eq!(apply(&s, &t, &doc).await, (200, String::new()));
    let inv = &export(&s, &t).await["invoices"][0];
    assert_eq!(
        (&inv["description"], &inv["amount_to_pay"]),
        (&json!("Edited"), &json!(2.5))
    );
}

#[tokio::test]
async fn refused_updates_name_their_path_and_apply_nothing() {
    let s = TestServer::start().await;
    let mut doc = docs_example();
    doc["payments"] =
        json!([{"id": 1, "billing_account_id": 1, "amount": 5, "occurred_on": "now"}]);
    doc["invoices"] = json!([{"id": 1, "invoice_num": "I-1", "billing_account_id": 1,
        "amount": 10, "occurred_on": "now-1d", "due_date": "now+9d"}]);
    doc["payment_applications"] =
        json!([{"payment_id": 1, "invoice_ids": [1], "applied_on": "now"}]);
    doc["ledgers"] = json!([{"id": 1, "name": "Main"}]);
    let t = create_from(&s, "refused", "UTC", &doc).await;
    let before = export(&s, &t).await;
    // A valid update first, so each refusal also shows it was rolled back.
    let ok = json!({"id": 1, "name": "Never written"});
    let cases = [
        (
            json!({"products": [ok], "billing_accounts": [{"id": 1, "status": "NOPE"}]}),
            "billing_accounts[0].status",
        ),
        (
            json!({"products": [ok], "billing_accounts": [{"id": 1, "nmae": "x"}]}),
            "billing_accounts[0].nmae: unknown field",
        ),
        (
            json!({"products": [ok], "ledgers": [{"name": "L2", "bogus": 1}]}),
            "ledgers[0].bogus: unknown field",
        ),
        (
            json!({"products": [ok], "services": [{"id": 1, "resources": [{"identifier": "x"}]}]}),
            "services[0].resources: cannot be changed in place",
        ),
        (
            json!({"products": [ok], "services": [{"id": 1, "start_date": "2020-01-01"}]}),
            "services[0].start_date: cannot be changed in place",
        ),
        (
            json!({"products": [ok], "usage_rules": [{"id": 1, "name": "renamed"},
                {"product_id": 1, "position": 3, "name": "x", "charge_category_id": 1,
                 "uom": "COUNT", "rate_kind": "FORMULA", "rate": {"expression": "max(1"}}]}),
            "usage_rules[1]",
        ),
        (
            json!({"products": [ok], "usage_rules": [{"id": 2, "rate": {"expression": "max(1"}}]}),
            "usage_rules[0]",
        ),
        (
            json!({"products": [ok], "payment_applications": [{"id": 1, "payment_id": 1, "invoice_id": 1, "amount": 1, "applied_on": "now"}]}),
            "payment_applications[0]: payment_applications 1 exists",
        ),
        (
            json!({"products": [ok], "services": [{"id": 1, "agreement_id": 99}]}),
            "services[0].agreement_id: no agreement 99",
        ),
        (
            json!({"products": [ok], "ledgers": [{"id": 1, "name": "Main"}, {"id": 2, "name": "Main"}]}),
            "ledgers[1]",
        ),
        (
            json!({"products": [ok, {"id": 5, "name": "x", "sku": 3}]}),
            "products[1].sku",
        ),
    ];
    for (doc, needle) in &cases {
        let (status, message) = apply(&s, &t, doc).await;
        assert_eq!(status, 400, "{needle}: {message}");
        assert!(message.starts_with(needle), "{needle}: {message}");
    }
    assert_eq!(first_difference("", &before, &export(&s, &t).await), None);
}

#[tokio::test]
async fn invoice_lines_are_loaded_checked_against_the_amount_and_exported() {
    let s = TestServer::start().await;
    let t = create_from(&s, "lines", "UTC", &docs_example()).await;
    let lines = json!([
        {"line_type": "RECURRING", "amount": 10, "description": "Seats", "product_id": 1,
         "period_start_date": "2026-01-01", "period_end_date": "2026-02-01"},
        {"line_type": "USAGE", "amount": 2.5}]);
    let doc = json!({"invoices": [
        {"id": 50, "invoice_num": "INV-50", "billing_account_id": 1, "amount": 12.5,
         "occurred_on": "now-1d", "lines": lines},
        {"id": 51, "invoice_num": "INV-51", "billing_account_id": 1, "amount": 3,
         "occurred_on": "now-1d"}]});
    assert_eq!(apply(&s, &t, &doc).await, (200, String::new()));
    let after = export(&s, &t).await;
    let exported = |id: i64| {
        after["invoices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["id"] == id)
            .cloned()
            .expect("exported invoice")
    };
    let lines = exported(50)["lines"].clone();
    assert_eq!(lines[0]["line_type"], "RECURRING", "{lines}");
    assert_eq!(
        lines[0]["period_start_date"], "2026-01-01T00:00:00.000Z",
        "{lines}"
    );
    assert_eq!(
        (&lines[0]["amount"], &lines[1]["amount"]),
        (&json!(10), &json!(2.5))
    );
    // Without lines: one AMOUNT line of the whole amount (Surface A below), which the export
    // leaves implied, as the document did, so the export holds no more records than it.
    assert_eq!(exported(51).get("lines"), None);
    // Surface A shows the same lines: (lineType, amount) of each line of invoice `eid`.
    let (s_ref, t_ref) = (&s, &t);
    let surface_a_lines = |eid: i64| async move {
        let (s, t) = (s_ref, t_ref);
        let r = read(
            s.client
                .get(s.url(&format!("{ROOT}/invoices/{eid}/lines")))
                .header("Authorization", t.basic_header())
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.body);
        r.el()
            .children
            .iter()
            .map(|l| {
                (
                    attr(l, "lineType").to_string(),
                    attr(l, "amount").to_string(),
                )
            })
            .collect::<Vec<_>>()
    };
    let types: Vec<String> = surface_a_lines(50).await.into_iter().map(|l| l.0).collect();
    assert_eq!(types, ["RECURRING", "USAGE"]);
    assert_eq!(
        surface_a_lines(51).await,
        [("AMOUNT".to_string(), "3".to_string())]
    );

    // Lines that do not add up to the amount, an unknown type or member: 400, nothing applied.
    let bad = |amount: f64, line: Value| {
        json!({"invoices": [{"invoice_num": "INV-60", "billing_account_id": 1,
            "amount": amount, "occurred_on": "now-1d", "lines": [line]}]})
    };
    for (doc, needle) in [
        (
            bad(12.0, json!({"line_type": "AMOUNT", "amount": 10})),
            "lines: they add up to 10, not to the invoice's amount 12",
        ),
        (
            bad(10.0, json!({"line_type": "TAX", "amount": 10})),
            "invoices[0].lines[0].line_type",
        ),
        (
            bad(
                10.0,
                json!({"line_type": "AMOUNT", "amount": 10, "colour": "red"}),
            ),
            "colour",
        ),
    ] {
        let (status, message) = apply(&s, &t, &doc).await;
        assert_eq!(status, 400, "{message}");
        assert!(message.contains(needle), "{needle} in {message}");
    }
    assert_eq!(first_difference("", &after, &export(&s, &t).await), None);
}
