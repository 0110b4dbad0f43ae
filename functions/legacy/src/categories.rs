//! `billingAccountCategories`, with create and edit.

use crate::accounts::check_same_eid;
use crate::entity::{col, create_and_answer, edit_and_show, Entity, Filter};
use crate::fault::Fault;
use crate::fields::Fields;
use crate::request::{BasicAuth, Eid, XmlBody};
use crate::xml::Node;
use axum::response::Response;
use rusqlite::Row;
use shared::domain::accounts::{create_category, edit_category, CategoryFields, CATEGORY_STATUSES};

/// The billing account category read model.
pub static ENTITY: Entity = Entity {
    collection: "billingAccountCategories",
    element: "billingAccountCategory",
    columns: "t.id, t.name, t.type, t.description, t.status, t.conversion_currency",
    from: "billing_account_categories t",
    filters: &[
        Filter::one_of("status", "t.status", CATEGORY_STATUSES),
        Filter::text("type", "t.type"),
        Filter::text("name", "t.name"),
    ],
    render,
};

fn render(r: &Row<'_>, _tz: chrono_tz::Tz) -> rusqlite::Result<Node> {
    Ok(Node::new("billingAccountCategory")
        .attr("eid", r.get::<_, i64>("id")?)
        .attr("name", r.get::<_, String>("name")?)
        .opt_attr("type", col::text(r, "type")?)
        .attr("description", r.get::<_, String>("description")?)
        .attr("status", r.get::<_, String>("status")?)
        .opt_attr(
            "conversionCurrencyType",
            col::text(r, "conversion_currency")?,
        ))
}

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
