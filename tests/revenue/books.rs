//! The revenue books balance (docs/revenue.md, "Posting rules"): a small catalogue (a
//! recurring and a one-time price, FLAT usage) on two accounts and two bill cycles, one paying
//! automatically, walked two and a half months on the tenant clock; then every source is
//! collected and one ledger run posts it all. Per account of the chart, the journal entries
//! net (debits positive, credits negative) to what the other surfaces say: Unbilled
//! Receivables to zero (every rated event was invoiced), the revenue accounts to the amounts
//! invoiced, Accounts Receivable to what the open invoices still ask, Cash to what was paid.
//! Every invoice holds lines (`invoices/{eid}/lines` on Surface A) that add up to its amount.
//!
//! Expected amounts come from Surface A (invoices, amounts to pay, payments), never from the
//! ledger itself.

use e2e::legacy::{attr, dec, Legacy};
use e2e::revenue::{net, with_books, Rev};
use e2e::TestServer;
use reqwest::Method;
use rust_decimal::Decimal;
use serde_json::{json, Value};

fn catalogue() -> Value {
    with_books(
        json!({
            "billing_account_categories": [{"id": 1, "name": "Customers", "type": "CUSTOMER",
                "description": "Customers", "status": "BA_CATEGORY_ACTIVE"}],
            "bill_cycles": [{"id": 1, "name": "On the 1st", "day_of_month": 1},
                            {"id": 2, "name": "On the 15th", "day_of_month": 15}],
            "billing_accounts": [
                {"id": 1, "account_num": "ACC-1", "name": "Pays automatically",
                 "billing_account_category_id": 1, "bill_cycle_id": 1, "bill_type": "EMAIL",
                 "automatic_recurring_payment": true, "start_date": "2029-12-01",
                 "currency_code": "USD"},
                {"id": 2, "account_num": "ACC-2", "name": "Pays by hand",
                 "billing_account_category_id": 1, "bill_cycle_id": 2, "bill_type": "EMAIL",
                 "automatic_recurring_payment": false, "start_date": "2029-12-01",
                 "currency_code": "USD"}],
            "products": [{"id": 1, "name": "Compute", "sku": "COMPUTE"}],
            "product_prices": [
                {"id": 1, "product_id": 1, "product_price_type": "RECURRING", "price_type": "FLAT",
                 "amount": 31.0},
                {"id": 2, "product_id": 1, "product_price_type": "ONE_TIME", "price_type": "FLAT",
                 "amount": 12.5}],
            "charge_categories": [{"id": 1, "name": "Compute Usage",
                "charge_category_type": "Usage", "priority": 10}],
            "usage_rules": [{"id": 1, "product_id": 1, "position": 1, "name": "Hours",
                "charge_category_id": 1, "uom": "HOUR", "rate_kind": "FLAT",
                "rate": {"rate": 0.25}}],
            "agreements": [{"id": 1, "name": "Yearly", "agreement_period": 12, "status": "ACTIVE",
                "end_action": "RENEW", "prorate_on_cancel": true, "product_ids": [1],
                "valid_from": "2029-01-01", "valid_to": "2031-12-31"}],
            "services": [
                {"id": 1, "billing_account_id": 1, "product_id": 1, "agreement_id": 1,
                 "start_date": "2030-01-10", "end_action": "RENEW",
                 "resources": [{"identifier": "c-1"}]},
                {"id": 2, "billing_account_id": 2, "product_id": 1, "agreement_id": 1,
                 "start_date": "2030-01-05", "end_action": "RENEW",
                 "resources": [{"identifier": "c-2"}]}]
        }),
        &[2030],
    )
}

/// A tenant on the catalogue, its clock frozen on January 2nd, 2030 (UTC).
async fn tenant() -> Legacy {
    let s = TestServer::start().await;
    let t = s
        .create_tenant_with(json!({"name": "books", "time_zone": "UTC",
            "clock": {"frozen_at": "2030-01-02T00:00:00Z"}, "fixtures": catalogue()}))
        .await;
    Legacy { s, t }
}

async fn post_usage(a: &Legacy, srid: &str, hours: i64, start: &str) {
    let r =
        a.s.client
            .post(a.s.url("/billing/2/usage-events/bulk"))
            .header("X-Api-Key", &a.t.api_key)
            .json(&json!({"mode": "FAIL_ON_EXISTING",
                "usage_events": [{"service_resource_identifier": srid, "usage_uom": "HOUR",
                                  "usage_amount": hours, "start_time": start}]}))
            .send()
            .await
            .expect("post");
    let status = r.status();
    let v: Value = r.json().await.expect("json");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["erred_events"], json!([]), "{v}");
}

