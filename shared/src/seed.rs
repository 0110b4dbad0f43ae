//! Seed data sets: `demo` (a small, consistent tenant touching every resource of every
//! surface, defined in `seed/demo.json`) and `empty`. Seeds load through the same domain
//! create functions that API writes use.

use crate::domain::{accounts, agreements, billing, catalog, revenue};
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
                "seed: '{other}' is not one of demo, empty"
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
    year: revenue::NewYear,
}

/// A data set: every record kind, in dependency order.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct SeedData {
    billing_account_categories: Vec<accounts::NewCategory>,
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
    actions: Vec<billing::NewAction>,
    bill_batches: Vec<billing::NewBillBatch>,
    bill_batch_runs: Vec<billing::NewBillBatchRun>,
    invoices: Vec<billing::NewInvoice>,
    payments: Vec<billing::NewPayment>,
    adjustments: Vec<billing::NewAdjustment>,
    charts_of_accounts: Vec<revenue::NewNamed>,
    rule_sets: Vec<revenue::NewNamed>,
    run_modes: Vec<revenue::NewRunMode>,
    ledgers: Vec<revenue::NewLedger>,
    calendar_years: Vec<SeedYear>,
    collectors: Vec<revenue::NewCollector>,
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
    d.actions
        .iter()
        .try_for_each(|x| billing::create_action(tx, x).map(drop))?;
    d.bill_batches
        .iter()
        .try_for_each(|x| billing::create_bill_batch(tx, x, tz).map(drop))?;
    d.bill_batch_runs
        .iter()
        .try_for_each(|x| billing::create_bill_batch_run(tx, x, tz).map(drop))?;
    d.invoices
        .iter()
        .try_for_each(|x| billing::create_invoice(tx, x, tz).map(drop))?;
    d.payments
        .iter()
        .try_for_each(|x| billing::create_payment(tx, x, tz).map(drop))?;
    d.adjustments
        .iter()
        .try_for_each(|x| billing::create_adjustment(tx, x, tz).map(drop))?;
    d.charts_of_accounts
        .iter()
        .try_for_each(|x| revenue::create_chart_of_accounts(tx, x).map(drop))?;
    d.rule_sets
        .iter()
        .try_for_each(|x| revenue::create_rule_set(tx, x).map(drop))?;
    d.run_modes
        .iter()
        .try_for_each(|x| revenue::create_run_mode(tx, x).map(drop))?;
    d.ledgers
        .iter()
        .try_for_each(|x| revenue::create_ledger(tx, x).map(drop))?;
    d.calendar_years.iter().try_for_each(|y| {
        revenue::create_year(tx, y.ledger_id, &y.year, y.generate_periods).map(drop)
    })?;
    d.collectors
        .iter()
        .try_for_each(|x| revenue::create_collector(tx, x).map(drop))?;
    Ok(())
}

/// Replaces every record of the tenant with `seed`, inside the caller's transaction.
pub fn reset(tx: &Transaction<'_>, seed: Seed, tz: Tz) -> Result<()> {
    crate::store::sqlite::clear_all(tx)?;
    apply(tx, seed, tz)
}
