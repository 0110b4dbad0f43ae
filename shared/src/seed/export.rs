//! A tenant's data read back as a fixture document (`GET /sandbox/v1/tenants/{id}/fixtures`):
//! every kind the loader reads, ids included, dates absolute (as stored: RFC 3339 instants,
//! calendar dates), records in id order, so the same data always gives the same document.
//! The `policy` member holds the members of the tenant's billing policy that differ from the
//! default (none: no member). Each record carries its create input's fields plus its kind's state fields
//! ([`super::state`]), which the loader writes back after the records exist; loading an export
//! into an empty tenant and exporting again gives the same document.
//!
//! Invariants: read inside the caller's read transaction (one consistent snapshot); a kind holding more than
//! [`MAX_RECORDS_PER_KIND`] records is not read at all (the answer names it), so an export is
//! bounded like the documents the loader takes. What no document holds (usage events,
//! notes, runs, journals, period history) is listed in docs/fixtures.md.

use super::document::MAX_RECORDS_PER_KIND;
use super::state;
use crate::{Error, Result};
use rusqlite::types::ValueRef;
use rusqlite::Connection;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Members whose stored 0/1 is a JSON boolean in a document.
const BOOLS: &[&str] = &[
    "automatic_recurring_payment",
    "tax_exempt",
    "prorate_on_cancel",
    "preserve_service_price",
    "enabled",
    "supports_approval",
    "auto_approve",
    "use_payment_term",
    "internal_render",
    "invoiced",
    "manual_invoice_application",
    "create_zero_amount_entries",
    "open",
    "next_service_pay_on_purchase",
    "renewed",
    "next_preserve_service_price",
    "omit_minimum_amount",
];

/// Members whose stored decimal text is a JSON number in a document.
pub const AMOUNTS: &[&str] = &[
    "amount",
    "balance",
    "pending_charges_total",
    "min_amount",
    "max_amount",
    "termination_flat_charge",
    "termination_percentage_charge",
    "max_termination_charge",
    "minimum_amount",
    "value",
    "accumulated_charges_amount",
    "amount_to_pay",
    "billed_pending_charges",
    "unapplied_amount",
    "received_amount",
    "refunded_amount",
    "canceled_amount",
];

/// Whether member `name` is a boolean in a document.
pub fn is_bool(name: &str) -> bool {
    BOOLS.contains(&name)
}

/// An export refused for its size: the kind and how many records it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct TooMany {
    /// The document member (`services`, ...).
    pub kind: &'static str,
    /// Its records in the tenant.
    pub count: i64,
}

/// The tables counted against [`MAX_RECORDS_PER_KIND`], by member.
const COUNTED: &[(&str, &str)] = &[
    ("billing_account_categories", "billing_account_categories"),
    ("bill_cycles", "bill_cycles"),
    ("billing_accounts", "billing_accounts"),
    ("products", "products"),
    ("product_prices", "product_prices"),
    ("charge_categories", "charge_categories"),
    ("reasons", "reasons"),
    ("lookup_tables", "lookup_tables"),
    ("usage_rules", "usage_rules"),
    ("agreements", "agreements"),
    ("services", "agreement_services"),
    ("actions", "actions"),
    ("bill_batches", "bill_batches"),
    ("bill_batch_runs", "bill_batch_runs"),
    ("invoices", "invoices"),
    ("payments", "payments"),
    ("payment_applications", "payment_applications"),
    ("adjustments", "account_adjustments"),
    ("charts_of_accounts", "chart_of_accounts"),
    ("rule_sets", "rule_sets"),
    ("run_modes", "gl_run_modes"),
    ("ledgers", "ledgers"),
    ("calendar_years", "calendar_nodes WHERE type = 'YEAR'"),
    ("collectors", "collectors"),
];

