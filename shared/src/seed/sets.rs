//! The closed sets of a fixture document: every field whose value must be one of the
//! platform's enumerated members (statuses, types, units, currencies, cycle days, ...), with
//! the set it is checked against. The sets are the domain's own constants (the ones the
//! surfaces check and the OpenAPI documents list), so a document, a surface and the docs
//! cannot disagree: [`SETS`] only says where in a document each set applies.
//!
//! [`check`] runs before anything is written (from `document::prepare`), so a document with
//! a value outside its set creates nothing: a 400 naming the JSON path and the allowed values
//! (`product_prices[1].price_type: 'PER_UNIT' is not one of FLAT`). docs/fixtures.md lists
//! every set ([`markdown`] writes that table; a test keeps the page in step).
//!
//! Invariants: a field absent or null is not checked (it takes its default, which is a member);
//! a value of another JSON type is left to the loader's types, which refuse it with its path.

use crate::domain::billing::dues;
use crate::domain::{
    accounts, adjustments, agreements, bill_batches, catalog, glrun, invoices, ledgers, payments,
    policy, CURRENCY_CODES,
};
use crate::{Error, Result};
use serde_json::Value;

/// What a field's value must be.
#[derive(Debug, Clone, Copy)]
pub enum Allowed {
    /// One of these strings, exactly (case matters, as on the surfaces).
    OneOf(&'static [&'static str]),
    /// A whole number in this range.
    Range(i64, i64),
}

impl Allowed {
    /// The allowed values as a refusal and the docs list them.
    pub fn describe(&self) -> String {
        match self {
            Allowed::OneOf(values) => values.join(", "),
            Allowed::Range(low, high) => format!("{low} to {high}"),
        }
    }
}

/// Where a set applies: the member (a top-level kind), the field's path inside one record
/// (`a.b`; `a[]` steps into every item of the list `a`), the set, and where it comes from.
pub struct ClosedSet {
    /// The document's member (`generated_services` is one object, the others are lists).
    pub member: &'static str,
    /// The field inside one record.
    pub field: &'static str,
    /// The values allowed.
    pub allowed: Allowed,
    /// The domain constant that defines the set (named in the docs).
    pub source: &'static str,
}

const fn set(
    member: &'static str,
    field: &'static str,
    allowed: &'static [&'static str],
    source: &'static str,
) -> ClosedSet {
    ClosedSet {
        member,
        field,
        allowed: Allowed::OneOf(allowed),
        source,
    }
}

const CURRENCY: &str = "money::CURRENCY_CODES";

const fn range(
    member: &'static str,
    field: &'static str,
    range: &std::ops::RangeInclusive<i64>,
    source: &'static str,
) -> ClosedSet {
    ClosedSet {
        member,
        field,
        allowed: Allowed::Range(*range.start(), *range.end()),
        source,
    }
}

