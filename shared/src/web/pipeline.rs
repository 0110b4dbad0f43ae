//! The one pipeline every served request walks, each step with one job, in this order:
//!
//! 1. **Connection** (the local server, `functions/sandbox/src/server.rs`; API Gateway on
//!    Lambda): a cap on open connections, and a deadline for a request head to arrive, which
//!    also closes idle keep-alive connections.
//! 2. **Bounds of the head**: a path longer than [`MAX_PATH_BYTES`] is 414.
//! 3. **Identify** ([`Surface::of`] the path, [`Surface::credential`] from the headers,
//!    [`AppState::identify`] the tenant or the admin key), once, from headers only. A
//!    credential this process has seen is answered from memory; one that needs a registry
//!    read waits for one of a few lookup places first (an eighth of the limit), so made-up
//!    credentials queue behind each other and hold nothing else. A refused credential is
//!    answered 401 in the surface's shape here, before its body is read.
//! 4. **Admission** ([`Admission`]): shares of the concurrency limit counted per principal
//!    (a tenant, whichever credential or spelling it used; the admin key; every anonymous
//!    request together on one small share), shed with 503 + `Retry-After: 1` past its share
//!    or past the limit. The request timeout runs from here to the answer.
//! 5. **Body**: an identified request's body is read here, at most `max_body_bytes` (413)
//!    within `body_timeout_ms` (408); an anonymous request's body is never read.
//! 6. **Idempotency** (`super::idempotency`): a write with an `Idempotency-Key` header (a
//!    tenant's, or an admin write the registry or one tenant's database keeps) is replayed,
//!    refused (in flight, applied without a recorded answer, another request's key), or run
//!    with the key joining its write transaction, its answer recorded. A request with the
//!    header runs in a task of its own, to its end even when its client has gone.
//! 7. **Powers** (`super::powers`): fault rules and the journal of the identified tenant.
//! 8. **Handler**: its extractors take the [`Identity`] from the request's extensions.
//!
//! Every answer the pipeline gives itself is in the error shape of the path's surface.

use super::idempotency;
use super::powers::{self, Subject};
use super::state::{AppState, Identity};
use super::surface::{error_for_path, Surface};
use crate::config::Config;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Longest request path, in bytes (its query not counted): beyond any route's path with the
/// longest ids, and within API Gateway's 10 KiB request head. Longer: 414.
pub const MAX_PATH_BYTES: usize = 8 * 1024;

/// Who a request is counted as in [`Admission`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Principal {
    Tenant(String),
    Admin,
    Anonymous,
}

/// The concurrency limit and its shares (one per process: every router of a process is
/// finished over one [`AppState`]). A tenant, or the admin key, holds at most half the limit;
/// anonymous requests together an eighth; credential lookups wait for one of an eighth as
/// many places. Limit 0 disables admission.
pub(crate) struct Admission {
    limit: usize,
    permits: Option<Arc<Semaphore>>,
    lookups: Option<Arc<Semaphore>>,
    in_flight: Mutex<HashMap<Principal, usize>>,
}

/// A request's place among those admitted, given back on drop.
struct Slot<'a> {
    admission: &'a Admission,
    principal: Principal,
    _permit: Option<OwnedSemaphorePermit>,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut map = crate::store::lock(&self.admission.in_flight);
        if let Some(n) = map.get_mut(&self.principal) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                map.remove(&self.principal);
            }
        }
    }
}

impl Admission {
    pub(crate) fn new(config: &Config) -> Admission {
        let limit = config.max_concurrent_requests;
        let small = (limit / 8).max(1);
        Admission {
            limit,
            permits: (limit > 0).then(|| Arc::new(Semaphore::new(limit))),
            lookups: (limit > 0).then(|| Arc::new(Semaphore::new(small))),
            in_flight: Mutex::default(),
        }
    }

    fn share(&self, principal: &Principal) -> usize {
        match principal {
            Principal::Anonymous => (self.limit / 8).max(1),
            _ => (self.limit / 2).max(1),
        }
    }

