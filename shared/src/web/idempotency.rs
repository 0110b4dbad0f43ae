//! The `Idempotency-Key` header, the pipeline's step between admission and the powers: a
//! tenant's write (POST, PUT, PATCH, DELETE) of any surface that carries the header
//! runs inside a `store::idempotency` scope, so the key's row, with the result of the write's
//! transaction, is stored by the write's own transaction; the answer it rendered is then
//! recorded on that row, and a retry with the same key and the same request gets it replayed
//! (`Idempotent-Replayed: true`). An admin write is keyed where its data is ([`Keeper`]): in
//! the tenant's database for a write inside one tenant (clock, faults, fixtures, reset), in
//! the registry for a tenant's creation, fork or deletion (its answer sealed there, [`seal`]:
//! a creation's holds clear credentials).
//!
//! A tenant's keys and the admin's keys inside that tenant live in namespaces of their own
//! (`store::idempotency::KeyScope::namespaced`): neither sees the other's, and a fork does
//! not see its source's. The pipeline runs a keyed request in a task of its own, so that
//! the request runs to its end and records its answer even when its client has gone: the
//! key's claim in this process ([`InFlight`]) lasts as long as the write, no longer.
//!
//! Invariant: in a tenant's database, a key's row exists only with its write's result
//! (same transaction, same log entry), so whoever sees the write can render its answer: a
//! retry that finds the row without an answer, on any environment, runs the request again
//! with that write answered by the stored result (`KeyScope::resume_of`: nothing is applied
//! twice), records the answer and sends it as a replay. No process has to outlive its
//! write for its retry to be answered (docs/storage.md, "Idempotency keys", step by step).
//!
//! Answers of this step, in the surface's error shape: 400 for a malformed key; 409 while a
//! request with the key is in flight in this process, or when the first request was applied
//! and no answer can be given (a registry write whose answer was not recorded, a restore, a
//! row of an earlier build without a result), or its answer was recorded in the registry
//! sealed so that this process cannot open it (another token secret, or an earlier build's
//! seal); 422 for the key used with a different request. See docs/storage.md, "Idempotency
//! keys", for the store's side and its invariants.

mod seal;

use super::state::{AppState, Tenant};
use super::surface::Surface;
use crate::store::idempotency::{self as keys, Answer, Applied, Found, KeyScope};
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, Method, StatusCode};
use axum::response::Response;
use sha2::{Digest, Sha256};
use std::collections::HashSet;
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
}

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
}

/// Where a keyed request's key is kept: with the data its write changes.
#[derive(Clone)]
pub(super) enum Keeper {
    /// A tenant's database: a write of a surface, or an admin write inside one tenant (its
    /// clock, fault rules, fixtures, reset).
    Tenant(Tenant),
    /// The registry: an admin write that creates, forks or deletes a tenant.
    Registry,
}

impl Keeper {
    /// The id the key's scope and in-flight claims are counted under.
    fn id(&self) -> &str {
        match self {
            Keeper::Tenant(t) => t.db.tenant_id(),
            Keeper::Registry => keys::REGISTRY,
        }
    }

    /// What the keeper holds for `scope`'s key, and, when a write was applied under it
    /// without a recorded answer, that write (a tenant's; the registry's rows have none).
    async fn lookup(
        &self,
        app: &AppState,
        scope: &KeyScope,
    ) -> crate::Result<(Found, Option<Applied>)> {
        let (key, fingerprint) = (scope.key().to_string(), scope.fingerprint().to_string());
        match self {
            Keeper::Tenant(t) => {
                let shown = scope.shown().to_string();
                t.db.read(move |c| {
                    let mut found = keys::lookup(c, &key, &fingerprint)?;
                    if found == Found::Nothing && shown != key {
                        // A row stored by an earlier build, under the bare key (no
                        // namespace), still answers until it expires.
                        found = keys::lookup(c, &shown, &fingerprint)?;
                    }
                    // The write applied under the key, whose result renders its answer.
                    let applied = match found {
                        Found::Unrecorded => keys::applied(c, &key)?,
                        _ => None,
                    };
                    Ok((found, applied))
                })
                .await
            }
            Keeper::Registry => {
                let store = app.store.clone();
                let found =
                    crate::store::blocking(move || store.registry().lookup_key(&key, &fingerprint))
                        .await?;
                let Found::Answer(mut answer) = found else {
                    return Ok((found, None));
                };
                // A body this process cannot open (sealed under another token secret, or by
                // an earlier build's seal) cannot be replayed: the request was applied and
                // its answer recorded, but not readable here. Never applied again.
                match seal::open(&app.token_secret()?, &answer.body) {
                    Some(body) => {
                        answer.body = body;
                        Ok((Found::Answer(answer), None))
                    }
                    None => Err(crate::Error::conflict(format!(
                        "a request with this Idempotency-Key ('{}') was applied, but its recorded answer cannot be read here: it was sealed under another token secret (SANDBOX_TOKEN_SECRET) or by an earlier version of the sandbox; it is not applied again",
                        scope.shown()
                    ))),
                }
            }
        }
    }

