//! Seed data sets and fixture documents: `demo` (a small, consistent tenant touching every
//! resource of every surface, defined in `fixtures/demo.json`), `empty`, or a client's own fixture
//! document in the same format (docs/fixtures.md). Every document loads through the same
//! domain create functions that API writes use, after its relative dates are resolved against
//! the tenant's clock as it reads inside the loading transaction (`document`), so a tenant
//! whose clock was set first gets data coherent with that clock. Applying a document: state
//! fields are taken out of its records (`state`), records whose id exists are taken out as
//! updates (`update`), the rest are created in the member table's order, then the updates,
//! then the state fields are written. `export` reads a tenant back as a document.
//!
//! Invariants: unknown members and unknown record fields are refused; a refusal names the
//! JSON path of the first problem (its index as the client wrote it) and the caller's
//! transaction is then dropped, so a refused document applies nothing.

pub mod document;
pub mod document_schema;
pub mod export;
pub mod sets;
pub mod state;
pub mod update;

use crate::domain::collect::catalogue;
use crate::domain::{
    accounts, actions, adjustments, agreements, bill_batches, calendars, catalog, glrun, invoices,
    ledgers, payments, policy,
};
use crate::{Error, Result};
use chrono_tz::Tz;
use rusqlite::Transaction;
use serde::Deserialize;

/// The demo data set, as shipped. Its dates are relative to the tenant's clock.
pub const DEMO_JSON: &str = include_str!("../fixtures/demo.json");

/// The clock reading at which the demo's relative dates give the absolute dates it was first
/// written with (Chicago tenants): tests that assert the demo's dates create their tenant
/// with the clock frozen here.
pub const DEMO_REFERENCE: &str = "2026-11-06T12:00:00Z";

/// Which data a new or reset tenant starts with.
#[derive(Debug, Clone, PartialEq)]
pub enum Seed {
    /// The demo data set.
    Demo,
    /// No records at all.
    Empty,
    /// A client's fixture document (docs/fixtures.md).
    Document(Box<serde_json::Value>),
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

/// The fields of a [`SeedYear`] (its flattened year lists none to serde).
const YEAR_FIELDS: &[&str] = &[
    "ledger_id",
    "generate_periods",
    "id",
    "name",
    "description",
    "start_date",
    "end_date",
    "accounting-periods",
];

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
    /// Every fifth record ends this many days after its start (default 365).
    #[serde(default = "default_term_days")]
    end_after_days: i64,
}

fn default_term_days() -> i64 {
    365
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
        // A client's document may hold this (docs/fixtures.md): every number is checked, and
        // a refusal names the member (`document::at` prefixes "generated_services.").
        let first = chrono::NaiveDate::parse_from_str(&self.first_start, "%Y-%m-%d")
            .map_err(|e| Error::bad_request(format!("first_start: {e}")))?;
        let days_after = |date: chrono::NaiveDate, days: i64, field: &str| {
            chrono::Duration::try_days(days)
                .and_then(|d| date.checked_add_signed(d))
                .ok_or_else(|| {
                    Error::bad_request(format!(
                        "{field}: {days} days after {date} is outside the calendar"
                    ))
                })
        };
        let mut out = Vec::new();
        for i in 0..self.count {
            let id = self.first_id.checked_add(i).ok_or_else(|| {
                Error::bad_request(format!(
                    "first_id: {} + {i} is past the largest id",
                    self.first_id
                ))
            })?;
            let (product_id, agreement_id) = nth(&self.products, i)
                .ok_or_else(|| Error::bad_request("products: empty; each record takes one"))?;
            let start = days_after(first, i, "first_start")?;
            let ends = i % 5 == 4;
            let end = ends
                .then(|| days_after(start, self.end_after_days, "end_after_days"))
                .transpose()?;
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
                end_date: end.map(|end| end.format("%Y-%m-%d").to_string()),
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
        crate::domain::agreements::set_history(
            tx,
            id,
            &crate::domain::agreements::ServiceHistory {
                renewed: i % 6 == 1,
                accumulated_charges_amount: rust_decimal::Decimal::new(i * 1309 % 100_000, 2),
                next_service_pay_on_purchase: i % 8 == 3,
                preserve_service_price: i % 7 == 0,
                next_preserve_service_price: i % 7 == 1,
                omit_minimum_amount: i % 4 == 3,
                next_agreement_id: next.map(|(_, agreement)| agreement),
                next_end_action: next.and_then(|_| nth(&self.end_actions, i + 1)),
                next_service_product_id: next.map(|(product, _)| product),
            },
        )
    }
}

