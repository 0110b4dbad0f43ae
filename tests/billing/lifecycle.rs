//! The billing lifecycle on the tenant clock (docs/billing-lifecycle.md), over
//! HTTP on the demo tenant with a frozen clock: usage posted over Surface B is invoiced on
//! the cycle day with the recurring prices, once, and the invoice is seen on Surface A
//! (invoice, balance, pending charges), Surface B (the cycle's bill batch run; the actions
//! unchanged) and Surface C (INSERT_INVOICES collector, ledger run); autopay
//! closes it on its due date; a manual-pay account goes to COLLECTION and back; a quarter in
//! one advance invoices three times in order with a renewal between; late usage lands on the
//! next invoice; a service started mid-period is prorated; a POSTed bill batch runs on its
//! invoice date and waits for review.
//!
//! Expected amounts come from the demo fixture (shared/fixtures/demo.json: the recurring price
//! of product 1) and from what the surfaces answer (which services are ACTIVE and since
//! when, what posting charged, what was pending), never from the engine's own output.

use e2e::legacy::{attr, child, dec, Legacy};
use reqwest::Method;
use rust_decimal::Decimal;
use serde_json::{json, Value};

const FROZEN_AT: &str = "2026-11-20T12:00:00Z";

pub(super) async fn admin(a: &Legacy, method: Method, path: &str, body: Option<Value>) -> Value {
    let path = format!("/sandbox/v1/tenants/{}{path}", a.t.id);
    let r = a.s.admin_call(method.clone(), &path, body.as_ref()).await;
    let status = r.status();
    let v: Value = r.json().await.expect("json");
    assert_eq!(status, 200, "{method} {path}: {v}");
    v
}

async fn freeze(a: &Legacy, at: &str) {
    admin(a, Method::PUT, "/clock", Some(json!({ "frozen_at": at }))).await;
}

