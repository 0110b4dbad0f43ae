//! Account adjustments: [`create_adjustment`] records one with its items and applications
//! (the seed and Surface B's records); a credit added by command (Surface A `addAdjustment`)
//! is recorded through it and, when an invoice is named, applied to it as a
//! `standard-invoice` application that pays it down like a payment does.

use super::invoices::{open_invoice_to_pay, settle_invoice};
use super::{check_enum, insert, parse_time, require};
use crate::money::canonical;
use crate::{Error, Result};
use chrono_tz::Tz;
use rusqlite::Transaction;
use rust_decimal::Decimal;
use serde::Deserialize;

/// Adjustment types: a credit lowers the account's balance, a debit raises it.
pub const ADJUSTMENT_TYPES: &[&str] = &["CREDIT", "DEBIT"];
/// Adjustment application types.
pub const ADJUSTMENT_APPLICATION_TYPES: &[&str] = &[
    "standard-invoice",
    "negative-invoice",
    "reversed-invoice",
    "write-off-invoice",
];

/// A credit to add to an account.
#[derive(Debug, Clone)]
pub struct NewCredit {
    /// The account credited.
    pub billing_account_id: i64,
    /// Amount, greater than zero.
    pub amount: Decimal,
    /// Description.
    pub description: Option<String>,
    /// When it occurred (date or date-time); `None` means when it is added: the `now`
    /// [`add_credit`] is given (read from the tenant clock inside its write transaction).
    pub occurred_on: Option<String>,
    /// Reason id.
    pub reason_id: Option<i64>,
    /// An open invoice of the account to apply the credit to.
    pub invoice_id: Option<i64>,
    /// Who posted it.
    pub posted_by: Option<String>,
}

/// What adding a credit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreditOutcome {
    /// The adjustment's id.
    pub adjustment_id: i64,
    /// How much went to the invoice (zero without one).
    pub applied: Decimal,
}

/// Records a credit adjustment at the stored instant `now`, applying as much of it as the
/// named invoice still needs; the rest stays unapplied on the adjustment.
pub fn add_credit(tx: &Transaction<'_>, c: &NewCredit, now: &str, tz: Tz) -> Result<CreditOutcome> {
    require(
        tx,
        "billing_accounts",
        "billing account",
        c.billing_account_id,
    )?;
    if c.amount <= Decimal::ZERO {
        return Err(Error::bad_request("amount must be greater than zero"));
    }
    if let Some(reason) = c.reason_id {
        require(tx, "reasons", "reason", reason)?;
    }
    let applied = match c.invoice_id {
        Some(invoice) => open_invoice_to_pay(tx, invoice, c.billing_account_id)?.min(c.amount),
        None => Decimal::ZERO,
    };
    let applications = match c.invoice_id {
        Some(invoice) if applied > Decimal::ZERO => vec![NewAdjustmentApplication {
            id: None,
            adjustment_application_type: "standard-invoice".into(),
            invoice_id: Some(invoice),
            amount: applied,
            applied_on: now.to_string(),
        }],
        _ => Vec::new(),
    };
    let adjustment_id = create_adjustment(
        tx,
        &NewAdjustment {
            id: None,
            billing_account_id: c.billing_account_id,
            occurred_on: c.occurred_on.clone().unwrap_or_else(|| now.to_string()),
            amount: c.amount,
            description: c.description.clone(),
            invoiced: false,
            status: None,
            adjustment_type: Some("CREDIT".into()),
            reason_id: c.reason_id,
            secondary_reason_id: None,
            posted_by: c.posted_by.clone(),
            manual_invoice_application: c.invoice_id.is_some(),
            items: Vec::new(),
            applications,
        },
        tz,
    )?;
    if let Some(invoice) = c.invoice_id.filter(|_| applied > Decimal::ZERO) {
        settle_invoice(tx, invoice, applied, now)?;
    }
    Ok(CreditOutcome {
        adjustment_id,
        applied,
    })
}

/// An item of an account adjustment.
#[derive(Debug, Clone, Deserialize)]
pub struct NewAdjustmentItem {
    /// Item type.
    pub adjustment_item_type: String,
    /// Amount.
    #[serde(deserialize_with = "crate::money::deserialize_number")]
    pub amount: Decimal,
    /// Description.
    pub description: Option<String>,
    /// Reason text.
    pub reason: Option<String>,
    /// Secondary reason text.
    pub secondary_reason: Option<String>,
    /// Charge category.
    pub charge_category_id: Option<i64>,
}