/// The JSON value of stored column `name`: booleans and amounts by name ([`BOOLS`],
/// [`AMOUNTS`]), a usage rule's `rate` as the JSON it is stored as; None for NULL.
fn json_of(name: &str, v: ValueRef<'_>) -> Result<Option<Value>> {
    Ok(Some(match v {
        ValueRef::Null => return Ok(None),
        ValueRef::Integer(i) if is_bool(name) => Value::Bool(i != 0),
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => Value::from(f),
        ValueRef::Text(t) | ValueRef::Blob(t) => {
            let text = String::from_utf8_lossy(t).into_owned();
            if AMOUNTS.contains(&name) || name == "rate" {
                serde_json::from_str(&text).map_err(|e| {
                    Error::Internal(format!("stored {name} {text:?} is not JSON: {e}"))
                })?
            } else {
                Value::String(text)
            }
        }
    }))
}

/// The rows of `sql` as records named by their columns (NULLs left out).
fn rows(
    c: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<Map<String, Value>>> {
    let mut stmt = c.prepare(sql)?;
    let names: Vec<String> = stmt.column_names().iter().map(|s| s.to_string()).collect();
    let mut out = Vec::new();
    let mut q = stmt.query(params)?;
    while let Some(row) = q.next()? {
        let mut rec = Map::new();
        for (i, name) in names.iter().enumerate() {
            if let Some(v) = json_of(name, row.get_ref(i)?)? {
                rec.insert(name.clone(), v);
            }
        }
        out.push(rec);
    }
    Ok(out)
}

/// The rows of `sql` grouped by their column `key` (a parent's id, left out of the rows), in
/// row order: one query for all the children of a kind, however many parents it has.
fn grouped(c: &Connection, sql: &str, key: &str) -> Result<HashMap<i64, Vec<Map<String, Value>>>> {
    let mut out: HashMap<i64, Vec<Map<String, Value>>> = HashMap::new();
    for mut row in rows(c, sql, [])? {
        let parent = row.remove(key).and_then(|v| v.as_i64()).unwrap_or_default();
        out.entry(parent).or_default().push(row);
    }
    Ok(out)
}

/// Sets member `name` of each record to its group of `sql`'s rows by their first column
/// (see [`grouped`]): the rows as objects, or, when `values`, each row's one value (a list of
/// ids).
fn attach(
    c: &Connection,
    records: &mut [Map<String, Value>],
    name: &str,
    sql: &str,
    values: bool,
) -> Result<()> {
    let key = sql
        .trim_start()
        .strip_prefix("SELECT ")
        .and_then(|rest| rest.split(',').next())
        .map(str::trim)
        .unwrap_or_default();
    let mut groups = grouped(c, sql, key)?;
    for r in records {
        let group = groups.remove(&id_of(r)).unwrap_or_default();
        let items = group
            .into_iter()
            .filter_map(|row| match values {
                true => row.into_iter().next().map(|(_, v)| v),
                false => Some(Value::Object(row)),
            })
            .collect();
        r.insert(name.to_string(), Value::Array(items));
    }
    Ok(())
}

/// `SELECT <input columns>, <kind's state columns> FROM <from> ORDER BY <first>.id`, where
/// `aliases` names each table of `from` (`(table, alias)`; none: one table, no alias).
fn select(member: &str, input: &str, from: &str, aliases: &[(&str, &str)]) -> String {
    let prefix = |table: &str| {
        aliases
            .iter()
            .find(|(t, _)| *t == table)
            .map(|(_, a)| format!("{a}."))
            .unwrap_or_default()
    };
    let mut cols = input.to_string();
    for (name, _, table) in state::fields(member) {
        cols.push_str(&format!(", {}{name}", prefix(table)));
    }
    let first = aliases.first().map(|(t, _)| prefix(t)).unwrap_or_default();
    format!("SELECT {cols} FROM {from} ORDER BY {first}id")
}

/// The id of an exported record.
fn id_of(rec: &Map<String, Value>) -> i64 {
    rec.get("id").and_then(Value::as_i64).unwrap_or_default()
}

/// The tenant's data as a fixture document, or the first kind over the bound.
pub fn export(c: &Connection) -> Result<std::result::Result<Value, TooMany>> {
    export_of(c, None)
}

/// [`export`] of the members in `only` (every member: None), as updates in place read them.
pub fn export_of(
    c: &Connection,
    only: Option<&[&str]>,
) -> Result<std::result::Result<Value, TooMany>> {
    let want = |member: &str| only.is_none_or(|o| o.contains(&member));
    // The store's read runs `c` in one read transaction: one snapshot for every kind.
    for (kind, table) in COUNTED.iter().filter(|(k, _)| want(k)) {
        let count: i64 = c.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))?;
        if count > MAX_RECORDS_PER_KIND as i64 {
            return Ok(Err(TooMany { kind, count }));
        }
    }
    let mut doc = Map::new();
    if want("policy") {
        // Only what differs from the default: a tenant that never chose exports no policy.
        let change =
            crate::domain::policy::PolicyChange::from_policy(&crate::domain::policy::get(c)?);
        if !change.is_empty() {
            let value = serde_json::to_value(change)
                .map_err(|e| Error::Internal(format!("policy: {e}")))?;
            doc.insert("policy".into(), value);
        }
    }
    for (member, cols, table) in SIMPLE {
        if want(member) {
            put(
                &mut doc,
                member,
                rows(c, &select(member, cols, table, &[]), [])?,
            );
        }
    }
    if want("lookup_tables") {
        let mut tables = rows(c, "SELECT id, name FROM lookup_tables ORDER BY id", [])?;
        attach(
            c,
            &mut tables,
            "rows",
            "SELECT lookup_table_id, key, value, valid_from, valid_to FROM lookup_table_rows
             ORDER BY id",
            false,
        )?;
        put(&mut doc, "lookup_tables", tables);
    }
    if want("agreements") {
        let mut agreements = rows(c, &select("agreements", AGREEMENT, "agreements", &[]), [])?;
        attach(
            c,
            &mut agreements,
            "product_ids",
            "SELECT agreement_id, product_id FROM agreement_products ORDER BY rowid",
            true,
        )?;
        put(&mut doc, "agreements", agreements);
    }
    if want("services") {
        put(&mut doc, "services", services(c)?);
    }
    if want("actions") {
        let mut actions = rows(c, &select("actions", ACTION, "actions", &[]), [])?;
        attach(
            c,
            &mut actions,
            "operations",
            "SELECT action_id, operation_type, name, enabled FROM action_operations ORDER BY id",
            false,
        )?;
        put(&mut doc, "actions", actions);
    }
    if want("bill_batches") {
        let mut batches = rows(c, &select("bill_batches", BATCH, "bill_batches", &[]), [])?;
        attach(
            c,
            &mut batches,
            "billing_account_ids",
            "SELECT bill_batch_id, billing_account_id FROM bill_batch_accounts ORDER BY rowid",
            true,
        )?;
        put(&mut doc, "bill_batches", batches);
    }
    for (member, cols, table) in LEDGER_SIMPLE {
        if want(member) {
            let mut records = rows(c, &select(member, cols, table, &[]), [])?;
            if *member == "invoices" {
                invoice_lines(c, &mut records)?;
            }
            put(&mut doc, member, records);
        }
    }
    if want("adjustments") {
        let sql = select("adjustments", ADJUSTMENT, "account_adjustments", &[]);
        let mut adjustments = rows(c, &sql, [])?;
        attach(
            c,
            &mut adjustments,
            "items",
            "SELECT adjustment_id, adjustment_item_type, amount, description, reason,
                    secondary_reason, charge_category_id
             FROM account_adjustment_items ORDER BY id",
            false,
        )?;
        attach(
            c,
            &mut adjustments,
            "applications",
            "SELECT adjustment_id, id, adjustment_application_type, invoice_id, amount, applied_on
             FROM adjustment_applications ORDER BY id",
            false,
        )?;
        put(&mut doc, "adjustments", adjustments);
    }
    if want("ledgers") {
        let mut ledgers = rows(c, &select("ledgers", LEDGER, "ledgers", &[]), [])?;
        attach(
            c,
            &mut ledgers,
            "billing_account_category_ids",
            "SELECT ledger_id, billing_account_category_id FROM ledger_categories ORDER BY rowid",
            true,
        )?;
        put(&mut doc, "ledgers", ledgers);
    }
    if want("calendar_years") {
        let mut years = rows(
            c,
            "SELECT id, ledger_id, name, description, start_date, end_date FROM calendar_nodes
             WHERE type = 'YEAR' ORDER BY id",
            [],
        )?;
        attach(
            c,
            &mut years,
            "accounting-periods",
            "SELECT parent_id, name, description, quarter, start_date, end_date, open
             FROM calendar_nodes WHERE type = 'PERIOD' ORDER BY id",
            false,
        )?;
        put(&mut doc, "calendar_years", years);
    }
    if want("collectors") {
        let sql = "SELECT id, name, friendly_name, description, \"group\", category FROM collectors
                   ORDER BY id";
        put(&mut doc, "collectors", rows(c, sql, [])?);
    }
    Ok(Ok(Value::Object(doc)))
}

