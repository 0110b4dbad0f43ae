//! Automatic payments that can fail, over HTTP on the demo tenant with a frozen clock
//! (docs/billing-lifecycle.md, "A declined autopay recovering"): a test chooses an account's
//! autopay outcome in a fixture document, as payment platforms' test cards do; a declined
//! attempt is a CANCELED payment on Surface A, tried again on the policy's retry days as the
//! clock advances; the account goes to COLLECTION after the last declined attempt and back
//! when the invoice is paid.
//!
//! The demo's account 1 (ACC-1001) pays automatically; its invoice 2 (INV-0002) falls due on
//! 2026-12-01 (the demo's dates at the frozen instant below).

use super::lifecycle::advance;
use e2e::legacy::{attr, dec, Legacy};
use reqwest::Method;
use rust_decimal::Decimal;
use serde_json::{json, Value};

const FROZEN_AT: &str = "2026-11-20T12:00:00Z";

async fn admin(a: &Legacy, method: Method, path: &str, body: Value) -> Value {
    let path = format!("/sandbox/v1/tenants/{}{path}", a.t.id);
    let r = a.s.admin_call(method.clone(), &path, Some(&body)).await;
    let status = r.status();
    let v: Value = r.json().await.expect("json");
    assert_eq!(status, 200, "{method} {path}: {v}");
    v
}

/// The demo tenant, frozen, with the policy's retry days and account 1's autopay outcome.
async fn tenant(retry_days: &[i64], outcome: Value) -> Legacy {
    let a = Legacy::start("demo").await;
    admin(&a, Method::PUT, "/clock", json!({ "frozen_at": FROZEN_AT })).await;
    admin(
        &a,
        Method::PUT,
        "/policy",
        json!({ "autopay_retry_days": retry_days }),
    )
    .await;
    let mut account = json!({ "id": 1 });
    account
        .as_object_mut()
        .unwrap()
        .extend(outcome.as_object().unwrap().clone());
    admin(
        &a,
        Method::POST,
        "/fixtures",
        json!({ "billing_accounts": [account] }),
    )
    .await;
    a
}

/// (status, amountToPay) of invoice 2 on Surface A.
async fn invoice2(a: &Legacy) -> (String, Decimal) {
    let r = a.get("invoices/2").await;
    (
        attr(r.el(), "status").to_string(),
        dec(r.el(), "amountToPay"),
    )
}

/// Account 1's status on Surface A.
async fn status(a: &Legacy) -> String {
    attr(a.get("billingAccounts/1").await.el(), "status").to_string()
}

/// Account 1's automatic payments of INV-0002 on Surface A: (status, amount, canceledAmount,
/// receivedAmount), in eid order.
async fn attempts(a: &Legacy) -> Vec<(String, Decimal, Decimal, Decimal)> {
    let r = a
        .get("payments?billingAccountEid=1&reference=AUTOPAY-INV-0002&pageSize=100")
        .await;
    let mut rows: Vec<(i64, (String, Decimal, Decimal, Decimal))> = r
        .el()
        .children
        .iter()
        .map(|p| {
            (
                attr(p, "eid").parse().unwrap(),
                (
                    attr(p, "status").to_string(),
                    dec(p, "amount"),
                    dec(p, "canceledAmount"),
                    dec(p, "receivedAmount"),
                ),
            )
        })
        .collect();
    rows.sort_by_key(|r| r.0);
    rows.into_iter().map(|r| r.1).collect()
}

fn count(ran: &[(String, i64, String)], kind: &str, id: i64) -> usize {
    ran.iter().filter(|t| t.0 == kind && t.1 == id).count()
}

