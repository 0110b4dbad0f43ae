//! Agreement services: a service under an agreement. Read, list, and the partial update of
//! the fields the interface lists.

use super::RenderContext;
use super::{id_text, load_children, load_in_order, number, time, IdRef, NamedRef};
use chrono_tz::Tz;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, Transaction};
use rust_decimal::Decimal;
use serde::{Deserialize, Deserializer, Serialize};
use shared::domain::agreements::AGREEMENT_SERVICE_STATUSES;
use shared::domain::{check_currency, parse_time, CURRENCY_CODES};
use shared::money::{canonical, Number};
use shared::query::list::MAX_NESTED;
use shared::query::{FieldKind as K, FieldSpec as F, ListSource};
use shared::{Error, Result};

/// Longest service_resource_identifier filter value, in characters.
pub const MAX_SRID_CHARS: usize = 255;
/// Longest free-text value (end actions, true-up charge types), in characters.
const MAX_TEXT_CHARS: usize = 255;

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

/// `{name, sku, external_product_number, id}`.
#[derive(Debug, Serialize)]
pub struct ProductRef {
    name: Option<String>,
    sku: Option<String>,
    external_product_number: Option<String>,
    id: String,
}

/// `{product_price_type, price_type, id}`.
#[derive(Debug, Serialize)]
pub struct PriceRef {
    product_price_type: Option<String>,
    price_type: Option<String>,
    id: String,
}

/// An agreement service as Surface B renders it.
#[derive(Debug, Serialize)]
pub struct AgreementService {
    id: String,
    start_date: Option<String>,
    next_service_pay_on_purchase: bool,
    renewed: bool,
    accumulated_charges_amount: Option<Number>,
    agreement: Option<NamedRef>,
    end_date: Option<String>,
    end_action: Option<String>,
    next_agreement: Option<NamedRef>,
    next_end_action: Option<String>,
    next_service_product: Option<ProductRef>,
    next_service_product_price: Option<PriceRef>,
    preserve_service_price: bool,
    next_preserve_service_price: bool,
    agreement_period: i32,
    minimum_amount: Option<Number>,
    minimum_amount_currency_code: Option<String>,
    omit_minimum_amount: bool,
    true_up_charge_types: Vec<String>,
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
                pp.product_price_type, pp.price_type
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
                },
            ))
        },
    )
}

/// A reference in a request body: `{"id": "12"}` (a number is accepted too).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefIn {
    id: IdIn,
}

/// An identifier written as a string or a number.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum IdIn {
    Text(String),
    Number(i64),
}

impl IdIn {
    fn value(&self, field: &str) -> Result<i64> {
        match self {
            IdIn::Number(n) => Ok(*n),
            IdIn::Text(t) => t
                .trim()
                .parse()
                .map_err(|_| Error::bad_request(format!("{field}.id: '{t}' is not an identifier"))),
        }
    }
}

/// Deserializes a field that may be absent (outer None), null (Some(None)) or a value.
fn nullable<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// [`nullable`] for an exact JSON number.
fn nullable_number<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Option<Decimal>>, D::Error> {
    shared::money::deserialize_opt_number(d).map(Some)
}

/// The body of `PUT /agreement-services/{id}`: any of the listed fields; absent fields stay,
/// null clears a nullable field. `id`, when sent, must be the id of the path.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Patch {
    #[serde(default)]
    id: Option<IdIn>,
    next_service_pay_on_purchase: Option<bool>,
    #[serde(default, deserialize_with = "shared::money::deserialize_opt_number")]
    accumulated_charges_amount: Option<Decimal>,
    agreement: Option<RefIn>,
    #[serde(default, deserialize_with = "nullable")]
    end_date: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    end_action: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    next_agreement: Option<Option<RefIn>>,
    #[serde(default, deserialize_with = "nullable")]
    next_end_action: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    next_service_product: Option<Option<RefIn>>,
    #[serde(default, deserialize_with = "nullable")]
    next_service_product_price: Option<Option<RefIn>>,
    preserve_service_price: Option<bool>,
    next_preserve_service_price: Option<bool>,
    #[serde(default, deserialize_with = "nullable_number")]
    minimum_amount: Option<Option<Decimal>>,
    #[serde(default, deserialize_with = "nullable")]
    minimum_amount_currency_code: Option<Option<String>>,
    omit_minimum_amount: Option<bool>,
    true_up_charge_types: Option<Vec<String>>,
}