/// Sets each invoice's `lines` (in line order). An invoice without lines (written by an older
/// schema) and one whose only line is the AMOUNT line an invoice created with just an amount
/// gets are left without the member: either loads back as that one line, and the export
/// holds as many records as the document that made the tenant (the document bound).
fn invoice_lines(c: &Connection, invoices: &mut [Map<String, Value>]) -> Result<()> {
    attach(
        c,
        invoices,
        "lines",
        "SELECT invoice_id, line_type, amount, description, service_id, product_id,
                product_price_id, charge_category_id, period_start_date, period_end_date
         FROM invoice_lines ORDER BY invoice_id, line_num",
        false,
    )?;
    for i in invoices {
        let implied = match i.get("lines").and_then(Value::as_array) {
            Some(lines) => match lines.as_slice() {
                [] => true,
                [only] => is_implied_line(only, i.get("amount")),
                _ => false,
            },
            None => false,
        };
        if implied {
            i.remove("lines");
        }
    }
    Ok(())
}

/// Whether `line` is exactly the one line an invoice of `amount` created without lines gets
/// (`domain::invoices::create_invoice`): AMOUNT, the whole amount, its default description.
fn is_implied_line(line: &Value, amount: Option<&Value>) -> bool {
    let Some(line) = line.as_object() else {
        return false;
    };
    line.iter().all(|(k, v)| match k.as_str() {
        "line_type" => v == crate::domain::invoices::LINE_AMOUNT,
        "amount" => Some(v) == amount,
        "description" => v == crate::domain::invoices::IMPLIED_LINE_DESCRIPTION,
        _ => v.is_null(),
    })
}