/// A payment applied to invoices: either as the applyPayment command does it (`invoice_ids`,
/// amounts computed), or one application as stored (`invoice_id` and `amount`, an export's
/// form; balances are then the payment's and invoices' state fields).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedPaymentApplication {
    #[serde(default)]
    id: Option<i64>,
    payment_id: i64,
    #[serde(default)]
    invoice_ids: Vec<i64>,
    #[serde(default)]
    invoice_id: Option<i64>,
    #[serde(default, deserialize_with = "crate::money::deserialize_opt_number")]
    amount: Option<rust_decimal::Decimal>,
    applied_on: String,
}

impl SeedPaymentApplication {
    fn load(&self, tx: &Transaction<'_>, tz: Tz) -> Result<()> {
        let applied_on = crate::domain::parse_time("applied_on", &self.applied_on, tz)?;
        match (self.invoice_id, self.amount) {
            (None, None) => {
                let target = payments::PaymentTarget::Invoices(self.invoice_ids.clone());
                payments::apply_payment(tx, self.payment_id, &target, &applied_on).map(|_| ())
            }
            (Some(invoice), Some(amount)) if self.invoice_ids.is_empty() => {
payments::restore_application(
                tx,
                self.id,
                self.payment_id,
                invoice,
                amount,
                &applied_on,
            )
            }
            _ => Err(Error::bad_request(
                "invoice_id: an application as stored takes invoice_id and amount, and no invoice_ids",
            )),
        }
    }
}

/// Declares the document's members once: `SeedData` (what the loader reads) and
/// [`schema`] (what the JSON Schema says) come from the same list and types.
macro_rules! members {
    ($($name:ident: $ty:ty,)*) => {
        /// A data set: every record kind, in dependency order.
        #[derive(Debug, Clone, Default, Deserialize)]
        #[serde(deny_unknown_fields, default)]
        struct SeedData {
            $($name: $ty,)*
        }

        /// The create input fields of member `name`'s records (None: not a list of records).
        fn input_fields(name: &str) -> Option<Vec<&'static str>> {
            match name {
                // Its input reads a flattened map, which lists no fields.
                "calendar_years" => Some(YEAR_FIELDS.to_vec()),
                $(stringify!($name) => {
                    let shape = document_schema::shape::<$ty>();
                    shape.array.then_some(shape.fields?.to_vec())
                })*
                _ => None,
            }
        }

        /// The JSON Schema of the fixture document, served at
        /// `/sandbox/v1/fixtures.schema.json` (see [`schema`]).
        pub fn json_schema() -> serde_json::Value {
            document_schema::document_schema(&[$(
                (stringify!($name), document_schema::shape::<$ty>(), input_fields(stringify!($name))),
            )*])
        }
    };
}

members! {
    policy: Option<policy::PolicyChange>,
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

/// What applying a document writes (or, rehearsed in a transaction that is rolled back,
/// would write), per kind: records created, and records whose `id` exists (updated in place,
/// or restated as they are). Kinds the document does not hold are left out.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Changes {
    /// Records created, by kind (`generated_services`: the services it expands to).
    pub created: std::collections::BTreeMap<String, u64>,
    /// Records whose id existed, by kind.
    pub updated: std::collections::BTreeMap<String, u64>,
}

/// The records of each kind `doc` holds: a list's length, `generated_services.count`, 1 for
/// the one `policy`.
pub fn records_per_kind(doc: &serde_json::Value) -> std::collections::BTreeMap<String, u64> {
    doc.as_object()
        .into_iter()
        .flatten()
        .map(|(kind, value)| {
            let n = match value {
                serde_json::Value::Array(items) => items.len() as u64,
                serde_json::Value::Object(_) if kind == "policy" => 1,
                other => other["count"].as_u64().unwrap_or(0),
            };
            (kind.clone(), n)
        })
        .collect()
}

impl Changes {
    /// The records `doc` (updates taken out) creates, by kind, and the `updates`.
    fn of(doc: &serde_json::Value, updates: &[update::Update]) -> Changes {
        let mut created = records_per_kind(doc);
        created.retain(|_, n| *n > 0);
        let mut updated = std::collections::BTreeMap::new();
        // A tenant always has a policy (its defaults): a document's changes it.
        if let Some(n) = created.remove("policy") {
            updated.insert("policy".to_string(), n);
        }
        for u in updates {
            *updated.entry(u.member().to_string()).or_default() += 1;
        }
        Changes { created, updated }
    }
}

