//! Payments as records (`super::records`), with their account's number; read by Surface
//! A's `payments`. Reads only: `domain::payments` writes the table.

use crate::domain::payments::PAYMENT_STATUSES;
use crate::query::{FieldKind as K, FieldSpec as F, ListSource};

/// The payment records.
pub static RECORDS: ListSource = ListSource {
    noun: "payment",
    fields: &[
        F::new("id", "t.id", K::Integer),
        F::new("amount", "t.amount", K::Decimal),
        F::new("description", "t.description", K::Text),
        F::new("reference", "t.reference", K::Text),
        F::new("occurred_on", "t.occurred_on", K::DateTime),
        F::new("unapplied_amount", "t.unapplied_amount", K::Decimal),
        F::new("received_amount", "t.received_amount", K::Decimal),
        F::new("refunded_amount", "t.refunded_amount", K::Decimal),
        F::new("canceled_amount", "t.canceled_amount", K::Decimal),
        F::new("status", "t.status", K::Enum(PAYMENT_STATUSES)),
        F::new("billing_account_id", "t.billing_account_id", K::Integer),
        F::new("account_num", "a.account_num", K::Text),
        // One of `payments::PAYMENT_METHODS`, or NULL.
        F::new("payment_method", "t.payment_method", K::Text),
    ],
    named_filters: &["billing_account_id", "account_num", "status", "reference"],
    from: "payments t JOIN billing_accounts a ON a.id = t.billing_account_id",
    id: "t.id",
};