/// Sets `member` of the document to `records` (a kind without records is left out).
fn put(doc: &mut Map<String, Value>, member: &str, records: Vec<Map<String, Value>>) {
    if !records.is_empty() {
        let items = records.into_iter().map(Value::Object).collect();
        doc.insert(member.to_string(), Value::Array(items));
    }
}

/// Kinds read from one table with no nested lists, written before services: (member,
/// input columns, table).
const SIMPLE: &[(&str, &str, &str)] = &[
    (
        "billing_account_categories",
        "id, name, type, description, status, conversion_currency",
        "billing_account_categories",
    ),
    ("bill_cycles", "id, name, day_of_month", "bill_cycles"),
    (
        "billing_accounts",
        "id, account_num, external_account_num, name, billing_account_category_id, \
         bill_cycle_id, bill_type, automatic_recurring_payment, status, currency_code, \
         tax_exempt, start_date, payment_term_days",
        "billing_accounts",
    ),
    (
        "products",
        "id, name, sku, external_product_number",
        "products",
    ),
    (
        "product_prices",
        "id, product_id, product_price_type, price_type, amount",
        "product_prices",
    ),
    (
        "charge_categories",
        "id, name, charge_category_type, description, priority, status",
        "charge_categories",
    ),
    ("reasons", "id, name", "reasons"),
    (
        "usage_rules",
        "id, product_id, position, name, charge_category_id, uom, min_amount, max_amount, \
         valid_from, valid_to, attribute_match, rate_kind, rate",
        "usage_rules",
    ),
];

/// Kinds read from one table with no nested lists, after bill batches.
const LEDGER_SIMPLE: &[(&str, &str, &str)] = &[
    (
        "bill_batch_runs",
        "id, bill_batch_id, bill_run_type, sequence, step, step_status, status, open_date, \
         close_date, scheduled_run_date, invoice_date, invoice_due_date",
        "bill_batch_runs",
    ),
    (
        "invoices",
        "id, invoice_num, billing_account_id, bill_batch_run_id, invoice_type, amount, \
         description, occurred_on, due_date, status",
        "invoices",
    ),
    (
        "payments",
        "id, billing_account_id, amount, description, reference, occurred_on, payment_method",
        "payments",
    ),
    (
        "payment_applications",
        "id, payment_id, invoice_id, amount, applied_on",
        "payment_applications",
    ),
    ("charts_of_accounts", "id, name", "chart_of_accounts"),
    ("rule_sets", "id, name", "rule_sets"),
    ("run_modes", "id, name, run_type", "gl_run_modes"),
];

