//! The record bound of a fixture document (`SANDBOX_MAX_FIXTURE_RECORDS`): a tenant creation
//! or a fixtures apply whose document holds more records (every object of a list at any
//! depth, and `generated_services.count`) is refused with 400 before anything is done (no
//! tenant created, nothing applied), instead of running until the request deadline cuts it
//! off; a document at the bound is applied in full; an export the bound would refuse is not
//! given (422), so every export loads. The server here has a small bound, so a document at
//! it is quick to apply; the default's time is `large_export_apply_time`'s business.

use crate::fixtures_export::export;
use e2e::{TestServer, TestTenant, ADMIN_KEY};
use reqwest::Method;
use serde_json::{json, Value};

/// The bound of the server under test.
const BOUND: u64 = 2_000;

/// A server whose documents hold at most [`BOUND`] records.
async fn bounded() -> TestServer {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = shared::config::Config::new(dir.path(), Some(ADMIN_KEY.to_string()));
    config.max_fixture_records = BOUND;
    let state = shared::web::AppState::new(config).expect("state");
    let base = e2e::listen(state.clone()).await;
    TestServer::from_parts(base, state, dir)
}

/// A document of exactly `records` records (at least 12): a product, an agreement, 10
/// accounts, services numbered by `generated_services`, and invoices.
fn document(records: u64) -> Value {
    let accounts: Vec<Value> = (1..=10)
        .map(|i| {
            json!({"id": i, "account_num": format!("A-{i}"), "name": format!("a{i}"),
                   "currency_code": "USD", "start_date": "2026-01-01"})
        })
        .collect();
    // What is left after the product, the agreement and the accounts: a third services (two
    // records each: the service and its resource), a third invoices, one more invoice if the
    // rest is odd.
    let rest = records - 12;
    let services = rest / 3;
    let invoices = rest - 2 * services;
    let invoices: Vec<Value> = (1..=invoices)
        .map(|i| {
            json!({"id": i, "invoice_num": format!("N-{i}"), "billing_account_id": i % 10 + 1,
                   "amount": 10, "occurred_on": "2026-10-01", "due_date": "2026-11-01"})
        })
        .collect();
    let doc = json!({
        "products": [{"id": 1, "name": "P", "sku": "P-1"}],
        "agreements": [{"id": 1, "name": "M", "agreement_period": 1, "status": "ACTIVE",
            "end_action": "RENEW", "valid_from": "2020-01-01", "valid_to": "2030-01-01",
            "product_ids": [1]}],
        "billing_accounts": accounts,
        "generated_services": {"first_id": 1, "count": services,
            "billing_account_ids": (1..=10).collect::<Vec<i64>>(),
            "products": [[1, 1]], "statuses": ["ACTIVE"], "currencies": ["USD"],
            "end_actions": ["RENEW"], "true_up_charge_types": ["MINIMUM"],
            "first_start": "2020-01-01"},
        "invoices": invoices,
    });
    assert_eq!(shared::fixtures::document::records_in(&doc), records);
    doc
}

async fn tenant_count(s: &TestServer) -> usize {
    let r = s
        .admin_call(Method::GET, "/sandbox/v1/tenants?limit=100", None)
        .await;
    let v: Value = r.json().await.expect("tenants");
    v["tenants"].as_array().map_or(0, Vec::len)
}

/// Creates a tenant from `doc`: its status and its answer.
async fn create(s: &TestServer, name: &str, doc: Value) -> (u16, Value) {
    let body = json!({"name": name, "time_zone": "UTC", "fixtures": doc});
    let r = s
        .admin_call(Method::POST, "/sandbox/v1/tenants", Some(&body))
        .await;
    let status = r.status().as_u16();
    (status, r.json().await.expect("json"))
}

async fn apply(s: &TestServer, t: &TestTenant, doc: &Value) -> (u16, Value) {
    let path = format!("/sandbox/v1/tenants/{}/fixtures", t.id);
    let r = s.admin_call(Method::POST, &path, Some(doc)).await;
    let status = r.status().as_u16();
    (status, r.json().await.expect("json"))
}

#[tokio::test]
async fn a_document_over_the_record_bound_is_refused_up_front_and_one_at_it_is_applied() {
    let s = bounded().await;
    let before = tenant_count(&s).await;

    // One record over: refused, naming the count and the bound; no tenant created.
    let (status, answer) = create(&s, "over", document(BOUND + 1)).await;
    assert_eq!(status, 400, "{answer}");
    let message = answer["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("holds {} records", BOUND + 1))
            && message.contains(&format!("at most {BOUND}")),
        "{message}"
    );
    assert_eq!(
        tenant_count(&s).await,
        before,
        "a refused creation made a tenant"
    );

    // At the bound: created, every record there.
    let t = s
        .create_tenant_with(json!({"name": "at", "time_zone": "UTC", "fixtures": document(BOUND)}))
        .await;
    let exported = export(&s, &t).await;
    let services = exported["services"].as_array().map_or(0, Vec::len) as u64;
    let invoices = exported["invoices"].as_array().map_or(0, Vec::len) as u64;
    assert_eq!(2 * services + invoices + 12, BOUND);

    // Applied to an existing tenant: the same bound, nothing applied past it.
    let (status, answer) = apply(&s, &t, &document(BOUND + 1)).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(
        export(&s, &t).await,
        exported,
        "a refused apply changed the tenant"
    );

    // The tenant grown past the bound by another document: its export would not load, so it
    // is not given.
    let more = json!({"billing_accounts": [{"id": 11, "account_num": "A-11", "name": "a11",
        "currency_code": "USD", "start_date": "2026-01-01"}]});
    let (status, answer) = apply(&s, &t, &more).await;
    assert_eq!(status, 200, "{answer}");
    let r = s
        .admin_call(
            Method::GET,
            &format!("/sandbox/v1/tenants/{}/fixtures", t.id),
            None,
        )
        .await;
    let (status, code, message) = e2e::error_body(r).await;
    assert_eq!(
        (status, code.as_str()),
        (422, "EXPORT_TOO_LARGE"),
        "{message}"
    );
    assert!(message.contains(&format!("at most {BOUND}")), "{message}");
}
