//! `billingAccounts`: the billing accounts Surfaces B and C see, with create and edit.

use crate::entity::{col, create_and_answer, edit_and_show, Entity, Filter};
use crate::fault::Fault;
use crate::fields::Fields;
use crate::request::{BasicAuth, Eid, XmlBody};
use crate::xml::Node;
use axum::response::Response;
use rusqlite::Row;
use shared::domain::accounts::{
    create_account, edit_account, AccountEdit, NewAccount, ACCOUNT_STATUSES, BILL_TYPES,
};
use shared::domain::bill_batch_membership::join_category_bill_batches;

/// The billing account read model.
pub static ENTITY: Entity = Entity {
    collection: "billingAccounts",
    element: "billingAccount",
    columns: "t.id, t.account_num, t.external_account_num, t.name, t.bill_type, \
             t.automatic_recurring_payment, t.status, t.balance, t.pending_charges_total, \
             t.currency_code, t.tax_exempt, t.start_date, t.end_date, t.next_invoice_date, \
             t.billing_account_category_id, t.bill_cycle_id",
    from: "billing_accounts t",
    filters: &[
        Filter::text("accountNum", "t.account_num"),
        Filter::text("externalAccountNum", "t.external_account_num"),
        Filter::one_of("status", "t.status", ACCOUNT_STATUSES),
        Filter::one_of("billType", "t.bill_type", BILL_TYPES),
        Filter::integer("billingAccountCategoryEid", "t.billing_account_category_id"),
        Filter::integer("billCycleEid", "t.bill_cycle_id"),
    ],
    render,
};

fn render(r: &Row<'_>, tz: chrono_tz::Tz) -> rusqlite::Result<Node> {
    let mut node = Node::new("billingAccount")
        .attr("eid", r.get::<_, i64>("id")?)
        .attr("accountNum", r.get::<_, String>("account_num")?)
        .opt_attr("externalAccountNum", col::text(r, "external_account_num")?)
        .attr("name", r.get::<_, String>("name")?)
        .attr("billType", r.get::<_, String>("bill_type")?)
        .attr(
            "automaticRecurringPayment",
            col::boolean(r, "automatic_recurring_payment")?,
        )
        .attr("status", r.get::<_, String>("status")?)
        .opt_attr("balance", col::money(r, "balance")?)
        .opt_attr(
            "pendingChargesTotal",
            col::money(r, "pending_charges_total")?,
        )
        .attr("currencyType", r.get::<_, String>("currency_code")?)
        .attr("taxExempt", col::boolean(r, "tax_exempt")?)
        .opt_attr("startDate", col::time(r, "start_date", tz)?)
        .opt_attr("endDate", col::time(r, "end_date", tz)?)
        .opt_attr("nextInvoiceDate", col::time(r, "next_invoice_date", tz)?);
    if let Some(eid) = col::int(r, "billing_account_category_id")? {
        node = node.child(Node::new("billingAccountCategory").attr("eid", eid));
    }
    if let Some(eid) = col::int(r, "bill_cycle_id")? {
        node = node.child(Node::new("billCycle").attr("eid", eid));
    }
    Ok(node)
}

/// Attributes a client may echo back from a GET but cannot set.
const READ_ONLY: &[&str] = &["eid", "balance", "pendingChargesTotal", "currencyType"];

/// `POST billingAccounts`: creates an account, which joins the ACTIVE bill batches of its
/// category; answers its eid. An absent `accountNum` is generated (`BA-00000007`, see
/// `shared::domain::accounts::create_account`).
pub async fn create(
    BasicAuth(tenant): BasicAuth,
    XmlBody(body): XmlBody,
) -> Result<Response, Fault> {
    let mut f = Fields::new(&body, "billingAccount")?;
    // Without accountNum (as in the spec's own sample) the platform numbers the account.
    let account = NewAccount {
        id: None,
        account_num: f.text("accountNum"),
        name: f.text("name"),
        external_account_num: f.text("externalAccountNum"),
        billing_account_category_id: f.reference("billingAccountCategory")?,
        bill_cycle_id: f.reference("billCycle")?,
        bill_type: f.text("billType"),
        automatic_recurring_payment: f.boolean("automaticRecurringPayment")?.unwrap_or(false),
        status: f.text("status"),
        currency_code: f.text("currencyType"),
        tax_exempt: f.boolean("taxExempt")?.unwrap_or(false),
        start_date: f.text("startDate"),
    };
    f.ignore(&["eid", "balance", "pendingChargesTotal"]);
    f.finish()?;
    create_and_answer(&ENTITY, &tenant, move |tx, tz| {
        let eid = create_account(tx, &account, tz)?;
        join_category_bill_batches(tx, eid)?;
        Ok(eid)
    })
    .await
}

/// `PUT billingAccounts/{eid}`: changes the attributes the body carries; answers the account.
/// Status moves only through the suspend, resume and deactivate commands.
pub async fn edit(
    BasicAuth(tenant): BasicAuth,
    Eid(eid): Eid,
    XmlBody(body): XmlBody,
) -> Result<Response, Fault> {
    let mut f = Fields::new(&body, "billingAccount")?;
    check_same_eid(&mut f, eid)?;
    let edit = AccountEdit {
        account_num: f.text("accountNum"),
        external_account_num: f.text("externalAccountNum"),
        name: f.text("name"),
        bill_type: f.text("billType"),
        automatic_recurring_payment: f.boolean("automaticRecurringPayment")?,
        tax_exempt: f.boolean("taxExempt")?,
        billing_account_category_id: f.reference("billingAccountCategory")?,
        bill_cycle_id: f.reference("billCycle")?,
        start_date: f.text("startDate"),
        end_date: f.text("endDate"),
        next_invoice_date: f.text("nextInvoiceDate"),
        status: f.text("status"),
    };
    f.ignore(READ_ONLY);
    f.finish()?;
    edit_and_show(&ENTITY, &tenant, eid, move |tx, tz| {
        edit_account(tx, eid, &edit, tz)?;
        if edit.billing_account_category_id.is_some() {
            join_category_bill_batches(tx, eid)?;
        }
        Ok(())
    })
    .await
}

/// Refuses a body whose `eid` names another object than the path.
pub fn check_same_eid(f: &mut Fields<'_>, eid: i64) -> Result<(), Fault> {
    match f.integer("eid")? {
        Some(body_eid) if body_eid != eid => Err(Fault::validation(format!(
            "the body's eid {body_eid} does not match the path's eid {eid}"
        ))),
        _ => Ok(()),
    }
}
