//! Invoices and their lines as records (`super::records`), each invoice with its account's
//! number and each line with its invoice's number and its charge category's name; read by
//! Surface A's `invoices` and `invoices/{eid}/lines`. Reads only: `domain::invoices`
//! writes these tables.

use super::Parent;
use crate::domain::invoices::{INVOICE_LINE_TYPES, INVOICE_STATUSES};
use crate::query::{FieldKind as K, FieldSpec as F, ListSource};

/// The invoice records.
pub static RECORDS: ListSource = ListSource {
    noun: "invoice",
    fields: &[
        F::new("id", "t.id", K::Integer),
        F::new("invoice_num", "t.invoice_num", K::Text),
        F::new("external_invoice_num", "t.external_invoice_num", K::Text),
        F::new("invoice_type", "t.invoice_type", K::Text),
        F::new("amount", "t.amount", K::Decimal),
        F::new("amount_to_pay", "t.amount_to_pay", K::Decimal),
        F::new("description", "t.description", K::Text),
        F::new("occurred_on", "t.occurred_on", K::DateTime),
        F::new("due_date", "t.due_date", K::DateTime),
        F::new("paid_date", "t.paid_date", K::DateTime),
        F::new("status", "t.status", K::Enum(INVOICE_STATUSES)),
        F::new("billing_account_id", "t.billing_account_id", K::Integer),
        F::new("account_num", "a.account_num", K::Text),
    ],
    named_filters: &["invoice_num", "account_num", "billing_account_id", "status"],
    from: "invoices t JOIN billing_accounts a ON a.id = t.billing_account_id",
    id: "t.id",
};

/// The invoice line records.
pub static LINE_RECORDS: ListSource = ListSource {
    noun: "invoice line",
    fields: &[
        F::new("id", "t.id", K::Integer),
        F::new("line_num", "t.line_num", K::Integer),
        F::new("line_type", "t.line_type", K::Enum(INVOICE_LINE_TYPES)),
        F::new("amount", "t.amount", K::Decimal),
        F::new("description", "t.description", K::Text),
        F::new("service_id", "t.service_id", K::Integer),
        F::new("product_id", "t.product_id", K::Integer),
        F::new("product_price_id", "t.product_price_id", K::Integer),
        F::new("charge_category_id", "t.charge_category_id", K::Integer),
        F::new("charge_category_name", "c.name", K::Text),
        F::new("period_start_date", "t.period_start_date", K::DateTime),
        F::new("period_end_date", "t.period_end_date", K::DateTime),
        F::new("invoice_id", "t.invoice_id", K::Integer),
        F::new("invoice_num", "i.invoice_num", K::Text),
    ],
    named_filters: &["invoice_id"],
    from: "invoice_lines t JOIN invoices i ON i.id = t.invoice_id \
           LEFT JOIN charge_categories c ON c.id = t.charge_category_id",
    id: "t.id",
};

/// The lines of one invoice.
pub const LINES_UNDER_INVOICE: Parent = Parent {
    table: "invoices",
    noun: "invoice",
    condition: "t.invoice_id = ?",
};
