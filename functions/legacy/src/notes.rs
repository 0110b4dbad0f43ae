//! `notes`: the notes `billingAccounts/{eid}/addNote` keeps on an account, read back as a
//! collection (`notes?billingAccountEid=`, or `billingAccounts/{eid}/notes`) and by eid.
//! Notes are never edited or deleted.

use crate::entity::{list_under, Child, Entity, Field, Key, Parent};
use crate::fault::Fault;
use crate::request::{BasicAuth, Eid, Query};
use axum::response::Response;

/// `note`: the XML names of the domain's note records.
pub static ENTITY: Entity = Entity {
    collection: "notes",
    element: "note",
    fields: &[
        Field::long("eid", "id"),
        Field::text("note", "note"),
        Field::time("createdOn", "created_on"),
        Field::text("createdBy", "created_by"),
    ],
    children: &[ACCOUNT_REF],
    records: &shared::domain::lists::notes::RECORDS,
    keys: &[
        Key::new("billingAccountEid", "billing_account_id"),
        Key::new("accountNum", "account_num"),
    ],
};

/// The reference to a record's billing account that notes, invoices and payments show:
/// `<billingAccount eid="" accountNum=""/>` (their records carry `billing_account_id` and
/// `account_num`).
pub const ACCOUNT_REF: Child = Child::Ref {
    element: "billingAccount",
    eid: "billing_account_id",
    fields: &[Field::text("accountNum", "account_num")],
};

/// `GET billingAccounts/{eid}/notes`: one page of the account's notes, oldest first (404
/// for an unknown account); takes the collection's paging keys.
pub async fn of_account(auth: BasicAuth, eid: Eid, params: Query) -> Result<Response, Fault> {
    let parent = Parent {
        key: "billingAccountEid",
        of: shared::domain::lists::notes::UNDER_ACCOUNT,
    };
    list_under(&ENTITY, parent, auth, eid, params).await
}
