//! Agreements and what hangs off them, one module per business object: agreements here,
//! services sold under an agreement with their agreement services, SRIDs and billing
//! periods in [`services`] (with the partial update of an agreement service), and the
//! true-up charge type relations of an agreement service in [`true_ups`]. Every write of
//! every surface and of the seed goes through these functions: this module is the one
//! writer of agreements, services, agreement services, SRIDs, billing periods and true-up
//! relations (the clock ends and renews terms, bill runs mark one-time prices billed, by
//! calling it).

mod services;

#[cfg(test)]
mod tests;
mod true_ups;

pub use services::{
    create_service, update_agreement_service, AgreementServiceUpdate, NewService,
    NewServiceResource, LIVE_SERVICE_STATUSES, SERVICE_PERIOD_MONTHS,
};
pub(crate) use services::{
    end_term, mark_one_time_billed, mark_recurring_billed, renew_term, set_history, ServiceHistory,
};
pub use true_ups::{
    add_true_up_charge_type, create_true_up_relation, delete_true_up_relation,
    replace_true_up_charge_types,
};

use super::status::status_enum;
use super::{check_currency, check_enum, insert, parse_opt_time, require};
use crate::money::canonical;
use crate::{Error, Result};
use chrono_tz::Tz;
use rusqlite::{OptionalExtension, Transaction};
use rust_decimal::Decimal;
use serde::Deserialize;

status_enum! {
    /// The status of an agreement.
    pub enum AgreementStatus {
        /// Offered.
        Active = "ACTIVE",
        /// Withdrawn.
        Inactive = "INACTIVE",
    }
}
/// Statuses of an agreement ([`AgreementStatus`]'s names).
pub const AGREEMENT_STATUSES: &[&str] = AgreementStatus::NAMES;
/// Units of an agreement's period.
pub const AGREEMENT_PERIOD_TYPES: &[&str] = &["MONTH", "YEAR"];
status_enum! {
    /// The status of a service resource (an SRID), and of the service that carries it:
    /// ACTIVE from its creation by an ACTIVE agreement service until no live agreement
    /// service holds the service any more.
    pub enum ResourceStatus {
        /// In use: its usage is rated (when its agreement service is rateable).
        Active = "ACTIVE",
        /// Out of use.
        Inactive = "INACTIVE",
    }
}
/// Statuses of a service resource (an SRID) ([`ResourceStatus`]'s names).
pub const RESOURCE_STATUSES: &[&str] = ResourceStatus::NAMES;
status_enum! {
    /// The status of an agreement service.
    pub enum AgreementServiceStatus {
        /// In service.
        Active = "ACTIVE",
        /// Held for a while.
        Suspended = "SUSPENDED",
        /// Ended (at the end of its term, without renewal).
        Deactivated = "DEACTIVATED",
        /// Not started.
        Pending = "PENDING",
        /// Canceled before it started.
        Canceled = "CANCELED",
        /// Moved to another account.
        Transferred = "TRANSFERRED",
        /// Replaced by another service.
        Replaced = "REPLACED",
        /// On trial.
        Trial = "TRIAL",
        /// Starts later.
        Scheduled = "SCHEDULED",
    }
}
/// Statuses of an agreement service ([`AgreementServiceStatus`]'s names).
pub const AGREEMENT_SERVICE_STATUSES: &[&str] = AgreementServiceStatus::NAMES;
/// Longest free-text value of an agreement service (end actions, true-up charge types).
pub const MAX_TEXT_CHARS: usize = 255;

/// Checks a free-text value: 1 to [`MAX_TEXT_CHARS`] characters, not blank.
fn check_text(field: &str, value: &str) -> Result<()> {
    if value.trim().is_empty() || value.chars().count() > MAX_TEXT_CHARS {
        return Err(Error::bad_request(format!(
            "{field} must be 1 to {MAX_TEXT_CHARS} characters"
        )));
    }
    Ok(())
}

/// An agreement to create.
#[derive(Debug, Clone, Deserialize)]
pub struct NewAgreement {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// Display name.
    pub name: String,
    /// Length of the agreement in `agreement_period_type` units; absent: the tenant policy's
    /// `default_agreement_months` ([`default_period`]).
    #[serde(default)]
    pub agreement_period: Option<i64>,
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

/// The period of an agreement that states none, in units of `period_type`: the tenant
/// policy's `default_agreement_months` (12 unless the tenant chose), in whole years (at
/// least 1) for a YEAR agreement.
pub fn default_period(tx: &Transaction<'_>, period_type: &str) -> Result<i64> {
    let months = super::policy::get(tx)?.default_agreement_months;
    Ok(if period_type == "YEAR" {
        (months / 12).max(1)
    } else {
        months
    })
}

/// The term of agreement `id` in months (its period, times 12 for a YEAR agreement): what a
/// service on it runs for before its end action, and what a renewal onto it adds.
pub fn term_months(conn: &rusqlite::Connection, id: i64) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached(
            "SELECT CASE agreement_period_type WHEN 'YEAR' THEN agreement_period * 12
                    ELSE agreement_period END
             FROM agreements WHERE id = ?1",
        )?
        .query_row([id], |r| r.get(0))
        .optional()?)
}

/// Creates an agreement and links its products.
pub fn create_agreement(tx: &Transaction<'_>, a: &NewAgreement, tz: Tz) -> Result<i64> {
    let status = match &a.status {
        Some(text) => AgreementStatus::parse_field("status", text)?,
        None => AgreementStatus::Active,
    };
    let period_type = a
        .agreement_period_type
        .clone()
        .unwrap_or_else(|| "MONTH".into());
    check_enum(
        "agreement_period_type",
        &period_type,
        AGREEMENT_PERIOD_TYPES,
    )?;
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
    let period = match a.agreement_period {
        Some(p) => p,
        None => default_period(tx, &period_type)?,
    };
    let id = insert(
        tx,
        "agreements",
        &[
            ("id", &a.id),
            ("name", &a.name),
            ("agreement_period", &period),
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

super::fixture_columns_writer!("agreements", "agreement_services", "services");
