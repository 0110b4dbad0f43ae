//! `GET /sandbox/v1/tenants/{id}/fixtures`: the tenant's data as a fixture document
//! (`shared::fixtures::export`: ids included, dates absolute, records in id order; 422 naming the
//! kind when one holds more records than a document may).
//! `POST /sandbox/v1/tenants/{id}/fixtures`: applies a fixture document (docs/fixtures.md) to
//! an existing tenant in one write (one transaction, one log entry in S3 mode), all or
//! nothing. A record whose id exists is updated in place, the others are created, nothing is
//! deleted (`shared::fixtures::update`). The document's relative dates resolve against the
//! tenant's clock as the write reads it. With `?dry_run=true` the same apply runs in a
//! transaction that is rolled back (`TenantDb::rehearse`): the answer says what would be
//! created and updated, and nothing changes (no record, no id sequence, no log entry).
//! `GET /sandbox/v1/fixtures.schema.json` serves the document's JSON Schema.

use crate::AdminAuth;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use shared::fixtures::Seed;
use shared::web::{ApiError, AppState, JsonBody, Params};

/// Answer of an apply (or of its dry run): how many records of each kind the document held,
/// and what they did (created, or updating a record whose id exists).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = FixturesApplied)]
pub(crate) struct Applied {
    tenant: String,
    /// True when nothing was written (`?dry_run=true`): the counts say what would be.
    dry_run: bool,
    /// Records of each kind.
    records: std::collections::BTreeMap<String, u64>,
    /// Records created, by kind (`generated_services`: the services it expands to).
    created: std::collections::BTreeMap<String, u64>,
    /// Records whose id existed (updated in place, or restated as they are), by kind.
    updated: std::collections::BTreeMap<String, u64>,
}

pub(crate) async fn apply_fixtures(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
    Params(q): Params,
    JsonBody(doc): JsonBody<serde_json::Value>,
) -> Result<Json<Applied>, ApiError> {
    let dry_run = crate::dry_run(&q)?;
    shared::fixtures::document::check_records(&doc, app.config.max_fixture_records)?;
    let t = crate::powers::tenant(&app, &id).await?;
    let tz = t.tz;
    let records = shared::fixtures::records_per_kind(&doc);
    let changes = if dry_run {
        t.db.rehearse(move |tx| shared::fixtures::apply(tx, Seed::Document(Box::new(doc)), tz))
            .await?
    } else {
        t.db.write(move |tx| shared::fixtures::apply(tx, Seed::Document(Box::new(doc.clone())), tz))
            .await?
    };
    Ok(Json(Applied {
        tenant: id,
        dry_run,
        records,
        created: changes.created,
        updated: changes.updated,
    }))
}

pub(crate) async fn export_fixtures(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let t = crate::powers::tenant(&app, &id).await?;
    let max = app.config.max_fixture_records;
    match t.db.read(shared::fixtures::export::export).await? {
        Ok(doc) => {
            // Every export loads: one the document bound would refuse is not given.
            let records = shared::fixtures::document::records_in(&doc);
            if records > max {
                return Err(ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "EXPORT_TOO_LARGE",
                    format!(
                        "the tenant's export holds {records} records; a document holds at most \
                         {max} (SANDBOX_MAX_FIXTURE_RECORDS); use a checkpoint or a fork to \
                         copy this tenant"
                    ),
                ));
            }
            Ok(Json(doc))
        }
        Err(too_many) => Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "EXPORT_TOO_LARGE",
            format!(
                "{}: {} records; an export holds at most {} of each kind (the bound of a document); \
                 use a checkpoint or a fork to copy this tenant",
                too_many.kind,
                too_many.count,
                shared::fixtures::document::MAX_RECORDS_PER_KIND
            ),
        )),
    }
}

/// `GET /sandbox/v1/fixtures.schema.json`, without the admin key (like the OpenAPI document):
/// the JSON Schema of a fixture document, derived from the types the loader reads.
pub(crate) async fn fixtures_schema() -> Json<serde_json::Value> {
    Json(shared::fixtures::json_schema())
}
