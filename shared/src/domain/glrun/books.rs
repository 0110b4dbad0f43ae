//! Property tests of the books (docs/revenue.md, "Posting rules"): over random catalogues
//! (recurring and one-time prices, FLAT and TIERED usage rates), random billing policies
//! (recurring prices in arrears or in advance, by day or whole periods, usage tiers per
//! event or cumulative), accounts on random cycle days, some paying automatically, and a
//! random walk of usage posted, clock advances, payments by hand,
//! bills on demand, collector runs and ledger runs, all through the domain entry points the
//! APIs call (`usage::post::post`, `sandbox::clock::advance`, `payments`, `collect`,
//! `run_ledger`), the ledger's journal entries always satisfy:
//!
//! - every entry moves a positive amount from one account to another (each entry balances);
//! - Unbilled Receivables (1200) is never below zero after a ledger run, and once everything
//!   is collected and posted it is exactly the rated usage not yet invoiced;
//! - revenue credited (the 4xxx accounts) is what was invoiced plus that unbilled usage;
//! - Accounts Receivable (1100) is what the open invoices still ask;
//! - Cash (1000) is what was paid;
//! - every invoice's amount is the sum of its lines.
//!
//! Cases: [`CASES`] (5 s in a debug build on a shared 2-core machine; 400 cases passed in
//! 105 s when it was written); proptest prints the failing case, shrunk.

use crate::domain::{collect, invoices, payments, usage};
use crate::money::from_sql_text;
use crate::sandbox::clock::{advance, Clock, Target};
use crate::testing::db;
use proptest::prelude::*;
use rusqlite::Transaction;
use rust_decimal::Decimal;
use serde_json::json;
use std::collections::BTreeMap;

/// Cases per run: each walks a fresh tenant through up to a dozen steps.
const CASES: u32 = 24;

const TZ: chrono_tz::Tz = chrono_tz::UTC;

#[derive(Debug, Clone)]
enum Step {
    /// `hours` of usage on service `service` (an index), starting now.
    Usage { service: usize, hours: u32 },
    /// The clock `days` ahead (cycle runs, due dates, autopay).
    Advance { days: i64 },
    /// A payment of `percent` of the oldest open invoice of account `account`, applied to it.
    Pay { account: usize, percent: u32 },
    /// `billOnDemand` of account `account`'s pending usage.
    BillOnDemand { account: usize },
    /// A collector run of every source, up to now.
    Collect,
    /// A ledger run up to now.
    Ledger,
}

/// The billing policy of a case: in advance, cumulative tiers, whole periods.
#[derive(Debug, Clone, Copy)]
struct Policy {
    advance: bool,
    cumulative: bool,
    whole_periods: bool,
}

#[derive(Debug, Clone)]
struct Case {
    policy: Policy,
    /// Per product: recurring price in cents, one-time price in cents, usage rate in cents
    /// per hour, and whether the rate is TIERED (that rate for the first 20 hours, half of
    /// it past them) rather than FLAT.
    products: Vec<(u32, Option<u32>, u32, bool)>,
    /// Per account: cycle day, pays automatically.
    accounts: Vec<(u32, bool)>,
    /// Per service: account, product (indices), start day counted from January 1st, 2030 (1).
    services: Vec<(usize, usize, u32)>,
    steps: Vec<Step>,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0usize..8, 1u32..50).prop_map(|(service, hours)| Step::Usage { service, hours }),
        3 => (1i64..45).prop_map(|days| Step::Advance { days }),
        2 => (0usize..4, 1u32..=100).prop_map(|(account, percent)| Step::Pay { account, percent }),
        1 => (0usize..4).prop_map(|account| Step::BillOnDemand { account }),
        1 => Just(Step::Collect),
        1 => Just(Step::Ledger),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        (any::<bool>(), any::<bool>(), any::<bool>()),
        prop::collection::vec(
            (
                0u32..10_000,
                prop::option::of(0u32..5_000),
                1u32..200,
                any::<bool>(),
            ),
            1..3,
        ),
        prop::collection::vec(
            (prop::sample::select(vec![1u32, 15, 28]), any::<bool>()),
            1..4,
        ),
        prop::collection::vec((0usize..4, 0usize..3, 1u32..40), 1..6),
        prop::collection::vec(step(), 1..12),
    )
        .prop_map(|(policy, products, accounts, services, steps)| Case {
            policy: Policy {
                advance: policy.0,
                cumulative: policy.1,
                whole_periods: policy.2,
            },
            services: services
                .into_iter()
                .map(|(a, p, day)| (a % accounts.len(), p % products.len(), day))
                .collect(),
            products,
            accounts,
            steps,
        })
}

