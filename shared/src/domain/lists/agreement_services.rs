//! Agreement services: a service under an agreement, as Surface B lists and renders it
//! (its partial update is `crate::domain::agreements::update_agreement_service`).

use super::{id_text, load_children, load_in_order, named_ref, number, time};
use super::{IdRef, List, NamedRef, RenderContext};
use crate::domain::agreements::AGREEMENT_SERVICE_STATUSES;
use crate::domain::CURRENCY_CODES;
use crate::money::Number;
use crate::query::{FieldKind as K, FieldSpec as F, ListSource};
use crate::Result;
use rusqlite::Connection;
use serde::Serialize;

/// Longest service_resource_identifier filter value, in characters.
pub const MAX_SRID_CHARS: usize = 255;

const SRID_VIA: &str =
    "service_resources sr WHERE sr.service_id = s.service_id AND sr.parent_id IS NULL";
const CHILD_SRID_VIA: &str =
    "service_resources sr WHERE sr.service_id = s.service_id AND sr.parent_id IS NOT NULL";

/// Filter and sort whitelist of agreement services.
pub static FIELDS: &[F] = &[
    F::new("id", "s.id", K::Integer).sortable(),
    F::new("service_id", "s.service_id", K::Integer).sortable(),
    F::new("status", "s.status", K::Enum(AGREEMENT_SERVICE_STATUSES)).sortable(),
    F::new("start_date", "s.start_date", K::DateTime).sortable(),
    F::new("end_date", "s.end_date", K::DateTime).sortable(),
    F::new(
        "next_service_pay_on_purchase",
        "s.next_service_pay_on_purchase",
        K::Bool,
    ),
    F::new("renewed", "s.renewed", K::Bool),
    F::new(
        "accumulated_charges_amount",
        "s.accumulated_charges_amount",
        K::Decimal,
    )
    .sortable(),
    F::new("agreement.id", "s.agreement_id", K::Integer).sortable(),
    F::new("agreement_id", "s.agreement_id", K::Integer).sortable(),
    F::new("end_action", "s.end_action", K::Text).sortable(),
    F::new("next_agreement.id", "s.next_agreement_id", K::Integer),
    F::new("next_end_action", "s.next_end_action", K::Text),
    F::new(
        "next_service_product.id",
        "s.next_service_product_id",
        K::Integer,
    ),
    F::new(
        "next_service_product_price.id",
        "s.next_service_product_price_id",
        K::Integer,
    ),
    F::new(
        "preserve_service_price",
        "s.preserve_service_price",
        K::Bool,
    ),
    F::new(
        "next_preserve_service_price",
        "s.next_preserve_service_price",
        K::Bool,
    ),
    F::new("agreement_period", "s.agreement_period", K::Integer).sortable(),
    F::new("minimum_amount", "s.minimum_amount", K::Decimal).sortable(),
    F::new(
        "minimum_amount_currency_code",
        "s.minimum_amount_currency_code",
        K::Enum(CURRENCY_CODES),
    )
    .sortable(),
    F::new("omit_minimum_amount", "s.omit_minimum_amount", K::Bool),
    F::new("true_up_charge_types", "tu.true_up_charge_type", K::Text)
        .via("true_up_charge_type_relations tu WHERE tu.agreement_service_id = s.id"),
    F::new("service_resource_identifier", "sr.identifier", K::Text).via(SRID_VIA),
    F::new(
        "child_service_resource_identifier",
        "sr.identifier",
        K::Text,
    )
    .via(CHILD_SRID_VIA),
    F::new("product_id", "sv.product_id", K::Integer).sortable(),
    F::new("billing_account_id", "sv.billing_account_id", K::Integer).sortable(),
    F::new("account_num", "ba.account_num", K::Text).sortable(),
    F::new("external_account_num", "ba.external_account_num", K::Text).sortable(),
];

