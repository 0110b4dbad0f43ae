//! Thin HTTP handlers: parse the request, call a resource function inside one read or write
//! transaction, render with the shared list machinery.

use crate::resources::{
    actions, adjustment_applications, adjustment_categories, agreement_services, agreements,
    bill_batches, true_ups, RenderContext,
};
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;
use serde::Serialize;
use shared::query::list::{json_with_etag, list_response, read_shape, to_raw, with_preference};
use shared::query::{ListParams, ListSource};
use shared::web::{ApiError, BillingAuth, JsonBody, Params, Tenant};
use shared::{Error, Result};

/// Reads records of a page of ids into their representations.
type Loader<T> = fn(&Connection, &[i64], &RenderContext) -> Result<Vec<T>>;

/// What every read handler receives.
struct Req {
    tenant: Tenant,
    params: Params,
    headers: HeaderMap,
}

/// A resource's list source and loader.
struct Resource<T> {
    source: &'static ListSource,
    load: Loader<T>,
}

/// Narrows a list or a lookup: the parent that must exist, and the condition that ties
/// records to it.
#[derive(Clone, Default)]
struct Scope {
    /// (table, noun, id) of a parent that must exist, else 404.
    parent: Option<(&'static str, &'static str, i64)>,
    /// A constant condition with its parameters.
    condition: Option<(&'static str, Vec<SqlValue>)>,
}

impl Scope {
    fn condition(sql: &'static str) -> Scope {
        Scope {
            parent: None,
            condition: Some((sql, Vec::new())),
        }
    }

    fn child_of(table: &'static str, noun: &'static str, id: i64, sql: &'static str) -> Scope {
        Scope {
            parent: Some((table, noun, id)),
            condition: Some((sql, vec![SqlValue::Integer(id)])),
        }
    }

    /// 404 unless the parent exists.
    fn check_parent(&self, conn: &Connection) -> Result<()> {
        if let Some((table, noun, id)) = self.parent {
            let found = conn
                .prepare_cached(&format!("SELECT 1 FROM {table} WHERE id = ?1"))?
                .exists([id])?;
            if !found {
                return Err(Error::not_found(format!("{noun} {id} does not exist")));
            }
        }
        Ok(())
    }
}

/// A path id: identifiers are strings, but every stored one is an integer, so anything
/// else names no record (404).
fn path_id(noun: &str, raw: &str) -> Result<i64> {
    raw.trim()
        .parse()
        .map_err(|_| Error::not_found(format!("{noun} {raw} does not exist")))
}

fn context(tenant: &Tenant) -> RenderContext {
    RenderContext::plain(tenant.tz)
}

/// Answers one page of `source`.
async fn list<T: Serialize + 'static>(
    req: Req,
    resource: Resource<T>,
    defaults: &'static [(&'static str, &'static str)],
    scope: Scope,
    ctx: RenderContext,
) -> Result<Response, ApiError> {
    let Req {
        tenant,
        params,
        headers,
    } = req;
    let Resource { source, load } = resource;
    let mut request = ListParams::parse(&params.0, &headers, source, tenant.tz, defaults)?;
    if let Some((sql, values)) = scope.condition.clone() {
        request = request.scope(sql, values);
    }
    let query = request.clone();
    let (records, total) = tenant
        .db
        .read(move |conn| {
            scope.check_parent(conn)?;
            let (ids, total) = query.fetch_ids(conn, source)?;
            let records = load(conn, &ids, &ctx)?
                .iter()
                .map(|r| to_raw(r, query.shape))
                .collect::<Result<Vec<_>>>()?;
            Ok((records, total))
        })
        .await?;
    Ok(list_response(records, total, &request, &headers))
}

/// Answers one record of `source` by id (404 when it does not exist within `scope`).
async fn get_one<T: Serialize + 'static>(
    req: Req,
    resource: Resource<T>,
    raw_id: String,
    scope: Scope,
    ctx: RenderContext,
) -> Result<Response, ApiError> {
    let Req {
        tenant,
        params,
        headers,
    } = req;
    let Resource { source, load } = resource;
    let id = path_id(source.noun, &raw_id)?;
    let (shape, applied) = read_shape(&params.0, &headers)?;
    let record = tenant
        .db
        .read(move |conn| {
            scope.check_parent(conn)?;
            let (condition, mut values) = scope.condition.unwrap_or(("1", Vec::new()));
            values.push(SqlValue::Integer(id));
            let sql = format!(
                "SELECT 1 FROM {} WHERE ({condition}) AND {} = ?",
                source.from, source.id
            );
            let found = conn
                .prepare_cached(&sql)?
                .exists(rusqlite::params_from_iter(values.iter()))?;
            let record = if found {
                load(conn, &[id], &ctx)?.pop()
            } else {
                None
            };
            record.map(|r| to_raw(&r, shape)).transpose()
        })
        .await?;
    let record = record
        .ok_or_else(|| Error::not_found(format!("{} {raw_id} does not exist", source.noun)))?;
    let response = json_with_etag(
        StatusCode::OK,
        record.get().as_bytes().to_vec(),
        "",
        &headers,
    );
    Ok(with_preference(response, applied))
}