const AGREEMENT: &str = "id, name, agreement_period, agreement_period_type, status, \
    termination_flat_charge, termination_percentage_charge, max_termination_charge, \
    prorate_on_cancel, adjustment_category_id, end_action, termination_fee_currency_code, \
    max_termination_fee_currency_code, valid_from, valid_to, next_agreement_id, minimum_amount, \
    minimum_amount_currency_type, true_up_adjustment_reason_id, preserve_service_price";
const ACTION: &str = "id, name, enabled, friendly_name, supports_approval, action_type, \
    product_id, agreement_id, bill_cycle_id";
const BATCH: &str = "id, bill_batch_type, name, description, end_date, auto_approve, \
    use_payment_term, internal_render, currency_code, status, billing_account_category_id, \
    invoice_date, invoice_due_date";
const ADJUSTMENT: &str = "id, billing_account_id, occurred_on, amount, description, invoiced, \
    status, adjustment_type, reason_id, secondary_reason_id, posted_by, manual_invoice_application";
const LEDGER: &str = "id, name, description, status, convert_currency, conversion_currency, \
    chart_of_account_id, rule_set_id, run_mode_actuals_id, conversion_rate_set_id, \
    currency_exchange_version, expected_customer_lifetime, create_zero_amount_entries, \
    timezone_name";

/// Agreement services with their service's account and product, SRIDs (top-level ones with
/// their children) and true-up charge types.
fn services(c: &Connection) -> Result<Vec<Map<String, Value>>> {
    let mut services = rows(
        c,
        &select(
            "services",
            "a.id, s.billing_account_id, s.product_id, a.agreement_id, a.status, a.start_date, \
             a.end_date, a.end_action, a.minimum_amount, a.minimum_amount_currency_code, \
             s.id AS service_id",
            "agreement_services a JOIN services s ON s.id = a.service_id",
            &[("agreement_services", "a"), ("services", "s")],
        ),
        [],
    )?;
    // Every SRID in one read: top-level ones by service, children by parent.
    let mut roots: HashMap<i64, Vec<Map<String, Value>>> = HashMap::new();
    let mut children: HashMap<i64, Vec<Value>> = HashMap::new();
    let all = rows(
        c,
        "SELECT id, service_id, parent_id, identifier, status FROM service_resources ORDER BY id",
        [],
    )?;
    for mut r in all {
        let service = r
            .remove("service_id")
            .and_then(|v| v.as_i64())
            .unwrap_or_default();
        match r.remove("parent_id").and_then(|v| v.as_i64()) {
            Some(parent) => children
                .entry(parent)
                .or_default()
                .push(r.remove("identifier").unwrap_or_default()),
            None => roots.entry(service).or_default().push(r),
        }
    }
    let mut types = grouped(
        c,
        "SELECT agreement_service_id, true_up_charge_type FROM true_up_charge_type_relations
         ORDER BY id",
        "agreement_service_id",
    )?;
    for s in &mut services {
        let service_id = s
            .remove("service_id")
            .and_then(|v| v.as_i64())
            .unwrap_or_default();
        let mut resources = roots.remove(&service_id).unwrap_or_default();
        for r in &mut resources {
            let id = r.remove("id").and_then(|v| v.as_i64()).unwrap_or_default();
            if let Some(kids) = children.remove(&id) {
                r.insert("children".into(), Value::Array(kids));
            }
        }
        s.insert(
            "resources".into(),
            resources.into_iter().map(Value::Object).collect(),
        );
        let list = types.remove(&id_of(s)).unwrap_or_default();
        let list = list
            .into_iter()
            .filter_map(|row| row.into_iter().next().map(|(_, v)| v));
        s.insert("true_up_charge_types".into(), list.collect());
    }
    Ok(services)
}
