//! The axum glue every route group shares: application state, Surface B's authenticated
//! tenant extractor, the JSON error shape `{code, message}`, a JSON body extractor whose
//! rejections use that shape, the query-parameter map, and the fallback for unknown routes
//! (which a surface with another error shape, like Surface A's XML fault, plugs its
//! renderer into through [`PathErrors`]). Surface-specific pieces live in their crates.

use crate::auth::{self, jwt};
use crate::config::Config;
use crate::store::{Store, TenantDb, TenantRecord};
use crate::Error;
use axum::body::Bytes;
use axum::extract::{FromRef, FromRequest, FromRequestParts, Request};
use axum::http::{header, request::Parts, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use chrono_tz::Tz;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::sync::Arc;

pub mod listing;

/// Route prefix of Surface A (legacy XML).
pub const LEGACY_PREFIX: &str = "/t/s/r/1.28";
/// Route prefix of Surface B (billing API v2).
pub const BILLING_PREFIX: &str = "/billing/2";
/// Route prefix of Surface C (revenue management), the one the docs use.
pub const REVENUE_PREFIX: &str = "/revenue/3";
/// The production platform's base path of Surface C (platform-facts.md: `/calypso/3/`);
/// the same routes are served under it, so a client written against the platform works
/// unchanged.
pub const REVENUE_ALIAS_PREFIX: &str = "/calypso/3";
/// Every prefix Surface C is served under.
pub const REVENUE_PREFIXES: [&str; 2] = [REVENUE_PREFIX, REVENUE_ALIAS_PREFIX];

/// Whether a path belongs to Surface C (under any of [`REVENUE_PREFIXES`]).
pub fn is_revenue_path(path: &str) -> bool {
    REVENUE_PREFIXES.iter().any(|p| path.starts_with(p))
}
/// Route prefix of the sandbox admin API.
pub const ADMIN_PREFIX: &str = "/sandbox/v1";

/// State shared by every handler of every route group.
#[derive(Clone)]
pub struct AppState {
    /// The tenant store.
    pub store: Store,
    /// Process configuration.
    pub config: Arc<Config>,
    /// The sandbox powers' state of this process (journal, fault draws).
    pub powers: Arc<crate::sandbox::Powers>,
}

impl AppState {
    /// Opens the store named by `config` (local, or S3 when `config.s3` is set) and checks
    /// that a token secret is available (configured, or kept in the data dir).
    pub fn new(config: Config) -> crate::Result<AppState> {
        let store = Store::open_with(&config.data_dir, config.s3.clone())?;
        let state = AppState::from_parts(store, config);
        if state.config.s3.is_some() && state.config.token_secret.is_none() {
            tracing::warn!(
                "SANDBOX_TOKEN_SECRET is unset: tokens are signed with a secret kept in this data \
                 dir, so other servers on the same bucket refuse them"
            );
        }
        state.token_secret()?;
        Ok(state)
    }

    /// The state of a process serving `store` with `config` (the store already open).
    pub fn from_parts(store: Store, config: Config) -> AppState {
        let powers = crate::sandbox::Powers::new(&config, store.bucket());
        store.registry().set_max_tenants(config.max_tenants);
        AppState {
            store,
            config: Arc::new(config),
            powers: Arc::new(powers),
        }
    }

    /// The master secret bearer tokens are signed with: `SANDBOX_TOKEN_SECRET` when
    /// configured, else the one kept in the data dir (never the registry or the bucket).
    pub fn token_secret(&self) -> crate::Result<Vec<u8>> {
        match &self.config.token_secret {
            Some(s) if s.len() >= crate::config::MIN_TOKEN_SECRET_LEN => Ok(s.as_bytes().to_vec()),
            Some(_) => Err(Error::Internal(format!(
                "SANDBOX_TOKEN_SECRET must be at least {} characters",
                crate::config::MIN_TOKEN_SECRET_LEN
            ))),
            None => self.store.local_token_secret(),
        }
    }

    /// The authenticated view of a registered tenant: its database is opened on the
    /// blocking pool (a cold start downloads a snapshot). A tenant deleted meanwhile (its
    /// tombstone seen) is `None`: its credentials no longer open anything.
    pub async fn tenant(&self, record: TenantRecord) -> crate::Result<Option<Tenant>> {
        let store = self.store.clone();
        crate::store::blocking(move || open_tenant(&store, record)).await
    }

    /// The tenant an API key opens (see [`AppState::tenant`]). A key seen before, of a tenant
    /// already open, is answered here without a hand-off to the blocking pool (no I/O to do).
    pub async fn tenant_by_api_key(&self, key: &str) -> crate::Result<Option<Tenant>> {
        if let Some(record) = self.store.registry().recall_api_key(key) {
            if let Some(db) = self.store.open_tenant_db(&record.id) {
                return Ok(Some(Tenant::of(record, db)));
            }
        }
        let (store, key) = (self.store.clone(), key.to_string());
        crate::store::blocking(move || match store.registry().find_by_api_key(&key)? {
            Some(record) => open_tenant(&store, record),
            None => Ok(None),
        })
        .await
    }

    /// The tenant HTTP Basic credentials open (see [`AppState::tenant`]).
    pub async fn tenant_by_basic(&self, user: &str, pass: &str) -> crate::Result<Option<Tenant>> {
        let (store, user, pass) = (self.store.clone(), user.to_string(), pass.to_string());
        crate::store::blocking(
            move || match store.registry().find_by_basic(&user, &pass)? {
                Some(record) => open_tenant(&store, record),
                None => Ok(None),
            },
        )
        .await
    }

    /// The tenant a valid bearer token was issued for (see [`AppState::tenant`]).
    pub async fn tenant_by_token(&self, token: &str) -> crate::Result<Option<Tenant>> {
        let Ok(claims) = jwt::peek_claims(token) else {
            return Ok(None);
        };
        let secret = self.token_secret()?;
        let (store, token) = (self.store.clone(), token.to_string());
        crate::store::blocking(move || {
            let Some(record) = store.registry().tenant_for_token(&claims.sub)? else {
                return Ok(None);
            };
            let key = jwt::tenant_key(&secret, &record.id);
            match jwt::verify(&token, &key, crate::time::now().timestamp()) {
                Ok(_) => open_tenant(&store, record),
                Err(e) => {
                    tracing::debug!(error = %e, "bearer token refused");
                    Ok(None)
                }
            }
        })
        .await
    }
}

/// Opens a registered tenant's database (blocking). Not found means deleted: the store has
/// forgotten it and its cached credentials, so the caller answers 401.
fn open_tenant(store: &Store, record: TenantRecord) -> crate::Result<Option<Tenant>> {
    match store.tenant_db(&record.id) {
        Ok(db) => Ok(Some(Tenant::of(record, db))),
        Err(Error::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A tenant that presented valid credentials.
#[derive(Clone)]
pub struct Tenant {
    /// The registry entry.
    pub record: TenantRecord,
    /// The tenant's time zone.
    pub tz: Tz,
    /// The tenant's database.
    pub db: Arc<TenantDb>,
}

impl Tenant {
    /// The tenant of a registry entry and its open database (an unknown zone reads as UTC).
    fn of(record: TenantRecord, db: Arc<TenantDb>) -> Tenant {
        let tz = crate::time::parse_tz(&record.time_zone).unwrap_or(chrono_tz::UTC);
        Tenant { record, tz, db }
    }
}

/// The tenant the sandbox layer ([`crate::sandbox::serve`]) found for a request's
/// credentials, by the rule of the surface named (`"A"`, `"B"`, `"C"`): the surface's
/// extractor takes it instead of looking the credentials up again. Absent when the layer did
/// not look, or its lookup failed (the extractor then looks itself and answers the error).
#[derive(Clone)]
pub struct Authenticated {
    /// The surface whose credential rule found it.
    pub surface: &'static str,
    /// The tenant, `None` for missing or refused credentials.
    pub tenant: Option<Tenant>,
}

impl Authenticated {
    /// What the layer found for a request of `surface`, if it looked.
    pub fn of(parts: &Parts, surface: &str) -> Option<Option<Tenant>> {
        parts
            .extensions
            .get::<Authenticated>()
            .filter(|a| a.surface == surface)
            .map(|a| a.tenant.clone())
    }
}

/// The error body of Surfaces B and C: `{code, message}` with an HTTP status.
#[derive(Debug, Clone, Serialize)]
pub struct ApiError {
    /// The HTTP status (not serialized).
    #[serde(skip)]
    pub status: StatusCode,
    /// A stable, upper-case code, e.g. `BAD_REQUEST`.
    pub code: String,
    /// A human-readable explanation.
    pub message: String,
}

impl ApiError {
    /// An error with an explicit status, code and message.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code: code.to_string(),
            message: message.into(),
        }
    }
    /// 400 BAD_REQUEST.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "BAD_REQUEST", message)
    }
    /// 404 NOT_FOUND.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "NOT_FOUND", message)
    }
    /// 401 UNAUTHORIZED.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", message)
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        match e {
            Error::BadRequest(m) => ApiError::bad_request(m),
            Error::NotFound(m) => ApiError::not_found(m),
            Error::Conflict(m) => ApiError::new(StatusCode::CONFLICT, "CONFLICT", m),
            Error::PreconditionFailed(m) => {
                ApiError::new(StatusCode::PRECONDITION_FAILED, "PRECONDITION_FAILED", m)
            }
            Error::Unavailable(m) => {
                tracing::warn!(error = %m, "storage unavailable");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "SERVICE_UNAVAILABLE",
                    "The service is temporarily unavailable; nothing was applied. Retry later.",
                )
            }
            Error::OutcomeUnknown(m) => {
                tracing::warn!(error = %m, "storage did not confirm a write");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "SERVICE_UNAVAILABLE",
                    "The service is temporarily unavailable and could not confirm whether the request was applied: it may or may not have been. Check before retrying.",
                )
            }
            Error::NewerSchema(m) => {
                tracing::warn!(error = %m, "data from a newer schema version");
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "SERVICE_UNAVAILABLE", m)
            }
            Error::Internal(m) => {
                tracing::error!(error = %m, "internal error");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "INTERNAL_ERROR",
                    "An unexpected error occurred.",
                )
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status;
        (status, axum::Json(self)).into_response()
    }
}

