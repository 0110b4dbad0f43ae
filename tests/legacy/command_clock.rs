//! Surface A's payment and adjustment writes read the tenant clock inside their write
//! transaction, as every other command does: with a frozen clock every date they store
//! (payment `occurredOn`, the paid date of the invoices they close, an adjustment's
//! `occurred_on` and `posted_on`) is the frozen instant, and while the clock moves forward
//! under concurrent writes, the dates follow the order the writes committed in (eid order):
//! a date read before the transaction could be older than the clock a later-committed
//! write already saw.

use e2e::legacy::{attr, child, Legacy};
use reqwest::Method;
use serde_json::{json, Value};

/// The frozen instant, as Surface A and B render it for the demo tenant (America/Chicago).
const FROZEN_AT: &str = "2026-11-20T12:00:00Z";
const FROZEN: &str = "2026-11-20T06:00:00-06:00";

async fn freeze(a: &Legacy, at: &str) {
    let r =
        a.s.admin_call(
            Method::PUT,
            &format!("/sandbox/v1/tenants/{}/clock", a.t.id),
            Some(&json!({ "frozen_at": at })),
        )
        .await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap_or_default());
}

/// The amount to pay of invoice `eid` (must be open and owe something).
async fn to_pay(a: &Legacy, eid: &str) -> String {
    let inv = a.get(&format!("invoices/{eid}")).await;
    assert_eq!(attr(inv.el(), "status"), "OPEN", "{}", inv.body);
    let amount = attr(inv.el(), "amountToPay").to_string();
    assert_ne!(amount.parse::<f64>().unwrap(), 0.0, "{}", inv.body);
    amount
}

#[tokio::test]
async fn payment_and_adjustment_commands_store_the_frozen_time() {
    let a = Legacy::start("demo").await;
    freeze(&a, FROZEN_AT).await;

    // invoices/{eid}/applyPayment with a new payment naming no date: the payment and the
    // invoice it closes are dated now.
    let owed = to_pay(&a, "2").await;
    let r = a
        .post(
            "invoices/2/applyPayment",
            &format!(r#"<payment amount="{owed}"><cashPayment/></payment>"#),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(attr(child(r.el(), "payment"), "occurredOn"), FROZEN);
    let invoice = child(child(r.el(), "paymentApplication"), "invoice");
    assert_eq!(
        (attr(invoice, "status"), attr(invoice, "paidDate")),
        ("CLOSED", FROZEN)
    );

    // billingAccounts/{eid}/applyPayment: the same through the account's open invoices.
    let owed = to_pay(&a, "3").await;
    let r = a
        .post(
            "billingAccounts/2/applyPayment",
            &format!(
                r#"<applyPayment><payment amount="{owed}"/><invoices><invoice eid="3"/></invoices></applyPayment>"#
            ),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let pid = attr(child(r.el(), "payment"), "eid").to_string();
    let stored = a.get(&format!("payments/{pid}")).await;
    assert_eq!(attr(stored.el(), "occurredOn"), FROZEN, "{}", stored.body);
    assert_eq!(attr(a.get("invoices/3").await.el(), "paidDate"), FROZEN);

    // addAdjustment naming no date, closing invoice 4: the adjustment and the invoice.
    let owed = to_pay(&a, "4").await;
    let r = a
        .post(
            "billingAccounts/2/addAdjustment",
            &format!(r#"<addAdjustment amount="{owed}"><invoice eid="4"/></addAdjustment>"#),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let adjustment = attr(r.el(), "eid").to_string();
    assert_eq!(attr(a.get("invoices/4").await.el(), "paidDate"), FROZEN);
    let r =
        a.s.client
            .get(a.s.url("/billing/2/adjustment-applications"))
            .query(&[("adjustment_id", adjustment.as_str())])
            .header("X-Api-Key", &a.t.api_key)
            .send()
            .await
            .unwrap();
    assert_eq!(r.status(), 200);
    let applications: Vec<Value> = r.json().await.unwrap();
    assert_eq!(applications.len(), 1, "{applications:?}");
    let adj = &applications[0]["account_adjustment"];
    assert_eq!(
        (&adj["occurred_on"], &adj["posted_on"]),
        (&json!(FROZEN), &json!(FROZEN)),
        "{adj}"
    );

    // POST payments naming no date.
    let r = a
        .post(
            "payments",
            r#"<payment amount="5"><billingAccount eid="1"/><cashPayment/></payment>"#,
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let stored = a.get(&format!("payments/{}", attr(r.el(), "eid"))).await;
    assert_eq!(attr(stored.el(), "occurredOn"), FROZEN);

    // A date the request names is kept.
    let r = a
        .post(
            "payments",
            r#"<payment amount="5" occurredOn="2026-11-02"><billingAccount eid="1"/></payment>"#,
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let stored = a.get(&format!("payments/{}", attr(r.el(), "eid"))).await;
    assert_eq!(attr(stored.el(), "occurredOn"), "2026-11-02T00:00:00-06:00");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dates_follow_the_commit_order_while_the_clock_moves() {
    let a = std::sync::Arc::new(Legacy::start("demo").await);
    freeze(&a, FROZEN_AT).await;
    let advance = format!("/sandbox/v1/tenants/{}/clock/advance", a.t.id);
    let mut tasks = Vec::new();
    for writer in 0..4 {
        let a = a.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..15 {
                let (path, body) = if writer % 2 == 0 {
                    (
                        "payments",
                        r#"<payment amount="1"><billingAccount eid="5"/></payment>"#,
                    )
                } else {
                    (
                        "billingAccounts/5/applyPayment",
                        r#"<applyPayment><payment amount="1"/></applyPayment>"#,
                    )
                };
                let r = a.post(path, body).await;
                assert!(r.status == 200 || r.status == 201, "{}", r.body);
            }
        }));
    }
    let mover = {
        let a = a.clone();
        tokio::spawn(async move {
            for _ in 0..30 {
                let r =
                    a.s.admin_call(Method::POST, &advance, Some(&json!({"seconds": 60})))
                        .await;
                assert_eq!(r.status(), 200);
            }
        })
    };
    for t in tasks {
        t.await.unwrap();
    }
    mover.await.unwrap();

    // Every payment of account 5, in eid (commit) order: dates never go back.
    let list = a.get("payments?billingAccountEid=5&pageSize=100").await;
    let mut dated: Vec<(i64, chrono::DateTime<chrono::FixedOffset>)> = list
        .el()
        .children
        .iter()
        .map(|p| {
            let eid = attr(p, "eid").parse().unwrap();
            let on = chrono::DateTime::parse_from_rfc3339(attr(p, "occurredOn")).unwrap();
            (eid, on)
        })
        .collect();
    assert_eq!(dated.len(), 60, "{}", list.body);
    dated.sort();
    for pair in dated.windows(2) {
        assert!(
            pair[0].1 <= pair[1].1,
            "payment {} committed after payment {} but is dated earlier: {:?}",
            pair[1].0,
            pair[0].0,
            pair
        );
    }
}
