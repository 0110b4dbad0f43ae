//! Adjustment applications: an account adjustment applied to an invoice; as Surface B lists
//! them. The representation nests the whole account adjustment with its items.

use super::{category_ref, id_text, load_children, load_in_order, named_ref, number, time};
use super::{AccountRef, CategoryRef, List, NamedRef, RenderContext};
use crate::domain::adjustments::ADJUSTMENT_APPLICATION_TYPES;
use crate::money::Number;
use crate::query::{FieldKind as K, FieldSpec as F, ListSource};
use crate::Result;
use rusqlite::Connection;
use serde::Serialize;

const ADJUSTMENT_TYPES: &[&str] = &["CREDIT", "DEBIT"];

/// Filter and sort whitelist of adjustment applications.
pub static FIELDS: &[F] = &[
    F::new("id", "ap.id", K::Integer).sortable(),
    F::new("adjustment_id", "aa.id", K::Integer).sortable(),
    F::new("account_adjustment.id", "aa.id", K::Integer).sortable(),
    F::new("billing_account_id", "aa.billing_account_id", K::Integer).sortable(),
    F::new(
        "account_adjustment.billing_account.id",
        "aa.billing_account_id",
        K::Integer,
    ),
    F::new("account_num", "ba.account_num", K::Text).sortable(),
    F::new(
        "account_adjustment.billing_account.account_num",
        "ba.account_num",
        K::Text,
    ),
    F::new(
        "account_adjustment.billing_account.external_account_num",
        "ba.external_account_num",
        K::Text,
    ),
    F::new("occurred_on", "aa.occurred_on", K::DateTime).sortable(),
    F::new(
        "account_adjustment.occurred_on",
        "aa.occurred_on",
        K::DateTime,
    )
    .sortable(),
    F::new("unapplied_amount", "aa.unapplied_amount", K::Decimal).sortable(),
    F::new(
        "account_adjustment.unapplied_amount",
        "aa.unapplied_amount",
        K::Decimal,
    )
    .sortable(),
    F::new(
        "adjustment_application_type",
        "ap.adjustment_application_type",
        K::Enum(ADJUSTMENT_APPLICATION_TYPES),
    )
    .sortable(),
    F::new("account_adjustment.amount", "aa.amount", K::Decimal).sortable(),
    F::new("account_adjustment.description", "aa.description", K::Text),
    F::new("account_adjustment.invoiced", "aa.invoiced", K::Bool),
    F::new("account_adjustment.status", "aa.status", K::Text).sortable(),
    F::new(
        "account_adjustment.adjustment_type",
        "aa.adjustment_type",
        K::Enum(ADJUSTMENT_TYPES),
    ),
    F::new("account_adjustment.reason.id", "aa.reason_id", K::Integer),
    F::new(
        "account_adjustment.secondary_reason.id",
        "aa.secondary_reason_id",
        K::Integer,
    ),
    F::new("account_adjustment.posted_on", "aa.posted_on", K::DateTime).sortable(),
    F::new("account_adjustment.posted_by", "aa.posted_by", K::Text),
    F::new(
        "account_adjustment.manual_invoice_application",
        "aa.manual_invoice_application",
        K::Bool,
    ),
];

/// The adjustment application list.
pub static SOURCE: ListSource = ListSource {
    noun: "adjustment application",
    fields: FIELDS,
    named_filters: &[
        "adjustment_id",
        "billing_account_id",
        "account_num",
        "occurred_on",
        "unapplied_amount",
        "adjustment_application_type",
    ],
    from: "adjustment_applications ap JOIN account_adjustments aa ON aa.id = ap.adjustment_id \
           JOIN billing_accounts ba ON ba.id = aa.billing_account_id",
    id: "ap.id",
};

/// The adjustment application list as Surface B serves it.
pub const LIST: List<AdjustmentApplication> = List::plain(&SOURCE, load);

/// An item of an account adjustment.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = AdjustmentItem)]
pub struct Item {
    adjustment_item_type: String,
    #[schema(schema_with = crate::json_schema::decimal_or_null, required = true)]
    amount: Option<Number>,
    #[schema(required = true)]
    description: Option<String>,
    #[schema(required = true)]
    reason: Option<String>,
    #[schema(required = true)]
    secondary_reason: Option<String>,
    #[schema(required = true)]
    category: Option<CategoryRef>,
    #[schema(schema_with = crate::json_schema::identifier)]
    id: String,
}

