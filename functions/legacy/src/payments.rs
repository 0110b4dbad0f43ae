//! `payments`, with create and edit. A new payment is wholly unapplied until `applyPayment`.

use crate::accounts::check_same_eid;
use crate::entity::{col, create_and_answer, edit_and_show, Entity, Filter};
use crate::fault::Fault;
use crate::fields::Fields;
use crate::request::{BasicAuth, Eid, XmlBody};
use crate::xml::{Element, Node};
use axum::response::Response;
use rusqlite::Row;
use shared::domain::payments::create_payment;
use shared::domain::payments::{
    edit_payment, PaymentDraft, PaymentEdit, PAYMENT_METHODS, PAYMENT_STATUSES,
};

/// The payment read model.
pub static ENTITY: Entity = Entity {
    collection: "payments",
    element: "payment",
    columns: "t.id, t.amount, t.description, t.reference, t.occurred_on, \
             t.unapplied_amount, t.received_amount, t.refunded_amount, t.canceled_amount, \
             t.status, t.payment_method, t.billing_account_id, a.account_num",
    from: "payments t JOIN billing_accounts a ON a.id = t.billing_account_id",
    filters: &[
        Filter::integer("billingAccountEid", "t.billing_account_id"),
        Filter::text("accountNum", "a.account_num"),
        Filter::one_of("status", "t.status", PAYMENT_STATUSES),
        Filter::text("reference", "t.reference"),
    ],
    render,
};

fn render(r: &Row<'_>, tz: chrono_tz::Tz) -> rusqlite::Result<Node> {
    Ok(Node::new("payment")
        .attr("eid", r.get::<_, i64>("id")?)
        .opt_attr("amount", col::money(r, "amount")?)
        .opt_attr("description", col::text(r, "description")?)
        .opt_attr("reference", col::text(r, "reference")?)
        .opt_attr("occurredOn", col::time(r, "occurred_on", tz)?)
        .opt_attr("unappliedAmount", col::money(r, "unapplied_amount")?)
        .opt_attr("receivedAmount", col::money(r, "received_amount")?)
        .opt_attr("refundedAmount", col::money(r, "refunded_amount")?)
        .opt_attr("canceledAmount", col::money(r, "canceled_amount")?)
        .attr("status", r.get::<_, String>("status")?)
        .child(
            Node::new("billingAccount")
                .attr("eid", r.get::<_, i64>("billing_account_id")?)
                .attr("accountNum", r.get::<_, String>("account_num")?),
        )
        .child(Node::new(r.get::<_, String>("payment_method")?)))
}

/// Attributes of a payment that only the platform sets.
const READ_ONLY: &[&str] = &[
    "eid",
    "unappliedAmount",
    "receivedAmount",
    "refundedAmount",
    "canceledAmount",
    "status",
];

/// Reads a `<payment>` element into the domain's draft; a missing `occurredOn` stays unset,
/// to be dated by the write that records the payment (the tenant clock read inside its
/// transaction, as every write reads it).
pub fn read_draft(body: &Element) -> Result<PaymentDraft, Fault> {
    let mut f = Fields::new(body, "payment")?;
    let amount = f
        .decimal("amount")?
        .ok_or_else(|| Fault::validation("attribute amount is required on <payment>"))?;
    let account = f.reference("billingAccount")?;
    let methods: Vec<&str> = PAYMENT_METHODS
        .iter()
        .copied()
        .filter(|m| !f.children(m).is_empty())
        .collect();
    if methods.len() > 1 {
        return Err(Fault::validation(format!(
            "a payment carries one payment method, found {}",
            methods.join(", ")
        )));
    }
    let draft = PaymentDraft {
        billing_account_id: account,
        amount,
        description: f.text("description"),
        reference: f.text("reference"),
        occurred_on: f.text("occurredOn"),
        payment_method: methods.first().map(|m| m.to_string()),
    };
    f.ignore(READ_ONLY);
    f.finish()?;
    Ok(draft)
}

/// `POST payments`: records a payment (`amount` and a `billingAccount` child required).
pub async fn create(
    BasicAuth(tenant): BasicAuth,
    XmlBody(body): XmlBody,
) -> Result<Response, Fault> {
    let draft = read_draft(&body)?;
    create_and_answer(&ENTITY, &tenant, move |tx, tz| {
        let now = shared::time::to_storage(shared::time::now_for(tx)?);
        create_payment(tx, &draft.for_account(None, &now)?, tz)
    })
    .await
}

/// `PUT payments/{eid}`: changes description and reference; amounts move only through
/// applications, so the other attributes of a GET are ignored.
pub async fn edit(
    BasicAuth(tenant): BasicAuth,
    Eid(eid): Eid,
    XmlBody(body): XmlBody,
) -> Result<Response, Fault> {
    let mut f = Fields::new(&body, "payment")?;
    check_same_eid(&mut f, eid)?;
    let edit = PaymentEdit {
        description: f.text("description"),
        reference: f.text("reference"),
    };
    f.ignore(READ_ONLY);
    f.ignore(&["amount", "occurredOn"]);
    f.children("billingAccount");
    for method in PAYMENT_METHODS {
        f.children(method);
    }
    f.finish()?;
    edit_and_show(&ENTITY, &tenant, eid, move |tx, _tz| {
        edit_payment(tx, eid, &edit)
    })
    .await
}