    async fn record(
        &self,
        app: &AppState,
        scope: Arc<KeyScope>,
        mut answer: Answer,
    ) -> crate::Result<()> {
        match self {
            Keeper::Tenant(t) => {
                t.db.write(move |tx| {
                    keys::record_answer(tx, &scope, &answer)?;
                    keys::drop_result(tx, &scope)
                })
                .await
            }
            Keeper::Registry => {
                answer.body = seal::close(&app.token_secret()?, &answer.body);
                let store = app.store.clone();
                crate::store::blocking(move || store.registry().record_key_answer(&scope, &answer))
                    .await
            }
        }
    }
}

/// A keyed write, ready to be served by [`serve`].
pub(super) struct Keyed {
    keeper: Keeper,
    scope: Arc<KeyScope>,
}

/// The parts of a request's head this step reads (borrowed apart from the request, whose
/// body is not `Sync`, so that [`prepare_admin`] may hold them across its look-ups).
#[derive(Clone, Copy)]
pub(super) struct Head<'a> {
    method: &'a Method,
    uri: &'a axum::http::Uri,
    headers: &'a axum::http::HeaderMap,
}

impl<'a> Head<'a> {
    pub(super) fn of(req: &'a Request) -> Head<'a> {
        Head {
            method: req.method(),
            uri: req.uri(),
            headers: req.headers(),
        }
    }
}

/// The key a write carries: `Ok(None)` when the request is no write or has no header, `Err`
/// the message of the 400 of a malformed key.
fn header_key(head: Head<'_>) -> Result<Option<String>, String> {
    if ![Method::POST, Method::PUT, Method::PATCH, Method::DELETE].contains(head.method) {
        return Ok(None);
    }
    let mut values = head.headers.get_all(HEADER).iter();
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
    Ok(Some(key.to_string()))
}

/// The key of a tenant's write that carries the header (see [`header_key`]).
pub(super) fn prepare(
    tenant: &Tenant,
    req: &Request,
    body: &Bytes,
) -> Result<Option<Keyed>, String> {
    let head = Head::of(req);
    let namespace = keys::tenant_namespace(tenant.db.tenant_id());
    Ok(header_key(head)?
        .map(|key| keyed(Keeper::Tenant(tenant.clone()), &namespace, &key, head, body)))
}

/// The key of an admin write that carries the header (see [`header_key`]), kept by the
/// registry for `POST /tenants` and `DELETE /tenants/{id}`, by the tenant's database for a
/// write under `/tenants/{id}/` of a registered tenant; `None` for any other admin call (an
/// unknown tenant is the handler's 404).
pub(super) async fn prepare_admin(
    app: &AppState,
    head: Head<'_>,
    body: &Bytes,
) -> Result<Option<Keyed>, String> {
    let Some(key) = header_key(head)? else {
        return Ok(None);
    };
    let path = head.uri.path();
    let Some(rest) = path
        .strip_prefix(super::ADMIN_PREFIX)
        .and_then(|r| r.strip_prefix("/tenants"))
    else {
        return Ok(None);
    };
    let keeper = match rest.strip_prefix('/') {
        None if rest.is_empty() => Keeper::Registry,
        Some(id) if !id.is_empty() && !id.contains('/') => Keeper::Registry,
        // The admin's keys in a tenant's database are apart from the tenant's own.
        _ => {
            let Some(id) = super::powers::admin_subject(path) else {
                return Ok(None);
            };
            let Ok(record) = crate::tenants::get(&app.store, &id).await else {
                return Ok(None);
            };
            match app.tenant(record).await {
                Ok(Some(tenant)) => Keeper::Tenant(tenant),
                _ => return Ok(None),
            }
        }
    };
    let namespace = match &keeper {
        Keeper::Tenant(t) => keys::admin_namespace(t.db.tenant_id()),
        Keeper::Registry => String::new(),
    };
    Ok(Some(keyed(keeper, &namespace, &key, head, body)))
}

/// The scope of `key` for `req`, stored in `namespace` (none: the registry's keys): its
/// fingerprint is SHA-256 over the method, path, query, the body's SHA-256 and the keeper's
/// id.
fn keyed(keeper: Keeper, namespace: &str, key: &str, head: Head<'_>, body: &Bytes) -> Keyed {
    let mut hash = Sha256::new();
    for part in [
        head.method.as_str(),
        head.uri.path(),
        head.uri.query().unwrap_or(""),
        &hex::encode(Sha256::digest(body)),
        keeper.id(),
    ] {
        hash.update(part.len().to_le_bytes());
        hash.update(part.as_bytes());
    }
    let fingerprint = hex::encode(hash.finalize());
    let scope = match namespace {
        "" => KeyScope::new(keeper.id(), key, &fingerprint),
        _ => KeyScope::namespaced(keeper.id(), namespace, key, &fingerprint),
    };
    Keyed { keeper, scope }
}

/// Serves a keyed write: a replay, a refusal, or `run` (the rest of the pipeline: the powers,
/// then the handler) on `req`, its answer then recorded. `run` is given the key's scope to
/// enter around the handler alone: the powers' own writes (a fault rule's hit count) are not
/// the request's write, so they must not carry the key's row.
pub(super) async fn serve<F>(
    app: &AppState,
    surface: Surface,
    keyed: Keyed,
    req: Request,
    run: impl FnOnce(Request, Arc<KeyScope>) -> F,
) -> Response
where
    F: Future<Output = Response>,
{
    let Keyed { keeper, mut scope } = keyed;
    // Claimed by the key as stored (its namespace); named by the header's.
    let (key, shown) = (scope.key().to_string(), scope.shown().to_string());
    let owner = keeper.id().to_string();
    let Some(_claim) = app.idempotency.claim(&owner, &key) else {
        let message = format!("a request with this Idempotency-Key ('{shown}') is in progress; retry once it has been answered");
        return conflict(surface, message);
    };
    match keeper.lookup(app, &scope).await {
        Err(e) => return surface.from_error(e),
        Ok((Found::Answer(answer), _)) => return replay(answer),
        Ok((Found::Unrecorded, applied)) => {
            // A write was applied under the key (its row is there, in this environment's
            // copy), its answer not recorded: its client timed out, its outcome was
            // reported unknown, or the process that ran it stopped before recording it,
            // wherever that was. The write stored its result on the row, in its own
            // transaction: the request runs again with that write answered by the result,
            // so the handler renders the first answer (nothing applied again), recorded
            // below and sent as a replay.
            match applied.and_then(|a| a.result.clone().map(|r| scope.resume_of(&a, r))) {
                Some(resumed) => scope = resumed,
                None => {
                    let message = format!("a request with this Idempotency-Key ('{shown}') was applied, but its answer was not recorded (its write stored no result to render it from: a tenant's creation or deletion, a restore, or a write of an earlier version of the sandbox); it is not applied again");
                    return conflict(surface, message);
                }
            }
        }
        Ok((Found::Mismatch, _)) => {
            let message = format!("the Idempotency-Key '{shown}' was used with a different request (method, path, query or body); use a new key for a new request");
            return surface.error(
                StatusCode::UNPROCESSABLE_ENTITY,
                Some(match surface {
                    Surface::Legacy => "VALIDATION_FAILURE",
                    _ => "UNPROCESSABLE_ENTITY",
                }),
                message,
            );
        }
        Ok((Found::Nothing, _)) => {
            // No row: nothing applied under the key, or a write whose outcome was unknown
            // has not landed yet (S3 still holds its PUT). The request runs; its
            // conditional PUT settles which: it takes the slot (the held write is fenced
            // out), or it finds the held write's entry, catches up, finds the key taken by
            // another request and fails with a conflict, applying nothing; the next retry
            // finds the row and renders its answer.
        }
    }
    let resumed = scope.resuming();
    let response = run(req, scope.clone()).await;
    if !scope.written() {
        // Nothing of the request was written (refused, or no write of this tenant; a
        // resumed run refused before its write): nothing to replay, and a retry runs anew
        // (or resumes again).
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
    let answer = answer_of(&parts, &body);
    if let Err(e) = keeper.record(app, scope.clone(), answer).await {
        // The write and its result are stored: a retry anywhere renders the answer again.
        tracing::warn!(error = %e, key = scope.shown(), "a keyed write's answer was not recorded");
    }
    let mut response = Response::from_parts(parts, Body::from(body));
    if resumed {
        response
            .headers_mut()
            .insert(REPLAYED_HEADER, HeaderValue::from_static("true"));
    }
    response
}

/// The answer to record of a response's head and body.
fn answer_of(parts: &axum::http::response::Parts, body: &Bytes) -> Answer {
    Answer {
        status: parts.status.as_u16(),
        headers: parts
            .headers
            .iter()
            .filter(|(n, _)| !UNRECORDED_HEADERS.contains(&n.as_str()))
            .filter_map(|(n, v)| Some((n.as_str().to_string(), v.to_str().ok()?.to_string())))
            .collect(),
        body: body.to_vec(),
    }
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
