//! Account notes as records (`super::records`), with the account number of the account
//! each is kept on; read by Surface A's `notes`. Reads only: `domain::account_commands`
//! writes the notes.

use super::Parent;
use crate::query::{FieldKind as K, FieldSpec as F, ListSource};

/// The note records.
pub static RECORDS: ListSource = ListSource {
    noun: "note",
    fields: &[
        F::new("id", "t.id", K::Integer),
        F::new("note", "t.note", K::Text),
        F::new("created_on", "t.created_on", K::DateTime),
        F::new("created_by", "t.created_by", K::Text),
        F::new("billing_account_id", "t.billing_account_id", K::Integer),
        F::new("account_num", "a.account_num", K::Text),
    ],
    named_filters: &["billing_account_id", "account_num"],
    from: "account_notes t JOIN billing_accounts a ON a.id = t.billing_account_id",
    id: "t.id",
};

/// The notes of one billing account.
pub const UNDER_ACCOUNT: Parent = Parent {
    table: "billing_accounts",
    noun: "billing account",
    condition: "t.billing_account_id = ?",
};
