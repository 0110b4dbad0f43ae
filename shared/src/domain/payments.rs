//! Applying payments to invoices: to one named invoice, to a chosen set, or to an account's
//! open invoices oldest first. Each application lowers the invoice's amount to pay (closing
//! it with a paid date when nothing is left), the account balance and the payment's
//! unapplied amount; whatever cannot be applied stays unapplied on the payment.

use super::billing::add_to_balance;
use super::insert;
use crate::money::{canonical, from_sql_text};
use crate::{Error, Result};
use rusqlite::{OptionalExtension, Transaction};
use rust_decimal::Decimal;

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
    status: String,
}

struct InvoiceState {
    id: i64,
    invoice_num: String,
    account_id: i64,
    amount_to_pay: Decimal,
    status: String,
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
    if payment.status != "COMPLETED" {
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
        left -= amount;
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

/// Lowers an invoice's amount to pay and its account's balance by `amount` (which the caller
/// has bounded by the amount to pay); an invoice with nothing left to pay closes with
/// `applied_on` as its paid date.
pub fn settle_invoice(
    tx: &Transaction<'_>,
    invoice_id: i64,
    amount: Decimal,
    applied_on: &str,
) -> Result<()> {
    let invoice = load_invoice(tx, invoice_id)?;
    let to_pay = invoice.amount_to_pay - amount;
    let (status, paid_date) = if to_pay.is_zero() {
        ("CLOSED", Some(applied_on))
    } else {
        ("OPEN", None)
    };
    tx.execute(
        "UPDATE invoices SET amount_to_pay = ?1, status = ?2, paid_date = COALESCE(?3, paid_date) WHERE id = ?4",
        rusqlite::params![canonical(to_pay), status, paid_date, invoice_id],
    )?;
    add_to_balance(tx, invoice.account_id, -amount)
}

/// An open invoice of `account_id` with its amount to pay: 404 when unknown, 400 when it
/// belongs to another account, 409 when it is not OPEN.
pub fn open_invoice_to_pay(
    tx: &Transaction<'_>,
    invoice_id: i64,
    account_id: i64,
) -> Result<Decimal> {
    named_open_invoice(tx, invoice_id, account_id).map(|i| i.amount_to_pay)
}

/// The billing account a payment belongs to (404 when the payment does not exist).
pub fn payment_account(tx: &Transaction<'_>, payment_id: i64) -> Result<i64> {
    load_payment(tx, payment_id).map(|p| p.account_id)
}

/// The billing account an invoice belongs to (404 when the invoice does not exist).
pub fn invoice_account(tx: &Transaction<'_>, invoice_id: i64) -> Result<i64> {
    load_invoice(tx, invoice_id).map(|i| i.account_id)
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

const INVOICE_COLUMNS: &str =
    "SELECT id, invoice_num, billing_account_id, amount_to_pay, status FROM invoices";

fn invoice_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<InvoiceState> {
    Ok(InvoiceState {
        id: r.get(0)?,
        invoice_num: r.get(1)?,
        account_id: r.get(2)?,
        amount_to_pay: from_sql_text(r.get_ref(3)?)?,
        status: r.get(4)?,
    })
}

fn load_invoice(tx: &Transaction<'_>, id: i64) -> Result<InvoiceState> {
    tx.query_row(
        &format!("{INVOICE_COLUMNS} WHERE id = ?1"),
        [id],
        invoice_row,
    )
    .optional()?
    .ok_or_else(|| Error::not_found(format!("invoice {id} does not exist")))
}

fn named_open_invoice(tx: &Transaction<'_>, id: i64, account_id: i64) -> Result<InvoiceState> {
    let invoice = load_invoice(tx, id)?;
    if invoice.account_id != account_id {
        return Err(Error::bad_request(format!(
            "invoice {} belongs to billing account {}, not to the payment's account {account_id}",
            invoice.invoice_num, invoice.account_id
        )));
    }
    if invoice.status != "OPEN" {
        return Err(Error::conflict(format!(
            "invoice {} is {}; only OPEN invoices take payments",
            invoice.invoice_num, invoice.status
        )));
    }
    Ok(invoice)
}

fn open_invoices_oldest_first(tx: &Transaction<'_>, account_id: i64) -> Result<Vec<InvoiceState>> {
    let mut stmt = tx.prepare_cached(&format!(
        "{INVOICE_COLUMNS} WHERE billing_account_id = ?1 AND status = 'OPEN' ORDER BY occurred_on, id"
    ))?;
    let rows = stmt
        .query_map([account_id], invoice_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

fn sort_oldest_first(tx: &Transaction<'_>, list: Vec<InvoiceState>) -> Result<Vec<InvoiceState>> {
    let mut keyed = list
        .into_iter()
        .map(|i| {
            let occurred: String = tx.query_row(
                "SELECT occurred_on FROM invoices WHERE id = ?1",
                [i.id],
                |r| r.get(0),
            )?;
            Ok((occurred, i))
        })
        .collect::<Result<Vec<_>>>()?;
    keyed.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.id.cmp(&b.1.id)));
    keyed.dedup_by_key(|(_, i)| i.id);
    Ok(keyed.into_iter().map(|(_, i)| i).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::accounts::{create_account, NewAccount};
    use crate::domain::billing::{create_invoice, create_payment, NewInvoice, NewPayment};
    use std::str::FromStr;

    fn dec(s: &str) -> Decimal {
        Decimal::from_str(s).unwrap()
    }

    fn invoice(tx: &Transaction<'_>, num: &str, amount: &str, on: &str) -> i64 {
        let i = NewInvoice {
            id: None,
            invoice_num: num.into(),
            billing_account_id: 1,
            bill_batch_run_id: None,
            invoice_type: None,
            amount: dec(amount),
            description: None,
            occurred_on: on.into(),
            due_date: None,
            status: None,
        };
        create_invoice(tx, &i, chrono_tz::UTC).unwrap()
    }

    #[test]
    fn open_invoices_are_paid_oldest_first_and_the_rest_stays_unapplied() {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        crate::store::sqlite::configure(&conn).unwrap();
        crate::store::sqlite::migrate(&mut conn).unwrap();
        let tx = conn.transaction().unwrap();
        let account: NewAccount =
            serde_json::from_value(serde_json::json!({"id": 1, "account_num": "A", "name": "A"}))
                .unwrap();
        create_account(&tx, &account, chrono_tz::UTC).unwrap();
        let newer = invoice(&tx, "N", "30", "2026-02-01");
        let older = invoice(&tx, "O", "20", "2026-01-01");
        let payment = NewPayment {
            id: None,
            billing_account_id: 1,
            amount: dec("45.5"),
            description: None,
            reference: None,
            occurred_on: "2026-03-01".into(),
            payment_method: None,
        };
        let pid = create_payment(&tx, &payment, chrono_tz::UTC).unwrap();
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
        let balance: String = tx
            .query_row(
                "SELECT balance FROM billing_accounts WHERE id = 1",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(balance, "4.5");
        let (status, paid): (String, Option<String>) = tx
            .query_row(
                "SELECT status, paid_date FROM invoices WHERE id = ?1",
                [older],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((status.as_str(), paid.as_deref()), ("CLOSED", Some("T")));
        let again = apply_payment(&tx, pid, &PaymentTarget::OpenInvoices, "T");
        assert!(matches!(again, Err(Error::Conflict(_))));
    }
}