#[tokio::test]
async fn a_card_declined_twice_is_retried_on_the_policy_days_and_pays_on_the_third_try() {
    let a = tenant(
        &[3, 7],
        json!({ "autopay_outcome": "DECLINE_THEN_SUCCEED", "autopay_declines": 2 }),
    )
    .await;
    let (_, owed) = invoice2(&a).await;
    assert!(owed > Decimal::ZERO);

    // Due date: declined, recorded as a CANCELED payment of the whole amount; not yet in
    // COLLECTION (retries are left).
    let ran = advance(&a, "2026-12-02").await;
    assert_eq!(count(&ran, "invoice.autopay_declined", 2), 1, "{ran:?}");
    assert_eq!(count(&ran, "invoice.autopaid", 2), 0, "{ran:?}");
    assert_eq!(invoice2(&a).await, ("OPEN".to_string(), owed));
    let declined = ("CANCELED".to_string(), owed, owed, Decimal::ZERO);
    assert_eq!(attempts(&a).await, vec![declined.clone()]);
    assert_eq!(status(&a).await, "ACTIVE");

    // Three days after: declined again.
    let ran = advance(&a, "2026-12-05").await;
    assert_eq!(count(&ran, "invoice.autopay_declined", 2), 1, "{ran:?}");
    assert_eq!(attempts(&a).await, vec![declined.clone(), declined.clone()]);
    assert_eq!(invoice2(&a).await.0, "OPEN");
    assert_eq!(status(&a).await, "ACTIVE");

    // Seven days after: the third attempt pays and closes the invoice.
    let ran = advance(&a, "2026-12-09").await;
    assert_eq!(count(&ran, "invoice.autopaid", 2), 1, "{ran:?}");
    assert_eq!(invoice2(&a).await, ("CLOSED".to_string(), Decimal::ZERO));
    let paid = ("COMPLETED".to_string(), owed, Decimal::ZERO, owed);
    assert_eq!(attempts(&a).await, vec![declined.clone(), declined, paid]);
    assert_eq!(status(&a).await, "ACTIVE");
}

#[tokio::test]
async fn a_card_always_declined_sends_the_account_to_collection_after_the_last_retry_and_back_when_paid(
) {
    let a = tenant(&[3], json!({ "autopay_outcome": "DECLINE" })).await;
    let ran = advance(&a, "2026-12-02").await;
    assert_eq!(count(&ran, "invoice.autopay_declined", 2), 1, "{ran:?}");
    assert_eq!(status(&a).await, "ACTIVE");
    // One advance across the retry day: the last attempt is declined.
    let ran = advance(&a, "2026-12-10").await;
    assert_eq!(count(&ran, "invoice.autopay_declined", 2), 1, "{ran:?}");
    assert_eq!(status(&a).await, "COLLECTION");
    assert_eq!(attempts(&a).await.len(), 2);
    // No attempt after the last retry day.
    let ran = advance(&a, "2026-12-20").await;
    assert_eq!(count(&ran, "invoice.autopay_declined", 2), 0, "{ran:?}");
    // Paid by hand: back to ACTIVE.
    let (_, owed) = invoice2(&a).await;
    let body = format!(r#"<payment amount="{owed}"><checkPayment/></payment>"#);
    let r = a.post("invoices/2/applyPayment", &body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(invoice2(&a).await.0, "CLOSED");
    assert_eq!(status(&a).await, "ACTIVE");
}

#[tokio::test]
async fn with_no_retry_days_a_declined_autopay_sends_the_account_to_collection_on_the_due_date() {
    let a = tenant(&[], json!({ "autopay_outcome": "DECLINE" })).await;
    let ran = advance(&a, "2026-12-02").await;
    assert_eq!(count(&ran, "invoice.autopay_declined", 2), 1, "{ran:?}");
    assert_eq!(status(&a).await, "COLLECTION");
}

#[tokio::test]
async fn an_autopay_outcome_outside_its_set_is_refused_naming_it_and_nothing_changes() {
    let a = Legacy::start("demo").await;
    let path = format!("/sandbox/v1/tenants/{}/fixtures", a.t.id);
    let body = json!({ "billing_accounts": [{ "id": 1, "autopay_outcome": "FAIL" }] });
    let r = a.s.admin_call(Method::POST, &path, Some(&body)).await;
    assert_eq!(r.status(), 400);
    let text = r.text().await.unwrap();
    assert!(
        text.contains("autopay_outcome") && text.contains("DECLINE_THEN_SUCCEED"),
        "{text}"
    );
}
