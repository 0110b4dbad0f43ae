//! Commands: `applyPayment` on invoices and billing accounts, the billing account status
//! commands `suspend`, `resume` and `deactivate`, the account commands `addAdjustment`,
//! `addNote`, `billOnDemand` and `moveToBillCycle`, and invoice `cancel`. A refused state
//! change is 409 GENERAL; every answer is a `commandResponse` (or `applyPaymentResponse`)
//! with `successful="true"` and the objects the command changed.

use crate::entity::find;
use crate::fault::Fault;
use crate::fields::{eid_of, Fields};
use crate::payments::read_draft;
use crate::request::{BasicAuth, Eid, OptionalXmlBody, XmlBody};
use crate::xml::{Element, Node};
use crate::xml_schema::{Attribute, Kind, Occurs, Part, Shape, EID_ONLY};
use crate::{accounts, invoices, notes, payments, xml_answer};
use axum::http::StatusCode;
use axum::response::Response;
use chrono_tz::Tz;
use rusqlite::Transaction;
use shared::domain::account_commands::{
    add_note as store_note, bill_on_demand as bill_account, move_to_bill_cycle as move_account,
    OnDemandBill,
};
use shared::domain::accounts::{change_status, StatusCommand};
use shared::domain::adjustments::{add_credit, NewCredit};
use shared::domain::invoices::cancel_invoice;
use shared::domain::payments::{
    apply_for_command, CommandTarget, PaymentApplication, PaymentSource,
};

/// `<applyPayment>`: the payment (a new one, or a recorded one by `eid`) and, on a billing
/// account, the invoices to pay (a bare `<payment>` is taken too).
pub static APPLY_PAYMENT: Shape = Shape {
    element: "applyPayment",
    attrs: &[],
    parts: &[
        Part::Global("payment", Occurs::One),
        Part::Local {
            element: "invoices",
            attrs: &[],
            parts: &[Part::Global("invoice", Occurs::Many)],
            occurs: Occurs::Optional,
        },
    ],
};

/// The answer of `applyPayment`: the payment, and what went to each invoice.
pub static APPLY_PAYMENT_RESPONSE: Shape = Shape {
    element: "applyPaymentResponse",
    attrs: &[Attribute::required("successful", Kind::Boolean)],
    parts: &[
        Part::Global("payment", Occurs::One),
        Part::Local {
            element: "paymentApplication",
            attrs: &[Attribute::required("amount", Kind::Decimal)],
            parts: &[Part::Global("invoice", Occurs::One)],
            occurs: Occurs::Many,
        },
    ],
};

/// The answer of every other command: the eid of what it created, a credit's applied
/// amount, and the objects it changed (a note; an invoice; the account), in this order.
pub static COMMAND_RESPONSE: Shape = Shape {
    element: "commandResponse",
    attrs: &[
        Attribute::required("successful", Kind::Boolean),
        Attribute::optional("eid", Kind::Long),
        Attribute::optional("appliedAmount", Kind::Decimal),
    ],
    parts: &[
        Part::Global("note", Occurs::Optional),
        Part::Global("invoice", Occurs::Optional),
        Part::Global("billingAccount", Occurs::Optional),
    ],
};

/// `<addAdjustment amount="" description="" occurredOn="" adjustmentType="CREDIT">` with
/// optional `<invoice eid=""/>` and `<reason eid=""/>`.
pub static ADD_ADJUSTMENT: Shape = Shape {
    element: "addAdjustment",
    attrs: &[
        Attribute::required("amount", Kind::Decimal),
        Attribute::optional("description", Kind::Text),
        Attribute::optional("occurredOn", Kind::DateTime),
        Attribute::optional("adjustmentType", Kind::OneOf(&["CREDIT"])),
    ],
    parts: &[
        Part::Local {
            element: "invoice",
            attrs: EID_ONLY,
            parts: &[],
            occurs: Occurs::Optional,
        },
        Part::Local {
            element: "reason",
            attrs: EID_ONLY,
            parts: &[],
            occurs: Occurs::Optional,
        },
    ],
};

/// `<addNote note=""/>`.
pub static ADD_NOTE: Shape = Shape {
    element: "addNote",
    attrs: &[Attribute::required("note", Kind::Text)],
    parts: &[],
};

/// `<billOnDemand description="" occurredOn="" dueDate=""/>` (the body is optional).
pub static BILL_ON_DEMAND: Shape = Shape {
    element: "billOnDemand",
    attrs: &[
        Attribute::optional("description", Kind::Text),
        Attribute::optional("occurredOn", Kind::DateTime),
        Attribute::optional("dueDate", Kind::DateTime),
    ],
    parts: &[],
};