/// The date `day` days after December 31st, 2029.
fn start_date(day: u32) -> String {
    let first = chrono::NaiveDate::from_ymd_opt(2029, 12, 31).unwrap();
    (first + chrono::Duration::days(i64::from(day))).to_string()
}

/// `d` as a JSON number (a document's and a payment's amounts are numbers).
fn number(d: Decimal) -> serde_json::Value {
    serde_json::from_str(&d.to_string()).unwrap()
}

/// `c` cents as a JSON number.
fn cents(c: u32) -> serde_json::Value {
    number(Decimal::new(i64::from(c), 2))
}

/// The fixture document of a case: its catalogue, accounts and services, one ledger over
/// the accounts' category with a calendar for 2030 and 2031.
fn document(c: &Case) -> serde_json::Value {
    let mut prices = Vec::new();
    let mut rules = Vec::new();
    for (i, (recurring, one_time, rate, tiered)) in c.products.iter().enumerate() {
        let product = i + 1;
        prices.push(
            json!({"product_id": product, "product_price_type": "RECURRING",
            "price_type": "FLAT", "amount": cents(*recurring)}),
        );
        if let Some(one_time) = one_time {
            prices.push(
                json!({"product_id": product, "product_price_type": "ONE_TIME",
                "price_type": "FLAT", "amount": cents(*one_time)}),
            );
        }
        let (kind, definition) = if *tiered {
            let half = number(Decimal::new(i64::from(*rate), 2) / Decimal::from(2));
            (
                "TIERED",
                json!({"tiers": [{"up_to": 20, "rate": cents(*rate)},
                                 {"up_to": null, "rate": half}]}),
            )
        } else {
            ("FLAT", json!({"rate": cents(*rate)}))
        };
        rules.push(
            json!({"product_id": product, "position": 1, "name": format!("Hours {product}"),
            "charge_category_id": 1 + i % 2, "uom": "HOUR", "rate_kind": kind,
            "rate": definition}),
        );
    }
    let accounts: Vec<_> = c
        .accounts
        .iter()
        .enumerate()
        .map(|(i, (day, auto))| {
            json!({"id": i + 1, "account_num": format!("ACC-{}", i + 1), "name": "account",
            "billing_account_category_id": 1, "bill_cycle_id": day, "bill_type": "EMAIL",
            "automatic_recurring_payment": auto, "start_date": "2029-12-01",
            "currency_code": "USD"})
        })
        .collect();
    let services: Vec<_> = c
        .services
        .iter()
        .enumerate()
        .map(|(i, (account, product, day))| {
            json!({"id": i + 1, "billing_account_id": account + 1, "product_id": product + 1,
            "agreement_id": 1, "start_date": start_date(*day), "end_action": "RENEW",
            "resources": [{"identifier": format!("s-{}", i + 1)}]})
        })
        .collect();
    let products: Vec<_> = (1..=c.products.len())
        .map(|p| json!({"id": p, "name": format!("Product {p}"), "sku": format!("P{p}")}))
        .collect();
    let p = c.policy;
    json!({
        "policy": {
            "recurring_timing": if p.advance { "ADVANCE" } else { "ARREARS" },
            "usage_tiers": if p.cumulative { "CUMULATIVE" } else { "PER_EVENT" },
            "proration": if p.whole_periods { "NONE" } else { "BY_DAY" }},
        "billing_account_categories": [{"id": 1, "name": "Customers", "type": "CUSTOMER",
            "description": "Customers", "status": "BA_CATEGORY_ACTIVE"}],
        "bill_cycles": [{"id": 1, "name": "1st", "day_of_month": 1},
            {"id": 15, "name": "15th", "day_of_month": 15},
            {"id": 28, "name": "28th", "day_of_month": 28}],
        "billing_accounts": accounts,
        "products": products,
        "product_prices": prices,
        "charge_categories": [
            {"id": 1, "name": "Compute", "charge_category_type": "Usage", "priority": 10},
            {"id": 2, "name": "Transfer", "charge_category_type": "Usage", "priority": 20}],
        "usage_rules": rules,
        "agreements": [{"id": 1, "name": "Yearly", "agreement_period": 12, "status": "ACTIVE",
            "end_action": "RENEW", "prorate_on_cancel": true,
            "product_ids": (1..=c.products.len()).collect::<Vec<_>>(),
            "valid_from": "2029-01-01", "valid_to": "2035-12-31"}],
        "services": services,
        "charts_of_accounts": [{"id": 1, "name": "Chart"}],
        "rule_sets": [{"id": 1, "name": "Rules"}],
        "run_modes": [{"id": 1, "name": "Actuals", "run_type": "ACTUALS"}],
        "ledgers": [{"id": 1, "name": "Books", "status": "ACTIVE", "convert_currency": "NONE",
            "chart_of_account_id": 1, "rule_set_id": 1, "run_mode_actuals_id": 1,
            "billing_account_category_ids": [1], "create_zero_amount_entries": false,
            "timezone_name": "UTC"}],
        "calendar_years": [
            {"ledger_id": 1, "generate_periods": true, "name": "FY2030",
             "start_date": "2030-01-01", "end_date": "2030-12-31"},
            {"ledger_id": 1, "generate_periods": true, "name": "FY2031",
             "start_date": "2031-01-01", "end_date": "2031-12-31"}]
    })
}

