//! `invoices`, with create and edit. Amounts and status move through `applyPayment`.

use crate::accounts::check_same_eid;
use crate::entity::{create_and_answer, edit_and_show, Entity, Field, Filter};
use crate::fault::Fault;
use crate::fields::Fields;
use crate::request::{BasicAuth, Eid, XmlBody};
use axum::response::Response;
use shared::domain::invoices::{
    create_invoice, edit_invoice, InvoiceEdit, NewInvoice, INVOICE_STATUSES,
};

/// The invoice read model.
pub static ENTITY: Entity = Entity {
    collection: "invoices",
    element: "invoice",
    fields: &[
        Field::long("eid", "t.id"),
        Field::text("invoiceNum", "t.invoice_num"),
        Field::text("externalInvoiceNum", "t.external_invoice_num"),
        Field::text("invoiceType", "t.invoice_type"),
        Field::money("amount", "t.amount"),
        Field::money("amountToPay", "t.amount_to_pay"),
        Field::text("description", "t.description"),
        Field::time("occurredOn", "t.occurred_on"),
        Field::time("dueDate", "t.due_date"),
        Field::time("paidDate", "t.paid_date"),
        Field::one_of("status", "t.status", INVOICE_STATUSES),
    ],
    children: &[crate::notes::ACCOUNT_REF],
    from: "invoices t JOIN billing_accounts a ON a.id = t.billing_account_id",
    filters: &[
        Filter::text("invoiceNum", "t.invoice_num"),
        Filter::text("accountNum", "a.account_num"),
        Filter::integer("billingAccountEid", "t.billing_account_id"),
        Filter::one_of("status", "t.status", INVOICE_STATUSES),
    ],
};

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
