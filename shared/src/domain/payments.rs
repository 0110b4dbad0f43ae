//! Payments: edits, the ownership rule (a command names a payment of its own account), and
//! applying payments to invoices: to one named invoice, to a chosen set, or to an account's
//! open invoices oldest first. Each application lowers the invoice's amount to pay (closing
//! it with a paid date when nothing is left), the account balance and the payment's
//! unapplied amount; whatever cannot be applied stays unapplied on the payment.

use super::invoices::{
    named_open_invoice, open_invoices_oldest_first, settle_invoice, sort_oldest_first,
};
use super::status::status_enum;
use super::{check_enum, insert, parse_time, require, update};
use crate::money::{canonical, from_sql_text};
use crate::{Error, Result};
use chrono_tz::Tz;
use rusqlite::{OptionalExtension, Transaction};
use rust_decimal::Decimal;
use serde::Deserialize;

/// Payment methods; Surface A carries one as a child element of this name.
pub const PAYMENT_METHODS: &[&str] = &["cashPayment", "checkPayment", "creditCardPayment"];
status_enum! {
    /// The status of a payment: a payment received is COMPLETED, a declined automatic
    /// payment CANCELED (the platform has no "declined"); the others come from fixture data.
    pub enum PaymentStatus {
        /// Not submitted.
        Draft = "DRAFT",
        /// Submitted, not settled.
        Processing = "PROCESSING",
        /// Received: may be applied.
        Completed = "COMPLETED",
        /// Voided.
        Void = "VOID",
        /// Canceled (or declined).
        Canceled = "CANCELED",
    }
}
/// Payment statuses ([`PaymentStatus`]'s names).
pub const PAYMENT_STATUSES: &[&str] = PaymentStatus::NAMES;

/// A new payment as a request describes it, before the account it belongs to is settled:
/// a command names the account in its path, a plain create in the payment.
#[derive(Debug, Clone)]
pub struct PaymentDraft {
    /// The account the payment names, if any.
    pub billing_account_id: Option<i64>,
    /// Amount received.
    pub amount: Decimal,
    /// Description.
    pub description: Option<String>,
    /// The payer's reference.
    pub reference: Option<String>,
    /// When received (date or date-time); `None` means when the payment is recorded: the
    /// `now` its write transaction read from the tenant clock.
    pub occurred_on: Option<String>,
    /// One of [`PAYMENT_METHODS`] (default cashPayment).
    pub payment_method: Option<String>,
}

impl PaymentDraft {
    /// The payment to record. `named` is the account a command is for: an account named in
    /// the payment must then agree with it; without a command the payment must name one.
    /// `now` (a stored instant, read inside the write transaction) dates a draft without
    /// `occurred_on`.
    pub fn for_account(&self, named: Option<i64>, now: &str) -> Result<NewPayment> {
        let billing_account_id = match (self.billing_account_id, named) {
            (Some(given), Some(named)) if given != named => {
                return Err(Error::bad_request(format!(
                    "the payment's billingAccount {given} is not the account {named} this command is for"
                )))
            }
            (Some(id), _) | (None, Some(id)) => id,
            (None, None) => {
                return Err(Error::bad_request(
                    "<billingAccount eid=\"...\"/> is required in <payment>",
                ))
            }
        };
        Ok(NewPayment {
            id: None,
            billing_account_id,
            amount: self.amount,
            description: self.description.clone(),
            reference: self.reference.clone(),
            occurred_on: self.occurred_on.clone().unwrap_or_else(|| now.to_string()),
            payment_method: self.payment_method.clone(),
        })
    }
}

/// The payment a command on an account applies: one already recorded, or a new one recorded
/// with the command.
#[derive(Debug, Clone)]
pub enum PaymentSource {
    /// A recorded payment, by id.
    Recorded(i64),
    /// A payment to record now.
    New(PaymentDraft),
}