/// Advances the clock to `to`; answers the transitions as (kind, id, at).
pub(super) async fn advance(a: &Legacy, to: &str) -> Vec<(String, i64, String)> {
    let v = admin(a, Method::POST, "/clock/advance", Some(json!({ "to": to }))).await;
    v["transitions"]
        .as_array()
        .expect("transitions")
        .iter()
        .map(|x| {
            (
                x["kind"].as_str().unwrap().to_string(),
                x["id"].as_i64().unwrap(),
                x["at"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// POSTs an auto-approved ad hoc bill batch named `name` over Surface B with `invoice_date`
/// (no accounts: it bills every USD account when the clock passes that date).
pub(super) async fn post_bill_batch(a: &Legacy, name: &str, invoice_date: &str) {
    let r =
        a.s.client
            .post(a.s.url("/billing/2/bill-batches"))
            .header("X-Api-Key", &a.t.api_key)
            .json(
                &json!({"bill_batch_type": "adhoc", "name": name, "auto_approve": true,
                          "invoice_date": invoice_date}),
            )
            .send()
            .await
            .expect("post");
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap_or_default());
}

/// Posts one usage event over Surface B; answers its charge.
pub(super) async fn post_usage(
    a: &Legacy,
    srid: &str,
    uom: &str,
    amount: i64,
    start: &str,
) -> Decimal {
    let r =
        a.s.client
            .post(a.s.url("/billing/2/usage-events/bulk"))
            .header("X-Api-Key", &a.t.api_key)
            .json(&json!({"mode": "FAIL_ON_EXISTING",
                        "usage_events": [{"service_resource_identifier": srid, "usage_uom": uom,
                                         "usage_amount": amount, "start_time": start}]}))
            .send()
            .await
            .unwrap();
    let status = r.status();
    let v: Value = r.json().await.unwrap();
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["erred_events"], json!([]), "{v}");
    v["rated_events"][0]["total_charge"]
        .to_string()
        .parse()
        .expect("charge")
}

async fn surface_b(a: &Legacy, path: &str) -> Value {
    let r =
        a.s.get_with_key(&format!("/billing/2{path}"), &a.t.api_key)
            .await;
    assert_eq!(r.status(), 200, "{path}");
    r.json().await.expect("json")
}

/// (balance, pendingChargesTotal, status) of billing account `eid` on Surface A.
async fn account(a: &Legacy, eid: i64) -> (Decimal, Decimal, String) {
    let r = a.get(&format!("billingAccounts/{eid}")).await;
    let e = r.el();
    (
        dec(e, "balance"),
        dec(e, "pendingChargesTotal"),
        attr(e, "status").to_string(),
    )
}

/// An invoice on Surface A: (eid, invoiceNum, amount, status, occurredOn, dueDate).
type Invoice = (String, String, Decimal, String, String, String);

/// The invoices of account `eid`, in eid order.
async fn invoices(a: &Legacy, eid: i64) -> Vec<Invoice> {
    let r = a
        .get(&format!("invoices?billingAccountEid={eid}&pageSize=100"))
        .await;
    let mut out: Vec<Invoice> = r
        .el()
        .children
        .iter()
        .map(|i| {
            (
                attr(i, "eid").to_string(),
                attr(i, "invoiceNum").to_string(),
                dec(i, "amount"),
                attr(i, "status").to_string(),
                attr(i, "occurredOn").to_string(),
                attr(i, "dueDate").to_string(),
            )
        })
        .collect();
    out.sort_by_key(|i| i.0.parse::<i64>().unwrap());
    out
}

/// The invoice of account `eid` dated `on` (exactly one).
async fn invoice_on(a: &Legacy, eid: i64, on: &str) -> Invoice {
    let all = invoices(a, eid).await;
    let dated: Vec<&Invoice> = all.iter().filter(|i| i.4 == on).collect();
    assert_eq!(
        dated.len(),
        1,
        "one invoice of account {eid} on {on}: {all:?}"
    );
    dated[0].clone()
}

/// The demo's price of `kind` (RECURRING, ONE_TIME) of `product`, from the fixture.
fn price(product: i64, kind: &str) -> Decimal {
    let demo: Value =
        serde_json::from_str(include_str!("../../shared/fixtures/demo.json")).expect("demo");
    let price = demo["product_prices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["product_id"] == product && p["product_price_type"] == kind)
        .expect("the price");
    price["amount"].to_string().parse().unwrap()
}

/// The recurring price of product 1 (Cloud Compute).
fn compute_price() -> Decimal {
    price(1, "RECURRING")
}

/// The start dates (local dates) of the ACTIVE services of `product` of account `eid`, as
/// Surface B lists them.
async fn starts(a: &Legacy, eid: i64, product: i64) -> Vec<chrono::NaiveDate> {
    let filter = format!(
        "billing_account_id EQ '{eid}' AND product_id EQ '{product}' AND status EQ 'ACTIVE'"
    );
    let r = e2e::billing::get(
        &a.s,
        &a.t,
        "/agreement-services",
        &[("filter", filter.as_str()), ("page_size", "50")],
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.total() <= 50, "one page holds them");
    r.items()
        .iter()
        .map(|s| {
            chrono::DateTime::parse_from_rfc3339(s["start_date"].as_str().unwrap())
                .unwrap()
                .date_naive()
        })
        .collect()
}

/// The start dates of account `eid`'s ACTIVE Cloud Compute services.
async fn compute_starts(a: &Legacy, eid: i64) -> Vec<chrono::NaiveDate> {
    starts(a, eid, 1).await
}

/// The recurring charge of account `eid` for the month `[start, end)` (local dates): the
/// compute price per ACTIVE compute service, prorated by days when it started inside.
async fn recurring(a: &Legacy, eid: i64, start: &str, end: &str) -> Decimal {
    let (start, end): (chrono::NaiveDate, chrono::NaiveDate) =
        (start.parse().unwrap(), end.parse().unwrap());
    let days = Decimal::from((end - start).num_days());
    let price = compute_price();
    let mut total = Decimal::ZERO;
    for s in compute_starts(a, eid).await {
        if s >= end {
            continue;
        }
        let active = Decimal::from((end - s.max(start)).num_days());
        total += (price * active / days)
            .round_dp_with_strategy(2, rust_decimal::RoundingStrategy::MidpointAwayFromZero);
    }
    total
}

fn kinds(ran: &[(String, i64, String)]) -> Vec<(&str, i64)> {
    ran.iter().map(|(k, id, _)| (k.as_str(), *id)).collect()
}

#[tokio::test]
async fn a_month_of_usage_is_invoiced_once_on_the_cycle_day_seen_on_every_surface_and_autopaid() {
    let a = Legacy::start("demo").await;
    freeze(&a, FROZEN_AT).await;
    let (balance, pending, _) = account(&a, 1).await;
    let inv2 = a.get("invoices/2").await;
    let autopaid_before = dec(inv2.el(), "amountToPay");
    let used = post_usage(&a, "srv-compute-0001", "HOUR", 10, "2026-11-21T10:00:00Z").await;
    // Dated after the cycle day: stays pending for January.
    let later = post_usage(&a, "srv-compute-0001", "HOUR", 3, "2026-12-01T12:00:00Z").await;
    assert!(used > Decimal::ZERO && later > Decimal::ZERO);
    // Actions are the platform's definitions of events, read-only: no run adds one.
    let actions_before = surface_b(&a, "/actions").await;

    let ran = advance(&a, "2026-12-02").await;
    let k = kinds(&ran);
    assert!(k.contains(&("invoice.autopaid", 2)), "{ran:?}");
    let run = ran
        .iter()
        .find(|t| t.0 == "bill_cycle.run")
        .expect("a cycle run");
    assert_eq!((run.1, run.2.as_str()), (1, "2026-12-01T00:00:00-06:00"));

    let expected = recurring(&a, 1, "2026-11-01", "2026-12-01").await + pending + used;
    assert!(expected > used, "ACC-1001 has compute services");
    let (eid, num, amount, status, _, due) = invoice_on(&a, 1, "2026-12-01T00:00:00-06:00").await;
    assert_eq!(amount, expected, "recurring + pending + the month's usage");
    assert_eq!(status, "OPEN");
    assert_eq!(due, "2026-12-31T00:00:00-06:00", "30 days' payment term");
    assert!(num.starts_with("INV-"), "{num}");
    let (balance_after, pending_after, _) = account(&a, 1).await;
    assert_eq!(balance_after, balance - autopaid_before + amount);
    assert_eq!(pending_after, later);

    // Surface B: the cycle's bill batch lists the run and its invoices; the action is listed.
    let batches = surface_b(&a, "/bill-batches").await;
    let batch = batches
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"].as_str().unwrap().starts_with("Bill cycle 1"))
        .expect("bill cycle 1's batch");
    let id = batch["id"].to_string().trim_matches('"').to_string();
    let batch = surface_b(
        &a,
        &format!("/bill-batches/{id}?expand=bill_batch_runs.invoices"),
    )
    .await;
    let runs = batch["bill_batch_runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{batch}");
    let r = &runs[0];
    assert_eq!(
        (&r["step"], &r["step_status"], &r["status"]),
        (&json!("APPROVE"), &json!("COMPLETE"), &json!("CLOSED")),
        "{r}"
    );
    let listed: Vec<&str> = r["invoices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["invoice_num"].as_str().unwrap())
        .collect();
    assert!(listed.contains(&num.as_str()), "{r}");
    assert_eq!(r["processed_invoice_count"], json!(listed.len()));
    assert_eq!(r["invoice_date"], "2026-12-01T00:00:00-06:00");
    assert_eq!(
        surface_b(&a, "/actions").await,
        actions_before,
        "a cycle run adds no action"
    );

    // Once: the next day bills nothing new.
    let ran = advance(&a, "2026-12-03").await;
    assert!(
        !kinds(&ran).iter().any(|k| k.0 == "bill_cycle.run"),
        "{ran:?}"
    );
    assert_eq!(
        invoices(&a, 1).await.iter().filter(|i| i.1 == num).count(),
        1
    );

    // Surface C: the INSERT_INVOICES collector sees the invoice, a ledger run posts it.
    let rev = e2e::revenue::Rev {
        s: &a.s,
        t: a.t.clone(),
    };
    let run = rev
        .collect(
            json!({"type": "AUTO", "collector_operations": ["INSERT_INVOICES"],
                        "data_fetch_from_date": "2026-12-01T00:00:00Z",
                        "data_fetch_to_date": "2026-12-03T00:00:00Z", "overlap_fetch_time": 0}),
        )
        .await;
    assert_eq!(run["status"], "COMPLETE", "{run}");
    let (infos, total, _, _) = rev
        .paged(&format!(
            "/ledgers/chargeinfos?invoice_number={num}&is_parent=true"
        ))
        .await;
    assert_eq!(total, 1, "the invoice's record, its lines as children");
    let charged: Decimal = infos[0]["ci_values"]["charge_amount"]
        .to_string()
        .parse()
        .unwrap();
    assert_eq!(charged, amount);
    let gl = rev
        .gl_run(json!({"ledger_id": 1, "run_to_date": "2026-12-31"}))
        .await;
    assert_eq!(gl["status"], "COMPLETE", "{gl}");
    let (entries, _, _, _) = rev
        .paged(&format!(
            "/glruns/{}/journal-entries?page_size=50",
            gl["id"]
        ))
        .await;
    // Posted line by line: the invoice's children (its lines) are what the run posts.
    let (lines, _, _, _) = rev
        .paged(&format!(
            "/ledgers/chargeinfos?parent_id={}&page_size=50",
            infos[0]["id"]
        ))
        .await;
    assert!(!lines.is_empty(), "{infos:?}");
    for line in &lines {
        assert!(
            entries.iter().any(|e| e["charge_info_id"] == line["id"]),
            "{line} posted: {entries:?}"
        );
    }

    // Autopay: paid in full on its due date, with a credit card payment.
    let ran = advance(&a, "2026-12-31T12:00:00-06:00").await;
    let paid = ran
        .iter()
        .find(|t| t.0 == "invoice.autopaid" && t.1.to_string() == eid)
        .expect("autopaid");
    assert_eq!(paid.2, "2026-12-31T00:00:00-06:00");
    let inv = a.get(&format!("invoices/{eid}")).await;
    assert_eq!(
        (attr(inv.el(), "status"), attr(inv.el(), "paidDate")),
        ("CLOSED", "2026-12-31T00:00:00-06:00")
    );
    let payments = a.get("payments?billingAccountEid=1&pageSize=100").await;
    let autopay = payments
        .el()
        .children
        .iter()
        .find(|p| attr(p, "reference") == format!("AUTOPAY-{num}"))
        .expect("the automatic payment");
    assert_eq!(dec(autopay, "amount"), amount);
    child(autopay, "creditCardPayment");
    assert_eq!(account(&a, 1).await.0, balance - autopaid_before);
}

#[tokio::test]
async fn a_manual_pay_account_goes_to_collection_and_back_when_nothing_is_overdue() {
    let a = Legacy::start("demo").await;
    freeze(&a, FROZEN_AT).await;
    let ran = advance(&a, "2026-12-11").await;
    assert!(kinds(&ran).contains(&("invoice.past_due", 4)), "{ran:?}");
    assert!(kinds(&ran).contains(&("invoice.past_due", 3)), "{ran:?}");
    assert_eq!(account(&a, 2).await.2, "COLLECTION");
    // Billing goes on in COLLECTION: December's invoice is made, not yet due.
    invoice_on(&a, 2, "2026-12-01T00:00:00-06:00").await;
    // Two invoices are overdue (INV-0004 since December 1st, INV-0003 since December
    // 10th, the demo's dates at its reference instant): paying one leaves the account in
    // COLLECTION, paying both brings it back.
    let overdue: Vec<Invoice> = invoices(&a, 2)
        .await
        .into_iter()
        .filter(|i| i.3 == "OPEN" && i.5.as_str() < "2026-12-11")
        .collect();
    assert_eq!(overdue.len(), 2, "{overdue:?}");
    for (n, inv) in overdue.iter().enumerate() {
        let owed = dec(
            a.get(&format!("invoices/{}", inv.0)).await.el(),
            "amountToPay",
        );
        let body = format!(r#"<payment amount="{owed}"><cashPayment/></payment>"#);
        let r = a
            .post(&format!("invoices/{}/applyPayment", inv.0), &body)
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        let status = if n == 0 { "COLLECTION" } else { "ACTIVE" };
        assert_eq!(account(&a, 2).await.2, status, "after paying {}", inv.1);
    }
    // The December invoice, not yet due, is still open.
    assert_eq!(
        invoice_on(&a, 2, "2026-12-01T00:00:00-06:00").await.3,
        "OPEN"
    );
}

#[tokio::test]
async fn a_quarter_in_one_advance_invoices_three_times_in_order_and_renews_between() {
    let a = Legacy::start("demo").await;
    freeze(&a, FROZEN_AT).await;
    let r =
        a.s.client
            .put(a.s.url("/billing/2/agreement-services/1"))
            .header("X-Api-Key", &a.t.api_key)
            .json(&json!({"end_date": "2027-01-15", "end_action": "RENEW"}))
            .send()
            .await
            .unwrap();
    assert_eq!(r.status(), 200);
    let ran = advance(&a, "2027-02-15").await;
    let order: Vec<&str> = ran
        .iter()
        .filter(|t| t.0 == "bill_cycle.run" && t.1 == 1 || t.0 == "agreement_service.renewed")
        .map(|t| t.0.as_str())
        .collect();
    assert_eq!(
        order,
        [
            "bill_cycle.run",
            "bill_cycle.run",
            "agreement_service.renewed",
            "bill_cycle.run"
        ],
        "{ran:?}"
    );
    let ats: Vec<&String> = ran.iter().map(|t| &t.2).collect();
    let mut sorted = ats.clone();
    sorted.sort_by_key(|t| chrono::DateTime::parse_from_rfc3339(t).unwrap());
    assert_eq!(ats, sorted, "time order");
    // Account 2 pays by hand: three invoices, numbered in date order, each month's
    // recurring charge.
    let billed: Vec<Invoice> = invoices(&a, 2)
        .await
        .into_iter()
        .filter(|i| i.4.as_str() >= "2026-12")
        .collect();
    let dates: Vec<&str> = billed.iter().map(|i| &i.4[..10]).collect();
    assert_eq!(dates, ["2026-12-01", "2027-01-01", "2027-02-01"]);
    let nums: Vec<&String> = billed.iter().map(|i| &i.1).collect();
    let mut in_order = nums.clone();
    in_order.sort();
    assert_eq!(nums, in_order);
    let monthly = recurring(&a, 2, "2026-12-01", "2027-01-01").await;
    assert_eq!(billed[1].2, monthly);
    assert_eq!(billed[2].2, monthly);
}

#[tokio::test]
async fn usage_posted_late_for_a_closed_period_lands_on_the_next_invoice() {
    let a = Legacy::start("demo").await;
    freeze(&a, FROZEN_AT).await;
    let pending = account(&a, 2).await.1;
    advance(&a, "2026-12-02").await;
    let december = invoice_on(&a, 2, "2026-12-01T00:00:00-06:00").await;
    assert_eq!(
        december.2,
        recurring(&a, 2, "2026-11-01", "2026-12-01").await + pending
    );
    let late = post_usage(&a, "api-0001", "COUNT", 500, "2026-11-25T10:00:00Z").await;
    assert!(late > Decimal::ZERO);
    assert_eq!(account(&a, 2).await.1, late, "pending until the next run");
    advance(&a, "2027-01-02").await;
    let january = invoice_on(&a, 2, "2027-01-01T00:00:00-06:00").await;
    assert_eq!(
        january.2,
        recurring(&a, 2, "2026-12-01", "2027-01-01").await + late
    );
    assert_eq!(account(&a, 2).await.1, Decimal::ZERO);
}

#[tokio::test]
async fn a_service_started_mid_period_is_prorated_by_days() {
    // In spring 2025 the demo's generated compute services are still starting.
    let a = Legacy::start("demo").await;
    freeze(&a, "2025-03-20T12:00:00Z").await;
    let compute = compute_starts(&a, 1).await;
    let march = |d: &chrono::NaiveDate| d.to_string().starts_with("2025-03");
    assert!(
        compute.iter().any(march),
        "a compute service starts in March: {compute:?}"
    );
    let pending = account(&a, 1).await.1;
    advance(&a, "2025-04-02").await;
    let april = invoice_on(&a, 1, "2025-04-01T00:00:00-05:00").await;
    let full = compute_price()
        * Decimal::from(
            compute
                .iter()
                .filter(|d| d.to_string().as_str() < "2025-03")
                .count(),
        );
    let prorated = recurring(&a, 1, "2025-03-01", "2025-04-01").await;
    assert!(
        prorated > full && prorated < full + compute_price(),
        "{prorated} vs {full}"
    );
    // API Calls (product 5) has a one-time price: charged once for a service started in March.
    let api_started = starts(&a, 1, 5).await.iter().filter(|d| march(d)).count();
    let one_time = price(5, "ONE_TIME") * Decimal::from(api_started);
    assert_eq!(april.2, prorated + one_time + pending);
    // May bills that service no one-time price again.
    advance(&a, "2025-05-02").await;
    let may = invoice_on(&a, 1, "2025-05-01T00:00:00-05:00").await;
    let api_april = starts(&a, 1, 5)
        .await
        .iter()
        .filter(|d| d.to_string().starts_with("2025-04"))
        .count();
    let one_time = price(5, "ONE_TIME") * Decimal::from(api_april);
    assert_eq!(
        may.2,
        recurring(&a, 1, "2025-04-01", "2025-05-01").await + one_time
    );
}

#[tokio::test]
async fn a_posted_bill_batch_runs_on_its_invoice_date_and_waits_at_review() {
    let a = Legacy::start("demo").await;
    freeze(&a, FROZEN_AT).await;
    let pending = account(&a, 1).await.1;
    let r =
        a.s.client
            .post(a.s.url("/billing/2/bill-batches"))
            .header("X-Api-Key", &a.t.api_key)
            .json(
                &json!({"bill_batch_type": "adhoc", "name": "Mid-month", "auto_approve": false,
                      "invoice_date": "2026-11-25"}),
            )
            .send()
            .await
            .unwrap();
    assert_eq!(r.status(), 200);
    let batch: Value = r.json().await.unwrap();
    let id = batch["id"].to_string().trim_matches('"').to_string();
    let ran = advance(&a, "2026-11-26").await;
    assert_eq!(
        kinds(&ran),
        [("bill_batch.run", id.parse().unwrap())],
        "{ran:?}"
    );
    let batch = surface_b(
        &a,
        &format!("/bill-batches/{id}?expand=bill_batch_runs.invoices"),
    )
    .await;
    let run = &batch["bill_batch_runs"][0];
    assert_eq!(
        (&run["step"], &run["step_status"], &run["status"]),
        (&json!("APPROVE"), &json!("WAITING"), &json!("OPEN")),
        "{batch}"
    );
    let listed = run["invoices"].as_array().unwrap();
    assert!(!listed.is_empty(), "{batch}");
    assert_eq!(run["processed_invoice_count"], json!(listed.len()));
    // ACC-1001 is billed November 1st to 25th of its compute services.
    let billed = invoice_on(&a, 1, "2026-11-25T00:00:00-06:00").await;
    let price = compute_price();
    let services = Decimal::from(compute_starts(&a, 1).await.len());
    let part = (price * Decimal::from(24) / Decimal::from(30))
        .round_dp_with_strategy(2, rust_decimal::RoundingStrategy::MidpointAwayFromZero);
    assert_eq!(billed.2, part * services + pending);
}
