//! Route group `legacy`: Surface A, the legacy XML REST interface under `/t/s/r/1.28`.
//! HTTP Basic credentials name the tenant; bodies and answers are XML in the domain
//! namespace; errors are XML faults. Every endpoint is declared once in [`routes::table`],
//! which builds both the router and the WADL.

pub mod accounts;
pub mod categories;
pub mod commands;
pub mod entity;
pub mod fault;
pub mod fields;
pub mod invoices;
pub mod notes;
pub mod payments;
pub mod readonly;
pub mod request;
pub mod routes;
pub mod users;
pub mod wadl;
pub mod xml;
pub mod xml_schema;

pub use fault::Fault;
pub use request::BasicAuth;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use shared::config::Config;
use shared::web::{AppState, LEGACY_PREFIX};
use xml::Node;
use xml_schema::{Attribute, Kind, Shape};

/// Default XML domain namespace of Surface A.
pub use shared::web::surface::DEFAULT_XML_NAMESPACE;

/// Takes Surface A's settings from `config` (its namespace; see
/// [`shared::web::surface::set_xml_namespace`]: the first call wins).
pub fn configure(config: &Config) {
    shared::web::surface::set_xml_namespace(config.xml_namespace.as_deref());
}

/// The XML domain namespace of Surface A (from the configuration, else the default).
pub fn xml_namespace() -> &'static str {
    shared::web::surface::xml_namespace()
}

/// This group's routes, unbound (the local server merges them with the other groups).
pub fn routes() -> Router<AppState> {
    let prefix = format!("{LEGACY_PREFIX}/");
    let endpoints = shared::web::routes::mount(
        &[prefix.as_str()],
        routes::table()
            .into_iter()
            .map(|route| (route.verb, route.path, route.handler)),
    );
    Router::new()
        .route(LEGACY_PREFIX, get(wadl::serve))
        .route(&format!("{LEGACY_PREFIX}/"), get(wadl::serve))
        .route(
            &format!("{LEGACY_PREFIX}/{}", wadl::WADL_PATH),
            get(wadl::serve_wadl),
        )
        .route(
            &format!("{LEGACY_PREFIX}/{}", xml_schema::XSD_PATH),
            get(wadl::serve_xsd),
        )
        .merge(endpoints)
}

/// This group's routes as a served router (what the Lambda binary runs).
pub fn router(state: AppState) -> Router {
    configure(&state.config);
    shared::web::finish(routes(), state)
}

/// An XML answer: `root` in the domain namespace, with the XML content type.
pub fn xml_answer(status: StatusCode, root: Node) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/xml"),
        )],
        xml::document(root, xml_namespace()),
    )
        .into_response()
}

/// The answer to a create: `<createResponse successful="true" eid=""/>`.
pub static CREATE_RESPONSE: Shape = Shape {
    element: "createResponse",
    attrs: &[
        Attribute::required("successful", Kind::Boolean),
        Attribute::required("eid", Kind::Long),
    ],
    parts: &[],
};

/// The answer to a create: 201 with `Location` and `<createResponse successful eid>`.
pub fn created(collection: &str, eid: i64) -> Response {
    let mut response = xml_answer(
        StatusCode::CREATED,
        Node::new(CREATE_RESPONSE.element)
            .attr("successful", true)
            .attr("eid", eid),
    );
    if let Ok(location) = HeaderValue::from_str(&format!("{LEGACY_PREFIX}/{collection}/{eid}")) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}
