//! The tenant's billing policy at work (docs/billing-lifecycle.md, "Billing policy"), over
//! HTTP on a tenant created from a fixture document with a frozen clock:
//! - payment terms: an invoice is due its account's own term (Surface A `paymentTermDays`,
//!   the document's `payment_term_days`) after its date, else the policy's `payment_term_days`;
//! - the default agreement period: an agreement without a period takes the policy's
//!   `default_agreement_months`, and a service runs its agreement's term (a 1-month
//!   agreement's service ran 12 months before);
//! - proration NONE: a service started mid-period pays the whole period, and a period a bill
//!   batch splits is paid once.
//!
//! Expected dates come from the calendar, not from the engine.

use super::lifecycle::{advance, post_bill_batch};
use e2e::billing::get as b_get;
use e2e::legacy::{attr, dec, opt_attr, Legacy};
use e2e::TestServer;
use rust_decimal::Decimal;
use serde_json::{json, Value};

/// Three accounts on cycle 1 with one service each from 2029-12-01 (a recurring price of
/// 30.00; account 1 has a second one from 2030-01-16), the policy `policy`; account 2 has its
/// own payment term of 10 days.
fn catalogue(policy: Value) -> Value {
    let account = |id: i64, term: Option<i64>| {
        let mut a = json!({"id": id, "account_num": format!("ACC-{id}"), "name": format!("Account {id}"),
            "billing_account_category_id": 1, "bill_cycle_id": 1, "bill_type": "EMAIL",
            "start_date": "2029-12-01", "currency_code": "USD"});
        if let Some(days) = term {
            a["payment_term_days"] = json!(days);
        }
        a
    };
    let service = |id: i64, agreement: i64| {
        json!({"id": id, "billing_account_id": id.min(3), "product_id": 1, "agreement_id": agreement,
            "start_date": "2029-12-01", "resources": [{"identifier": format!("seat-{id}")}]})
    };
    json!({
        "policy": policy,
        "billing_account_categories": [{"id": 1, "name": "Customers", "type": "CUSTOMER",
            "description": "Customers", "status": "BA_CATEGORY_ACTIVE"}],
        "bill_cycles": [{"id": 1, "name": "Monthly on the 1st", "day_of_month": 1}],
        "billing_accounts": [account(1, None), account(2, Some(10)), account(3, None)],
        "products": [{"id": 1, "name": "Seat", "sku": "SEAT"}],
        "product_prices": [{"id": 1, "product_id": 1, "product_price_type": "RECURRING",
            "price_type": "FLAT", "amount": 30}],
        "agreements": [
            {"id": 1, "name": "Default term", "status": "ACTIVE", "product_ids": [1]},
            {"id": 2, "name": "Monthly", "agreement_period": 1, "status": "ACTIVE",
             "end_action": "RENEW", "product_ids": [1]}
        ],
        "services": [service(1, 1), service(2, 1), service(3, 2),
            {"id": 4, "billing_account_id": 1, "product_id": 1, "agreement_id": 1,
             "start_date": "2030-01-16", "resources": [{"identifier": "seat-4"}]}]
    })
}

async fn tenant(name: &str, policy: Value) -> Legacy {
    tenant_of(name, catalogue(policy)).await
}

/// A tenant in UTC made of the document `fixtures`, its clock frozen on 2030-01-02.
pub(super) async fn tenant_of(name: &str, fixtures: Value) -> Legacy {
    let s = TestServer::start().await;
    let t = s
        .create_tenant_with(json!({"name": name, "time_zone": "UTC",
            "clock": {"frozen_at": "2030-01-02T00:00:00Z"}, "fixtures": fixtures}))
        .await;
    Legacy { s, t }
}

/// (occurredOn, dueDate) of the one invoice of account `eid`.
async fn the_invoice(a: &Legacy, eid: i64) -> (String, String) {
    let r = a
        .get(&format!("invoices?billingAccountEid={eid}&pageSize=100"))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let all = &r.el().children;
    assert_eq!(all.len(), 1, "one invoice of account {eid}: {}", r.body);
    (
        attr(&all[0], "occurredOn").to_string(),
        attr(&all[0], "dueDate").to_string(),
    )
}

