//! The web console at `/sandbox/console`: three static files (functions/admin/console/),
//! embedded in the binary, served without credentials. The page asks for the admin key (or
//! reads it from the URL fragment `#admin_key=...`, which browsers never send) and then
//! calls only the public admin API and the surfaces' APIs, so it shows nothing they do not.
//!
//! Invariant: the page loads nothing but these files and talks only to its own origin; the
//! Content-Security-Policy says so to the browser (no inline script, no other origin).

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use shared::web::AppState;

/// Where the console is served.
pub const CONSOLE_PATH: &str = "/sandbox/console";

const INDEX: &str = include_str!("../console/index.html");
const APP_JS: &str = include_str!("../console/app.js");
const STYLE_CSS: &str = include_str!("../console/style.css");

/// Same origin only, nothing inline, no framing; `data:` images for the copy icons.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The console's routes (the page and its two assets), unbound.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            CONSOLE_PATH,
            get(|| async { asset("text/html; charset=utf-8", INDEX) }),
        )
        .route(
            &format!("{CONSOLE_PATH}/app.js"),
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            &format!("{CONSOLE_PATH}/style.css"),
            get(|| async { asset("text/css; charset=utf-8", STYLE_CSS) }),
        )
}

/// One embedded file with the console's security headers. `no-cache`: a new binary's page
/// is picked up at once (the files are small).
fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-cache"),
            (header::X_FRAME_OPTIONS, "DENY"),
        ],
        body,
    )
        .into_response()
}
