//! Agreements as Surface B lists them.

use super::{category_ref, id_text, load_in_order, named_ref, number, time};
use super::{CategoryRef, List, NamedRef, RenderContext};
use crate::domain::CURRENCY_CODES;
use crate::money::Number;
use crate::query::{FieldKind as K, FieldSpec as F, ListSource};
use crate::Result;
use rusqlite::Connection;
use serde::Serialize;

/// Statuses of an agreement (the domain's set).
pub const STATUSES: &[&str] = crate::domain::agreements::AGREEMENT_STATUSES;
const PERIOD_TYPES: &[&str] = &["MONTH", "YEAR"];

/// Filter and sort whitelist of agreements.
pub static FIELDS: &[F] = &[
    F::new("id", "g.id", K::Integer).sortable(),
    F::new("name", "g.name", K::Text).sortable(),
    F::new("agreement_period", "g.agreement_period", K::Integer).sortable(),
    F::new(
        "agreement_period_type",
        "g.agreement_period_type",
        K::Enum(PERIOD_TYPES),
    ),
    F::new("status", "g.status", K::Enum(STATUSES)).sortable(),
    F::new(
        "termination_flat_charge",
        "g.termination_flat_charge",
        K::Decimal,
    )
    .sortable(),
    F::new(
        "termination_percentage_charge",
        "g.termination_percentage_charge",
        K::Decimal,
    )
    .sortable(),
    F::new(
        "max_termination_charge",
        "g.max_termination_charge",
        K::Decimal,
    )
    .sortable(),
    F::new("prorate_on_cancel", "g.prorate_on_cancel", K::Bool),
    F::new(
        "adjustment_category.id",
        "g.adjustment_category_id",
        K::Integer,
    ),
    F::new("end_action", "g.end_action", K::Text).sortable(),
    F::new(
        "termination_fee_currency_code",
        "g.termination_fee_currency_code",
        K::Enum(CURRENCY_CODES),
    )
    .sortable(),
    F::new(
        "max_termination_fee_currency_code",
        "g.max_termination_fee_currency_code",
        K::Enum(CURRENCY_CODES),
    )
    .sortable(),
    F::new("valid_from", "g.valid_from", K::DateTime).sortable(),
    F::new("valid_to", "g.valid_to", K::DateTime).sortable(),
    F::new("next_agreement.id", "g.next_agreement_id", K::Integer),
    F::new("minimum_amount", "g.minimum_amount", K::Decimal).sortable(),
    F::new(
        "minimum_amount_currency_type",
        "g.minimum_amount_currency_type",
        K::Enum(CURRENCY_CODES),
    ),
    F::new(
        "true_up_adjustment_reason.id",
        "g.true_up_adjustment_reason_id",
        K::Integer,
    ),
    F::new(
        "preserve_service_price",
        "g.preserve_service_price",
        K::Bool,
    ),
    F::new("product_id", "gp.product_id", K::Integer)
        .via("agreement_products gp WHERE gp.agreement_id = g.id"),
];

/// The agreement list.
pub static SOURCE: ListSource = ListSource {
    noun: "agreement",
    fields: FIELDS,
    named_filters: &[
        "valid_from",
        "valid_to",
        "name",
        "product_id",
        "status",
        "termination_fee_currency_code",
        "max_termination_fee_currency_code",
    ],
    from: FROM,
    id: "g.id",
};

/// The agreements table as every agreement read names it.
const FROM: &str = "agreements g";

/// The agreements as records (`super::records`), as Surface A reads them: fewer columns
/// than the list above, and `status` a free-text filter there (no enumeration checked).
pub static RECORDS: ListSource = ListSource {
    noun: "agreement",
    fields: &[
        F::new("id", "g.id", K::Integer),
        F::new("name", "g.name", K::Text),
        F::new("agreement_period", "g.agreement_period", K::Integer),
        F::new("agreement_period_type", "g.agreement_period_type", K::Text),
        F::new("status", "g.status", K::Text),
        F::new("end_action", "g.end_action", K::Text),
        F::new("valid_from", "g.valid_from", K::DateTime),
        F::new("valid_to", "g.valid_to", K::DateTime),
        F::new("minimum_amount", "g.minimum_amount", K::Decimal),
        F::new(
            "minimum_amount_currency_type",
            "g.minimum_amount_currency_type",
            K::Text,
        ),
        F::new("prorate_on_cancel", "g.prorate_on_cancel", K::Bool),
        F::new(
            "preserve_service_price",
            "g.preserve_service_price",
            K::Bool,
        ),
    ],
    named_filters: &["name", "status"],
    from: FROM,
    id: "g.id",
};

