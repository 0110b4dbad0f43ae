//! The product catalogue: products and prices, charge categories, reasons, and the usage
//! rules (rate plans) with their lookup tables.

use super::status::status_enum;
use super::{check_enum, insert, parse_opt_time, require};
use crate::money::canonical;
use crate::{Error, Result};
use chrono_tz::Tz;
use rusqlite::Transaction;
use rust_decimal::Decimal;
use serde::Deserialize;

/// Charge category types of the platform.
pub const CHARGE_CATEGORY_TYPES: &[&str] = &[
    "Price",
    "Usage",
    "Tax",
    "Additional Fee",
    "Payment",
    "Adjustment",
    "Discount Charge",
    "Manual Invoice Charge",
    "Adhoc",
    "Suspension Charge",
    "Resume Charge",
];
status_enum! {
    /// The status of a charge (adjustment) category.
    pub enum CategoryStatus {
        /// In use.
        Active = "ACTIVE",
        /// Held for a while.
        Suspended = "SUSPENDED",
        /// Given up.
        Canceled = "CANCELED",
    }
}
/// Statuses of a charge (adjustment) category ([`CategoryStatus`]'s names).
pub const CATEGORY_STATUSES: &[&str] = CategoryStatus::NAMES;
/// Kinds of product price, as the billing runs bill them (`billing::invoicing`): RECURRING
/// once per service period, ONE_TIME once for a new service. A price of another kind would
/// never be billed, so none is taken.
pub const PRODUCT_PRICE_TYPES: &[&str] = &["RECURRING", "ONE_TIME"];
/// How a product price's amount is charged: FLAT, the amount as it stands, is the only way the
/// billing runs charge a price (amounts per unit or in tiers are usage rules' business), so
/// another value (say PER_UNIT, which would still be billed flat) is refused.
pub const PRICE_TYPES: &[&str] = &["FLAT"];
/// How a usage rule turns an amount into a charge.
pub const RATE_KINDS: &[&str] = &["FLAT", "TIERED", "TABLE", "PASS_THROUGH", "FORMULA"];
/// Every unit of measure a usage event may carry (the rating rules own the list: their unit
/// conversion knows each one).
pub use crate::rating::uom::USAGE_UOMS;

/// A product to create.
#[derive(Debug, Clone, Deserialize)]
pub struct NewProduct {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// Display name.
    pub name: String,
    /// Stock keeping unit.
    pub sku: Option<String>,
    /// External product number.
    pub external_product_number: Option<String>,
}

/// Creates a product.
pub fn create_product(tx: &Transaction<'_>, p: &NewProduct) -> Result<i64> {
    insert(
        tx,
        "products",
        &[
            ("id", &p.id),
            ("name", &p.name),
            ("sku", &p.sku),
            ("external_product_number", &p.external_product_number),
        ],
    )
}

/// A product price to create.
#[derive(Debug, Clone, Deserialize)]
pub struct NewProductPrice {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// The product priced.
    pub product_id: i64,
    /// One of [`PRODUCT_PRICE_TYPES`].
    pub product_price_type: String,
    /// One of [`PRICE_TYPES`].
    pub price_type: String,
    /// The amount.
    #[serde(deserialize_with = "crate::money::deserialize_number")]
    pub amount: Decimal,
}

/// Creates a product price.
pub fn create_product_price(tx: &Transaction<'_>, p: &NewProductPrice) -> Result<i64> {
    require(tx, "products", "product", p.product_id)?;
    check_enum(
        "product_price_type",
        &p.product_price_type,
        PRODUCT_PRICE_TYPES,
    )?;
    check_enum("price_type", &p.price_type, PRICE_TYPES)?;
    insert(
        tx,
        "product_prices",
        &[
            ("id", &p.id),
            ("product_id", &p.product_id),
            ("product_price_type", &p.product_price_type),
            ("price_type", &p.price_type),
            ("amount", &canonical(p.amount)),
        ],
    )
}

/// A charge category to create (adjustment categories are those of type Adjustment).
#[derive(Debug, Clone, Deserialize)]
pub struct NewChargeCategory {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// Display name.
    pub name: String,
    /// One of [`CHARGE_CATEGORY_TYPES`].
    pub charge_category_type: String,
    /// Description.
    pub description: Option<String>,
    /// Ordering priority.
    #[serde(default)]
    pub priority: i64,
    /// One of [`CATEGORY_STATUSES`], default ACTIVE.
    pub status: Option<String>,
}

/// Creates a charge category.
pub fn create_charge_category(tx: &Transaction<'_>, c: &NewChargeCategory) -> Result<i64> {
    check_enum(
        "charge_category_type",
        &c.charge_category_type,
        CHARGE_CATEGORY_TYPES,
    )?;
    let status = match &c.status {
        Some(text) => CategoryStatus::parse_field("status", text)?,
        None => CategoryStatus::Active,
    };
    insert(
        tx,
        "charge_categories",
        &[
            ("id", &c.id),
            ("name", &c.name),
            ("charge_category_type", &c.charge_category_type),
            ("description", &c.description),
            ("priority", &c.priority),
            ("status", &status),
        ],
    )
}

/// A reason (for adjustments and true-ups) to create.
#[derive(Debug, Clone, Deserialize)]
pub struct NewReason {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// Display name.
    pub name: String,
}

