//! Surface B's HTTP handlers. Each parses the request (path ids, query parameters, headers,
//! the JSON body) into typed input, runs one read or write transaction, and renders: reads
//! go through the paged-query engine and a resource's list (`shared::domain::lists`: its
//! source and loader); writes call
//! `shared::domain` (where every write rule lives) and answer the record written. The
//! generic parts (a list of a resource under an optional parent, one record, one write)
//! are [`Req`]'s methods; the route table (`crate::routes`) binds each list and read to its
//! resource below, and each write to its function here.

use crate::resources::{agreement_services, bill_batches, check_echoed, true_ups};
use crate::routes::Listed;
use axum::extract::{FromRef, FromRequestParts, Path};
use axum::http::{request::Parts, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, Transaction};
use serde::Serialize;
use shared::domain::lists::{self, List, Loader, Parent, RenderContext};
use shared::domain::{agreements as agreement_rules, bill_batches as bill_batch_rules, require};
use shared::query::Selection;
use shared::web::listing::{
    preference_of, read_shape, record_answer, record_response, to_raw, Answer, Listing,
};
use shared::web::openapi::Builder;
use shared::web::{ApiError, AppState, BillingAuth, JsonBody, Params, Tenant};
use shared::{Error, Result};
use std::collections::HashMap;
use utoipa::ToSchema;

/// What a handler answers.
type Reply = Result<Response, ApiError>;

/// What the document says of `list`'s lists and reads: the same source, defaults, `expand`
/// and bounds the handlers apply.
pub(crate) fn listed<T: ToSchema>(list: &List<T>) -> Listed {
    Listed {
        source: list.source,
        item: Builder::schema::<T>,
        defaults: list.defaults,
        expand: list.expand,
        max_chars: list.max_chars,
    }
}

/// Narrows a list or a lookup to the children of a parent that must exist (else 404).
#[derive(Clone, Copy, Default)]
pub(crate) struct Scope {
    /// The parent and its id.
    parent: Option<(Parent, i64)>,
}

impl Scope {
    /// No parent.
    pub(crate) fn none() -> Scope {
        Scope::default()
    }

    /// Children of `parent` row `raw` (a path id).
    pub(crate) fn child_of(parent: Parent, raw: &str) -> Result<Scope> {
        Ok(Scope {
            parent: Some((parent, path_id(parent.noun, raw)?)),
        })
    }

    /// 404 unless the parent exists.
    fn check_parent(&self, conn: &Connection) -> Result<()> {
        match self.parent {
            Some((parent, id)) => require(conn, parent.table, parent.noun, id),
            None => Ok(()),
        }
    }

    /// The conditions of `resource` and of this scope, with their parameters.
    fn conditions<T>(&self, resource: &List<T>) -> Vec<(&'static str, Vec<SqlValue>)> {
        let mut out = Vec::new();
        if let Some(sql) = resource.always {
            out.push((sql, Vec::new()));
        }
        if let Some((parent, id)) = self.parent {
            out.push((parent.condition, vec![SqlValue::Integer(id)]));
        }
        out
    }
}

/// A path id: identifiers are strings, but every stored one is an integer, so anything
/// else names no record (404).
fn path_id(noun: &str, raw: &str) -> Result<i64> {
    raw.trim()
        .parse()
        .map_err(|_| Error::not_found(format!("{noun} {raw} does not exist")))
}

/// The parts of a Surface B request every handler uses: the tenant, the query parameters
/// and the headers, and the request's path and query (what a read's memo key starts with).
pub struct Req {
    tenant: Tenant,
    params: HashMap<String, String>,
    headers: HeaderMap,
    target: String,
}

impl<S> FromRequestParts<S> for Req
where
    AppState: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let BillingAuth(tenant) = BillingAuth::from_request_parts(parts, state).await?;
        let Params(params) = Params::from_request_parts(parts, state).await?;
        Ok(Req {
            tenant,
            params,
            headers: parts.headers.clone(),
            target: parts
                .uri
                .path_and_query()
                .map_or_else(|| parts.uri.path().to_string(), ToString::to_string),
        })
    }
}

impl Req {
    /// The key of a read's answer in the tenant's memo: everything the answer depends on
    /// besides the data (If-None-Match only picks 200 or 304 from the kept answer).
    fn memo_key(&self, kind: &str) -> String {
        let prefer: Vec<&str> = self
            .headers
            .get_all("prefer")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        format!(
            "billing {kind} {} tz={} prefer={prefer:?}",
            self.target, self.tenant.tz
        )
    }

    fn context<T>(&self, resource: &List<T>) -> Result<RenderContext> {
        resource.context(
            self.tenant.tz,
            self.params.get("expand").map(String::as_str),
        )
    }

