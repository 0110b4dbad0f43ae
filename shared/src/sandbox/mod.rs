//! The sandbox's powers over a tenant, beyond the platform's own behaviour: a test clock
//! ([`clock`]), fault injection ([`faults`]) and a request journal ([`journal`]); the admin
//! API (`functions/admin`) manages them. docs/sandbox.md describes them for users.
//!
//! [`serve`] is the layer every served router passes each request through (added by
//! `crate::web::finish_with`, inside the overload guard): it finds the tenant a request
//! belongs to (by the credential its surface authenticates with, or the tenant id in an
//! admin path), answers or delays it by a matching fault rule, and records it in the
//! journal. Requests of no tenant (bad credentials, tenant creation and listing, unknown
//! paths) pass through untouched. Admin requests are journaled (except the journal's own
//! reads) but never faulted, so a rule can always be deleted.

pub mod clock;
pub mod faults;
pub mod journal;

use crate::config::Config;
use crate::web::{
    header_str, ApiError, AppState, Authenticated, PathErrors, Tenant, ADMIN_PREFIX,
    BILLING_PREFIX, LEGACY_PREFIX,
};
use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The header naming the fault rule that answered or delayed a request.
pub const FAULT_HEADER: &str = "x-sandbox-fault";

/// This process's state of the powers: the journal and the fault draw counters.
pub struct Powers {
    /// The request journal of this environment.
    pub journal: journal::Journal,
    /// The draw counters of the fault rules in this environment.
    pub draws: faults::Draws,
}

impl Powers {
    /// The powers of a process configured by `config`, over the bucket of its store.
    pub fn new(config: &Config, bucket: Option<crate::store::s3::Bucket>) -> Powers {
        Powers {
            journal: journal::Journal::new(config.journal, bucket),
            draws: faults::Draws::default(),
        }
    }
}

/// The surface of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Surface {
    A,
    B,
    C,
    Admin,
}

impl Surface {
    fn of(path: &str) -> Option<Surface> {
        if path.starts_with(LEGACY_PREFIX) {
            Some(Surface::A)
        } else if path.starts_with(BILLING_PREFIX) {
            Some(Surface::B)
        } else if crate::web::is_revenue_path(path) {
            Some(Surface::C)
        } else if path.starts_with(ADMIN_PREFIX) {
            Some(Surface::Admin)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            Surface::A => "A",
            Surface::B => "B",
            Surface::C => "C",
            Surface::Admin => "admin",
        }
    }
}

/// The tenant a surface request authenticates as, by the same credential rule its
/// surface's extractor applies (A: Basic; B: `X-Api-Key`, else a bearer token; C:
/// `X-Api-Key`); `None` for missing or refused credentials.
async fn tenant_of(
    app: &AppState,
    surface: Surface,
    headers: &http::HeaderMap,
) -> crate::Result<Option<Tenant>> {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match surface {
        Surface::A => match authorization.and_then(crate::auth::parse_basic) {
            Some((user, pass)) => app.tenant_by_basic(&user, &pass).await,
            None => Ok(None),
        },
        Surface::B => match header_str(headers, "x-api-key") {
            Some(key) => app.tenant_by_api_key(key).await,
            None => match authorization.and_then(crate::auth::parse_bearer) {
                Some(token) => app.tenant_by_token(token).await,
                None => Ok(None),
            },
        },
        Surface::C => match header_str(headers, "x-api-key") {
            Some(key) => app.tenant_by_api_key(key).await,
            None => Ok(None),
        },
        Surface::Admin => Ok(None),
    }
}

/// The tenant id of an admin request about one tenant's contents
/// (`/sandbox/v1/tenants/{id}/...`), except the journal's own reads and clears.
fn admin_tenant(path: &str) -> Option<&str> {
    let rest = path.strip_prefix(ADMIN_PREFIX)?.strip_prefix("/tenants/")?;
    let (id, sub) = rest.split_once('/')?;
    (!id.is_empty() && !sub.is_empty() && sub != "requests").then_some(id)
}

/// The layer of every served router (see the module doc). The request runs in one
/// [`crate::store::request_scope`], so reading the fault rules costs no S3 request beyond
/// the freshness check the handler's first read would have made.
pub async fn serve(
    app: AppState,
    surfaces: &'static [PathErrors],
    req: Request,
    next: Next,
) -> Response {
    crate::store::request_scope(serve_scoped(app, surfaces, req, next)).await
}

