//! Route group `usage`: Surface B's usage events under `/billing/2`: bulk posting, bulk
//! simulation, and reading rated events back. Handlers parse, call `shared::domain::usage`,
//! and render.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono_tz::Tz;
use rusqlite::Transaction;
use shared::domain::usage::{self, BulkOutcome, BulkRequest};
use shared::query::list::{json_with_etag, list_response, read_shape, to_raw, with_preference};
use shared::query::ListParams;
use shared::web::{ApiError, AppState, BillingAuth, JsonBody, Params, Tenant, BILLING_PREFIX};

/// This group's routes, unbound (the local server merges them with the other groups).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            &format!("{BILLING_PREFIX}/usage-events/bulk"),
            post(post_bulk),
        )
        .route(
            &format!("{BILLING_PREFIX}/usage-events/simulate/bulk"),
            post(simulate_bulk),
        )
        .route(&format!("{BILLING_PREFIX}/usage-events"), get(list_events))
        .route(
            &format!("{BILLING_PREFIX}/usage-events/{{id}}"),
            get(get_event),
        )
}

/// This group's routes as a served router (what the Lambda binary runs).
pub fn router(state: AppState) -> Router {
    shared::web::finish(routes(), state)
}

async fn post_bulk(
    BillingAuth(tenant): BillingAuth,
    State(_): State<AppState>,
    JsonBody(req): JsonBody<BulkRequest>,
) -> Result<Json<BulkOutcome>, ApiError> {
    run_bulk(tenant, req, usage::post).await
}

async fn simulate_bulk(
    BillingAuth(tenant): BillingAuth,
    State(_): State<AppState>,
    JsonBody(req): JsonBody<BulkRequest>,
) -> Result<Json<BulkOutcome>, ApiError> {
    run_bulk(tenant, req, usage::simulate).await
}

/// Checks the request's limits, then runs `process` (posting or simulation) in one write.
async fn run_bulk(
    tenant: Tenant,
    req: BulkRequest,
    process: fn(&Transaction<'_>, &BulkRequest, Tz) -> shared::Result<BulkOutcome>,
) -> Result<Json<BulkOutcome>, ApiError> {
    req.check()?;
    let tz = tenant.tz;
    let outcome = tenant.db.write(move |tx| process(tx, &req, tz)).await?;
    Ok(Json(outcome))
}

async fn list_events(
    BillingAuth(tenant): BillingAuth,
    State(_): State<AppState>,
    headers: HeaderMap,
    Params(params): Params,
) -> Result<Response, ApiError> {
    usage::require_narrowing(&params)?;
    let tz = tenant.tz;
    let list = ListParams::parse(&params, &headers, &usage::EVENT_LIST, tz, &[])?;
    let query = list.clone();
    let (events, total) = tenant.db.read(move |c| usage::list(c, &query, tz)).await?;
    let records = events
        .iter()
        .map(|e| to_raw(e, list.shape))
        .collect::<shared::Result<Vec<_>>>()?;
    Ok(list_response(records, total, &list, &headers))
}

async fn get_event(
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
    Ok(with_preference(
        json_with_etag(
            StatusCode::OK,
            record.get().as_bytes().to_vec(),
            "",
            &headers,
        ),
        applied,
    ))
}