    /// Answers one page of `resource` within `scope`.
    pub(crate) async fn list<T: Serialize + 'static>(
        self,
        resource: List<T>,
        scope: Scope,
    ) -> Reply {
        resource.check_bounds(|name| self.params.get(name).map(String::as_str))?;
        let key = self.memo_key("list");
        if let Some(answer) = self.tenant.db.recall::<Answer>(&key) {
            return Ok(answer.respond(&self.headers));
        }
        let ctx = self.context(&resource)?;
        let mut listing = Listing::read(
            &self.params,
            &self.headers,
            resource.source,
            self.tenant.tz,
            resource.defaults,
        )?;
        for (sql, values) in scope.conditions(&resource) {
            listing = listing.scope(sql, values);
        }
        let List { source, load, .. } = resource;
        let answer = self
            .tenant
            .db
            .read_memo(key, move |conn| {
                scope.check_parent(conn)?;
                let (ids, total) = listing.query.fetch_ids(conn, source)?;
                let records = load(conn, &ids, &ctx)?
                    .iter()
                    .map(|r| to_raw(r, listing.shape))
                    .collect::<Result<Vec<_>>>()?;
                Ok(listing.answer(records, total))
            })
            .await?;
        Ok(answer.respond(&self.headers))
    }

    /// Answers one record of `resource` by path id (404 unless it exists within `scope`).
    pub(crate) async fn one<T: Serialize + 'static>(
        self,
        resource: List<T>,
        raw_id: &str,
        scope: Scope,
    ) -> Reply {
        let key = self.memo_key("one");
        if let Some(answer) = self.tenant.db.recall::<Answer>(&key) {
            return Ok(answer.respond(&self.headers));
        }
        let source = resource.source;
        let id = path_id(source.noun, raw_id)?;
        let ctx = self.context(&resource)?;
        let (shape, applied) = read_shape(&self.params, &self.headers)?;
        let conditions = scope.conditions(&resource);
        let load = resource.load;
        let not_found = format!("{} {raw_id} does not exist", source.noun);
        let answer = self
            .tenant
            .db
            .read_memo(key, move |conn| {
                scope.check_parent(conn)?;
                let scope = conditions
                    .into_iter()
                    .fold(Selection::new(source.id), |s, (condition, params)| {
                        s.scope(condition, params)
                    });
                let found = source.contains(conn, id, &scope)?;
                let record = if found {
                    load(conn, &[id], &ctx)?.pop()
                } else {
                    None
                };
                let record = record
                    .map(|r| to_raw(&r, shape))
                    .transpose()?
                    .ok_or_else(|| Error::not_found(not_found))?;
                Ok(record_answer(StatusCode::OK, &record, applied))
            })
            .await?;
        Ok(answer.respond(&self.headers))
    }

    /// Runs `write` (answering the id of the record written) in one write transaction and
    /// answers that record with `status` and Preference-Applied (always: the spec lists it on
    /// every PUT/POST answer, naming the representation answered); no 304 for writes.
    async fn write<T: Serialize + 'static>(
        self,
        status: StatusCode,
        load: Loader<T>,
        write: impl Fn(&Transaction<'_>, chrono_tz::Tz) -> Result<i64> + Send + 'static,
    ) -> Reply {
        let (shape, _) = read_shape(&self.params, &self.headers)?;
        let applied = Some(preference_of(shape));
        let ctx = RenderContext::plain(self.tenant.tz);
        let record = self
            .tenant
            .db
            .write(move |tx| {
                let id = write(tx, ctx.tz)?;
                let record = load(tx, &[id], &ctx)?.pop();
                record
                    .map(|r| to_raw(&r, shape))
                    .transpose()?
                    .ok_or_else(|| Error::Internal(format!("record {id} vanished after its write")))
            })
            .await?;
        Ok(record_response(status, &record, applied, &HeaderMap::new()))
    }
}

/// The FULL representation of record `id` as GET renders it now (what the read-only members
/// of a PUT body are checked against); 404 when it does not exist.
fn stored_record<T: Serialize>(
    conn: &Connection,
    load: Loader<T>,
    id: i64,
    tz: chrono_tz::Tz,
) -> Result<serde_json::Value> {
    let record = load(conn, &[id], &RenderContext::plain(tz))?
        .pop()
        .ok_or_else(|| Error::not_found(format!("record {id} does not exist")))?;
    Ok(serde_json::to_value(&record)?)
}

/// PUT /agreement-services/{id}
pub async fn update_agreement_service(
    r: Req,
    Path(raw): Path<String>,
    JsonBody(patch): JsonBody<agreement_services::Patch>,
) -> Reply {
    let id = path_id("agreement service", &raw)?;
    r.write(
        StatusCode::OK,
        lists::agreement_services::load,
        move |tx, tz| {
            // An unknown service is a 404 before anything in the body is judged (but after
            // its shape: an unknown member or a wrong type is a 400 before the lookup).
            require(tx, "agreement_services", "agreement service", id)?;
            let stored = stored_record(tx, lists::agreement_services::load, id, tz)?;
            check_echoed(&patch.echoed(), &stored)?;
            let update = patch.clone().into_update()?;
            agreement_rules::update_agreement_service(tx, id, &update, tz).map(|()| id)
        },
    )
    .await
}

/// POST /agreement-services/{agreement_service_id}/true-up-charge-type-relations
pub async fn create_true_up(
    r: Req,
    Path(raw): Path<String>,
    JsonBody(body): JsonBody<true_ups::NewRelation>,
) -> Reply {
    let parent = path_id("agreement service", &raw)?;
    r.write(StatusCode::CREATED, lists::true_ups::load, move |tx, _| {
        agreement_rules::add_true_up_charge_type(tx, parent, &body.true_up_charge_type).map_err(
            |e| match e {
                // The interface lists 400 and 404 for this endpoint; a duplicate is a bad request.
                Error::Conflict(m) => Error::BadRequest(m),
                other => other,
            },
        )
    })
    .await
}

/// DELETE /agreement-services/{agreement_service_id}/true-up-charge-type-relations/{id}
pub async fn delete_true_up(r: Req, Path((parent, id)): Path<(String, String)>) -> Reply {
    let parent = path_id("agreement service", &parent)?;
    let id = path_id("true-up charge type relation", &id)?;
    r.tenant
        .db
        .write(move |tx| agreement_rules::delete_true_up_relation(tx, parent, id))
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// POST /bill-batches (200, as the interface's table says)
pub async fn create_bill_batch(
    r: Req,
    JsonBody(body): JsonBody<bill_batches::CreateBody>,
) -> Reply {
    let batch = body.into_new();
    r.write(StatusCode::OK, lists::bill_batches::load, move |tx, tz| {
        bill_batch_rules::create_bill_batch(tx, &batch, tz)
    })
    .await
}