/// Surface B's 401 message.
pub const BILLING_AUTH_MESSAGE: &str =
    "Missing or invalid credentials: send X-Api-Key or Authorization: Bearer <JWT>.";

/// The tenant of a Surface B request (`X-Api-Key` or `Authorization: Bearer <JWT>`).
pub struct BillingAuth(pub Tenant);

impl<S> FromRequestParts<S> for BillingAuth
where
    AppState: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let app = AppState::from_ref(state);
        let deny = || ApiError::unauthorized(BILLING_AUTH_MESSAGE);
        if let Some(found) = Authenticated::of(parts, "B") {
            return found.map(BillingAuth).ok_or_else(deny);
        }
        let tenant = if let Some(key) = header_str(&parts.headers, "x-api-key") {
            app.tenant_by_api_key(key).await?
        } else if let Some(token) = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(auth::parse_bearer)
        {
            app.tenant_by_token(token).await?
        } else {
            None
        };
        Ok(BillingAuth(tenant.ok_or_else(deny)?))
    }
}

/// A header's value as text, when present, non-empty and visible ASCII.
pub fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// A JSON request body whose rejections are `{code, message}` errors: 415 for a content type
/// that is not JSON, 413 past the body limit, 400 for malformed JSON or wrong field types
/// (the message names the field and the position).
pub struct JsonBody<T>(pub T);

