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
//! 4. **Body**: an identified request's body is read here, at most `max_body_bytes` (413)
//!    within `body_timeout_ms` (408), under the body budget of [`Admission`] (bodies
//!    arriving per tenant, bytes arriving in all; 503 + `Retry-After: 1` past it) and
//!    holding no place to work, so a body that trickles costs its own tenant only; an
//!    anonymous request's body is never read.
//! 5. **Admission** ([`Admission`]): places to work, in pools (the admin key's, requests
//!    without credentials', the tenants', shared fairly among the busy ones), shed with
//!    503 + `Retry-After: 1` past a share. The request timeout runs from the head to the
//!    answer.
//! 6. **Idempotency** (`super::idempotency`): a write with an `Idempotency-Key` header (a
//!    tenant's, or an admin write the registry or one tenant's database keeps) is replayed,
//!    refused (in flight, applied without a recorded answer, another request's key), or run
//!    (the steps below) and its answer recorded. A request with the header runs in a task of
//!    its own, to its end even when its client has gone.
//! 7. **Powers** (`super::powers`): fault rules and the journal of the identified tenant,
//!    around the handler.
//! 8. **Handler**, inside the key's store scope (`store::idempotency::scope`) when keyed: its
//!    writes of the tenant store the key's row in their own transaction; nothing else runs
//!    in that scope (a fault rule's hit count is not the request's write).
//!    Its extractors take the [`Identity`] from the request's extensions.
//!
//! Every answer the pipeline gives itself is in the error shape of the path's surface.

use super::idempotency;
use super::powers::{self, Subject};
use super::state::{AppState, Identity};
use super::surface::{error_for_path, Surface};
use crate::config::Config;
use crate::store::idempotency as keys;
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

/// Admission, in two budgets (one per process: every router of a process is finished over
/// one [`AppState`]); every refusal is a 503 with `Retry-After: 1`, at once, never a queue.
///
/// **Bodies** (before work): a tenant, or the admin key, has at most `max_bodies_per_tenant`
/// bodies arriving at once, and all bodies arriving together reserve at most
/// `max_body_buffer_bytes` (each at its `Content-Length`, a chunked one at the largest body).
/// A body that trickles costs its own tenant's body places only, never a place to work.
///
/// **Work** (the `limit` of requests being served once their bodies are in): three pools.
/// The admin key has a quarter and requests without credentials (the served documents,
/// the console, unknown paths) an eighth, for themselves: no tenant can take them. The
/// tenants share the rest, `T`. With `b` tenants busy (holding a place, counting the one
/// asking), a tenant may hold `cap(b) = max(2, share(b))` places, `share(b) = T / (b + 1)`;
/// and a tenant already holding one may take another only if `share(b)` places stay free
/// after it. The second rule keeps a share free for a tenant that is not busy whatever
/// order the busy ones came in: after any such admission at least `share(b)` places are
/// free, and until the next one only first places of tenants not then busy are taken, one
/// each; so with `k` tenants attacking, a newcomer finds at least
/// `min over 1 <= b <= k of share(b) - (k - b)` places free: with the default limit 64
/// (`T` = 40), 13 free against 2 attackers, 8 against 4, 3 against 8 (docs/limits.md).
/// Credential lookups wait for one of an eighth as many places. Limit 0 disables work
/// admission.
pub(crate) struct Admission {
    limit: usize,
    admin: usize,
    anonymous: usize,
    tenants: usize,
    bodies_per_tenant: usize,
    body_buffer_bytes: usize,
    lookups: Option<Arc<Semaphore>>,
    counts: Mutex<Counts>,
}

/// What is held of each budget.
#[derive(Default)]
struct Counts {
    admin: usize,
    anonymous: usize,
    /// Places held by tenants, all together and per busy tenant.
    tenants: usize,
    per_tenant: HashMap<String, usize>,
    /// Bodies arriving, per principal, and the bytes they reserve.
    bodies: HashMap<Principal, usize>,
    body_bytes: usize,
}