/// The agreement list as Surface B serves it.
pub const LIST: List<Agreement> = List::plain(&SOURCE, load);

/// An agreement as Surface B renders it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Agreement {
    #[schema(schema_with = crate::json_schema::identifier)]
    id: String,
    name: String,
    agreement_period: i32,
    status: String,
    #[schema(schema_with = crate::json_schema::decimal_or_null, required = true)]
    termination_flat_charge: Option<Number>,
    #[schema(schema_with = crate::json_schema::decimal_or_null, required = true)]
    termination_percentage_charge: Option<Number>,
    #[schema(schema_with = crate::json_schema::decimal_or_null, required = true)]
    max_termination_charge: Option<Number>,
    prorate_on_cancel: bool,
    #[schema(required = true)]
    adjustment_category: Option<CategoryRef>,
    #[schema(required = true)]
    end_action: Option<String>,
    #[schema(required = true)]
    termination_fee_currency_code: Option<String>,
    #[schema(required = true)]
    max_termination_fee_currency_code: Option<String>,
    #[schema(format = DateTime, required = true)]
    valid_from: Option<String>,
    #[schema(format = DateTime, required = true)]
    valid_to: Option<String>,
    #[schema(required = true)]
    next_agreement: Option<NamedRef>,
    agreement_period_type: String,
    #[schema(schema_with = crate::json_schema::decimal_or_null, required = true)]
    minimum_amount: Option<Number>,
    #[schema(required = true)]
    minimum_amount_currency_type: Option<String>,
    #[schema(required = true)]
    true_up_adjustment_reason: Option<NamedRef>,
    preserve_service_price: bool,
}

/// Loads agreements by id, in the order given.
pub fn load(conn: &Connection, ids: &[i64], ctx: &RenderContext) -> Result<Vec<Agreement>> {
    let tz = ctx.tz;
    load_in_order(
        conn,
        "SELECT g.*, c.id AS cat_id, c.charge_category_type AS cat_type, c.name AS cat_name,
                n.name AS next_name, r.name AS reason_name
         FROM agreements g
         LEFT JOIN charge_categories c ON c.id = g.adjustment_category_id
         LEFT JOIN agreements n ON n.id = g.next_agreement_id
         LEFT JOIN reasons r ON r.id = g.true_up_adjustment_reason_id
         WHERE g.id",
        ids,
        |r| {
            let id: i64 = r.get("id")?;
            Ok((
                id,
                Agreement {
                    id: id_text(id),
                    name: r.get("name")?,
                    agreement_period: r.get("agreement_period")?,
                    status: r.get("status")?,
                    termination_flat_charge: number(r, "termination_flat_charge")?,
                    termination_percentage_charge: number(r, "termination_percentage_charge")?,
                    max_termination_charge: number(r, "max_termination_charge")?,
                    prorate_on_cancel: r.get("prorate_on_cancel")?,
                    adjustment_category: category_ref(r, "cat_")?,
                    end_action: r.get("end_action")?,
                    termination_fee_currency_code: r.get("termination_fee_currency_code")?,
                    max_termination_fee_currency_code: r
                        .get("max_termination_fee_currency_code")?,
                    valid_from: time(r, "valid_from", tz)?,
                    valid_to: time(r, "valid_to", tz)?,
                    next_agreement: named_ref(r, "next_agreement_id", "next_name")?,
                    agreement_period_type: r.get("agreement_period_type")?,
                    minimum_amount: number(r, "minimum_amount")?,
                    minimum_amount_currency_type: r.get("minimum_amount_currency_type")?,
                    true_up_adjustment_reason: named_ref(
                        r,
                        "true_up_adjustment_reason_id",
                        "reason_name",
                    )?,
                    preserve_service_price: r.get("preserve_service_price")?,
                },
            ))
        },
    )
}
