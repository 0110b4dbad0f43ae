//! `invoices`, with create and edit. Amounts and status move through `applyPayment`.

use crate::accounts::check_same_eid;
use crate::entity::{col, create_and_answer, edit_and_show, Entity, Filter};
use crate::fault::Fault;
use crate::fields::Fields;
use crate::request::{BasicAuth, Eid, XmlBody};
use crate::xml::Node;
use axum::response::Response;
use rusqlite::Row;
use shared::domain::invoices::{
    create_invoice, edit_invoice, InvoiceEdit, NewInvoice, INVOICE_STATUSES,
};

/// The invoice read model.
pub static ENTITY: Entity = Entity {
    collection: "invoices",
    element: "invoice",
    columns: "t.id, t.invoice_num, t.external_invoice_num, t.invoice_type, t.amount, \
             t.amount_to_pay, t.description, t.occurred_on, t.due_date, t.paid_date, t.status, \
             t.billing_account_id, a.account_num",
    from: "invoices t JOIN billing_accounts a ON a.id = t.billing_account_id",
    filters: &[
        Filter::text("invoiceNum", "t.invoice_num"),
        Filter::text("accountNum", "a.account_num"),
        Filter::integer("billingAccountEid", "t.billing_account_id"),
        Filter::one_of("status", "t.status", INVOICE_STATUSES),
    ],
    render,
};

fn render(r: &Row<'_>, tz: chrono_tz::Tz) -> rusqlite::Result<Node> {
    Ok(Node::new("invoice")
        .attr("eid", r.get::<_, i64>("id")?)
        .attr("invoiceNum", r.get::<_, String>("invoice_num")?)
        .opt_attr("externalInvoiceNum", col::text(r, "external_invoice_num")?)
        .attr("invoiceType", r.get::<_, String>("invoice_type")?)
        .opt_attr("amount", col::money(r, "amount")?)
        .opt_attr("amountToPay", col::money(r, "amount_to_pay")?)
        .opt_attr("description", col::text(r, "description")?)
        .opt_attr("occurredOn", col::time(r, "occurred_on", tz)?)
        .opt_attr("dueDate", col::time(r, "due_date", tz)?)
        .opt_attr("paidDate", col::time(r, "paid_date", tz)?)
        .attr("status", r.get::<_, String>("status")?)
        .child(
            Node::new("billingAccount")
                .attr("eid", r.get::<_, i64>("billing_account_id")?)
                .attr("accountNum", r.get::<_, String>("account_num")?),
        ))
}

/// `POST invoices`: `invoiceNum`, `amount`, `occurredOn` and a `billingAccount` child are
/// required; an OPEN invoice adds its amount to the account balance.
pub async fn create(
    BasicAuth(tenant): BasicAuth,
    XmlBody(body): XmlBody,
) -> Result<Response, Fault> {
    let mut f = Fields::new(&body, "invoice")?;
    let invoice = NewInvoice {
        id: None,
        invoice_num: f.required("invoiceNum")?,
        billing_account_id: f.reference("billingAccount")?.ok_or_else(|| {
            Fault::validation("<billingAccount eid=\"...\"/> is required in <invoice>")
        })?,
        bill_batch_run_id: None,
        invoice_type: f.text("invoiceType"),
        amount: f
            .decimal("amount")?
            .ok_or_else(|| Fault::validation("attribute amount is required on <invoice>"))?,
        description: f.text("description"),
        occurred_on: f.required("occurredOn")?,
        due_date: f.text("dueDate"),
        status: f.text("status"),
    };
    f.ignore(&["eid", "amountToPay", "paidDate"]);
    f.finish()?;
    create_and_answer(&ENTITY, &tenant, move |tx, tz| {
        create_invoice(tx, &invoice, tz)
    })
    .await
}

/// `PUT invoices/{eid}`: changes description, dueDate and externalInvoiceNum; the other
/// attributes of a GET may be echoed back and are ignored.
pub async fn edit(
    BasicAuth(tenant): BasicAuth,
    Eid(eid): Eid,
    XmlBody(body): XmlBody,
) -> Result<Response, Fault> {
    let mut f = Fields::new(&body, "invoice")?;
    check_same_eid(&mut f, eid)?;
    let edit = InvoiceEdit {
        description: f.text("description"),
        due_date: f.text("dueDate"),
        external_invoice_num: f.text("externalInvoiceNum"),
    };
    f.ignore(&[
        "invoiceNum",
        "invoiceType",
        "amount",
        "amountToPay",
        "occurredOn",
        "paidDate",
        "status",
    ]);
    f.children("billingAccount");
    f.finish()?;
    edit_and_show(&ENTITY, &tenant, eid, move |tx, tz| {
        edit_invoice(tx, eid, &edit, tz)
    })
    .await
}
