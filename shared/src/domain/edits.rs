//! Edits of existing billing accounts, billing account categories, invoices and payments.
//! Each edit changes only the fields it carries (`None` keeps the stored value) and checks
//! them with the same rules the create functions apply.

use super::accounts::{BILL_TYPES, CATEGORY_STATUSES};
use super::{check_currency, check_enum, parse_opt_time, require};
use crate::{Error, Result};
use chrono_tz::Tz;
use rusqlite::types::ToSql;
use rusqlite::Transaction;

/// Changes to a billing account. Status changes go through the status commands, and
/// balances through invoices and payments, so neither is here.
#[derive(Debug, Clone, Default)]
pub struct AccountEdit {
    /// New unique account number.
    pub account_num: Option<String>,
    /// The customer's own number.
    pub external_account_num: Option<String>,
    /// Display name.
    pub name: Option<String>,
    /// One of the bill types.
    pub bill_type: Option<String>,
    /// Pays automatically.
    pub automatic_recurring_payment: Option<bool>,
    /// Tax exempt.
    pub tax_exempt: Option<bool>,
    /// Category id.
    pub billing_account_category_id: Option<i64>,
    /// Bill cycle id.
    pub bill_cycle_id: Option<i64>,
    /// Start date (date or date-time).
    pub start_date: Option<String>,
    /// End date (date or date-time).
    pub end_date: Option<String>,
    /// Next invoice date (date or date-time).
    pub next_invoice_date: Option<String>,
}

/// Applies `e` to billing account `id` (404 when unknown, 409 for an account number in use).
pub fn edit_account(tx: &Transaction<'_>, id: i64, e: &AccountEdit, tz: Tz) -> Result<()> {
    require(tx, "billing_accounts", "billing account", id)?;
    if let Some(num) = &e.account_num {
        if num.trim().is_empty() {
            return Err(Error::bad_request("accountNum must not be empty"));
        }
        let taken = tx
            .prepare_cached("SELECT 1 FROM billing_accounts WHERE account_num = ?1 AND id <> ?2")?
            .exists(rusqlite::params![num, id])?;
        if taken {
            return Err(Error::conflict(format!(
                "a billing account with accountNum '{num}' already exists"
            )));
        }
    }
    if let Some(t) = &e.bill_type {
        check_enum("billType", t, BILL_TYPES)?;
    }
    if let Some(c) = e.billing_account_category_id {
        require(
            tx,
            "billing_account_categories",
            "billing account category",
            c,
        )?;
    }
    if let Some(c) = e.bill_cycle_id {
        require(tx, "bill_cycles", "bill cycle", c)?;
    }
    let start = parse_opt_time("startDate", &e.start_date, tz)?;
    let end = parse_opt_time("endDate", &e.end_date, tz)?;
    let next = parse_opt_time("nextInvoiceDate", &e.next_invoice_date, tz)?;
    update(
        tx,
        "billing_accounts",
        id,
        &[
            ("account_num", &e.account_num),
            ("external_account_num", &e.external_account_num),
            ("name", &e.name),
            ("bill_type", &e.bill_type),
            (
                "automatic_recurring_payment",
                &e.automatic_recurring_payment,
            ),
            ("tax_exempt", &e.tax_exempt),
            (
                "billing_account_category_id",
                &e.billing_account_category_id,
            ),
            ("bill_cycle_id", &e.bill_cycle_id),
            ("start_date", &start),
            ("end_date", &end),
            ("next_invoice_date", &next),
        ],
    )
}

/// Changes to a billing account category.
#[derive(Debug, Clone, Default)]
pub struct CategoryEdit {
    /// Display name.
    pub name: Option<String>,
    /// Free-form type.
    pub r#type: Option<String>,
    /// Description (must not become empty).
    pub description: Option<String>,
    /// One of the category statuses.
    pub status: Option<String>,
    /// Conversion currency.
    pub conversion_currency: Option<String>,
}

/// Applies `e` to billing account category `id`.
pub fn edit_category(tx: &Transaction<'_>, id: i64, e: &CategoryEdit) -> Result<()> {
    require(
        tx,
        "billing_account_categories",
        "billing account category",
        id,
    )?;
    if let Some(s) = &e.status {
        check_enum("status", s, CATEGORY_STATUSES)?;
    }
    if let Some(c) = &e.conversion_currency {
        check_currency("conversionCurrencyType", c)?;
    }
    if e.description
        .as_deref()
        .is_some_and(|d| d.trim().is_empty())
    {
        return Err(Error::bad_request("description must not be empty"));
    }
    update(
        tx,
        "billing_account_categories",
        id,
        &[
            ("name", &e.name),
            ("type", &e.r#type),
            ("description", &e.description),
            ("status", &e.status),
            ("conversion_currency", &e.conversion_currency),
        ],
    )
}

/// Changes to an invoice. Amounts and status move only through payments.
#[derive(Debug, Clone, Default)]
pub struct InvoiceEdit {
    /// Description.
    pub description: Option<String>,
    /// Due date (date or date-time).
    pub due_date: Option<String>,
    /// External invoice number.
    pub external_invoice_num: Option<String>,
}

/// Applies `e` to invoice `id`.
pub fn edit_invoice(tx: &Transaction<'_>, id: i64, e: &InvoiceEdit, tz: Tz) -> Result<()> {
    require(tx, "invoices", "invoice", id)?;
    let due = parse_opt_time("dueDate", &e.due_date, tz)?;
    update(
        tx,
        "invoices",
        id,
        &[
            ("description", &e.description),
            ("due_date", &due),
            ("external_invoice_num", &e.external_invoice_num),
        ],
    )
}

/// Changes to a payment. Amounts move only through applications.
#[derive(Debug, Clone, Default)]
pub struct PaymentEdit {
    /// Description.
    pub description: Option<String>,
    /// The payer's reference.
    pub reference: Option<String>,
}

/// Applies `e` to payment `id`.
pub fn edit_payment(tx: &Transaction<'_>, id: i64, e: &PaymentEdit) -> Result<()> {
    require(tx, "payments", "payment", id)?;
    update(
        tx,
        "payments",
        id,
        &[("description", &e.description), ("reference", &e.reference)],
    )
}

/// `UPDATE table SET col = value, ... WHERE id = ?` for the columns whose value is `Some`.
/// Column names are compile-time constants of the callers, never input.
fn update(
    tx: &Transaction<'_>,
    table: &str,
    id: i64,
    cols: &[(&str, &dyn OptionalValue)],
) -> Result<()> {
    let present: Vec<(&str, &dyn ToSql)> = cols
        .iter()
        .filter_map(|(name, v)| v.value().map(|v| (*name, v)))
        .collect();
    if present.is_empty() {
        return Ok(());
    }
    let sets = present
        .iter()
        .enumerate()
        .map(|(i, (name, _))| format!("\"{name}\" = ?{}", i + 1))
        .collect::<Vec<_>>()
        .join(", ");
    let mut values: Vec<&dyn ToSql> = present.iter().map(|(_, v)| *v).collect();
    values.push(&id);
    tx.execute(
        &format!(
            "UPDATE \"{table}\" SET {sets} WHERE id = ?{}",
            present.len() + 1
        ),
        values.as_slice(),
    )?;
    Ok(())
}

/// An optional column value: `None` leaves the column as it is.
trait OptionalValue {
    fn value(&self) -> Option<&dyn ToSql>;
}

impl<T: ToSql> OptionalValue for Option<T> {
    fn value(&self) -> Option<&dyn ToSql> {
        self.as_ref().map(|v| v as &dyn ToSql)
    }
}