/// An application of an adjustment to an invoice.
#[derive(Debug, Clone, Deserialize)]
pub struct NewAdjustmentApplication {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// One of [`ADJUSTMENT_APPLICATION_TYPES`].
    pub adjustment_application_type: String,
    /// Invoice applied to.
    pub invoice_id: Option<i64>,
    /// Amount applied.
    #[serde(deserialize_with = "crate::money::deserialize_number")]
    pub amount: Decimal,
    /// When applied.
    pub applied_on: String,
}

/// An account adjustment with items and applications.
#[derive(Debug, Clone, Deserialize)]
pub struct NewAdjustment {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// Account adjusted.
    pub billing_account_id: i64,
    /// When it occurred.
    pub occurred_on: String,
    /// Amount.
    #[serde(deserialize_with = "crate::money::deserialize_number")]
    pub amount: Decimal,
    /// Description.
    pub description: Option<String>,
    /// Already invoiced.
    #[serde(default)]
    pub invoiced: bool,
    /// Status (POSTED, PENDING, ...).
    pub status: Option<String>,
    /// CREDIT or DEBIT.
    pub adjustment_type: Option<String>,
    /// Reason.
    pub reason_id: Option<i64>,
    /// Secondary reason.
    pub secondary_reason_id: Option<i64>,
    /// Posted by (a user name).
    pub posted_by: Option<String>,
    /// Manual invoice application.
    #[serde(default)]
    pub manual_invoice_application: bool,
    /// Items.
    #[serde(default)]
    pub items: Vec<NewAdjustmentItem>,
    /// Applications.
    #[serde(default)]
    pub applications: Vec<NewAdjustmentApplication>,
}

/// Creates an account adjustment with its items and applications; the unapplied amount is
/// what the applications leave of the amount.
pub fn create_adjustment(tx: &Transaction<'_>, a: &NewAdjustment, tz: Tz) -> Result<i64> {
    require(
        tx,
        "billing_accounts",
        "billing account",
        a.billing_account_id,
    )?;
    let adjustment_type = a.adjustment_type.clone().unwrap_or_else(|| "CREDIT".into());
    check_enum("adjustment_type", &adjustment_type, ADJUSTMENT_TYPES)?;
    let occurred = parse_time("occurred_on", &a.occurred_on, tz)?;
    let applied = a.applications.iter().try_fold(Decimal::ZERO, |sum, x| {
        crate::money::checked_add(sum, x.amount, "the sum of the applications' amounts")
    })?;
    let unapplied = crate::money::checked_add(a.amount.abs(), -applied, "the unapplied amount")?
        .max(Decimal::ZERO);
    let id = insert(
        tx,
        "account_adjustments",
        &[
            ("id", &a.id),
            ("billing_account_id", &a.billing_account_id),
            ("occurred_on", &occurred),
            ("amount", &canonical(a.amount)),
            ("description", &a.description),
            ("invoiced", &a.invoiced),
            (
                "status",
                &a.status.clone().unwrap_or_else(|| "POSTED".into()),
            ),
            ("adjustment_type", &adjustment_type),
            ("reason_id", &a.reason_id),
            ("secondary_reason_id", &a.secondary_reason_id),
            ("posted_on", &occurred),
            ("posted_by", &a.posted_by),
            ("manual_invoice_application", &a.manual_invoice_application),
            ("unapplied_amount", &canonical(unapplied)),
        ],
    )?;
    for item in &a.items {
        insert(
            tx,
            "account_adjustment_items",
            &[
                ("adjustment_id", &id),
                ("adjustment_item_type", &item.adjustment_item_type),
                ("amount", &canonical(item.amount)),
                ("description", &item.description),
                ("reason", &item.reason),
                ("secondary_reason", &item.secondary_reason),
                ("charge_category_id", &item.charge_category_id),
            ],
        )?;
    }
    for app in &a.applications {
        check_enum(
            "adjustment_application_type",
            &app.adjustment_application_type,
            ADJUSTMENT_APPLICATION_TYPES,
        )?;
        let applied_on = parse_time("applied_on", &app.applied_on, tz)?;
        insert(
            tx,
            "adjustment_applications",
            &[
                ("id", &app.id),
                ("adjustment_id", &id),
                (
                    "adjustment_application_type",
                    &app.adjustment_application_type,
                ),
                ("invoice_id", &app.invoice_id),
                ("amount", &canonical(app.amount)),
                ("applied_on", &applied_on),
            ],
        )?;
    }
    Ok(id)
}

super::fixture_columns_writer!("account_adjustments");
