//! Route tables: a surface declares each endpoint once, as a row holding its method, its
//! path, the handler that serves it and what its OpenAPI document says of it (a type of the
//! surface's own, since each surface documents its lists, reads and writes its way). The
//! router is mounted from the rows ([`mount`]) and the document is built from the same rows,
//! so a route cannot be served without being documented, nor documented without being served.
//!
//! Invariants: a (method, path) pair appears once in a table (axum refuses the same method
//! twice on a path); the rows of one path are merged into one method router, mounted under
//! each of the surface's prefixes.

use crate::web::AppState;
use axum::routing::{MethodFilter, MethodRouter};
use axum::Router;
use std::collections::BTreeMap;

/// An HTTP method of a route table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verb {
    /// Read.
    Get,
    /// Create or run a command.
    Post,
    /// Replace or edit.
    Put,
    /// Remove.
    Delete,
}

impl Verb {
    /// The method's name (`GET`).
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "GET",
            Verb::Post => "POST",
            Verb::Put => "PUT",
            Verb::Delete => "DELETE",
        }
    }

    /// Its key in an OpenAPI path item (`get`).
    pub fn key(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::Post => "post",
            Verb::Put => "put",
            Verb::Delete => "delete",
        }
    }

    /// The axum method filter.
    pub fn filter(self) -> MethodFilter {
        match self {
            Verb::Get => MethodFilter::GET,
            Verb::Post => MethodFilter::POST,
            Verb::Put => MethodFilter::PUT,
            Verb::Delete => MethodFilter::DELETE,
        }
    }
}

/// One endpoint of a route table whose rows say nothing but their method, path, handler and
/// document (`D`, the surface's own description: Surface C's and the admin API's `Doc`).
/// Surface B's rows also name the Lambda that serves them and Surface A's their query keys,
/// so those tables declare their own row.
pub struct Route<D> {
    /// The method.
    pub verb: Verb,
    /// Path below the surface's base path, e.g. `/ledgers/{id}`.
    pub path: &'static str,
    /// What the document says of it.
    pub doc: D,
    /// The handler, bound to the row's method.
    pub handler: Handler,
}

/// A row's handler: given the row's method, the axum method router that serves it
/// (`|m| on(m, handler)`; a function pointer, so a table can be a plain list).
pub type Handler = fn(MethodFilter) -> MethodRouter<AppState>;

/// The router of `rows` (method, path below the prefix, handler), every path mounted under
/// each of `prefixes`.
pub fn mount(
    prefixes: &[&str],
    rows: impl IntoIterator<Item = (Verb, &'static str, Handler)>,
) -> Router<AppState> {
    let mut by_path: BTreeMap<&'static str, MethodRouter<AppState>> = BTreeMap::new();
    for (verb, path, handler) in rows {
        let method = handler(verb.filter());
        let merged = match by_path.remove(path) {
            Some(known) => known.merge(method),
            None => method,
        };
        by_path.insert(path, merged);
    }
    let mut router = Router::new();
    for prefix in prefixes {
        for (path, method) in &by_path {
            router = router.route(&format!("{prefix}{path}"), method.clone());
        }
    }
    router
}

/// The names of the `{parameters}` of a path template, in order.
pub fn path_params(path: &str) -> Vec<&str> {
    path.split('{')
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_params_are_read_in_order() {
        assert_eq!(
            path_params("/ledgers/{id}/calendar/years/{yid}/accounting-periods/{pid}/open"),
            ["id", "yid", "pid"]
        );
        assert!(path_params("/ledgers").is_empty());
    }
}
