//! The WADL of Surface A (`GET /t/s/r/1.28?_wadl`, also at `application.wadl` as JAX-RS
//! stacks serve it) and its grammar, the XSD (`application.wadl/xsd0.xsd`), both generated
//! from the route table that serves requests: every route is one `method` under the
//! `resource` of its path, its representations name elements of the XSD (`dom:`), and the
//! XSD declares every body the routes name (and the fault). Neither needs credentials: they
//! hold no tenant data.

use crate::fault::{Fault, FAULT};
use crate::request::Query;
use crate::routes::{table, Route, Verb};
use crate::xml::{indented_document, Node};
use crate::xml_namespace;
use crate::xml_schema::{xsd, Body, XSD_PATH};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use shared::query::FieldKind;
use shared::web::listing::LEGACY_PAGING;
use shared::web::{header_str, LEGACY_PREFIX};

/// The WADL namespace.
pub const WADL_NAMESPACE: &str = "http://wadl.dev.java.net/2009/02";
const XSD_NAMESPACE: &str = "http://www.w3.org/2001/XMLSchema";

/// The WADL's path below the Surface A root (besides the root with `?_wadl`).
pub const WADL_PATH: &str = "application.wadl";

/// `GET /t/s/r/1.28?_wadl`: the WADL. Without `_wadl` the root has nothing to show.
pub async fn serve(Query(params): Query, headers: HeaderMap) -> Response {
    if !params.contains_key("_wadl") {
        return Fault::not_found(format!(
            "the root lists nothing; GET {LEGACY_PREFIX}?_wadl describes every resource"
        ))
        .into_response();
    }
    serve_wadl(headers).await
}

/// `GET /t/s/r/1.28/application.wadl`: the WADL.
pub async fn serve_wadl(headers: HeaderMap) -> Response {
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

/// `GET /t/s/r/1.28/application.wadl/xsd0.xsd`: the schema of every body.
pub async fn serve_xsd() -> Response {
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/xml"),
        )],
        schema(&table()),
    )
        .into_response()
}

/// The XSD of the bodies `routes` take and answer, and of the fault.
pub fn schema(routes: &[Route]) -> String {
    let bodies = routes
        .iter()
        .flat_map(|r| r.request.into_iter().chain([r.response]))
        .chain([Body::Message(&FAULT)]);
    xsd(bodies, xml_namespace())
}

/// The WADL document of `routes` with resources under `base` (an absolute URL ending in
/// `/`); its grammar is included from `base` + [`XSD_PATH`], absolute because the WADL is
/// served at two addresses that resolve a relative one differently.
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
            Node::new("grammars")
                .child(Node::new("include").attr("href", format!("{base}{XSD_PATH}"))),
        )
        .child(
            Node::new("resources")
                .attr("base", base)
                .children(resources),
        );
    indented_document(root, WADL_NAMESPACE)
}

fn method(route: &Route) -> Node {
    let mut request = Node::new("request");
    if let Some(filters) = route.lists {
        request = request
            .child(query_param("pageNumber", "xs:int", Some("1".into())))
            .child(query_param(
                "pageSize",
                "xs:int",
                Some(LEGACY_PAGING.rules.default_size.to_string()),
            ))
            .children(
                filters
                    .keys()
                    .into_iter()
                    .filter(|(name, _)| !route.path_keys.contains(name))
                    .map(|(name, kind)| filter_param(name, kind)),
            );
    }
    if let Some(element) = route.request {
        let mut representation = Node::new("representation")
            .attr("mediaType", "application/xml")
            .attr("element", format!("dom:{}", element.element()));
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
                        .attr("element", format!("dom:{}", route.response.element())),
                ),
        )
        .child(
            Node::new("response")
                .attr("status", fault_statuses(route))
                .child(
                    Node::new("representation")
                        .attr("mediaType", "application/xml")
                        .attr("element", format!("dom:{}", FAULT.element)),
                ),
        )
}

/// The statuses of the faults a route answers (docs/legacy.md, "Errors"): every request
/// may be refused (400), unauthenticated (401) or name a missing object (404); a body may be
/// a duplicate or a refused change (409), too large (413) or not XML (415).
fn fault_statuses(route: &Route) -> &'static str {
    match route.verb {
        Verb::Get | Verb::Delete => "400 401 404",
        Verb::Post | Verb::Put => "400 401 404 409 413 415",
    }
}

fn query_param(name: &str, ty: &str, default: Option<String>) -> Node {
    Node::new("param")
        .attr("name", name)
        .attr("style", "query")
        .attr("type", ty)
        .opt_attr("default", default)
}

fn filter_param(name: &str, kind: FieldKind) -> Node {
    let ty = match kind {
        FieldKind::Integer => "xs:long",
        // Surface A's keys are text, eids or enumerations (`entity::filter_value`).
        _ => "xs:string",
    };
    let mut node = query_param(name, ty, None);
    if let FieldKind::Enum(values) = kind {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The values of `attr="..."` in `doc` on elements whose text starts with `prefix`.
    fn values<'a>(doc: &'a str, prefix: &str, attr: &str) -> Vec<&'a str> {
        doc.split(prefix)
            .skip(1)
            .filter_map(|rest| {
                let tag = &rest[..rest.find('>')?];
                let start = tag.find(&format!(" {attr}=\""))? + attr.len() + 3;
                Some(&tag[start..start + tag[start..].find('"')?])
            })
            .collect()
    }

    #[test]
    fn every_element_the_wadl_names_is_declared_once_in_the_xsd() {
        let routes = table();
        let doc = wadl("http://h/t/s/r/1.28/", &routes);
        let schema = schema(&routes);
        let named = values(&doc, "<representation", "element");
        let declared = values(&schema, "<xs:element", "name");
        assert!(named.len() > 60, "{}", named.len());
        for element in &named {
            let local = element.strip_prefix("dom:").unwrap();
            // A top-level declaration carries a type attribute naming its own type.
            let global = format!("<xs:element name=\"{local}\" type=\"dom:{local}\"/>");
            assert_eq!(schema.matches(&global).count(), 1, "{element}");
        }
        assert!(declared.contains(&"fault"));
        let grammars = &doc[doc.find("<grammars>").unwrap()..doc.find("</grammars>").unwrap()];
        assert_eq!(
            values(grammars, "<include", "href"),
            [format!("http://h/t/s/r/1.28/{XSD_PATH}")]
        );
    }
}
