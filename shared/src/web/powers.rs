//! The HTTP side of the sandbox powers (their rules are in `crate::sandbox`): the pipeline's
//! last step before the handler, which it is given to run (`inner`: the handler, inside the
//! key's store scope when the request is keyed, so nothing written here carries the key). For a request the pipeline identified as a tenant's, the
//! first matching fault rule answers or delays it; every identified request about one tenant
//! (a surface request, or an admin call on `/sandbox/v1/tenants/{id}/...` other than the
//! journal's own) is recorded in that tenant's journal with its answer. Admin calls are
//! never faulted, so a rule can always be deleted.
//!
//! Invariant: nothing here reads a body. The journal records the body the pipeline already
//! read (bounded in size and time), so an unidentified request's body is never read or kept.

use super::state::{AppState, Tenant};
use super::surface::{Surface, ADMIN_PREFIX};
use crate::sandbox::{faults, journal};
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use std::future::Future;

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
/// hands it to `inner` (the handler).
pub(super) async fn apply<F>(
    app: &AppState,
    surface: Surface,
    subject: Subject,
    body: Bytes,
    req: Request,
    inner: impl FnOnce(Request) -> F,
) -> Response
where
    F: Future<Output = Response>,
{
    let journal = app.powers.journal.enabled();
    let recording = journal.then(|| Recording::start(surface, &req, body));
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
    let rule = fault_for(app, &tenant, req.method().as_str(), &path).await;
    let mut response = match &rule {
        Some(rule) => {
            if rule.latency_ms > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(rule.latency_ms)).await;
            }
            match rule.status.and_then(|s| StatusCode::from_u16(s).ok()) {
                Some(status) => {
                    let message = format!("Injected by sandbox fault rule {}.", rule.id);
                    surface.error(status, None, message)
                }
                None => inner(req).await,
            }
        }
        None => inner(req).await,
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
