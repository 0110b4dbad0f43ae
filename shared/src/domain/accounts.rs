//! Billing accounts with their categories and bill cycles: create, edit and the status
//! commands (suspend, resume, deactivate).
//!
//! Create and edit of a category, and of an account, check their fields with one function
//! each, so a rule cannot hold on one path and not on the other. An edit changes only the
//! fields it carries (`None` keeps the stored value). An account's status moves only
//! through the status commands, and its balance only through invoices and payments.
//!
//! This module is the one writer of `billing_accounts` (and of the categories and bill
//! cycles): the other rules change an account only through the operations at the end of
//! this file (its balance, its pending charges, the automatic status moves, its billing
//! dates), so each stored total has one place that keeps it exact.

use super::status::status_enum;
use super::{check_currency, check_enum, insert, parse_opt_time, require, update};
use crate::money::canonical;
use crate::{Error, Result};
use chrono_tz::Tz;
use rusqlite::{OptionalExtension, Transaction};
use rust_decimal::Decimal;
use serde::Deserialize;

/// Statuses of a billing account category.
pub const CATEGORY_STATUSES: &[&str] = &[
    "BA_CATEGORY_ACTIVE",
    "BA_CATEGORY_SUSPENDED",
    "BA_CATEGORY_CANCELED",
];
status_enum! {
    /// The status of a billing account. It moves only through the status commands
    /// ([`StatusCommand`]) and the automatic moves ([`move_status`], [`close_after_final_bill`]).
    pub enum AccountStatus {
        /// Billed and in service.
        Active = "ACTIVE",
        /// Service stopped for a while (the suspend command).
        Suspended = "SUSPENDED",
        /// Not started yet.
        Pending = "PENDING",
        /// An invoice is past due and unpaid.
        Collection = "COLLECTION",
        /// Ended (the deactivate command); billed once more.
        Deactivated = "DEACTIVATED",
        /// Its final bill is due.
        FinalBill = "FINAL_BILL",
        /// Billing ended for good.
        Closed = "CLOSED",
    }
}
/// Statuses of a billing account ([`AccountStatus`]'s names).
pub const ACCOUNT_STATUSES: &[&str] = AccountStatus::NAMES;
/// The days of month a bill cycle may bill on: 1 to 28, so that every month has the day.
pub const CYCLE_DAYS: std::ops::RangeInclusive<i64> = 1..=28;
/// Bill delivery types.
pub const BILL_TYPES: &[&str] = &["PAPER", "EMAIL", "PAPER_EMAIL", "NONE"];

/// The fields of a billing account category, as a create or an edit carries them. A create
/// requires `description` and `status` (the name defaults to the description); an edit
/// changes the fields it carries.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct CategoryFields {
    /// On create: an explicit id (seed data only). On edit: must name the edited category.
    pub id: Option<i64>,
    /// Display name.
    pub name: Option<String>,
    /// Free-form type.
    pub r#type: Option<String>,
    /// Description; never empty.
    pub description: Option<String>,
    /// One of [`CATEGORY_STATUSES`].
    pub status: Option<String>,
    /// Conversion currency, when the category converts.
    pub conversion_currency: Option<String>,
}

impl CategoryFields {
    /// The rules of a category's fields, for create and edit alike; absent fields are not
    /// checked.
    fn check(&self) -> Result<()> {
        if let Some(s) = &self.status {
            check_enum("status", s, CATEGORY_STATUSES)?;
        }
        if let Some(c) = &self.conversion_currency {
            check_currency("conversionCurrencyType", c)?;
        }
        if self
            .description
            .as_deref()
            .is_some_and(|d| d.trim().is_empty())
        {
            return Err(Error::bad_request("description must not be empty"));
        }
        Ok(())
    }
}

