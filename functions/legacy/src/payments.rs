//! `payments`, with create and edit. A new payment is wholly unapplied until `applyPayment`.

use crate::accounts::check_same_eid;
use crate::entity::{create_and_answer, edit_and_show, Child, Entity, Field, Key};
use crate::fault::Fault;
use crate::fields::Fields;
use crate::request::{BasicAuth, Eid, XmlBody};
use crate::xml::Element;
use axum::response::Response;
use shared::domain::payments::create_payment;
use shared::domain::payments::{
    edit_payment, PaymentDraft, PaymentEdit, PAYMENT_METHODS, PAYMENT_STATUSES,
};

/// `payment`: the XML names of the domain's payment records.
pub static ENTITY: Entity = Entity {
    collection: "payments",
    element: "payment",
    fields: &[
        Field::long("eid", "id"),
        Field::money("amount", "amount"),
        Field::text("description", "description"),
        Field::text("reference", "reference"),
        Field::time("occurredOn", "occurred_on"),
        Field::money("unappliedAmount", "unapplied_amount"),
        Field::money("receivedAmount", "received_amount"),
        Field::money("refundedAmount", "refunded_amount"),
        Field::money("canceledAmount", "canceled_amount"),
        Field::one_of("status", "status", PAYMENT_STATUSES),
    ],
    children: &[
        crate::notes::ACCOUNT_REF,
        Child::Named {
            column: "payment_method",
            elements: PAYMENT_METHODS,
        },
    ],
    records: &shared::domain::lists::payments::RECORDS,
    keys: &[
        Key::new("billingAccountEid", "billing_account_id"),
        Key::new("accountNum", "account_num"),
        Key::new("status", "status"),
        Key::new("reference", "reference"),
    ],
};

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
