//! Recurring prices billed in advance and cumulative usage tiers (docs/billing-lifecycle.md,
//! "In advance" and "Cumulative usage tiers"), over HTTP on a tenant created from a fixture
//! document with a frozen clock:
//! - ADVANCE: each cycle run bills the period it opens (its first run also the period it
//!   closes), a partial first and last period by day, nothing past a known end; the same
//!   catalogue in arrears bills the same periods one run later;
//! - switching ARREARS -> ADVANCE -> ARREARS bills every day of every service exactly once;
//! - CUMULATIVE: 12 x 100 GB bill the same as 1 x 1200 GB, also when a bill batch billed
//!   part of the period, while Surface B's rating of each event stays per event;
//! - under both, the ledger's entries balance: accruals cleared, revenue = invoiced.
//!
//! Expected amounts come from the calendar and the catalogue (31.00 a month, 1.00 a day in
//! January and March; tiers 0.10 a GB up to 1000 GB, 0.02 past it), not from the engine.

use super::lifecycle::{admin, advance, post_bill_batch, post_usage};
use e2e::legacy::{attr, dec, opt_attr, Legacy};
use e2e::revenue::{net, with_books, Rev};
use reqwest::Method;
use rust_decimal::Decimal;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Two accounts on cycle 1 (UTC). ACC-1: seats (31.00 a month) from 2029-12-01 (service 1)
/// and 2030-01-16 (service 2), on a renewing agreement. ACC-2: a seat from 2030-01-16 whose
/// term ends on 2030-03-16 (service 3, end action END). Each has a Storage service (4, 5;
/// resources r-4, r-5) rated by a TIERED rule: 0.10 a GB up to 1000 GB, 0.02 past it.
/// One ledger over both.
fn catalogue(policy: Value) -> Value {
    let account = |id: i64| {
        json!({"id": id, "account_num": format!("ACC-{id}"), "name": format!("Account {id}"),
            "billing_account_category_id": 1, "bill_cycle_id": 1, "bill_type": "EMAIL",
            "start_date": "2029-12-01", "currency_code": "USD"})
    };
    let service = |id: i64, account: i64, product: i64, agreement: i64, start: &str| {
        json!({"id": id, "billing_account_id": account, "product_id": product,
            "agreement_id": agreement, "start_date": start,
            "resources": [{"identifier": format!("r-{id}")}]})
    };
    let mut fixed = service(3, 2, 1, 2, "2030-01-16");
    fixed["end_date"] = json!("2030-03-16");
    fixed["end_action"] = json!("END");
    with_books(
        json!({
            "policy": policy,
            "billing_account_categories": [{"id": 1, "name": "Customers", "type": "CUSTOMER",
                "description": "Customers", "status": "BA_CATEGORY_ACTIVE"}],
            "bill_cycles": [{"id": 1, "name": "Monthly on the 1st", "day_of_month": 1}],
            "billing_accounts": [account(1), account(2)],
            "products": [{"id": 1, "name": "Seat", "sku": "SEAT"},
                         {"id": 2, "name": "Storage", "sku": "STORAGE"}],
            "product_prices": [{"id": 1, "product_id": 1, "product_price_type": "RECURRING",
                "price_type": "FLAT", "amount": 31}],
            "charge_categories": [{"id": 1, "name": "Storage", "charge_category_type": "Usage",
                "priority": 10}],
            "usage_rules": [{"id": 1, "product_id": 2, "position": 1, "name": "Gigabytes",
                "charge_category_id": 1, "uom": "GIGABYTE", "rate_kind": "TIERED",
                "rate": {"tiers": [{"up_to": 1000, "rate": 0.10}, {"up_to": null, "rate": 0.02}]}}],
            "agreements": [
                {"id": 1, "name": "Yearly", "agreement_period": 12, "status": "ACTIVE",
                 "end_action": "RENEW", "prorate_on_cancel": true, "product_ids": [1, 2]},
                {"id": 2, "name": "Fixed term", "agreement_period": 2, "status": "ACTIVE",
                 "end_action": "END", "prorate_on_cancel": true, "product_ids": [1]}],
            "services": [service(1, 1, 1, 1, "2029-12-01"), service(2, 1, 1, 1, "2030-01-16"), fixed,
                service(4, 1, 2, 1, "2029-12-01"), service(5, 2, 2, 1, "2029-12-01")]
        }),
        &[2030],
    )
}