/// Every closed set of a fixture document, in the order of the document's members.
pub const SETS: &[ClosedSet] = &[
    set(
        "policy",
        "recurring_timing",
        policy::RECURRING_TIMINGS,
        "policy::RECURRING_TIMINGS",
    ),
    set(
        "policy",
        "proration",
        policy::PRORATIONS,
        "policy::PRORATIONS",
    ),
    range(
        "policy",
        "payment_term_days",
        &policy::PAYMENT_TERM_DAYS,
        "policy::PAYMENT_TERM_DAYS",
    ),
    set(
        "policy",
        "usage_tiers",
        policy::USAGE_TIERS,
        "policy::USAGE_TIERS",
    ),
    range(
        "policy",
        "default_agreement_months",
        &policy::AGREEMENT_MONTHS,
        "policy::AGREEMENT_MONTHS",
    ),
    set(
        "policy",
        "runs",
        policy::RUN_PROGRESS,
        "policy::RUN_PROGRESS",
    ),
    range(
        "policy",
        "autopay_retry_days[]",
        &policy::RETRY_DAYS,
        "policy::RETRY_DAYS",
    ),
    set(
        "billing_account_categories",
        "status",
        accounts::CATEGORY_STATUSES,
        "accounts::CATEGORY_STATUSES",
    ),
    set(
        "billing_account_categories",
        "conversion_currency",
        CURRENCY_CODES,
        CURRENCY,
    ),
    range(
        "bill_cycles",
        "day_of_month",
        &accounts::CYCLE_DAYS,
        "accounts::CYCLE_DAYS",
    ),
    set(
        "billing_accounts",
        "bill_type",
        accounts::BILL_TYPES,
        "accounts::BILL_TYPES",
    ),
    set(
        "billing_accounts",
        "status",
        accounts::ACCOUNT_STATUSES,
        "accounts::ACCOUNT_STATUSES",
    ),
    set(
        "billing_accounts",
        "currency_code",
        CURRENCY_CODES,
        CURRENCY,
    ),
    range(
        "billing_accounts",
        "payment_term_days",
        &policy::PAYMENT_TERM_DAYS,
        "policy::PAYMENT_TERM_DAYS",
    ),
    set(
        "billing_accounts",
        "autopay_outcome",
        dues::AUTOPAY_OUTCOMES,
        "billing::dues::AUTOPAY_OUTCOMES",
    ),
    range(
        "billing_accounts",
        "autopay_declines",
        &dues::AUTOPAY_DECLINES,
        "billing::dues::AUTOPAY_DECLINES",
    ),
    set(
        "product_prices",
        "product_price_type",
        catalog::PRODUCT_PRICE_TYPES,
        "catalog::PRODUCT_PRICE_TYPES",
    ),
    set(
        "product_prices",
        "price_type",
        catalog::PRICE_TYPES,
        "catalog::PRICE_TYPES",
    ),
    set("product_prices", "currency_code", CURRENCY_CODES, CURRENCY),
    set(
        "charge_categories",
        "charge_category_type",
        catalog::CHARGE_CATEGORY_TYPES,
        "catalog::CHARGE_CATEGORY_TYPES",
    ),
    set(
        "charge_categories",
        "status",
        catalog::CATEGORY_STATUSES,
        "catalog::CATEGORY_STATUSES",
    ),
    set(
        "usage_rules",
        "uom",
        catalog::USAGE_UOMS,
        "rating::uom::USAGE_UOMS",
    ),
    set(
        "usage_rules",
        "rate_kind",
        catalog::RATE_KINDS,
        "catalog::RATE_KINDS",
    ),
    set(
        "agreements",
        "status",
        agreements::AGREEMENT_STATUSES,
        "agreements::AGREEMENT_STATUSES",
    ),
    set(
        "agreements",
        "agreement_period_type",
        agreements::AGREEMENT_PERIOD_TYPES,
        "agreements::AGREEMENT_PERIOD_TYPES",
    ),
    set(
        "agreements",
        "termination_fee_currency_code",
        CURRENCY_CODES,
        CURRENCY,
    ),
    set(
        "agreements",
        "max_termination_fee_currency_code",
        CURRENCY_CODES,
        CURRENCY,
    ),
    set(
        "agreements",
        "minimum_amount_currency_type",
        CURRENCY_CODES,
        CURRENCY,
    ),
    set(
        "services",
        "status",
        agreements::AGREEMENT_SERVICE_STATUSES,
        "agreements::AGREEMENT_SERVICE_STATUSES",
    ),
    set(
        "services",
        "minimum_amount_currency_code",
        CURRENCY_CODES,
        CURRENCY,
    ),
    set(
        "services",
        "resources[].status",
        agreements::RESOURCE_STATUSES,
        "agreements::RESOURCE_STATUSES",
    ),
    set(
        "generated_services",
        "statuses[]",
        agreements::AGREEMENT_SERVICE_STATUSES,
        "agreements::AGREEMENT_SERVICE_STATUSES",
    ),
    set(
        "generated_services",
        "currencies[]",
        CURRENCY_CODES,
        CURRENCY,
    ),
    set(
        "actions",
        "action_type",
        crate::domain::actions::ACTION_TYPES,
        "actions::ACTION_TYPES",
    ),
    set(
        "bill_batches",
        "bill_batch_type",
        bill_batches::BILL_BATCH_TYPES,
        "bill_batches::BILL_BATCH_TYPES",
    ),
    set(
        "bill_batches",
        "status",
        bill_batches::BILL_BATCH_STATUSES,
        "bill_batches::BILL_BATCH_STATUSES",
    ),
    set("bill_batches", "currency_code", CURRENCY_CODES, CURRENCY),
    set(
        "invoices",
        "status",
        invoices::INVOICE_STATUSES,
        "invoices::INVOICE_STATUSES",
    ),
    set(
        "invoices",
        "lines[].line_type",
        invoices::INVOICE_LINE_TYPES,
        "invoices::INVOICE_LINE_TYPES",
    ),
    set(
        "payments",
        "payment_method",
        payments::PAYMENT_METHODS,
        "payments::PAYMENT_METHODS",
    ),
    set(
        "payments",
        "status",
        payments::PAYMENT_STATUSES,
        "payments::PAYMENT_STATUSES",
    ),
    set(
        "adjustments",
        "adjustment_type",
        adjustments::ADJUSTMENT_TYPES,
        "adjustments::ADJUSTMENT_TYPES",
    ),
    set(
        "adjustments",
        "applications[].adjustment_application_type",
        adjustments::ADJUSTMENT_APPLICATION_TYPES,
        "adjustments::ADJUSTMENT_APPLICATION_TYPES",
    ),
    set(
        "run_modes",
        "run_type",
        glrun::RUN_MODE_TYPES,
        "glrun::RUN_MODE_TYPES",
    ),
    set(
        "ledgers",
        "status",
        ledgers::LEDGER_STATUSES,
        "ledgers::LEDGER_STATUSES",
    ),
    set(
        "ledgers",
        "convert_currency",
        ledgers::CONVERT_CURRENCY,
        "ledgers::CONVERT_CURRENCY",
    ),
    set("ledgers", "conversion_currency", CURRENCY_CODES, CURRENCY),
];