/// A request's place among those admitted to work, given back on drop.
struct Slot<'a> {
    admission: &'a Admission,
    principal: Option<Principal>,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let Some(principal) = self.principal.take() else {
            return;
        };
        let mut counts = crate::store::lock(&self.admission.counts);
        match principal {
            Principal::Admin => counts.admin = counts.admin.saturating_sub(1),
            Principal::Anonymous => counts.anonymous = counts.anonymous.saturating_sub(1),
            Principal::Tenant(id) => {
                counts.tenants = counts.tenants.saturating_sub(1);
                if let Some(n) = counts.per_tenant.get_mut(&id) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        counts.per_tenant.remove(&id);
                    }
                }
            }
        }
    }
}

/// A body's place among those arriving, given back on drop (once the body is in).
struct BodySlot<'a> {
    admission: &'a Admission,
    principal: Principal,
    bytes: usize,
}

impl Drop for BodySlot<'_> {
    fn drop(&mut self) {
        let mut counts = crate::store::lock(&self.admission.counts);
        counts.body_bytes = counts.body_bytes.saturating_sub(self.bytes);
        if let Some(n) = counts.bodies.get_mut(&self.principal) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.bodies.remove(&self.principal);
            }
        }
    }
}

impl Admission {
    pub(crate) fn new(config: &Config) -> Admission {
        let limit = config.max_concurrent_requests;
        let admin = (limit / 4).max(1);
        let anonymous = (limit / 8).max(1);
        Admission {
            limit,
            admin,
            anonymous,
            tenants: limit.saturating_sub(admin + anonymous).max(1),
            bodies_per_tenant: config.max_bodies_per_tenant,
            body_buffer_bytes: config.max_body_buffer_bytes,
            lookups: (limit > 0).then(|| Arc::new(Semaphore::new(anonymous))),
            counts: Mutex::default(),
        }
    }

    /// The places one of `busy` tenants may hold, and the places kept free for the others.
    fn tenant_share(&self, busy: usize) -> (usize, usize) {
        let share = self.tenants / (busy + 1);
        (share.max(2), share)
    }

