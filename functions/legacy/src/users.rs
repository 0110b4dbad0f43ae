//! `users`: the users of the tenant. A sandbox tenant has one user, the one its HTTP Basic
//! credentials name, so the collection holds exactly that user, with eid 1 (the platform
//! gives every object a numeric eid; the tenant record has none, so the sandbox numbers its
//! only user 1). `users/current` is the user of the credentials, as on the platform.

use crate::entity::page_node;
use crate::fault::Fault;
use crate::request::{BasicAuth, Eid, Query};
use crate::xml::Node;
use crate::xml_answer;
use crate::xml_schema::{Attribute, Kind, Occurs, Part, Shape, PAGE_ATTRIBUTES};
use axum::http::StatusCode;
use axum::response::Response;
use shared::query::{FieldKind as K, FieldSpec as F};
use shared::web::listing::{read_page, LEGACY_PAGING};
use shared::web::Tenant;

/// The eid of a tenant's only user.
pub const USER_EID: i64 = 1;

/// `<user eid username tenantId timeZone/>`.
pub static USER: Shape = Shape {
    element: "user",
    attrs: &[
        Attribute::required("eid", Kind::Long),
        Attribute::required("username", Kind::Text),
        Attribute::required("tenantId", Kind::Text),
        Attribute::required("timeZone", Kind::Text),
    ],
    parts: &[],
};

/// The page of `users`.
pub static USERS: Shape = Shape {
    element: "users",
    attrs: PAGE_ATTRIBUTES,
    parts: &[Part::Global("user", Occurs::Many)],
};

/// Query keys of `GET users` besides the paging keys (`username=` keeps the user of that
/// name; the column is never read, the key is matched in code).
pub static FILTERS: &[F] = &[F::new("username", "username", K::Text)];

fn user(tenant: &Tenant) -> Node {
    // Written from USER's attribute list, so the answer and the XSD name the same ones.
    let values = [
        USER_EID.to_string(),
        tenant.record.name.clone(),
        tenant.record.id.clone(),
        tenant.record.time_zone.clone(),
    ];
    USER.attrs
        .iter()
        .zip(values)
        .fold(Node::new(USER.element), |node, (a, v)| node.attr(a.name, v))
}

/// `GET users/current`: the user of the credentials.
pub async fn current(BasicAuth(tenant): BasicAuth) -> Response {
    xml_answer(StatusCode::OK, user(&tenant))
}

/// `GET users/{eid}`: the tenant's user (eid 1); any other eid is 404.
pub async fn one(BasicAuth(tenant): BasicAuth, Eid(eid): Eid) -> Result<Response, Fault> {
    if eid != USER_EID {
        return Err(Fault::not_found(format!("user {eid} does not exist")));
    }
    Ok(xml_answer(StatusCode::OK, user(&tenant)))
}

/// `GET users`: one page of the tenant's users (its one user), paged like every collection.
pub async fn list(BasicAuth(tenant): BasicAuth, Query(params): Query) -> Result<Response, Fault> {
    let page = read_page(&params, &LEGACY_PAGING)?;
    let matches = params
        .get("username")
        .is_none_or(|name| *name == tenant.record.name);
    let total = i64::from(matches);
    let (_, offset) = page.limit_offset();
    let items = (offset < total).then(|| user(&tenant));
    Ok(xml_answer(
        StatusCode::OK,
        page_node(USERS.element, page, total, items.into_iter().collect()),
    ))
}
