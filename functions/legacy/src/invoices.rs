//! `invoices`, with create and edit, and their lines (`invoices/{eid}/lines`, read only).
//! Amounts and status move through `applyPayment`. An invoice created here has one AMOUNT
//! line of its whole amount (the create takes no lines); runs and `billOnDemand` write the
//! lines of what they bill (docs/billing-lifecycle.md).

use crate::accounts::check_same_eid;
use crate::entity::{create_and_answer, edit_and_show, list_under, Child, Entity, Field, Parent};
use crate::fault::Fault;
use crate::fields::Fields;
use crate::request::{BasicAuth, Eid, Query, XmlBody};
use axum::response::Response;
use shared::domain::invoices::{
    create_invoice, edit_invoice, InvoiceEdit, NewInvoice, INVOICE_LINE_TYPES, INVOICE_STATUSES,
};
use shared::query::{FieldKind as K, FieldSpec as F};

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
        F::new("invoiceNum", "t.invoice_num", K::Text),
        F::new("accountNum", "a.account_num", K::Text),
        F::new("billingAccountEid", "t.billing_account_id", K::Integer),
        F::new("status", "t.status", K::Enum(INVOICE_STATUSES)),
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

/// The invoice line read model: what an invoice bills, part by part, in line order; the
/// amounts add up to the invoice's `amount`.
pub static LINES: Entity = Entity {
    collection: "invoiceLines",
    element: "invoiceLine",
    fields: &[
        Field::long("eid", "t.id"),
        Field::long("lineNum", "t.line_num"),
        Field::one_of("lineType", "t.line_type", INVOICE_LINE_TYPES),
        Field::money("amount", "t.amount"),
        Field::text("description", "t.description"),
        Field::long("serviceEid", "t.service_id"),
        Field::long("productEid", "t.product_id"),
        Field::long("productPriceEid", "t.product_price_id"),
        Field::long("chargeCategoryEid", "t.charge_category_id"),
        Field::text("chargeCategory", "c.name"),
        Field::time("periodStartDate", "t.period_start_date"),
        Field::time("periodEndDate", "t.period_end_date"),
    ],
    children: &[Child::Ref {
        element: "invoice",
        eid: "t.invoice_id",
        fields: &[Field::text("invoiceNum", "i.invoice_num")],
    }],
    from: "invoice_lines t JOIN invoices i ON i.id = t.invoice_id \
           LEFT JOIN charge_categories c ON c.id = t.charge_category_id",
    filters: &[F::new("invoiceEid", "t.invoice_id", K::Integer)],
};

/// `GET invoices/{eid}/lines`: one page of the invoice's lines, in line order (404 for an
/// unknown invoice); takes the collection's paging keys.
pub async fn lines(auth: BasicAuth, eid: Eid, params: Query) -> Result<Response, Fault> {
    let parent = Parent {
        key: "invoiceEid",
        table: "invoices",
        what: "invoice",
    };
    list_under(&LINES, parent, auth, eid, params).await
}
