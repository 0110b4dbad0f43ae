//! Seed data sets: `demo` (a small, consistent tenant touching every resource of every
//! surface, defined in `seed/demo.json`) and `empty`. Seeds load through the same domain
//! create functions that API writes use.

use crate::domain::collect::catalogue;
use crate::domain::{
    accounts, actions, adjustments, agreements, bill_batches, calendars, catalog, glrun, invoices,
    ledgers, payments,
};
use crate::{Error, Result};
use chrono_tz::Tz;
use rusqlite::Transaction;
use serde::Deserialize;

/// The demo data set, as shipped.
pub const DEMO_JSON: &str = include_str!("../seed/demo.json");

/// Which data a new or reset tenant starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Seed {
    /// The demo data set.
    Demo,
    /// No records at all.
    Empty,
}

impl Seed {
    /// Parses `demo` or `empty`.
    pub fn parse(s: &str) -> Result<Seed> {
        match s {
            "demo" => Ok(Seed::Demo),
            "empty" => Ok(Seed::Empty),
            other => Err(Error::bad_request(format!(
                "seed: {} is not one of demo, empty",
                crate::error::quoted(other)
            ))),
        }
    }
}

/// A year of a ledger's calendar in seed data.
#[derive(Debug, Clone, Deserialize)]
struct SeedYear {
    ledger_id: i64,
    #[serde(default)]
    generate_periods: bool,
    #[serde(flatten)]
    year: calendars::NewYear,
}

/// A compact description of many agreement services, expanded by [`GeneratedServices::expand`]
/// into [`agreements::NewService`] values (created through the same domain function). Record
/// `i` takes the `i`-th value of each list, cycling, so every filter field varies.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct GeneratedServices {
    first_id: i64,
    count: i64,
    billing_account_ids: Vec<i64>,
    /// (product, agreement) pairs.
    products: Vec<(i64, i64)>,
    statuses: Vec<String>,
    currencies: Vec<String>,
    end_actions: Vec<String>,
    true_up_charge_types: Vec<String>,
    /// First start date; record `i` starts `i` days later.
    first_start: String,
}

/// The `i`-th value of `list`, cycling (None for an empty list).
fn nth<T: Clone>(list: &[T], i: i64) -> Option<T> {
    let len = i64::try_from(list.len()).ok().filter(|l| *l > 0)?;
    usize::try_from(i.rem_euclid(len))
        .ok()
        .and_then(|k| list.get(k).cloned())
}

impl GeneratedServices {
    fn expand(&self) -> Result<Vec<agreements::NewService>> {
        let first = chrono::NaiveDate::parse_from_str(&self.first_start, "%Y-%m-%d")
            .map_err(|e| Error::Internal(format!("generated_services.first_start: {e}")))?;
        let mut out = Vec::new();
        for i in 0..self.count {
            let id = self.first_id + i;
            let (product_id, agreement_id) = nth(&self.products, i)
                .ok_or_else(|| Error::Internal("generated_services.products is empty".into()))?;
            let start = first + chrono::Duration::days(i);
            let ends = i % 5 == 4;
            let mut resource = agreements::NewServiceResource {
                identifier: format!("gen-{id:04}"),
                status: None,
                children: Vec::new(),
            };
            if i % 3 == 0 {
                resource.children.push(format!("gen-{id:04}-child"));
            }
            out.push(agreements::NewService {
                id: Some(id),
                billing_account_id: nth(&self.billing_account_ids, i).unwrap_or(1),
                product_id,
                agreement_id,
                status: nth(&self.statuses, i),
                start_date: start.format("%Y-%m-%d").to_string(),
                end_date: ends.then(|| {
                    (start + chrono::Duration::days(365))
                        .format("%Y-%m-%d")
                        .to_string()
                }),
                end_action: nth(&self.end_actions, i),
                // Amounts whose text order differs from their numeric order (9.5 < 10).
                minimum_amount: (i % 4 != 3)
                    .then(|| rust_decimal::Decimal::new((i * 37 % 1000) * 10 + 5, 1)),
                minimum_amount_currency_code: (i % 4 != 3)
                    .then(|| nth(&self.currencies, i))
                    .flatten(),
                resources: vec![resource],
                true_up_charge_types: (i % 4 == 0)
                    .then(|| nth(&self.true_up_charge_types, i / 4))
                    .flatten()
                    .into_iter()
                    .collect(),
            });
        }
        Ok(out)
    }