/// Loads `seed` into the database of the transaction; relative dates resolve against the
/// tenant's clock as `tx` reads it. Answers what it wrote.
pub fn apply(tx: &Transaction<'_>, seed: Seed, tz: Tz) -> Result<Changes> {
    let mut doc = match seed {
        Seed::Empty => return Ok(Changes::default()),
        Seed::Demo => serde_json::from_str(DEMO_JSON)
            .map_err(|e| Error::Internal(format!("demo seed does not parse: {e}")))?,
        Seed::Document(doc) => *doc,
    };
    document::prepare(&mut doc, crate::time::now_for(tx)?, tz)?;
    let pending = state::split(&mut doc, input_fields)?;
    let (updates, idx) = update::take(tx, &mut doc)?;
    let changes = Changes::of(&doc, &updates);
    // The tenant as it stood before this document, read only when something is updated.
    let current = if updates.is_empty() {
        serde_json::Value::Null
    } else {
        export::export_of(tx, Some(&update::members(&updates)))?.map_err(|too_many| {
            Error::bad_request(format!(
                "{}: {} records; updating in place reads the tenant as an export, which holds \
                 at most {} of each kind",
                too_many.kind,
                too_many.count,
                document::MAX_RECORDS_PER_KIND
            ))
        })?
    };
    create(tx, doc, &idx, tz)?;
    update::apply(tx, &updates, &current, |one, idx| {
        create(tx, one.clone(), idx, tz)
    })?;
    state::write(tx, &pending, tz)?;
    Ok(changes)
}

/// Reads `doc` into records and creates them; `idx` gives each record's index in the
/// document as the client wrote it (updates were taken out), for refusals.
fn create(
    tx: &Transaction<'_>,
    doc: serde_json::Value,
    idx: &update::Indices,
    tz: Tz,
) -> Result<()> {
    let data: SeedData = serde_path_to_error::deserialize(doc).map_err(|e| {
        let path = remap(&e.path().to_string(), idx);
        Error::bad_request(format!("{path}: {}", e.into_inner()))
    })?;
    load(tx, &data, tz, idx)
}

/// `member[i]...` with `i` the record's index in the document as written.
fn remap(path: &str, idx: &update::Indices) -> String {
    let Some((member, rest)) = path.split_once('[') else {
        return path.to_string();
    };
    let Some((i, rest)) = rest.split_once(']') else {
        return path.to_string();
    };
    match i
        .parse::<usize>()
        .ok()
        .and_then(|i| idx.get(member)?.get(i))
    {
        Some(original) => format!("{member}[{original}]{rest}"),
        None => path.to_string(),
    }
}

/// Runs `f` on each record of `kind`, naming the record's path (its index as the document
/// wrote it) in a refusal.
fn each<T, R>(
    kind: &str,
    items: &[T],
    idx: &update::Indices,
    mut f: impl FnMut(&T) -> Result<R>,
) -> Result<()> {
    for (i, x) in items.iter().enumerate() {
        let at = idx.get(kind).and_then(|v| v.get(i)).copied().unwrap_or(i);
        f(x).map_err(document::at(format!("{kind}[{at}]")))?;
    }
    Ok(())
}

