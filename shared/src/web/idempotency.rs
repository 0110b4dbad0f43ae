//! The `Idempotency-Key` header (issue 22), the pipeline's step between the body read and the
//! powers: a tenant's write (POST, PUT, PATCH, DELETE) of any surface that carries the header
//! runs inside a `store::idempotency` scope, so the key's row is stored by the write's own
//! transaction; the answer it rendered is then recorded on that row, and a retry with the
//! same key and the same request gets it replayed (`Idempotent-Replayed: true`).
//!
//! Answers of this step, in the surface's error shape: 400 for a malformed key; 409 while a
//! request with the key is in flight in this process, or when the first request was applied
//! but its answer was not recorded (its outcome was unknown, or it is running in another
//! environment); 422 for the key used with a different request. See docs/storage.md,
//! "Idempotency keys", for the store's side and its invariants.

use super::state::{AppState, Tenant};
use super::surface::Surface;
use crate::store::idempotency::{self as keys, Answer, Found, KeyScope};
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, Method, StatusCode};
use axum::response::Response;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};

/// The request header.
pub const HEADER: &str = "idempotency-key";

/// The header a replayed answer carries (value `true`).
pub const REPLAYED_HEADER: &str = "idempotent-replayed";

/// Headers not recorded with an answer: framing and the moment of this one answer.
const UNRECORDED_HEADERS: &[&str] = &[
    "content-length",
    "transfer-encoding",
    "connection",
    "date",
    "keep-alive",
];

/// The keys of requests in flight in this process, by tenant (one per process, in
/// [`AppState`]).
#[derive(Default)]
pub(crate) struct InFlight {
    claimed: Mutex<HashSet<(String, String)>>,
    /// Requests whose write answered "outcome unknown", with its kept result, by tenant and
    /// key: at most [`MAX_KEPT`], all forgotten when full (a retry then gets the 409).
    kept: Mutex<HashMap<(String, String), Arc<KeyScope>>>,
}

/// Most "outcome unknown" requests a process keeps for their retry.
const MAX_KEPT: usize = 1024;

/// A key's place in [`InFlight`], given back on drop.
struct Claim<'a> {
    set: &'a InFlight,
    entry: (String, String),
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        crate::store::lock(&self.set.claimed).remove(&self.entry);
    }
}

impl InFlight {
    fn claim(&self, tenant: &str, key: &str) -> Option<Claim<'_>> {
        let entry = (tenant.to_string(), key.to_string());
        // The lock is released before a claim exists: a claim's drop takes it.
        let inserted = crate::store::lock(&self.claimed).insert(entry.clone());
        inserted.then(|| Claim { set: self, entry })
    }

    fn keep(&self, tenant: &str, scope: Arc<KeyScope>) {
        let mut kept = crate::store::lock(&self.kept);
        if kept.len() >= MAX_KEPT {
            kept.clear();
        }
        kept.insert((tenant.to_string(), scope.key().to_string()), scope);
    }

    fn kept(&self, tenant: &str, key: &str) -> Option<Arc<KeyScope>> {
        crate::store::lock(&self.kept).remove(&(tenant.to_string(), key.to_string()))
    }
}

/// A keyed write, ready to be served by [`serve`].
pub(super) struct Keyed {
    tenant: Tenant,
    scope: Arc<KeyScope>,
}

/// Runs the handler `next` on `req`, inside the key's scope when the request is a keyed
/// write: its writes of the tenant then store the key's row in their own transaction.
pub(super) async fn handler(req: Request, next: axum::middleware::Next) -> Response {
    match req.extensions().get::<Arc<KeyScope>>().cloned() {
        Some(scope) => keys::scope(scope, next.run(req)).await,
        None => next.run(req).await,
    }
}

/// The key of a tenant's write that carries the header: `Ok(None)` when the request is no
/// write or has no header, `Err` the message of the 400 of a malformed key.
pub(super) fn prepare(
    tenant: &Tenant,
    req: &Request,
    body: &Bytes,
) -> Result<Option<Keyed>, String> {
    let method = req.method();
    if ![Method::POST, Method::PUT, Method::PATCH, Method::DELETE].contains(method) {
        return Ok(None);
    }
    let mut values = req.headers().get_all(HEADER).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    let key = value.to_str().ok().filter(|k| keys::valid_key(k));
    let (Some(key), None) = (key, values.next()) else {
        return Err(format!(
            "the Idempotency-Key header must appear once, with 1 to {} visible ASCII characters",
            keys::MAX_KEY_CHARS
        ));
    };
    let tenant_id = tenant.record.id.as_str();
    let mut hash = Sha256::new();
    for part in [
        method.as_str(),
        req.uri().path(),
        req.uri().query().unwrap_or(""),
        &hex::encode(Sha256::digest(body)),
        tenant_id,
    ] {
        hash.update(part.len().to_le_bytes());
        hash.update(part.as_bytes());
    }
    let fingerprint = hex::encode(hash.finalize());
    Ok(Some(Keyed {
        tenant: tenant.clone(),
        scope: KeyScope::new(tenant_id, key, &fingerprint),
    }))
}

