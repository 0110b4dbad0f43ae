//! The HTTP side of the sandbox powers (their rules are in `crate::sandbox`): the pipeline's
//! last step before the handler, which it is given to run (`inner`: the handler, inside the
//! key's store scope when the request is keyed, so nothing written here carries the key). For a request the pipeline identified as a tenant's, the
//! first matching fault rule answers or delays it; every identified request about one tenant
//! (a surface request, or an admin call on `/sandbox/v1/tenants/{id}/...` other than the
//! journal's own) is recorded in that tenant's journal with its answer. Admin calls are
//! never faulted, so a rule can always be deleted. In S3 mode a write request whose local
//! copy holds no matching rule is served on that premise, which its first write checks
//! inside its transaction instead of a GET before the handler ([`serve_on_premise`]).
//!
//! Invariants: a rule acknowledged before a request began takes it whichever path it took
//! (a request served on a premise that turns out false applied nothing, and is answered by
//! the rule or served again); a request draws each rule at most once. Nothing here reads a body. The journal records the body the pipeline already
//! read (bounded in size and time), so an unidentified request's body is never read or kept.

use super::state::{AppState, Tenant};
use super::surface::{Surface, ADMIN_PREFIX};
use crate::sandbox::{faults, journal};
use crate::store::PremiseState;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use std::future::Future;
use std::sync::Arc;

/// The header naming the fault rule that answered or delayed a request.
pub const FAULT_HEADER: &str = "x-sandbox-fault";

/// Whose powers apply to a request.
pub(super) enum Subject {
    /// A surface request of this tenant: its fault rules, then its journal.
    Tenant(Tenant),
    /// An admin call about the tenant of this id (decoded): its journal only.
    AdminOf(String),
}

/// The tenant id of an admin call about one tenant's contents
/// (`/sandbox/v1/tenants/{id}/...`), percent-decoded, except the journal's own reads and
/// clears (which would otherwise fill the journal they read).
pub(super) fn admin_subject(path: &str) -> Option<String> {
    let rest = path.strip_prefix(ADMIN_PREFIX)?.strip_prefix("/tenants/")?;
    let (id, sub) = rest.split_once('/')?;
    (!id.is_empty() && !sub.is_empty() && sub != "requests").then(|| decode_segment(id))
}

/// A path segment decoded (as the router decodes path parameters: `+` stays itself); text
/// that does not decode to UTF-8 is kept as written (it names no tenant: the handler answers
/// 404).
fn decode_segment(text: &str) -> String {
    String::from_utf8(crate::names::percent_decode(text, false))
        .unwrap_or_else(|_| text.to_string())
}

/// Applies the powers of `subject` to a request whose body the pipeline read (`body`), then
/// hands it to `inner` (the handler; called a second time, on a copy of the request, only
/// when the request's first write found a fault rule its premise had not seen, see
/// [`serve_on_premise`]).
pub(super) async fn apply<F>(
    app: &AppState,
    surface: Surface,
    subject: Subject,
    body: Bytes,
    req: Request,
    inner: impl Fn(Request) -> F,
) -> Response
where
    F: Future<Output = Response>,
{
    let journal = app.powers.journal.enabled();
    let recording = journal.then(|| Recording::start(surface, &req, body.clone()));
    let tenant = match subject {
        Subject::AdminOf(id) => {
            let response = inner(req).await;
            // An unknown tenant or a refused admin key is no request to a tenant.
            return match recording {
                Some(r) if !matches!(response.status().as_u16(), 401 | 404) => {
                    r.finish(app, &id, response, None).await
                }
                _ => response,
            };
        }
        Subject::Tenant(tenant) => tenant,
    };
    let path = req.uri().path().to_string();
    let method = req.method().as_str().to_string();
    let (rule, mut response) = if unmatched_locally(&tenant, &method, &path).await {
        serve_on_premise(app, surface, &tenant, &method, &path, (req, &body), &inner).await
    } else {
        let rule = fault_for(app, &tenant, &method, &path).await;
        let response = answer(surface, rule.as_ref(), req, &inner).await;
        (rule, response)
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
                .finish(app, tenant.db.tenant_id(), response, fault)
                .await
        }
        None => response,
    }
}

/// Answers a request by the fault rule that took it (`rule`: it waits the rule's latency,
/// then answers the rule's status, or serves the request when the rule has none), or serves
/// it (`inner`) when no rule took it.
async fn answer<F>(
    surface: Surface,
    rule: Option<&faults::Rule>,
    req: Request,
    inner: &impl Fn(Request) -> F,
) -> Response
where
    F: Future<Output = Response>,
{
    let Some(rule) = rule else {
        return inner(req).await;
    };
    if rule.latency_ms > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(rule.latency_ms)).await;
    }
    match rule.status.and_then(|s| StatusCode::from_u16(s).ok()) {
        Some(status) => injected(surface, status, rule),
        None => inner(req).await,
    }
}

