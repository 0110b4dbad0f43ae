//! Surface B's usage event handlers (the `usage` route group, its own Lambda): bulk posting,
//! bulk simulation, and reading rated events back. They parse HTTP (the body, the query
//! parameters, the list request through `shared::web::listing`), call
//! `shared::domain::usage`, and render; `crate::routes` lists them.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::Json;
use rusqlite::Transaction;
use shared::domain::usage::{self, BulkOutcome, BulkRequest, CheckedEvents, Stored};
use shared::web::listing::{read_shape, record_response, to_raw, Listing};
use shared::web::{ApiError, AppState, BillingAuth, JsonBody, Params, Tenant};
use std::sync::Arc;

pub(crate) async fn post_bulk(
    BillingAuth(tenant): BillingAuth,
    State(_): State<AppState>,
    JsonBody(req): JsonBody<BulkRequest>,
) -> Result<Json<BulkOutcome>, ApiError> {
    run_bulk(tenant, req, usage::post_checked).await
}

pub(crate) async fn simulate_bulk(
    BillingAuth(tenant): BillingAuth,
    State(_): State<AppState>,
    JsonBody(req): JsonBody<BulkRequest>,
) -> Result<Json<BulkOutcome>, ApiError> {
    run_bulk(tenant, req, usage::simulate_checked).await
}

/// A bulk call's processing inside its write: posting or simulation.
type Process = fn(&Transaction<'_>, &BulkRequest, &CheckedEvents) -> shared::Result<Stored>;

/// Checks the request's limits and its events, runs `process` in one write, and renders the
/// answer. Only `process` holds the tenant's writer: checking needs nothing stored, and the
/// answer is rendered from what the write returned.
async fn run_bulk(
    tenant: Tenant,
    req: BulkRequest,
    process: Process,
) -> Result<Json<BulkOutcome>, ApiError> {
    let tz = tenant.tz;
    let events = usage::check_events(&req, tz)?;
    let call = Arc::new((req, events));
    let in_write = call.clone();
    let stored = tenant
        .db
        .write(move |tx| process(tx, &in_write.0, &in_write.1))
        .await?;
    Ok(Json(stored.render(&call.0, &call.1, tz)))
}

pub(crate) async fn list_events(
    BillingAuth(tenant): BillingAuth,
    State(_): State<AppState>,
    headers: HeaderMap,
    Params(params): Params,
) -> Result<Response, ApiError> {
    usage::require_narrowing(params.keys().map(String::as_str))?;
    let tz = tenant.tz;
    let listing = Listing::read(&params, &headers, &usage::EVENT_LIST, tz, &[])?;
    let query = listing.query.clone();
    let (events, total) = tenant.db.read(move |c| usage::list(c, &query, tz)).await?;
    let records = events
        .iter()
        .map(|e| to_raw(e, listing.shape))
        .collect::<shared::Result<Vec<_>>>()?;
    Ok(listing.respond(records, total, &headers))
}

pub(crate) async fn get_event(
    BillingAuth(tenant): BillingAuth,
    State(_): State<AppState>,
    headers: HeaderMap,
    Params(params): Params,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (shape, applied) = read_shape(&params, &headers)?;
    let Ok(numeric) = id.parse::<i64>() else {
        return Err(ApiError::not_found(format!(
            "usage event {id} does not exist"
        )));
    };
    let tz = tenant.tz;
    let event = tenant.db.read(move |c| usage::get(c, numeric, tz)).await?;
    let record = to_raw(&event, shape)?;
    Ok(record_response(StatusCode::OK, &record, applied, &headers))
}
