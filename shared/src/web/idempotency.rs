//! The `Idempotency-Key` header, the pipeline's step between admission and the powers: a
//! tenant's write (POST, PUT, PATCH, DELETE) of any surface that carries the header
//! runs inside a `store::idempotency` scope, so the key's row is stored by the write's own
//! transaction; the answer it rendered is then recorded on that row, and a retry with the
//! same key and the same request gets it replayed (`Idempotent-Replayed: true`). An admin
//! write is keyed where its data is ([`Keeper`]): in the tenant's database for a write inside
//! one tenant (clock, faults, fixtures, reset), in the registry for a tenant's creation, fork
//! or deletion (its answer sealed there, [`seal`]: a creation's holds clear credentials).
//!
//! A tenant's keys and the admin's keys inside that tenant live in namespaces of their own
//! (`store::idempotency::KeyScope::namespaced`): neither sees the other's, and a fork does
//! not see its source's. The pipeline runs a keyed request in a task of its own, so that
//! the request runs to its end and records its answer even when its client has gone: the
//! key's claim in this process ([`InFlight`]) lasts as long as the write, no longer. A write
//! whose outcome was unknown (S3 held its log PUT) is kept with its result and settled by
//! this process once its entry lands ([`settle`]: the answer rendered from the kept result and
//! recorded with the key), so that a retry in any environment gets the answer.
//!
//! Answers of this step, in the surface's error shape: 400 for a malformed key; 409 while a
//! request with the key is in flight in this process, or when the first request was applied
//! but its answer was not recorded (its outcome was unknown, or it is running in another
//! environment), or was recorded in the registry sealed so that this process cannot open it
//! (another token secret, or an earlier build's seal); 422 for the key used with a different request. See docs/storage.md,
//! "Idempotency keys", for the store's side and its invariants.

mod seal;

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
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
    /// key: at most [`MAX_KEPT`] keys, all forgotten when full (a retry then gets the 409).
    /// A key may have several: a retry that found no row (the first's entry not landed yet)
    /// ran anew and may have ended "outcome unknown" too; the row that lands names the one
    /// whose result renders the answer.
    kept: Mutex<HashMap<(String, String), KeptRequests>>,
    /// Keys whose kept write this process is settling now (see [`settle`]).
    settling: Mutex<HashSet<(String, String)>>,
}