/// Renders a written record (no 304 for writes) with Preference-Applied.
fn written(
    status: StatusCode,
    record: &serde_json::value::RawValue,
    applied: Option<&'static str>,
) -> Response {
    let response = json_with_etag(
        status,
        record.get().as_bytes().to_vec(),
        "",
        &HeaderMap::new(),
    );
    with_preference(response, applied)
}

/// GET /actions
pub async fn list_actions(
    BillingAuth(t): BillingAuth,
    p: Params,
    h: HeaderMap,
) -> Result<Response, ApiError> {
    let ctx = context(&t);
    list(
        Req {
            tenant: t,
            params: p,
            headers: h,
        },
        Resource {
            source: &actions::SOURCE,
            load: actions::load,
        },
        &[],
        Scope::default(),
        ctx,
    )
    .await
}

/// GET /actions/{id}
pub async fn get_action(
    BillingAuth(t): BillingAuth,
    p: Params,
    h: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let ctx = context(&t);
    get_one(
        Req {
            tenant: t,
            params: p,
            headers: h,
        },
        Resource {
            source: &actions::SOURCE,
            load: actions::load,
        },
        id,
        Scope::default(),
        ctx,
    )
    .await
}

fn bill_cycle_scope(raw: &str) -> Result<Scope> {
    let cycle = path_id("bill cycle", raw)?;
    Ok(Scope::child_of(
        "bill_cycles",
        "bill cycle",
        cycle,
        "a.bill_cycle_id = ?",
    ))
}

/// GET /bill-cycles/{bill_cycle_id}/actions
pub async fn list_bill_cycle_actions(
    BillingAuth(t): BillingAuth,
    p: Params,
    h: HeaderMap,
    Path(cycle): Path<String>,
) -> Result<Response, ApiError> {
    let ctx = context(&t);
    let scope = bill_cycle_scope(&cycle)?;
    list(
        Req {
            tenant: t,
            params: p,
            headers: h,
        },
        Resource {
            source: &actions::SOURCE,
            load: actions::load,
        },
        &[],
        scope,
        ctx,
    )
    .await
}