/// The agreement service list.
pub static SOURCE: ListSource = ListSource {
    noun: "agreement service",
    fields: FIELDS,
    named_filters: &[
        "service_id",
        "service_resource_identifier",
        "child_service_resource_identifier",
        "product_id",
        "billing_account_id",
        "account_num",
        "external_account_num",
        "status",
    ],
    from: "agreement_services s JOIN services sv ON sv.id = s.service_id \
           JOIN billing_accounts ba ON ba.id = sv.billing_account_id",
    id: "s.id",
};

/// The agreement services as records (`super::records`), as Surface A reads them: each with
/// the ids of its service's account and product.
pub static RECORDS: ListSource = ListSource {
    noun: "agreement service",
    fields: &[
        F::new("id", "s.id", K::Integer),
        F::new("status", "s.status", K::Enum(AGREEMENT_SERVICE_STATUSES)),
        F::new("start_date", "s.start_date", K::DateTime),
        F::new("end_date", "s.end_date", K::DateTime),
        F::new("end_action", "s.end_action", K::Text),
        F::new("renewed", "s.renewed", K::Bool),
        F::new(
            "accumulated_charges_amount",
            "s.accumulated_charges_amount",
            K::Decimal,
        ),
        F::new("minimum_amount", "s.minimum_amount", K::Decimal),
        F::new(
            "minimum_amount_currency_code",
            "s.minimum_amount_currency_code",
            K::Text,
        ),
        F::new("agreement_period", "s.agreement_period", K::Integer),
        F::new("agreement_id", "s.agreement_id", K::Integer),
        F::new("service_id", "s.service_id", K::Integer),
        F::new("billing_account_id", "sv.billing_account_id", K::Integer),
        F::new("product_id", "sv.product_id", K::Integer),
    ],
    named_filters: &["status", "agreement_id", "billing_account_id"],
    from: "agreement_services s JOIN services sv ON sv.id = s.service_id",
    id: "s.id",
};

/// The agreement service list as Surface B serves it: service_resource_identifier is at most
/// [`MAX_SRID_CHARS`] characters.
pub const LIST: List<AgreementService> = List {
    max_chars: &[("service_resource_identifier", MAX_SRID_CHARS)],
    ..List::plain(&SOURCE, load)
};

/// `{name, sku, external_product_number, id}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ProductRef {
    #[schema(required = true)]
    name: Option<String>,
    #[schema(required = true)]
    sku: Option<String>,
    #[schema(required = true)]
    external_product_number: Option<String>,
    #[schema(schema_with = crate::json_schema::identifier)]
    id: String,
}

/// `{product_price_type, price_type, id}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PriceRef {
    #[schema(required = true)]
    product_price_type: Option<String>,
    #[schema(required = true)]
    price_type: Option<String>,
    #[schema(schema_with = crate::json_schema::identifier)]
    id: String,
}

/// An agreement service as Surface B renders it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AgreementService {
    #[schema(schema_with = crate::json_schema::identifier)]
    id: String,
    #[schema(format = DateTime, required = true)]
    start_date: Option<String>,
    next_service_pay_on_purchase: bool,
    renewed: bool,
    #[schema(schema_with = crate::json_schema::decimal_or_null, required = true)]
    accumulated_charges_amount: Option<Number>,
    #[schema(required = true)]
    agreement: Option<NamedRef>,
    #[schema(format = DateTime, required = true)]
    end_date: Option<String>,
    #[schema(required = true)]
    end_action: Option<String>,
    #[schema(required = true)]
    next_agreement: Option<NamedRef>,
    #[schema(required = true)]
    next_end_action: Option<String>,
    #[schema(required = true)]
    next_service_product: Option<ProductRef>,
    #[schema(required = true)]
    next_service_product_price: Option<PriceRef>,
    preserve_service_price: bool,
    next_preserve_service_price: bool,
    agreement_period: i32,
    #[schema(schema_with = crate::json_schema::decimal_or_null, required = true)]
    minimum_amount: Option<Number>,
    #[schema(schema_with = crate::domain::enum_schemas::currency_or_null, required = true)]
    minimum_amount_currency_code: Option<String>,
    omit_minimum_amount: bool,
    true_up_charge_types: Vec<String>,
    /// One of the agreement service statuses (what the `status` filter selects on).
    #[schema(schema_with = crate::domain::enum_schemas::agreement_service_status)]
    status: String,
    /// The service's first top-level SRID (what the `service_resource_identifier` filter
    /// selects on), null when it has none.
    #[schema(required = true)]
    service_resource_identifier: Option<String>,
}