    /// Gives generated agreement service `id` the lifecycle state a live tenant accumulates
    /// (renewals, charges, next-term choices), which no create function sets: without it
    /// those filter fields would hold one value everywhere. Values are bound, derived from
    /// the id.
    fn age(&self, tx: &Transaction<'_>, id: i64) -> Result<()> {
        let i = id - self.first_id;
        let next = (i % 5 == 2).then(|| nth(&self.products, i + 1)).flatten();
        tx.execute(
            "UPDATE agreement_services SET renewed = ?2, accumulated_charges_amount = ?3,
                next_service_pay_on_purchase = ?4, preserve_service_price = ?5,
                next_preserve_service_price = ?6, omit_minimum_amount = ?7,
                next_agreement_id = ?8, next_end_action = ?9, next_service_product_id = ?10
             WHERE id = ?1",
            rusqlite::params![
                id,
                i % 6 == 1,
                crate::money::canonical(rust_decimal::Decimal::new(i * 1309 % 100_000, 2)),
                i % 8 == 3,
                i % 7 == 0,
                i % 7 == 1,
                i % 4 == 3,
                next.map(|(_, agreement)| agreement),
                next.and_then(|_| nth(&self.end_actions, i + 1)),
                next.map(|(product, _)| product),
            ],
        )?;
        Ok(())
    }
}

/// A recorded payment applied to invoices, as the applyPayment command does it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedPaymentApplication {
    payment_id: i64,
    invoice_ids: Vec<i64>,
    applied_on: String,
}

/// A data set: every record kind, in dependency order.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct SeedData {
    billing_account_categories: Vec<accounts::CategoryFields>,
    bill_cycles: Vec<accounts::NewBillCycle>,
    billing_accounts: Vec<accounts::NewAccount>,
    products: Vec<catalog::NewProduct>,
    product_prices: Vec<catalog::NewProductPrice>,
    charge_categories: Vec<catalog::NewChargeCategory>,
    reasons: Vec<catalog::NewReason>,
    lookup_tables: Vec<catalog::NewLookupTable>,
    usage_rules: Vec<catalog::NewUsageRule>,
    agreements: Vec<agreements::NewAgreement>,
    services: Vec<agreements::NewService>,
    generated_services: Option<GeneratedServices>,
    actions: Vec<actions::NewAction>,
    bill_batches: Vec<bill_batches::NewBillBatch>,
    bill_batch_runs: Vec<bill_batches::NewBillBatchRun>,
    invoices: Vec<invoices::NewInvoice>,
    payments: Vec<payments::NewPayment>,
    payment_applications: Vec<SeedPaymentApplication>,
    adjustments: Vec<adjustments::NewAdjustment>,
    charts_of_accounts: Vec<ledgers::NewNamed>,
    rule_sets: Vec<ledgers::NewNamed>,
    run_modes: Vec<glrun::NewRunMode>,
    ledgers: Vec<ledgers::LedgerFields>,
    calendar_years: Vec<SeedYear>,
    collectors: Vec<catalogue::NewCollector>,
}

/// Loads `seed` into the (empty) database of the transaction.
pub fn apply(tx: &Transaction<'_>, seed: Seed, tz: Tz) -> Result<()> {
    let data: SeedData = match seed {
        Seed::Empty => return Ok(()),
        Seed::Demo => serde_json::from_str(DEMO_JSON)
            .map_err(|e| Error::Internal(format!("demo seed does not parse: {e}")))?,
    };
    load(tx, &data, tz)
}