async fn tenant(name: &str, policy: Value) -> Legacy {
    super::policy::tenant_of(name, catalogue(policy)).await
}

fn d(s: &str) -> Decimal {
    s.parse().expect("decimal")
}

/// Every invoice of account `eid` as (date, amount, invoice eid), by date.
async fn invoices(a: &Legacy, eid: i64) -> Vec<(String, Decimal, i64)> {
    let r = a
        .get(&format!("invoices?billingAccountEid={eid}&pageSize=100"))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mut out: Vec<_> = r
        .el()
        .children
        .iter()
        .map(|i| {
            (
                attr(i, "occurredOn")[..10].to_string(),
                dec(i, "amount"),
                attr(i, "eid").parse().expect("eid"),
            )
        })
        .collect();
    out.sort();
    out
}

/// A line as (lineType, amount, service eid, period start and end days).
type Line = (String, Decimal, Option<i64>, String, String);

/// The lines of invoice `eid` (Surface A `invoices/{eid}/lines`), in line order; checks they
/// add up to `amount`.
async fn lines(a: &Legacy, eid: i64, amount: Decimal) -> Vec<Line> {
    let r = a.get(&format!("invoices/{eid}/lines")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let out: Vec<Line> = r
        .el()
        .children
        .iter()
        .map(|l| {
            let day = |name: &str| opt_attr(l, name).map_or(String::new(), |v| v[..10].into());
            (
                attr(l, "lineType").to_string(),
                dec(l, "amount"),
                opt_attr(l, "serviceEid").map(|v| v.parse().expect("service eid")),
                day("periodStartDate"),
                day("periodEndDate"),
            )
        })
        .collect();
    let sum: Decimal = out.iter().map(|l| l.1).sum();
    assert_eq!(
        sum, amount,
        "invoice {eid}: its lines add up to it: {}",
        r.body
    );
    out
}

fn recurring(amount: &str, service: i64, from: &str, to: &str) -> Line {
    (
        "RECURRING".into(),
        d(amount),
        Some(service),
        from.into(),
        to.into(),
    )
}

/// (date, amount) of each invoice of account `eid`.
async fn amounts(a: &Legacy, eid: i64) -> Vec<(String, Decimal)> {
    invoices(a, eid)
        .await
        .into_iter()
        .map(|(on, amount, _)| (on, amount))
        .collect()
}

fn billed(rows: &[(&str, &str)]) -> Vec<(String, Decimal)> {
    rows.iter().map(|(on, x)| (on.to_string(), d(x))).collect()
}

/// Collects every source and posts it all in one ledger run; checks the books against
/// Surface A: every entry balances, Unbilled Receivables is cleared (all usage invoiced),
/// the revenue accounts credit what was invoiced, Receivables are what open invoices ask.
async fn books_balance(a: &Legacy) {
    let r = a.get("invoices?pageSize=100").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let all = &r.el().children;
    let invoiced: Decimal = all.iter().map(|i| dec(i, "amount")).sum();
    let open: Decimal = all
        .iter()
        .filter(|i| attr(i, "status") == "OPEN")
        .map(|i| dec(i, "amountToPay"))
        .sum();
    let rev = Rev {
        s: &a.s,
        t: a.t.clone(),
    };
    let nets = rev
        .post_everything("2030-01-01T00:00:00Z", "2030-12-31")
        .await;
    assert_eq!(nets.values().copied().sum::<Decimal>(), Decimal::ZERO);
    assert_eq!(
        net(&nets, "1200"),
        Decimal::ZERO,
        "accrual cleared: {nets:?}"
    );
    assert_eq!(-net(&nets, "4"), invoiced, "revenue = invoiced: {nets:?}");
    assert_eq!(net(&nets, "1100"), open, "receivables: {nets:?}");
}

#[tokio::test]
async fn in_advance_each_run_bills_the_period_it_opens() {
    let a = tenant("advance", json!({"recurring_timing": "ADVANCE"})).await;
    advance(&a, "2030-04-01T12:00:00Z").await;
    let one = invoices(&a, 1).await;
    assert_eq!(
        one.iter().map(|i| (i.0.as_str(), i.1)).collect::<Vec<_>>(),
        [
            ("2030-02-01", d("109")),
            ("2030-03-01", d("62")),
            ("2030-04-01", d("62"))
        ],
        "{one:?}"
    );
    // February 1st: January (the period the first run closes) and February (the one it
    // opens), service 2 from its start on January 16th: 16 of 31 days.
    assert_eq!(
        lines(&a, one[0].2, one[0].1).await,
        [
            recurring("31", 1, "2030-01-01", "2030-02-01"),
            recurring("31", 1, "2030-02-01", "2030-03-01"),
            recurring("16", 2, "2030-01-16", "2030-02-01"),
            recurring("31", 2, "2030-02-01", "2030-03-01"),
        ]
    );
    assert_eq!(
        lines(&a, one[2].2, one[2].1).await,
        [
            recurring("31", 1, "2030-04-01", "2030-05-01"),
            recurring("31", 2, "2030-04-01", "2030-05-01"),
        ]
    );
    // ACC-2's seat ends on March 16th: March 1st bills 15 of 31 days, April 1st nothing.
    let two = invoices(&a, 2).await;
    assert_eq!(two.len(), 2, "{two:?}");
    assert_eq!(
        lines(&a, two[0].2, two[0].1).await,
        [
            recurring("16", 3, "2030-01-16", "2030-02-01"),
            recurring("31", 3, "2030-02-01", "2030-03-01"),
        ]
    );
    assert_eq!(
        lines(&a, two[1].2, two[1].1).await,
        [recurring("15", 3, "2030-03-01", "2030-03-16")]
    );
    books_balance(&a).await;

    // The same catalogue in arrears: the same periods, a run later.
    let a = tenant("arrears", json!({})).await;
    advance(&a, "2030-04-01T12:00:00Z").await;
    assert_eq!(
        amounts(&a, 1).await,
        billed(&[
            ("2030-02-01", "47"),
            ("2030-03-01", "62"),
            ("2030-04-01", "62")
        ])
    );
    assert_eq!(
        amounts(&a, 2).await,
        billed(&[
            ("2030-02-01", "16"),
            ("2030-03-01", "31"),
            ("2030-04-01", "15")
        ])
    );
}

#[tokio::test]
async fn switching_between_arrears_and_advance_bills_every_day_once() {
    let a = tenant("switch", json!({})).await;
    advance(&a, "2030-02-01T12:00:00Z").await;
    let policy = |timing: &str| json!({ "recurring_timing": timing });
    admin(&a, Method::PUT, "/policy", Some(policy("ADVANCE"))).await;
    advance(&a, "2030-03-10T00:00:00Z").await;
    admin(&a, Method::PUT, "/policy", Some(policy("ARREARS"))).await;
    advance(&a, "2030-05-01T12:00:00Z").await;
    // February 1st in arrears (January); March 1st in advance: February, which no run billed
    // yet, and March; April 1st in arrears finds March billed (no invoice); May 1st April.
    assert_eq!(
        amounts(&a, 1).await,
        billed(&[
            ("2030-02-01", "47"),
            ("2030-03-01", "124"),
            ("2030-05-01", "62")
        ])
    );
    assert_eq!(
        amounts(&a, 2).await,
        billed(&[("2030-02-01", "16"), ("2030-03-01", "46")])
    );
    // Per service, the periods billed follow each other from its start (or January 1st,
    // the first run's period) to its end (or May 1st): no day twice, none skipped.
    let mut spans: BTreeMap<i64, Vec<(String, String, Decimal)>> = BTreeMap::new();
    for account in [1, 2] {
        for (_, amount, eid) in invoices(&a, account).await {
            for (kind, x, service, from, to) in lines(&a, eid, amount).await {
                assert_eq!(kind, "RECURRING");
                spans
                    .entry(service.expect("service"))
                    .or_default()
                    .push((from, to, x));
            }
        }
    }
    for (service, from, to, total) in [
        (1, "2030-01-01", "2030-05-01", "124"),
        (2, "2030-01-16", "2030-05-01", "109"),
        (3, "2030-01-16", "2030-03-16", "62"),
    ] {
        let mut got = spans.remove(&service).expect("billed");
        got.sort();
        assert_eq!(got[0].0, from, "service {service}: {got:?}");
        assert_eq!(got[got.len() - 1].1, to, "service {service}: {got:?}");
        for pair in got.windows(2) {
            assert_eq!(pair[0].1, pair[1].0, "service {service}: {got:?}");
        }
        let sum: Decimal = got.iter().map(|s| s.2).sum();
        assert_eq!(sum, d(total), "service {service}: {got:?}");
    }
    books_balance(&a).await;
}

/// Usage of ACC-1 (12 x 100 GB, half of it billed by a bill batch on January 20th) and of
/// ACC-2 (1 x 1200 GB) in January on a tenant of `policy`, the clock to February 1st; answers
/// each account's usage lines over its invoices as (lineType, amount).
async fn storage_month(a: &Legacy) -> [Vec<(String, Decimal)>; 2] {
    advance(a, "2030-01-10T00:00:00Z").await;
    for day in 3..=8 {
        let at = format!("2030-01-0{day}T10:00:00Z");
        let charge = post_usage(a, "r-4", "GIGABYTE", 100, &at).await;
        assert_eq!(charge, d("10"), "rated per event on Surface B");
    }
    post_bill_batch(a, "Mid-January", "2030-01-20").await;
    advance(a, "2030-01-28T00:00:00Z").await;
    for day in 21..=26 {
        let at = format!("2030-01-{day}T10:00:00Z");
        let charge = post_usage(a, "r-4", "GIGABYTE", 100, &at).await;
        assert_eq!(charge, d("10"), "rated per event on Surface B");
    }
    let charge = post_usage(a, "r-5", "GIGABYTE", 1200, "2030-01-25T10:00:00Z").await;
    assert_eq!(charge, d("104"), "1000 x 0.10 + 200 x 0.02");
    advance(a, "2030-02-01T12:00:00Z").await;
    let mut out = [Vec::new(), Vec::new()];
    for (i, account) in [1, 2].into_iter().enumerate() {
        for (_, amount, eid) in invoices(a, account).await {
            for (kind, x, ..) in lines(a, eid, amount).await {
                if kind.starts_with("USAGE") {
                    out[i].push((kind, x));
                }
            }
        }
    }
    out
}

fn usage(rows: &[(&str, &str)]) -> Vec<(String, Decimal)> {
    rows.iter().map(|(k, x)| (k.to_string(), d(x))).collect()
}

#[tokio::test]
async fn cumulative_tiers_bill_a_periods_quantity_as_one() {
    let a = tenant("cumulative", json!({"usage_tiers": "CUMULATIVE"})).await;
    let [one, two] = storage_month(&a).await;
    // ACC-1: the batch billed 600 GB (60.00, all in the first tier); February 1st bills the
    // other 600 GB counted on from there: 400 x 0.10 + 200 x 0.02 = 44.00, i.e. the 60.00
    // rated per event and a USAGE_TIERS line of -16.00. 60 + 44 = 104: as ACC-2's 1200 GB.
    assert_eq!(
        one,
        usage(&[("USAGE", "60"), ("USAGE", "60"), ("USAGE_TIERS", "-16")])
    );
    assert_eq!(two, usage(&[("USAGE", "104")]));
    books_balance(&a).await;

    // Per event (the default): ACC-1 pays each 100 GB in the first tier.
    let a = tenant("per-event", json!({})).await;
    let [one, two] = storage_month(&a).await;
    assert_eq!(one, usage(&[("USAGE", "60"), ("USAGE", "60")]));
    assert_eq!(two, usage(&[("USAGE", "104")]));
}