async fn serve_scoped(
    app: AppState,
    surfaces: &'static [PathErrors],
    req: Request,
    next: Next,
) -> Response {
    let path = req.uri().path().to_string();
    let Some(surface) = Surface::of(&path) else {
        return next.run(req).await;
    };
    let journal = app.powers.journal.enabled();
    if surface == Surface::Admin {
        let Some(id) = admin_tenant(&path).map(str::to_string) else {
            return next.run(req).await;
        };
        if !journal {
            return next.run(req).await;
        }
        let (recording, req) = match Recording::start(&app, surface, req).await {
            Ok(pair) => pair,
            Err(msg) => return error_response(surfaces, &path, StatusCode::BAD_REQUEST, msg),
        };
        let response = next.run(req).await;
        // An unknown tenant or a refused admin key is no request to a tenant.
        if matches!(response.status().as_u16(), 401 | 404) {
            return response;
        }
        return recording.finish(&app, &id, response, None).await;
    }
    // What was found goes to the surface's extractor, so credentials are looked up once; a
    // failed lookup is left to the extractor, which answers it in the surface's shape.
    let mut req = req;
    let tenant = match tenant_of(&app, surface, req.headers()).await {
        Ok(found) => {
            req.extensions_mut().insert(Authenticated {
                surface: surface.name(),
                tenant: found.clone(),
            });
            found
        }
        Err(_) => None,
    };
    let Some(tenant) = tenant else {
        return next.run(req).await;
    };
    let rule = fault_for(&app, &tenant, req.method().as_str(), &path).await;
    let (recording, req) = if journal {
        match Recording::start(&app, surface, req).await {
            Ok((recording, req)) => (Some(recording), req),
            Err(msg) => return error_response(surfaces, &path, StatusCode::BAD_REQUEST, msg),
        }
    } else {
        (None, req)
    };
    let mut response = match &rule {
        Some(rule) => {
            if rule.latency_ms > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(rule.latency_ms)).await;
            }
            match rule.status.and_then(|s| StatusCode::from_u16(s).ok()) {
                Some(status) => {
                    let message = format!("Injected by sandbox fault rule {}.", rule.id);
                    error_response(surfaces, &path, status, message)
                }
                None => next.run(req).await,
            }
        }
        None => next.run(req).await,
    };
    if let Some(rule) = &rule {
        if let Ok(value) = HeaderValue::from_str(&rule.id) {
            response.headers_mut().insert(FAULT_HEADER, value);
        }
    }
    match recording {
        Some(recording) => {
            let fault = rule.map(|r| r.id);
            recording
                .finish(&app, tenant.db.tenant_id(), response, fault)
                .await
        }
        None => response,
    }
}

/// The fault rule that takes this request, if any (see [`faults`] for the order). A store
/// error applies no rule: the request is served as if there were none.
async fn fault_for(
    app: &AppState,
    tenant: &Tenant,
    method: &str,
    path: &str,
) -> Option<faults::Rule> {
    // Kept until a write changes the rules table (see `store::TenantDb::read_memo_scoped`):
    // a request finds the rules without a query or a hand-off to the blocking pool, even
    // right after another request's write (a stream of usage posts).
    let rules = match tenant
        .db
        .read_memo_scoped(
            crate::store::MemoScope::Watched,
            "sandbox fault rules".to_string(),
            faults::live,
        )
        .await
    {
        Ok(rules) => rules,
        Err(e) => {
            tracing::warn!(error = %e, "fault rules not read; none applied");
            return None;
        }
    };
    for rule in rules.iter().filter(|r| r.applies_to(method, path)) {
        if !app.powers.draws.hit(tenant.db.tenant_id(), rule) {
            continue;
        }
        if rule.remaining.is_some() {
            let id = rule.id.clone();
            match tenant.db.write(move |tx| faults::take_hit(tx, &id)).await {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "a fault rule's hit was not counted; not applied");
                    continue;
                }
            }
        }
        return Some(rule.clone());
    }
    None
}

