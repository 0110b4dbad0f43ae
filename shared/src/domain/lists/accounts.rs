//! Billing accounts and their categories as records (`super::records`): the columns,
//! joins and named filters Surface A's `billingAccounts` and `billingAccountCategories`
//! read through. Reads only: `domain::accounts` writes these tables.

use crate::domain::accounts::{ACCOUNT_STATUSES, BILL_TYPES, CATEGORY_STATUSES};
use crate::query::{FieldKind as K, FieldSpec as F, ListSource};

/// The billing account records.
pub static RECORDS: ListSource = ListSource {
    noun: "billing account",
    fields: &[
        F::new("id", "t.id", K::Integer),
        F::new("account_num", "t.account_num", K::Text),
        F::new("external_account_num", "t.external_account_num", K::Text),
        F::new("name", "t.name", K::Text),
        F::new("bill_type", "t.bill_type", K::Enum(BILL_TYPES)),
        F::new(
            "automatic_recurring_payment",
            "t.automatic_recurring_payment",
            K::Bool,
        ),
        F::new("status", "t.status", K::Enum(ACCOUNT_STATUSES)),
        F::new("balance", "t.balance", K::Decimal),
        F::new(
            "pending_charges_total",
            "t.pending_charges_total",
            K::Decimal,
        ),
        F::new("currency_code", "t.currency_code", K::Text),
        F::new("tax_exempt", "t.tax_exempt", K::Bool),
        F::new("start_date", "t.start_date", K::DateTime),
        F::new("end_date", "t.end_date", K::DateTime),
        F::new("next_invoice_date", "t.next_invoice_date", K::DateTime),
        // The account's own payment term (net days); NULL: the tenant policy's.
        F::new("payment_term_days", "t.payment_term_days", K::Integer),
        F::new(
            "billing_account_category_id",
            "t.billing_account_category_id",
            K::Integer,
        ),
        F::new("bill_cycle_id", "t.bill_cycle_id", K::Integer),
    ],
    named_filters: &[
        "account_num",
        "external_account_num",
        "status",
        "bill_type",
        "billing_account_category_id",
        "bill_cycle_id",
    ],
    from: "billing_accounts t",
    id: "t.id",
};

/// The billing account category records.
pub static CATEGORY_RECORDS: ListSource = ListSource {
    noun: "billing account category",
    fields: &[
        F::new("id", "t.id", K::Integer),
        F::new("name", "t.name", K::Text),
        F::new("type", "t.type", K::Text),
        F::new("description", "t.description", K::Text),
        F::new("status", "t.status", K::Enum(CATEGORY_STATUSES)),
        F::new("conversion_currency", "t.conversion_currency", K::Text),
    ],
    named_filters: &["status", "type", "name"],
    from: "billing_account_categories t",
    id: "t.id",
};