/// The answer a fault rule with `status` injects.
fn injected(surface: Surface, status: StatusCode, rule: &faults::Rule) -> Response {
    let message = format!("Injected by sandbox fault rule {}.", rule.id);
    surface.error(status, None, message)
}

/// Whether a request is served on the premise that no fault rule takes it, checked by its
/// first write instead of before it (S3 mode; see [`serve_on_premise`]): a request of a
/// method that writes (POST, PUT, PATCH, DELETE) when the local copy, as it is, holds no
/// live rule matching it. Its rule check then costs no S3 request. Elsewhere the rules
/// are read on a current copy first (one GET in S3 mode, which a read request's own read
/// reuses; nothing in local mode, where the copy is always current).
async fn unmatched_locally(tenant: &Tenant, method: &str, path: &str) -> bool {
    if !tenant.db.is_replicated() || !matches!(method, "POST" | "PUT" | "PATCH" | "DELETE") {
        return false;
    }
    let (method, path) = (method.to_string(), path.to_string());
    matches!(
        tenant
            .db
            .read_local(move |conn| faults::any_live_match(conn, &method, &path))
            .await,
        Ok(false)
    )
}

/// Serves a request on the premise that no fault rule takes it (found on the local copy,
/// which may be stale: a rule set in another environment may not have reached it), and
/// settles the premise (docs/storage.md, "A write request is one PUT"):
/// - the request's first write checks it inside its own transaction, before the handler's
///   closure: when it holds and the write's answer stands (its PUT landed, which proves the
///   state it ran on the newest; or its refusal followed a freshness GET), the answer stands;
/// - that check finds a matching rule: the write refuses (nothing applied), so does any
///   later write of the request, and the rules are read again on a current copy: a rule that
///   takes the request answers it, otherwise the request is served again from the start
///   (`req` copied with its `body` first), the rule's latency first;
/// - no write settled it (the request wrote nothing, or its writes answered "nothing was
///   applied"): the rules are read on a current copy now (the GET the check would have cost
///   before the handler; reused when the handler's reads checked already), and a rule that
///   takes the request replaces the handler's answer (nothing was applied) or delays it;
/// - a write's outcome is unknown: its answer stands (it says the write may have landed).
///
/// Answers the rule that took the request, if any, and the response.
async fn serve_on_premise<F>(
    app: &AppState,
    surface: Surface,
    tenant: &Tenant,
    method: &str,
    path: &str,
    (req, body): (Request, &Bytes),
    inner: &impl Fn(Request) -> F,
) -> (Option<faults::Rule>, Response)
where
    F: Future<Output = Response>,
{
    let copy = RequestCopy::of(&req, body);
    let (m, p) = (method.to_string(), path.to_string());
    crate::store::assume(
        tenant.db.tenant_id(),
        Arc::new(move |conn| Ok(!faults::any_live_match(conn, &m, &p)?)),
    );
    let response = inner(req).await;
    match crate::store::settle_premise() {
        None | Some(PremiseState::Confirmed | PremiseState::Unsettled) => (None, response),
        Some(PremiseState::Pending) => {
            let rule = fault_for(app, tenant, method, path).await;
            let Some(taken) = &rule else {
                return (None, response);
            };
            if taken.latency_ms > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(taken.latency_ms)).await;
            }
            let response = match taken.status.and_then(|s| StatusCode::from_u16(s).ok()) {
                Some(status) => injected(surface, status, taken),
                None => response,
            };
            (rule, response)
        }
        Some(PremiseState::Tripped) => {
            let rule = fault_for(app, tenant, method, path).await;
            let response = answer(surface, rule.as_ref(), copy.request(), inner).await;
            (rule, response)
        }
    }
}

/// What it takes to send a request again: its head, its extensions (the identity, the
/// route's path parameters) and the body the pipeline read.
pub(super) struct RequestCopy {
    method: http::Method,
    uri: http::Uri,
    version: http::Version,
    headers: http::HeaderMap,
    extensions: http::Extensions,
    body: Bytes,
}

impl RequestCopy {
    /// The copy of `req`, whose body was `body`.
    pub(super) fn of(req: &Request, body: &Bytes) -> RequestCopy {
        RequestCopy {
            method: req.method().clone(),
            uri: req.uri().clone(),
            version: req.version(),
            headers: req.headers().clone(),
            extensions: req.extensions().clone(),
            body: body.clone(),
        }
    }

