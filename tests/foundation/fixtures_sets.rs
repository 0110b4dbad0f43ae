//! A catalogue that refuses mistakes, and dry runs, over HTTP: a fixture document whose value
//! lies outside one of the platform's closed sets (`shared::fixtures::sets`) is a 400 in the admin
//! shape naming the JSON path and the allowed values, and creates nothing (no tenant, no
//! record of an existing one); `?dry_run=true` on a tenant's creation and on an apply answers
//! what would be created and updated and changes nothing (the tenant list, the tenant's data
//! and its id sequences).

use crate::fixtures::docs_example;
use crate::fixtures_export::{create_from, export, first_difference};
use e2e::TestServer;
use reqwest::Method;
use serde_json::{json, Value};

/// The names of the tenants the server holds.
async fn tenant_names(s: &TestServer) -> Vec<String> {
    let r = s
        .admin_call(Method::GET, "/sandbox/v1/tenants?page_size=100", None)
        .await;
    let list: Value = r.json().await.expect("json");
    list.as_array()
        .expect("array")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

/// A product with one price of each given kind, as a document.
fn priced(product_price_type: &str, price_type: &str) -> Value {
    json!({
        "products": [{"id": 1, "name": "Compute"}],
        "product_prices": [
            {"product_id": 1, "product_price_type": "ONE_TIME", "price_type": "FLAT",
             "amount": 10},
            {"product_id": 1, "product_price_type": product_price_type,
             "price_type": price_type, "amount": 1}
        ]
    })
}

#[tokio::test]
async fn a_value_outside_its_closed_set_names_its_path_and_the_allowed_values_and_creates_nothing()
{
    let s = TestServer::start().await;
    let existing = create_from(&s, "sets-existing", "UTC", &docs_example()).await;
    let before = export(&s, &existing).await;
    let cases: Vec<(Value, &str)> = vec![
        (
            priced("MONTHLY", "FLAT"),
            "product_prices[1].product_price_type: 'MONTHLY' is not one of RECURRING, ONE_TIME",
        ),
        (
            priced("RECURRING", "PER_UNIT"),
            "product_prices[1].price_type: 'PER_UNIT' is not one of FLAT",
        ),
        (
            priced("NOT_A_PRICE_TYPE", "FLAT"),
            "product_prices[1].product_price_type: 'NOT_A_PRICE_TYPE' is not one of",
        ),
        (
            json!({"billing_accounts": [{"account_num": "A-1", "name": "A",
                                         "currency_code": "USD", "bill_type": "FAX"}]}),
            "billing_accounts[0].bill_type: 'FAX' is not one of PAPER, EMAIL, PAPER_EMAIL, NONE",
        ),
        (
            json!({"billing_accounts": [{"account_num": "A-1", "name": "A",
                                         "currency_code": "XYZ"}]}),
            "billing_accounts[0].currency_code: 'XYZ' is not one of",
        ),
        (
            json!({"bill_cycles": [{"name": "Late", "day_of_month": 31}]}),
            "bill_cycles[0].day_of_month: 31 is not one of 1 to 28",
        ),
        (
            json!({"services": [{"billing_account_id": 1, "product_id": 1,
                                 "start_date": "now", "resources": [{"identifier": "x"},
                                 {"identifier": "y", "status": "ON"}]}]}),
            "services[0].resources[1].status: 'ON' is not one of ACTIVE, INACTIVE",
        ),
        (
            json!({"payments": [{"billing_account_id": 1, "amount": 5, "occurred_on": "now",
                                 "id": 9, "status": "SETTLED"}]}),
            "payments[0].status: 'SETTLED' is not one of DRAFT, PROCESSING, COMPLETED",
        ),
    ];
    for (i, (doc, message)) in cases.iter().enumerate() {
        let name = format!("sets-refused-{i}");
        let body = json!({"name": name, "time_zone": "UTC", "fixtures": doc});
        let r = s
            .admin_call(Method::POST, "/sandbox/v1/tenants", Some(&body))
            .await;
        let (status, code, got) = e2e::error_body(r).await;
        assert_eq!(
            (status, code.as_str()),
            (400, "BAD_REQUEST"),
            "{doc}: {got}"
        );
        assert!(got.starts_with(message), "{doc}: {got}");
        assert!(
            !tenant_names(&s).await.contains(&name),
            "{name} was created"
        );
        // Applied to an existing tenant: refused the same way, nothing written.
        let path = format!("/sandbox/v1/tenants/{}/fixtures", existing.id);
        let r = s.admin_call(Method::POST, &path, Some(doc)).await;
        let (status, _, got) = e2e::error_body(r).await;
        assert_eq!(status, 400, "{doc}: {got}");
        assert!(got.starts_with(message), "{doc}: {got}");
    }
    assert_eq!(
        first_difference("", &before, &export(&s, &existing).await),
        None
    );
    // Every member of a set is taken: the two price kinds, flat.
    s.create_tenant_with(json!({"name": "sets-ok", "fixtures": priced("RECURRING", "FLAT")}))
        .await;
}

#[tokio::test]
async fn a_dry_run_of_an_apply_reports_what_would_change_and_changes_nothing() {
    let s = TestServer::start().await;
    let t = create_from(&s, "dry-apply", "UTC", &docs_example()).await;
    let before = export(&s, &t).await;
    let path = format!("/sandbox/v1/tenants/{}/fixtures", t.id);
    let doc = json!({
        "products": [{"name": "Storage"}, {"name": "Backup"}, {"id": 1, "sku": "MSG-9"}],
        "billing_accounts": [{"id": 1, "name": "Renamed"}],
        "charge_categories": [{"name": "Fees", "charge_category_type": "Additional Fee"}]
    });
    let r = s
        .admin_call(Method::POST, &format!("{path}?dry_run=true"), Some(&doc))
        .await;
    assert_eq!(r.status(), 200);
    let answer: Value = r.json().await.expect("json");
    assert_eq!(answer["dry_run"], true, "{answer}");
    assert_eq!(
        answer["created"],
        json!({"products": 2, "charge_categories": 1}),
        "{answer}"
    );
    assert_eq!(
        answer["updated"],
        json!({"products": 1, "billing_accounts": 1}),
        "{answer}"
    );
    // Nothing changed: the data, and the id sequences (the next product is numbered as if
    // the dry run had never been).
    assert_eq!(first_difference("", &before, &export(&s, &t).await), None);
    let next = before["products"]
        .as_array()
        .expect("products")
        .iter()
        .filter_map(|p| p["id"].as_i64())
        .max()
        .unwrap_or(0)
        + 1;
    let r = s
        .admin_call(
            Method::POST,
            &path,
            Some(&json!({"products": [{"name": "Real"}]})),
        )
        .await;
    let answer: Value = r.json().await.expect("json");
    assert_eq!(answer["dry_run"], false, "{answer}");
    assert_eq!(answer["created"], json!({"products": 1}), "{answer}");
    let after = export(&s, &t).await;
    let real = after["products"]
        .as_array()
        .expect("products")
        .iter()
        .find(|p| p["name"] == "Real")
        .cloned()
        .unwrap_or_default();
    assert_eq!(real["id"], next, "{after}");
    // A dry run refuses what the apply refuses, with the same path.
    let r = s
        .admin_call(
            Method::POST,
            &format!("{path}?dry_run=true"),
            Some(&priced("RECURRING", "PER_UNIT")),
        )
        .await;
    let (status, _, message) = e2e::error_body(r).await;
    assert_eq!(status, 400, "{message}");
    assert!(
        message.starts_with("product_prices[1].price_type:"),
        "{message}"
    );
    let r = s
        .admin_call(Method::POST, &format!("{path}?dry_run=maybe"), Some(&doc))
        .await;
    assert_eq!(r.status(), 400);
}

#[tokio::test]
async fn a_dry_run_of_a_tenant_creation_reports_what_would_be_created_and_registers_nothing() {
    let s = TestServer::start().await;
    let names = tenant_names(&s).await;
    let body = json!({"name": "dry-new", "time_zone": "UTC",
        "clock": {"frozen_at": "2030-03-01T00:00:00Z"}, "fixtures": docs_example()});
    let r = s
        .admin_call(
            Method::POST,
            "/sandbox/v1/tenants?dry_run=true",
            Some(&body),
        )
        .await;
    assert_eq!(r.status(), 200);
    let answer: Value = r.json().await.expect("json");
    assert_eq!(answer["dry_run"], true, "{answer}");
    assert_eq!(answer["name"], "dry-new", "{answer}");
    assert!(answer.get("api_key").is_none(), "{answer}");
    assert_eq!(
        answer["created"],
        json!({"charge_categories": 1, "products": 1, "usage_rules": 2, "agreements": 1,
               "billing_accounts": 1, "services": 1}),
        "{answer}"
    );
    assert_eq!(tenant_names(&s).await, names, "a dry run registers nothing");
    // A refusal names its path, as the creation's would.
    let mut bad = body.clone();
    bad["fixtures"] = priced("MONTHLY", "FLAT");
    let r = s
        .admin_call(Method::POST, "/sandbox/v1/tenants?dry_run=true", Some(&bad))
        .await;
    let (status, _, message) = e2e::error_body(r).await;
    assert_eq!(status, 400, "{message}");
    assert!(
        message.starts_with("product_prices[1].product_price_type:"),
        "{message}"
    );
    // The name is still free, and the document loads for real.
    s.create_tenant_with(body).await;
    let r = s
        .admin_call(
            Method::POST,
            "/sandbox/v1/tenants?dry_run=true",
            Some(&json!({"name": "dry-new"})),
        )
        .await;
    assert_eq!(r.status(), 409, "a taken name is refused by a dry run too");
}
