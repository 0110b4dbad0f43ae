//! Route group `admin`: the sandbox admin API under `/sandbox/v1`, guarded by `X-Admin-Key`.
//! It hands out tenants with their credentials, issues bearer tokens, resets and deletes,
//! and checkpoints, restores and forks a tenant's data (see `shared::store::checkpoints`);
//! [`powers`] adds a tenant's test clock, fault rules and request journal; [`policy`] its
//! billing policy. [`routes`] declares every endpoint once and builds both the router and the
//! OpenAPI document ([`openapi`]).

pub mod console;
pub mod fixtures;
pub mod openapi;
pub mod policy;
pub mod powers;
pub mod routes;

use axum::body::Bytes;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::{request::Parts, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use shared::fixtures::Seed;
use shared::sandbox::clock::Clock;
use shared::store::checkpoints::Checkpoint;
use shared::store::{blocking, TenantRecord};
use shared::tenants;
use shared::web::{parse_json, ApiError, AppState, JsonBody};
use utoipa::ToSchema;

/// This group's routes, unbound (the local server merges them with the other groups): the
/// route table's and the console's.
pub fn routes() -> Router<AppState> {
    routes::router().merge(console::routes())
}

/// This group's routes as a served router (what the Lambda binary runs).
pub fn router(state: AppState) -> Router {
    shared::web::finish(routes(), state)
}

/// Proof that the request carried the configured admin key (the pipeline checked it, in
/// constant time, before the body was read).
pub struct AdminAuth;

impl<S: Send + Sync> FromRequestParts<S> for AdminAuth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        if shared::web::identified_admin(parts) {
            Ok(AdminAuth)
        } else {
            Err(ApiError::unauthorized(
                shared::web::surface::ADMIN_AUTH_MESSAGE,
            ))
        }
    }
}

/// Body of `POST /tenants`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NewTenant)]
struct CreateTenant {
    #[schema(min_length = 1)]
    name: String,
    /// Default `demo`; not with `from` or `fixtures`.
    #[schema(schema_with = seeds)]
    seed: Option<String>,
    /// The tenant's own fixture document (docs/fixtures.md) instead of a seed.
    #[schema(schema_with = fixture_document)]
    fixtures: Option<serde_json::Value>,
    /// The tenant's clock from the start (the body of `PUT .../clock`), set before its data
    /// is written so that relative dates resolve against it; not with `from`.
    clock: Option<shared::sandbox::clock::Setting>,
    /// IANA time zone. Default `UTC`; not with `from` (a fork keeps its source's).
    #[schema(default = "UTC")]
    time_zone: Option<String>,
    /// Fork: start from a checkpoint of another tenant instead of a seed.
    from: Option<ForkFrom>,
}

/// Fork: the new tenant starts with a copy of this checkpoint (and the source's time zone)
/// instead of a seed; 'seed' and 'time_zone' are then refused.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ForkFrom {
    tenant: String,
    #[schema(schema_with = checkpoint_name)]
    checkpoint: String,
}

fn default_seed() -> String {
    "demo".into()
}

/// The seeds a tenant starts from (`shared::fixtures::Seed::parse`), `demo` by default.
fn seeds() -> utoipa::openapi::Object {
    let mut schema = shared::json_schema::enumeration(&["demo", "empty"]);
    schema.default = Some(default_seed().into());
    schema
}

fn fixture_document() -> utoipa::openapi::Object {
    shared::json_schema::any_object(
        "The tenant's own fixture document instead of a seed (docs/fixtures.md); a refusal names its JSON path and creates no tenant",
    )
}

/// A checkpoint's name, as `shared::store::checkpoints` checks it.
fn checkpoint_name() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(shared::store::checkpoints::MAX_NAME_LEN))
        .pattern(Some("^[A-Za-z0-9][A-Za-z0-9._-]*$"))
        .description(Some(format!(
            "1 to {} of A-Z a-z 0-9 - _ ., starting with a letter or digit; unique per tenant (at most {} checkpoints per tenant)",
            shared::store::checkpoints::MAX_NAME_LEN,
            shared::store::checkpoints::MAX_CHECKPOINTS
        )))
        .build()
}

/// HTTP Basic credentials in a creation answer.
#[derive(Debug, Serialize, ToSchema)]
struct Basic {
    username: String,
    password: String,
}

/// The tenant and its clear-text credentials, shown once (answer of `POST /tenants`).
#[derive(Debug, Serialize, ToSchema)]
struct CreatedTenant {
    id: String,
    name: String,
    time_zone: String,
    api_key: String,
    basic: Basic,
    #[schema(format = DateTime)]
    created_at: String,
    /// The checkpoint a fork was made from.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = ForkFrom)]
    from: Option<ForkFrom>,
}

