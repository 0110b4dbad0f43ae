//! `notes`: the notes `billingAccounts/{eid}/addNote` keeps on an account, read back as a
//! collection (`notes?billingAccountEid=`, or `billingAccounts/{eid}/notes`) and by eid.
//! Notes are never edited or deleted.

use crate::entity::{col, page, Entity, Filter};
use crate::fault::Fault;
use crate::request::{BasicAuth, Eid, Query};
use crate::xml::Node;
use crate::xml_answer;
use axum::http::StatusCode;
use axum::response::Response;
use rusqlite::Row;
use shared::domain::require;

/// The note read model.
pub static ENTITY: Entity = Entity {
    collection: "notes",
    element: "note",
    columns: "t.id, t.note, t.created_on, t.created_by, t.billing_account_id, a.account_num",
    from: "account_notes t JOIN billing_accounts a ON a.id = t.billing_account_id",
    filters: &[
        Filter::integer("billingAccountEid", "t.billing_account_id"),
        Filter::text("accountNum", "a.account_num"),
    ],
    render,
};

fn render(r: &Row<'_>, tz: chrono_tz::Tz) -> rusqlite::Result<Node> {
    Ok(Node::new("note")
        .attr("eid", r.get::<_, i64>("id")?)
        .attr("note", r.get::<_, String>("note")?)
        .opt_attr("createdOn", col::time(r, "created_on", tz)?)
        .opt_attr("createdBy", col::text(r, "created_by")?)
        .child(
            Node::new("billingAccount")
                .attr("eid", r.get::<_, i64>("billing_account_id")?)
                .attr("accountNum", r.get::<_, String>("account_num")?),
        ))
}

/// `GET billingAccounts/{eid}/notes`: one page of the account's notes, oldest first (404
/// for an unknown account); takes the collection's paging keys.
pub async fn of_account(
    BasicAuth(tenant): BasicAuth,
    Eid(eid): Eid,
    Query(mut params): Query,
) -> Result<Response, Fault> {
    params.insert("billingAccountEid".into(), eid.to_string());
    let tz = tenant.tz;
    let node = tenant
        .db
        .read(move |conn| {
            require(conn, "billing_accounts", "billing account", eid)?;
            page(&ENTITY, conn, &params, tz)
        })
        .await?;
    Ok(xml_answer(StatusCode::OK, node))
}