impl<S, T> FromRequest<S> for JsonBody<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if let Some(ct) = header_str(req.headers(), "content-type") {
            let mime = ct
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            if mime != "application/json" && !mime.ends_with("+json") {
                return Err(ApiError::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "UNSUPPORTED_MEDIA_TYPE",
                    format!("expected Content-Type application/json, found {ct}"),
                ));
            }
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            let status = e.status();
            if status == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(status, "PAYLOAD_TOO_LARGE", "request body is too large")
            } else {
                ApiError::bad_request(format!("could not read the request body: {e}"))
            }
        })?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// Deepest nesting of arrays and objects a JSON request body may have: far beyond any body
/// the surfaces read, and checked before parsing, so that members the sandbox ignores or
/// keeps raw (a usage event is echoed back when erred) cannot carry 500,000 levels.
pub const MAX_JSON_DEPTH: usize = 64;

/// Whether `bytes` nest arrays and objects deeper than `max` (brackets inside strings do not
/// count); one pass, no recursion.
fn nests_deeper_than(bytes: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Parses a JSON document into `T`, with a 400 that says what and where on failure; a body
/// nested deeper than [`MAX_JSON_DEPTH`] is refused first.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("a JSON request body is required"));
    }
    if nests_deeper_than(bytes, MAX_JSON_DEPTH) {
        return Err(ApiError::bad_request(format!(
            "invalid JSON body: arrays and objects nest deeper than {MAX_JSON_DEPTH} levels"
        )));
    }
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))
}