/// The id of the payment `source` names for a command on billing account `account_id`:
/// a recorded payment must be the account's own (see [`payment_of_account`]); a new one is
/// recorded for the account.
pub fn payment_for_account(
    tx: &Transaction<'_>,
    source: &PaymentSource,
    account_id: i64,
    now: &str,
    tz: Tz,
) -> Result<i64> {
    match source {
        PaymentSource::Recorded(id) => payment_of_account(tx, *id, account_id),
        PaymentSource::New(draft) => {
            create_payment(tx, &draft.for_account(Some(account_id), now)?, tz)
        }
    }
}

/// What an `applyPayment` command is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandTarget {
    /// One invoice: the payment must belong to the invoice's account.
    Invoice(i64),
    /// An account: the listed invoices of it, or, with none listed, its open invoices.
    Account {
        /// The account.
        account_id: i64,
        /// The invoices to pay (oldest first); empty pays every open one.
        invoices: Vec<i64>,
    },
}

/// Runs an `applyPayment` command at the stored instant `applied_on`: settles the payment of
/// `source` for the target's account (see [`payment_for_account`]) and applies it. Answers
/// the payment's id and what went where. 404 for an unknown invoice or account.
pub fn apply_for_command(
    tx: &Transaction<'_>,
    target: &CommandTarget,
    source: &PaymentSource,
    applied_on: &str,
    tz: Tz,
) -> Result<(i64, Vec<PaymentApplication>)> {
    let (account_id, to) = match target {
        CommandTarget::Invoice(id) => (
            super::invoices::invoice_account(tx, *id)?,
            PaymentTarget::Invoice(*id),
        ),
        CommandTarget::Account {
            account_id,
            invoices,
        } => {
            require(tx, "billing_accounts", "billing account", *account_id)?;
            let to = if invoices.is_empty() {
                PaymentTarget::OpenInvoices
            } else {
                PaymentTarget::Invoices(invoices.clone())
            };
            (*account_id, to)
        }
    };
    let payment_id = payment_for_account(tx, source, account_id, applied_on, tz)?;
    let applied = apply_payment(tx, payment_id, &to, applied_on)?;
    Ok((payment_id, applied))
}

/// Where a payment goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaymentTarget {
    /// One named invoice, which must be open.
    Invoice(i64),
    /// These invoices (each must be open), oldest first.
    Invoices(Vec<i64>),
    /// Every open invoice of the payment's account, oldest first.
    OpenInvoices,
}

/// One part of a payment applied to one invoice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentApplication {
    /// The invoice paid.
    pub invoice_id: i64,
    /// How much of the payment went to it.
    pub amount: Decimal,
}

struct PaymentState {
    account_id: i64,
    unapplied: Decimal,
    status: PaymentStatus,
}

/// Applies payment `payment_id` to `target`, at the stored instant `applied_on`, and answers
/// what went where (empty when the target had nothing open). Refuses (409) a payment that is
/// not COMPLETED or has nothing left, and a named invoice that is not OPEN; refuses (400) an
/// invoice of another account.
pub fn apply_payment(
    tx: &Transaction<'_>,
    payment_id: i64,
    target: &PaymentTarget,
    applied_on: &str,
) -> Result<Vec<PaymentApplication>> {
    let payment = load_payment(tx, payment_id)?;
    if payment.status != PaymentStatus::Completed {
        return Err(Error::conflict(format!(
            "payment {payment_id} is {}; only COMPLETED payments can be applied",
            payment.status
        )));
    }
    if payment.unapplied <= Decimal::ZERO {
        return Err(Error::conflict(format!(
            "payment {payment_id} has no unapplied amount left"
        )));
    }
    let invoices = match target {
        PaymentTarget::Invoice(id) => vec![named_open_invoice(tx, *id, payment.account_id)?],
        PaymentTarget::Invoices(ids) => {
            let mut list = ids
                .iter()
                .map(|id| named_open_invoice(tx, *id, payment.account_id))
                .collect::<Result<Vec<_>>>()?;
            list.dedup_by_key(|i| i.id);
            sort_oldest_first(tx, list)?
        }
        PaymentTarget::OpenInvoices => open_invoices_oldest_first(tx, payment.account_id)?,
    };
    let mut left = payment.unapplied;
    let mut applied = Vec::new();
    for invoice in invoices {
        if left <= Decimal::ZERO {
            break;
        }
        let amount = left.min(invoice.amount_to_pay);
        if amount <= Decimal::ZERO {
            continue;
        }
        settle_invoice(tx, invoice.id, amount, applied_on)?;
        insert(
            tx,
            "payment_applications",
            &[
                ("payment_id", &payment_id),
                ("invoice_id", &invoice.id),
                ("amount", &canonical(amount)),
                ("applied_on", &applied_on),
            ],
        )?;
        // amount <= left, both within bounds: no overflow.
        left = left.saturating_sub(amount);
        applied.push(PaymentApplication {
            invoice_id: invoice.id,
            amount,
        });
    }
    tx.execute(
        "UPDATE payments SET unapplied_amount = ?1 WHERE id = ?2",
        rusqlite::params![canonical(left), payment_id],
    )?;
    Ok(applied)
}

