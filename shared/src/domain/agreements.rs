//! Agreements, services sold to accounts, agreement services, service resource identifiers
//! (SRIDs), service billing periods and true-up charge type relations.

use super::{check_currency, check_enum, insert, parse_opt_time, parse_time, require};
use crate::money::canonical;
use crate::{Error, Result};
use chrono::{Datelike, Months};
use chrono_tz::Tz;
use rusqlite::Transaction;
use rust_decimal::Decimal;
use serde::Deserialize;

/// Statuses of an agreement service.
pub const AGREEMENT_SERVICE_STATUSES: &[&str] = &[
    "ACTIVE",
    "SUSPENDED",
    "DEACTIVATED",
    "PENDING",
    "CANCELED",
    "TRANSFERRED",
    "REPLACED",
    "TRIAL",
    "SCHEDULED",
];
/// How many monthly billing periods a new service gets.
pub const SERVICE_PERIOD_MONTHS: u32 = 36;

/// An agreement to create.
#[derive(Debug, Clone, Deserialize)]
pub struct NewAgreement {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// Display name.
    pub name: String,
    /// Length of the agreement in `agreement_period_type` units.
    #[serde(default = "twelve")]
    pub agreement_period: i64,
    /// MONTH or YEAR.
    pub agreement_period_type: Option<String>,
    /// ACTIVE or INACTIVE.
    pub status: Option<String>,
    /// Flat termination charge.
    #[serde(default, deserialize_with = "crate::money::deserialize_opt_number")]
    pub termination_flat_charge: Option<Decimal>,
    /// Percentage termination charge.
    #[serde(default, deserialize_with = "crate::money::deserialize_opt_number")]
    pub termination_percentage_charge: Option<Decimal>,
    /// Cap on the termination charge.
    #[serde(default, deserialize_with = "crate::money::deserialize_opt_number")]
    pub max_termination_charge: Option<Decimal>,
    /// Prorate on cancel.
    #[serde(default)]
    pub prorate_on_cancel: bool,
    /// Adjustment category id.
    pub adjustment_category_id: Option<i64>,
    /// What happens at the end (RENEW, END, ...).
    pub end_action: Option<String>,
    /// Currency of the termination fee.
    pub termination_fee_currency_code: Option<String>,
    /// Currency of the termination fee cap.
    pub max_termination_fee_currency_code: Option<String>,
    /// Valid from (date or date-time).
    pub valid_from: Option<String>,
    /// Valid to (date or date-time).
    pub valid_to: Option<String>,
    /// The agreement that follows this one.
    pub next_agreement_id: Option<i64>,
    /// Minimum amount.
    #[serde(default, deserialize_with = "crate::money::deserialize_opt_number")]
    pub minimum_amount: Option<Decimal>,
    /// Currency of the minimum amount.
    pub minimum_amount_currency_type: Option<String>,
    /// Reason used for true-up adjustments.
    pub true_up_adjustment_reason_id: Option<i64>,
    /// Preserve the service price on renewal.
    #[serde(default)]
    pub preserve_service_price: bool,
    /// Products this agreement applies to.
    #[serde(default)]
    pub product_ids: Vec<i64>,
}

fn twelve() -> i64 {
    12
}

