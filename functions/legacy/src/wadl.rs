//! The WADL of Surface A (`GET /t/s/r/1.28?_wadl`), generated from the route table that
//! serves requests: every route is one `method` under the `resource` of its path.

use crate::entity::{Filter, FilterKind};
use crate::fault::Fault;
use crate::request::Query;
use crate::routes::{table, Route};
use crate::xml::{document, Node};
use crate::xml_namespace;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use shared::web::listing::LEGACY_PAGING;
use shared::web::{header_str, LEGACY_PREFIX};

/// The WADL namespace.
pub const WADL_NAMESPACE: &str = "http://wadl.dev.java.net/2009/02";
const XSD_NAMESPACE: &str = "http://www.w3.org/2001/XMLSchema";

/// `GET /t/s/r/1.28?_wadl`: the WADL. Without `_wadl` the root has nothing to show.
pub async fn serve(Query(params): Query, headers: HeaderMap) -> Response {
    if !params.contains_key("_wadl") {
        return Fault::not_found(format!(
            "the root lists nothing; GET {LEGACY_PREFIX}?_wadl describes every resource"
        ))
        .into_response();
    }
    let host = header_str(&headers, "host").unwrap_or("localhost");
    let scheme = header_str(&headers, "x-forwarded-proto").unwrap_or("http");
    let base = format!("{scheme}://{host}{LEGACY_PREFIX}/");
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/vnd.sun.wadl+xml"),
        )],
        wadl(&base, &table()),
    )
        .into_response()
}

/// The WADL document of `routes` with resources under `base`.
pub fn wadl(base: &str, routes: &[Route]) -> String {
    let mut paths: Vec<&str> = Vec::new();
    for r in routes {
        if !paths.contains(&r.path) {
            paths.push(r.path);
        }
    }
    let resources = paths.into_iter().map(|path| {
        let templates = path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{')?.strip_suffix('}'))
            .map(|name| {
                Node::new("param")
                    .attr("name", name)
                    .attr("style", "template")
                    .attr("type", "xs:long")
                    .attr("required", true)
            });
        Node::new("resource")
            .attr("path", path)
            .children(templates)
            .children(routes.iter().filter(|r| r.path == path).map(method))
    });
    let root = Node::new("application")
        .attr("xmlns:xs", XSD_NAMESPACE)
        .attr("xmlns:dom", xml_namespace())
        .child(Node::new("doc").attr(
            "title",
            "Billing sandbox, legacy XML REST interface 1.28 (HTTP Basic; bodies application/xml)",
        ))
        .child(
            Node::new("resources")
                .attr("base", base)
                .children(resources),
        );
    document(root, WADL_NAMESPACE)
}

fn method(route: &Route) -> Node {
    let mut request = Node::new("request");
    if let Some(entity) = route.lists {
        request = request
            .child(query_param("pageNumber", "xs:int", Some("1".into())))
            .child(query_param(
                "pageSize",
                "xs:int",
                Some(LEGACY_PAGING.rules.default_size.to_string()),
            ))
            .children(
                entity
                    .filters
                    .iter()
                    .filter(|f| !route.path_keys.contains(&f.key))
                    .map(filter_param),
            );
    }
    if let Some(element) = route.request {
        let mut representation = Node::new("representation")
            .attr("mediaType", "application/xml")
            .attr("element", format!("dom:{element}"));
        if route.request_optional {
            representation = representation
                .child(Node::new("doc").attr("title", "Optional: the request may carry no body."));
        }
        request = request.child(representation);
    }
    Node::new("method")
        .attr("name", route.verb.as_str())
        .attr("id", method_id(route))
        .child(Node::new("doc").attr("title", route.doc))
        .child(request)
        .child(
            Node::new("response")
                .attr("status", route.success_status())
                .child(
                    Node::new("representation")
                        .attr("mediaType", "application/xml")
                        .attr("element", format!("dom:{}", route.response)),
                ),
        )
}

fn query_param(name: &str, ty: &str, default: Option<String>) -> Node {
    Node::new("param")
        .attr("name", name)
        .attr("style", "query")
        .attr("type", ty)
        .opt_attr("default", default)
}

fn filter_param(filter: &Filter) -> Node {
    let ty = match filter.kind {
        FilterKind::Integer => "xs:long",
        FilterKind::Text | FilterKind::OneOf(_) => "xs:string",
    };
    let mut node = query_param(filter.key, ty, None);
    if let FilterKind::OneOf(values) = filter.kind {
        node = node.children(values.iter().map(|v| Node::new("option").attr("value", v)));
    }
    node
}

/// A unique method id, e.g. `post_billingAccounts_eid_applyPayment`.
fn method_id(route: &Route) -> String {
    let path: String = route
        .path
        .split('/')
        .map(|seg| seg.trim_start_matches('{').trim_end_matches('}'))
        .collect::<Vec<_>>()
        .join("_");
    format!("{}_{path}", route.verb.as_str().to_ascii_lowercase())
}