    /// A place for `principal`, or the message of the 503 that sheds it.
    fn admit(&self, principal: Principal) -> Result<Slot<'_>, String> {
        let Some(permits) = &self.permits else {
            return Ok(Slot {
                admission: self,
                principal,
                _permit: None,
            });
        };
        let share = self.share(&principal);
        {
            let mut map = crate::store::lock(&self.in_flight);
            let n = map.entry(principal.clone()).or_insert(0);
            if *n >= share {
                let who = match principal {
                    Principal::Anonymous => "Requests without credentials have",
                    Principal::Admin => "The admin key has",
                    Principal::Tenant(_) => "This tenant has",
                };
                return Err(format!(
                    "{who} {share} requests in flight, its share of the server's limit of {}; retry shortly.",
                    self.limit
                ));
            }
            *n += 1;
        }
        // Counted first, so the slot's drop gives the count back whatever happens next.
        let mut slot = Slot {
            admission: self,
            principal,
            _permit: None,
        };
        match permits.clone().try_acquire_owned() {
            Ok(permit) => {
                slot._permit = Some(permit);
                Ok(slot)
            }
            Err(_) => Err(format!(
                "The server is serving its limit of {} requests; retry shortly.",
                self.limit
            )),
        }
    }

    /// A place to look a credential up in the registry: waited for (lookups take a registry
    /// read, milliseconds), within the request timeout, so unrecognised credentials queue
    /// behind each other instead of taking the server's places.
    async fn lookup(&self) -> Option<OwnedSemaphorePermit> {
        match &self.lookups {
            None => None,
            Some(lookups) => lookups.clone().acquire_owned().await.ok(),
        }
    }
}

/// The pipeline's steps 2 to 8 (see the module doc) around the router `next`.
pub(super) async fn serve(app: AppState, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    if path.len() > MAX_PATH_BYTES {
        let message = format!(
            "the request path has {} bytes, at most {MAX_PATH_BYTES} are accepted",
            path.len()
        );
        return error_for_path(&path, StatusCode::URI_TOO_LONG, message);
    }
    let surface = Surface::of(&path);
    let timeout = app.config.request_timeout_ms;
    // The store learns the deadline, so that a cut-off request's blocking work stops too.
    let deadline =
        (timeout > 0).then(|| std::time::Instant::now() + Duration::from_millis(timeout));
    // A write with an Idempotency-Key runs to its end in a task of its own, whether or not
    // its client is still there (a client that gave up drops this future, and the pipeline's
    // timeout stops waiting): its answer is recorded with its key and its claim released when
    // the write ends, so the retry gets that answer (issue 36, finding 2). Other requests are
    // cancelled with their client (their blocking work stops at the request's deadline).
    let detached = req.headers().contains_key(idempotency::HEADER);
    let owned = path.clone();
    let work = async move {
        let work = identify_and_serve(app, surface, &owned, req, next);
        crate::store::request_scope_until(deadline, work).await
    };
    let work = async {
        if !detached {
            return work.await;
        }
        match tokio::spawn(work).await {
            Ok(response) => response,
            Err(e) => {
                tracing::error!(error = %e, "a keyed request's task failed");
                let message = "the request failed; retry it with the same Idempotency-Key";
                error_for_path(&path, StatusCode::INTERNAL_SERVER_ERROR, message.into())
            }
        }
    };
    if timeout == 0 {
        return work.await;
    }
    match tokio::time::timeout(Duration::from_millis(timeout), work).await {
        Ok(response) => response,
        Err(_) => unavailable(
            &path,
            format!(
                "The request did not finish within {timeout} ms and was cut off; it may have been applied. Retry later."
            ),
        ),
    }
}

