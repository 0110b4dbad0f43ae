//! Services (a product sold to an account under an agreement), their agreement services,
//! service resource identifiers (SRIDs) and monthly billing periods: creation, and the
//! partial update of an agreement service (Surface B's PUT) with its rules.

use super::true_ups::{create_true_up_relation, replace_true_up_charge_types};
use super::{check_text, AgreementServiceStatus, ResourceStatus};
use crate::domain::{check_currency, insert, parse_opt_time, parse_time, require};
use crate::money::canonical;
use crate::{Error, Result};
use chrono::{Datelike, Months};
use chrono_tz::Tz;
use rusqlite::types::Value as SqlValue;
use rusqlite::Transaction;
use rust_decimal::Decimal;
use serde::Deserialize;

/// Agreement service statuses whose end date is still ahead of them.
pub const LIVE_SERVICE_STATUSES: &[&str] = &[
    AgreementServiceStatus::Active.as_str(),
    AgreementServiceStatus::Suspended.as_str(),
    AgreementServiceStatus::Trial.as_str(),
];

/// How many monthly billing periods a new service gets.
pub const SERVICE_PERIOD_MONTHS: u32 = 36;

/// A service resource identifier, with optional children.
#[derive(Debug, Clone, Deserialize)]
pub struct NewServiceResource {
    /// The identifier usage events carry.
    pub identifier: String,
    /// ACTIVE or INACTIVE.
    pub status: Option<String>,
    /// Child identifiers below this one.
    #[serde(default)]
    pub children: Vec<String>,
}

/// A service (a product sold to an account) with its agreement service and SRIDs.
#[derive(Debug, Clone, Deserialize)]
pub struct NewService {
    /// Explicit id (seed data only); the agreement service gets the same id.
    pub id: Option<i64>,
    /// The account the product is sold to.
    pub billing_account_id: i64,
    /// The product sold.
    pub product_id: i64,
    /// The agreement the service is under.
    pub agreement_id: i64,
    /// Agreement service status, one of [`AGREEMENT_SERVICE_STATUSES`].
    pub status: Option<String>,
    /// Start (date or date-time).
    pub start_date: String,
    /// End (date or date-time).
    pub end_date: Option<String>,
    /// End action.
    pub end_action: Option<String>,
    /// Minimum amount.
    #[serde(default, deserialize_with = "crate::money::deserialize_opt_number")]
    pub minimum_amount: Option<Decimal>,
    /// Currency of the minimum amount.
    pub minimum_amount_currency_code: Option<String>,
    /// The SRIDs of the service.
    #[serde(default)]
    pub resources: Vec<NewServiceResource>,
    /// True-up charge types.
    #[serde(default)]
    pub true_up_charge_types: Vec<String>,
}

/// Creates a service, its agreement service, its SRIDs and its monthly billing periods.
/// Answers the agreement service id.
pub fn create_service(tx: &Transaction<'_>, s: &NewService, tz: Tz) -> Result<i64> {
    require(
        tx,
        "billing_accounts",
        "billing account",
        s.billing_account_id,
    )?;
    require(tx, "products", "product", s.product_id)?;
    require(tx, "agreements", "agreement", s.agreement_id)?;
    let status = match &s.status {
        Some(text) => AgreementServiceStatus::parse_field("status", text)?,
        None => AgreementServiceStatus::Active,
    };
    if let Some(c) = &s.minimum_amount_currency_code {
        check_currency("minimum_amount_currency_code", c)?;
    }
    let start = parse_time("start_date", &s.start_date, tz)?;
    let end = parse_opt_time("end_date", &s.end_date, tz)?;
    check_end_not_before_start(&start, end.as_deref())?;
    let service_status = if status == AgreementServiceStatus::Active {
        ResourceStatus::Active
    } else {
        ResourceStatus::Inactive
    };
    let service_id = insert(
        tx,
        "services",
        &[
            ("id", &s.id),
            ("billing_account_id", &s.billing_account_id),
            ("product_id", &s.product_id),
            ("status", &service_status),
            ("start_date", &start),
            ("end_date", &end),
        ],
    )?;
    // The service runs for its agreement's term (the column's default, 12, was every
    // service's before, whatever its agreement said).
    let months = super::term_months(tx, s.agreement_id)?;
    let agreement_service_id = insert(
        tx,
        "agreement_services",
        &[
            ("id", &s.id),
            ("service_id", &service_id),
            ("agreement_id", &s.agreement_id),
            ("agreement_period", &months),
            ("status", &status),
            ("start_date", &start),
            ("end_date", &end),
            ("end_action", &s.end_action),
            ("minimum_amount", &s.minimum_amount.map(canonical)),
            (
                "minimum_amount_currency_code",
                &s.minimum_amount_currency_code,
            ),
        ],
    )?;
    for r in &s.resources {
        let parent =
            create_service_resource(tx, service_id, &r.identifier, r.status.as_deref(), None)?;
        for child in &r.children {
            create_service_resource(tx, service_id, child, r.status.as_deref(), Some(parent))?;
        }
    }
    for t in &s.true_up_charge_types {
        create_true_up_relation(tx, agreement_service_id, t)?;
    }
    create_service_periods(tx, service_id, &start, tz)?;
    Ok(agreement_service_id)
}