/// The `dry_run` query parameter of the writes that take one (creating a tenant, applying
/// fixtures): `true` or `false` (the default); any other parameter or value is a 400.
pub(crate) fn dry_run(q: &std::collections::HashMap<String, String>) -> Result<bool, ApiError> {
    if let Some(other) = q.keys().find(|k| *k != "dry_run") {
        return Err(ApiError::bad_request(format!(
            "unknown query parameter '{other}'; this write takes only dry_run (true or false)"
        )));
    }
    match q.get("dry_run").map(String::as_str) {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "dry_run: '{other}' is not true or false"
        ))),
    }
}

/// Answer of `POST /tenants?dry_run=true`: what the creation would write; nothing registered.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = TenantDryRun)]
struct TenantDryRun {
    name: String,
    time_zone: String,
    /// Always true: nothing was created.
    dry_run: bool,
    /// Records of each kind the fixture document holds (empty for a seed).
    records: std::collections::BTreeMap<String, u64>,
    /// Records the creation would write, by kind.
    created: std::collections::BTreeMap<String, u64>,
}

pub(crate) async fn create_tenant(
    _: AdminAuth,
    State(app): State<AppState>,
    shared::web::Params(q): shared::web::Params,
    JsonBody(body): JsonBody<CreateTenant>,
) -> Result<Response, ApiError> {
    let dry_run = dry_run(&q)?;
    if dry_run && body.from.is_some() {
        return Err(ApiError::bad_request(
            "dry_run rehearses a creation from a seed or fixtures; a fork ('from') copies a checkpoint as it is",
        ));
    }
    let (record, creds) = match &body.from {
        Some(from) => {
            if body.seed.is_some()
                || body.time_zone.is_some()
                || body.fixtures.is_some()
                || body.clock.is_some()
            {
                return Err(ApiError::bad_request(
                    "a fork ('from') takes its data, clock and time zone from the checkpoint: leave out 'seed', 'fixtures', 'clock' and 'time_zone'",
                ));
            }
            fork_tenant(&app, &body.name, from).await?
        }
        None => {
            let seed = match (&body.seed, &body.fixtures) {
                (Some(_), Some(_)) => {
                    return Err(ApiError::bad_request("send 'seed' or 'fixtures', not both"))
                }
                (_, Some(doc)) => {
                    shared::fixtures::document::check_records(doc, app.config.max_fixture_records)?;
                    Seed::Document(Box::new(doc.clone()))
                }
                (seed, None) => Seed::parse(seed.as_deref().unwrap_or("demo"))?,
            };
            let zone = body.time_zone.as_deref().unwrap_or("UTC");
            let clock = body.clock.clone();
            // A zone that does not parse is refused by `tenants::create`.
            let tz = shared::time::parse_tz(zone).unwrap_or_default();
            if let Some(setting) = &clock {
                // Refused before anything is registered.
                setting.clock(Clock::Real, tz)?;
            }
            let before = move |tx: &rusqlite::Transaction<'_>| match &clock {
                Some(setting) => setting.clock(Clock::Real, tz)?.store(tx),
                None => Ok(()),
            };
            if dry_run {
                let records = body
                    .fixtures
                    .as_ref()
                    .map(shared::fixtures::records_per_kind)
                    .unwrap_or_default();
                let changes =
                    tenants::rehearse_create(&app.store, &body.name, seed, zone, before).await?;
                let answer = TenantDryRun {
                    name: body.name.clone(),
                    time_zone: zone.to_string(),
                    dry_run: true,
                    records,
                    created: changes.created,
                };
                return Ok((StatusCode::OK, Json(answer)).into_response());
            }
            tenants::create(&app.store, &body.name, seed, zone, before).await?
        }
    };
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
        from: body.from,
    };
    Ok((StatusCode::CREATED, Json(created)).into_response())
}

/// `GET /tenants`: a page of the tenants (oldest first), paged and counted as the journal is
/// ([`powers::JOURNAL_PAGING`]); at most `SANDBOX_MAX_TENANTS` exist, so the page is cut from
/// the whole list in memory.
pub(crate) async fn list_tenants(
    _: AdminAuth,
    State(app): State<AppState>,
    shared::web::Params(q): shared::web::Params,
) -> Result<Response, ApiError> {
    let all: Vec<TenantRecord> = tenants::list(&app.store).await?;
    powers::page_response(&all, &q, |t| t)
}

pub(crate) async fn get_tenant(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<TenantRecord>, ApiError> {
    Ok(Json(tenants::get(&app.store, &id).await?))
}

pub(crate) async fn delete_tenant(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    // The journal is closed before the deletion lists the tenant's objects, so that a batch
    // upload racing it is deleted by its uploader (see `journal::Journal::close`).
    app.powers.journal.close(&id);
    if let Err(e) = tenants::delete(&app.store, &id).await {
        app.powers.journal.reopen(&id);
        return Err(e.into());
    }
    app.powers.draws.forget(&id);
    Ok(StatusCode::NO_CONTENT)
}

/// Body of `POST /tenants/{id}/tokens` (optional).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct TokenRequest {
    ttl_seconds: Option<i64>,
}

