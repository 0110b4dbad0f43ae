//! Surface B's HTTP handlers. Each parses the request (path ids, query parameters, headers,
//! the JSON body) into typed input, runs one read or write transaction, and renders: reads
//! go through the paged-query engine and a resource's loader; writes call
//! `shared::domain` (where every write rule lives) and answer the record written. The
//! generic parts (a list of a resource under an optional parent, one record, one write)
//! are [`Req`]'s methods; the per-endpoint functions below only choose among them.

use crate::resources::{
    actions, adjustment_applications, adjustment_categories, agreement_services, agreements,
    bill_batches, check_echoed, true_ups, Parent, RenderContext,
};
use axum::extract::{FromRef, FromRequestParts, Path};
use axum::http::{request::Parts, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, Transaction};
use serde::Serialize;
use shared::domain::{agreements as agreement_rules, bill_batches as bill_batch_rules, require};
use shared::query::{ListSource, Selection};
use shared::web::listing::{
    preference_of, read_shape, record_answer, record_response, to_raw, Answer, Listing,
};
use shared::web::{ApiError, AppState, BillingAuth, JsonBody, Params, Tenant};
use shared::{Error, Result};
use std::collections::HashMap;

/// What a handler answers.
type Reply = Result<Response, ApiError>;

/// Reads records of a page of ids into their representations.
type Loader<T> = fn(&Connection, &[i64], &RenderContext) -> Result<Vec<T>>;

/// A resource as the handlers see it: where its list reads from and how records render.
struct Resource<T> {
    source: &'static ListSource,
    load: Loader<T>,
    /// A constant condition every read of the resource carries.
    always: Option<&'static str>,
    /// Named-filter values assumed when the client names neither the parameter nor the field.
    defaults: &'static [(&'static str, &'static str)],
    /// Whether `expand` applies.
    expandable: bool,
}

impl<T> Resource<T> {
    const fn plain(source: &'static ListSource, load: Loader<T>) -> Resource<T> {
        Resource {
            source,
            load,
            always: None,
            defaults: &[],
            expandable: false,
        }
    }
}

const ACTIONS: Resource<actions::Action> = Resource::plain(&actions::SOURCE, actions::load);
const ADJUSTMENT_APPLICATIONS: Resource<adjustment_applications::AdjustmentApplication> =
    Resource::plain(
        &adjustment_applications::SOURCE,
        adjustment_applications::load,
    );
const ADJUSTMENT_CATEGORIES: Resource<adjustment_categories::AdjustmentCategory> = Resource {
    always: Some(adjustment_categories::SCOPE),
    ..Resource::plain(&adjustment_categories::SOURCE, adjustment_categories::load)
};
const AGREEMENTS: Resource<agreements::Agreement> =
    Resource::plain(&agreements::SOURCE, agreements::load);
const AGREEMENT_SERVICES: Resource<agreement_services::AgreementService> =
    Resource::plain(&agreement_services::SOURCE, agreement_services::load);
const TRUE_UPS: Resource<true_ups::Relation> = Resource::plain(&true_ups::SOURCE, true_ups::load);
const BILL_BATCHES: Resource<bill_batches::BillBatch> = Resource {
    defaults: bill_batches::DEFAULTS,
    expandable: true,
    ..Resource::plain(&bill_batches::SOURCE, bill_batches::load)
};
const BILL_BATCH_ACCOUNTS: Resource<crate::resources::AccountRef> =
    Resource::plain(&bill_batches::ACCOUNTS_SOURCE, bill_batches::load_accounts);

/// Narrows a list or a lookup to the children of a parent that must exist (else 404).
#[derive(Clone, Copy, Default)]
struct Scope {
    /// The parent and its id.
    parent: Option<(Parent, i64)>,
}

impl Scope {
    /// No parent.
    fn none() -> Scope {
        Scope::default()
    }