/// Creates an agreement and links its products.
pub fn create_agreement(tx: &Transaction<'_>, a: &NewAgreement, tz: Tz) -> Result<i64> {
    let status = a.status.clone().unwrap_or_else(|| "ACTIVE".into());
    check_enum("status", &status, &["ACTIVE", "INACTIVE"])?;
    let period_type = a
        .agreement_period_type
        .clone()
        .unwrap_or_else(|| "MONTH".into());
    check_enum("agreement_period_type", &period_type, &["MONTH", "YEAR"])?;
    for (field, cur) in [
        (
            "termination_fee_currency_code",
            &a.termination_fee_currency_code,
        ),
        (
            "max_termination_fee_currency_code",
            &a.max_termination_fee_currency_code,
        ),
        (
            "minimum_amount_currency_type",
            &a.minimum_amount_currency_type,
        ),
    ] {
        if let Some(c) = cur {
            check_currency(field, c)?;
        }
    }
    if let Some(id) = a.adjustment_category_id {
        require(tx, "charge_categories", "adjustment category", id)?;
    }
    if let Some(id) = a.next_agreement_id {
        require(tx, "agreements", "agreement", id)?;
    }
    if let Some(id) = a.true_up_adjustment_reason_id {
        require(tx, "reasons", "reason", id)?;
    }
    let valid_from = parse_opt_time("valid_from", &a.valid_from, tz)?;
    let valid_to = parse_opt_time("valid_to", &a.valid_to, tz)?;
    let id = insert(
        tx,
        "agreements",
        &[
            ("id", &a.id),
            ("name", &a.name),
            ("agreement_period", &a.agreement_period),
            ("agreement_period_type", &period_type),
            ("status", &status),
            (
                "termination_flat_charge",
                &a.termination_flat_charge.map(canonical),
            ),
            (
                "termination_percentage_charge",
                &a.termination_percentage_charge.map(canonical),
            ),
            (
                "max_termination_charge",
                &a.max_termination_charge.map(canonical),
            ),
            ("prorate_on_cancel", &a.prorate_on_cancel),
            ("adjustment_category_id", &a.adjustment_category_id),
            ("end_action", &a.end_action),
            (
                "termination_fee_currency_code",
                &a.termination_fee_currency_code,
            ),
            (
                "max_termination_fee_currency_code",
                &a.max_termination_fee_currency_code,
            ),
            ("valid_from", &valid_from),
            ("valid_to", &valid_to),
            ("next_agreement_id", &a.next_agreement_id),
            ("minimum_amount", &a.minimum_amount.map(canonical)),
            (
                "minimum_amount_currency_type",
                &a.minimum_amount_currency_type,
            ),
            (
                "true_up_adjustment_reason_id",
                &a.true_up_adjustment_reason_id,
            ),
            ("preserve_service_price", &a.preserve_service_price),
        ],
    )?;
    for product_id in &a.product_ids {
        require(tx, "products", "product", *product_id)?;
        insert(
            tx,
            "agreement_products",
            &[("agreement_id", &id), ("product_id", product_id)],
        )?;
    }
    Ok(id)
}

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
    let status = s.status.clone().unwrap_or_else(|| "ACTIVE".into());
    check_enum("status", &status, AGREEMENT_SERVICE_STATUSES)?;
    if let Some(c) = &s.minimum_amount_currency_code {
        check_currency("minimum_amount_currency_code", c)?;
    }
    let start = parse_time("start_date", &s.start_date, tz)?;
    let end = parse_opt_time("end_date", &s.end_date, tz)?;
    let service_status = if status == "ACTIVE" {
        "ACTIVE"
    } else {
        "INACTIVE"
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
    let agreement_service_id = insert(
        tx,
        "agreement_services",
        &[
            ("id", &s.id),
            ("service_id", &service_id),
            ("agreement_id", &s.agreement_id),
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
    let status = status.unwrap_or("ACTIVE");
    check_enum("resource status", status, &["ACTIVE", "INACTIVE"])?;
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
        let from = parse_time(
            "period start",
            &from.format("%Y-%m-%dT%H:%M:%S").to_string(),
            tz,
        )?;
        let to = parse_time(
            "period end",
            &to.format("%Y-%m-%dT%H:%M:%S").to_string(),
            tz,
        )?;
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

/// Relates a true-up charge type to an agreement service; a pair that exists is a conflict.
pub fn create_true_up_relation(
    tx: &Transaction<'_>,
    agreement_service_id: i64,
    charge_type: &str,
) -> Result<i64> {
    require(
        tx,
        "agreement_services",
        "agreement service",
        agreement_service_id,
    )?;
    if charge_type.trim().is_empty() {
        return Err(Error::bad_request("true_up_charge_type must not be empty"));
    }
    let exists = tx
        .prepare_cached(
            "SELECT 1 FROM true_up_charge_type_relations WHERE agreement_service_id = ?1 AND true_up_charge_type = ?2",
        )?
        .exists(rusqlite::params![agreement_service_id, charge_type])?;
    if exists {
        return Err(Error::conflict(format!(
            "agreement service {agreement_service_id} already has true-up charge type '{charge_type}'"
        )));
    }
    insert(
        tx,
        "true_up_charge_type_relations",
        &[
            ("agreement_service_id", &agreement_service_id),
            ("true_up_charge_type", &charge_type),
        ],
    )
}