/// Walks the catalogue's tenant: usage in January and February, the clock to March 20th
/// (cycle runs on Jan 15, Feb 1, Feb 15, Mar 1, Mar 15; ACC-1's invoice paid automatically on its
/// due date).
async fn walk(a: &Legacy) {
    post_usage(a, "c-1", 10, "2030-01-15T10:00:00Z").await;
    post_usage(a, "c-2", 4, "2030-01-20T10:00:00Z").await;
    let path = format!("/sandbox/v1/tenants/{}/clock/advance", a.t.id);
    let r =
        a.s.admin_call(Method::POST, &path, Some(&json!({"to": "2030-02-16"})))
            .await;
    assert_eq!(r.status(), 200);
    post_usage(a, "c-1", 6, "2030-02-16T10:00:00Z").await;
    post_usage(a, "c-2", 8, "2030-02-17T10:00:00Z").await;
    let r =
        a.s.admin_call(Method::POST, &path, Some(&json!({"to": "2030-03-20"})))
            .await;
    assert_eq!(r.status(), 200);
}

/// Every invoice on Surface A as (eid, amount, amountToPay, status).
async fn invoices(a: &Legacy) -> Vec<(i64, Decimal, Decimal, String)> {
    let r = a.get("invoices?pageSize=100").await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.el()
        .children
        .iter()
        .map(|i| {
            (
                attr(i, "eid").parse().expect("eid"),
                dec(i, "amount"),
                dec(i, "amountToPay"),
                attr(i, "status").to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_walk_of_two_months_posts_books_that_balance_per_account() {
    let a = tenant().await;
    walk(&a).await;
    let billed = invoices(&a).await;
    assert_eq!(
        billed.len(),
        5,
        "cycle runs on Jan 15, Feb 1, Feb 15, Mar 1, Mar 15: {billed:?}"
    );
    let invoiced: Decimal = billed.iter().map(|i| i.1).sum();
    let open: Decimal = billed.iter().filter(|i| i.3 == "OPEN").map(|i| i.2).sum();
    let r = a.get("payments?pageSize=100").await;
    let paid: Decimal = r.el().children.iter().map(|p| dec(p, "amount")).sum();
    assert!(paid > Decimal::ZERO, "ACC-1 paid automatically");

    let rev = Rev {
        s: &a.s,
        t: a.t.clone(),
    };
    let nets = rev
        .post_everything("2030-01-01T00:00:00Z", "2030-03-31")
        .await;

    assert_eq!(
        nets.values().copied().sum::<Decimal>(),
        Decimal::ZERO,
        "{nets:?}"
    );
    assert_eq!(
        net(&nets, "1200"),
        Decimal::ZERO,
        "all usage rated was invoiced: accrued and cleared: {nets:?}"
    );
    assert_eq!(
        -net(&nets, "4"),
        invoiced,
        "revenue credited is what was invoiced: {nets:?}"
    );
    assert_eq!(
        net(&nets, "1100"),
        open,
        "receivables are what the open invoices ask: {nets:?}"
    );
    assert_eq!(net(&nets, "1000"), paid, "cash is what was paid: {nets:?}");
    for (account, side) in [
        ("4010", "recurring"),
        ("4020", "one-time"),
        ("4000", "usage"),
    ] {
        assert!(
            net(&nets, account) < Decimal::ZERO,
            "{side} revenue is credited to {account}: {nets:?}"
        );
    }
}

#[tokio::test]
async fn every_invoice_holds_lines_that_add_up_to_its_amount() {
    let a = tenant().await;
    walk(&a).await;
    let billed = invoices(&a).await;
    assert_eq!(billed.len(), 5, "{billed:?}");
    let mut kinds = std::collections::BTreeSet::new();
    for (eid, amount, _, _) in &billed {
        let r = a.get(&format!("invoices/{eid}/lines")).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let lines = &r.el().children;
        assert!(!lines.is_empty(), "invoice {eid}: {}", r.body);
        let sum: Decimal = lines.iter().map(|l| dec(l, "amount")).sum();
        assert_eq!(sum, *amount, "invoice {eid}: {}", r.body);
        for l in lines {
            kinds.insert(attr(l, "lineType").to_string());
        }
    }
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        ["ONE_TIME", "RECURRING", "USAGE"],
        "the first invoices bill the one-time price, all bill the recurring price and usage"
    );
    // An unknown invoice: 404 in Surface A's fault shape.
    let r = a.get("invoices/999/lines").await;
    assert_eq!(r.status, 404, "{}", r.body);
}
