//! `billingAccounts`: the billing accounts Surfaces B and C see, with create and edit.

use crate::entity::{create_and_answer, edit_and_show, Child, Entity, Field, Key};
use crate::fault::Fault;
use crate::fields::Fields;
use crate::request::{BasicAuth, Eid, XmlBody};
use axum::response::Response;
use shared::domain::accounts::{
    create_account, edit_account, AccountEdit, NewAccount, ACCOUNT_STATUSES, BILL_TYPES,
};
use shared::domain::bill_batch_membership::join_category_bill_batches;

/// `billingAccount`: the XML names of the domain's billing account records.
pub static ENTITY: Entity = Entity {
    collection: "billingAccounts",
    element: "billingAccount",
    fields: &[
        Field::long("eid", "id"),
        Field::text("accountNum", "account_num"),
        Field::text("externalAccountNum", "external_account_num"),
        Field::text("name", "name"),
        Field::one_of("billType", "bill_type", BILL_TYPES),
        Field::boolean("automaticRecurringPayment", "automatic_recurring_payment"),
        Field::one_of("status", "status", ACCOUNT_STATUSES),
        Field::money("balance", "balance"),
        Field::money("pendingChargesTotal", "pending_charges_total"),
        Field::text("currencyType", "currency_code"),
        Field::boolean("taxExempt", "tax_exempt"),
        Field::time("startDate", "start_date"),
        Field::time("endDate", "end_date"),
        Field::time("nextInvoiceDate", "next_invoice_date"),
        // The account's own payment term (net days); absent: the tenant policy's.
        Field::long("paymentTermDays", "payment_term_days"),
    ],
    children: &[
        Child::Ref {
            element: "billingAccountCategory",
            eid: "billing_account_category_id",
            fields: &[],
        },
        Child::Ref {
            element: "billCycle",
            eid: "bill_cycle_id",
            fields: &[],
        },
    ],
    records: &shared::domain::lists::accounts::RECORDS,
    keys: &[
        Key::new("accountNum", "account_num"),
        Key::new("externalAccountNum", "external_account_num"),
        Key::new("status", "status"),
        Key::new("billType", "bill_type"),
        Key::new("billingAccountCategoryEid", "billing_account_category_id"),
        Key::new("billCycleEid", "bill_cycle_id"),
    ],
};

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
        payment_term_days: f.integer("paymentTermDays")?,
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
        payment_term_days: f.integer("paymentTermDays")?,
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