/// Creates a billing account category.
pub fn create_category(tx: &Transaction<'_>, c: &CategoryFields) -> Result<i64> {
    let (Some(description), Some(status)) = (&c.description, &c.status) else {
        return Err(Error::bad_request(
            "a billing account category needs a description and a status",
        ));
    };
    c.check()?;
    insert(
        tx,
        "billing_account_categories",
        &[
            ("id", &c.id),
            ("name", c.name.as_ref().unwrap_or(description)),
            ("type", &c.r#type),
            ("description", description),
            ("status", status),
            ("conversion_currency", &c.conversion_currency),
        ],
    )
}

/// Applies `e` to billing account category `id`.
pub fn edit_category(tx: &Transaction<'_>, id: i64, e: &CategoryFields) -> Result<()> {
    require(
        tx,
        "billing_account_categories",
        "billing account category",
        id,
    )?;
    if let Some(given) = e.id.filter(|given| *given != id) {
        return Err(Error::bad_request(format!(
            "id: {given} does not match the billing account category {id} being edited"
        )));
    }
    e.check()?;
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
    if !CYCLE_DAYS.contains(&c.day_of_month) {
        return Err(crate::Error::bad_request(format!(
            "day_of_month: {} is not a day from {} to {}",
            c.day_of_month,
            CYCLE_DAYS.start(),
            CYCLE_DAYS.end()
        )));
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
    /// Unique account number; generated ([`generated_account_num`]) when absent.
    pub account_num: Option<String>,
    /// The customer's own number for the account.
    pub external_account_num: Option<String>,
    /// Display name; the account number when absent.
    pub name: Option<String>,
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
    /// The account's own payment term, net days (0 to 365); absent: the tenant policy's.
    #[serde(default)]
    pub payment_term_days: Option<i64>,
}

/// The rules of an account's fields, for create and edit alike; `None` skips a field.
/// `account_id` is the account being edited (its own number is no conflict).
fn check_account(
    tx: &Transaction<'_>,
    account_id: Option<i64>,
    account_num: Option<&str>,
    bill_type: Option<&str>,
    billing_account_category_id: Option<i64>,
    bill_cycle_id: Option<i64>,
) -> Result<()> {
    if let Some(num) = account_num {
        if num.trim().is_empty() {
            return Err(Error::bad_request("accountNum must not be empty"));
        }
        let taken = tx
            .prepare_cached(
                "SELECT 1 FROM billing_accounts WHERE account_num = ?1 AND (?2 IS NULL OR id <> ?2)",
            )?
            .exists(rusqlite::params![num, account_id])?;
        if taken {
            return Err(Error::conflict(format!(
                "a billing account with accountNum '{num}' already exists"
            )));
        }
    }
    if let Some(t) = bill_type {
        check_enum("billType", t, BILL_TYPES)?;
    }
    if let Some(id) = billing_account_category_id {
        require(
            tx,
            "billing_account_categories",
            "billing account category",
            id,
        )?;
    }
    if let Some(id) = bill_cycle_id {
        require(tx, "bill_cycles", "bill cycle", id)?;
    }
    Ok(())
}

/// The account number the platform gives account `id` when the client gives none: `BA-` and
/// the id in at least 8 digits (`BA-00000007`); when a client already took that number,
/// `-2`, `-3`, ... is appended until the number is free, so a generated number never
/// collides with a client-chosen one.
fn generated_account_num(tx: &Transaction<'_>, id: i64) -> Result<String> {
    let base = format!("BA-{id:08}");
    let mut stmt = tx.prepare_cached("SELECT 1 FROM billing_accounts WHERE account_num = ?1")?;
    if !stmt.exists([&base])? {
        return Ok(base);
    }
    // Each taken candidate is a distinct stored number, so this ends within (accounts + 2)
    // tries.
    let mut n: u64 = 2;
    loop {
        let candidate = format!("{base}-{n}");
        if !stmt.exists([&candidate])? {
            return Ok(candidate);
        }
        n += 1;
    }
}

/// Creates a billing account; a given account number must be unused, an absent one is
/// generated from the new id ([`generated_account_num`]).
pub fn create_account(tx: &Transaction<'_>, a: &NewAccount, tz: Tz) -> Result<i64> {
    let bill_type = a.bill_type.clone().unwrap_or_else(|| "PAPER".into());
    check_enum("billType", &bill_type, BILL_TYPES)?;
    let status = match &a.status {
        Some(text) => AccountStatus::parse_field("status", text)?,
        None => AccountStatus::Active,
    };
    let currency = a.currency_code.clone().unwrap_or_else(|| "USD".into());
    check_currency("currencyType", &currency)?;
    check_account(
        tx,
        None,
        a.account_num.as_deref(),
        Some(&bill_type),
        a.billing_account_category_id,
        a.bill_cycle_id,
    )?;
    let start = parse_opt_time("startDate", &a.start_date, tz)?;
    if let Some(days) = a.payment_term_days {
        super::policy::check_payment_term("paymentTermDays", days)?;
    }
    let zero = canonical(Decimal::ZERO);
    // Without a number, the row is written under a placeholder no client can hold (a fresh
    // UUID; NOT NULL UNIQUE column) and numbered from its id right after.
    let placeholder = format!("pending-{}", uuid::Uuid::new_v4());
    let account_num = a.account_num.clone().unwrap_or_else(|| placeholder.clone());
    let name = a.name.clone().unwrap_or_else(|| account_num.clone());
    let id = insert(
        tx,
        "billing_accounts",
        &[
            ("id", &a.id),
            ("account_num", &account_num),
            ("external_account_num", &a.external_account_num),
            ("name", &name),
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
            ("payment_term_days", &a.payment_term_days),
        ],
    )?;
    if a.account_num.is_none() {
        let number = generated_account_num(tx, id)?;
        let name = a.name.clone().unwrap_or_else(|| number.clone());
        tx.prepare_cached("UPDATE billing_accounts SET account_num = ?1, name = ?2 WHERE id = ?3")?
            .execute(rusqlite::params![number, name, id])?;
    }
    Ok(id)
}

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
    /// The account's own payment term, net days (0 to 365).
    pub payment_term_days: Option<i64>,
    /// The status the client believes the account has: it must be the current one, since
    /// status moves only through the status commands.
    pub status: Option<String>,
}

/// Applies `e` to billing account `id` (404 when unknown, 409 for an account number in use,
/// 400 for a status other than the current one).
pub fn edit_account(tx: &Transaction<'_>, id: i64, e: &AccountEdit, tz: Tz) -> Result<()> {
    let current = status_of(tx, id)?;
    if let Some(wanted) = &e.status {
        if wanted != current.as_str() {
            return Err(Error::bad_request(format!(
                "status cannot be edited (it is {current}); use the suspend, resume or deactivate command"
            )));
        }
    }
    check_account(
        tx,
        Some(id),
        e.account_num.as_deref(),
        e.bill_type.as_deref(),
        e.billing_account_category_id,
        e.bill_cycle_id,
    )?;
    let start = parse_opt_time("startDate", &e.start_date, tz)?;
    let end = parse_opt_time("endDate", &e.end_date, tz)?;
    let next = parse_opt_time("nextInvoiceDate", &e.next_invoice_date, tz)?;
    if let Some(days) = e.payment_term_days {
        super::policy::check_payment_term("paymentTermDays", days)?;
    }
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
            ("payment_term_days", &e.payment_term_days),
        ],
    )
}