/// Fails with 400 (not 404: the path names the record, the body only refers) unless
/// `table` has a row `id`.
fn require_reference(tx: &Transaction<'_>, table: &str, field: &str, id: i64) -> Result<()> {
    let exists = tx
        .prepare_cached(&format!("SELECT 1 FROM {table} WHERE id = ?1"))?
        .exists([id])?;
    if exists {
        Ok(())
    } else {
        Err(Error::bad_request(format!("{field}: {id} does not exist")))
    }
}

fn check_text(field: &str, value: &str) -> Result<()> {
    if value.trim().is_empty() || value.chars().count() > MAX_TEXT_CHARS {
        return Err(Error::bad_request(format!(
            "{field} must be 1 to {MAX_TEXT_CHARS} characters"
        )));
    }
    Ok(())
}

fn check_not_negative(field: &str, value: Decimal) -> Result<()> {
    if value.is_sign_negative() && !value.is_zero() {
        return Err(Error::bad_request(format!("{field} must not be negative")));
    }
    Ok(())
}

/// Applies a partial update to agreement service `id`: 404 when it does not exist, 400 for
/// a field that breaks a rule (nothing is applied then).
pub fn update(tx: &Transaction<'_>, id: i64, patch: &Patch, tz: Tz) -> Result<()> {
    let start: Option<String> = tx
        .query_row(
            "SELECT start_date FROM agreement_services WHERE id = ?1",
            [id],
            |r| r.get(0),
        )
        .map(Some)
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            other => Err(other),
        })?;
    let Some(start) = start else {
        return Err(Error::not_found(format!(
            "agreement service {id} does not exist"
        )));
    };
    if let Some(given) = &patch.id {
        if given.value("id")? != id {
            return Err(Error::bad_request(format!(
                "id in the body does not match the agreement service {id} of the path"
            )));
        }
    }
    let mut sets: Vec<(&str, SqlValue)> = Vec::new();
    let flag = |v: bool| SqlValue::Integer(i64::from(v));
    let text = |v: &Option<String>| v.clone().map_or(SqlValue::Null, SqlValue::Text);
    if let Some(v) = patch.next_service_pay_on_purchase {
        sets.push(("next_service_pay_on_purchase", flag(v)));
    }
    if let Some(v) = patch.accumulated_charges_amount {
        check_not_negative("accumulated_charges_amount", v)?;
        sets.push(("accumulated_charges_amount", SqlValue::Text(canonical(v))));
    }
    if let Some(r) = &patch.agreement {
        let agreement = r.id.value("agreement")?;
        require_reference(tx, "agreements", "agreement", agreement)?;
        let period: i64 = tx.query_row(
            "SELECT agreement_period FROM agreements WHERE id = ?1",
            [agreement],
            |r| r.get(0),
        )?;
        sets.push(("agreement_id", SqlValue::Integer(agreement)));
        sets.push(("agreement_period", SqlValue::Integer(period)));
    }
    if let Some(v) = &patch.end_date {
        let end = v
            .as_deref()
            .map(|t| parse_time("end_date", t, tz))
            .transpose()?;
        if end.as_deref().is_some_and(|e| e < start.as_str()) {
            return Err(Error::bad_request("end_date must not be before start_date"));
        }
        sets.push(("end_date", text(&end)));
    }
    for (column, value) in [
        ("end_action", &patch.end_action),
        ("next_end_action", &patch.next_end_action),
    ] {
        if let Some(v) = value {
            if let Some(t) = v {
                check_text(column, t)?;
            }
            sets.push((column, text(v)));
        }
    }
    for (column, field, table, value) in [
        (
            "next_agreement_id",
            "next_agreement",
            "agreements",
            &patch.next_agreement,
        ),
        (
            "next_service_product_id",
            "next_service_product",
            "products",
            &patch.next_service_product,
        ),
        (
            "next_service_product_price_id",
            "next_service_product_price",
            "product_prices",
            &patch.next_service_product_price,
        ),
    ] {
        if let Some(v) = value {
            let target = match v {
                Some(r) => {
                    let target = r.id.value(field)?;
                    require_reference(tx, table, field, target)?;
                    SqlValue::Integer(target)
                }
                None => SqlValue::Null,
            };
            sets.push((column, target));
        }
    }
    if let Some(v) = patch.preserve_service_price {
        sets.push(("preserve_service_price", flag(v)));
    }
    if let Some(v) = patch.next_preserve_service_price {
        sets.push(("next_preserve_service_price", flag(v)));
    }
    if let Some(v) = patch.omit_minimum_amount {
        sets.push(("omit_minimum_amount", flag(v)));
    }
    if let Some(v) = &patch.minimum_amount {
        if let Some(d) = v {
            check_not_negative("minimum_amount", *d)?;
        }
        sets.push((
            "minimum_amount",
            v.map_or(SqlValue::Null, |d| SqlValue::Text(canonical(d))),
        ));
    }
    if let Some(v) = &patch.minimum_amount_currency_code {
        if let Some(c) = v {
            check_currency("minimum_amount_currency_code", c)?;
        }
        sets.push(("minimum_amount_currency_code", text(v)));
    }
    if !sets.is_empty() {
        let assignments: Vec<String> = sets.iter().map(|(c, _)| format!("{c} = ?")).collect();
        let mut values: Vec<SqlValue> = sets.into_iter().map(|(_, v)| v).collect();
        values.push(SqlValue::Integer(id));
        tx.execute(
            &format!(
                "UPDATE agreement_services SET {} WHERE id = ?",
                assignments.join(", ")
            ),
            rusqlite::params_from_iter(values.iter()),
        )?;
    }
    check_price_matches_product(tx, id)?;
    if let Some(types) = &patch.true_up_charge_types {
        replace_true_up_types(tx, id, types)?;
    }
    Ok(())
}

