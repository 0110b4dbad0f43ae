//! Finishing a route group's router: the fallbacks for unknown paths and methods (in the
//! error shape of the path's surface), the pipeline (`super::pipeline`) around every route,
//! one trailing slash stripped before routing, and the request log. Every served router (each
//! Lambda's, the all-in-one and the local server's) is finished here, once.

use super::pipeline;
use super::state::AppState;
use super::surface::error_for_path;
use axum::extract::Request;
use axum::http::{Method, StatusCode, Uri};

/// Adds what every served router needs (see the module doc) and binds the state.
pub fn finish(routes: axum::Router<AppState>, state: AppState) -> axum::Router {
    let limit = state.config.max_body_bytes;
    let app = state.clone();
    let served = routes
        .method_not_allowed_fallback(|method: Method, uri: Uri| async move {
            let path = uri.path();
            let msg = format!("{method} is not supported on {path}");
            error_for_path(path, StatusCode::METHOD_NOT_ALLOWED, msg)
        })
        .fallback(|uri: Uri| async move {
            let path = uri.path();
            error_for_path(
                path,
                StatusCode::NOT_FOUND,
                format!("no such resource: {path}"),
            )
        })
        .layer(axum::extract::DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn(move |req, next| {
            pipeline::serve(app.clone(), req, next)
        }))
        .layer(axum::middleware::from_fn(pipeline::log_request))
        .with_state(state);
    // A layer on a Router runs after routing, so the rewrite wraps the finished router as a
    // service (axum's documented way for NormalizePath) inside an outer router that hands
    // every request to it: the routes see the rewritten path. tower-http's NormalizePath
    // trims every trailing slash; one is what clients add.
    axum::Router::new()
        .fallback_service(tower::ServiceExt::map_request(served, strip_trailing_slash))
}

/// Serves `/billing/2/agreements/` as `/billing/2/agreements` (the query string kept), on
/// every surface: clients and proxies that add a slash reach the same resource instead of a
/// 404. Only one slash goes (`...//` stays unknown); the root `/` stays.
fn strip_trailing_slash(mut req: Request) -> Request {
    let path = req.uri().path();
    let Some(trimmed) = path.strip_suffix('/').filter(|p| !p.is_empty()) else {
        return req;
    };
    let path_and_query = match req.uri().query() {
        Some(query) => format!("{trimmed}?{query}"),
        None => trimmed.to_string(),
    };
    let mut parts = req.uri().clone().into_parts();
    let Ok(path_and_query) = path_and_query.parse() else {
        return req;
    };
    parts.path_and_query = Some(path_and_query);
    if let Ok(uri) = Uri::from_parts(parts) {
        *req.uri_mut() = uri;
    }
    req
}

/// Installs the log subscriber: JSON lines under Lambda (`Config::lambda`), plain text
/// locally; the level comes from `RUST_LOG` (default `info`).
pub fn init_tracing(lambda: bool) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    let _ = if lambda {
        builder.json().without_time().try_init()
    } else {
        builder.try_init()
    };
}
