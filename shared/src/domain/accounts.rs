//! Billing account categories, bill cycles and billing accounts.

use super::{check_currency, check_enum, insert, parse_opt_time, require};
use crate::money::canonical;
use crate::Result;
use chrono_tz::Tz;
use rusqlite::Transaction;
use rust_decimal::Decimal;
use serde::Deserialize;

/// Statuses of a billing account category.
pub const CATEGORY_STATUSES: &[&str] = &[
    "BA_CATEGORY_ACTIVE",
    "BA_CATEGORY_SUSPENDED",
    "BA_CATEGORY_CANCELED",
];
/// Statuses of a billing account.
pub const ACCOUNT_STATUSES: &[&str] = &[
    "ACTIVE",
    "SUSPENDED",
    "PENDING",
    "COLLECTION",
    "DEACTIVATED",
    "FINAL_BILL",
    "CLOSED",
];
/// Bill delivery types.
pub const BILL_TYPES: &[&str] = &["PAPER", "EMAIL", "PAPER_EMAIL", "NONE"];

/// A billing account category to create.
#[derive(Debug, Clone, Deserialize)]
pub struct NewCategory {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// Display name.
    pub name: String,
    /// Free-form type.
    pub r#type: Option<String>,
    /// Required description.
    pub description: String,
    /// One of [`CATEGORY_STATUSES`].
    pub status: String,
    /// Conversion currency, when the category converts.
    pub conversion_currency: Option<String>,
}

/// Creates a billing account category.
pub fn create_category(tx: &Transaction<'_>, c: &NewCategory) -> Result<i64> {
    check_enum("status", &c.status, CATEGORY_STATUSES)?;
    if let Some(cur) = &c.conversion_currency {
        check_currency("conversionCurrencyType", cur)?;
    }
    insert(
        tx,
        "billing_account_categories",
        &[
            ("id", &c.id),
            ("name", &c.name),
            ("type", &c.r#type),
            ("description", &c.description),
            ("status", &c.status),
            ("conversion_currency", &c.conversion_currency),
        ],
    )
}

/// A bill cycle to create.
#[derive(Debug, Clone, Deserialize)]
pub struct NewBillCycle {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// Display name.
    pub name: String,
    /// Day of month the cycle bills on.
    pub day_of_month: i64,
}

/// Creates a bill cycle.
pub fn create_bill_cycle(tx: &Transaction<'_>, c: &NewBillCycle) -> Result<i64> {
    if !(1..=28).contains(&c.day_of_month) {
        return Err(crate::Error::bad_request("day_of_month must be 1..28"));
    }
    insert(
        tx,
        "bill_cycles",
        &[
            ("id", &c.id),
            ("name", &c.name),
            ("day_of_month", &c.day_of_month),
        ],
    )
}

/// A billing account to create.
#[derive(Debug, Clone, Deserialize)]
pub struct NewAccount {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// Unique account number.
    pub account_num: String,
    /// The customer's own number for the account.
    pub external_account_num: Option<String>,
    /// Display name.
    pub name: String,
    /// Category id.
    pub billing_account_category_id: Option<i64>,
    /// Bill cycle id.
    pub bill_cycle_id: Option<i64>,
    /// One of [`BILL_TYPES`], default PAPER.
    pub bill_type: Option<String>,
    /// Pays automatically.
    #[serde(default)]
    pub automatic_recurring_payment: bool,
    /// One of [`ACCOUNT_STATUSES`], default ACTIVE.
    pub status: Option<String>,
    /// Account currency, default USD.
    pub currency_code: Option<String>,
    /// Tax exempt.
    #[serde(default)]
    pub tax_exempt: bool,
    /// Start date (date or date-time).
    pub start_date: Option<String>,
}

/// Creates a billing account; the account number must be unused.
pub fn create_account(tx: &Transaction<'_>, a: &NewAccount, tz: Tz) -> Result<i64> {
    let bill_type = a.bill_type.clone().unwrap_or_else(|| "PAPER".into());
    check_enum("billType", &bill_type, BILL_TYPES)?;
    let status = a.status.clone().unwrap_or_else(|| "ACTIVE".into());
    check_enum("status", &status, ACCOUNT_STATUSES)?;
    let currency = a.currency_code.clone().unwrap_or_else(|| "USD".into());
    check_currency("currencyType", &currency)?;
    if a.account_num.trim().is_empty() {
        return Err(crate::Error::bad_request("accountNum must not be empty"));
    }
    let taken = tx
        .prepare_cached("SELECT 1 FROM billing_accounts WHERE account_num = ?1")?
        .exists([&a.account_num])?;
    if taken {
        return Err(crate::Error::conflict(format!(
            "a billing account with accountNum '{}' already exists",
            a.account_num
        )));
    }
    if let Some(id) = a.billing_account_category_id {
        require(
            tx,
            "billing_account_categories",
            "billing account category",
            id,
        )?;
    }
    if let Some(id) = a.bill_cycle_id {
        require(tx, "bill_cycles", "bill cycle", id)?;
    }
    let start = parse_opt_time("startDate", &a.start_date, tz)?;
    let zero = canonical(Decimal::ZERO);
    insert(
        tx,
        "billing_accounts",
        &[
            ("id", &a.id),
            ("account_num", &a.account_num),
            ("external_account_num", &a.external_account_num),
            ("name", &a.name),
            (
                "billing_account_category_id",
                &a.billing_account_category_id,
            ),
            ("bill_cycle_id", &a.bill_cycle_id),
            ("bill_type", &bill_type),
            (
                "automatic_recurring_payment",
                &a.automatic_recurring_payment,
            ),
            ("status", &status),
            ("balance", &zero),
            ("pending_charges_total", &zero),
            ("currency_code", &currency),
            ("tax_exempt", &a.tax_exempt),
            ("start_date", &start),
        ],
    )
}

/// Counts billing accounts (used by tests and the admin summary).
pub fn count_accounts(conn: &rusqlite::Connection) -> Result<i64> {
    Ok(conn.query_row("SELECT COUNT(*) FROM billing_accounts", [], |r| r.get(0))?)
}