    /// A new request equal to the one copied.
    pub(super) fn request(&self) -> Request {
        let mut copy = Request::new(Body::from(self.body.clone()));
        *copy.method_mut() = self.method.clone();
        *copy.uri_mut() = self.uri.clone();
        *copy.version_mut() = self.version;
        *copy.headers_mut() = self.headers.clone();
        *copy.extensions_mut() = self.extensions.clone();
        copy
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
    // Matching is linear in the path, but 50 long globs against an 8 KiB path is still a few
    // million steps: such a match runs on the blocking pool, not on an async worker that
    // other tenants' requests share.
    let matched: Vec<faults::Rule> = if rules.cost(path.len()) > BLOCKING_MATCH_COST {
        let (rules, method, path) = (rules.clone(), method.to_string(), path.to_string());
        match tokio::task::spawn_blocking(move || rules.matching(&method, &path).cloned().collect())
            .await
        {
            Ok(matched) => matched,
            Err(_) => return None,
        }
    } else {
        rules.matching(method, path).cloned().collect()
    };
    for rule in &matched {
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

/// Matching work (in state-set words, see `Glob::cost`) above which fault rules are matched
/// on the blocking pool: a few hundred microseconds of a release build.
const BLOCKING_MATCH_COST: usize = 200_000;

/// A request being recorded: its head and the body the pipeline read, kept as they are (the
/// journal converts them later, off the request's path, see [`journal::Item`]).
struct Recording {
    time: chrono::DateTime<chrono::Utc>,
    started: std::time::Instant,
    surface: Surface,
    method: http::Method,
    uri: http::Uri,
    headers: http::HeaderMap,
    body: Bytes,
}

impl Recording {
    fn start(surface: Surface, req: &Request, body: Bytes) -> Recording {
        Recording {
            time: crate::time::now(),
            started: std::time::Instant::now(),
            surface,
            method: req.method().clone(),
            uri: req.uri().clone(),
            headers: req.headers().clone(),
            body,
        }
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
            request_body: Some(self.body),
            status: parts.status.as_u16(),
            duration_ms: self.started.elapsed().as_secs_f64() * 1000.0,
            response_body: bytes.clone(),
            fault,
        };
        match app.powers.journal.record(tenant, raw) {
            journal::Flush::Nothing => {}
            journal::Flush::Now(batch) => {
                let (app, tenant) = (app.clone(), tenant.to_string());
                tokio::task::spawn_blocking(move || {
                    let alive = || tenant_alive(&app.store, &tenant);
                    app.powers.journal.upload(&tenant, &batch, &alive);
                });
            }
            journal::Flush::After(wait) => {
                let (app, tenant) = (app.clone(), tenant.to_string());
                // Off the request: a frozen Lambda runs this timer when it thaws.
                tokio::spawn(async move {
                    tokio::time::sleep(wait).await;
                    let _ = tokio::task::spawn_blocking(move || {
                        let batch = app.powers.journal.take_pending(&tenant);
                        let alive = || tenant_alive(&app.store, &tenant);
                        app.powers.journal.upload(&tenant, &batch, &alive);
                    })
                    .await;
                });
            }
        }
        Response::from_parts(parts, Body::from(bytes))
    }
}

/// Whether `tenant` is still to be journaled in S3, as this process can tell (blocking):
/// when its database is open here, one freshness check of its log, which finds a tombstone
/// another environment appended; otherwise (an admin call that reads the bucket only, a
/// checkpoint listing, or a database closed since) one registry read. Either check, made
/// after the batch's PUT, is sound: a deletion writes the tombstone, then removes the
/// registry entry, then lists the tenant's objects, so a batch that landed before a check
/// answering "alive" is in that listing. A failure of the check counts as alive: the upload
/// then fails or succeeds on its own.
fn tenant_alive(store: &crate::store::Store, tenant: &str) -> bool {
    match store.open_tenant_db(tenant) {
        Some(db) => !matches!(db.read_blocking(|_| Ok(())), Err(crate::Error::NotFound(_))),
        None => !matches!(store.registry().get(tenant), Ok(None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_subjects_are_decoded_and_skip_the_journal_itself() {
        assert_eq!(
            admin_subject("/sandbox/v1/tenants/t_1/clock").as_deref(),
            Some("t_1")
        );
        assert_eq!(
            admin_subject("/sandbox/v1/tenants/%74%5F1/clock").as_deref(),
            Some("t_1")
        );
        assert_eq!(admin_subject("/sandbox/v1/tenants/t_1/requests"), None);
        assert_eq!(admin_subject("/sandbox/v1/tenants/t_1"), None);
        assert_eq!(admin_subject("/sandbox/v1/tenants"), None);
        assert_eq!(decode_segment("%ff%fe"), "%ff%fe");
        assert_eq!(decode_segment("a+b%2B"), "a+b+");
    }
}