/// How the requests of one surface that no route takes are answered (404 for an unknown
/// path, 405 for a method the path does not take): `render` gets the status and a message
/// and answers in the surface's own error shape. Paths of no listed surface answer the
/// `{code, message}` shape of Surfaces B and C.
#[derive(Clone, Copy)]
pub struct PathErrors {
    /// The route prefix of the surface.
    pub prefix: &'static str,
    /// Renders the surface's error.
    pub render: fn(StatusCode, String) -> Response,
}

/// Answers a request no route takes, in the shape of the surface its path belongs to.
fn path_error(surfaces: &[PathErrors], status: StatusCode, path: &str, msg: String) -> Response {
    match surfaces.iter().find(|s| path.starts_with(s.prefix)) {
        Some(surface) => (surface.render)(status, msg),
        None if status == StatusCode::METHOD_NOT_ALLOWED => {
            ApiError::new(status, "METHOD_NOT_ALLOWED", msg).into_response()
        }
        None => ApiError::not_found(msg).into_response(),
    }
}

/// [`finish_with`] for route groups whose surface answers in the `{code, message}` shape.
pub fn finish(routes: axum::Router<AppState>, state: AppState) -> axum::Router {
    finish_with(routes, state, &[])
}

/// Adds what every served router needs: the unknown-route and wrong-method fallbacks (in the
/// error shape of the surface a path belongs to, see [`PathErrors`]), the body limit, the
/// sandbox powers (fault rules and the request journal, see [`crate::sandbox::serve`]), the
/// request timeout and concurrency limit (503 + Retry-After, see [`Overload`]) and the request
/// log, then binds the state. A path with one trailing slash is served as the same path
/// without it (see [`strip_trailing_slash`]).
pub fn finish_with(
    routes: axum::Router<AppState>,
    state: AppState,
    surfaces: &'static [PathErrors],
) -> axum::Router {
    let limit = state.config.max_body_bytes;
    let overload = Overload::new(&state.config, surfaces);
    let powers = state.clone();
    let served = routes
        .method_not_allowed_fallback(move |method: axum::http::Method, uri: Uri| async move {
            let path = uri.path();
            let msg = format!("{method} is not supported on {path}");
            path_error(surfaces, StatusCode::METHOD_NOT_ALLOWED, path, msg)
        })
        .fallback(move |uri: Uri| async move {
            let path = uri.path();
            let msg = format!("no such resource: {path}");
            path_error(surfaces, StatusCode::NOT_FOUND, path, msg)
        })
        .layer(axum::extract::DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn(move |req, next| {
            crate::sandbox::serve(powers.clone(), surfaces, req, next)
        }))
        .layer(axum::middleware::from_fn(move |req, next| {
            overload.clone().guard(req, next)
        }))
        .layer(axum::middleware::from_fn(log_request))
        .with_state(state);
    // A layer on a Router runs after routing, so the rewrite wraps the finished router as a
    // service (axum's documented way for NormalizePath) inside an outer router that hands
    // every request to it: the routes see the rewritten path.
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

/// The request timeout and the concurrency limit of a served router (one per process: the
/// local server and the all-in-one Lambda finish one merged router). A request past the
/// limit is shed at once, and one past the timeout is cut off; both answer 503 with
/// `Retry-After: 1` in the error shape of the surface the path belongs to. So that one tenant
/// flooding the process leaves room for the others, one credential may hold at most half of
/// the limit (see [`credential_of`]). A cut-off request's blocking database work, already
/// running on its own thread, finishes or rolls back on its own; the answer says the request
/// may have been applied.
#[derive(Clone)]
struct Overload {
    permits: Option<Arc<tokio::sync::Semaphore>>,
    limit: usize,
    /// Requests in flight per credential (by hash), entries removed at zero.
    in_flight: Arc<std::sync::Mutex<std::collections::HashMap<u64, usize>>>,
    timeout: Option<std::time::Duration>,
    surfaces: &'static [PathErrors],
}

/// The credential a request is counted under: the header its surface authenticates with
/// (Surface A `Authorization`; B `X-Api-Key`, else `Authorization`, as its extractor reads
/// them; C `X-Api-Key`; admin `X-Admin-Key`), hashed; 0 for none. It is not verified here: a
/// made-up credential is refused by the surface before any slow work (bodies are read after
/// authentication), so it holds its place only briefly.
fn credential_of(path: &str, headers: &HeaderMap) -> u64 {
    use std::hash::{Hash, Hasher};
    let names: &[&str] = if path.starts_with(BILLING_PREFIX) {
        &["x-api-key", "authorization"]
    } else if is_revenue_path(path) {
        &["x-api-key"]
    } else if path.starts_with(ADMIN_PREFIX) {
        &["x-admin-key"]
    } else {
        &["authorization"]
    };
    match names.iter().find_map(|n| header_str(headers, n)) {
        Some(value) => {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            value.hash(&mut hasher);
            hasher.finish().max(1)
        }
        None => 0,
    }
}

/// One credential's place in [`Overload::in_flight`], given back on drop.
struct CredentialSlot {
    in_flight: Arc<std::sync::Mutex<std::collections::HashMap<u64, usize>>>,
    key: u64,
}

impl Drop for CredentialSlot {
    fn drop(&mut self) {
        let mut map = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = map.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                map.remove(&self.key);
            }
        }
    }
}