fn load(tx: &Transaction<'_>, d: &SeedData, tz: Tz, idx: &update::Indices) -> Result<()> {
    // Calendar nodes above this id are the document's own (its ledgers' calendars, its years'
    // periods): numbered as they are created, they give way to a year the document numbers.
    let nodes_before: i64 =
        tx.query_row("SELECT COALESCE(MAX(id), 0) FROM calendar_nodes", [], |r| {
            r.get(0)
        })?;
    // The policy first: the records after it are created under its rules.
    if let Some(change) = &d.policy {
        let now = crate::time::to_storage(crate::time::now_for(tx)?);
        policy::set(tx, change, &now).map_err(document::at("policy".into()))?;
    }
    each(
        "billing_account_categories",
        &d.billing_account_categories,
        idx,
        |x| accounts::create_category(tx, x),
    )?;
    each("bill_cycles", &d.bill_cycles, idx, |x| {
        accounts::create_bill_cycle(tx, x)
    })?;
    each("billing_accounts", &d.billing_accounts, idx, |x| {
        accounts::create_account(tx, x, tz)
    })?;
    each("products", &d.products, idx, |x| {
        catalog::create_product(tx, x)
    })?;
    each("product_prices", &d.product_prices, idx, |x| {
        catalog::create_product_price(tx, x)
    })?;
    each("charge_categories", &d.charge_categories, idx, |x| {
        catalog::create_charge_category(tx, x)
    })?;
    each("reasons", &d.reasons, idx, |x| {
        catalog::create_reason(tx, x)
    })?;
    each("lookup_tables", &d.lookup_tables, idx, |x| {
        catalog::create_lookup_table(tx, x, tz)
    })?;
    each("usage_rules", &d.usage_rules, idx, |x| {
        catalog::create_usage_rule(tx, x, tz)
    })?;
    each("agreements", &d.agreements, idx, |x| {
        agreements::create_agreement(tx, x, tz)
    })?;
    each("services", &d.services, idx, |x| {
        agreements::create_service(tx, x, tz)
    })?;
    if let Some(generated) = &d.generated_services {
        let expanded = generated
            .expand()
            .map_err(document::at("generated_services".into()))?;
        each("generated_services", &expanded, idx, |service| {
            let id = agreements::create_service(tx, service, tz)?;
            generated.age(tx, id)
        })?;
    }
    each("actions", &d.actions, idx, |x| {
        actions::create_action(tx, x)
    })?;
    each("bill_batches", &d.bill_batches, idx, |x| {
        bill_batches::create_bill_batch(tx, x, tz)
    })?;
    each("bill_batch_runs", &d.bill_batch_runs, idx, |x| {
        bill_batches::create_bill_batch_run(tx, x, tz)
    })?;
    each("invoices", &d.invoices, idx, |x| load_invoice(tx, x, tz))?;
    each("payments", &d.payments, idx, |x| {
        payments::create_payment(tx, x, tz)
    })?;
    each("payment_applications", &d.payment_applications, idx, |a| {
        a.load(tx, tz)
    })?;
    each("adjustments", &d.adjustments, idx, |x| {
        adjustments::create_adjustment(tx, x, tz)
    })?;
    each("charts_of_accounts", &d.charts_of_accounts, idx, |x| {
        ledgers::create_chart_of_accounts(tx, x)
    })?;
    each("rule_sets", &d.rule_sets, idx, |x| {
        ledgers::create_rule_set(tx, x)
    })?;
    each("run_modes", &d.run_modes, idx, |x| {
        glrun::create_run_mode(tx, x)
    })?;
    each("ledgers", &d.ledgers, idx, |x| {
        ledgers::create_ledger(tx, x)
    })?;
    each("calendar_years", &d.calendar_years, idx, |y| {
        if let Some(id) = y.year.id {
            free_year_id(tx, id, nodes_before)?;
        }
        calendars::create_year_at(tx, y.year.id, y.ledger_id, &y.year, y.generate_periods)
    })?;
    each("collectors", &d.collectors, idx, |x| {
        catalogue::create_collector(tx, x)
    })?;
    Ok(())
}

/// Makes id `id` free for a year of the document: a calendar or period this document created
/// there (numbered as created, its id is no document's) moves to the next free id; a node the
/// tenant had before is refused (a year's id is never a renumbering of the tenant's data).
fn free_year_id(tx: &Transaction<'_>, id: i64, nodes_before: i64) -> Result<()> {
    match calendars::node_type(tx, id)? {
        None => Ok(()),
        Some(_) if id > nodes_before => calendars::move_node(tx, id).map(|_| ()),
        Some(kind) => Err(Error::bad_request(format!(
            "id: {id} is the id of a {} of the tenant's calendars",
            kind.to_lowercase()
        ))),
    }
}

/// Creates an invoice of a document. Surface A's create refuses a CANCELED invoice (it is
/// canceled by its command), but an export holds canceled invoices: one is created OPEN and
/// canceled by the same domain function as the command (nothing is applied to it yet), so its
/// effects net out; its `canceled_at` and the balances are state fields, written after.
fn load_invoice(tx: &Transaction<'_>, x: &invoices::NewInvoice, tz: Tz) -> Result<i64> {
    if x.status.as_deref() != Some(invoices::InvoiceStatus::Canceled.as_str()) {
        return invoices::create_invoice(tx, x, tz);
    }
    let open = invoices::NewInvoice {
        status: None,
        ..x.clone()
    };
    let id = invoices::create_invoice(tx, &open, tz)?;
    let now = crate::time::to_storage(crate::time::now_for(tx)?);
    invoices::cancel_invoice(tx, id, &now)?;
    Ok(id)
}

/// Replaces every record of the tenant with `seed`, inside the caller's transaction.
pub fn reset(tx: &Transaction<'_>, seed: Seed, tz: Tz) -> Result<()> {
    crate::store::sqlite::clear_all(tx)?;
    apply(tx, seed, tz).map(|_| ())
}