#[tokio::test]
async fn an_invoice_is_due_its_accounts_payment_term_else_the_policys() {
    let a = tenant("terms", json!({"payment_term_days": 15})).await;
    // Surface A shows an account's own term, and takes one.
    let r = a.get("billingAccounts/2").await;
    assert_eq!(
        opt_attr(r.el(), "paymentTermDays"),
        Some("10"),
        "{}",
        r.body
    );
    let r = a.get("billingAccounts/1").await;
    assert_eq!(opt_attr(r.el(), "paymentTermDays"), None, "{}", r.body);
    let r = a
        .put(
            "billingAccounts/3",
            r#"<billingAccount eid="3" paymentTermDays="45"/>"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        opt_attr(r.el(), "paymentTermDays"),
        Some("45"),
        "{}",
        r.body
    );
    let r = a
        .put(
            "billingAccounts/3",
            r#"<billingAccount eid="3" paymentTermDays="400"/>"#,
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(
        r.body
            .contains("paymentTermDays: 400 is not one of 0 to 365"),
        "{}",
        r.body
    );

    advance(&a, "2030-02-01T12:00:00Z").await;
    let dated = "2030-02-01T00:00:00";
    for (eid, due) in [(1, "2030-02-16"), (2, "2030-02-11"), (3, "2030-03-18")] {
        let (on, due_date) = the_invoice(&a, eid).await;
        assert!(on.starts_with(dated), "account {eid}: dated {on}");
        assert!(
            due_date.starts_with(&format!("{due}T00:00:00")),
            "account {eid}: due {due_date}, wanted {due}"
        );
    }
}

#[tokio::test]
async fn a_service_runs_its_agreements_term_else_the_policys_default() {
    let a = tenant("terms-default", json!({"default_agreement_months": 3})).await;
    let agreement = |v: &Value| v["agreement_period"].clone();
    let one = b_get(&a.s, &a.t, "/agreements/1", &[]).await;
    assert_eq!(agreement(&one.body), json!(3), "{}", one.body);
    let two = b_get(&a.s, &a.t, "/agreements/2", &[]).await;
    assert_eq!(agreement(&two.body), json!(1), "{}", two.body);
    for (service, months) in [(1, 3), (3, 1)] {
        let v = b_get(&a.s, &a.t, &format!("/agreement-services/{service}"), &[]).await;
        assert_eq!(
            v.body["agreement_period"],
            json!(months),
            "agreement service {service}: {}",
            v.body
        );
    }
}

/// (date, amount, due date) of every invoice of account `eid`, by date (days only).
async fn billed(a: &Legacy, eid: i64) -> Vec<(String, Decimal, String)> {
    let r = a
        .get(&format!("invoices?billingAccountEid={eid}&pageSize=100"))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mut out: Vec<(String, Decimal, String)> = r
        .el()
        .children
        .iter()
        .map(|i| {
            (
                attr(i, "occurredOn")[..10].to_string(),
                dec(i, "amount"),
                attr(i, "dueDate")[..10].to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

/// The walk of docs/billing-lifecycle.md ("Three months at net 15, without proration") on
/// a tenant of `policy`: cycle runs on February 1st, March 1st and April 1st, a bill batch on
/// February 15th; what ACC-1 and ACC-2 were billed.
async fn three_months(name: &str, policy: Value) -> [Vec<(String, Decimal, String)>; 2] {
    let a = tenant(name, policy).await;
    advance(&a, "2030-02-10T12:00:00Z").await;
    post_bill_batch(&a, "Mid-February", "2030-02-15").await;
    advance(&a, "2030-04-01T12:00:00Z").await;
    [billed(&a, 1).await, billed(&a, 2).await]
}

fn row(on: &str, amount: &str, due: &str) -> (String, Decimal, String) {
    (on.into(), amount.parse().expect("amount"), due.into())
}

#[tokio::test]
async fn without_proration_a_period_is_billed_whole_and_once() {
    let [one, two] = three_months(
        "whole-periods",
        json!({"proration": "NONE", "payment_term_days": 15}),
    )
    .await;
    // January: both of ACC-1's seats whole (the one from January 16th too); February's
    // first span (the batch) pays February whole, so March 1st finds nothing to bill.
    assert_eq!(
        one,
        vec![
            row("2030-02-01", "60", "2030-02-16"),
            row("2030-02-15", "60", "2030-03-02"),
            row("2030-04-01", "60", "2030-04-16"),
        ]
    );
    assert_eq!(
        two,
        vec![
            row("2030-02-01", "30", "2030-02-11"),
            row("2030-02-15", "30", "2030-02-25"),
            row("2030-04-01", "30", "2030-04-11"),
        ]
    );
    // The defaults: by day (16/31 of January, February split 14/28 + 14/28), net 30.
    let [one, _] = three_months("by-day", json!({})).await;
    assert_eq!(
        one,
        vec![
            row("2030-02-01", "45.48", "2030-03-03"),
            row("2030-02-15", "30", "2030-03-17"),
            row("2030-03-01", "30", "2030-03-31"),
            row("2030-04-01", "60", "2030-05-01"),
        ]
    );
}
