//! `notes`: the notes `billingAccounts/{eid}/addNote` keeps on an account, read back as a
//! collection (`notes?billingAccountEid=`, or `billingAccounts/{eid}/notes`) and by eid.
//! Notes are never edited or deleted.

use crate::entity::{list_under, Child, Entity, Field, Parent};
use crate::fault::Fault;
use crate::request::{BasicAuth, Eid, Query};
use axum::response::Response;
use shared::query::{FieldKind as K, FieldSpec as F};

/// The note read model.
pub static ENTITY: Entity = Entity {
    collection: "notes",
    element: "note",
    fields: &[
        Field::long("eid", "t.id"),
        Field::text("note", "t.note"),
        Field::time("createdOn", "t.created_on"),
        Field::text("createdBy", "t.created_by"),
    ],
    children: &[ACCOUNT_REF],
    from: "account_notes t JOIN billing_accounts a ON a.id = t.billing_account_id",
    filters: &[
        F::new("billingAccountEid", "t.billing_account_id", K::Integer),
        F::new("accountNum", "a.account_num", K::Text),
    ],
};

/// The reference to a record's billing account that notes, invoices and payments show:
/// `<billingAccount eid="" accountNum=""/>` (their table joins the account as `a`).
pub const ACCOUNT_REF: Child = Child::Ref {
    element: "billingAccount",
    eid: "t.billing_account_id",
    fields: &[Field::text("accountNum", "a.account_num")],
};

/// `GET billingAccounts/{eid}/notes`: one page of the account's notes, oldest first (404
/// for an unknown account); takes the collection's paging keys.
pub async fn of_account(auth: BasicAuth, eid: Eid, params: Query) -> Result<Response, Fault> {
    let parent = Parent {
        key: "billingAccountEid",
        table: "billing_accounts",
        what: "billing account",
    };
    list_under(&ENTITY, parent, auth, eid, params).await
}