/// An error answer in the error shape of the path's surface (the code of `{code, message}`
/// is the status's reason in capitals, e.g. SERVICE_UNAVAILABLE).
fn error_response(
    surfaces: &'static [PathErrors],
    path: &str,
    status: StatusCode,
    message: String,
) -> Response {
    match surfaces.iter().find(|s| path.starts_with(s.prefix)) {
        Some(surface) => (surface.render)(status, message),
        None => {
            let code: String = status
                .canonical_reason()
                .unwrap_or("ERROR")
                .chars()
                .filter_map(|c| match c {
                    'a'..='z' | 'A'..='Z' | '0'..='9' => Some(c.to_ascii_uppercase()),
                    ' ' | '-' => Some('_'),
                    _ => None,
                })
                .collect();
            ApiError::new(status, &code, message).into_response()
        }
    }
}

/// A request being recorded: what was read of it before it went on (kept as it is: the
/// journal converts it later, off the request's path, see [`journal::Item`]).
struct Recording {
    time: chrono::DateTime<chrono::Utc>,
    started: std::time::Instant,
    surface: Surface,
    method: http::Method,
    uri: http::Uri,
    headers: http::HeaderMap,
    body: Option<axum::body::Bytes>,
}

impl Recording {
    /// Reads the request's head and body (a body with a length within the body limit is
    /// read and handed on unchanged; any other is passed on unread and marked truncated).
    async fn start(
        app: &AppState,
        surface: Surface,
        req: Request,
    ) -> Result<(Recording, Request), String> {
        let time = crate::time::now();
        let started = std::time::Instant::now();
        let (parts, body) = req.into_parts();
        let length = parts
            .headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<usize>().ok());
        let chunked = parts.headers.contains_key(header::TRANSFER_ENCODING);
        let readable = match length {
            Some(n) => n <= app.config.max_body_bytes,
            None => !chunked,
        };
        // No length and no chunks, or a zero length: HTTP gives the request no body, so there
        // is nothing to read (most reads).
        let empty = !chunked && length.unwrap_or(0) == 0;
        let (kept, body) = if empty {
            (Some(axum::body::Bytes::new()), body)
        } else if readable {
            match axum::body::to_bytes(body, app.config.max_body_bytes).await {
                // Shared, not copied: the handler reads the same bytes.
                Ok(bytes) => (Some(bytes.clone()), Body::from(bytes)),
                Err(e) => return Err(format!("could not read the request body: {e}")),
            }
        } else {
            (None, body)
        };
        let recording = Recording {
            time,
            started,
            surface,
            method: parts.method.clone(),
            uri: parts.uri.clone(),
            headers: parts.headers.clone(),
            body: kept,
        };
        Ok((recording, Request::from_parts(parts, body)))
    }

    /// Records the request with its answer, and answers it.
    async fn finish(
        self,
        app: &AppState,
        tenant: &str,
        response: Response,
        fault: Option<String>,
    ) -> Response {
        let (parts, body) = response.into_parts();
        let bytes = axum::body::to_bytes(body, usize::MAX)
            .await
            .unwrap_or_default();
        let raw = journal::Raw {
            time: self.time,
            surface: self.surface.name(),
            method: self.method,
            uri: self.uri,
            headers: self.headers,
            request_body: self.body,
            status: parts.status.as_u16(),
            duration_ms: self.started.elapsed().as_secs_f64() * 1000.0,
            response_body: bytes.clone(),
            fault,
        };
        match app.powers.journal.record(tenant, raw) {
            journal::Flush::Nothing => {}
            journal::Flush::Now(batch) => {
                let (powers, tenant) = (app.powers.clone(), tenant.to_string());
                tokio::task::spawn_blocking(move || powers.journal.upload(&tenant, &batch));
            }
            journal::Flush::After(wait) => {
                let (powers, tenant) = (app.powers.clone(), tenant.to_string());
                // Off the request: a frozen Lambda runs this timer when it thaws.
                tokio::spawn(async move {
                    tokio::time::sleep(wait).await;
                    let _ = tokio::task::spawn_blocking(move || {
                        let batch = powers.journal.take_pending(&tenant);
                        powers.journal.upload(&tenant, &batch);
                    })
                    .await;
                });
            }
        }
        Response::from_parts(parts, Body::from(bytes))
    }
}