/// GET /bill-cycles/{bill_cycle_id}/actions/{id}
pub async fn get_bill_cycle_action(
    BillingAuth(t): BillingAuth,
    p: Params,
    h: HeaderMap,
    Path((cycle, id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let ctx = context(&t);
    let scope = bill_cycle_scope(&cycle)?;
    get_one(
        Req {
            tenant: t,
            params: p,
            headers: h,
        },
        Resource {
            source: &actions::SOURCE,
            load: actions::load,
        },
        id,
        scope,
        ctx,
    )
    .await
}

/// GET /adjustment-applications
pub async fn list_adjustment_applications(
    BillingAuth(t): BillingAuth,
    p: Params,
    h: HeaderMap,
) -> Result<Response, ApiError> {
    let ctx = context(&t);
    list(
        Req {
            tenant: t,
            params: p,
            headers: h,
        },
        Resource {
            source: &adjustment_applications::SOURCE,
            load: adjustment_applications::load,
        },
        &[],
        Scope::default(),
        ctx,
    )
    .await
}

/// GET /adjustment-applications/{id}
pub async fn get_adjustment_application(
    BillingAuth(t): BillingAuth,
    p: Params,
    h: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let ctx = context(&t);
    get_one(
        Req {
            tenant: t,
            params: p,
            headers: h,
        },
        Resource {
            source: &adjustment_applications::SOURCE,
            load: adjustment_applications::load,
        },
        id,
        Scope::default(),
        ctx,
    )
    .await
}

/// GET /adjustment-categories
pub async fn list_adjustment_categories(
    BillingAuth(t): BillingAuth,
    p: Params,
    h: HeaderMap,
) -> Result<Response, ApiError> {
    let ctx = context(&t);
    let scope = Scope::condition(adjustment_categories::SCOPE);
    list(
        Req {
            tenant: t,
            params: p,
            headers: h,
        },
        Resource {
            source: &adjustment_categories::SOURCE,
            load: adjustment_categories::load,
        },
        &[],
        scope,
        ctx,
    )
    .await
}

/// GET /adjustment-categories/{id}
pub async fn get_adjustment_category(
    BillingAuth(t): BillingAuth,
    p: Params,
    h: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let ctx = context(&t);
    let scope = Scope::condition(adjustment_categories::SCOPE);
    get_one(
        Req {
            tenant: t,
            params: p,
            headers: h,
        },
        Resource {
            source: &adjustment_categories::SOURCE,
            load: adjustment_categories::load,
        },
        id,
        scope,
        ctx,
    )
    .await
}

/// GET /agreements
pub async fn list_agreements(
    BillingAuth(t): BillingAuth,
    p: Params,
    h: HeaderMap,
) -> Result<Response, ApiError> {
    let ctx = context(&t);
    list(
        Req {
            tenant: t,
            params: p,
            headers: h,
        },
        Resource {
            source: &agreements::SOURCE,
            load: agreements::load,
        },
        &[],
        Scope::default(),
        ctx,
    )
    .await
}

/// GET /agreements/{id}
pub async fn get_agreement(
    BillingAuth(t): BillingAuth,
    p: Params,
    h: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let ctx = context(&t);
    get_one(
        Req {
            tenant: t,
            params: p,
            headers: h,
        },
        Resource {
            source: &agreements::SOURCE,
            load: agreements::load,
        },
        id,
        Scope::default(),
        ctx,
    )
    .await
}

/// GET /agreement-services
pub async fn list_agreement_services(
    BillingAuth(t): BillingAuth,
    p: Params,
    h: HeaderMap,
) -> Result<Response, ApiError> {
    if p.0
        .get("service_resource_identifier")
        .is_some_and(|v| v.chars().count() > agreement_services::MAX_SRID_CHARS)
    {
        return Err(ApiError::bad_request(format!(
            "service_resource_identifier: at most {} characters are allowed",
            agreement_services::MAX_SRID_CHARS
        )));
    }
    let ctx = context(&t);
    list(
        Req {
            tenant: t,
            params: p,
            headers: h,
        },
        Resource {
            source: &agreement_services::SOURCE,
            load: agreement_services::load,
        },
        &[],
        Scope::default(),
        ctx,
    )
    .await
}

/// GET /agreement-services/{id}
pub async fn get_agreement_service(
    BillingAuth(t): BillingAuth,
    p: Params,
    h: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let ctx = context(&t);
    get_one(
        Req {
            tenant: t,
            params: p,
            headers: h,
        },
        Resource {
            source: &agreement_services::SOURCE,
            load: agreement_services::load,
        },
        id,
        Scope::default(),
        ctx,
    )
    .await
}

/// PUT /agreement-services/{id}
pub async fn update_agreement_service(
    BillingAuth(t): BillingAuth,
    p: Params,
    h: HeaderMap,
    Path(raw): Path<String>,
    JsonBody(patch): JsonBody<agreement_services::Patch>,
) -> Result<Response, ApiError> {
    let id = path_id("agreement service", &raw)?;
    let (shape, applied) = read_shape(&p.0, &h)?;
    let ctx = context(&t);
    let tz = t.tz;
    let record =
        t.db.write(move |tx| {
            agreement_services::update(tx, id, &patch, tz)?;
            let record = agreement_services::load(tx, &[id], &ctx)?.pop();
            record.map(|r| to_raw(&r, shape)).transpose()
        })
        .await?
        .ok_or_else(|| Error::not_found(format!("agreement service {id} does not exist")))?;
    Ok(written(StatusCode::OK, &record, applied))
}

fn agreement_service_scope(raw: &str) -> Result<Scope> {
    let parent = path_id("agreement service", raw)?;
    Ok(Scope::child_of(
        "agreement_services",
        "agreement service",
        parent,
        true_ups::SCOPE,
    ))
}

/// GET /agreement-services/{agreement_service_id}/true-up-charge-type-relations
pub async fn list_true_ups(
    BillingAuth(t): BillingAuth,
    p: Params,
    h: HeaderMap,
    Path(parent): Path<String>,
) -> Result<Response, ApiError> {
    let ctx = context(&t);
    let scope = agreement_service_scope(&parent)?;
    list(
        Req {
            tenant: t,
            params: p,
            headers: h,
        },
        Resource {
            source: &true_ups::SOURCE,
            load: true_ups::load,
        },
        &[],
        scope,
        ctx,
    )
    .await
}

/// GET /agreement-services/{agreement_service_id}/true-up-charge-type-relations/{id}
pub async fn get_true_up(
    BillingAuth(t): BillingAuth,
    p: Params,
    h: HeaderMap,
    Path((parent, id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let ctx = context(&t);
    let scope = agreement_service_scope(&parent)?;
    get_one(
        Req {
            tenant: t,
            params: p,
            headers: h,
        },
        Resource {
            source: &true_ups::SOURCE,
            load: true_ups::load,
        },
        id,
        scope,
        ctx,
    )
    .await
}

/// POST /agreement-services/{agreement_service_id}/true-up-charge-type-relations
pub async fn create_true_up(
    BillingAuth(t): BillingAuth,
    p: Params,
    h: HeaderMap,
    Path(raw): Path<String>,
    JsonBody(body): JsonBody<true_ups::NewRelation>,
) -> Result<Response, ApiError> {
    let parent = path_id("agreement service", &raw)?;
    let (shape, applied) = read_shape(&p.0, &h)?;
    let ctx = context(&t);
    let record =
        t.db.write(move |tx| {
            let id = true_ups::create(tx, parent, &body)?;
            let record = true_ups::load(tx, &[id], &ctx)?.pop();
            record
                .map(|r| to_raw(&r, shape))
                .transpose()?
                .ok_or_else(|| Error::Internal(format!("relation {id} vanished")))
        })
        .await?;
    Ok(written(StatusCode::CREATED, &record, applied))
}

/// DELETE /agreement-services/{agreement_service_id}/true-up-charge-type-relations/{id}
pub async fn delete_true_up(
    BillingAuth(t): BillingAuth,
    Path((parent, id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let parent = path_id("agreement service", &parent)?;
    let id = path_id("true-up charge type relation", &id)?;
    t.db.write(move |tx| true_ups::delete(tx, parent, id))
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// GET /bill-batches (status ACTIVE unless the client names one)
pub async fn list_bill_batches(
    BillingAuth(t): BillingAuth,
    p: Params,
    h: HeaderMap,
) -> Result<Response, ApiError> {
    let mut ctx = context(&t);
    bill_batches::read_expand(p.0.get("expand").map(String::as_str), &mut ctx)?;
    list(
        Req {
            tenant: t,
            params: p,
            headers: h,
        },
        Resource {
            source: &bill_batches::SOURCE,
            load: bill_batches::load,
        },
        bill_batches::DEFAULTS,
        Scope::default(),
        ctx,
    )
    .await
}

/// GET /bill-batches/{id} (with `expand`)
pub async fn get_bill_batch(
    BillingAuth(t): BillingAuth,
    p: Params,
    h: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let mut ctx = context(&t);
    bill_batches::read_expand(p.0.get("expand").map(String::as_str), &mut ctx)?;
    get_one(
        Req {
            tenant: t,
            params: p,
            headers: h,
        },
        Resource {
            source: &bill_batches::SOURCE,
            load: bill_batches::load,
        },
        id,
        Scope::default(),
        ctx,
    )
    .await
}

/// POST /bill-batches (200, as the interface's table says)
pub async fn create_bill_batch(
    BillingAuth(t): BillingAuth,
    p: Params,
    h: HeaderMap,
    JsonBody(body): JsonBody<bill_batches::CreateBody>,
) -> Result<Response, ApiError> {
    let (shape, applied) = read_shape(&p.0, &h)?;
    let ctx = context(&t);
    let tz = t.tz;
    let record =
        t.db.write(move |tx| {
            let id = bill_batches::create(tx, &body, tz)?;
            let record = bill_batches::load(tx, &[id], &ctx)?.pop();
            record
                .map(|r| to_raw(&r, shape))
                .transpose()?
                .ok_or_else(|| Error::Internal(format!("bill batch {id} vanished")))
        })
        .await?;
    Ok(written(StatusCode::OK, &record, applied))
}

/// GET /bill-batches/{bill_batch_id}/billing-accounts
pub async fn list_bill_batch_accounts(
    BillingAuth(t): BillingAuth,
    p: Params,
    h: HeaderMap,
    Path(batch): Path<String>,
) -> Result<Response, ApiError> {
    let batch = path_id("bill batch", &batch)?;
    let ctx = context(&t);
    let scope = Scope::child_of(
        "bill_batches",
        "bill batch",
        batch,
        bill_batches::ACCOUNTS_SCOPE,
    );
    list(
        Req {
            tenant: t,
            params: p,
            headers: h,
        },
        Resource {
            source: &bill_batches::ACCOUNTS_SOURCE,
            load: bill_batches::load_accounts,
        },
        &[],
        scope,
        ctx,
    )
    .await
}
