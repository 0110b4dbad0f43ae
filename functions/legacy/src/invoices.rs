//! `invoices`, with create and edit, and their lines (`invoices/{eid}/lines`, read only).
//! Amounts and status move through `applyPayment`. An invoice created here has one AMOUNT
//! line of its whole amount (the create takes no lines); runs and `billOnDemand` write the
//! lines of what they bill (docs/billing-lifecycle.md).

use crate::accounts::check_same_eid;
use crate::entity::{
    create_and_answer, edit_and_show, list_under, Child, Entity, Field, Key, Parent,
};
use crate::fault::Fault;
use crate::fields::Fields;
use crate::request::{BasicAuth, Eid, Query, XmlBody};
use axum::response::Response;
use shared::domain::invoices::{
    create_invoice, edit_invoice, InvoiceEdit, NewInvoice, INVOICE_LINE_TYPES, INVOICE_STATUSES,
};

/// `invoice`: the XML names of the domain's invoice records.
pub static ENTITY: Entity = Entity {
    collection: "invoices",
    element: "invoice",
    fields: &[
        Field::long("eid", "id"),
        Field::text("invoiceNum", "invoice_num"),
        Field::text("externalInvoiceNum", "external_invoice_num"),
        Field::text("invoiceType", "invoice_type"),
        Field::money("amount", "amount"),
        Field::money("amountToPay", "amount_to_pay"),
        Field::text("description", "description"),
        Field::time("occurredOn", "occurred_on"),
        Field::time("dueDate", "due_date"),
        Field::time("paidDate", "paid_date"),
        Field::one_of("status", "status", INVOICE_STATUSES),
    ],
    children: &[crate::notes::ACCOUNT_REF],
    records: &shared::domain::lists::invoices::RECORDS,
    keys: &[
        Key::new("invoiceNum", "invoice_num"),
        Key::new("accountNum", "account_num"),
        Key::new("billingAccountEid", "billing_account_id"),
        Key::new("status", "status"),
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
        lines: None,
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

/// `invoiceLine`: what an invoice bills, part by part, in eid order; the
/// amounts add up to the invoice's `amount`.
pub static LINES: Entity = Entity {
    collection: "invoiceLines",
    element: "invoiceLine",
    fields: &[
        Field::long("eid", "id"),
        Field::long("lineNum", "line_num"),
        Field::one_of("lineType", "line_type", INVOICE_LINE_TYPES),
        Field::money("amount", "amount"),
        Field::text("description", "description"),
        Field::long("serviceEid", "service_id"),
        Field::long("productEid", "product_id"),
        Field::long("productPriceEid", "product_price_id"),
        Field::long("chargeCategoryEid", "charge_category_id"),
        Field::text("chargeCategory", "charge_category_name"),
        Field::time("periodStartDate", "period_start_date"),
        Field::time("periodEndDate", "period_end_date"),
    ],
    children: &[Child::Ref {
        element: "invoice",
        eid: "invoice_id",
        fields: &[Field::text("invoiceNum", "invoice_num")],
    }],
    records: &shared::domain::lists::invoices::LINE_RECORDS,
    keys: &[Key::new("invoiceEid", "invoice_id")],
};

/// `GET invoices/{eid}/lines`: one page of the invoice's lines, in line order (404 for an
/// unknown invoice); takes the collection's paging keys.
pub async fn lines(auth: BasicAuth, eid: Eid, params: Query) -> Result<Response, Fault> {
    let parent = Parent {
        key: "invoiceEid",
        of: shared::domain::lists::invoices::LINES_UNDER_INVOICE,
    };
    list_under(&LINES, parent, auth, eid, params).await
}