/// The billing account a payment belongs to (404 when the payment does not exist).
/// Stores one application of payment `payment_id` to invoice `invoice_id` as it was stored
/// (an exported tenant read back: the payment's and the invoice's balances are their own
/// state fields, so nothing else moves); 404 unknown payment or invoice.
pub fn restore_application(
    tx: &Transaction<'_>,
    id: Option<i64>,
    payment_id: i64,
    invoice_id: i64,
    amount: Decimal,
    applied_on: &str,
) -> Result<()> {
    require(tx, "payments", "payment", payment_id)?;
    require(tx, "invoices", "invoice", invoice_id)?;
    insert(
        tx,
        "payment_applications",
        &[
            ("id", &id),
            ("payment_id", &payment_id),
            ("invoice_id", &invoice_id),
            ("amount", &canonical(amount)),
            ("applied_on", &applied_on),
        ],
    )?;
    Ok(())
}

pub fn payment_account(tx: &Transaction<'_>, payment_id: i64) -> Result<i64> {
    load_payment(tx, payment_id).map(|p| p.account_id)
}

/// The payment `payment_id` when it belongs to billing account `account_id`: 404 when the
/// payment does not exist, 400 when it is another account's.
pub fn payment_of_account(tx: &Transaction<'_>, payment_id: i64, account_id: i64) -> Result<i64> {
    let owner = payment_account(tx, payment_id)?;
    if owner != account_id {
        return Err(Error::bad_request(format!(
            "payment {payment_id} belongs to billing account {owner}, not to {account_id}"
        )));
    }
    Ok(payment_id)
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

fn load_payment(tx: &Transaction<'_>, id: i64) -> Result<PaymentState> {
    tx.query_row(
        "SELECT billing_account_id, unapplied_amount, status FROM payments WHERE id = ?1",
        [id],
        |r| {
            Ok(PaymentState {
                account_id: r.get(0)?,
                unapplied: from_sql_text(r.get_ref(1)?)?,
                status: r.get(2)?,
            })
        },
    )
    .optional()?
    .ok_or_else(|| Error::not_found(format!("payment {id} does not exist")))
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
    insert_payment(tx, p, tz, false)
}

/// Records a declined payment attempt (an automatic payment the card refused): status
/// CANCELED with its whole amount canceled, nothing received, nothing to apply. The
/// platform's payment statuses have no "declined"; CANCELED is the closest, and collector
/// runs leave CANCELED payments out, so a decline moves no money.
pub fn create_declined_payment(tx: &Transaction<'_>, p: &NewPayment, tz: Tz) -> Result<i64> {
    insert_payment(tx, p, tz, true)
}

fn insert_payment(tx: &Transaction<'_>, p: &NewPayment, tz: Tz, declined: bool) -> Result<i64> {
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
    check_enum("payment method", &method, PAYMENT_METHODS)?;
    let occurred = parse_time("occurredOn", &p.occurred_on, tz)?;
    let amount = canonical(p.amount);
    let zero = "0".to_string();
    // A declined attempt: nothing received or left to apply, the whole amount canceled.
    let (unapplied, received, canceled, status) = if declined {
        (&zero, &zero, &amount, PaymentStatus::Canceled)
    } else {
        (&amount, &amount, &zero, PaymentStatus::Completed)
    };
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
            ("unapplied_amount", unapplied),
            ("received_amount", received),
            ("canceled_amount", canceled),
            ("status", &status),
            ("payment_method", &method),
        ],
    )
}