/// An account adjustment.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AccountAdjustment {
    #[schema(format = DateTime, required = true)]
    occurred_on: Option<String>,
    #[schema(schema_with = crate::json_schema::decimal_or_null, required = true)]
    amount: Option<Number>,
    #[schema(required = true)]
    description: Option<String>,
    invoiced: bool,
    status: String,
    adjustment_type: String,
    billing_account: AccountRef,
    #[schema(required = true)]
    reason: Option<NamedRef>,
    #[schema(required = true)]
    secondary_reason: Option<NamedRef>,
    #[schema(format = DateTime, required = true)]
    posted_on: Option<String>,
    #[schema(required = true)]
    posted_by: Option<String>,
    manual_invoice_application: bool,
    #[schema(schema_with = crate::json_schema::decimal_or_null, required = true)]
    unapplied_amount: Option<Number>,
    items: Vec<Item>,
    #[schema(schema_with = crate::json_schema::identifier)]
    id: String,
}

/// An adjustment application as Surface B renders it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AdjustmentApplication {
    account_adjustment: AccountAdjustment,
    #[schema(schema_with = crate::json_schema::identifier)]
    id: String,
}

/// Loads adjustment applications by id, in the order given.
pub fn load(
    conn: &Connection,
    ids: &[i64],
    ctx: &RenderContext,
) -> Result<Vec<AdjustmentApplication>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let tz = ctx.tz;
    let adjustment_ids: Vec<i64> = {
        let marks = vec!["?"; ids.len()].join(", ");
        let mut stmt = conn.prepare(&format!(
            "SELECT DISTINCT adjustment_id FROM adjustment_applications WHERE id IN ({marks})"
        ))?;
        let rows = stmt.query_map(rusqlite::params_from_iter(ids.iter()), |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let items = load_children(
        conn,
        "SELECT i.id, i.adjustment_id, i.adjustment_item_type, i.amount, i.description, i.reason,
                i.secondary_reason, c.id AS cat_id, c.charge_category_type AS cat_type,
                c.name AS cat_name
         FROM account_adjustment_items i LEFT JOIN charge_categories c ON c.id = i.charge_category_id
         WHERE i.adjustment_id",
        "i.id",
        &adjustment_ids,
        |r| {
            Ok((
                r.get("adjustment_id")?,
                Item {
                    adjustment_item_type: r.get("adjustment_item_type")?,
                    amount: number(r, "amount")?,
                    description: r.get("description")?,
                    reason: r.get("reason")?,
                    secondary_reason: r.get("secondary_reason")?,
                    category: category_ref(r, "cat_")?,
                    id: id_text(r.get("id")?),
                },
            ))
        },
    )?;
    load_in_order(
        conn,
        "SELECT ap.id, aa.id AS adjustment_id, aa.occurred_on, aa.amount, aa.description,
                aa.invoiced, aa.status, aa.adjustment_type, aa.posted_on, aa.posted_by,
                aa.manual_invoice_application, aa.unapplied_amount,
                ba.id AS account_id, ba.account_num, ba.external_account_num,
                r1.id AS reason_id, r1.name AS reason_name,
                r2.id AS secondary_reason_id, r2.name AS secondary_reason_name
         FROM adjustment_applications ap
         JOIN account_adjustments aa ON aa.id = ap.adjustment_id
         JOIN billing_accounts ba ON ba.id = aa.billing_account_id
         LEFT JOIN reasons r1 ON r1.id = aa.reason_id
         LEFT JOIN reasons r2 ON r2.id = aa.secondary_reason_id
         WHERE ap.id",
        ids,
        |r| {
            let id: i64 = r.get("id")?;
            let adjustment_id: i64 = r.get("adjustment_id")?;
            // Applications of one adjustment share its items; each renders its own copy.
            let adjustment_items = items.get(&adjustment_id).cloned().unwrap_or_default();
            Ok((
                id,
                AdjustmentApplication {
                    account_adjustment: AccountAdjustment {
                        occurred_on: time(r, "occurred_on", tz)?,
                        amount: number(r, "amount")?,
                        description: r.get("description")?,
                        invoiced: r.get("invoiced")?,
                        status: r.get("status")?,
                        adjustment_type: r.get("adjustment_type")?,
                        billing_account: AccountRef {
                            account_num: r.get("account_num")?,
                            external_account_num: r.get("external_account_num")?,
                            cpq_discounts: Vec::new(),
                            id: id_text(r.get("account_id")?),
                        },
                        reason: named_ref(r, "reason_id", "reason_name")?,
                        secondary_reason: named_ref(
                            r,
                            "secondary_reason_id",
                            "secondary_reason_name",
                        )?,
                        posted_on: time(r, "posted_on", tz)?,
                        posted_by: r.get("posted_by")?,
                        manual_invoice_application: r.get("manual_invoice_application")?,
                        unapplied_amount: number(r, "unapplied_amount")?,
                        items: adjustment_items,
                        id: id_text(adjustment_id),
                    },
                    id: id_text(id),
                },
            ))
        },
    )
}