/// Answer of `POST /tenants/{id}/tokens`.
#[derive(Debug, Serialize, ToSchema)]
struct Token {
    access_token: String,
    #[schema(schema_with = bearer)]
    token_type: &'static str,
    expires_in: i64,
}

fn bearer() -> utoipa::openapi::Object {
    shared::json_schema::enumeration(&["Bearer"])
}

pub(crate) async fn issue_token(
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
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ResetRequest {
    #[serde(default = "default_seed")]
    #[schema(schema_with = seeds)]
    seed: String,
}

/// Answer of a reset.
#[derive(Debug, Serialize, ToSchema)]
struct ResetDone {
    #[serde(flatten)]
    tenant: TenantRecord,
    seed: String,
}

pub(crate) async fn reset_tenant(
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

// --- Checkpoints, restore and forks ---

/// Body of `POST /tenants/{id}/checkpoints`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NewCheckpoint)]
struct CreateCheckpoint {
    #[schema(schema_with = checkpoint_name)]
    name: String,
}

/// Body of `POST /tenants/{id}/restore`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct RestoreRequest {
    #[schema(schema_with = checkpoint_name)]
    checkpoint: String,
}

/// Answer of a restore.
#[derive(Debug, Serialize, ToSchema)]
struct Restored {
    tenant: String,
    checkpoint: Checkpoint,
    /// The tenant's version after the restore (one more than before).
    version: u64,
}

pub(crate) async fn create_checkpoint(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<CreateCheckpoint>,
) -> Result<Response, ApiError> {
    let tenant = tenants::get(&app.store, &id).await?;
    let store = app.store.clone();
    let key = tenants::tenant_key(&tenant.id);
    let keyed = key.clone();
    let checkpoint =
        blocking(move || store.create_checkpoint_keyed(&tenant.id, &body.name, keyed.as_deref()))
            .await?;
    if key.is_some() {
        // The key's row, written after the checkpoint by an empty write inside the key's
        // scope, so that the answer is recorded and a retry replayed (or refused, 422, for
        // another request). Should it fail, the checkpoint stands and its answer is still
        // 201: a retry finds its own checkpoint by the manifest (the store's side).
        let written = match powers::tenant(&app, &id).await {
            Ok(t) => t.db.write(|_| Ok(())).await.map_err(ApiError::from),
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            tracing::warn!(error = ?e, tenant = %id, "a keyed checkpoint's key was not recorded");
        }
    }
    Ok((StatusCode::CREATED, Json(checkpoint)).into_response())
}

pub(crate) async fn list_checkpoints(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Vec<Checkpoint>>, ApiError> {
    let tenant = tenants::get(&app.store, &id).await?;
    let store = app.store.clone();
    Ok(Json(
        blocking(move || store.list_checkpoints(&tenant.id)).await?,
    ))
}

pub(crate) async fn get_checkpoint(
    _: AdminAuth,
    State(app): State<AppState>,
    Path((id, name)): Path<(String, String)>,
) -> Result<Json<Checkpoint>, ApiError> {
    let tenant = tenants::get(&app.store, &id).await?;
    let store = app.store.clone();
    Ok(Json(
        blocking(move || store.get_checkpoint(&tenant.id, &name)).await?,
    ))
}

pub(crate) async fn delete_checkpoint(
    _: AdminAuth,
    State(app): State<AppState>,
    Path((id, name)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let tenant = tenants::get(&app.store, &id).await?;
    let store = app.store.clone();
    blocking(move || store.delete_checkpoint(&tenant.id, &name)).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub(crate) async fn restore_checkpoint(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<RestoreRequest>,
) -> Result<Json<Restored>, ApiError> {
    let tenant = tenants::get(&app.store, &id).await?;
    let store = app.store.clone();
    // An Idempotency-Key's row joins the restore (the tenant's database keeps it).
    let key = tenants::tenant_key(&tenant.id);
    let (checkpoint, version) = blocking(move || {
        store.restore_checkpoint_keyed(&tenant.id, &body.checkpoint, key.as_deref())
    })
    .await?;
    Ok(Json(Restored {
        tenant: id,
        checkpoint,
        version,
    }))
}

/// `POST /tenants` with `from`: a new tenant holding a copy of the source's checkpoint.
async fn fork_tenant(
    app: &AppState,
    name: &str,
    from: &ForkFrom,
) -> Result<(TenantRecord, shared::auth::Credentials), ApiError> {
    tenants::check_name(name)?;
    let source = tenants::get(&app.store, &from.tenant).await?;
    let (store, name, checkpoint) = (app.store.clone(), name.to_string(), from.checkpoint.clone());
    // An Idempotency-Key's row joins the fork's registration (the registry keeps it).
    let key = tenants::registry_key();
    Ok(
        blocking(move || store.fork_tenant_keyed(&source, &checkpoint, &name, key.as_deref()))
            .await?,
    )
}