impl Overload {
    fn new(config: &Config, surfaces: &'static [PathErrors]) -> Overload {
        let limit = config.max_concurrent_requests;
        Overload {
            permits: (limit > 0).then(|| Arc::new(tokio::sync::Semaphore::new(limit))),
            limit,
            in_flight: Arc::default(),
            timeout: (config.request_timeout_ms > 0)
                .then(|| std::time::Duration::from_millis(config.request_timeout_ms)),
            surfaces,
        }
    }

    /// A place for `key` among the requests in flight, unless it holds half the limit already.
    fn credential_slot(&self, key: u64) -> Option<CredentialSlot> {
        let share = (self.limit / 2).max(1);
        let mut map = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        let n = map.entry(key).or_insert(0);
        if *n >= share {
            return None;
        }
        *n += 1;
        Some(CredentialSlot {
            in_flight: self.in_flight.clone(),
            key,
        })
    }

    async fn guard(self, req: Request, next: axum::middleware::Next) -> Response {
        let path = req.uri().path().to_string();
        // Held until the answer is built; dropping it lets the next request in.
        let _permit = match &self.permits {
            Some(permits) => {
                let Some(slot) = self.credential_slot(credential_of(&path, req.headers())) else {
                    let msg = format!(
                        "This credential has {} requests in flight, its share of the server's limit of {}; retry shortly.",
                        (self.limit / 2).max(1),
                        self.limit
                    );
                    return self.unavailable(&path, msg);
                };
                match permits.clone().try_acquire_owned() {
                    Ok(permit) => Some((permit, slot)),
                    Err(_) => {
                        let msg = format!(
                            "The server is serving its limit of {} requests; retry shortly.",
                            self.limit
                        );
                        return self.unavailable(&path, msg);
                    }
                }
            }
            None => None,
        };
        let Some(timeout) = self.timeout else {
            return next.run(req).await;
        };
        match tokio::time::timeout(timeout, next.run(req)).await {
            Ok(response) => response,
            Err(_) => {
                let msg = format!(
                    "The request did not finish within {} ms and was cut off; it may have been applied. Retry later.",
                    timeout.as_millis()
                );
                self.unavailable(&path, msg)
            }
        }
    }