/// `<moveToBillCycle><billCycle eid=""/></moveToBillCycle>`.
pub static MOVE_TO_BILL_CYCLE: Shape = Shape {
    element: "moveToBillCycle",
    attrs: &[],
    parts: &[Part::Local {
        element: "billCycle",
        attrs: EID_ONLY,
        parts: &[],
        occurs: Occurs::One,
    }],
};

/// `<cancel/>` (the body is optional).
pub static CANCEL: Shape = empty("cancel");
static SUSPEND: Shape = empty("suspend");
static RESUME: Shape = empty("resume");
static DEACTIVATE: Shape = empty("deactivate");

const fn empty(element: &'static str) -> Shape {
    Shape {
        element,
        attrs: &[],
        parts: &[],
    }
}

/// The (empty, optional) body of a status command, named after it.
pub fn status_request(command: StatusCommand) -> &'static Shape {
    match command {
        StatusCommand::Suspend => &SUSPEND,
        StatusCommand::Resume => &RESUME,
        StatusCommand::Deactivate => &DEACTIVATE,
    }
}

/// An `applyPayment` body: `<applyPayment><payment .../><invoices><invoice eid=""/>...
/// </invoices></applyPayment>`, or a bare `<payment>`.
#[derive(Debug, Clone)]
struct ApplyRequest {
    payment: PaymentSource,
    invoices: Vec<i64>,
}

fn read_apply(body: &Element) -> Result<ApplyRequest, Fault> {
    if body.name == "payment" {
        return Ok(ApplyRequest {
            payment: read_payment(body)?,
            invoices: Vec::new(),
        });
    }
    let mut f = Fields::new(body, APPLY_PAYMENT.element)?;
    let payment = f
        .child("payment")
        .ok_or_else(|| Fault::validation("<applyPayment> needs a <payment> element"))?;
    let payment = read_payment(payment)?;
    let mut invoices = Vec::new();
    if let Some(list) = f.child("invoices") {
        let mut inner = Fields::new(list, "invoices")?;
        for invoice in inner.children("invoice") {
            invoices.push(eid_of(invoice, "invoices")?);
        }
        inner.finish()?;
    }
    f.finish()?;
    Ok(ApplyRequest { payment, invoices })
}

/// `<payment eid="..."/>` names a recorded payment (other attributes a GET rendered are
/// ignored); a payment without eid is a new one.
fn read_payment(body: &Element) -> Result<PaymentSource, Fault> {
    match body.attrs.iter().find(|(k, _)| k == "eid") {
        Some((_, v)) => v.trim().parse().map(PaymentSource::Recorded).map_err(|_| {
            Fault::validation(format!(
                "payment eid {} is not a 64-bit integer",
                shared::error::quoted(v)
            ))
        }),
        None => read_draft(body).map(PaymentSource::New),
    }
}

fn apply_answer(
    tx: &Transaction<'_>,
    payment_id: i64,
    applied: &[PaymentApplication],
    tz: Tz,
) -> shared::Result<Node> {
    let mut answer = Node::new(APPLY_PAYMENT_RESPONSE.element)
        .attr("successful", true)
        .child(find(&payments::ENTITY, tx, payment_id, tz)?);
    for a in applied {
        answer = answer.child(
            Node::new("paymentApplication")
                .attr("amount", shared::money::canonical(a.amount))
                .child(find(&invoices::ENTITY, tx, a.invoice_id, tz)?),
        );
    }
    Ok(answer)
}

/// Runs an `applyPayment` command and answers the payment with what went where. The time
/// of the command (the applications' date, and a new payment's when it names none) is read
/// from the tenant clock inside the write transaction.
async fn apply(
    tenant: shared::web::Tenant,
    target: CommandTarget,
    request: ApplyRequest,
) -> Result<Response, Fault> {
    let tz = tenant.tz;
    let node = tenant
        .db
        .write(move |tx| {
            let now = shared::time::to_storage(shared::time::now_for(tx)?);
            let (payment, applied) = apply_for_command(tx, &target, &request.payment, &now, tz)?;
            apply_answer(tx, payment, &applied, tz)
        })
        .await
        .map_err(Fault::command)?;
    Ok(xml_answer(StatusCode::OK, node))
}