    /// Children of `parent` row `raw` (a path id).
    fn child_of(parent: Parent, raw: &str) -> Result<Scope> {
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
    fn conditions<T>(&self, resource: &Resource<T>) -> Vec<(&'static str, Vec<SqlValue>)> {
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

    fn context<T>(&self, resource: &Resource<T>) -> Result<RenderContext> {
        let mut ctx = RenderContext::plain(self.tenant.tz);
        if resource.expandable {
            bill_batches::read_expand(self.params.get("expand").map(String::as_str), &mut ctx)?;
        }
        Ok(ctx)
    }

    /// Answers one page of `resource` within `scope`.
    async fn list<T: Serialize + 'static>(self, resource: Resource<T>, scope: Scope) -> Reply {
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
        let Resource { source, load, .. } = resource;
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
    async fn one<T: Serialize + 'static>(
        self,
        resource: Resource<T>,
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

fn bill_cycle(raw: &str) -> Result<Scope> {
    Scope::child_of(actions::BY_BILL_CYCLE, raw)
}

fn agreement_service(raw: &str) -> Result<Scope> {
    Scope::child_of(true_ups::BY_AGREEMENT_SERVICE, raw)
}

/// GET /actions
pub async fn list_actions(r: Req) -> Reply {
    r.list(ACTIONS, Scope::none()).await
}

/// GET /actions/{id}
pub async fn get_action(r: Req, Path(id): Path<String>) -> Reply {
    r.one(ACTIONS, &id, Scope::none()).await
}

/// GET /bill-cycles/{bill_cycle_id}/actions
pub async fn list_bill_cycle_actions(r: Req, Path(cycle): Path<String>) -> Reply {
    r.list(ACTIONS, bill_cycle(&cycle)?).await
}

/// GET /bill-cycles/{bill_cycle_id}/actions/{id}
pub async fn get_bill_cycle_action(r: Req, Path((cycle, id)): Path<(String, String)>) -> Reply {
    r.one(ACTIONS, &id, bill_cycle(&cycle)?).await
}

/// GET /adjustment-applications
pub async fn list_adjustment_applications(r: Req) -> Reply {
    r.list(ADJUSTMENT_APPLICATIONS, Scope::none()).await
}

/// GET /adjustment-applications/{id}
pub async fn get_adjustment_application(r: Req, Path(id): Path<String>) -> Reply {
    r.one(ADJUSTMENT_APPLICATIONS, &id, Scope::none()).await
}

/// GET /adjustment-categories
pub async fn list_adjustment_categories(r: Req) -> Reply {
    r.list(ADJUSTMENT_CATEGORIES, Scope::none()).await
}

/// GET /adjustment-categories/{id}
pub async fn get_adjustment_category(r: Req, Path(id): Path<String>) -> Reply {
    r.one(ADJUSTMENT_CATEGORIES, &id, Scope::none()).await
}

/// GET /agreements
pub async fn list_agreements(r: Req) -> Reply {
    r.list(AGREEMENTS, Scope::none()).await
}

/// GET /agreements/{id}
pub async fn get_agreement(r: Req, Path(id): Path<String>) -> Reply {
    r.one(AGREEMENTS, &id, Scope::none()).await
}

/// GET /agreement-services (service_resource_identifier is at most 255 characters)
pub async fn list_agreement_services(r: Req) -> Reply {
    let limit = agreement_services::MAX_SRID_CHARS;
    if r.params
        .get("service_resource_identifier")
        .is_some_and(|v| v.chars().count() > limit)
    {
        return Err(ApiError::bad_request(format!(
            "service_resource_identifier: at most {limit} characters are allowed"
        )));
    }
    r.list(AGREEMENT_SERVICES, Scope::none()).await
}

/// GET /agreement-services/{id}
pub async fn get_agreement_service(r: Req, Path(id): Path<String>) -> Reply {
    r.one(AGREEMENT_SERVICES, &id, Scope::none()).await
}

/// PUT /agreement-services/{id}
pub async fn update_agreement_service(
    r: Req,
    Path(raw): Path<String>,
    JsonBody(patch): JsonBody<agreement_services::Patch>,
) -> Reply {
    let id = path_id("agreement service", &raw)?;
    r.write(StatusCode::OK, agreement_services::load, move |tx, tz| {
        // An unknown service is a 404 before anything in the body is judged (but after
        // its shape: an unknown member or a wrong type is a 400 before the lookup).
        require(tx, "agreement_services", "agreement service", id)?;
        let stored = stored_record(tx, agreement_services::load, id, tz)?;
        check_echoed(&patch.echoed(), &stored)?;
        let update = patch.clone().into_update()?;
        agreement_rules::update_agreement_service(tx, id, &update, tz).map(|()| id)
    })
    .await
}

/// GET /agreement-services/{agreement_service_id}/true-up-charge-type-relations
pub async fn list_true_ups(r: Req, Path(parent): Path<String>) -> Reply {
    r.list(TRUE_UPS, agreement_service(&parent)?).await
}

/// GET /agreement-services/{agreement_service_id}/true-up-charge-type-relations/{id}
pub async fn get_true_up(r: Req, Path((parent, id)): Path<(String, String)>) -> Reply {
    r.one(TRUE_UPS, &id, agreement_service(&parent)?).await
}

/// POST /agreement-services/{agreement_service_id}/true-up-charge-type-relations
pub async fn create_true_up(
    r: Req,
    Path(raw): Path<String>,
    JsonBody(body): JsonBody<true_ups::NewRelation>,
) -> Reply {
    let parent = path_id("agreement service", &raw)?;
    r.write(StatusCode::CREATED, true_ups::load, move |tx, _| {
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

/// GET /bill-batches (status ACTIVE unless the client names one)
pub async fn list_bill_batches(r: Req) -> Reply {
    r.list(BILL_BATCHES, Scope::none()).await
}

/// GET /bill-batches/{id} (with `expand`)
pub async fn get_bill_batch(r: Req, Path(id): Path<String>) -> Reply {
    r.one(BILL_BATCHES, &id, Scope::none()).await
}

/// POST /bill-batches (200, as the interface's table says)
pub async fn create_bill_batch(
    r: Req,
    JsonBody(body): JsonBody<bill_batches::CreateBody>,
) -> Reply {
    let batch = body.into_new();
    r.write(StatusCode::OK, bill_batches::load, move |tx, tz| {
        bill_batch_rules::create_bill_batch(tx, &batch, tz)
    })
    .await
}

/// GET /bill-batches/{bill_batch_id}/billing-accounts
pub async fn list_bill_batch_accounts(r: Req, Path(batch): Path<String>) -> Reply {
    r.list(
        BILL_BATCH_ACCOUNTS,
        Scope::child_of(bill_batches::BY_BILL_BATCH, &batch)?,
    )
    .await
}