/// The set of field `field` of member `member`'s records, if it has one (the JSON Schema
/// lists it as the field's `enum`).
pub fn of(member: &str, field: &str) -> Option<&'static ClosedSet> {
    SETS.iter().find(|s| s.member == member && s.field == field)
}

/// Checks every closed-set field of `doc`; the first value outside its set is a 400 naming
/// its JSON path and the allowed values. Writes nothing.
pub fn check(doc: &Value) -> Result<()> {
    for s in SETS {
        let Some(value) = doc.get(s.member) else {
            continue;
        };
        match value {
            Value::Array(records) => {
                for (i, record) in records.iter().enumerate() {
                    walk(record, s.field, &format!("{}[{i}]", s.member), s)?;
                }
            }
            record => walk(record, s.field, s.member, s)?,
        }
    }
    Ok(())
}

/// Follows `field` (module doc of [`ClosedSet::field`]) from `v` at `path`, checking each
/// value found.
fn walk(v: &Value, field: &str, path: &str, s: &ClosedSet) -> Result<()> {
    let (step, rest) = match field.split_once('.') {
        Some((step, rest)) => (step, Some(rest)),
        None => (field, None),
    };
    let (name, each) = match step.strip_suffix("[]") {
        Some(name) => (name, true),
        None => (step, false),
    };
    let Some(found) = v.get(name) else {
        return Ok(());
    };
    let path = format!("{path}.{name}");
    let found: Vec<(String, &Value)> = match (each, found) {
        (true, Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| (format!("{path}[{i}]"), item))
            .collect(),
        // Not a list: the loader's types refuse it with its path.
        (true, _) => return Ok(()),
        (false, one) => vec![(path, one)],
    };
    for (path, value) in found {
        match rest {
            Some(rest) => walk(value, rest, &path, s)?,
            None => check_value(value, &path, s.allowed)?,
        }
    }
    Ok(())
}