fn load(tx: &Transaction<'_>, d: &SeedData, tz: Tz) -> Result<()> {
    d.billing_account_categories
        .iter()
        .try_for_each(|x| accounts::create_category(tx, x).map(drop))?;
    d.bill_cycles
        .iter()
        .try_for_each(|x| accounts::create_bill_cycle(tx, x).map(drop))?;
    d.billing_accounts
        .iter()
        .try_for_each(|x| accounts::create_account(tx, x, tz).map(drop))?;
    d.products
        .iter()
        .try_for_each(|x| catalog::create_product(tx, x).map(drop))?;
    d.product_prices
        .iter()
        .try_for_each(|x| catalog::create_product_price(tx, x).map(drop))?;
    d.charge_categories
        .iter()
        .try_for_each(|x| catalog::create_charge_category(tx, x).map(drop))?;
    d.reasons
        .iter()
        .try_for_each(|x| catalog::create_reason(tx, x).map(drop))?;
    d.lookup_tables
        .iter()
        .try_for_each(|x| catalog::create_lookup_table(tx, x, tz).map(drop))?;
    d.usage_rules
        .iter()
        .try_for_each(|x| catalog::create_usage_rule(tx, x, tz).map(drop))?;
    d.agreements
        .iter()
        .try_for_each(|x| agreements::create_agreement(tx, x, tz).map(drop))?;
    d.services
        .iter()
        .try_for_each(|x| agreements::create_service(tx, x, tz).map(drop))?;
    if let Some(generated) = &d.generated_services {
        for service in generated.expand()? {
            let id = agreements::create_service(tx, &service, tz)?;
            generated.age(tx, id)?;
        }
    }
    d.actions
        .iter()
        .try_for_each(|x| actions::create_action(tx, x).map(drop))?;
    d.bill_batches
        .iter()
        .try_for_each(|x| bill_batches::create_bill_batch(tx, x, tz).map(drop))?;
    d.bill_batch_runs
        .iter()
        .try_for_each(|x| bill_batches::create_bill_batch_run(tx, x, tz).map(drop))?;
    d.invoices
        .iter()
        .try_for_each(|x| invoices::create_invoice(tx, x, tz).map(drop))?;
    d.payments
        .iter()
        .try_for_each(|x| payments::create_payment(tx, x, tz).map(drop))?;
    for a in &d.payment_applications {
        let applied_on = crate::domain::parse_time("applied_on", &a.applied_on, tz)?;
        let target = payments::PaymentTarget::Invoices(a.invoice_ids.clone());
        payments::apply_payment(tx, a.payment_id, &target, &applied_on)?;
    }
    d.adjustments
        .iter()
        .try_for_each(|x| adjustments::create_adjustment(tx, x, tz).map(drop))?;
    d.charts_of_accounts
        .iter()
        .try_for_each(|x| ledgers::create_chart_of_accounts(tx, x).map(drop))?;
    d.rule_sets
        .iter()
        .try_for_each(|x| ledgers::create_rule_set(tx, x).map(drop))?;
    d.run_modes
        .iter()
        .try_for_each(|x| glrun::create_run_mode(tx, x).map(drop))?;
    d.ledgers
        .iter()
        .try_for_each(|x| ledgers::create_ledger(tx, x).map(drop))?;
    d.calendar_years.iter().try_for_each(|y| {
        calendars::create_year(tx, y.ledger_id, &y.year, y.generate_periods).map(drop)
    })?;
    d.collectors
        .iter()
        .try_for_each(|x| catalogue::create_collector(tx, x).map(drop))?;
    Ok(())
}

/// Replaces every record of the tenant with `seed`, inside the caller's transaction.
pub fn reset(tx: &Transaction<'_>, seed: Seed, tz: Tz) -> Result<()> {
    crate::store::sqlite::clear_all(tx)?;
    apply(tx, seed, tz)
}
