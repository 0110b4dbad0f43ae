//! Agreement services: a service under an agreement, as Surface B lists and renders it, and
//! the body of its partial update (PUT), turned into the domain's typed
//! `AgreementServiceUpdate` (whose rules are `shared::domain::agreements`). The PUT body
//! accepts the whole representation GET answers: read-only members are checked by
//! [`super::check_echoed`], nested references read by their `id` ([`super::RefIn`]).

use super::RenderContext;
use super::{echo, id_text, load_children, load_in_order, number, time, IdRef, NamedRef, RefIn};
use rusqlite::Connection;
use rust_decimal::Decimal;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use shared::domain::agreements::{AgreementServiceUpdate, AGREEMENT_SERVICE_STATUSES};
use shared::domain::CURRENCY_CODES;
use shared::money::Number;
use shared::query::{FieldKind as K, FieldSpec as F, ListSource};
use shared::Result;

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

/// The schemas of the PUT body's members that a derive cannot see: the read-only echoes
/// (checked against the stored values by `check_echoed`) and the bounded inputs.
fn read_only(mut schema: serde_json::Value) -> utoipa::openapi::Object {
    schema["description"] = "Read-only: may be sent back as GET renders it; a value other than the stored one is a 400.".into();
    shared::json_schema::object(schema)
}
fn echo_id() -> utoipa::openapi::Object {
    read_only(serde_json::json!({ "type": ["string", "integer"] }))
}
fn echo_start_date() -> utoipa::openapi::Object {
    read_only(serde_json::json!({ "type": ["string", "null"], "format": "date-time" }))
}
fn echo_renewed() -> utoipa::openapi::Object {
    read_only(serde_json::json!({ "type": "boolean" }))
}
fn echo_agreement_period() -> utoipa::openapi::Object {
    read_only(serde_json::json!({ "type": "integer", "format": "int32" }))
}
fn echo_status() -> utoipa::openapi::Object {
    read_only(serde_json::json!({ "type": "string", "enum": AGREEMENT_SERVICE_STATUSES }))
}
fn echo_srid() -> utoipa::openapi::Object {
    read_only(serde_json::json!({ "type": ["string", "null"] }))
}
fn amount_in() -> utoipa::openapi::Object {
    let mut schema = shared::json_schema::decimal_or_null();
    schema.minimum = Some(0.into());
    schema
}
fn action_in() -> utoipa::openapi::Object {
    shared::json_schema::object(
        serde_json::json!({ "type": ["string", "null"], "minLength": 1, "maxLength": 255 }),
    )
}
fn charge_types_in() -> utoipa::openapi::Array {
    shared::json_schema::array(serde_json::json!({
        "type": ["array", "null"],
        "items": { "type": "string", "minLength": 1, "maxLength": 255 },
        "maxItems": 50,
    }))
}

/// `{name, sku, external_product_number, id}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ProductRef {
    #[schema(required = true)]
    name: Option<String>,
    #[schema(required = true)]
    sku: Option<String>,
    #[schema(required = true)]
    external_product_number: Option<String>,
    #[schema(schema_with = shared::json_schema::identifier)]
    id: String,
}

/// `{product_price_type, price_type, id}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PriceRef {
    #[schema(required = true)]
    product_price_type: Option<String>,
    #[schema(required = true)]
    price_type: Option<String>,
    #[schema(schema_with = shared::json_schema::identifier)]
    id: String,
}

/// An agreement service as Surface B renders it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AgreementService {
    #[schema(schema_with = shared::json_schema::identifier)]
    id: String,
    #[schema(format = DateTime, required = true)]
    start_date: Option<String>,
    next_service_pay_on_purchase: bool,
    renewed: bool,
    #[schema(schema_with = shared::json_schema::decimal_or_null, required = true)]
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
    #[schema(schema_with = shared::json_schema::decimal_or_null, required = true)]
    minimum_amount: Option<Number>,
    #[schema(schema_with = shared::domain::enum_schemas::currency_or_null, required = true)]
    minimum_amount_currency_code: Option<String>,
    omit_minimum_amount: bool,
    true_up_charge_types: Vec<String>,
    /// One of the agreement service statuses (what the `status` filter selects on).
    #[schema(schema_with = shared::domain::enum_schemas::agreement_service_status)]
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
                    agreement: super::named_ref(r, "agreement_id", "agreement_name")?,
                    end_date: time(r, "end_date", tz)?,
                    end_action: r.get("end_action")?,
                    next_agreement: super::named_ref(
                        r,
                        "next_agreement_id",
                        "next_agreement_name",
                    )?,
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

/// [`shared::domain::nullable`] for an exact JSON number.
fn nullable_number<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Option<Decimal>>, D::Error> {
    shared::money::deserialize_opt_number(d).map(Some)
}

/// Members an agreement service renders that a PUT may send back but cannot change.
pub const READ_ONLY: &[&str] = &[
    "id",
    "start_date",
    "renewed",
    "agreement_period",
    "status",
    "service_resource_identifier",
];