/// `POST invoices/{eid}/applyPayment`: applies a payment (recorded or new) to this invoice;
/// what the invoice does not need stays unapplied on the payment.
pub async fn apply_to_invoice(
    BasicAuth(tenant): BasicAuth,
    Eid(eid): Eid,
    XmlBody(body): XmlBody,
) -> Result<Response, Fault> {
    let request = read_apply(&body)?;
    if !request.invoices.is_empty() {
        return Err(Fault::validation(
            "invoices/{eid}/applyPayment pays the invoice in its path; <invoices> is for billingAccounts/{eid}/applyPayment",
        ));
    }
    apply(tenant, CommandTarget::Invoice(eid), request).await
}

/// `POST billingAccounts/{eid}/applyPayment`: applies a payment to the listed invoices, or
/// else to the account's open invoices, oldest first; any remainder stays unapplied.
pub async fn apply_to_account(
    BasicAuth(tenant): BasicAuth,
    Eid(eid): Eid,
    XmlBody(body): XmlBody,
) -> Result<Response, Fault> {
    let request = read_apply(&body)?;
    let target = CommandTarget::Account {
        account_id: eid,
        invoices: request.invoices.clone(),
    };
    apply(tenant, target, request).await
}

/// What a command made or changed: the eid of an object it created (shown on the answer)
/// and the objects to show, as they are after it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Outcome {
    eid: Option<i64>,
    shown: Vec<Node>,
}