/// A status command on a billing account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusCommand {
    /// Stop service for a while: ACTIVE or COLLECTION -> SUSPENDED.
    Suspend,
    /// Restore service: SUSPENDED or COLLECTION -> ACTIVE.
    Resume,
    /// End the account: any status but DEACTIVATED, FINAL_BILL or CLOSED -> DEACTIVATED.
    Deactivate,
}

impl StatusCommand {
    /// The command's name as it appears in paths.
    pub fn name(self) -> &'static str {
        match self {
            StatusCommand::Suspend => "suspend",
            StatusCommand::Resume => "resume",
            StatusCommand::Deactivate => "deactivate",
        }
    }

    /// Statuses the command starts from.
    pub fn allowed_from(self) -> &'static [AccountStatus] {
        use AccountStatus::{Active, Collection, Pending, Suspended};
        match self {
            StatusCommand::Suspend => &[Active, Collection],
            StatusCommand::Resume => &[Suspended, Collection],
            StatusCommand::Deactivate => &[Active, Suspended, Pending, Collection],
        }
    }

    /// The status the command leads to.
    pub fn target(self) -> AccountStatus {
        match self {
            StatusCommand::Suspend => AccountStatus::Suspended,
            StatusCommand::Resume => AccountStatus::Active,
            StatusCommand::Deactivate => AccountStatus::Deactivated,
        }
    }
}

