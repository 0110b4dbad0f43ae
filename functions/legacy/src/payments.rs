//! `payments`, with create and edit. A new payment is wholly unapplied until `applyPayment`.

use crate::accounts::check_same_eid;
use crate::entity::{create_and_answer, edit_and_show, Child, Entity, Field};
use crate::fault::Fault;
use crate::fields::Fields;
use crate::request::{BasicAuth, Eid, XmlBody};
use crate::xml::Element;
use axum::response::Response;
use shared::domain::payments::create_payment;
use shared::domain::payments::{
    edit_payment, PaymentDraft, PaymentEdit, PAYMENT_METHODS, PAYMENT_STATUSES,
};
use shared::query::{FieldKind as K, FieldSpec as F};

/// The payment read model.
pub static ENTITY: Entity = Entity {
    collection: "payments",
    element: "payment",
    fields: &[
        Field::long("eid", "t.id"),
        Field::money("amount", "t.amount"),
        Field::text("description", "t.description"),
        Field::text("reference", "t.reference"),
        Field::time("occurredOn", "t.occurred_on"),
        Field::money("unappliedAmount", "t.unapplied_amount"),
        Field::money("receivedAmount", "t.received_amount"),
        Field::money("refundedAmount", "t.refunded_amount"),
        Field::money("canceledAmount", "t.canceled_amount"),
        Field::one_of("status", "t.status", PAYMENT_STATUSES),
    ],
    children: &[
        crate::notes::ACCOUNT_REF,
        Child::Named {
            column: "t.payment_method",
            elements: PAYMENT_METHODS,
        },
    ],
    from: "payments t JOIN billing_accounts a ON a.id = t.billing_account_id",
    filters: &[
        F::new("billingAccountEid", "t.billing_account_id", K::Integer),
        F::new("accountNum", "a.account_num", K::Text),
        F::new("status", "t.status", K::Enum(PAYMENT_STATUSES)),
        F::new("reference", "t.reference", K::Text),
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