    /// A place to work for `principal`, or the message of the 503 that sheds it.
    fn admit(&self, principal: Principal) -> Result<Slot<'_>, String> {
        if self.limit == 0 {
            return Ok(Slot {
                admission: self,
                principal: None,
            });
        }
        let mut counts = crate::store::lock(&self.counts);
        match &principal {
            Principal::Admin if counts.admin >= self.admin => {
                return Err(format!(
                    "The admin key has {} requests in flight, its share of the server's limit of {}; retry shortly.",
                    self.admin, self.limit
                ));
            }
            Principal::Admin => counts.admin += 1,
            Principal::Anonymous if counts.anonymous >= self.anonymous => {
                return Err(format!(
                    "Requests without credentials have {} requests in flight, their share of the server's limit of {}; retry shortly.",
                    self.anonymous, self.limit
                ));
            }
            Principal::Anonymous => counts.anonymous += 1,
            Principal::Tenant(id) => {
                let held = counts.per_tenant.get(id).copied().unwrap_or(0);
                let busy = counts.per_tenant.len() + usize::from(held == 0);
                let (cap, keep_free) = self.tenant_share(busy);
                let free = self.tenants.saturating_sub(counts.tenants);
                if held >= cap {
                    return Err(format!(
                        "This tenant has {held} requests in flight, its share while {busy} tenants are busy (of the server's limit of {}); retry shortly.",
                        self.limit
                    ));
                }
                if free == 0 || (held > 0 && free - 1 < keep_free) {
                    return Err(format!(
                        "The server is serving its limit of {} requests, {keep_free} places kept for other tenants; retry shortly.",
                        self.limit
                    ));
                }
                counts.tenants += 1;
                *counts.per_tenant.entry(id.clone()).or_insert(0) += 1;
            }
        }
        Ok(Slot {
            admission: self,
            principal: Some(principal),
        })
    }

    /// A place for `principal`'s body of `bytes` to arrive in, or the message of the 503
    /// that sheds it.
    fn receive(&self, principal: &Principal, bytes: usize) -> Result<BodySlot<'_>, String> {
        let mut counts = crate::store::lock(&self.counts);
        let arriving = counts.bodies.get(principal).copied().unwrap_or(0);
        if self.bodies_per_tenant > 0 && arriving >= self.bodies_per_tenant {
            let who = match principal {
                Principal::Admin => "The admin key has",
                _ => "This tenant has",
            };
            return Err(format!(
                "{who} {arriving} request bodies arriving, its limit of {}; retry shortly.",
                self.bodies_per_tenant
            ));
        }
        let reserved = counts.body_bytes.saturating_add(bytes);
        if self.body_buffer_bytes > 0 && reserved > self.body_buffer_bytes {
            return Err(format!(
                "The server is receiving {} bytes of request bodies, within {} of its limit of {}; retry shortly.",
                counts.body_bytes,
                bytes,
                self.body_buffer_bytes
            ));
        }
        counts.body_bytes = reserved;
        *counts.bodies.entry(principal.clone()).or_insert(0) += 1;
        Ok(BodySlot {
            admission: self,
            principal: principal.clone(),
            bytes,
        })
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
    // the write ends, so the retry gets that answer. Other requests are
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
    let anonymous = matches!(identity, Identity::Anonymous);
    let admin = matches!(identity, Identity::Admin);
    req.extensions_mut().insert(identity);
    if anonymous {
        // An anonymous request's body is never read.
        return match app.admission.admit(principal) {
            Ok(_slot) => next.run(req).await,
            Err(message) => unavailable(path, message),
        };
    }
    // The body arrives under the body budget, holding no place to work.
    let (req, body) = match body_size(&req, &app.config) {
        Err((status, message)) => return surface.error(status, None, message),
        Ok(None) => (req, Bytes::new()),
        Ok(Some(bytes)) => {
            let _receiving = match app.admission.receive(&principal, bytes) {
                Ok(slot) => slot,
                Err(message) => return unavailable(path, message),
            };
            match read_body(req, &app.config).await {
                Ok(read) => read,
                Err((status, message)) => return surface.error(status, None, message),
            }
        }
    };
    let _slot = match app.admission.admit(principal) {
        Ok(slot) => slot,
        Err(message) => return unavailable(path, message),
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
    // The last steps, each wrapping the next once: the key (claimed, looked up, recorded),
    // the powers (faults, journal), the handler inside the key's store scope. A latency
    // fault thus holds a keyed request in flight, as a slow platform would.
    let app = &app;
    match (subject, keyed) {
        (Some(subject), Some(keyed)) => {
            let run = |req, key| {
                let handler = |req| keys::scope(key, next.run(req));
                powers::apply(app, surface, subject, body, req, handler)
            };
            idempotency::serve(app, surface, keyed, req, run).await
        }
        (Some(subject), None) => {
            let handler = |req| next.run(req);
            powers::apply(app, surface, subject, body, req, handler).await
        }
        (None, Some(keyed)) => {
            let run = |req, key| keys::scope(key, next.run(req));
            idempotency::serve(app, surface, keyed, req, run).await
        }
        (None, None) => next.run(req).await,
    }
}

/// The bytes an identified request's body may take (its `Content-Length`, a chunked one's
/// the largest body), `None` when it has none; 413 when its length is over the largest.
fn body_size(req: &Request, config: &Config) -> Result<Option<usize>, (StatusCode, String)> {
    let headers = req.headers();
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let chunked = headers.contains_key(header::TRANSFER_ENCODING);
    // No length and no chunks, or a zero length: HTTP gives the request no body (most reads).
    if !chunked && length.unwrap_or(0) == 0 {
        return Ok(None);
    }
    let limit = config.max_body_bytes;
    match length {
        Some(n) if n > limit as u64 => Err(too_large(limit)),
        Some(n) if !chunked => Ok(Some(usize::try_from(n).unwrap_or(limit))),
        _ => Ok(Some(limit)),
    }
}

fn too_large(limit: usize) -> (StatusCode, String) {
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("the request body is too large: at most {limit} bytes are accepted"),
    )
}