/// The current status of billing account `account_id` (404 when it does not exist).
pub fn status_of(conn: &rusqlite::Connection, account_id: i64) -> Result<AccountStatus> {
    conn.prepare_cached("SELECT status FROM billing_accounts WHERE id = ?1")?
        .query_row([account_id], |r| r.get(0))
        .optional()?
        .ok_or_else(|| Error::not_found(format!("billing account {account_id} does not exist")))
}

/// Runs `command` on billing account `account_id` at the stored instant `at` and answers the
/// new status. 404 for an unknown account, 409 for a transition the command does not allow.
/// Deactivation also sets the account's end date when it has none.
pub fn change_status(
    tx: &Transaction<'_>,
    account_id: i64,
    command: StatusCommand,
    at: &str,
) -> Result<AccountStatus> {
    let current = status_of(tx, account_id)?;
    if !command.allowed_from().contains(&current) {
        let allowed: Vec<&str> = command.allowed_from().iter().map(|s| s.as_str()).collect();
        return Err(Error::conflict(format!(
            "cannot {} billing account {account_id}: its status is {current}; {} applies only to {}",
            command.name(),
            command.name(),
            allowed.join(", ")
        )));
    }
    tx.execute(
        "UPDATE billing_accounts SET status = ?1 WHERE id = ?2",
        rusqlite::params![command.target(), account_id],
    )?;
    if command == StatusCommand::Deactivate {
        tx.execute(
            "UPDATE billing_accounts SET end_date = ?1 WHERE id = ?2 AND end_date IS NULL",
            rusqlite::params![at, account_id],
        )?;
    }
    Ok(command.target())
}

// ---- what the other rules change on an account ------------------------------------------

/// Adds `delta` (exactly) to an account's balance: invoices add what is to pay, payments and
/// credits take it off.
pub(crate) fn add_to_balance(tx: &Transaction<'_>, account_id: i64, delta: Decimal) -> Result<()> {
    let balance: String = tx
        .prepare_cached("SELECT balance FROM billing_accounts WHERE id = ?1")?
        .query_row([account_id], |r| r.get(0))?;
    let balance = crate::money::checked_add(
        crate::money::parse_decimal(&balance).unwrap_or_default(),
        delta,
        &format!("the balance of billing account {account_id}"),
    )?;
    tx.prepare_cached("UPDATE billing_accounts SET balance = ?1 WHERE id = ?2")?
        .execute(rusqlite::params![canonical(balance), account_id])?;
    Ok(())
}

/// An account's stored pending charges: the rated usage and charges not invoiced yet.
pub(crate) fn pending_charges(tx: &Transaction<'_>, account_id: i64) -> Result<Decimal> {
    let current: String = tx
        .prepare_cached("SELECT pending_charges_total FROM billing_accounts WHERE id = ?1")?
        .query_row([account_id], |r| r.get(0))?;
    Ok(crate::money::parse_decimal(&current).unwrap_or_default())
}

/// Adds `delta` (exactly) to an account's pending charges: posted usage adds, an invoice
/// takes what it billed, a canceled invoice gives it back. Zero writes nothing.
pub(crate) fn add_to_pending_charges(
    tx: &Transaction<'_>,
    account_id: i64,
    delta: Decimal,
) -> Result<()> {
    if delta.is_zero() {
        return Ok(());
    }
    let total = crate::money::checked_add(
        pending_charges(tx, account_id)?,
        delta,
        &format!("the pending charges of billing account {account_id}"),
    )?;
    tx.prepare_cached("UPDATE billing_accounts SET pending_charges_total = ?1 WHERE id = ?2")?
        .execute(rusqlite::params![canonical(total), account_id])?;
    Ok(())
}

/// Moves an account from status `from` to `to` when it is in `from` (the automatic moves: an
/// unpaid invoice past due, ACTIVE -> COLLECTION; nothing left overdue, back); answers
/// whether it moved.
pub(crate) fn move_status(
    tx: &Transaction<'_>,
    account_id: i64,
    from: AccountStatus,
    to: AccountStatus,
) -> Result<bool> {
    let moved = tx
        .prepare_cached("UPDATE billing_accounts SET status = ?3 WHERE id = ?1 AND status = ?2")?
        .execute(rusqlite::params![account_id, from, to])?;
    Ok(moved > 0)
}