/// Loads agreement services by id, in the order given.
pub fn load(conn: &Connection, ids: &[i64], ctx: &RenderContext) -> Result<Vec<AgreementService>> {
    let tz = ctx.tz;
    let mut true_ups = load_children(
        conn,
        "SELECT agreement_service_id, true_up_charge_type FROM true_up_charge_type_relations
         WHERE agreement_service_id",
        "id",
        ids,
        |r| Ok((r.get(0)?, r.get::<_, String>(1)?)),
    )?;
    load_in_order(
        conn,
        "SELECT s.*, g.name AS agreement_name, n.name AS next_agreement_name,
                p.name AS product_name, p.sku, p.external_product_number,
                pp.product_price_type, pp.price_type,
                (SELECT sr.identifier FROM service_resources sr
                 WHERE sr.service_id = s.service_id AND sr.parent_id IS NULL
                 ORDER BY sr.id LIMIT 1) AS srid
         FROM agreement_services s
         LEFT JOIN agreements g ON g.id = s.agreement_id
         LEFT JOIN agreements n ON n.id = s.next_agreement_id
         LEFT JOIN products p ON p.id = s.next_service_product_id
         LEFT JOIN product_prices pp ON pp.id = s.next_service_product_price_id
         WHERE s.id",
        ids,
        |r| {
            let id: i64 = r.get("id")?;
            let product = match r.get::<_, Option<i64>>("next_service_product_id")? {
                Some(p) => Some(ProductRef {
                    name: r.get("product_name")?,
                    sku: r.get("sku")?,
                    external_product_number: r.get("external_product_number")?,
                    id: id_text(p),
                }),
                None => None,
            };
            let price = match r.get::<_, Option<i64>>("next_service_product_price_id")? {
                Some(p) => Some(PriceRef {
                    product_price_type: r.get("product_price_type")?,
                    price_type: r.get("price_type")?,
                    id: id_text(p),
                }),
                None => None,
            };
            Ok((
                id,
                AgreementService {
                    id: id_text(id),
                    start_date: time(r, "start_date", tz)?,
                    next_service_pay_on_purchase: r.get("next_service_pay_on_purchase")?,
                    renewed: r.get("renewed")?,
                    accumulated_charges_amount: number(r, "accumulated_charges_amount")?,
                    agreement: named_ref(r, "agreement_id", "agreement_name")?,
                    end_date: time(r, "end_date", tz)?,
                    end_action: r.get("end_action")?,
                    next_agreement: named_ref(r, "next_agreement_id", "next_agreement_name")?,
                    next_end_action: r.get("next_end_action")?,
                    next_service_product: product,
                    next_service_product_price: price,
                    preserve_service_price: r.get("preserve_service_price")?,
                    next_preserve_service_price: r.get("next_preserve_service_price")?,
                    agreement_period: r.get("agreement_period")?,
                    minimum_amount: number(r, "minimum_amount")?,
                    minimum_amount_currency_code: r.get("minimum_amount_currency_code")?,
                    omit_minimum_amount: r.get("omit_minimum_amount")?,
                    true_up_charge_types: true_ups.remove(&id).unwrap_or_default(),
                    status: r.get("status")?,
                    service_resource_identifier: r.get("srid")?,
                },
            ))
        },
    )
}

/// The id reference of an agreement service (for relations).
pub fn reference(id: i64) -> IdRef {
    IdRef { id: id_text(id) }
}