/// The kept requests of one key (see [`InFlight`]).
type KeptRequests = Vec<Arc<KeyScope>>;

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
        let entry = (tenant.to_string(), scope.key().to_string());
        if kept.len() >= MAX_KEPT && !kept.contains_key(&entry) {
            kept.clear();
        }
        kept.entry(entry).or_default().push(scope);
    }

    /// The kept request of `key` whose write is the one applied (`request_id`, the row's);
    /// the key's other kept requests are forgotten (their writes can no longer land: one
    /// entry of the log at most carries the key's row).
    fn kept(&self, tenant: &str, key: &str, request_id: &str) -> Option<Arc<KeyScope>> {
        let entry = (tenant.to_string(), key.to_string());
        let scopes = crate::store::lock(&self.kept).remove(&entry)?;
        scopes.into_iter().find(|s| s.request_id() == request_id)
    }

    /// Whether this process keeps a request of `key` whose outcome was unknown, or is
    /// settling it now.
    fn has_kept(&self, tenant: &str, key: &str) -> bool {
        let entry = (tenant.to_string(), key.to_string());
        crate::store::lock(&self.kept).contains_key(&entry)
            || crate::store::lock(&self.settling).contains(&entry)
    }

    /// Forgets the kept requests of `key` (a run of it was applied and answered).
    fn forget(&self, tenant: &str, key: &str) {
        crate::store::lock(&self.kept).remove(&(tenant.to_string(), key.to_string()));
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

    async fn lookup(
        &self,
        app: &AppState,
        scope: &KeyScope,
    ) -> crate::Result<(Found, Option<String>)> {
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
                    // Whose write the row is: a kept result renders its own write's answer only.
                    let owner = match found {
                        Found::Unrecorded => keys::owner(c, &key)?,
                        _ => None,
                    };
                    Ok((found, owner))
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
                t.db.write(move |tx| keys::record_answer(tx, &scope, &answer))
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
    rerun: Option<Rerun>,
) -> Response
where
    F: Future<Output = Response>,
{
    let Keyed { keeper, mut scope } = keyed;
    let mut resumed = false;
    // Claimed and kept by the key as stored (its namespace); named by the header's.
    let (key, shown) = (scope.key().to_string(), scope.shown().to_string());
    let owner = keeper.id().to_string();
    let mut claim = app.idempotency.claim(&owner, &key);
    if claim.is_none() && app.idempotency.has_kept(&owner, &key) {
        // This process is settling the key's kept write (a run of milliseconds): the retry
        // waits for it, a little, rather than answering "in progress".
        let until = std::time::Instant::now() + SETTLING_WAIT;
        while claim.is_none() && std::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(20)).await;
            claim = app.idempotency.claim(&owner, &key);
        }
    }
    let Some(_claim) = claim else {
        let message = format!("a request with this Idempotency-Key ('{shown}') is in progress; retry once it has been answered");
        return conflict(surface, message);
    };
    let looked = keeper.lookup(app, &scope).await;
    match looked {
        Err(e) => return surface.from_error(e),
        Ok((Found::Answer(answer), _)) => return replay(answer),
        Ok((Found::Unrecorded, applied)) => {
            // This process ran the request whose write was applied (the row's request id)
            // and kept the result of that write, whose outcome was unknown and which has
            // landed since: the request runs again to render that first answer, its write
            // answered by the kept result.
            let first = applied.and_then(|id| app.idempotency.kept(&owner, &key, &id));
            if let Some(answer) = first.as_ref().and_then(|f| f.kept_answer()) {
                // Its answer was rendered but not recorded: recorded now, and answered.
                if let Some(first) = first {
                    record(app, &keeper, first, answer.clone()).await;
                }
                return replay(answer);
            }
            if let Some(first) = first {
                if first.fingerprint() == scope.fingerprint() {
                    first.resume();
                    scope = first;
                    resumed = true;
                }
            }
            if !resumed {
                let message = format!("a request with this Idempotency-Key ('{shown}') was applied, but its answer was not recorded (its outcome was unknown, or it is still running elsewhere); it is not applied again");
                return conflict(surface, message);
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
            // No row yet: a kept "outcome unknown" write was fenced, or its entry has not
            // landed yet (S3 still holds its PUT). The request runs anew; its conditional
            // PUT settles which: it wins the slot (the other is fenced: a clean run), or it
            // finds the other's entry and its key's row there and fails with a conflict,
            // applying nothing, and the next retry renders the other's kept result. The
            // kept requests stay until then.
        }
    }
    let response = run(req, scope.clone()).await;
    if scope.has_stash() {
        // "Outcome unknown": kept for a retry in this process (see `Found::Unrecorded`), and
        // settled here once the write has landed, for a retry anywhere (see [`settle`]).
        app.idempotency.keep(&owner, scope.clone());
        if let (Some(rerun), false) = (rerun, resumed) {
            tokio::spawn(settle(app.clone(), keeper.clone(), scope.clone(), rerun));
        }
    }
    if scope.written() && !resumed {
        // This run was applied: no kept write of the key can land any more.
        app.idempotency.forget(&owner, &key);
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
    record(app, &keeper, scope, answer_of(&parts, &body)).await;
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

/// Runs a keyed request again, on a copy of it (the rest of the pipeline: the powers, then
/// the handler inside the given key's scope), for [`settle`].
pub(super) type Rerun =
    Arc<dyn Fn(Arc<KeyScope>) -> Pin<Box<dyn Future<Output = Response> + Send>> + Send + Sync>;

/// How long a process tries to settle a write whose outcome was unknown, and how often it
/// looks: S3 holding a PUT longer than this is an outage, and a retry in this process still
/// settles it after (the kept result stays, bounded by [`MAX_KEPT`]).
const SETTLE_FOR: Duration = Duration::from_secs(120);
const SETTLE_EVERY: Duration = Duration::from_millis(500);

/// How long a retry waits for the key's claim while this process settles its kept write.
const SETTLING_WAIT: Duration = Duration::from_secs(2);

/// Settles `first`, a keyed write whose outcome was unknown, whether or not its client
/// retries here: once its log entry has landed (the key's row there, its request id
/// `first`'s), the request runs again to render its first answer from the kept result (its
/// write is not applied again) and the answer is recorded with the key, so that a retry in any
/// environment gets it instead of 409 "applied, but its answer was not recorded". Ends when
/// the row holds an answer, another request's row is there, or after [`SETTLE_FOR`] (the
/// write fenced: nothing to settle). A retry here in the meantime settles it the same way
/// (the key's claim keeps the two apart).
async fn settle(app: AppState, keeper: Keeper, first: Arc<KeyScope>, rerun: Rerun) {
    let (owner, key) = (keeper.id().to_string(), first.key().to_string());
    let until = std::time::Instant::now() + SETTLE_FOR;
    while std::time::Instant::now() < until {
        tokio::time::sleep(SETTLE_EVERY).await;
        // Looked up before the key is claimed, so a retry here finds the claim free while
        // the entry has not landed.
        let applied = match keeper.lookup(&app, &first).await {
            // S3 unreachable, or the entry not landed yet: look again.
            Err(_) | Ok((Found::Nothing, _)) => continue,
            Ok((Found::Unrecorded, Some(id))) if id == first.request_id() => id,
            // Answered (by a retry here), or another request's row: nothing left to settle.
            Ok(_) => return,
        };
        let entry = (owner.clone(), key.clone());
        crate::store::lock(&app.idempotency.settling).insert(entry.clone());
        let settled = settle_once(&app, &keeper, &owner, &key, &applied, &rerun).await;
        crate::store::lock(&app.idempotency.settling).remove(&entry);
        if settled {
            return;
        }
    }
}

/// One attempt of [`settle`] at the write `applied` (the request id of the key's row):
/// whether it is over (settled, or nothing left to settle here).
async fn settle_once(
    app: &AppState,
    keeper: &Keeper,
    owner: &str,
    key: &str,
    applied: &str,
    rerun: &Rerun,
) -> bool {
    {
        let Some(_claim) = app.idempotency.claim(owner, key) else {
            return false;
        };
        let Some(kept) = app.idempotency.kept(owner, key, applied) else {
            return true;
        };
        if let Some(answer) = kept.kept_answer() {
            record(app, keeper, kept, answer).await;
            return true;
        }
        kept.resume();
        let response = rerun(kept.clone()).await;
        if !kept.written() {
            // The kept result was not taken (the run was refused before its write, by a
            // fault rule say): kept again for a retry here.
            app.idempotency.keep(owner, kept);
            return false;
        }
        let (parts, body) = response.into_parts();
        match axum::body::to_bytes(body, usize::MAX).await {
            Ok(body) => record(app, keeper, kept, answer_of(&parts, &body)).await,
            Err(e) => tracing::warn!(error = %e, "could not read a settled write's answer"),
        }
        true
    }
}

/// Records `answer` on the row of `scope`'s applied write. When that fails (S3 could not
/// confirm it, say), the answer is kept in this process with the request: a retry here
/// answers it and records it again; elsewhere (or for a registry key), a retry learns the
/// write was applied (409).
async fn record(app: &AppState, keeper: &Keeper, scope: Arc<KeyScope>, answer: Answer) {
    if let Err(e) = keeper.record(app, scope.clone(), answer.clone()).await {
        tracing::warn!(error = %e, key = scope.shown(), "a keyed write's answer was not recorded");
        if let Keeper::Tenant(_) = keeper {
            scope.keep_answer(answer);
            app.idempotency.keep(keeper.id(), scope);
        }
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