/// Puts an account on bill cycle `bill_cycle_id`, its next invoice at `next_invoice_date`.
pub(crate) fn set_bill_cycle(
    tx: &Transaction<'_>,
    account_id: i64,
    bill_cycle_id: i64,
    next_invoice_date: &str,
) -> Result<()> {
    tx.prepare_cached(
        "UPDATE billing_accounts SET bill_cycle_id = ?1, next_invoice_date = ?2 WHERE id = ?3",
    )?
    .execute(rusqlite::params![
        bill_cycle_id,
        next_invoice_date,
        account_id
    ])?;
    Ok(())
}

/// Records that a bill run billed an account through the stored instant `at`.
pub(crate) fn set_billed_through(tx: &Transaction<'_>, account_id: i64, at: &str) -> Result<()> {
    tx.prepare_cached("UPDATE billing_accounts SET billed_through = ?1 WHERE id = ?2")?
        .execute(rusqlite::params![at, account_id])?;
    Ok(())
}

/// Sets (or, with `None`, clears) the instant of an account's next cycle invoice.
pub(crate) fn set_next_invoice_date(
    tx: &Transaction<'_>,
    account_id: i64,
    next: Option<&str>,
) -> Result<()> {
    tx.prepare_cached("UPDATE billing_accounts SET next_invoice_date = ?1 WHERE id = ?2")?
        .execute(rusqlite::params![next, account_id])?;
    Ok(())
}

/// Closes an account whose final bill was invoiced: CLOSED, no next invoice.
pub(crate) fn close_after_final_bill(tx: &Transaction<'_>, account_id: i64) -> Result<()> {
    tx.prepare_cached(
        "UPDATE billing_accounts SET status = ?2, next_invoice_date = NULL WHERE id = ?1",
    )?
    .execute(rusqlite::params![account_id, AccountStatus::Closed])?;
    Ok(())
}

super::fixture_columns_writer!(
    "billing_account_categories",
    "bill_cycles",
    "billing_accounts"
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{category, db};

    #[test]
    fn every_command_leaves_its_own_target_status() {
        for c in [
            StatusCommand::Suspend,
            StatusCommand::Resume,
            StatusCommand::Deactivate,
        ] {
            assert!(!c.allowed_from().contains(&c.target()), "{c:?}");
        }
    }

    #[test]
    fn create_and_edit_refuse_a_blank_category_description_alike() {
        let mut conn = db();
        let tx = conn.transaction().unwrap();
        let blank = CategoryFields {
            description: Some("  ".into()),
            status: Some("BA_CATEGORY_ACTIVE".into()),
            ..CategoryFields::default()
        };
        let created = create_category(&tx, &blank);
        assert!(matches!(created, Err(Error::BadRequest(ref m)) if m.contains("description")));
        let id = category(&tx, 7);
        let edit = CategoryFields {
            description: Some(String::new()),
            ..CategoryFields::default()
        };
        let edited = edit_category(&tx, id, &edit);
        assert!(matches!(edited, Err(Error::BadRequest(ref m)) if m.contains("description")));
    }

    #[test]
    fn an_edit_may_repeat_the_status_but_not_change_it() {
        let mut conn = db();
        let tx = conn.transaction().unwrap();
        let id = crate::testing::account(&tx, 1, None);
        let same = AccountEdit {
            status: Some("ACTIVE".into()),
            name: Some("Renamed".into()),
            ..AccountEdit::default()
        };
        edit_account(&tx, id, &same, chrono_tz::UTC).unwrap();
        let other = AccountEdit {
            status: Some("SUSPENDED".into()),
            ..AccountEdit::default()
        };
        let refused = edit_account(&tx, id, &other, chrono_tz::UTC);
        assert!(matches!(refused, Err(Error::BadRequest(_))), "{refused:?}");
        assert_eq!(status_of(&tx, id).unwrap(), AccountStatus::Active);
    }
}