fn check_value(value: &Value, path: &str, allowed: Allowed) -> Result<()> {
    match (allowed, value) {
        (Allowed::OneOf(values), Value::String(text)) => {
            crate::domain::check_enum(path, text, values)
        }
        (Allowed::Range(low, high), Value::Number(n)) => match n.as_i64() {
            Some(found) if (low..=high).contains(&found) => Ok(()),
            _ => Err(Error::bad_request(format!(
                "{path}: {n} is not one of {}",
                allowed.describe()
            ))),
        },
        _ => Ok(()),
    }
}

/// The table of docs/fixtures.md's "Closed sets" section: one row per set; the currency
/// codes, which many fields share, are listed once after it.
pub fn markdown() -> String {
    let mut out = String::from("| Field | Allowed values | Defined by |\n|---|---|---|\n");
    for s in SETS {
        let allowed = if s.source == CURRENCY {
            "a currency code (below)".to_string()
        } else {
            s.allowed.describe()
        };
        out.push_str(&format!(
            "| `{}.{}` | {allowed} | `{}` |\n",
            s.member, s.field, s.source
        ));
    }
    out.push_str(&format!(
        "\nThe currency codes (`{CURRENCY}`): {}.\n",
        CURRENCY_CODES.join(", ")
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_outside_its_set_is_refused_with_its_path_and_the_allowed_values() {
        let doc = serde_json::json!({
            "product_prices": [
                {"product_price_type": "RECURRING", "price_type": "FLAT"},
                {"product_price_type": "RECURRING", "price_type": "PER_UNIT"}
            ]
        });
        let e = check(&doc).unwrap_err().to_string();
        assert_eq!(
            e,
            "product_prices[1].price_type: 'PER_UNIT' is not one of FLAT"
        );
        let nested = serde_json::json!({"services": [{"resources": [{}, {"status": "ON"}]}]});
        let e = check(&nested).unwrap_err().to_string();
        assert!(
            e.starts_with("services[0].resources[1].status: 'ON' is not one of ACTIVE, INACTIVE"),
            "{e}"
        );
        let generated = serde_json::json!({"generated_services": {"currencies": ["USD", "usd"]}});
        let e = check(&generated).unwrap_err().to_string();
        assert!(
            e.starts_with("generated_services.currencies[1]: 'usd'"),
            "{e}"
        );
        let day = serde_json::json!({"bill_cycles": [{"day_of_month": 29}]});
        assert_eq!(
            check(&day).unwrap_err().to_string(),
            "bill_cycles[0].day_of_month: 29 is not one of 1 to 28"
        );
        // Absent and null fields take their defaults; the demo holds members only.
        check(&serde_json::json!({"billing_accounts": [{"status": null}, {}]})).unwrap();
        let demo: Value = serde_json::from_str(super::super::DEMO_JSON).unwrap();
        check(&demo).unwrap();
    }

    #[test]
    fn every_set_names_a_field_its_member_takes() {
        for s in SETS {
            let top = s.field.split(['.', '[']).next().unwrap_or_default();
            let fields = super::super::input_fields(s.member)
                .or_else(|| {
                    (s.member == "generated_services").then(|| {
                        super::super::schema::shape::<super::super::GeneratedServices>()
                            .fields
                            .unwrap_or_default()
                            .to_vec()
                    })
                })
                .or_else(|| {
                    (s.member == "policy").then(|| {
                        super::super::schema::shape::<crate::domain::policy::PolicyChange>()
                            .fields
                            .unwrap_or_default()
                            .to_vec()
                    })
                })
                .unwrap_or_default();
            let state = super::super::state::fields(s.member);
            assert!(
                fields.contains(&top) || state.iter().any(|(f, _, _)| *f == top),
                "{}.{} is not a field of {}",
                s.member,
                s.field,
                s.member
            );
        }
    }

    #[test]
    fn docs_fixtures_lists_every_set() {
        let page = include_str!("../../../docs/fixtures.md");
        let table = markdown();
        assert!(
            page.contains(&table),
            "docs/fixtures.md's closed sets table differs from seed::sets::markdown(); it should read:\n{table}"
        );
    }
}