/// Serves a keyed write: a replay, a refusal, or `run` (the powers and the handler) on `req`
/// marked with the key's scope (which [`handler`] enters), its answer then recorded.
pub(super) async fn serve<F>(
    app: &AppState,
    surface: Surface,
    keyed: Keyed,
    mut req: Request,
    run: impl FnOnce(Request) -> F,
) -> Response
where
    F: Future<Output = Response>,
{
    let Keyed { tenant, mut scope } = keyed;
    let mut resumed = false;
    let key = scope.key().to_string();
    let Some(_claim) = app.idempotency.claim(tenant.db.tenant_id(), &key) else {
        let message = format!("a request with this Idempotency-Key ('{key}') is in progress; retry once it has been answered");
        return conflict(surface, message);
    };
    let fingerprint = scope.fingerprint().to_string();
    let looked = {
        let key = key.clone();
        tenant
            .db
            .read(move |c| keys::lookup(c, &key, &fingerprint))
            .await
    };
    match looked {
        Err(e) => return surface.from_error(e),
        Ok(Found::Answer(answer)) => return replay(answer),
        Ok(Found::Unrecorded) => {
            // This process ran the first request and kept the result of its write, whose
            // outcome was unknown and which has landed since: the request runs again to
            // render that first answer, its write answered by the kept result.
            if let Some(first) = app.idempotency.kept(tenant.db.tenant_id(), &key) {
                if first.fingerprint() == scope.fingerprint() {
                    first.resume();
                    scope = first;
                    resumed = true;
                }
            }
            if !resumed {
                let message = format!("a request with this Idempotency-Key ('{key}') was applied, but its answer was not recorded (its outcome was unknown, or it is still running elsewhere); it is not applied again");
                return conflict(surface, message);
            }
        }
        Ok(Found::Mismatch) => {
            let message = format!("the Idempotency-Key '{key}' was used with a different request (method, path, query or body); use a new key for a new request");
            return surface.error(
                StatusCode::UNPROCESSABLE_ENTITY,
                Some(match surface {
                    Surface::Legacy => "VALIDATION_FAILURE",
                    _ => "UNPROCESSABLE_ENTITY",
                }),
                message,
            );
        }
        Ok(Found::Nothing) => {
            // A kept "outcome unknown" write that did not land (fenced) has nothing to render.
            app.idempotency.kept(tenant.db.tenant_id(), &key);
        }
    }
    // `run` enters the key's scope around the handler only (see [`handler`]): the powers'
    // own writes (a fault rule's hit count) are not the request's write.
    req.extensions_mut().insert(scope.clone());
    let response = run(req).await;
    if scope.has_stash() {
        // "Outcome unknown": kept for a retry in this process (see `Found::Unrecorded`).
        app.idempotency.keep(tenant.db.tenant_id(), scope.clone());
    }
    if !scope.written() {
        // Nothing of the request was written (refused, or no write of this tenant): nothing
        // to replay, and a retry runs anew.
        return response;
    }
    let (parts, body) = response.into_parts();
    let body = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes,
        Err(e) => {
            tracing::warn!(error = %e, "could not read a keyed write's answer");
            return surface.from_error(crate::Error::Internal(e.to_string()));
        }
    };
    let answer = Answer {
        status: parts.status.as_u16(),
        headers: parts
            .headers
            .iter()
            .filter(|(n, _)| !UNRECORDED_HEADERS.contains(&n.as_str()))
            .filter_map(|(n, v)| Some((n.as_str().to_string(), v.to_str().ok()?.to_string())))
            .collect(),
        body: body.to_vec(),
    };
    let recorded = scope.clone();
    if let Err(e) = tenant
        .db
        .write(move |tx| keys::record_answer(tx, &recorded, &answer))
        .await
    {
        // The write stands; a retry learns it was applied (409) instead of its answer.
        tracing::warn!(error = %e, key, "a keyed write's answer was not recorded");
    }
    let mut response = Response::from_parts(parts, Body::from(body));
    if resumed {
        response
            .headers_mut()
            .insert(REPLAYED_HEADER, HeaderValue::from_static("true"));
    }
    response
}

/// A 409 of this step: `CONFLICT`, on Surface A a `GENERAL` fault (its 409 default,
/// `ALREADY_EXISTS`, would say something else).
fn conflict(surface: Surface, message: String) -> Response {
    let code = matches!(surface, Surface::Legacy).then_some("GENERAL");
    surface.error(StatusCode::CONFLICT, code, message)
}

/// A recorded answer, replayed.
fn replay(answer: Answer) -> Response {
    let mut response = Response::new(Body::from(answer.body));
    *response.status_mut() =
        StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    for (name, value) in answer.headers {
        if let (Ok(n), Ok(v)) = (
            HeaderName::try_from(name.as_str()),
            HeaderValue::from_str(&value),
        ) {
            headers.append(n, v);
        }
    }
    headers.insert(REPLAYED_HEADER, HeaderValue::from_static("true"));
    response
}