async fn identify_and_serve(
    app: AppState,
    surface: Option<Surface>,
    path: &str,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(surface) = surface else {
        // No surface's path: nothing to identify, and no route reads a body here.
        return match app.admission.admit(Principal::Anonymous) {
            Ok(_slot) => next.run(req).await,
            Err(message) => unavailable(path, message),
        };
    };
    let credential = surface.credential(req.headers());
    let identity = match app.recall(&credential) {
        Some(known) => known,
        None => {
            let _lookup = app.admission.lookup().await;
            match app.identify(&credential).await {
                Ok(found) => found,
                Err(e) => return surface.from_error(e),
            }
        }
    };
    let Some(identity) = identity else {
        return surface.unauthorized();
    };
    let (principal, subject) = match &identity {
        Identity::Tenant(t) => (
            Principal::Tenant(t.record.id.clone()),
            Some(Subject::Tenant(t.clone())),
        ),
        Identity::Admin => (
            Principal::Admin,
            powers::admin_subject(path).map(Subject::AdminOf),
        ),
        Identity::Anonymous => (Principal::Anonymous, None),
    };
    let _slot = match app.admission.admit(principal) {
        Ok(slot) => slot,
        Err(message) => return unavailable(path, message),
    };
    let anonymous = matches!(identity, Identity::Anonymous);
    let admin = matches!(identity, Identity::Admin);
    req.extensions_mut().insert(identity);
    if anonymous {
        return next.run(req).await;
    }
    let (req, body) = match read_body(req, &app.config).await {
        Ok(read) => read,
        Err((status, message)) => return surface.error(status, None, message),
    };
    let keyed = match &subject {
        Some(Subject::Tenant(tenant)) => idempotency::prepare(tenant, &req, &body),
        _ if admin => {
            let head = idempotency::Head::of(&req);
            idempotency::prepare_admin(&app, head, &body).await
        }
        _ => Ok(None),
    };
    let keyed = match keyed {
        Ok(keyed) => keyed,
        Err(message) => return surface.error(StatusCode::BAD_REQUEST, None, message),
    };
    match (subject, keyed) {
        (Some(subject), Some(keyed)) => {
            let run = |req| powers::apply(&app, surface, subject, body, req, next);
            idempotency::serve(&app, surface, keyed, req, run).await
        }
        (Some(subject), None) => powers::apply(&app, surface, subject, body, req, next).await,
        (None, Some(keyed)) => {
            let run = |req| idempotency::handler(req, next);
            idempotency::serve(&app, surface, keyed, req, run).await
        }
        (None, None) => next.run(req).await,
    }
}

/// Reads an identified request's body: at most `max_body_bytes` (413), arrived in full within
/// `body_timeout_ms` (408); answers the request with the same bytes as its body, and them.
async fn read_body(
    req: Request,
    config: &Config,
) -> Result<(Request, Bytes), (StatusCode, String)> {
    let (parts, body) = req.into_parts();
    let length = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let chunked = parts.headers.contains_key(header::TRANSFER_ENCODING);
    // No length and no chunks, or a zero length: HTTP gives the request no body (most reads).
    if !chunked && length.unwrap_or(0) == 0 {
        return Ok((Request::from_parts(parts, body), Bytes::new()));
    }
    let limit = config.max_body_bytes;
    let too_large = || {
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is too large: at most {limit} bytes are accepted"),
        )
    };
    if length.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let read = axum::body::to_bytes(body, limit);
    let read = if config.body_timeout_ms > 0 {
        tokio::time::timeout(Duration::from_millis(config.body_timeout_ms), read)
            .await
            .map_err(|_| {
                (
                    StatusCode::REQUEST_TIMEOUT,
                    format!(
                        "the request body did not arrive within {} ms",
                        config.body_timeout_ms
                    ),
                )
            })?
    } else {
        read.await
    };
    let bytes = read.map_err(|e| {
        if is_length_limit(&e) {
            too_large()
        } else {
            (
                StatusCode::BAD_REQUEST,
                format!("could not read the request body: {e}"),
            )
        }
    })?;
    Ok((Request::from_parts(parts, Body::from(bytes.clone())), bytes))
}

/// Whether a body error is the body limit's.
fn is_length_limit(e: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if err.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = err.source();
    }
    false
}

/// 503 with `Retry-After: 1` in the shape of the path's surface.
fn unavailable(path: &str, message: String) -> Response {
    tracing::warn!(path, message = %message, "request refused: overload");
    let mut response = error_for_path(path, StatusCode::SERVICE_UNAVAILABLE, message);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// One structured log line per request: method, path, status, latency.
pub(super) async fn log_request(req: Request, next: Next) -> Response {
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