/// The one rule on a service's term, for its create (a fixture document) and Surface B's
/// update: an end (a stored instant) is not before the start. 400 naming `end_date`.
fn check_end_not_before_start(start: &str, end: Option<&str>) -> Result<()> {
    if end.is_some_and(|e| e < start) {
        return Err(Error::bad_request(
            "end_date: must not be before start_date",
        ));
    }
    Ok(())
}

fn create_service_resource(
    tx: &Transaction<'_>,
    service_id: i64,
    identifier: &str,
    status: Option<&str>,
    parent_id: Option<i64>,
) -> Result<i64> {
    if identifier.is_empty() || identifier.chars().count() > 255 {
        return Err(Error::bad_request(
            "service_resource_identifier must be 1 to 255 characters",
        ));
    }
    let status = match status {
        Some(text) => ResourceStatus::parse_field("resource status", text)?,
        None => ResourceStatus::Active,
    };
    insert(
        tx,
        "service_resources",
        &[
            ("service_id", &service_id),
            ("identifier", &identifier),
            ("parent_id", &parent_id),
            ("status", &status),
        ],
    )
}

/// Monthly billing periods from the service start, aligned on the start's local day.
fn create_service_periods(
    tx: &Transaction<'_>,
    service_id: i64,
    start: &str,
    tz: Tz,
) -> Result<()> {
    let Some(start) = crate::time::from_storage(start) else {
        return Err(Error::Internal(format!(
            "stored start '{start}' unreadable"
        )));
    };
    let local = start.with_timezone(&tz);
    // Anchor on the first of the start's month so that every period is a calendar month.
    let Some(first) = local
        .date_naive()
        .with_day(1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
    else {
        return Err(Error::Internal("cannot anchor service periods".into()));
    };
    for i in 0..SERVICE_PERIOD_MONTHS {
        let from = first.checked_add_months(Months::new(i));
        let to = first.checked_add_months(Months::new(i + 1));
        let (Some(from), Some(to)) = (from, to) else {
            break;
        };
        // Wall-clock midnights in the tenant's zone, as a client's "YYYY-MM-DDT00:00:00"
        // would be read (`time::local_to_storage`), without a text round trip per period:
        // a new service's 36 periods were most of the time of seeding a demo tenant.
        let (Some(from), Some(to)) = (
            crate::time::local_to_storage(from, tz),
            crate::time::local_to_storage(to, tz),
        ) else {
            return Err(Error::bad_request(format!(
                "service periods from {start}: a period leaves years {}..{}",
                crate::time::MIN_YEAR,
                crate::time::MAX_YEAR
            )));
        };
        insert(
            tx,
            "service_periods",
            &[
                ("service_id", &service_id),
                ("start_date", &from),
                ("end_date", &to),
            ],
        )?;
    }
    Ok(())
}

/// A partial update of an agreement service: `None` leaves a field as it is; for nullable
/// fields `Some(None)` clears it. References are ids; each must exist (400 otherwise: the
/// path names the record, the body only refers).
#[derive(Debug, Clone, Default)]
pub struct AgreementServiceUpdate {
    /// Pay the next service on purchase.
    pub next_service_pay_on_purchase: Option<bool>,
    /// Accumulated charges (not negative).
    pub accumulated_charges_amount: Option<Decimal>,
    /// The agreement (another agreement's period is copied onto the service; the current
    /// one changes nothing).
    pub agreement_id: Option<i64>,
    /// End (date or date-time, not before the start).
    pub end_date: Option<Option<String>>,
    /// End action (1 to 255 characters).
    pub end_action: Option<Option<String>>,
    /// The agreement that follows.
    pub next_agreement_id: Option<Option<i64>>,
    /// End action of the next agreement (1 to 255 characters).
    pub next_end_action: Option<Option<String>>,
    /// The product that follows.
    pub next_service_product_id: Option<Option<i64>>,
    /// The price that follows (a price of the next product).
    pub next_service_product_price_id: Option<Option<i64>>,
    /// Preserve the service price.
    pub preserve_service_price: Option<bool>,
    /// Preserve the service price on the next agreement.
    pub next_preserve_service_price: Option<bool>,
    /// Minimum amount (not negative).
    pub minimum_amount: Option<Option<Decimal>>,
    /// Currency of the minimum amount.
    pub minimum_amount_currency_code: Option<Option<String>>,
    /// Omit the minimum amount.
    pub omit_minimum_amount: Option<bool>,
    /// The true-up charge types, replacing the current ones (duplicates collapse).
    pub true_up_charge_types: Option<Vec<String>>,
}

/// Fails with 400 naming `field` unless `table` has a row `id` (a reference in a body).
fn require_reference(tx: &Transaction<'_>, table: &str, field: &str, id: i64) -> Result<()> {
    require(tx, table, field, id).map_err(|e| match e {
        Error::NotFound(_) => Error::bad_request(format!("{field}: {id} does not exist")),
        other => other,
    })
}

fn check_not_negative(field: &str, value: Decimal) -> Result<()> {
    if value.is_sign_negative() && !value.is_zero() {
        return Err(Error::bad_request(format!("{field} must not be negative")));
    }
    Ok(())
}

/// Applies a partial update to agreement service `id`: 404 when it does not exist, 400 for
/// a field that breaks a rule (nothing is applied then: the caller's transaction rolls
/// back).
pub fn update_agreement_service(
    tx: &Transaction<'_>,
    id: i64,
    update: &AgreementServiceUpdate,
    tz: Tz,
) -> Result<()> {
    require(tx, "agreement_services", "agreement service", id)?;
    let (start, current_agreement): (String, i64) = tx.query_row(
        "SELECT start_date, agreement_id FROM agreement_services WHERE id = ?1",
        [id],
        |r| r.try_into(),
    )?;
    let mut sets: Vec<(&str, SqlValue)> = Vec::new();
    let flag = |v: bool| SqlValue::Integer(i64::from(v));
    let text = |v: &Option<String>| v.clone().map_or(SqlValue::Null, SqlValue::Text);
    if let Some(v) = update.next_service_pay_on_purchase {
        sets.push(("next_service_pay_on_purchase", flag(v)));
    }
    if let Some(v) = update.accumulated_charges_amount {
        check_not_negative("accumulated_charges_amount", v)?;
        sets.push(("accumulated_charges_amount", SqlValue::Text(canonical(v))));
    }
    // Naming the service's own agreement again (a client writing back what it read) is no
    // change: only a move to another agreement brings that agreement's period.
    if let Some(agreement) = update.agreement_id.filter(|a| *a != current_agreement) {
        require_reference(tx, "agreements", "agreement", agreement)?;
        let period = super::term_months(tx, agreement)?.unwrap_or(12);
        sets.push(("agreement_id", SqlValue::Integer(agreement)));
        sets.push(("agreement_period", SqlValue::Integer(period)));
    }
    if let Some(v) = &update.end_date {
        let end = parse_opt_time("end_date", v, tz)?;
        check_end_not_before_start(&start, end.as_deref())?;
        sets.push(("end_date", text(&end)));
    }
    for (column, value) in [
        ("end_action", &update.end_action),
        ("next_end_action", &update.next_end_action),
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
            update.next_agreement_id,
        ),
        (
            "next_service_product_id",
            "next_service_product",
            "products",
            update.next_service_product_id,
        ),
        (
            "next_service_product_price_id",
            "next_service_product_price",
            "product_prices",
            update.next_service_product_price_id,
        ),
    ] {
        if let Some(v) = value {
            if let Some(target) = v {
                require_reference(tx, table, field, target)?;
            }
            sets.push((column, v.map_or(SqlValue::Null, SqlValue::Integer)));
        }
    }
    if let Some(v) = update.preserve_service_price {
        sets.push(("preserve_service_price", flag(v)));
    }
    if let Some(v) = update.next_preserve_service_price {
        sets.push(("next_preserve_service_price", flag(v)));
    }
    if let Some(v) = update.omit_minimum_amount {
        sets.push(("omit_minimum_amount", flag(v)));
    }
    if let Some(v) = &update.minimum_amount {
        if let Some(d) = v {
            check_not_negative("minimum_amount", *d)?;
        }
        sets.push((
            "minimum_amount",
            v.map_or(SqlValue::Null, |d| SqlValue::Text(canonical(d))),
        ));
    }
    if let Some(v) = &update.minimum_amount_currency_code {
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
    if let Some(types) = &update.true_up_charge_types {
        replace_true_up_charge_types(tx, id, types)?;
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

/// Ends agreement service `id` at the end of its term (an end action other than RENEW):
/// DEACTIVATED, and its service `service_id` and the service's resources INACTIVE when no
/// other live agreement service holds that service.
pub(crate) fn end_term(tx: &Transaction<'_>, id: i64, service_id: i64) -> Result<()> {
    tx.execute(
        "UPDATE agreement_services SET status = ?2 WHERE id = ?1",
        rusqlite::params![id, AgreementServiceStatus::Deactivated],
    )?;
    let live = crate::domain::status::sql_list(LIVE_SERVICE_STATUSES);
    let others_live = format!(
        "EXISTS (SELECT 1 FROM agreement_services WHERE service_id = ?1 AND status IN ({live}))"
    );
    tx.execute(
        &format!("UPDATE services SET status = ?2 WHERE id = ?1 AND NOT {others_live}"),
        rusqlite::params![service_id, ResourceStatus::Inactive],
    )?;
    tx.execute(
        &format!(
            "UPDATE service_resources SET status = ?2 WHERE service_id = ?1 AND NOT {others_live}"
        ),
        rusqlite::params![service_id, ResourceStatus::Inactive],
    )?;
    Ok(())
}

/// Starts a new term of agreement service `id` (end action RENEW): it ends at `new_end`
/// after `months`, is renewed, and its planned next agreement, end action and
/// preserve-price flag take effect and are cleared.
pub(crate) fn renew_term(tx: &Transaction<'_>, id: i64, new_end: &str, months: u32) -> Result<()> {
    tx.execute(
        "UPDATE agreement_services SET end_date = ?2, renewed = 1,
             agreement_id = COALESCE(next_agreement_id, agreement_id),
             agreement_period = ?3,
             end_action = CASE WHEN next_end_action IS NOT NULL THEN next_end_action ELSE end_action END,
             preserve_service_price = CASE WHEN next_agreement_id IS NOT NULL
                 THEN next_preserve_service_price ELSE preserve_service_price END,
             next_agreement_id = NULL, next_end_action = NULL
         WHERE id = ?1",
        rusqlite::params![id, new_end, i64::from(months)],
    )?;
    Ok(())
}

/// Records that service `service`'s recurring prices are billed in advance up to the stored
/// instant `to` (exclusive; the migration `0016_recurring_billed_to` says who reads it).
pub(crate) fn mark_recurring_billed(tx: &Transaction<'_>, service: i64, to: &str) -> Result<()> {
    tx.prepare_cached("UPDATE services SET recurring_billed_to = ?1 WHERE id = ?2")?
        .execute(rusqlite::params![to, service])?;
    Ok(())
}

/// Records that the one-time prices of `services` were billed at the stored instant `at`
/// (the first billing only: a later one keeps the first instant).
pub(crate) fn mark_one_time_billed(tx: &Transaction<'_>, services: &[i64], at: &str) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "UPDATE services SET one_time_billed_at = ?1 WHERE id = ?2 AND one_time_billed_at IS NULL",
    )?;
    for service in services {
        stmt.execute(rusqlite::params![at, service])?;
    }
    Ok(())
}

/// The lifecycle state an agreement service accumulates over its life (renewals, charges,
/// next-term choices), which no create sets: the demo data's generated services take it.
pub(crate) struct ServiceHistory {
    pub(crate) renewed: bool,
    pub(crate) accumulated_charges_amount: Decimal,
    pub(crate) next_service_pay_on_purchase: bool,
    pub(crate) preserve_service_price: bool,
    pub(crate) next_preserve_service_price: bool,
    pub(crate) omit_minimum_amount: bool,
    pub(crate) next_agreement_id: Option<i64>,
    pub(crate) next_end_action: Option<String>,
    pub(crate) next_service_product_id: Option<i64>,
}

/// Gives agreement service `id` the lifecycle state `h`.
pub(crate) fn set_history(tx: &Transaction<'_>, id: i64, h: &ServiceHistory) -> Result<()> {
    if let Some(action) = &h.next_end_action {
        check_text("next_end_action", action)?;
    }
    tx.execute(
        "UPDATE agreement_services SET renewed = ?2, accumulated_charges_amount = ?3,
            next_service_pay_on_purchase = ?4, preserve_service_price = ?5,
            next_preserve_service_price = ?6, omit_minimum_amount = ?7,
            next_agreement_id = ?8, next_end_action = ?9, next_service_product_id = ?10
         WHERE id = ?1",
        rusqlite::params![
            id,
            h.renewed,
            canonical(h.accumulated_charges_amount),
            h.next_service_pay_on_purchase,
            h.preserve_service_price,
            h.next_preserve_service_price,
            h.omit_minimum_amount,
            h.next_agreement_id,
            h.next_end_action,
            h.next_service_product_id,
        ],
    )?;
    Ok(())
}
