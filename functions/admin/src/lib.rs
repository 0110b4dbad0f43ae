//! Route group `admin`: the sandbox admin API under `/sandbox/v1`, guarded by `X-Admin-Key`.
//! It hands out tenants with their credentials, issues bearer tokens, resets and deletes;
//! [`powers`] adds a tenant's test clock, fault rules and request journal.

pub mod powers;

use axum::body::Bytes;
use axum::extract::{FromRef, FromRequestParts, Path, State};
use axum::http::{request::Parts, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use shared::seed::Seed;
use shared::store::TenantRecord;
use shared::tenants;
use shared::web::{header_str, parse_json, ApiError, AppState, JsonBody, ADMIN_PREFIX};

/// This group's routes, unbound (the local server merges them with the other groups).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            &format!("{ADMIN_PREFIX}/openapi.json"),
            get(openapi_document),
        )
        .route(
            &format!("{ADMIN_PREFIX}/tenants"),
            post(create_tenant).get(list_tenants),
        )
        .route(
            &format!("{ADMIN_PREFIX}/tenants/{{id}}"),
            get(get_tenant).delete(delete_tenant),
        )
        .route(
            &format!("{ADMIN_PREFIX}/tenants/{{id}}/tokens"),
            post(issue_token),
        )
        .route(
            &format!("{ADMIN_PREFIX}/tenants/{{id}}/reset"),
            post(reset_tenant),
        )
        .merge(powers::routes())
}

/// The admin API's OpenAPI 3.1 document (docs/openapi/admin.json, written by
/// docs/openapi/generate.py), embedded so what is served is what is shipped.
pub const OPENAPI_DOCUMENT: &str = include_str!("../../../docs/openapi/admin.json");

/// `GET /sandbox/v1/openapi.json`, without the admin key.
async fn openapi_document() -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        OPENAPI_DOCUMENT,
    )
        .into_response()
}

/// This group's routes as a served router (what the Lambda binary runs).
pub fn router(state: AppState) -> Router {
    shared::web::finish(routes(), state)
}

/// Proof that the request carried the configured admin key.
pub struct AdminAuth;

impl<S> FromRequestParts<S> for AdminAuth
where
    AppState: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let app = AppState::from_ref(state);
        let presented = header_str(&parts.headers, "x-admin-key");
        match (presented, app.config.admin_key.as_deref()) {
            (Some(p), Some(k)) if shared::auth::admin_key_matches(p, k) => Ok(AdminAuth),
            _ => Err(ApiError::unauthorized(
                "Missing or invalid admin key: send X-Admin-Key.",
            )),
        }
    }
}

/// Body of `POST /tenants`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateTenant {
    name: String,
    #[serde(default = "default_seed")]
    seed: String,
    #[serde(default = "default_time_zone")]
    time_zone: String,
}

fn default_seed() -> String {
    "demo".into()
}

fn default_time_zone() -> String {
    "UTC".into()
}

/// HTTP Basic credentials in a creation answer.
#[derive(Debug, Serialize)]
struct Basic {
    username: String,
    password: String,
}

/// Answer of `POST /tenants`: the tenant and its clear-text credentials, shown once.
#[derive(Debug, Serialize)]
struct CreatedTenant {
    id: String,
    name: String,
    time_zone: String,
    api_key: String,
    basic: Basic,
    created_at: String,
}

async fn create_tenant(
    _: AdminAuth,
    State(app): State<AppState>,
    JsonBody(body): JsonBody<CreateTenant>,
) -> Result<Response, ApiError> {
    let seed = Seed::parse(&body.seed)?;
    let (record, creds) = tenants::create(&app.store, &body.name, seed, &body.time_zone).await?;
    let created = CreatedTenant {
        id: record.id,
        name: record.name,
        time_zone: record.time_zone,
        api_key: creds.api_key,
        basic: Basic {
            username: creds.username,
            password: creds.password,
        },
        created_at: record.created_at,
    };
    Ok((StatusCode::CREATED, Json(created)).into_response())
}

async fn list_tenants(
    _: AdminAuth,
    State(app): State<AppState>,
) -> Result<Json<Vec<TenantRecord>>, ApiError> {
    Ok(Json(tenants::list(&app.store).await?))
}

async fn get_tenant(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<TenantRecord>, ApiError> {
    Ok(Json(tenants::get(&app.store, &id).await?))
}

async fn delete_tenant(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    tenants::delete(&app.store, &id).await?;
    app.powers.journal.forget(&id);
    app.powers.draws.forget(&id);
    Ok(StatusCode::NO_CONTENT)
}

/// Body of `POST /tenants/{id}/tokens` (optional).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenRequest {
    ttl_seconds: Option<i64>,
}

/// Answer of `POST /tenants/{id}/tokens`.
#[derive(Debug, Serialize)]
struct Token {
    access_token: String,
    token_type: &'static str,
    expires_in: i64,
}

async fn issue_token(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let request: TokenRequest = if body.iter().all(u8::is_ascii_whitespace) {
        TokenRequest { ttl_seconds: None }
    } else {
        parse_json(&body)?
    };
    let ttl = request
        .ttl_seconds
        .unwrap_or(tenants::DEFAULT_TOKEN_TTL_SECONDS);
    let access_token = tenants::issue_token(&app.store, &app.token_secret()?, &id, ttl).await?;
    let token = Token {
        access_token,
        token_type: "Bearer",
        expires_in: ttl,
    };
    Ok((StatusCode::CREATED, Json(token)).into_response())
}

/// Body of `POST /tenants/{id}/reset`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResetRequest {
    #[serde(default = "default_seed")]
    seed: String,
}

/// Answer of a reset.
#[derive(Debug, Serialize)]
struct ResetDone {
    #[serde(flatten)]
    tenant: TenantRecord,
    seed: String,
}

async fn reset_tenant(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<ResetRequest>,
) -> Result<Json<ResetDone>, ApiError> {
    let seed = Seed::parse(&body.seed)?;
    let tenant = tenants::reset(&app.store, &id, seed).await?;
    Ok(Json(ResetDone {
        tenant,
        seed: body.seed,
    }))
}