fn now(tx: &Transaction<'_>) -> String {
    crate::time::to_storage(crate::time::now_for(tx).unwrap())
}

fn decimals(tx: &Transaction<'_>, sql: &str) -> Vec<Decimal> {
    let mut stmt = tx.prepare(sql).unwrap();
    let rows = stmt
        .query_map([], |r| from_sql_text(r.get_ref(0)?).map_err(Into::into))
        .unwrap();
    rows.map(Result::unwrap).collect()
}

fn sum(tx: &Transaction<'_>, sql: &str) -> Decimal {
    decimals(tx, sql).into_iter().sum()
}

/// Net of each account over every journal entry (debit +, credit -); checks each entry moves
/// a positive amount between two accounts.
fn nets(tx: &Transaction<'_>) -> BTreeMap<String, Decimal> {
    let mut stmt = tx
        .prepare("SELECT amount, debit_account, credit_account FROM journal_entries")
        .unwrap();
    let mut nets: BTreeMap<String, Decimal> = BTreeMap::new();
    let rows = stmt
        .query_map([], |r| {
            Ok((
                from_sql_text(r.get_ref(0)?)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        })
        .unwrap();
    for row in rows {
        let (amount, debit, credit) = row.unwrap();
        assert!(amount > Decimal::ZERO, "{amount} {debit} {credit}");
        assert_ne!(debit, credit);
        *nets.entry(debit).or_default() += amount;
        *nets.entry(credit).or_default() -= amount;
    }
    nets
}

fn net(nets: &BTreeMap<String, Decimal>, prefix: &str) -> Decimal {
    nets.iter()
        .filter(|(k, _)| k.starts_with(prefix))
        .map(|(_, v)| *v)
        .sum()
}

fn collect_all(tx: &Transaction<'_>) {
    let run: collect::NewCollectorRun = serde_json::from_value(json!({"type": "MANUAL",
        "collector_operations": ["INSERT_USAGE", "INSERT_INVOICES", "INSERT_PAYMENTS",
                                 "INSERT_ADJUSTMENTS"]}))
    .unwrap();
    collect::run_collectors(tx, &run, TZ).unwrap();
}

fn post_ledger(tx: &Transaction<'_>, to: &str) {
    let run = super::NewGlRun {
        gl_run_mode_id: None,
        ledger_id: 1,
        run_to_date: to.to_string(),
    };
    let id = super::run_ledger(tx, &run).unwrap();
    let status: String = tx
        .query_row("SELECT status FROM gl_runs WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(status, "COMPLETE");
}

fn play(c: &Case) {
    let mut conn = db();
    let tx = conn.transaction().unwrap();
    let start = crate::time::from_storage("2030-01-01T00:00:00.000Z").unwrap();
    Clock::Frozen(start).store(&tx).unwrap();
    crate::fixtures::apply(
        &tx,
        crate::fixtures::Seed::Document(Box::new(document(c))),
        TZ,
    )
    .unwrap();
    for step in &c.steps {
        match *step {
            Step::Usage { service, hours } => {
                let srid = format!("s-{}", service % c.services.len() + 1);
                let req: usage::BulkRequest = serde_json::from_value(json!({
                    "mode": "FAIL_ON_EXISTING",
                    "usage_events": [{"service_resource_identifier": srid, "usage_uom": "HOUR",
                                      "usage_amount": hours, "start_time": now(&tx)}]}))
                .unwrap();
                // A service not started yet refuses the event: an erred event, no charge.
                usage::post(&tx, &req, TZ).unwrap();
            }
            Step::Advance { days } => {
                advance(&tx, Target::Seconds(days * 86_400), TZ).unwrap();
            }
            Step::Pay { account, percent } => {
                let account = (account % c.accounts.len()) as i64 + 1;
                let open = invoices::open_invoices_oldest_first(&tx, account).unwrap();
                let Some(invoice) = open.iter().find(|i| i.amount_to_pay > Decimal::ZERO) else {
                    continue;
                };
                let part = (invoice.amount_to_pay * Decimal::from(percent) / Decimal::from(100))
                    .round_dp(2)
                    .max(Decimal::new(1, 2))
                    .min(invoice.amount_to_pay);
                let at = now(&tx);
                let p: payments::NewPayment = serde_json::from_value(json!({
                    "billing_account_id": account, "amount": number(part), "occurred_on": at}))
                .unwrap();
                let id = payments::create_payment(&tx, &p, TZ).unwrap();
                payments::apply_payment(
                    &tx,
                    id,
                    &payments::PaymentTarget::Invoice(invoice.id),
                    &at,
                )
                .unwrap();
            }
            Step::BillOnDemand { account } => {
                let account = (account % c.accounts.len()) as i64 + 1;
                // No pending charges is a refusal (409): nothing to bill.
                let bill = crate::domain::account_commands::OnDemandBill {
                    description: None,
                    occurred_on: None,
                    due_date: None,
                };
                let _ = crate::domain::account_commands::bill_on_demand(
                    &tx,
                    account,
                    &bill,
                    &now(&tx),
                    TZ,
                );
            }
            Step::Collect => collect_all(&tx),
            Step::Ledger => {
                post_ledger(&tx, &now(&tx));
                let nets = nets(&tx);
                assert!(net(&nets, "1200") >= Decimal::ZERO, "{nets:?}");
            }
        }
    }
    // A second later, so that the last collector window (which ends before now) holds
    // usage posted at the last instant; then everything is collected and posted.
    advance(&tx, Target::Seconds(1), TZ).unwrap();
    collect_all(&tx);
    post_ledger(&tx, "9999-12-31");
    let nets = nets(&tx);
    let unbilled = sum(
        &tx,
        "SELECT total_charge FROM usage_events WHERE voided = 0 AND invoice_id IS NULL",
    );
    let invoiced = sum(
        &tx,
        "SELECT amount FROM invoices WHERE status <> 'CANCELED'",
    );
    let open = sum(
        &tx,
        "SELECT amount_to_pay FROM invoices WHERE status = 'OPEN'",
    );
    let paid = sum(&tx, "SELECT amount FROM payments");
    assert_eq!(nets.values().copied().sum::<Decimal>(), Decimal::ZERO);
    assert_eq!(net(&nets, "1200"), unbilled, "unbilled usage: {nets:?}");
    assert_eq!(-net(&nets, "4"), invoiced + unbilled, "revenue: {nets:?}");
    assert_eq!(net(&nets, "1100"), open, "receivables: {nets:?}");
    assert_eq!(net(&nets, "1000"), paid, "cash: {nets:?}");
    let mut stmt = tx.prepare("SELECT id, amount FROM invoices").unwrap();
    let invoices: Vec<(i64, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for (id, amount) in invoices {
        let lines = sum(
            &tx,
            &format!("SELECT amount FROM invoice_lines WHERE invoice_id = {id}"),
        );
        assert_eq!(lines, amount.parse::<Decimal>().unwrap(), "invoice {id}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn the_books_balance_over_random_walks(c in case()) {
        play(&c);
    }
}