/// The body of `PUT /agreement-services/{id}`: any of the listed fields; absent fields stay,
/// null clears a nullable field. The whole representation GET answers is accepted: its
/// read-only members ([`READ_ONLY`]) are kept aside for [`super::check_echoed`], its nested
/// references are read by their `id` ([`RefIn`]); any other member is refused (400), so a
/// misspelt field is never silently dropped.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AgreementServicePatch, description = "Partial update: absent fields stay, null clears a nullable one. The whole AgreementService a GET answers is accepted (read-only members unchanged, nested references as rendered); any other member is a 400.")]
pub struct Patch {
    #[serde(default, deserialize_with = "echo")]
    #[schema(schema_with = echo_id)]
    id: Option<Value>,
    #[serde(default, deserialize_with = "echo")]
    #[schema(schema_with = echo_start_date)]
    start_date: Option<Value>,
    #[serde(default, deserialize_with = "echo")]
    #[schema(schema_with = echo_renewed)]
    renewed: Option<Value>,
    #[serde(default, deserialize_with = "echo")]
    #[schema(schema_with = echo_agreement_period)]
    agreement_period: Option<Value>,
    #[serde(default, deserialize_with = "echo")]
    #[schema(schema_with = echo_status)]
    status: Option<Value>,
    #[serde(default, deserialize_with = "echo")]
    #[schema(schema_with = echo_srid)]
    service_resource_identifier: Option<Value>,
    next_service_pay_on_purchase: Option<bool>,
    #[serde(default, deserialize_with = "shared::money::deserialize_opt_number")]
    #[schema(schema_with = amount_in)]
    accumulated_charges_amount: Option<Decimal>,
    agreement: Option<RefIn>,
    #[serde(default, deserialize_with = "shared::domain::nullable")]
    #[schema(format = DateTime)]
    end_date: Option<Option<String>>,
    #[serde(default, deserialize_with = "shared::domain::nullable")]
    #[schema(schema_with = action_in)]
    end_action: Option<Option<String>>,
    #[serde(default, deserialize_with = "shared::domain::nullable")]
    next_agreement: Option<Option<RefIn>>,
    #[serde(default, deserialize_with = "shared::domain::nullable")]
    #[schema(schema_with = action_in)]
    next_end_action: Option<Option<String>>,
    #[serde(default, deserialize_with = "shared::domain::nullable")]
    next_service_product: Option<Option<RefIn>>,
    #[serde(default, deserialize_with = "shared::domain::nullable")]
    next_service_product_price: Option<Option<RefIn>>,
    preserve_service_price: Option<bool>,
    next_preserve_service_price: Option<bool>,
    #[serde(default, deserialize_with = "nullable_number")]
    #[schema(schema_with = amount_in)]
    minimum_amount: Option<Option<Decimal>>,
    #[serde(default, deserialize_with = "shared::domain::nullable")]
    #[schema(schema_with = shared::domain::enum_schemas::currency_or_null)]
    minimum_amount_currency_code: Option<Option<String>>,
    omit_minimum_amount: Option<bool>,
    #[schema(schema_with = charge_types_in)]
    true_up_charge_types: Option<Vec<String>>,
}

impl Patch {
    /// The read-only members the body sends back, by name (in [`READ_ONLY`]'s order).
    pub fn echoed(&self) -> Vec<(&'static str, &Value)> {
        let members = [
            &self.id,
            &self.start_date,
            &self.renewed,
            &self.agreement_period,
            &self.status,
            &self.service_resource_identifier,
        ];
        READ_ONLY
            .iter()
            .zip(members)
            .filter_map(|(name, v)| v.as_ref().map(|v| (*name, v)))
            .collect()
    }

    /// The typed update this body asks for: 400 when a reference's id is not an identifier.
    pub fn into_update(self) -> Result<AgreementServiceUpdate> {
        let reference = |field: &str, r: Option<Option<RefIn>>| {
            r.map(|v| v.map(|r| r.value(field)).transpose()).transpose()
        };
        Ok(AgreementServiceUpdate {
            next_service_pay_on_purchase: self.next_service_pay_on_purchase,
            accumulated_charges_amount: self.accumulated_charges_amount,
            agreement_id: self.agreement.map(|r| r.value("agreement")).transpose()?,
            end_date: self.end_date,
            end_action: self.end_action,
            next_agreement_id: reference("next_agreement", self.next_agreement)?,
            next_end_action: self.next_end_action,
            next_service_product_id: reference("next_service_product", self.next_service_product)?,
            next_service_product_price_id: reference(
                "next_service_product_price",
                self.next_service_product_price,
            )?,
            preserve_service_price: self.preserve_service_price,
            next_preserve_service_price: self.next_preserve_service_price,
            minimum_amount: self.minimum_amount,
            minimum_amount_currency_code: self.minimum_amount_currency_code,
            omit_minimum_amount: self.omit_minimum_amount,
            true_up_charge_types: self.true_up_charge_types,
        })
    }
}

/// The id reference of an agreement service (for relations).
pub fn reference(id: i64) -> IdRef {
    IdRef { id: id_text(id) }
}
