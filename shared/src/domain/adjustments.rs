//! Credit adjustments added to a billing account by command (Surface A `addAdjustment`):
//! recorded through [`super::billing::create_adjustment`], and, when an invoice is named,
//! applied to it as a `standard-invoice` application that pays it down like a payment does.

use super::billing::{create_adjustment, NewAdjustment, NewAdjustmentApplication};
use super::invoices::{open_invoice_to_pay, settle_invoice};
use super::require;
use crate::{Error, Result};
use chrono_tz::Tz;
use rusqlite::Transaction;
use rust_decimal::Decimal;

/// A credit to add to an account.
#[derive(Debug, Clone)]
pub struct NewCredit {
    /// The account credited.
    pub billing_account_id: i64,
    /// Amount, greater than zero.
    pub amount: Decimal,
    /// Description.
    pub description: Option<String>,
    /// When it occurred (date or date-time).
    pub occurred_on: String,
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
            occurred_on: c.occurred_on.clone(),
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
