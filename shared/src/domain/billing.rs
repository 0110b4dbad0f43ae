//! Billing records: actions, account adjustments and their applications, invoices and
//! payments. Bill batches are in [`super::bill_batches`].

use super::{check_enum, insert, parse_opt_time, parse_time, require};
use crate::money::canonical;
use crate::Result;
use chrono_tz::Tz;
use rusqlite::Transaction;
use rust_decimal::Decimal;
use serde::Deserialize;

/// Action types of the platform.
pub const ACTION_TYPES: &[&str] = &[
    "agreement",
    "agreement-service",
    "bill-cycle-run",
    "bill-batch-run",
    "billing-account",
    "counter",
    "credit-adjustment",
    "disbursement",
    "invoice",
    "payment",
    "product-sale",
    "remote-prepaid-register",
    "sales-order",
    "service",
    "service-cfv",
    "system-notification",
    "usage-rule",
];
/// Adjustment application types.
pub const ADJUSTMENT_APPLICATION_TYPES: &[&str] = &[
    "standard-invoice",
    "negative-invoice",
    "reversed-invoice",
    "write-off-invoice",
];
/// Invoice statuses.
pub const INVOICE_STATUSES: &[&str] = &["PROCESSING", "OPEN", "CLOSED"];

/// An operation of an action.
#[derive(Debug, Clone, Deserialize)]
pub struct NewOperation {
    /// Operation type.
    pub operation_type: String,
    /// Display name.
    pub name: String,
    /// Enabled.
    #[serde(default = "yes")]
    pub enabled: bool,
}

fn yes() -> bool {
    true
}

/// An action (a platform event definition) with its operations.
#[derive(Debug, Clone, Deserialize)]
pub struct NewAction {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// Name.
    pub name: String,
    /// Enabled.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Friendly name.
    pub friendly_name: Option<String>,
    /// Supports approval.
    #[serde(default)]
    pub supports_approval: bool,
    /// One of [`ACTION_TYPES`].
    pub action_type: String,
    /// Product it belongs to.
    pub product_id: Option<i64>,
    /// Agreement it belongs to.
    pub agreement_id: Option<i64>,
    /// Bill cycle it belongs to.
    pub bill_cycle_id: Option<i64>,
    /// Operations.
    #[serde(default)]
    pub operations: Vec<NewOperation>,
}

