//! Route group `legacy`: Surface A, the legacy XML REST interface under `/t/s/r/1.28`.
//! HTTP Basic credentials name the tenant; errors are XML faults.

use axum::extract::{FromRef, FromRequestParts};
use axum::http::{header, request::Parts, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use shared::web::{xml_fault, xml_namespace, AppState, Tenant, LEGACY_PREFIX};

/// This group's routes, unbound (the local server merges them with the other groups).
pub fn routes() -> Router<AppState> {
    Router::new().route(&format!("{LEGACY_PREFIX}/users/current"), get(current_user))
}

/// This group's routes as a served router (what the Lambda binary runs).
pub fn router(state: AppState) -> Router {
    shared::web::finish(routes(), state)
}

/// A Surface A error: an XML fault with a status and failure reason.
#[derive(Debug)]
pub struct Fault {
    status: StatusCode,
    reason: &'static str,
    message: String,
}

impl Fault {
    /// 401 with `WWW-Authenticate: Basic`.
    fn unauthorized() -> Self {
        Fault {
            status: StatusCode::UNAUTHORIZED,
            reason: "GENERAL",
            message: "Authentication required: send HTTP Basic credentials of a sandbox tenant."
                .into(),
        }
    }
}

impl From<shared::Error> for Fault {
    fn from(e: shared::Error) -> Self {
        let api = shared::web::ApiError::from(e);
        let reason = match api.status {
            StatusCode::BAD_REQUEST => "VALIDATION_FAILURE",
            StatusCode::CONFLICT => "ALREADY_EXISTS",
            _ => "GENERAL",
        };
        Fault {
            status: api.status,
            reason,
            message: api.message,
        }
    }
}

impl IntoResponse for Fault {
    fn into_response(self) -> Response {
        let mut response = xml_fault(self.status, self.reason, &self.message);
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"billing-sandbox\""),
            );
        }
        response
    }
}

/// The tenant of a Surface A request (HTTP Basic).
pub struct BasicAuth(pub Tenant);

impl<S> FromRequestParts<S> for BasicAuth
where
    AppState: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = Fault;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let app = AppState::from_ref(state);
        let Some((user, pass)) = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(shared::auth::parse_basic)
        else {
            return Err(Fault::unauthorized());
        };
        let record = app
            .store
            .registry()
            .find_by_basic(&user, &pass)?
            .ok_or_else(Fault::unauthorized)?;
        Ok(BasicAuth(app.tenant(record)?))
    }
}

/// An XML answer with the right content type.
fn xml(body: String) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/xml"),
        )],
        body,
    )
        .into_response()
}

async fn current_user(BasicAuth(tenant): BasicAuth) -> Response {
    let esc = |s: &str| quick_xml::escape::escape(s).into_owned();
    xml(format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<user xmlns=\"{}\" username=\"{}\" tenantId=\"{}\" timeZone=\"{}\"/>",
        esc(&xml_namespace()),
        esc(&tenant.record.name),
        esc(&tenant.record.id),
        esc(&tenant.record.time_zone),
    ))
}