super::fixture_columns_writer!("payments", "payment_applications");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{account, dec, invoice};

    fn payment(tx: &Transaction<'_>, account: i64, amount: &str) -> i64 {
        let p = NewPayment {
            id: None,
            billing_account_id: account,
            amount: dec(amount),
            description: None,
            reference: None,
            occurred_on: "2026-03-01".into(),
            payment_method: None,
        };
        create_payment(tx, &p, chrono_tz::UTC).unwrap()
    }

    fn text(tx: &Transaction<'_>, sql: &str, id: i64) -> String {
        tx.query_row(sql, [id], |r| r.get(0)).unwrap()
    }

    #[test]
    fn open_invoices_are_paid_oldest_first_and_the_rest_stays_unapplied() {
        let mut conn = crate::testing::db();
        let tx = conn.transaction().unwrap();
        let a = account(&tx, 1, None);
        let newer = invoice(&tx, a, "N", "30", "2026-02-01");
        let older = invoice(&tx, a, "O", "20", "2026-01-01");
        let pid = payment(&tx, a, "45.5");
        let applied = apply_payment(&tx, pid, &PaymentTarget::OpenInvoices, "T").unwrap();
        assert_eq!(
            applied,
            vec![
                PaymentApplication {
                    invoice_id: older,
                    amount: dec("20")
                },
                PaymentApplication {
                    invoice_id: newer,
                    amount: dec("25.5")
                },
            ]
        );
        let balance = text(&tx, "SELECT balance FROM billing_accounts WHERE id = ?1", a);
        assert_eq!(balance, "4.5");
        let (status, paid): (String, Option<String>) = tx
            .query_row(
                "SELECT status, paid_date FROM invoices WHERE id = ?1",
                [older],
                |r| r.try_into(),
            )
            .unwrap();
        assert_eq!((status.as_str(), paid.as_deref()), ("CLOSED", Some("T")));
        let newer_left = text(
            &tx,
            "SELECT amount_to_pay FROM invoices WHERE id = ?1",
            newer,
        );
        assert_eq!(newer_left, "4.5");
        let again = apply_payment(&tx, pid, &PaymentTarget::OpenInvoices, "T");
        assert!(matches!(again, Err(Error::Conflict(_))));
    }

    #[test]
    fn a_payment_larger_than_the_open_invoices_keeps_the_remainder_unapplied() {
        let mut conn = crate::testing::db();
        let tx = conn.transaction().unwrap();
        let a = account(&tx, 1, None);
        let only = invoice(&tx, a, "I", "10", "2026-01-01");
        let pid = payment(&tx, a, "25");
        let applied = apply_payment(&tx, pid, &PaymentTarget::Invoice(only), "T").unwrap();
        assert_eq!(applied.len(), 1);
        assert_eq!(applied[0].amount, dec("10"));
        let left = text(
            &tx,
            "SELECT unapplied_amount FROM payments WHERE id = ?1",
            pid,
        );
        assert_eq!(left, "15");
        // The closed invoice takes nothing more; the account has nothing else open.
        let named = apply_payment(&tx, pid, &PaymentTarget::Invoice(only), "T");
        assert!(matches!(named, Err(Error::Conflict(_))), "{named:?}");
        let open = apply_payment(&tx, pid, &PaymentTarget::OpenInvoices, "T").unwrap();
        assert!(open.is_empty());
    }

    #[test]
    fn payments_and_invoices_of_another_account_are_refused() {
        let mut conn = crate::testing::db();
        let tx = conn.transaction().unwrap();
        let (a, b) = (account(&tx, 1, None), account(&tx, 2, None));
        let theirs = invoice(&tx, b, "B1", "10", "2026-01-01");
        let pid = payment(&tx, a, "5");
        assert_eq!(payment_of_account(&tx, pid, a).unwrap(), pid);
        let other = payment_of_account(&tx, pid, b);
        assert!(matches!(other, Err(Error::BadRequest(_))), "{other:?}");
        let unknown = payment_of_account(&tx, 999, a);
        assert!(matches!(unknown, Err(Error::NotFound(_))), "{unknown:?}");
        let cross = apply_payment(&tx, pid, &PaymentTarget::Invoice(theirs), "T");
        assert!(matches!(cross, Err(Error::BadRequest(_))), "{cross:?}");
    }

    #[test]
    fn a_command_records_a_new_payment_for_its_own_account_only() {
        let mut conn = crate::testing::db();
        let tx = conn.transaction().unwrap();
        let (a, b) = (account(&tx, 1, None), account(&tx, 2, None));
        let draft = |named| PaymentDraft {
            billing_account_id: named,
            amount: dec("12.5"),
            description: None,
            reference: None,
            occurred_on: Some("2026-03-01".into()),
            payment_method: None,
        };
        let now = "2026-03-02T00:00:00.000Z";
        let new = PaymentSource::New(draft(None));
        let pid = payment_for_account(&tx, &new, a, now, chrono_tz::UTC).unwrap();
        assert_eq!(payment_account(&tx, pid).unwrap(), a);
        let mismatch = PaymentSource::New(draft(Some(b)));
        let refused = payment_for_account(&tx, &mismatch, a, now, chrono_tz::UTC);
        assert!(matches!(refused, Err(Error::BadRequest(_))), "{refused:?}");
        let recorded =
            payment_for_account(&tx, &PaymentSource::Recorded(pid), b, now, chrono_tz::UTC);
        assert!(
            matches!(recorded, Err(Error::BadRequest(_))),
            "{recorded:?}"
        );
        assert!(
            draft(None).for_account(None, now).is_err(),
            "a plain create names its account"
        );
        // Given, occurred_on is kept; left out, the draft is dated `now`.
        let dated = draft(None).for_account(Some(a), now).unwrap();
        assert_eq!(dated.occurred_on, "2026-03-01");
        let undated = PaymentDraft {
            occurred_on: None,
            ..draft(None)
        };
        assert_eq!(undated.for_account(Some(a), now).unwrap().occurred_on, now);
    }

    #[test]
    fn a_command_on_an_invoice_pays_it_from_the_invoice_account() {
        let mut conn = crate::testing::db();
        let tx = conn.transaction().unwrap();
        let a = account(&tx, 1, None);
        let older = invoice(&tx, a, "O", "10", "2026-01-01");
        let newer = invoice(&tx, a, "N", "10", "2026-02-01");
        let new = PaymentSource::New(PaymentDraft {
            billing_account_id: None,
            amount: dec("4"),
            description: None,
            reference: None,
            occurred_on: Some("2026-03-01".into()),
            payment_method: None,
        });
        let on_newer = CommandTarget::Invoice(newer);
        let (pid, applied) = apply_for_command(&tx, &on_newer, &new, "T", chrono_tz::UTC).unwrap();
        assert_eq!(payment_account(&tx, pid).unwrap(), a);
        assert_eq!(applied.len(), 1);
        assert_eq!(
            applied[0].invoice_id, newer,
            "the named invoice, not the oldest"
        );
        let left = text(
            &tx,
            "SELECT amount_to_pay FROM invoices WHERE id = ?1",
            older,
        );
        assert_eq!(left, "10");
        let nobody = CommandTarget::Account {
            account_id: 99,
            invoices: Vec::new(),
        };
        let unknown = apply_for_command(&tx, &nobody, &new, "T", chrono_tz::UTC);
        assert!(matches!(unknown, Err(Error::NotFound(_))), "{unknown:?}");
    }
}