/// Creates an action and its operations.
pub fn create_action(tx: &Transaction<'_>, a: &NewAction) -> Result<i64> {
    check_enum("action_type", &a.action_type, ACTION_TYPES)?;
    if let Some(id) = a.product_id {
        require(tx, "products", "product", id)?;
    }
    if let Some(id) = a.agreement_id {
        require(tx, "agreements", "agreement", id)?;
    }
    if let Some(id) = a.bill_cycle_id {
        require(tx, "bill_cycles", "bill cycle", id)?;
    }
    let id = insert(
        tx,
        "actions",
        &[
            ("id", &a.id),
            ("name", &a.name),
            ("enabled", &a.enabled),
            ("friendly_name", &a.friendly_name),
            ("supports_approval", &a.supports_approval),
            ("action_type", &a.action_type),
            ("product_id", &a.product_id),
            ("agreement_id", &a.agreement_id),
            ("bill_cycle_id", &a.bill_cycle_id),
        ],
    )?;
    for op in &a.operations {
        insert(
            tx,
            "action_operations",
            &[
                ("action_id", &id),
                ("operation_type", &op.operation_type),
                ("name", &op.name),
                ("enabled", &op.enabled),
            ],
        )?;
    }
    Ok(id)
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
    check_enum("adjustment_type", &adjustment_type, &["CREDIT", "DEBIT"])?;
    let occurred = parse_time("occurred_on", &a.occurred_on, tz)?;
    let applied: Decimal = a.applications.iter().map(|x| x.amount).sum();
    let unapplied = (a.amount.abs() - applied).max(Decimal::ZERO);
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

/// An invoice to create.
#[derive(Debug, Clone, Deserialize)]
pub struct NewInvoice {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// Unique invoice number.
    pub invoice_num: String,
    /// The account billed.
    pub billing_account_id: i64,
    /// The run that produced it.
    pub bill_batch_run_id: Option<i64>,
    /// Invoice type, default STANDARD.
    pub invoice_type: Option<String>,
    /// Amount.
    #[serde(deserialize_with = "crate::money::deserialize_number")]
    pub amount: Decimal,
    /// Description.
    pub description: Option<String>,
    /// Invoice date.
    pub occurred_on: String,
    /// Due date.
    pub due_date: Option<String>,
    /// One of [`INVOICE_STATUSES`], default OPEN. A CLOSED invoice is fully paid.
    pub status: Option<String>,
}

/// Creates an invoice; an open one adds its amount to the account balance.
pub fn create_invoice(tx: &Transaction<'_>, i: &NewInvoice, tz: Tz) -> Result<i64> {
    require(
        tx,
        "billing_accounts",
        "billing account",
        i.billing_account_id,
    )?;
    let status = i.status.clone().unwrap_or_else(|| "OPEN".into());
    check_enum("status", &status, INVOICE_STATUSES)?;
    let occurred = parse_time("occurredOn", &i.occurred_on, tz)?;
    let due = parse_opt_time("dueDate", &i.due_date, tz)?;
    let closed = status == "CLOSED";
    let to_pay = if closed { Decimal::ZERO } else { i.amount };
    let paid_date = closed.then(|| due.clone().unwrap_or_else(|| occurred.clone()));
    let id = insert(
        tx,
        "invoices",
        &[
            ("id", &i.id),
            ("invoice_num", &i.invoice_num),
            ("billing_account_id", &i.billing_account_id),
            ("original_billing_account_id", &i.billing_account_id),
            ("bill_batch_run_id", &i.bill_batch_run_id),
            (
                "invoice_type",
                &i.invoice_type.clone().unwrap_or_else(|| "STANDARD".into()),
            ),
            ("amount", &canonical(i.amount)),
            ("amount_to_pay", &canonical(to_pay)),
            ("description", &i.description),
            ("occurred_on", &occurred),
            ("due_date", &due),
            ("paid_date", &paid_date),
            ("status", &status),
        ],
    )?;
    if !closed {
        add_to_balance(tx, i.billing_account_id, i.amount)?;
    }
    Ok(id)
}

/// Fails with a conflict when an invoice already has `invoice_num`.
pub fn check_invoice_num_free(tx: &Transaction<'_>, invoice_num: &str) -> Result<()> {
    let taken = tx
        .prepare_cached("SELECT 1 FROM invoices WHERE invoice_num = ?1")?
        .exists([invoice_num])?;
    if taken {
        return Err(crate::Error::conflict(format!(
            "an invoice with invoiceNum '{invoice_num}' already exists"
        )));
    }
    Ok(())
}

/// Adds `delta` (exactly) to a billing account's balance.
pub fn add_to_balance(tx: &Transaction<'_>, billing_account_id: i64, delta: Decimal) -> Result<()> {
    let balance: String = tx.query_row(
        "SELECT balance FROM billing_accounts WHERE id = ?1",
        [billing_account_id],
        |r| r.get(0),
    )?;
    let balance = crate::money::parse_decimal(&balance).unwrap_or_default() + delta;
    tx.execute(
        "UPDATE billing_accounts SET balance = ?1 WHERE id = ?2",
        rusqlite::params![canonical(balance), billing_account_id],
    )?;
    Ok(())
}

/// A payment to record (unapplied until a command applies it).
#[derive(Debug, Clone, Deserialize)]
pub struct NewPayment {
    /// Explicit id (seed data only).
    pub id: Option<i64>,
    /// The paying account.
    pub billing_account_id: i64,
    /// Amount received.
    #[serde(deserialize_with = "crate::money::deserialize_number")]
    pub amount: Decimal,
    /// Description.
    pub description: Option<String>,
    /// The payer's reference.
    pub reference: Option<String>,
    /// When received.
    pub occurred_on: String,
    /// Payment method element name (cashPayment, checkPayment, creditCardPayment).
    pub payment_method: Option<String>,
}

/// Records a payment with its whole amount unapplied.
pub fn create_payment(tx: &Transaction<'_>, p: &NewPayment, tz: Tz) -> Result<i64> {
    require(
        tx,
        "billing_accounts",
        "billing account",
        p.billing_account_id,
    )?;
    if p.amount <= Decimal::ZERO {
        return Err(crate::Error::bad_request(
            "amount must be greater than zero",
        ));
    }
    let method = p
        .payment_method
        .clone()
        .unwrap_or_else(|| "cashPayment".into());
    check_enum(
        "payment method",
        &method,
        &["cashPayment", "checkPayment", "creditCardPayment"],
    )?;
    let occurred = parse_time("occurredOn", &p.occurred_on, tz)?;
    let amount = canonical(p.amount);
    insert(
        tx,
        "payments",
        &[
            ("id", &p.id),
            ("billing_account_id", &p.billing_account_id),
            ("amount", &amount),
            ("description", &p.description),
            ("reference", &p.reference),
            ("occurred_on", &occurred),
            ("unapplied_amount", &amount),
            ("received_amount", &amount),
            ("status", &"COMPLETED"),
            ("payment_method", &method),
        ],
    )
}
