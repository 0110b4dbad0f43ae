//! `billingAccountCategories`, with create and edit.

use crate::accounts::check_same_eid;
use crate::entity::{create_and_answer, edit_and_show, Entity, Field, Key};
use crate::fault::Fault;
use crate::fields::Fields;
use crate::request::{BasicAuth, Eid, XmlBody};
use axum::response::Response;
use shared::domain::accounts::{create_category, edit_category, CategoryFields, CATEGORY_STATUSES};

/// `billingAccountCategory`: the XML names of the domain's category records.
pub static ENTITY: Entity = Entity {
    collection: "billingAccountCategories",
    element: "billingAccountCategory",
    fields: &[
        Field::long("eid", "id"),
        Field::text("name", "name"),
        Field::text("type", "type"),
        Field::text("description", "description"),
        Field::one_of("status", "status", CATEGORY_STATUSES),
        Field::text("conversionCurrencyType", "conversion_currency"),
    ],
    children: &[],
    records: &shared::domain::lists::accounts::CATEGORY_RECORDS,
    keys: &[
        Key::new("status", "status"),
        Key::new("type", "type"),
        Key::new("name", "name"),
    ],
};

/// `POST billingAccountCategories`: `description` and `status` are required.
pub async fn create(
    BasicAuth(tenant): BasicAuth,
    XmlBody(body): XmlBody,
) -> Result<Response, Fault> {
    let mut f = Fields::new(&body, "billingAccountCategory")?;
    let category = CategoryFields {
        id: None,
        description: Some(f.required("description")?),
        name: f.text("name"),
        r#type: f.text("type"),
        status: Some(f.required("status")?),
        conversion_currency: f.text("conversionCurrencyType"),
    };
    f.ignore(&["eid"]);
    f.finish()?;
    create_and_answer(&ENTITY, &tenant, move |tx, _tz| {
        create_category(tx, &category)
    })
    .await
}

/// `PUT billingAccountCategories/{eid}`: changes the attributes the body carries.
pub async fn edit(
    BasicAuth(tenant): BasicAuth,
    Eid(eid): Eid,
    XmlBody(body): XmlBody,
) -> Result<Response, Fault> {
    let mut f = Fields::new(&body, "billingAccountCategory")?;
    check_same_eid(&mut f, eid)?;
    let edit = CategoryFields {
        id: None,
        name: f.text("name"),
        r#type: f.text("type"),
        description: f.text("description"),
        status: f.text("status"),
        conversion_currency: f.text("conversionCurrencyType"),
    };
    f.finish()?;
    edit_and_show(&ENTITY, &tenant, eid, move |tx, _tz| {
        edit_category(tx, eid, &edit)
    })
    .await
}