/// Runs a command's write in one transaction and answers 200 `commandResponse
/// successful="true"` with the outcome's eid and objects; a refusal is the command's fault
/// (409 GENERAL for a refused state change).
async fn run_command<F>(tenant: shared::web::Tenant, command: F) -> Result<Response, Fault>
where
    F: Fn(&Transaction<'_>, Tz) -> shared::Result<Outcome> + Send + 'static,
{
    let tz = tenant.tz;
    let outcome = tenant
        .db
        .write(move |tx| command(tx, tz))
        .await
        .map_err(Fault::command)?;
    let mut answer = Node::new(COMMAND_RESPONSE.element).attr("successful", true);
    if let Some(eid) = outcome.eid {
        answer = answer.attr("eid", eid);
    }
    Ok(xml_answer(StatusCode::OK, answer.children(outcome.shown)))
}

/// `POST billingAccounts/{eid}/<command>` for a status command; the body is optional and,
/// when sent, is an empty element named after the command.
pub async fn change_account_status(
    command: StatusCommand,
    BasicAuth(tenant): BasicAuth,
    Eid(eid): Eid,
    OptionalXmlBody(body): OptionalXmlBody,
) -> Result<Response, Fault> {
    if let Some(body) = &body {
        Fields::new(body, status_request(command).element)?.finish()?;
    }
    run_command(tenant, move |tx, tz| {
        let now = shared::time::to_storage(shared::time::now_for(tx)?);
        change_status(tx, eid, command, &now)?;
        Ok(Outcome {
            eid: None,
            shown: vec![find(&accounts::ENTITY, tx, eid, tz)?],
        })
    })
    .await
}

/// `POST billingAccounts/{eid}/addAdjustment`: a credit adjustment, applied to the named
/// open invoice as far as it needs (the rest stays unapplied on the adjustment).
/// Body: `<addAdjustment amount="" description="" occurredOn=""><invoice eid=""/>
/// <reason eid=""/></addAdjustment>`; only CREDIT adjustments are taken.
pub async fn add_adjustment(
    BasicAuth(tenant): BasicAuth,
    Eid(eid): Eid,
    XmlBody(body): XmlBody,
) -> Result<Response, Fault> {
    let mut f = Fields::new(&body, ADD_ADJUSTMENT.element)?;
    if let Some(kind) = f.text("adjustmentType").filter(|k| k != "CREDIT") {
        return Err(Fault::validation(format!(
            "adjustmentType: '{kind}' is not supported; addAdjustment takes CREDIT adjustments"
        )));
    }
    let credit = NewCredit {
        billing_account_id: eid,
        amount: f
            .decimal("amount")?
            .ok_or_else(|| Fault::validation("attribute amount is required on <addAdjustment>"))?,
        description: f.text("description"),
        occurred_on: f.text("occurredOn"),
        reason_id: f.reference("reason")?,
        invoice_id: f.reference("invoice")?,
        posted_by: Some(tenant.record.name.clone()),
    };
    f.finish()?;
    let tz = tenant.tz;
    let node = tenant
        .db
        .write(move |tx| {
            // The time of the command, read inside its write as every command reads it.
            let now = shared::time::to_storage(shared::time::now_for(tx)?);
            let outcome = add_credit(tx, &credit, &now, tz)?;
            Ok(Node::new(COMMAND_RESPONSE.element)
                .attr("successful", true)
                .attr("eid", outcome.adjustment_id)
                .attr("appliedAmount", shared::money::canonical(outcome.applied))
                .child(find(&accounts::ENTITY, tx, eid, tz)?))
        })
        .await
        .map_err(Fault::command)?;
    Ok(xml_answer(StatusCode::OK, node))
}

/// `POST billingAccounts/{eid}/addNote`: `<addNote note="..."/>` keeps a dated note on the
/// account (read back at `billingAccounts/{eid}/notes`); answers the note and its eid.
pub async fn add_note(
    BasicAuth(tenant): BasicAuth,
    Eid(eid): Eid,
    XmlBody(body): XmlBody,
) -> Result<Response, Fault> {
    let mut f = Fields::new(&body, ADD_NOTE.element)?;
    let note = f.required("note")?;
    f.finish()?;
    let by = tenant.record.name.clone();
    run_command(tenant, move |tx, tz| {
        let now = shared::time::to_storage(shared::time::now_for(tx)?);
        let id = store_note(tx, eid, &note, Some(&by), &now)?;
        Ok(Outcome {
            eid: Some(id),
            shown: vec![find(&notes::ENTITY, tx, id, tz)?],
        })
    })
    .await
}

/// `POST billingAccounts/{eid}/billOnDemand`: the account's pending charges become one OPEN
/// invoice now. The body is optional: `<billOnDemand description="" occurredOn=""
/// dueDate=""/>`. Answers the invoice (its eid too) and the account afterwards.
pub async fn bill_on_demand(
    BasicAuth(tenant): BasicAuth,
    Eid(eid): Eid,
    OptionalXmlBody(body): OptionalXmlBody,
) -> Result<Response, Fault> {
    let mut bill = OnDemandBill::default();
    if let Some(body) = &body {
        let mut f = Fields::new(body, BILL_ON_DEMAND.element)?;
        bill.description = f.text("description");
        bill.occurred_on = f.text("occurredOn");
        bill.due_date = f.text("dueDate");
        f.finish()?;
    }
    run_command(tenant, move |tx, tz| {
        let now = shared::time::to_storage(shared::time::now_for(tx)?);
        let invoice = bill_account(tx, eid, &bill, &now, tz)?;
        Ok(Outcome {
            eid: Some(invoice),
            shown: vec![
                find(&invoices::ENTITY, tx, invoice, tz)?,
                find(&accounts::ENTITY, tx, eid, tz)?,
            ],
        })
    })
    .await
}

/// `POST billingAccounts/{eid}/moveToBillCycle`: `<moveToBillCycle><billCycle eid=""/>
/// </moveToBillCycle>` moves the account to that cycle from its next billing day; answers
/// the account.
pub async fn move_to_bill_cycle(
    BasicAuth(tenant): BasicAuth,
    Eid(eid): Eid,
    XmlBody(body): XmlBody,
) -> Result<Response, Fault> {
    let mut f = Fields::new(&body, MOVE_TO_BILL_CYCLE.element)?;
    let cycle = f.reference("billCycle")?.ok_or_else(|| {
        Fault::validation("<billCycle eid=\"...\"/> is required in <moveToBillCycle>")
    })?;
    f.finish()?;
    run_command(tenant, move |tx, tz| {
        let today = shared::time::now_for(tx)?.with_timezone(&tz).date_naive();
        move_account(tx, eid, cycle, today, tz)?;
        Ok(Outcome {
            eid: None,
            shown: vec![find(&accounts::ENTITY, tx, eid, tz)?],
        })
    })
    .await
}

/// `POST invoices/{eid}/cancel`: an unpaid invoice becomes CANCELED (body optional, an empty
/// `<cancel/>`); answers the invoice and its account afterwards.
pub async fn cancel(
    BasicAuth(tenant): BasicAuth,
    Eid(eid): Eid,
    OptionalXmlBody(body): OptionalXmlBody,
) -> Result<Response, Fault> {
    if let Some(body) = &body {
        Fields::new(body, CANCEL.element)?.finish()?;
    }
    run_command(tenant, move |tx, tz| {
        let now = shared::time::to_storage(shared::time::now_for(tx)?);
        cancel_invoice(tx, eid, &now)?;
        let account = shared::domain::invoices::invoice_account(tx, eid)?;
        Ok(Outcome {
            eid: None,
            shown: vec![
                find(&invoices::ENTITY, tx, eid, tz)?,
                find(&accounts::ENTITY, tx, account, tz)?,
            ],
        })
    })
    .await
}