/// Creates a reason.
pub fn create_reason(tx: &Transaction<'_>, r: &NewReason) -> Result<i64> {
    insert(tx, "reasons", &[("id", &r.id), ("name", &r.name)])
}

/// One row of a lookup table.
#[derive(Debug, Clone, Deserialize)]
pub struct NewLookupRow {
    /// The lookup key (matched against the event's attribute or UOM).
    pub key: String,
    /// The rate for this key.
    #[serde(deserialize_with = "crate::money::deserialize_number")]
    pub value: Decimal,
    /// Valid from (inclusive).
    pub valid_from: Option<String>,
    /// Valid to (exclusive).
    pub valid_to: Option<String>,
}

/// A lookup table to create, with its rows.
#[derive(Debug, Clone, Deserialize)]
pub struct NewLookupTable {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// Display name.
    pub name: String,
    /// The rows.
    pub rows: Vec<NewLookupRow>,
}

/// Creates a lookup table and its rows.
pub fn create_lookup_table(tx: &Transaction<'_>, t: &NewLookupTable, tz: Tz) -> Result<i64> {
    let id = insert(tx, "lookup_tables", &[("id", &t.id), ("name", &t.name)])?;
    for r in &t.rows {
        let from = parse_opt_time("valid_from", &r.valid_from, tz)?;
        let to = parse_opt_time("valid_to", &r.valid_to, tz)?;
        insert(
            tx,
            "lookup_table_rows",
            &[
                ("lookup_table_id", &id),
                ("key", &r.key),
                ("value", &canonical(r.value)),
                ("valid_from", &from),
                ("valid_to", &to),
            ],
        )?;
    }
    Ok(id)
}

/// A usage rule to create: a condition, and a rate of one of the [`RATE_KINDS`].
#[derive(Debug, Clone, Deserialize)]
pub struct NewUsageRule {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// The product whose rate plan this rule belongs to.
    pub product_id: i64,
    /// Order in the rate plan (lower first).
    pub position: i64,
    /// Display name.
    pub name: String,
    /// Charge category of the charges this rule produces.
    pub charge_category_id: i64,
    /// The unit the rule rates in; events convert into it within its family.
    pub uom: String,
    /// Smallest amount (in `uom`) the rule accepts, inclusive.
    #[serde(default, deserialize_with = "crate::money::deserialize_opt_number")]
    pub min_amount: Option<Decimal>,
    /// Largest amount (in `uom`) the rule accepts, exclusive.
    #[serde(default, deserialize_with = "crate::money::deserialize_opt_number")]
    pub max_amount: Option<Decimal>,
    /// Events starting before this are not rated by the rule.
    pub valid_from: Option<String>,
    /// Events starting at or after this are not rated by the rule.
    pub valid_to: Option<String>,
    /// Optional attribute match, e.g. `reference_id LIKE 'roam%'`.
    pub attribute_match: Option<String>,
    /// One of [`RATE_KINDS`].
    pub rate_kind: String,
    /// The rate definition, by kind: FLAT `{"rate": n}`, TIERED `{"tiers": [{"up_to": n|null,
    /// "rate": n}]}`, TABLE `{"lookup_table_id": id, "key": "..."}`, PASS_THROUGH `{}`,
    /// FORMULA `{"expression": "..."}` (the language of `crate::rating::formula`).
    /// Kept as raw JSON text so that rates keep their exact digits.
    #[serde(default)]
    pub rate: Option<Box<serde_json::value::RawValue>>,
}

/// Creates a usage rule.
pub fn create_usage_rule(tx: &Transaction<'_>, r: &NewUsageRule, tz: Tz) -> Result<i64> {
    require(tx, "products", "product", r.product_id)?;
    require(
        tx,
        "charge_categories",
        "charge category",
        r.charge_category_id,
    )?;
    check_enum("uom", &r.uom, USAGE_UOMS)?;
    check_enum("rate_kind", &r.rate_kind, RATE_KINDS)?;
    let rate = match r.rate.as_deref().map(|raw| raw.get().trim()) {
        None | Some("null") => "{}".to_string(),
        Some(text) => text.to_string(),
    };
    crate::rating::check_definition(&r.rate_kind, &rate, &r.uom, r.attribute_match.as_deref())
        .map_err(|e| Error::bad_request(format!("usage rule '{}': {e}", r.name)))?;
    let from = parse_opt_time("valid_from", &r.valid_from, tz)?;
    let to = parse_opt_time("valid_to", &r.valid_to, tz)?;
    insert(
        tx,
        "usage_rules",
        &[
            ("id", &r.id),
            ("product_id", &r.product_id),
            ("position", &r.position),
            ("name", &r.name),
            ("charge_category_id", &r.charge_category_id),
            ("uom", &r.uom),
            ("min_amount", &r.min_amount.map(canonical)),
            ("max_amount", &r.max_amount.map(canonical)),
            ("valid_from", &from),
            ("valid_to", &to),
            ("attribute_match", &r.attribute_match),
            ("rate_kind", &r.rate_kind),
            ("rate", &rate),
        ],
    )
}

super::fixture_columns_writer!(
    "products",
    "product_prices",
    "charge_categories",
    "reasons",
    "lookup_tables",
    "usage_rules"
);
