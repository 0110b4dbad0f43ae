//! The body of an agreement service's partial update (PUT), turned into the domain's typed
//! `AgreementServiceUpdate` (whose rules are `shared::domain::agreements`). The PUT body
//! accepts the whole representation GET answers (`shared::domain::lists::agreement_services`):
//! read-only members are checked by [`super::check_echoed`], nested references read by their
//! `id` ([`super::RefIn`]).

use super::{echo, RefIn};
use rust_decimal::Decimal;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use shared::domain::agreements::{AgreementServiceUpdate, AGREEMENT_SERVICE_STATUSES};
use shared::Result;

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
