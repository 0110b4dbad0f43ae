//! `GET /sandbox/v1/tenants/{id}/fixtures`: the tenant's data as a fixture document
//! (`shared::seed::export`: ids included, dates absolute, records in id order; 422 naming the
//! kind when one holds more records than a document may).
//! `POST /sandbox/v1/tenants/{id}/fixtures`: applies a fixture document (docs/fixtures.md) to
//! an existing tenant in one write (one transaction, one log entry in S3 mode), all or
//! nothing. A record whose id exists is updated in place, the others are created, nothing is
//! deleted (`shared::seed::update`). The document's relative dates resolve against the
//! tenant's clock as the write reads it.
//! `GET /sandbox/v1/fixtures.schema.json` serves the document's JSON Schema.

use crate::AdminAuth;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;
use shared::seed::Seed;
use shared::web::{ApiError, AppState, JsonBody, ADMIN_PREFIX};

/// This module's routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            &format!("{ADMIN_PREFIX}/tenants/{{id}}/fixtures"),
            post(apply_fixtures).get(export_fixtures),
        )
        .route(
            &format!("{ADMIN_PREFIX}/fixtures.schema.json"),
            get(fixtures_schema),
        )
}

/// Answer of an apply: how many records of each kind the document held (all written).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = FixturesApplied)]
pub(crate) struct Applied {
    tenant: String,
    /// Records of each kind.
    #[schema(value_type = std::collections::BTreeMap<String, u64>)]
    records: serde_json::Map<String, serde_json::Value>,
}

async fn apply_fixtures(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
    JsonBody(doc): JsonBody<serde_json::Value>,
) -> Result<Json<Applied>, ApiError> {
    let t = crate::powers::tenant(&app, &id).await?;
    let tz = t.tz;
    let records = doc
        .as_object()
        .map(|members| {
            members
                .iter()
                .map(|(kind, v)| {
                    let n = match v {
                        serde_json::Value::Array(items) => items.len() as u64,
                        other => other["count"].as_u64().unwrap_or(0),
                    };
                    (kind.clone(), serde_json::Value::from(n))
                })
                .collect()
        })
        .unwrap_or_default();
    t.db.write(move |tx| shared::seed::apply(tx, Seed::Document(Box::new(doc.clone())), tz))
        .await?;
    Ok(Json(Applied {
        tenant: id,
        records,
    }))
}

async fn export_fixtures(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let t = crate::powers::tenant(&app, &id).await?;
    match t.db.read(shared::seed::export::export).await? {
        Ok(doc) => Ok(Json(doc)),
        Err(too_many) => Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "EXPORT_TOO_LARGE",
            format!(
                "{}: {} records; an export holds at most {} of each kind (the bound of a document); \
                 use a checkpoint or a fork to copy this tenant",
                too_many.kind,
                too_many.count,
                shared::seed::document::MAX_RECORDS_PER_KIND
            ),
        )),
    }
}

/// `GET /sandbox/v1/fixtures.schema.json`, without the admin key (like the OpenAPI document):
/// the JSON Schema of a fixture document, derived from the types the loader reads.
async fn fixtures_schema() -> Json<serde_json::Value> {
    Json(shared::seed::json_schema())
}