/// Reads an identified request's body (one [`body_size`] found): at most `max_body_bytes`
/// (413), arrived in full within `body_timeout_ms` (408); answers the request with the same
/// bytes as its body, and them.
async fn read_body(
    req: Request,
    config: &Config,
) -> Result<(Request, Bytes), (StatusCode, String)> {
    let (parts, body) = req.into_parts();
    let limit = config.max_body_bytes;
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
            too_large(limit)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(limit: usize) -> Admission {
        let mut config = Config::new("/nonexistent", None);
        config.max_concurrent_requests = limit;
        Admission::new(&config)
    }

    fn tenant(i: usize) -> Principal {
        Principal::Tenant(format!("t{i}"))
    }

    /// `k` attackers take every place they can, in the order `order` gives (sequentially:
    /// each attacker fills up before the next comes; round robin: one place each in turn);
    /// answers the places they hold and what a tenant not busy then finds free.
    fn attack(admission: &Admission, k: usize, round_robin: bool) -> (Vec<Slot<'_>>, usize) {
        let mut held = Vec::new();
        if round_robin {
            loop {
                let before = held.len();
                for i in 0..k {
                    if let Ok(slot) = admission.admit(tenant(i)) {
                        held.push(slot);
                    }
                }
                if held.len() == before {
                    break;
                }
            }
        } else {
            for i in 0..k {
                while let Ok(slot) = admission.admit(tenant(i)) {
                    held.push(slot);
                }
            }
        }
        let free = admission.tenants - crate::store::lock(&admission.counts).tenants;
        (held, free)
    }

    #[test]
    fn attacking_tenants_leave_places_for_the_rest_in_any_order() {
        let admission = admission(64);
        assert_eq!(
            (admission.admin, admission.anonymous, admission.tenants),
            (16, 8, 40)
        );
        for (k, at_least) in [(1, 20), (2, 13), (4, 8), (8, 3)] {
            for round_robin in [false, true] {
                let (held, free) = attack(&admission, k, round_robin);
                assert!(
                    free >= at_least,
                    "{k} attackers (round robin {round_robin}) left {free} places"
                );
                // A tenant not busy is admitted, and so are the admin key and the documents.
                let victim = admission.admit(tenant(100));
                assert!(victim.is_ok(), "{k} attackers: {free} free");
                assert!(admission.admit(Principal::Admin).is_ok());
                assert!(admission.admit(Principal::Anonymous).is_ok());
                drop(victim);
                drop(held);
                assert_eq!(crate::store::lock(&admission.counts).tenants, 0);
            }
        }
    }

    #[test]
    fn a_tenant_holds_at_most_its_share_and_the_pools_are_separate() {
        let admission = admission(64);
        // Alone, a tenant holds T / 2 = 20 places.
        let (held, _) = attack(&admission, 1, false);
        assert_eq!(held.len(), 20);
        let refused = admission.admit(tenant(0)).err().unwrap_or_default();
        assert!(refused.contains("its share"), "{refused}");
        // The admin key's 16 and the anonymous 8 are their own.
        let admin: Vec<_> = (0..16)
            .map_while(|_| admission.admit(Principal::Admin).ok())
            .collect();
        assert_eq!(admin.len(), 16);
        assert!(admission.admit(Principal::Admin).is_err());
        let anonymous: Vec<_> = (0..8)
            .map_while(|_| admission.admit(Principal::Anonymous).ok())
            .collect();
        assert_eq!(anonymous.len(), 8);
        assert!(admission.admit(Principal::Anonymous).is_err());
        assert!(admission.admit(tenant(1)).is_ok());
    }

    #[test]
    fn bodies_arriving_are_bounded_per_tenant_and_in_bytes() {
        let mut config = Config::new("/nonexistent", None);
        config.max_bodies_per_tenant = 2;
        config.max_body_buffer_bytes = 1000;
        let admission = Admission::new(&config);
        let a = admission.receive(&tenant(0), 100);
        let b = admission.receive(&tenant(0), 100);
        assert!(a.is_ok() && b.is_ok());
        let refused = admission.receive(&tenant(0), 100).err().unwrap_or_default();
        assert!(refused.contains("limit of 2"), "{refused}");
        // Another tenant is not touched by the first one's bodies...
        let c = admission.receive(&tenant(1), 700);
        assert!(c.is_ok());
        // ...up to the bytes of all bodies together.
        let refused = admission.receive(&tenant(2), 101).err().unwrap_or_default();
        assert!(refused.contains("limit of 1000"), "{refused}");
        drop(c);
        assert!(admission.receive(&tenant(2), 101).is_ok());
        drop((a, b));
        assert!(admission.receive(&tenant(0), 100).is_ok());
        // Bodies hold no place to work.
        assert_eq!(crate::store::lock(&admission.counts).tenants, 0);
    }
}