/// A next price must be a price of the next product (when both are set).
fn check_price_matches_product(tx: &Transaction<'_>, id: i64) -> Result<()> {
    let mismatch = tx
        .prepare_cached(
            "SELECT 1 FROM agreement_services s JOIN product_prices pp
               ON pp.id = s.next_service_product_price_id
             WHERE s.id = ?1 AND s.next_service_product_id IS NOT NULL
               AND pp.product_id <> s.next_service_product_id",
        )?
        .exists([id])?;
    if mismatch {
        return Err(Error::bad_request(
            "next_service_product_price must be a price of next_service_product",
        ));
    }
    Ok(())
}

/// Makes the agreement service's true-up charge types exactly `types` (duplicates collapse).
fn replace_true_up_types(tx: &Transaction<'_>, id: i64, types: &[String]) -> Result<()> {
    if types.len() > MAX_NESTED {
        return Err(Error::bad_request(format!(
            "true_up_charge_types: at most {MAX_NESTED} values are allowed"
        )));
    }
    for t in types {
        check_text("true_up_charge_types", t)?;
    }
    let existing: Vec<String> = tx
        .prepare_cached(
            "SELECT true_up_charge_type FROM true_up_charge_type_relations WHERE agreement_service_id = ?1",
        )?
        .query_map([id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for old in existing.iter().filter(|o| !types.contains(o)) {
        tx.execute(
            "DELETE FROM true_up_charge_type_relations WHERE agreement_service_id = ?1 AND true_up_charge_type = ?2",
            rusqlite::params![id, old],
        )?;
    }
    let mut added: Vec<&String> = Vec::new();
    for t in types {
        if !existing.contains(t) && !added.contains(&t) {
            shared::domain::agreements::create_true_up_relation(tx, id, t)?;
            added.push(t);
        }
    }
    Ok(())
}

/// The id reference of an agreement service (for relations).
pub fn reference(id: i64) -> IdRef {
    IdRef { id: id_text(id) }
}
