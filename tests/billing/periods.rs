//! Each service period is billed exactly once, whether bill batches split it or not: over six
//! months, POSTed bill batches (each on its own invoice date, none to three a month) alternate
//! with the monthly cycle runs, and what the invoices bill adds up, period by period, to the
//! recurring price of every whole period closed, nothing billed twice and nothing skipped
//! (docs/billing-lifecycle.md: a batch bills "up to its invoice date", the next cycle run
//! "from there").
//!
//! The price, 3,775.80 a month, is a multiple of a cent times 28, 29, 30 and 31 days, so every
//! prorated part is exact and the sums must match to the cent. The only thing billed is that
//! price (no usage, no one-time price), so an invoice's amount is its recurring part; the
//! expected amounts come from the calendar, not from the engine.

use super::lifecycle::{advance, post_bill_batch};
use chrono::Datelike;
use e2e::legacy::{attr, dec, Legacy};
use e2e::TestServer;
use rust_decimal::Decimal;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The monthly recurring price: 3,775.80 = 377,580 cents = lcm(28, 29, 30, 31) cents x 1.
const PRICE: &str = "3775.80";

/// The bill batches' invoice dates: none in some months, several in others, early and late.
const BATCH_DATES: &[&str] = &[
    "2030-02-05",
    "2030-03-17",
    "2030-03-28",
    "2030-05-09",
    "2030-05-16",
    "2030-05-23",
    "2030-06-30",
    "2030-07-01",
];

fn catalogue() -> Value {
    json!({
        "billing_account_categories": [{"id": 1, "name": "Customers", "type": "CUSTOMER", "description": "Customers", "status": "BA_CATEGORY_ACTIVE"}],
        "bill_cycles": [{"id": 1, "name": "Monthly on the 1st", "day_of_month": 1}],
        "billing_accounts": [{"id": 1, "account_num": "ACC-1", "name": "Split periods",
            "billing_account_category_id": 1, "bill_cycle_id": 1, "bill_type": "EMAIL",
            "automatic_recurring_payment": false, "start_date": "2029-12-01",
            "currency_code": "USD"}],
        "products": [{"id": 1, "name": "Seat", "sku": "SEAT"}],
        "product_prices": [{"id": 1, "product_id": 1, "product_price_type": "RECURRING",
            "price_type": "FLAT", "amount": PRICE.parse::<f64>().expect("price")}],
        "agreements": [{"id": 1, "name": "Yearly", "agreement_period": 12, "status": "ACTIVE",
            "end_action": "RENEW", "prorate_on_cancel": true, "product_ids": [1],
            "valid_from": "2029-01-01", "valid_to": "2031-12-31"}],
        "services": [{"id": 1, "billing_account_id": 1, "product_id": 1, "agreement_id": 1,
            "start_date": "2029-12-01", "end_action": "RENEW",
            "resources": [{"identifier": "seat-1"}]}]
    })
}

/// Every invoice of account 1 as (its date, amount), from Surface A.
async fn invoices(a: &Legacy) -> Vec<(chrono::NaiveDate, Decimal)> {
    let r = a.get("invoices?billingAccountEid=1&pageSize=100").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mut out: Vec<(chrono::NaiveDate, Decimal)> = r
        .el()
        .children
        .iter()
        .map(|i| {
            let on = chrono::DateTime::parse_from_rfc3339(attr(i, "occurredOn"))
                .expect("occurredOn")
                .date_naive();
            (on, dec(i, "amount"))
        })
        .collect();
    assert!(out.len() < 100, "one page holds them");
    out.sort();
    out
}

#[tokio::test]
async fn bill_batches_between_cycle_runs_bill_every_period_exactly_once() {
    let s = TestServer::start().await;
    let t = s
        .create_tenant_with(json!({"name": "periods", "time_zone": "UTC",
            "clock": {"frozen_at": "2030-01-02T00:00:00Z"}, "fixtures": catalogue()}))
        .await;
    let a = Legacy { s, t };
    // Each batch is POSTed the day before its invoice date and runs when the clock passes it;
    // the cycle runs on every 1st. The last advance ends after the run of August 1st.
    let mut stops: Vec<String> = Vec::new();
    for date in BATCH_DATES {
        let on: chrono::NaiveDate = date.parse().expect("date");
        let day_before = on.pred_opt().expect("a day before");
        stops.push(format!("{day_before}T12:00:00Z"));
    }
    stops.push("2030-08-01T12:00:00Z".to_string());
    let mut batch_at = BATCH_DATES.iter();
    for stop in &stops {
        advance(&a, stop).await;
        if let Some(date) = batch_at.next() {
            post_bill_batch(&a, &format!("Batch of {date}"), date).await;
        }
    }

    let price: Decimal = PRICE.parse().expect("price");
    let billed = invoices(&a).await;
    // Every invoice falls in one cycle period (after the 1st that opens it, up to and
    // including the 1st that closes it); the first run (February 1st) bills January whole.
    let mut per_period: BTreeMap<chrono::NaiveDate, Decimal> = BTreeMap::new();
    for (on, amount) in &billed {
        let closes = if on.day0() == 0 {
            *on
        } else {
            first_of_next_month(*on)
        };
        *per_period.entry(closes).or_default() += amount;
    }
    let expected: BTreeMap<chrono::NaiveDate, Decimal> = (2..=8)
        .map(|month| {
            (
                chrono::NaiveDate::from_ymd_opt(2030, month, 1).expect("date"),
                price,
            )
        })
        .collect();
    assert_eq!(
        per_period, expected,
        "billed per period (keyed by the 1st that closes it) from the invoices {billed:?}"
    );
    // The batches did bill something: the periods they split have more than one invoice.
    assert!(
        billed.len() > expected.len(),
        "the batches made invoices of their own: {billed:?}"
    );
}

fn first_of_next_month(on: chrono::NaiveDate) -> chrono::NaiveDate {
    let (y, m) = if on.month() == 12 {
        (on.year() + 1, 1)
    } else {
        (on.year(), on.month() + 1)
    };
    chrono::NaiveDate::from_ymd_opt(y, m, 1).expect("date")
}