    /// 503 with Retry-After in the shape of the surface `path` belongs to.
    fn unavailable(&self, path: &str, msg: String) -> Response {
        let status = StatusCode::SERVICE_UNAVAILABLE;
        tracing::warn!(path, message = %msg, "request refused: overload");
        let mut response = match self.surfaces.iter().find(|s| path.starts_with(s.prefix)) {
            Some(surface) => (surface.render)(status, msg),
            None => ApiError::new(status, "SERVICE_UNAVAILABLE", msg).into_response(),
        };
        response.headers_mut().insert(
            header::RETRY_AFTER,
            axum::http::HeaderValue::from_static("1"),
        );
        response
    }
}

/// One structured log line per request: method, path, status, latency.
async fn log_request(req: Request, next: axum::middleware::Next) -> Response {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let started = std::time::Instant::now();
    let response = next.run(req).await;
    tracing::info!(
        %method,
        path,
        status = response.status().as_u16(),
        latency_ms = started.elapsed().as_secs_f64() * 1000.0,
        "request"
    );
    response
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

/// Most parameters in one query string (repeated names count), on every surface: a list
/// call uses a dozen at most.
pub const MAX_QUERY_PARAMS: usize = 64;
/// Longest query parameter name, in characters (the identifier bound).
pub const MAX_QUERY_NAME_CHARS: usize = crate::domain::MAX_IDENTIFIER_CHARS;
/// Longest query parameter value once decoded, in characters: the longest filter
/// ([`crate::query::MAX_FILTER_CHARS`]), so no value a list accepts is cut off by it.
pub const MAX_QUERY_VALUE_CHARS: usize = crate::query::MAX_FILTER_CHARS;

/// Decodes a query string into a map (the last value wins for repeated names), within
/// [`MAX_QUERY_PARAMS`], [`MAX_QUERY_NAME_CHARS`] and [`MAX_QUERY_VALUE_CHARS`]; the error
/// says what is wrong, for each surface to answer in its own shape (400). Every surface's
/// query extractor reads through it.
pub fn parse_query(
    query: &str,
) -> std::result::Result<std::collections::HashMap<String, String>, String> {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(query).map_err(|e| format!("malformed query string: {e}"))?;
    if pairs.len() > MAX_QUERY_PARAMS {
        return Err(format!(
            "the query string has {} parameters, at most {MAX_QUERY_PARAMS} are accepted",
            pairs.len()
        ));
    }
    for (name, value) in &pairs {
        let shown: String = name.chars().take(64).collect();
        if name.chars().count() > MAX_QUERY_NAME_CHARS {
            return Err(format!(
                "query parameter '{shown}...': a name has at most {MAX_QUERY_NAME_CHARS} characters"
            ));
        }
        let found = value.chars().count();
        if found > MAX_QUERY_VALUE_CHARS {
            return Err(format!(
                "{shown}: at most {MAX_QUERY_VALUE_CHARS} characters, found {found}"
            ));
        }
    }
    Ok(pairs.into_iter().collect())
}

/// Query parameters as a map (the last value wins for repeated names), read by
/// [`parse_query`]: malformed encoding or a bound crossed is a 400 in the `{code, message}`
/// shape.
pub struct Params(pub std::collections::HashMap<String, String>);

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parse_query(parts.uri.query().unwrap_or(""))
            .map(Params)
            .map_err(ApiError::bad_request)
    }
}
